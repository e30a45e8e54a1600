/* The loop every list operation shares: cursor in, limit + 1 rows, cursor out. */
#include "runtime/pagination.h"

#include "runtime/cursor.h"
#include "runtime/log.h"
#include "runtime/storage.h"

int page_begin(struct req *r, struct page *p, const char *filters, int64_t limit,
               const char *cursor)
{
    p->filters = filters;
    p->after_key = p->after_id = NULL;
    p->limit = limit;
    p->count = 0;
    p->has_more = false;
    if (cursor && cursor_decode(&r->arena, cursor, filters, &p->after_key, &p->after_id) != 0) {
        req_problem(r, 400, "invalid_cursor",
                    "The cursor is invalid, or was issued for another list or other filters; "
                    "start again without it.");
        return -1;
    }
    return 0;
}

void page_bind(const struct page *p, struct db_stmt *st, int key_param, int id_param,
               int limit_param)
{
    if (p->after_key) {
        db_bind_text(st, key_param, p->after_key);
        db_bind_text(st, id_param, p->after_id);
    } else {
        db_bind_null(st, key_param);
        db_bind_null(st, id_param);
    }
    db_bind_int64(st, limit_param, p->limit + 1); /* one more tells whether more follow */
}

int page_fill(struct req *r, struct page *p, struct db_stmt *st, void *items, size_t item_size,
              page_row_fn *row)
{
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if ((int64_t)p->count == p->limit) {
            p->has_more = true;
            break;
        }
        if (row(r, st, (char *)items + p->count * item_size) != 0) {
            db_reset(st);
            return -1;
        }
        p->count++;
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("page: listing failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}

char *page_next(struct req *r, const struct page *p, const char *last_key, const char *last_id)
{
    return p->has_more ? cursor_encode(&r->arena, p->filters, last_key, last_id) : NULL;
}
