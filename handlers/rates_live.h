/* What the live-rate files share among themselves (rates_live.c writes, rates_live_read.c
 * answers the reads, rates_market.c ticks), beyond handlers/rates.h, which other APIs use. */
#ifndef HANDLERS_RATES_LIVE_H
#define HANDLERS_RATES_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers/rates.h"
#include "runtime/config.h"
#include "runtime/job_runner.h"
#include "runtime/req.h"

struct fx_rate;

/* 1m bars older than this many days are pruned (the spec's getRateHistory says it). */
#define RATES_1M_KEEP_DAYS 35

/* One stored current live rate (fx_live_rates), texts in r's arena. */
struct rates_live_row {
    const char *pair, *bid, *ask, *mid, *source, *as_of, *value_date;
    bool market; /* the sandbox market's (workspace_id NULL) */
};

/* Whether a is the current rate rather than b (later as_of; a tie goes to the workspace's). */
bool rates_live_supersedes(const struct rates_live_row *a, const struct rates_live_row *b);
/* r's workspace's current live rate of pair (its own or the market's): 1 into *out, 0 none,
 * -1 failure. */
int rates_live_current(struct req *r, const char *pair, struct rates_live_row *out);
/* Every current live rate r's workspace sees, one per pair, ordered by pair: only pairs[0..n)
 * when n_pairs > 0, only base / quote currency when not NULL. 0 / -1. */
int rates_live_list(struct req *r, const char *const *pairs, size_t n_pairs, const char *base,
                    const char *quote, struct rates_live_row **out, size_t *count);
/* x as the API's FxRate of r's workspace (rate_type live). */
void rates_fx_rate(struct req *r, const struct rates_live_row *x, struct fx_rate *out);

/* The job that prunes old 1m bars (rates_live.c), and the sandbox market's (rates_market.c;
 * period 0 when c turns the market off: handlers/jobs.c then leaves it out). */
struct job rates_live_prune_job(void);
struct job rates_market_job(const struct config *c);

#endif
