/* The rates API's live rates: recording a live rate (pushRates
 * and the sandbox market, rates_market.c) as the pair's current rate and into its OHLC bars,
 * and the current live mid other APIs price from (rates_live_mid). The only writes of
 * fx_live_rates and fx_rate_bars (handlers/sql/rates/0001_live.*).
 *
 * A workspace sees its own pushed rates and the sandbox market's (workspace_id NULL): its
 * current live rate of a pair is the later as_of of the two (a tie goes to its own). Rates are
 * exact decimals kept as text as given or computed (runtime/decimal.h), never a double.
 *
 * History is kept as bars, not raw rates: every rate recorded upserts its 1m, 1h and 1d bar
 * (open and close by as_of, so that rates arriving out of order still make the right bar), and
 * a history is a range of bars (rates_history.c). 1m bars older than RATES_1M_KEEP_DAYS are
 * pruned by a job of their own (rates_live_prune_job); 1h and 1d bars are kept. */
#include "handlers/rates.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "generated/rates_api.h"
#include "handlers/rates_live.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/storage.h"

/* How far ahead of the server clock and how far behind it a pushed as_of may be (the spec). */
#define AS_OF_AHEAD_MS INT64_C(60000)
#define AS_OF_BEHIND_MS (INT64_C(7) * 86400000)
#define PRUNE_BATCH 500

static int db_failed(const char *what)
{
    log_error("rates: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- the current live rate ---------------------------------------------------------------- */

#define LIVE_COLUMNS "pair, bid, ask, mid, source, as_of, value_date, workspace_id"

static void read_live(struct req *r, struct db_stmt *st, struct rates_live_row *x)
{
    x->pair = db_column_dup(&r->arena, st, 0);
    x->bid = db_column_dup(&r->arena, st, 1);
    x->ask = db_column_dup(&r->arena, st, 2);
    x->mid = db_column_dup(&r->arena, st, 3);
    x->source = db_column_dup(&r->arena, st, 4);
    x->as_of = db_column_dup(&r->arena, st, 5);
    x->value_date = db_column_dup(&r->arena, st, 6);
    x->market = db_column_is_null(st, 7);
}

bool rates_live_supersedes(const struct rates_live_row *a, const struct rates_live_row *b)
{
    int c = strcmp(a->as_of, b->as_of); /* one format (format_time_rfc3339): text order */
    return c > 0 || (c == 0 && !a->market && b->market);
}

int rates_live_current(struct req *r, const char *pair, struct rates_live_row *out)
{
    struct db_stmt *st =
        storage_prepare("SELECT " LIVE_COLUMNS " FROM fx_live_rates WHERE pair = ?1"
                        " AND COALESCE(workspace_id, '') IN (?2, '')");
    if (!st)
        return -1;
    db_bind_text(st, 1, pair);
    db_bind_text(st, 2, r->principal.workspace_id);
    int rc, found = 0;
    while ((rc = db_step(st)) == DB_ROW) {
        struct rates_live_row x;
        read_live(r, st, &x);
        if (!found || rates_live_supersedes(&x, out))
            *out = x;
        found = 1;
    }
    db_reset(st);
    return rc == DB_DONE ? found : db_failed("reading a current live rate");
}

int rates_live_list(struct req *r, const char *const *pairs, size_t n_pairs, const char *base,
                    const char *quote, struct rates_live_row **out, size_t *count)
{
    /* every row the workspace sees, merged per pair below; a workspace's pairs are a few
     * hundred at most (two active ISO 4217 codes each), so the list is taken whole */
    struct db_stmt *st = storage_prepare(
        "SELECT " LIVE_COLUMNS " FROM fx_live_rates WHERE COALESCE(workspace_id, '') IN (?1, '')"
        " AND (CAST(?2 AS TEXT) IS NULL OR substr(pair, 1, 3) = ?2)"
        " AND (CAST(?3 AS TEXT) IS NULL OR substr(pair, 4, 3) = ?3) ORDER BY pair");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, base);
    db_bind_text(st, 3, quote);
    size_t cap = 16, n = 0;
    struct rates_live_row *v = arena_alloc(&r->arena, cap * sizeof *v);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        struct rates_live_row x;
        read_live(r, st, &x);
        if (n_pairs) {
            size_t i = 0;
            while (i < n_pairs && strcmp(pairs[i], x.pair) != 0)
                i++;
            if (i == n_pairs)
                continue;
        }
        if (n > 0 && strcmp(v[n - 1].pair, x.pair) == 0) { /* ordered by pair: merge */
            if (rates_live_supersedes(&x, &v[n - 1]))
                v[n - 1] = x;
            continue;
        }
        if (n == cap) {
            struct rates_live_row *w = arena_alloc(&r->arena, 2 * cap * sizeof *w);
            memcpy(w, v, n * sizeof *v);
            v = w;
            cap *= 2;
        }
        v[n++] = x;
    }
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("listing live rates");
    *out = v;
    *count = n;
    return 0;
}

int rates_live_mid(struct req *r, const char *base, const char *quote, struct rates_price *out)
{
    char pair[8];
    struct rates_live_row x;
    for (int inverse = 0; inverse < 2; inverse++) {
        snprintf(pair, sizeof pair, "%s%s", inverse ? quote : base, inverse ? base : quote);
        int found = rates_live_current(r, pair, &x);
        if (found < 0)
            return -1;
        if (found == 0)
            continue;
        struct decimal mid;
        if (decimal_parse(x.mid, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &mid) != 0 ||
            mid.units <= 0) {
            log_error("rates: the stored mid %s of %s is not a rate", x.mid, pair);
            return -1;
        }
        if (inverse) {
            struct decimal one = {1, 0};
            if (decimal_div(one, mid, RATES_SCALE, DECIMAL_ROUND_HALF_EVEN, &mid) != 0 ||
                mid.units <= 0) {
                log_error("rates: the inverse of %s's mid %s does not fit", pair, x.mid);
                return -1;
            }
        }
        out->mid = mid;
        out->source = x.source;
        out->as_of = x.as_of;
        return 1;
    }
    return 0;
}

/* ---- recording ---------------------------------------------------------------------------- */

/* A rate to record: the texts as stored, the values they stand for, as_of normalised. */
struct rec {
    const char *pair;
    const char *bid, *ask, *mid;
    struct decimal bid_d, ask_d, mid_d;
    const char *as_of;
    int64_t as_of_ms;
};

/* The workspace's own latest row (NULL ws: the market's), which rec replaces when it is not
 * older; *current whether rec is now the rate the workspace sees as current: not older than
 * its own, nor than the market's (a tie goes to the workspace's own, as rates_live_mid). */
static int store_current(const char *ws, const struct rec *x, const char *source,
                         const char *value_date, bool *current)
{
    const char *key = ws ? ws : ""; /* the unique index's key: '' is the market */
    const char *v[] = {x->pair, key};
    char stored[48], market[48];
    int found = storage_query_text(
        "SELECT as_of FROM fx_live_rates WHERE COALESCE(workspace_id, '') = ?2 AND pair = ?1", v, 2,
        stored, sizeof stored);
    if (found < 0)
        return -1;
    bool newest_own = found == 0 || strcmp(stored, x->as_of) <= 0;
    *current = newest_own;
    if (ws && newest_own) {
        int has_market = storage_query_text(
            "SELECT as_of FROM fx_live_rates WHERE workspace_id IS NULL AND pair = ?1", v, 1,
            market, sizeof market);
        if (has_market < 0)
            return -1;
        *current = has_market == 0 || strcmp(market, x->as_of) <= 0;
    }
    if (!newest_own)
        return 0;
    const char *w[] = {x->bid, x->ask, x->mid, source, x->as_of, value_date, x->pair, ws};
    if (found == 0)
        return storage_exec_texts("INSERT INTO fx_live_rates (bid, ask, mid, source, as_of, "
                                  "value_date, pair, workspace_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                  w, 8);
    w[7] = key;
    return storage_exec_texts("UPDATE fx_live_rates SET bid = ?1, ask = ?2, mid = ?3, source = ?4, "
                              "as_of = ?5, value_date = ?6 WHERE COALESCE(workspace_id, '') = ?8 "
                              "AND pair = ?7",
                              w, 8);
}

static const struct {
    const char *name;
    int64_t ms;
} BUCKETS[] = {{"1m", INT64_C(60000)}, {"1h", INT64_C(3600000)}, {"1d", INT64_C(86400000)}};

/* One side's figures of a bar: open, high, low, close. */
struct ohlc {
    const char *v[4];
};

/* The higher (want 1) or lower (want -1) of the stored text and the new value. */
static const char *pick(const char *stored, const char *text, struct decimal d, int want,
                        bool *bad)
{
    struct decimal s;
    if (decimal_parse(stored, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &s) != 0) {
        *bad = true;
        return stored;
    }
    return decimal_cmp(d, s) == want ? text : stored;
}

static int store_bar(struct req *r, const char *ws, const struct rec *x, const char *bucket,
                     int64_t ms)
{
    int64_t start_ms = x->as_of_ms - ((x->as_of_ms % ms) + ms) % ms;
    char start[40];
    format_time_rfc3339(start_ms, start, sizeof start);
    struct db_stmt *st = storage_prepare(
        "SELECT id, first_as_of, last_as_of, bid_open, bid_high, bid_low, bid_close, "
        "ask_open, ask_high, ask_low, ask_close, mid_open, mid_high, mid_low, mid_close "
        "FROM fx_rate_bars WHERE COALESCE(workspace_id, '') = ?4 AND pair = ?1 AND bucket = ?2 "
        "AND start = ?3");
    if (!st)
        return -1;
    db_bind_text(st, 1, x->pair);
    db_bind_text(st, 2, bucket);
    db_bind_text(st, 3, start);
    db_bind_text(st, 4, ws ? ws : ""); /* the unique index's key: '' is the market */
    int rc = db_step(st);
    if (rc != DB_ROW) {
        db_reset(st);
        if (rc != DB_DONE)
            return db_failed("reading a rate bar");
        const char *v[] = {ws, x->pair, bucket, start, x->as_of, x->as_of,
                           x->bid, x->bid, x->bid, x->bid, x->ask, x->ask, x->ask, x->ask,
                           x->mid, x->mid, x->mid, x->mid};
        return storage_exec_texts(
            "INSERT INTO fx_rate_bars (workspace_id, pair, bucket, start, first_as_of, "
            "last_as_of, bid_open, bid_high, bid_low, bid_close, ask_open, ask_high, ask_low, "
            "ask_close, mid_open, mid_high, mid_low, mid_close, samples) VALUES (?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
            v, 18);
    }
    int64_t id = db_column_int64(st, 0);
    const char *first = db_column_dup(&r->arena, st, 1), *last = db_column_dup(&r->arena, st, 2);
    struct ohlc side[3];
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 4; k++)
            side[s].v[k] = db_column_dup(&r->arena, st, 3 + 4 * s + k);
    db_reset(st);
    const char *text[3] = {x->bid, x->ask, x->mid};
    const struct decimal val[3] = {x->bid_d, x->ask_d, x->mid_d};
    bool earlier = strcmp(x->as_of, first) < 0, later = strcmp(x->as_of, last) >= 0, bad = false;
    for (int s = 0; s < 3; s++) {
        if (earlier)
            side[s].v[0] = text[s];
        side[s].v[1] = pick(side[s].v[1], text[s], val[s], 1, &bad);
        side[s].v[2] = pick(side[s].v[2], text[s], val[s], -1, &bad);
        if (later)
            side[s].v[3] = text[s];
    }
    if (bad) {
        log_error("rates: a stored bar of %s (%s %s) holds a value that is not a rate", x->pair,
                  bucket, start);
        return -1;
    }
    st = storage_prepare("UPDATE fx_rate_bars SET first_as_of = ?1, last_as_of = ?2, "
                         "bid_open = ?3, bid_high = ?4, bid_low = ?5, bid_close = ?6, "
                         "ask_open = ?7, ask_high = ?8, ask_low = ?9, ask_close = ?10, "
                         "mid_open = ?11, mid_high = ?12, mid_low = ?13, mid_close = ?14, "
                         "samples = samples + 1 WHERE id = ?15");
    if (!st)
        return -1;
    db_bind_text(st, 1, earlier ? x->as_of : first);
    db_bind_text(st, 2, later ? x->as_of : last);
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 4; k++)
            db_bind_text(st, 3 + 4 * s + k, side[s].v[k]);
    db_bind_int64(st, 15, id);
    rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("updating a rate bar");
}

static int record(struct req *r, const char *ws, const struct rec *x, const char *source,
                  const char *value_date, bool *became_current)
{
    char spot[11];
    if (!value_date) {
        char day[11];
        snprintf(day, sizeof day, "%.10s", x->as_of);
        if (rates_spot_date(x->pair, day, spot) != 0)
            return -1;
        value_date = spot;
    }
    bool current = false;
    if (store_current(ws, x, source, value_date, &current) != 0)
        return -1;
    for (size_t i = 0; i < sizeof BUCKETS / sizeof BUCKETS[0]; i++)
        if (store_bar(r, ws, x, BUCKETS[i].name, BUCKETS[i].ms) != 0)
            return -1;
    if (became_current)
        *became_current = current;
    if (!current)
        return 0;
    struct rates_tick t = {.pair = x->pair, .bid = x->bid_d, .ask = x->ask_d, .mid = x->mid_d,
                           .as_of = x->as_of};
    return rates_alerts_on_rate(r, ws, &t);
}

int rates_record_live(struct req *r, const char *workspace_id, const struct rates_tick *t,
                      const char *source, const char *value_date, bool *became_current)
{
    struct rec x = {.pair = t->pair, .bid_d = t->bid, .ask_d = t->ask, .mid_d = t->mid};
    if (!format_time_parse_any(t->as_of, &x.as_of_ms)) {
        log_error("rates: a live rate of %s at %s (not a time)", t->pair, t->as_of);
        return -1;
    }
    char as_of[40], b[DECIMAL_TEXT_MAX], a[DECIMAL_TEXT_MAX], m[DECIMAL_TEXT_MAX];
    format_time_rfc3339(x.as_of_ms, as_of, sizeof as_of);
    x.as_of = as_of;
    x.bid = decimal_format(t->bid, b, sizeof b);
    x.ask = decimal_format(t->ask, a, sizeof a);
    x.mid = decimal_format(t->mid, m, sizeof m);
    return record(r, workspace_id, &x, source, value_date, became_current);
}

/* ---- pushRates ---------------------------------------------------------------------------- */

static struct decimal parsed(const char *s, bool *ok)
{
    struct decimal d = {0, 0};
    if (decimal_parse(s, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &d) != 0 || d.units <= 0)
        *ok = false; /* the schema's check let it through: a failure */
    return d;
}

void rates_fx_rate(struct req *r, const struct rates_live_row *x, struct fx_rate *out)
{
    memset(out, 0, sizeof *out);
    out->object = "fx_rate";
    out->workspace_id = r->principal.workspace_id;
    out->pair = x->pair;
    out->base_currency = arena_printf(&r->arena, "%.3s", x->pair);
    out->quote_currency = arena_printf(&r->arena, "%.3s", x->pair + 3);
    out->bid = x->bid;
    out->ask = x->ask;
    out->mid = x->mid;
    out->rate_type = RATE_TYPE_LIVE;
    out->source = x->source;
    out->as_of = x->as_of;
    out->value_date = x->value_date;
}

int rates_push_rates(struct req *r, const struct rates_push_rates_request *in,
                     struct rates_push_rates_response *out)
{
    const struct fx_rate_push_batch *b = in->body;
    size_t n = b->rates_count;
    struct rec *recs = arena_alloc(&r->arena, n * sizeof *recs);
    int64_t now = clock_now_ms();
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        const struct fx_rate_push *p = &b->rates[i];
        struct rec *x = &recs[i];
        const char *at = verr_index(&r->arena, "/rates", i);
        char base[4], quote[4];
        x->pair = p->pair;
        if (!rates_pair_split(p->pair, base, quote))
            verr_add(&r->verr, at, "pair", "invalid_pair",
                     "%s is not two different active ISO 4217 currency codes.", p->pair);
        x->bid = p->bid;
        x->ask = p->ask;
        x->bid_d = parsed(p->bid, &ok);
        x->ask_d = parsed(p->ask, &ok);
        bool spread = decimal_cmp(x->bid_d, x->ask_d) <= 0;
        if (!spread)
            verr_add(&r->verr, at, "ask", "bid_above_ask", "The bid %s is above the ask %s.",
                     p->bid, p->ask);
        if (p->has_mid) {
            x->mid = p->mid;
            x->mid_d = parsed(p->mid, &ok);
            if (spread && (decimal_cmp(x->mid_d, x->bid_d) < 0 ||
                           decimal_cmp(x->mid_d, x->ask_d) > 0))
                verr_add(&r->verr, at, "mid", "mid_outside_spread",
                         "The mid %s is not between the bid %s and the ask %s.", p->mid, p->bid,
                         p->ask);
        } else {
            /* (bid + ask) / 2, half-even to 10 places (the spec) */
            struct decimal sum, two = {2, 0};
            char buf[DECIMAL_TEXT_MAX];
            if (decimal_add(x->bid_d, x->ask_d, &sum) != 0 ||
                decimal_div(sum, two, RATES_SCALE, DECIMAL_ROUND_HALF_EVEN, &x->mid_d) != 0)
                ok = false;
            else
                x->mid = arena_strdup(&r->arena,
                                      decimal_format_fixed(x->mid_d, RATES_SCALE, buf, sizeof buf));
        }
        if (!format_time_parse_any(p->as_of, &x->as_of_ms)) {
            ok = false;
            continue;
        }
        char t[40];
        format_time_rfc3339(x->as_of_ms, t, sizeof t);
        x->as_of = arena_strdup(&r->arena, t);
        if (x->as_of_ms > now + AS_OF_AHEAD_MS)
            verr_add(&r->verr, at, "as_of", "as_of_in_future",
                     "%s is more than 60 seconds ahead of the server's clock.", p->as_of);
        else if (x->as_of_ms < now - AS_OF_BEHIND_MS)
            verr_add(&r->verr, at, "as_of", "as_of_too_old", "%s is more than 7 days old.",
                     p->as_of);
        for (size_t j = 0; j < i; j++)
            if (recs[j].as_of && recs[j].as_of_ms == x->as_of_ms &&
                strcmp(recs[j].pair, x->pair) == 0) {
                verr_add(&r->verr, at, "as_of", "duplicate_rate",
                         "A rate of %s at %s is already at /rates/%zu.", x->pair, x->as_of, j);
                break;
            }
    }
    if (!ok) {
        log_error("rates: a pushed rate the schema let through cannot be read");
        return -1;
    }
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "Some rates cannot be recorded; none was.");
        return 0;
    }
    struct fx_rate_push_result *res = arena_alloc(&r->arena, sizeof *res);
    res->object = "fx_rate_push";
    res->received = (int64_t)n;
    res->data = arena_alloc(&r->arena, n * sizeof *res->data);
    res->data_count = n;
    size_t pairs_len = 0;
    char *pairs = arena_alloc(&r->arena, 7 * n + 1);
    pairs[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const struct fx_rate_push *p = &b->rates[i];
        const char *source = p->has_source && p->source ? p->source : "manual";
        char spot[11];
        const char *value_date = p->has_value_date ? p->value_date : NULL;
        if (!value_date) {
            char day[11];
            snprintf(day, sizeof day, "%.10s", recs[i].as_of);
            if (rates_spot_date(p->pair, day, spot) != 0)
                return -1;
            value_date = arena_strdup(&r->arena, spot);
        }
        bool current = false;
        if (record(r, r->principal.workspace_id, &recs[i], source, value_date, &current) != 0)
            return -1;
        res->current_updated += current;
        struct rates_live_row row = {.pair = p->pair, .bid = recs[i].bid, .ask = recs[i].ask,
                                     .mid = recs[i].mid, .source = source,
                                     .as_of = recs[i].as_of, .value_date = value_date};
        rates_fx_rate(r, &row, &res->data[i]);
        /* the audit record names each pair once, the first 20 pairs (its detail counts all) */
        if (pairs_len < 20 * 7 && !strstr(pairs, p->pair))
            pairs_len += (size_t)sprintf(pairs + pairs_len, "%s%s", pairs_len ? "," : "", p->pair);
    }
    if (audit_change(r, "fx_rates.pushed", "fx_rate", pairs, NULL, NULL,
                     arena_printf(&r->arena, "received %zu, current %" PRId64, n,
                                  res->current_updated)) != 0)
        return -1;
    out->status = 200;
    out->body_200 = res;
    return 0;
}

/* ---- pruning ------------------------------------------------------------------------------ */

/* Deletes 1m bars older than RATES_1M_KEEP_DAYS, a batch at a time: how many, or -1. */
static int prune_round(void)
{
    char before[40];
    format_time_rfc3339(clock_now_ms() - INT64_C(86400000) * RATES_1M_KEEP_DAYS, before,
                        sizeof before);
    if (storage_begin(true) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "DELETE FROM fx_rate_bars WHERE id IN (SELECT id FROM fx_rate_bars WHERE bucket = '1m' "
        "AND start < ?1 LIMIT ?2)");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_text(st, 1, before);
    db_bind_int64(st, 2, PRUNE_BATCH);
    int rc = db_step(st);
    db_reset(st);
    int64_t n = storage_changes();
    if (rc != DB_DONE || storage_commit() != 0) {
        storage_rollback();
        return db_failed("pruning old 1m rate bars");
    }
    return (int)n;
}

struct job rates_live_prune_job(void)
{
    struct job j = {.name = "fx_bar_prune", .run = prune_round, .batch = PRUNE_BATCH,
                    .period_ms = 300000};
    return j;
}
