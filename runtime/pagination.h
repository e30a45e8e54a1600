/* Keyset pagination for list operations: newest first by (sort key, id),
 * `limit` items, and an opaque next_cursor signed and bound to the list's filters
 * (runtime/cursor.h), so a page boundary holds however rows are added meanwhile. */
#ifndef RUNTIME_PAGINATION_H
#define RUNTIME_PAGINATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/storage.h"
#include "runtime/req.h"

struct page {
    const char *filters; /* canonical text of the list's filters, incl. the workspace */
    char *after_key;     /* the previous page's last (sort key, id); NULL on the first page */
    char *after_id;
    int64_t limit;
    size_t count;  /* rows filled */
    bool has_more; /* another page follows */
};

/* Starts a page; with a cursor that is malformed, tampered with or from other filters,
 * answers 400 invalid_cursor and returns -1. cursor may be NULL. Everything lives in r->arena. */
int page_begin(struct req *r, struct page *p, const char *filters, int64_t limit,
               const char *cursor);
/* Binds the position and limit + 1 to the statement's parameters, which must read
 * "(?K IS NULL OR key < ?K OR (key = ?K AND id < ?I)) ... ORDER BY key DESC, id DESC LIMIT ?L". */
void page_bind(const struct page *p, struct db_stmt *st, int key_param, int id_param,
               int limit_param);

/* Turns the current row into the item at `item`. 0, or -1 on failure. */
typedef int page_row_fn(struct req *r, struct db_stmt *st, void *item);
/* Steps st into items (limit of them, item_size apart), setting count and has_more; resets st.
 * 0, or -1 on a database or row failure (logged). */
int page_fill(struct req *r, struct page *p, struct db_stmt *st, void *items, size_t item_size,
              page_row_fn *row);
/* The next page's cursor after the last item, or NULL on the last page. */
char *page_next(struct req *r, const struct page *p, const char *last_key, const char *last_id);

#endif
