/* Events appended to the events table, numbered by the engine (seq: SQLite's INTEGER PRIMARY
 * KEY takes the largest + 1; PostgreSQL's identity column its sequence), never by reading
 * MAX(seq) + 1, which only one writer can do safely. On SQLite the numbers follow commit order;
 * on PostgreSQL a sequence hands them out when rows are inserted, so a reader of "everything
 * after n" must allow for a smaller number committing later (a deliverer marks what it sent,
 * delivered_at, rather than keeping a high-water mark). */
#include "runtime/outbox.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/storage.h"

int outbox_add(struct req *r, const char *type, const char *resource_type,
               const char *resource_id, int64_t resource_version, const char *object_json)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    /* {"object":<object_json>} by copying: printf's %s would walk the text byte by byte. */
    static const char head[] = "{\"object\":";
    size_t len = strlen(object_json);
    char *data = arena_alloc(&r->arena, sizeof head + len + 1);
    memcpy(data, head, sizeof head - 1);
    memcpy(data + sizeof head - 1, object_json, len);
    data[sizeof head - 1 + len] = '}'; /* the arena's memory is zeroed: NUL-terminated */
    char *id = id_new(&r->arena, "evt");
    struct db_stmt *st = storage_prepare(
        "INSERT INTO events (id, workspace_id, type, resource_type, resource_id, "
        "resource_version, data, request_id, idempotency_key, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, r->principal.workspace_id);
    db_bind_text(st, 3, type);
    db_bind_text(st, 4, resource_type);
    db_bind_text(st, 5, resource_id);
    db_bind_int64(st, 6, resource_version);
    db_bind_text(st, 7, data);
    db_bind_text(st, 8, r->request_id);
    if (r->idem_key)
        db_bind_text(st, 9, r->idem_key);
    else
        db_bind_null(st, 9);
    db_bind_text(st, 10, now);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("outbox: writing %s failed: %s", type, storage_errmsg());
        return -1;
    }
    return 0;
}
