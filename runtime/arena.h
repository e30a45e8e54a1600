/* Per-request bump allocator: everything a request allocates lives here and is freed once.
 * Allocation never fails from the caller's view (OOM aborts), so callers never check. */
#ifndef RUNTIME_ARENA_H
#define RUNTIME_ARENA_H

#include <stdarg.h>
#include <stddef.h>

struct arena_block;

struct arena {
    struct arena_block *head; /* newest block first */
    size_t total;             /* bytes handed out, for diagnostics */
};

void arena_init(struct arena *a);
/* Frees every block; the arena can be reused after arena_init(). Accepts a zeroed arena. */
void arena_release(struct arena *a);
/* Zeroed, 16-byte aligned memory. Result lives in a. */
void *arena_alloc(struct arena *a, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(struct arena *a, const char *fmt, va_list ap);

#endif
