/* What one instance hears of the others (instances.h). */
#include "runtime/instances.h"

#include <stdatomic.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/storage.h"

/* The 'watched' generation this process last acted on; -1: not read yet. */
static _Atomic int64_t heard = -1;

bool instances_shared(void)
{
    return strcmp(storage_engine_name(), "postgresql") == 0;
}

static const char *or_none(const char *id)
{
    return id && *id ? id : NULL;
}

int instances_hear(const char *sid, const char *jti, const char *sub, int64_t now_s)
{
    if (!instances_shared())
        return 0;
    struct db_stmt *st = storage_prepare(
        "SELECT (SELECT value FROM storage_generations WHERE name = 'watched'), "
        "(SELECT count(*) FROM revocations WHERE id IN (?, ?, ?) AND until_s > ?)");
    if (!st)
        return -1;
    db_bind_text(st, 1, or_none(sid));
    db_bind_text(st, 2, or_none(jti));
    db_bind_text(st, 3, or_none(sub));
    db_bind_int64(st, 4, now_s);
    int rc = db_step(st);
    int64_t generation = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    int64_t revoked = rc == DB_ROW ? db_column_int64(st, 1) : 0;
    db_reset(st);
    if (rc != DB_ROW) {
        log_error("instances: reading what other instances changed failed: %s",
                  storage_errmsg());
        return -1;
    }
    int64_t was = atomic_load(&heard);
    if (generation != was && atomic_compare_exchange_strong(&heard, &was, generation) &&
        was >= 0)
        storage_watched_changed();
    return revoked > 0;
}

int instances_note_revocation(const char *id, int64_t until_s)
{
    if (!instances_shared())
        return 0;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO revocations (id, until_s, created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET until_s = excluded.until_s "
        "WHERE revocations.until_s < excluded.until_s");
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_int64(st, 2, until_s);
    db_bind_text(st, 3, now);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("instances: recording the revocation of %s failed: %s", id, storage_errmsg());
        return -1;
    }
    return 0;
}

int instances_prune(int64_t now_s)
{
    if (!instances_shared())
        return 0;
    struct db_stmt *st = storage_prepare("DELETE FROM revocations WHERE until_s <= ?");
    if (!st)
        return -1;
    db_bind_int64(st, 1, now_s);
    int rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : -1;
}
