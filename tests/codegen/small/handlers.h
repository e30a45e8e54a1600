/* What the small spec's handlers last saw, for test_small.c. */
#ifndef TESTS_CODEGEN_SMALL_HANDLERS_H
#define TESTS_CODEGEN_SMALL_HANDLERS_H

#include "generated/things_api.h"
#include "runtime/media.h"

struct small_seen {
    int called;
    struct things_list_things_request list;
    const struct thing_create *create_body;
    const struct thing *replace_body;
    const struct shape *shape;
    const char *id;
    const char *if_match;
};

extern struct small_seen small_seen;

/* What the exports handlers (handlers_exports.c) saw, and what they answer. */
struct small_exports {
    int called;
    enum media accept;
    const char *body;
    size_t body_len;
    enum media body_media;
    const char *answer; /* non-NULL: the raw bytes to answer instead of the right ones */
};

extern struct small_exports small_exports;

#endif
