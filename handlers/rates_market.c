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
 * kept under another seed starts over at tick 1 from the starting mid. With several
 * instances on one PostgreSQL database, a pair's row is claimed for the round, so each tick
 * is recorded once. */
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

/* One pair's next tick, recorded at as_of in the open transaction. 0 / -1. */
static int tick_pair(struct req *r, const struct market_pair *mp, const char *as_of)
{
    /* the walk's row first, so that there is a row to claim (PostgreSQL claims rows only) */
    struct db_stmt *st = storage_prepare(
        "INSERT INTO fx_market_walks (pair, seed, tick, mid_units) VALUES (?1, ?2, 0, ?3) "
        "ON CONFLICT (pair) DO NOTHING");
    if (!st)
        return -1;
    db_bind_text(st, 1, mp->pair);
    db_bind_int64(st, 2, market_seed);
    db_bind_int64(st, 3, mp->start);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("market: cannot start the walk of %s: %s", mp->pair, storage_errmsg());
        return -1;
    }
    int claimed = storage_claim("fx_market_walks", "pair", mp->pair);
    if (claimed < 0)
        return -1;
    if (claimed == 0)
        return 0; /* another instance ticks it this round */
    st = storage_prepare("SELECT seed, tick, mid_units FROM fx_market_walks WHERE pair = ?1");
    if (!st)
        return -1;
    db_bind_text(st, 1, mp->pair);
    rc = db_step(st);
    int64_t n = 0, mid = mp->start;
    if (rc == DB_ROW && db_column_int64(st, 0) == market_seed) {
        n = db_column_int64(st, 1);
        mid = db_column_int64(st, 2);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("market: cannot read the walk of %s: %s", mp->pair, storage_errmsg());
        return -1;
    }
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
    st = storage_prepare(
        "UPDATE fx_market_walks SET seed = ?2, tick = ?3, mid_units = ?4 WHERE pair = ?1");
    if (!st)
        return -1;
    db_bind_text(st, 1, mp->pair);
    db_bind_int64(st, 2, market_seed);
    db_bind_int64(st, 3, n);
    db_bind_int64(st, 4, mid);
    rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("market: cannot keep the walk of %s: %s", mp->pair, storage_errmsg());
        return -1;
    }
    return 0;
}

/* One round (the job's run): the next tick of every pair, in one transaction. How many pairs
 * ticked (never a full batch: one round per period), or -1. */
static int market_round(void)
{
    struct req *r = &(struct req){0};
    arena_init(&r->arena);
    verr_init(&r->verr, &r->arena);
    r->principal.user_id = "system"; /* the actor of anything an alert records */
    r->request_id = id_new(&r->arena, "req");
    char as_of[40];
    format_time_rfc3339(clock_now_ms(), as_of, sizeof as_of);
    int rc = storage_begin(true);
    for (size_t i = 0; rc == 0 && i < NPAIRS; i++)
        rc = tick_pair(r, &PAIRS[i], as_of);
    if (rc == 0 && storage_commit() == 0) {
        arena_release(&r->arena);
        return (int)NPAIRS;
    }
    storage_rollback();
    log_error("market: the round at %s failed; the next one ticks again", as_of);
    arena_release(&r->arena);
    return -1;
}

struct job rates_market_job(const struct config *c)
{
    market_seed = c->fx_market_seed;
    struct job j = {.name = "fx_market", .run = market_round, .batch = (int)NPAIRS + 1,
                    .period_ms = c->fx_market_interval_ms};
    return j;
}
