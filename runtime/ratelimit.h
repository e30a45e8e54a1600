/* Per-key request counting for the X-RateLimit-* headers and 429s: a fixed one-minute window
 * per workspace (or per client address on public routes). The sharded, restart-proof limiter of
 * the rate-limit issue replaces the internals; this interface stays. */
#ifndef RUNTIME_RATELIMIT_H
#define RUNTIME_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit_verdict {
    bool allowed;
    int64_t limit;
    int64_t remaining;
    int64_t reset_epoch;   /* Unix seconds at which the window resets */
    int64_t reset_seconds; /* seconds until then (>= 1) */
};

void ratelimit_init(int64_t default_per_minute);
/* Counts one request against key (e.g. "wsp_..." or "ip:127.0.0.1") at now (Unix seconds). */
void ratelimit_check(const char *key, int64_t limit, int64_t now, struct ratelimit_verdict *v);
int64_t ratelimit_default(void);

#endif
