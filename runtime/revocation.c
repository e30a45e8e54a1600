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

static revocation_source_fn *source;

void revocation_set_source(revocation_source_fn *list)
{
    source = list;
}

int revocation_load(int64_t now_s)
{
    if (storage_begin(false) != 0)
        return -1;
    int rc = source ? source(now_s) : 0;
    storage_rollback();
    if (rc != 0) {
        log_error("revocation: loading revocations failed");
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
