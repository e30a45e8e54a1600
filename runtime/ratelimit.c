/* GCRA quotas in a sharded, fixed-size table of per-key timestamps, checkpointed to the database
 * (SQLite), or spent from leases of rows the instances share (PostgreSQL: shared_check).
 *
 * Per key we keep TAT, the theoretical arrival time: the moment the bucket would be full again.
 * With emission interval E = period / limit and capacity C = limit * E, a request at time t is
 * allowed when max(TAT, t) + E - t <= C, and then TAT becomes max(TAT, t) + E. So a full bucket
 * admits exactly `limit` requests at once, and one more every E afterwards; nothing resets at
 * a window edge, so there is no double burst at a boundary. Times are wall-clock nanoseconds so
 * that checkpoints stay meaningful across a restart. */
#include "runtime/ratelimit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/instances.h"
#include "runtime/req.h"
#include "runtime/storage.h"

#define SHARDS 32           /* power of two; a key's shard is chosen by its hash */
#define SLOTS_PER_SHARD 1024 /* power of two */
#define PROBE 16            /* slots looked at per key; a full run evicts the fullest bucket */
#define NS_PER_S INT64_C(1000000000)

struct slot {
    char key[RATELIMIT_KEY_MAX + 1]; /* "" = unused */
    int64_t tat;                     /* ns; <= now means the bucket is full */
    int64_t override;                /* the key's own limit, 0 for none */
    unsigned override_gen;
    bool dirty; /* changed since the last checkpoint */
    /* Instances sharing a database (shared_check): requests this instance may still admit
     * from its lease of the shared bucket, until lease_until (ns). */
    int64_t lease, lease_until;
};

struct shard {
    _Alignas(64) pthread_mutex_t lock; /* own cache line: shards never share one */
    struct slot slots[SLOTS_PER_SHARD];
};

static struct shard shards[SHARDS];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int64_t default_limit = 1000;
static unsigned override_gen; /* touched only by the reload (one thread) */

static void init_locks(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_init(&shards[i].lock, NULL);
}

void ratelimit_init(int64_t default_per_minute)
{
    pthread_once(&once, init_locks);
    default_limit = default_per_minute > 0 ? default_per_minute : 1;
}

int64_t ratelimit_default(void)
{
    return default_limit;
}

int64_t ratelimit_now_ns(void)
{
    return clock_now_ns();
}

static uint64_t hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    /* MurmurHash3's finalizer: FNV leaves the high bits (the shard) nearly equal for keys
     * that differ in their last character, such as two workspaces' ids. */
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

static struct shard *shard_of(uint64_t h)
{
    return &shards[(h >> 48) & (SHARDS - 1)];
}

/* The key's slot in its (locked) shard, created when absent. Creation takes an unused slot,
 * else one whose bucket is full (the same as having no state), else the fullest bucket of
 * the probe run. NULL only for keys too long to store. */
static struct slot *find(struct shard *sh, const char *key, uint64_t h, int64_t now, bool create)
{
    if (strlen(key) > RATELIMIT_KEY_MAX)
        return NULL;
    struct slot *unused = NULL, *idle = NULL, *victim = NULL;
    for (unsigned i = 0; i < PROBE; i++) {
        struct slot *s = &sh->slots[(h + i) & (SLOTS_PER_SHARD - 1)];
        if (!s->key[0]) {
            if (!unused)
                unused = s;
            continue;
        }
        if (strcmp(s->key, key) == 0)
            return s;
        if (s->override)
            continue;
        if (!idle && s->tat <= now)
            idle = s;
        if (!victim || s->tat < victim->tat)
            victim = s;
    }
    if (!create)
        return NULL;
    struct slot *s = unused ? unused : idle ? idle : victim;
    if (!s) /* a probe run of overrides only: take its first slot; the reload restores it */
        s = &sh->slots[h & (SLOTS_PER_SHARD - 1)];
    memset(s, 0, sizeof *s);
    memcpy(s->key, key, strlen(key) + 1);
    return s;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a <= 0 ? 0 : (a + b - 1) / b;
}

/* ---- one quota for several instances ---------------------------------------------------------
 * With several instances on one database, a key's bucket is its row of ratelimit_state, and an
 * instance admits requests from leases it takes from it: one statement takes up to LEASE of
 * the bucket's requests at once (fewer when fewer are left) and advances the shared TAT by as
 * many; the instance admits them locally until they run out or LEASE_NS passes, when what is
 * left of the lease is dropped (never given back). So the instances together never admit more
 * than the bucket gave out, and a lease is spent within a second of being taken: over any
 * period, at most the quota plus what N instances leased in the second before it (N x LEASE),
 * and a client may be refused while up to N x LEASE requests sit unspent in other instances'
 * leases. LEASE is 1 % of the quota (at least 1): 1,000 a minute on 3 instances, leases of 10,
 * at most 30 either way. The database is asked once per LEASE requests of a busy key. */
#define LEASE_NS NS_PER_S

static int64_t lease_size(int64_t limit)
{
    return limit / 100 > 1 ? limit / 100 : 1;
}

/* Takes up to want requests from key's shared bucket (interval e, capacity cap) at now: how
 * many it got into *granted and the bucket's TAT after the take into *tat. 0 / -1. Portable
 * SQL: each SET expression reads the row as it was. */
static int take_lease(const char *key, int64_t now, int64_t e, int64_t cap, int64_t want,
                      int64_t *granted, int64_t *tat)
{
#define BASE "(CASE WHEN ratelimit_state.tat_ns > ?2 THEN ratelimit_state.tat_ns ELSE ?2 END)"
#define AVAIL "((CAST(?2 AS BIGINT) + CAST(?5 AS BIGINT) - " BASE ") / CAST(?3 AS BIGINT))"
#define TAKE "(CASE WHEN " AVAIL " < 0 THEN 0 WHEN " AVAIL " < ?4 THEN " AVAIL " ELSE ?4 END)"
    /* Outside the request's transaction: a quota counts attempts, also those whose writes are
     * undone (a refused password), and a busy key's row is waited for, not a conflict. */
    struct db_stmt *st = storage_prepare_outside(
        "INSERT INTO ratelimit_state (key, tat_ns, granted) VALUES (?1, CAST(?2 AS BIGINT) + "
        "CAST(?3 AS BIGINT) * CAST(?4 AS BIGINT), ?4) "
        "ON CONFLICT (key) DO UPDATE SET tat_ns = " BASE " + CAST(?3 AS BIGINT) * " TAKE ", "
        "granted = " TAKE " RETURNING tat_ns, granted");
#undef TAKE
#undef AVAIL
#undef BASE
    if (!st)
        return -1;
    db_bind_text(st, 1, key);
    db_bind_int64(st, 2, now);
    db_bind_int64(st, 3, e);
    db_bind_int64(st, 4, want);
    db_bind_int64(st, 5, cap);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        *tat = db_column_int64(st, 0);
        *granted = db_column_int64(st, 1);
    }
    db_reset(st);
    if (rc != DB_ROW) {
        log_error("ratelimit: taking a lease of %s failed: %s", key, storage_errmsg());
        return -1;
    }
    return 0;
}

static void fill_verdict(struct ratelimit_verdict *v, int64_t limit, int64_t period_s,
                         int64_t now, int64_t tat, int64_t e, int64_t cap, int64_t extra);

/* The limit that applies to slot s (its override, else limit; at least 1), and its bucket:
 * the emission interval *e (ns between two requests, at least 1) and the capacity *cap. */
static int64_t bucket_of(const struct slot *s, int64_t limit, int64_t period_s, int64_t *e,
                         int64_t *cap)
{
    if (s && s->override)
        limit = s->override;
    if (limit < 1)
        limit = 1;
    *e = period_s * NS_PER_S / limit;
    if (*e < 1)
        *e = 1;
    *cap = *e * limit;
    return limit;
}

static void local_check(const char *key, int64_t limit, int64_t period_s, int64_t now,
                        struct ratelimit_verdict *v);

static void shared_check(const char *key, int64_t limit, int64_t period_s, int64_t now,
                         struct ratelimit_verdict *v)
{
    uint64_t h = hash(key);
    struct shard *sh = shard_of(h);
    pthread_mutex_lock(&sh->lock);
    struct slot *s = find(sh, key, h, now, false);
    int64_t e, cap;
    limit = bucket_of(s, limit, period_s, &e, &cap);
    if (s && s->lease > 0 && now < s->lease_until) {
        s->lease--;
        v->allowed = true;
        fill_verdict(v, limit, period_s, now, s->tat, e, cap, s->lease);
        pthread_mutex_unlock(&sh->lock);
        return;
    }
    pthread_mutex_unlock(&sh->lock);
    if (strlen(key) > RATELIMIT_KEY_MAX) {
        local_check(key, limit, period_s, now, v); /* refused there */
        return;
    }
    int64_t granted = 0, tat = 0;
    int64_t want = lease_size(limit) < limit ? lease_size(limit) : limit;
    if (take_lease(key, now, e, cap, want, &granted, &tat) != 0) {
        /* The database did not answer: this instance's own bucket decides meanwhile. */
        local_check(key, limit, period_s, now, v);
        return;
    }
    pthread_mutex_lock(&sh->lock);
    s = find(sh, key, h, now, true);
    if (s) {
        /* Another thread of this instance may have taken a lease while this one asked: it is
         * added to, not replaced (what it still held would be lost to everyone: the bucket
         * gave it out). A lease that ran out before this request is not kept. */
        int64_t held = s->lease > 0 && now < s->lease_until ? s->lease : 0;
        if (tat > s->tat)
            s->tat = tat;
        s->lease = held + (granted > 0 ? granted - 1 : 0);
        s->lease_until = now + LEASE_NS;
    }
    v->allowed = granted > 0;
    fill_verdict(v, limit, period_s, now, tat, e, cap, s ? s->lease : 0);
    pthread_mutex_unlock(&sh->lock);
}

void ratelimit_check(const char *key, int64_t limit, int64_t period_s, int64_t now,
                     struct ratelimit_verdict *v)
{
    pthread_once(&once, init_locks);
    if (instances_shared())
        shared_check(key, limit, period_s, now, v);
    else
        local_check(key, limit, period_s, now, v);
}

/* The verdict's numbers from the bucket's TAT (extra: requests of a lease still to spend). */
static void fill_verdict(struct ratelimit_verdict *v, int64_t limit, int64_t period_s,
                         int64_t now, int64_t tat, int64_t e, int64_t cap, int64_t extra)
{
    if (tat < now)
        tat = now;
    v->limit = limit;
    v->period_s = period_s;
    v->remaining = (cap - (tat - now)) / e + extra;
    if (v->remaining < 0)
        v->remaining = 0;
    if (v->remaining > limit)
        v->remaining = limit;
    v->reset_epoch = ceil_div(tat, NS_PER_S);
    v->reset_seconds = v->reset_epoch - now / NS_PER_S;
    v->retry_after = v->allowed ? 0 : ceil_div(tat + e - cap - now, NS_PER_S);
    if (!v->allowed && v->retry_after < 1)
        v->retry_after = 1;
}

static void local_check(const char *key, int64_t limit, int64_t period_s, int64_t now,
                        struct ratelimit_verdict *v)
{
    uint64_t h = hash(key);
    struct shard *sh = shard_of(h);

    pthread_mutex_lock(&sh->lock);
    struct slot *s = find(sh, key, h, now, true);
    int64_t e, cap;
    limit = bucket_of(s, limit, period_s, &e, &cap);
    int64_t tat = s ? s->tat : now + cap; /* an unstorable key is refused, never unlimited */
    if (tat < now)
        tat = now;
    /* A full bucket's TAT is at most now + cap; beyond that the clock stepped back (NTP, a
     * restored checkpoint): wait at most one period, never the size of the step. */
    if (tat > now + cap) {
        tat = now + cap;
        if (s) {
            s->tat = tat;
            s->dirty = true;
        }
    }
    v->allowed = tat + e - now <= cap;
    if (v->allowed) {
        tat += e;
        s->tat = tat;
        s->dirty = true;
    }
    pthread_mutex_unlock(&sh->lock);
    fill_verdict(v, limit, period_s, now, tat, e, cap, 0);
}

/* A refund with several instances: into the shared bucket, where the request was counted (a
 * lease holds what it took for a second only, and a refund there would be lost with it). */
static void give_back_shared(const char *key, int64_t e, int64_t now)
{
    struct db_stmt *st = storage_prepare_outside(
        "UPDATE ratelimit_state SET tat_ns = tat_ns - CAST(?2 AS BIGINT) "
        "WHERE key = ?1 AND tat_ns > CAST(?3 AS BIGINT)");
    if (!st)
        return;
    db_bind_text(st, 1, key);
    db_bind_int64(st, 2, e);
    db_bind_int64(st, 3, now);
    if (db_step(st) != DB_DONE)
        log_error("ratelimit: giving back a request of %s failed: %s", key, storage_errmsg());
    db_reset(st);
}

void ratelimit_refund(const char *key, int64_t limit, int64_t period_s, int64_t now)
{
    pthread_once(&once, init_locks);
    uint64_t h = hash(key);
    struct shard *sh = shard_of(h);
    pthread_mutex_lock(&sh->lock);
    struct slot *s = find(sh, key, h, now, false);
    int64_t e, cap;
    bucket_of(s, limit, period_s, &e, &cap);
    if (instances_shared()) {
        pthread_mutex_unlock(&sh->lock);
        give_back_shared(key, e, now);
        return;
    }
    if (s && s->tat > now) {
        s->tat -= e;
        s->dirty = true;
    }
    pthread_mutex_unlock(&sh->lock);
}

/* ---- overrides ---------------------------------------------------------------------------- */

void ratelimit_overrides_begin(void)
{
    override_gen++;
}

void ratelimit_set_override(const char *key, int64_t limit)
{
    pthread_once(&once, init_locks);
    uint64_t h = hash(key);
    struct shard *sh = shard_of(h);
    pthread_mutex_lock(&sh->lock);
    struct slot *s = find(sh, key, h, INT64_MIN, true);
    if (s) {
        s->override = limit > 0 ? limit : 0;
        s->override_gen = override_gen;
    }
    pthread_mutex_unlock(&sh->lock);
}

void ratelimit_overrides_end(void)
{
    pthread_once(&once, init_locks);
    for (int i = 0; i < SHARDS; i++) {
        struct shard *sh = &shards[i];
        pthread_mutex_lock(&sh->lock);
        for (int j = 0; j < SLOTS_PER_SHARD; j++) {
            struct slot *s = &sh->slots[j];
            if (s->override && s->override_gen != override_gen)
                s->override = 0;
        }
        pthread_mutex_unlock(&sh->lock);
    }
}

void ratelimit_set_headers(struct req *r, const char *policy, const struct ratelimit_verdict *v)
{
    char buf[160];
    /* On every request: the plain numbers without printf. */
    format_i64(buf, v->limit);
    req_set_header(r, "X-RateLimit-Limit", buf);
    format_i64(buf, v->remaining);
    req_set_header(r, "X-RateLimit-Remaining", buf);
    format_i64(buf, v->reset_epoch);
    req_set_header(r, "X-RateLimit-Reset", buf);
    snprintf(buf, sizeof buf, "\"%s\";q=%lld;w=%lld", policy, (long long)v->limit,
             (long long)v->period_s);
    req_set_header(r, "RateLimit-Policy", buf);
    snprintf(buf, sizeof buf, "\"%s\";r=%lld;t=%lld", policy, (long long)v->remaining,
             (long long)v->reset_seconds);
    req_set_header(r, "RateLimit", buf);
    if (!v->allowed) {
        snprintf(buf, sizeof buf, "%lld", (long long)v->retry_after);
        req_set_header(r, "Retry-After", buf);
    }
}

void ratelimit_workspace_key(char *buf, size_t n, const char *workspace_id)
{
    snprintf(buf, n, "w:%s", workspace_id);
}

static ratelimit_quotas_fn *quotas_source;

void ratelimit_set_quotas_source(ratelimit_quotas_fn *list)
{
    quotas_source = list;
}

void ratelimit_set_workspace_quota(const char *workspace_id, int64_t per_minute)
{
    char key[RATELIMIT_KEY_MAX + 1];
    ratelimit_workspace_key(key, sizeof key, workspace_id);
    ratelimit_set_override(key, per_minute);
}

int ratelimit_load_overrides(void)
{
    if (!quotas_source)
        return 0;
    if (storage_begin(false) != 0)
        return -1;
    ratelimit_overrides_begin();
    int rc = quotas_source();
    storage_rollback();
    if (rc != 0) {
        log_error("ratelimit: loading workspace quotas failed");
        return -1; /* keep the overrides we had (those set again stay set) */
    }
    ratelimit_overrides_end();
    return 0;
}

void ratelimit_reset(void)
{
    pthread_once(&once, init_locks);
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        memset(shards[i].slots, 0, sizeof shards[i].slots);
        pthread_mutex_unlock(&shards[i].lock);
    }
}

/* ---- persistence -------------------------------------------------------------------------- */

struct saved {
    char key[RATELIMIT_KEY_MAX + 1];
    int64_t tat;
};

static void mark_dirty(const struct saved *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t h = hash(list[i].key);
        struct shard *sh = shard_of(h);
        pthread_mutex_lock(&sh->lock);
        struct slot *s = find(sh, list[i].key, h, INT64_MIN, false);
        if (s)
            s->dirty = true;
        pthread_mutex_unlock(&sh->lock);
    }
}

static int write_saved(const struct saved *list, size_t n, int64_t now)
{
    struct db_stmt *up = NULL, *del = NULL;
    if (storage_begin(true) != 0)
        return -1;
    up = storage_prepare("INSERT INTO ratelimit_state (key, tat_ns) VALUES (?, ?) "
                         "ON CONFLICT (key) DO UPDATE SET tat_ns = excluded.tat_ns");
    del = storage_prepare("DELETE FROM ratelimit_state WHERE key = ? OR tat_ns <= ?");
    if (!up || !del)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        struct db_stmt *st = list[i].tat > now ? up : del;
        db_bind_text(st, 1, list[i].key);
        db_bind_int64(st, 2, list[i].tat > now ? list[i].tat : now);
        int rc = db_step(st);
        db_reset(st);
        if (rc != DB_DONE)
            goto fail;
    }
    return storage_commit();
fail:
    log_error("ratelimit: checkpoint failed: %s", storage_errmsg());
    storage_rollback();
    return -1;
}

int ratelimit_checkpoint(int64_t now)
{
    pthread_once(&once, init_locks);
    if (instances_shared()) {
        /* The buckets live in the database already (shared_check); what is left is to drop
         * the rows of full buckets, which are the same as no row, a batch a round. */
        struct db_stmt *st = storage_prepare(
            "DELETE FROM ratelimit_state WHERE key IN "
            "(SELECT key FROM ratelimit_state WHERE tat_ns <= ? LIMIT 1000)");
        if (!st)
            return -1;
        db_bind_int64(st, 1, now);
        int rc = db_step(st);
        db_reset(st);
        return rc == DB_DONE ? 0 : -1;
    }
    struct saved *list = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    for (int i = 0; i < SHARDS; i++) {
        struct shard *sh = &shards[i];
        pthread_mutex_lock(&sh->lock);
        for (int j = 0; j < SLOTS_PER_SHARD; j++) {
            struct slot *s = &sh->slots[j];
            if (!s->key[0] || !s->dirty)
                continue;
            if (n == cap) {
                size_t want = cap ? cap * 2 : 256;
                struct saved *grown = realloc(list, want * sizeof *list);
                if (!grown) {
                    pthread_mutex_unlock(&sh->lock);
                    goto out;
                }
                list = grown;
                cap = want;
            }
            memcpy(list[n].key, s->key, sizeof s->key);
            list[n].tat = s->tat;
            n++;
            s->dirty = false;
        }
        pthread_mutex_unlock(&sh->lock);
    }
    if (n == 0) {
        rc = 0;
        goto out;
    }
    rc = write_saved(list, n, now);
    if (rc != 0)
        mark_dirty(list, n); /* try again at the next checkpoint */
out:
    free(list);
    return rc;
}

int ratelimit_restore(int64_t now)
{
    pthread_once(&once, init_locks);
    if (instances_shared())
        return 0;
    if (storage_begin(false) != 0)
        return -1;
    struct db_stmt *st = storage_prepare("SELECT key, tat_ns FROM ratelimit_state WHERE tat_ns > ?");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_int64(st, 1, now);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *key = db_column_text(st, 0);
        int64_t tat = db_column_int64(st, 1);
        if (!key)
            continue;
        uint64_t h = hash(key);
        struct shard *sh = shard_of(h);
        pthread_mutex_lock(&sh->lock);
        struct slot *s = find(sh, key, h, now, true);
        if (s && tat > s->tat)
            s->tat = tat;
        pthread_mutex_unlock(&sh->lock);
    }
    db_reset(st);
    storage_rollback();
    if (rc != DB_DONE) {
        log_error("ratelimit: restore failed: %s", storage_errmsg());
        return -1;
    }
    return 0;
}
