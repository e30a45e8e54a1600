/* What the small spec's handlers last saw, for test_small.c. */
#ifndef TESTS_CODEGEN_SMALL_HANDLERS_H
#define TESTS_CODEGEN_SMALL_HANDLERS_H

#include "generated/things_api.h"

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

#endif
