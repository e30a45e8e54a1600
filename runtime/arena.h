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
/* Room for one more item in an array that grows in a: items itself while it has room for item
 * number count (0-based), else a copy of its count items with room for twice as many. The room
 * follows from count (4, 8, 16, ...), so the caller keeps only the count; items must come from
 * arena_grow (NULL when count is 0). Lets a row of a list hold a few items without reserving
 * the most it could ever hold (zeroing that per row cost more than the rest of a page). */
void *arena_grow(struct arena *a, void *items, size_t count, size_t size);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(struct arena *a, const char *fmt, va_list ap);

#endif
