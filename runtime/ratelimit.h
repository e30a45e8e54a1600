/* Request quotas with GCRA (the generic cell rate algorithm, a leaky bucket kept as one
 * timestamp per key): a key may spend `limit` requests at once, and capacity comes back
 * continuously, one request every period/limit. Exact under concurrency (every decision is one
 * read-modify-write under its shard's lock), sharded so unrelated keys never contend, and
 * checkpointed to the database so a restart is not a way around a quota. With several
 * instances on one PostgreSQL database a key's bucket is its row in the database, spent
 * through small leases (ratelimit.c: shared_check, and how far the total can be off). */
#ifndef RUNTIME_RATELIMIT_H
#define RUNTIME_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RATELIMIT_KEY_MAX 80  /* longer keys are refused by ratelimit_check (counted as denied) */
#define RATELIMIT_WINDOW_S 60 /* the quota period of every policy the server uses */

struct ratelimit_verdict {
    bool allowed;
    int64_t limit;         /* requests per period for this key (its override when it has one) */
    int64_t period_s;      /* the period the limit is counted over */
    int64_t remaining;     /* requests it may make right now, after this one */
    int64_t reset_epoch;   /* Unix seconds at which the bucket is full again (remaining = limit) */
    int64_t reset_seconds; /* seconds until then, rounded up */
    int64_t retry_after;   /* when refused: seconds until one request is allowed (>= 1) */
};

/* The quota of a workspace without an override (requests per RATELIMIT_WINDOW_S). */
void ratelimit_init(int64_t default_per_minute);
int64_t ratelimit_default(void);

/* Counts one request against key at now_ns (Unix time in nanoseconds). limit is the quota per
 * period_s unless the key has an override. Fills v either way. */
void ratelimit_check(const char *key, int64_t limit, int64_t period_s, int64_t now_ns,
                     struct ratelimit_verdict *v);
/* Gives back one request that ratelimit_check() counted (an attempt that turned out not to
 * count, such as a successful login against the failed-login quota). */
void ratelimit_refund(const char *key, int64_t limit, int64_t period_s, int64_t now_ns);

/* Overrides: a key's own limit, replacing the one callers pass (operator-raised workspace
 * quotas). ratelimit_overrides_begin() starts a reload; keys not set again before
 * ratelimit_overrides_end() lose their override. */
void ratelimit_overrides_begin(void);
void ratelimit_set_override(const char *key, int64_t limit);
void ratelimit_overrides_end(void);

struct req;
/* Sets X-RateLimit-Limit/-Remaining/-Reset, the IETF draft pair RateLimit-Policy
 * ("<policy>";q=<limit>;w=<period>) and RateLimit ("<policy>";r=<remaining>;t=<seconds>),
 * and Retry-After when v refused the request. */
void ratelimit_set_headers(struct req *r, const char *policy, const struct ratelimit_verdict *v);

/* The key a workspace's requests count against ("w:<workspace id>"); buf >= KEY_MAX + 1. */
void ratelimit_workspace_key(char *buf, size_t n, const char *workspace_id);
/* Where the workspaces' own quotas come from (the runtime knows no table): a function the
 * handlers supply that, inside the read transaction ratelimit_load_overrides opens, calls
 * ratelimit_set_workspace_quota for every workspace with a quota of its own. 0 / -1. */
typedef int ratelimit_quotas_fn(void);
void ratelimit_set_quotas_source(ratelimit_quotas_fn *list);
void ratelimit_set_workspace_quota(const char *workspace_id, int64_t per_minute);
/* Reloads the workspaces' own quotas (`admin set-rate-limit`) from that source as overrides.
 * 0 / -1 (no source: 0, nothing to load). */
int ratelimit_load_overrides(void);

/* Persistence in the ratelimit_state table, so a restart keeps every spent quota. checkpoint
 * writes the keys changed since the last one (and drops rows of full buckets); restore loads
 * the rows whose buckets are not full yet. Both run in their own transaction. 0 / -1. */
int ratelimit_checkpoint(int64_t now_ns);
int ratelimit_restore(int64_t now_ns);

/* Wall-clock Unix time in nanoseconds (the clock the quotas and their checkpoints share). */
int64_t ratelimit_now_ns(void);
/* Forgets every key and override (tests). */
void ratelimit_reset(void);

#endif
