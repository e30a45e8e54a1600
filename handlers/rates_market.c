/* The embedded sandbox FX market: a seeded, reproducible random walk per pair, ticked by a
 * background job every --fx-market-interval-ms (0: off) and recorded as live rates that every
 * workspace sees (rates_record_live with no workspace, source `provider:sandbox`). The only
 * writes of fx_market_walks.
 *
 * The walk. Each pair has a starting mid, a tick size (a tenth of a pip: 0.00001, or 0.001
 * for JPY quotes) and works in integer tick units, so that nothing depends on floating point.
 * For tick n >= 1 of pair P under seed S, h = splitmix64(S, fnv1a(P), n):
 *   step      = (h mod 21) - 10 units (at most a pip either way);
 *   mid_n     = mid_(n-1) + step, or mid_(n-1) - step when that would leave [start / 2,
 *               start * 2] (the walk reflects, so it never drifts to nothing);
 *   half      = 5 + ((h >> 32) mod 11) units (a spread of 1 to 3 pips);
 *   bid, ask  = mid_n - half, mid_n + half.
 * Tick 0 is the starting mid. So tick n of P is a function of (S, P, n) alone: two servers with
 * the same seed record the same ticks, whenever they run them. Each round records the next
 * tick of every pair at the round's time (as_of), in one transaction, and keeps the walk's
 * position (seed, n, mid) in fx_market_walks so that a restart goes on from there; a walk
 * kept under another seed starts over at tick 1 from the starting mid.
 *
 * Several instances on one PostgreSQL database each run the job, out of step: the market
 * still ticks once per interval. A round first claims every pair's walk row (storage_claim)
 * and gives up, silently, when another instance's round holds one or has changed one since
 * this round's snapshot; it takes its time (as_of) only once it holds them all, and skips a
 * pair ticked less than nine tenths of an interval ago (fx_market_walks.ticked_ms), so that
 * a round coming a moment after another instance's ticks nothing. So a pair ticks at most
 * once in nine tenths of an interval, whatever the number of instances, and about once an
 * interval while any of them runs; its ticks' as_of follow their order (given clocks in
 * step, as the quotas need too). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "handlers/rates.h"
#include "handlers/rates_live.h"
#include "runtime/arena.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/storage.h"
#include "runtime/verr.h"

/* The market's pairs: the documented parameters (README.md, "The sandbox FX market"). */
static const struct market_pair {
    const char *pair;
    int64_t start; /* the starting mid in units of 10^-scale */
    int scale;     /* 5, or 3 for a JPY quote: a tenth of a pip */
} PAIRS[] = {
    {"EURUSD", 108425, 5}, {"GBPUSD", 129425, 5}, {"USDJPY", 148515, 3},
    {"EURGBP", 83780, 5},  {"USDCHF", 88265, 5},  {"AUDUSD", 63120, 5},
    {"USDCAD", 143810, 5}, {"EURJPY", 161025, 3},
};
#define NPAIRS (sizeof PAIRS / sizeof PAIRS[0])

static int64_t market_seed;
static int64_t market_interval_ms;

static uint64_t splitmix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

/* The hash of tick n of pair p under seed: the walk's only source of chance. */
static uint64_t tick_hash(int64_t seed, const char *p, int64_t n)
{
    return splitmix64(splitmix64(splitmix64((uint64_t)seed) ^ fnv1a(p)) ^ (uint64_t)n);
}

/* Tick n (>= 1) of mp after mid (tick n - 1's): into *mid and *half. */
static void step(const struct market_pair *mp, int64_t seed, int64_t n, int64_t *mid,
                 int64_t *half)
{
    uint64_t h = tick_hash(seed, mp->pair, n);
    int64_t d = (int64_t)(h % 21) - 10;
    int64_t next = *mid + d;
    if (next < mp->start / 2 || next > mp->start * 2)
        next = *mid - d;
    *mid = next;
    *half = 5 + (int64_t)((h >> 32) % 11);
}

/* The walk's row of mp, inserted when it is missing, so that there is a row to claim
 * (PostgreSQL claims rows only). Read first: an INSERT ... ON CONFLICT DO NOTHING that meets a
 * row another instance's round changed after this transaction's snapshot fails on PostgreSQL,
 * although it would change nothing, so the usual case (the row is there) writes nothing.
 * 0, or a db_step error (< 0). */
static int start_walk(const struct market_pair *mp)
{
    struct db_stmt *st = storage_prepare("SELECT 1 FROM fx_market_walks WHERE pair = ?1");
    if (!st)
        return DB_ERR;
    db_bind_text(st, 1, mp->pair);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return rc == DB_ROW ? 0 : rc;
    st = storage_prepare(
        "INSERT INTO fx_market_walks (pair, seed, tick, mid_units, ticked_ms) "
        "VALUES (?1, ?2, 0, ?3, 0) ON CONFLICT (pair) DO NOTHING");
    if (!st)
        return DB_ERR;
    db_bind_text(st, 1, mp->pair);
    db_bind_int64(st, 2, market_seed);
    db_bind_int64(st, 3, mp->start);
    rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : rc;
}

/* Whether a pair last ticked at ticked_ms is due at now_ms: not when it ticked less than nine
 * tenths of an interval ago (another instance's round, whose period runs out of step with
 * this one's), else two instances would tick it twice an interval between them. Nine tenths,
 * not the whole interval, so that the round of the instance that ticked it, a period later
 * by its own timer, finds it due. A tick that far ahead of now_ms was made by a clock now
 * behind (the test clock moved back): due. */
static bool due(int64_t ticked_ms, int64_t now_ms)
{
    int64_t min_gap = market_interval_ms - market_interval_ms / 10;
    return now_ms - ticked_ms >= min_gap || ticked_ms - now_ms >= min_gap;
}

/* mp's next tick, recorded at as_of (now_ms) in the open transaction, its row claimed: 1, or 0
 * when the pair ticked less than an interval ago (nothing done), or -1. */
static int tick_pair(struct req *r, const struct market_pair *mp, int64_t now_ms,
                     const char *as_of)
{
    struct db_stmt *st = storage_prepare(
        "SELECT seed, tick, mid_units, ticked_ms FROM fx_market_walks WHERE pair = ?1");
    if (!st)
        return -1;
    db_bind_text(st, 1, mp->pair);
    int rc = db_step(st);
    int64_t n = 0, mid = mp->start, ticked_ms = 0;
    if (rc == DB_ROW) {
        ticked_ms = db_column_int64(st, 3);
        if (db_column_int64(st, 0) == market_seed) {
            n = db_column_int64(st, 1);
            mid = db_column_int64(st, 2);
        }
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("market: cannot read the walk of %s: %s", mp->pair, storage_errmsg());
        return -1;
    }
    if (!due(ticked_ms, now_ms))
        return 0; /* another instance ticked it this interval */
    int64_t half;
    n++;
    step(mp, market_seed, n, &mid, &half);
    struct rates_tick t = {
        .pair = mp->pair,
        .bid = {mid - half, mp->scale},
        .ask = {mid + half, mp->scale},
        .mid = {mid, mp->scale},
        .as_of = as_of,
    };
    /* normalised, as struct decimal wants them (no trailing zero in the fraction) */
    struct decimal *d[3] = {&t.bid, &t.ask, &t.mid};
    for (int i = 0; i < 3; i++)
        while (d[i]->scale > 0 && d[i]->units % 10 == 0) {
            d[i]->units /= 10;
            d[i]->scale--;
        }
    if (rates_record_live(r, NULL, &t, "provider:sandbox", NULL, NULL) != 0)
        return -1;
    st = storage_prepare("UPDATE fx_market_walks SET seed = ?2, tick = ?3, mid_units = ?4, "
                         "ticked_ms = ?5 WHERE pair = ?1");
    if (!st)
        return -1;
    db_bind_text(st, 1, mp->pair);
    db_bind_int64(st, 2, market_seed);
    db_bind_int64(st, 3, n);
    db_bind_int64(st, 4, mid);
    db_bind_int64(st, 5, now_ms);
    rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("market: cannot keep the walk of %s: %s", mp->pair, storage_errmsg());
        return -1;
    }
    return 1;
}

/* The round's claim: every pair's walk row, held until the round ends, before anything is
 * ticked, so that one instance's round at a time ticks the market. 1 all held, 0 another
 * instance's round has them (one it holds, or one it changed since this transaction's
 * snapshot: PostgreSQL's serialization failure, which has then aborted the transaction),
 * -1 failure (logged). */
static int claim_round(void)
{
    for (size_t i = 0; i < NPAIRS; i++) {
        const struct market_pair *mp = &PAIRS[i];
        int rc = start_walk(mp);
        int claimed = rc == 0 ? storage_claim("fx_market_walks", "pair", mp->pair) : -1;
        if (claimed == 0)
            return 0;
        if (claimed < 0) {
            char why[256];
            snprintf(why, sizeof why, "%s", storage_errmsg());
            storage_rollback();
            if (storage_should_retry())
                return 0;
            log_error("market: cannot claim the walk of %s: %s", mp->pair, why);
            return -1;
        }
    }
    return 1;
}

/* One round (the job's run): the next tick of every pair due, in one transaction, at the time
 * the round's claim was granted (as_of). How many pairs ticked (never a full batch: one round
 * per period), or -1. */
static int market_round(void)
{
    if (storage_begin(true) != 0) {
        log_error("market: cannot begin a round");
        return -1;
    }
    int claimed = claim_round();
    if (claimed <= 0) {
        if (storage_in_tx())
            storage_rollback();
        return claimed;
    }
    struct req *r = &(struct req){0};
    arena_init(&r->arena);
    verr_init(&r->verr, &r->arena);
    r->principal.user_id = "system"; /* the actor of anything an alert records */
    r->request_id = id_new(&r->arena, "req");
    int64_t now_ms = clock_now_ms();
    char as_of[40];
    format_time_rfc3339(now_ms, as_of, sizeof as_of);
    int rc = 0, ticked = 0;
    for (size_t i = 0; rc >= 0 && i < NPAIRS; i++) {
        rc = tick_pair(r, &PAIRS[i], now_ms, as_of);
        ticked += rc > 0;
    }
    if (rc >= 0 && storage_commit() == 0) {
        arena_release(&r->arena);
        return ticked;
    }
    storage_rollback();
    if (storage_should_retry())
        log_warn("market: the round at %s met a concurrent transaction; the next one ticks "
                 "again", as_of);
    else
        log_error("market: the round at %s failed; the next one ticks again", as_of);
    arena_release(&r->arena);
    return -1;
}

struct job rates_market_job(const struct config *c)
{
    market_seed = c->fx_market_seed;
    market_interval_ms = c->fx_market_interval_ms;
    struct job j = {.name = "fx_market", .run = market_round, .batch = (int)NPAIRS + 1,
                    .period_ms = c->fx_market_interval_ms};
    return j;
}
