/* Collect-all validation errors: every violation with a JSON Pointer, a stable code and a
 * human detail, capped so a hostile body cannot make the error list unbounded. */
#ifndef RUNTIME_VERR_H
#define RUNTIME_VERR_H

#include <stdbool.h>

#include "runtime/arena.h"

#define VERR_MAX 50

struct verr {
    const char *pointer; /* RFC 6901, "" is the whole document; query/path/header params use
                            "/query/limit", "/path/id", "/header/If-Match" (ours, documented) */
    const char *code;    /* "required", "type", "enum", "const", "min_length", "max_length",
                            "pattern", "format", "minimum", "maximum", "multiple_of",
                            "min_items", "max_items", "unique_items", "additional_property",
                            "read_only", "one_of", "min_properties", "max_properties" */
    const char *detail;
};

struct verr_list {
    struct arena *arena; /* strings of the list live here */
    struct verr items[VERR_MAX];
    int count;
    bool truncated; /* more than VERR_MAX violations were found */
};

void verr_init(struct verr_list *l, struct arena *a);
/* pointer = base + "/" + escaped(token) when token != NULL, else base. Format is printf-style. */
void verr_add(struct verr_list *l, const char *base, const char *token, const char *code,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* base + "/" + RFC 6901-escaped token ('~' -> "~0", '/' -> "~1"). Result lives in a. */
char *verr_child(struct arena *a, const char *base, const char *token);
/* base + "/" + index. Result lives in a. */
char *verr_index(struct arena *a, const char *base, unsigned long index);

#endif
