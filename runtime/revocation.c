/* A sharded hash set of ids with expiry: readers take one shard's read lock; the common case
 * of an empty set costs a single atomic load. */
#include "runtime/revocation.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/instances.h"
#include "runtime/log.h"
#include "runtime/req.h"
#include "runtime/storage.h"

#define SHARDS 16
#define BUCKETS 256 /* per shard */

struct entry {
    char id[REVOCATION_ID_MAX + 1];
    int64_t until_s;
    struct entry *next;
};

struct shard {
    _Alignas(64) pthread_rwlock_t lock;
    struct entry *buckets[BUCKETS];
};

static struct shard shards[SHARDS];
static atomic_long count;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_locks(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_rwlock_init(&shards[i].lock, NULL);
}

static uint64_t hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

void revocation_add(const char *id, int64_t until_s)
{
    pthread_once(&once, init_locks);
    if (!id || !*id || strlen(id) > REVOCATION_ID_MAX)
        return;
    uint64_t h = hash(id);
    struct shard *sh = &shards[h % SHARDS];
    struct entry **b = &sh->buckets[(h >> 8) % BUCKETS];
    pthread_rwlock_wrlock(&sh->lock);
    for (struct entry *e = *b; e; e = e->next) {
        if (strcmp(e->id, id) == 0) {
            if (until_s > e->until_s)
                e->until_s = until_s;
            pthread_rwlock_unlock(&sh->lock);
            return;
        }
    }
    struct entry *e = calloc(1, sizeof *e);
    if (e) {
        memcpy(e->id, id, strlen(id) + 1);
        e->until_s = until_s;
        e->next = *b;
        *b = e;
        atomic_fetch_add(&count, 1);
    } else {
        log_error("revocation: out of memory; %s stays valid until the next reload", id);
    }
    pthread_rwlock_unlock(&sh->lock);
}

bool revocation_contains(const char *id)
{
    if (atomic_load_explicit(&count, memory_order_acquire) == 0 || !id)
        return false;
    pthread_once(&once, init_locks);
    uint64_t h = hash(id);
    struct shard *sh = &shards[h % SHARDS];
    bool found = false;
    pthread_rwlock_rdlock(&sh->lock);
    for (struct entry *e = sh->buckets[(h >> 8) % BUCKETS]; e; e = e->next) {
        if (strcmp(e->id, id) == 0) {
            found = true;
            break;
        }
    }
    pthread_rwlock_unlock(&sh->lock);
    return found;
}

static void prune(int64_t now_s, bool all)
{
    pthread_once(&once, init_locks);
    for (int i = 0; i < SHARDS; i++) {
        struct shard *sh = &shards[i];
        pthread_rwlock_wrlock(&sh->lock);
        for (int j = 0; j < BUCKETS; j++) {
            struct entry **p = &sh->buckets[j];
            while (*p) {
                if (all || (*p)->until_s < now_s) {
                    struct entry *dead = *p;
                    *p = dead->next;
                    free(dead);
                    atomic_fetch_sub(&count, 1);
                } else {
                    p = &(*p)->next;
                }
            }
        }
        pthread_rwlock_unlock(&sh->lock);
    }
}

void revocation_reset(void)
{
    prune(0, true);
}

int revocation_load(int64_t now_s)
{
    char since[40];
    format_time_rfc3339((now_s - REVOCATION_TOKEN_LIFETIME_S) * 1000, since, sizeof since);
    if (storage_begin(false) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "SELECT id, revoked_at FROM sessions WHERE revoked_at IS NOT NULL AND revoked_at > ?");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_text(st, 1, since);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *id = db_column_text(st, 0);
        const char *at = db_column_text(st, 1);
        int64_t ms = 0;
        /* An unreadable time is treated as "just now": kept a full lifetime. */
        int64_t revoked_s = format_time_parse(at, &ms) ? ms / 1000 : now_s;
        revocation_add(id, revoked_s + REVOCATION_TOKEN_LIFETIME_S);
    }
    db_reset(st);
    /* Service-account tokens never expire, so their revocations (and disabled accounts) are
     * kept for good. */
    struct db_stmt *forever = rc == DB_DONE
        ? storage_prepare("SELECT id FROM service_account_tokens WHERE revoked_at IS NOT NULL "
                          "UNION ALL SELECT id FROM service_accounts WHERE status = 'disabled'")
        : NULL;
    if (forever) {
        while ((rc = db_step(forever)) == DB_ROW)
            revocation_add(db_column_text(forever, 0), INT64_MAX);
        db_reset(forever);
    } else if (rc == DB_DONE) {
        rc = DB_ERR;
    }
    storage_rollback();
    if (rc != DB_DONE) {
        log_error("revocation: loading revocations failed: %s", storage_errmsg());
        return -1;
    }
    prune(now_s, false);
    return 0;
}

void revocation_after_commit(struct req *r, const char *id, int64_t until_s)
{
    struct req_revocation *x = arena_alloc(&r->arena, sizeof *x);
    x->id = arena_strdup(&r->arena, id);
    x->until_s = until_s;
    x->next = r->revocations;
    r->revocations = x;
    /* For the other instances sharing the database, in this same transaction. Should it fail,
     * the transaction cannot commit (PostgreSQL aborts it), so nothing is revoked unheard. */
    instances_note_revocation(id, until_s);
}

void revocation_publish(const struct req *r)
{
    for (const struct req_revocation *x = r->revocations; x; x = x->next)
        revocation_add(x->id, x->until_s);
}
