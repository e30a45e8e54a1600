/* The rates API's reads of current rates and history: listRates, getRate, getRateHistory.
 * Writes nothing: the live rates and bars are rates_live.c's, the curves rates_curves.c's
 * (through rates_forward), the reference rates rates_reference.c's.
 *
 * listRates merges three kinds of rows per pair: `custom` (the pair's active curve at the spot
 * date, on the live spot), `live` (the workspace's own or the market's, the later) and
 * `reference`. A workspace's pairs are few (at most one per two active ISO 4217 codes, in
 * practice tens), so the rows are gathered whole and paged in memory by (pair, rate_type), the
 * cursor bound to the filters as every list's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/rates_api.h"
#include "handlers/rates.h"
#include "handlers/rates_live.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/pagination.h"
#include "runtime/storage.h"

/* 400 invalid_request with one violation at pointer (a query or path parameter). 0. */
static int bad_param(struct req *r, const char *pointer, const char *code, const char *detail)
{
    verr_add(&r->verr, pointer, NULL, code, "%s", detail);
    req_problem(r, 400, "invalid_request", "%s", detail);
    r->with_errors = true;
    return 0;
}

/* ---- custom: the live spot plus the active curve's forward points ------------------------- */

/* The outright at value_date from the pair's active curve, on spot (the live rate) or, for a
 * curve whose spot_source is `reference`, on the reference rate: 1 into *out, 0 not priced
 * (*reason from rates_forward; none when there is no reference rate), -1 failure. */
static int custom_rate(struct req *r, const struct rates_live_row *spot, const char *value_date,
                       struct fx_rate *out, const char **reason)
{
    char base[4], quote[4];
    if (!rates_pair_split(spot->pair, base, quote))
        return 0;
    struct rates_forward fw;
    int priced = rates_forward(r, base, quote, value_date, &fw, reason);
    if (priced <= 0)
        return priced;
    const char *texts[3] = {spot->bid, spot->ask, spot->mid};
    struct rates_live_row x = *spot;
    if (fw.reference_spot) { /* the curve adds its points to the reference rate */
        struct rates_price ref;
        int found = rates_reference_latest(r, base, quote, NULL, &ref);
        if (found <= 0)
            return found;
        texts[0] = texts[1] = texts[2] = ref.text;
        x.as_of = ref.as_of;
    }
    const char *shifted[3];
    for (int i = 0; i < 3; i++) {
        struct decimal v, sum;
        char buf[DECIMAL_TEXT_MAX];
        if (decimal_parse(texts[i], DECIMAL_MAX_DIGITS, RATES_SCALE, false, &v) != 0 ||
            decimal_add(v, fw.points, &sum) != 0) {
            log_error("rates: %s's spot %s plus the points of %s does not fit", spot->pair,
                      texts[i], fw.curve_id);
            return -1;
        }
        if (sum.units <= 0) { /* points past the spot itself: no rate to show */
            *reason = "outside_curve";
            return 0;
        }
        shifted[i] =
            arena_strdup(&r->arena, decimal_format_fixed(sum, RATES_SCALE, buf, sizeof buf));
    }
    x.bid = shifted[0];
    x.ask = shifted[1];
    x.mid = shifted[2];
    x.source = arena_printf(&r->arena, "curve:%s", fw.curve_id);
    x.value_date = value_date;
    rates_fx_rate(r, &x, out);
    out->rate_type = RATE_TYPE_CUSTOM;
    return 1;
}

/* ---- reference (rates_reference.c's table) ------------------------------------------------ */

/* The reference rate of base/quote as an FxRate from what rates_reference_latest found: one
 * figure, so bid, ask and mid are equal; as_of the publication's import. */
static void reference_fx(struct req *r, const char *base, const char *quote,
                         const struct rates_price *p, struct fx_rate *out)
{
    const char *figure = p->text;
    memset(out, 0, sizeof *out);
    out->object = "fx_rate";
    out->workspace_id = r->principal.workspace_id;
    out->pair = arena_printf(&r->arena, "%s%s", base, quote);
    out->base_currency = arena_strdup(&r->arena, base);
    out->quote_currency = arena_strdup(&r->arena, quote);
    out->bid = out->ask = out->mid = figure;
    out->rate_type = RATE_TYPE_REFERENCE;
    out->source = p->source;
    out->as_of = p->as_of;
    out->value_date = p->value_date;
}

/* The current `reference` rate of pair: the latest publication's figure, a cross pair through
 * EUR (rates_reference.c). 1 into *out, 0 none, -1 failure. */
static int reference_rate(struct req *r, const char *pair, struct fx_rate *out)
{
    char base[4], quote[4];
    if (!rates_pair_split(pair, base, quote))
        return 0;
    struct rates_price p;
    int found = rates_reference_latest(r, base, quote, NULL, &p);
    if (found > 0)
        reference_fx(r, base, quote, &p, out);
    return found;
}

/* The `reference` rows listRates shows: the EUR pairs of the latest publication, and each
 * cross pair of pairs[0..n_pairs) it can price, kept by base and quote when given. 0 / -1. */
static int list_reference(struct req *r, const char *const *pairs, size_t n_pairs,
                          const char *base, const char *quote, struct fx_rate **out,
                          size_t *count)
{
    const char *pub_date, **codes;
    size_t n_codes = 0;
    *out = NULL;
    *count = 0;
    int has = rates_reference_currencies(r, NULL, &pub_date, &codes, &n_codes);
    if (has <= 0)
        return has;
    *out = arena_alloc(&r->arena, (n_codes + n_pairs + 1) * sizeof **out);
    /* the pairs asked for: each one the publication prices (EUR pairs and crosses alike) */
    for (size_t i = 0; i < n_pairs; i++) {
        char b[4], q[4];
        if (!rates_pair_split(pairs[i], b, q) || (base && strcmp(b, base) != 0) ||
            (quote && strcmp(q, quote) != 0))
            continue;
        int found = reference_rate(r, pairs[i], &(*out)[*count]);
        if (found < 0)
            return -1;
        *count += (size_t)found;
    }
    if (n_pairs > 0)
        return 0;
    /* no pairs named: the file's own EUR pairs */
    for (size_t i = 0; i < n_codes; i++) {
        if ((base && strcmp(base, "EUR") != 0) || (quote && strcmp(quote, codes[i]) != 0))
            continue;
        int found = reference_rate(r, arena_printf(&r->arena, "EUR%s", codes[i]),
                                   &(*out)[*count]);
        if (found < 0)
            return -1;
        *count += (size_t)found;
    }
    return 0;
}

/* The publications of r's workspace that price base/quote (EUR against a currency they
 * quote, or two currencies they both quote): the WHERE of a query over reference_publications
 * p, parameters ?1 the workspace, ?2 base, ?3 quote. */
#define PRICING_PUBLICATIONS                                                                       \
    "p.workspace_id = ?1 AND p.source = 'ecb' AND "                                                \
    "(?2 = 'EUR' OR EXISTS (SELECT 1 FROM reference_rates x WHERE x.workspace_id = "               \
    "p.workspace_id "                                                                              \
    "AND x.source = p.source AND x.date = p.date AND x.currency = ?2)) AND "                       \
    "(?3 = 'EUR' OR EXISTS (SELECT 1 FROM reference_rates x WHERE x.workspace_id = "               \
    "p.workspace_id "                                                                              \
    "AND x.source = p.source AND x.date = p.date AND x.currency = ?3))"

/* The reference history of base/quote: one point per publication pricing it dated in [from,
 * to) (open, high, low and close the day's figure, one sample), after after_date (the
 * cursor's), at most limit + 1 of them into *points. 1 / 0 the workspace never had a
 * publication pricing the pair / -1. */
static int reference_history(struct req *r, const char *base, const char *quote,
                             const char *from, const char *to, const char *after_date,
                             int64_t limit, struct fx_rate_history_point **points, size_t *n)
{
    *n = 0;
    const char *v[] = {r->principal.workspace_id, base, quote};
    int ever = storage_query_text("SELECT p.date FROM reference_publications p WHERE "
                                  PRICING_PUBLICATIONS " LIMIT 1",
                                  v, 3, NULL, 0);
    if (ever <= 0)
        return ever;
    struct db_stmt *st = storage_prepare(
        "SELECT p.date FROM reference_publications p WHERE " PRICING_PUBLICATIONS
        " AND p.date >= ?4 AND p.date < ?5 AND (CAST(?6 AS TEXT) IS NULL OR p.date > ?6) "
        "ORDER BY p.date LIMIT ?7");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, base);
    db_bind_text(st, 3, quote);
    db_bind_text(st, 4, from);
    db_bind_text(st, 5, to);
    db_bind_text(st, 6, after_date);
    db_bind_int64(st, 7, limit + 1);
    const char **dates = arena_alloc(&r->arena, (size_t)(limit + 1) * sizeof *dates);
    size_t n_dates = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW)
        dates[n_dates++] = db_column_dup(&r->arena, st, 0);
    db_reset(st);
    if (rc != DB_DONE)
        return -1;
    *points = arena_alloc(&r->arena, (n_dates + 1) * sizeof **points);
    for (size_t i = 0; i < n_dates; i++) {
        struct rates_price p;
        int found = rates_reference_latest(r, base, quote, dates[i], &p);
        if (found <= 0 || strcmp(p.value_date, dates[i]) != 0) {
            log_error("rates: the publication of %s does not price %s%s", dates[i], base, quote);
            return -1; /* the query chose it for pricing the pair */
        }
        struct fx_rate_history_point *pt = &(*points)[(*n)++];
        pt->start = arena_printf(&r->arena, "%sT00:00:00.000Z", dates[i]);
        pt->open = pt->high = pt->low = pt->close = p.text;
        pt->samples = 1;
    }
    return 1;
}

/* ---- listRates ---------------------------------------------------------------------------- */

struct listed {
    const char *key; /* "<pair>:<rate_type>", the list's order and its cursor */
    struct fx_rate rate;
};

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct listed *)a)->key, ((const struct listed *)b)->key);
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rates_list_rates(struct req *r, const struct rates_list_rates_request *in,
                     struct rates_list_rates_response *out)
{
    size_t n_pairs = in->has_pair ? in->pair_count : 0;
    const char **pairs = arena_alloc(&r->arena, (n_pairs + 1) * sizeof *pairs);
    for (size_t i = 0; i < n_pairs; i++) {
        char base[4], quote[4];
        if (!rates_pair_split(in->pair[i], base, quote))
            return bad_param(r, "/query/pair", "invalid_pair",
                             arena_printf(&r->arena,
                                          "%s is not two different active ISO 4217 codes.",
                                          in->pair[i]));
        pairs[i] = in->pair[i];
    }
    qsort(pairs, n_pairs, sizeof *pairs, by_text); /* the cursor's filters, in one order */
    const char *base = in->has_base_currency ? in->base_currency : NULL;
    const char *quote = in->has_quote_currency ? in->quote_currency : NULL;
    bool want[4] = {false, !in->has_rate_type || in->rate_type == RATE_TYPE_LIVE,
                    !in->has_rate_type || in->rate_type == RATE_TYPE_REFERENCE,
                    !in->has_rate_type || in->rate_type == RATE_TYPE_CUSTOM};
    size_t flen = 64;
    for (size_t i = 0; i < n_pairs; i++)
        flen += 7;
    char *filters = arena_alloc(&r->arena, flen);
    int used = snprintf(filters, flen, "rates|%s|%d%d%d|%s|%s|", r->principal.workspace_id,
                        want[1], want[2], want[3], base ? base : "", quote ? quote : "");
    for (size_t i = 0; i < n_pairs && used > 0 && (size_t)used < flen; i++)
        used += snprintf(filters + used, flen - (size_t)used, "%s,", pairs[i]);
    struct page pg;
    if (page_begin(r, &pg, filters, in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;

    struct rates_live_row *live;
    size_t n_live;
    if (rates_live_list(r, pairs, n_pairs, base, quote, &live, &n_live) != 0)
        return -1;
    struct fx_rate *refs;
    size_t n_refs = 0;
    if (want[2] && list_reference(r, pairs, n_pairs, base, quote, &refs, &n_refs) != 0)
        return -1;
    struct listed *all = arena_alloc(&r->arena, (2 * n_live + n_refs + 1) * sizeof *all);
    size_t n = 0;
    char day[11];
    rates_today_date(day);
    for (size_t i = 0; i < n_live; i++) {
        if (want[3]) {
            char spot[11];
            const char *reason = NULL;
            if (rates_spot_date(live[i].pair, day, spot) != 0)
                return -1;
            int priced = custom_rate(r, &live[i], arena_strdup(&r->arena, spot), &all[n].rate,
                                     &reason);
            if (priced < 0)
                return -1;
            if (priced > 0)
                all[n++].key = arena_printf(&r->arena, "%s:custom", live[i].pair);
        }
        if (want[1]) {
            rates_fx_rate(r, &live[i], &all[n].rate);
            all[n++].key = arena_printf(&r->arena, "%s:live", live[i].pair);
        }
    }
    for (size_t i = 0; i < n_refs; i++) {
        all[n].rate = refs[i];
        all[n++].key = arena_printf(&r->arena, "%s:reference", refs[i].pair);
    }
    qsort(all, n, sizeof *all, by_key);

    struct fx_rate_page *page = arena_alloc(&r->arena, sizeof *page);
    page->data = arena_alloc(&r->arena, ((size_t)pg.limit + 1) * sizeof *page->data);
    size_t i = 0;
    while (i < n && pg.after_key && strcmp(all[i].key, pg.after_key) <= 0)
        i++;
    const char *last = NULL;
    for (; i < n; i++) {
        if ((int64_t)page->data_count == pg.limit) {
            pg.has_more = true;
            break;
        }
        page->data[page->data_count++] = all[i].rate;
        last = all[i].key;
    }
    page->has_more = pg.has_more;
    page->next_cursor = page_next(r, &pg, last, last);
    page->next_cursor_is_null = page->next_cursor == NULL;
    out->status = 200;
    out->body_200 = page;
    return 0;
}

/* ---- getRate ------------------------------------------------------------------------------ */

int rates_get_rate(struct req *r, const struct rates_get_rate_request *in,
                   struct rates_get_rate_response *out)
{
    char base[4], quote[4];
    if (!rates_pair_split(in->pair, base, quote))
        return bad_param(r, "/path/pair", "invalid_pair",
                         arena_printf(&r->arena, "%s is not two different active ISO 4217 codes.",
                                      in->pair));
    enum rate_type type = in->has_rate_type ? in->rate_type : RATE_TYPE_LIVE;
    if (in->has_value_date && type != RATE_TYPE_CUSTOM)
        return bad_param(r, "/query/value_date", "value_date_needs_custom",
                         "value_date prices a custom rate: send it with rate_type=custom.");
    struct fx_rate *rate = arena_alloc(&r->arena, sizeof *rate);
    int found;
    if (type == RATE_TYPE_REFERENCE) {
        found = reference_rate(r, in->pair, rate);
    } else {
        struct rates_live_row x;
        found = rates_live_current(r, in->pair, &x);
        if (found > 0 && type == RATE_TYPE_LIVE) {
            rates_fx_rate(r, &x, rate);
        } else if (found > 0) {
            char day[11], spot[11];
            rates_today_date(day);
            if (rates_spot_date(in->pair, day, spot) != 0)
                return -1;
            const char *reason = NULL;
            found = custom_rate(r, &x, in->has_value_date ? in->value_date
                                                          : arena_strdup(&r->arena, spot),
                                rate, &reason);
            if (found == 0 && in->has_value_date && reason &&
                strcmp(reason, "outside_curve") == 0)
                return bad_param(r, "/query/value_date", "outside_curve",
                                 arena_printf(&r->arena,
                                              "%s is outside the tenors of %s's active curve.",
                                              in->value_date, in->pair));
        }
    }
    if (found < 0)
        return -1;
    if (found == 0) {
        req_problem(r, 404, "not_found", "This workspace has no %s rate of %s.",
                    rate_type_str(type), in->pair);
        return 0;
    }
    out->status = 200;
    out->body_200 = rate;
    return 0;
}

/* ---- getRateHistory ----------------------------------------------------------------------- */

/* One bucket's figures of the asked side, with what merging two series needs. */
struct bar {
    const char *start, *first, *last;
    const char *open, *high, *low, *close;
    struct decimal hi, lo;
    int64_t samples;
};

/* b folded into a (the same bucket of the workspace's series and the market's). 0 / -1. */
static void merge_bar(struct bar *a, const struct bar *b)
{
    if (strcmp(b->first, a->first) < 0) {
        a->first = b->first;
        a->open = b->open;
    }
    if (strcmp(b->last, a->last) > 0) {
        a->last = b->last;
        a->close = b->close;
    }
    if (decimal_cmp(b->hi, a->hi) > 0) {
        a->hi = b->hi;
        a->high = b->high;
    }
    if (decimal_cmp(b->lo, a->lo) < 0) {
        a->lo = b->lo;
        a->low = b->low;
    }
    a->samples += b->samples;
}

static const int64_t MAX_RANGE_MS[] = {
    [RATE_HISTORY_INTERVAL_1M] = INT64_C(7) * 86400000,
    [RATE_HISTORY_INTERVAL_1H] = INT64_C(366) * 86400000,
    [RATE_HISTORY_INTERVAL_1D] = INT64_C(7305) * 86400000, /* 20 years of 365.25 days */
};

/* Whether the workspace ever had a live rate of pair (its own, or the market's). */
static int ever_had(struct req *r, const char *pair)
{
    const char *v[] = {pair, r->principal.workspace_id};
    return storage_query_text("SELECT pair FROM fx_live_rates WHERE pair = ?1 AND "
                              "COALESCE(workspace_id, '') IN (?2, '')",
                              v, 2, NULL, 0);
}

/* getRateHistory for rate_type reference: the publications of [from, to), a page of them. */
static int reference_history_page(struct req *r, const struct rates_get_rate_history_request *in,
                                  const char *base, const char *quote, int64_t from, int64_t to,
                                  struct rates_get_rate_history_response *out)
{
    /* a day's publication is in the range when its day starts in it, as a bucket's start */
    char from_s[40], to_s[40];
    format_time_rfc3339(from + 86400000 - 1 - (from + 86400000 - 1) % 86400000, from_s,
                        sizeof from_s);
    format_time_rfc3339(to + 86400000 - 1 - (to + 86400000 - 1) % 86400000, to_s, sizeof to_s);
    from_s[10] = to_s[10] = '\0';
    struct page pg;
    const char *filters =
        arena_printf(&r->arena, "rate_history_reference|%s|%s|%s|%s|%d",
                     r->principal.workspace_id, in->pair, from_s, to_s,
                     in->has_field ? (int)in->field : -1);
    if (page_begin(r, &pg, filters, in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    struct fx_rate_history_point *points = NULL;
    size_t n = 0;
    int had = reference_history(r, base, quote, from_s, to_s, pg.after_key, pg.limit, &points,
                                &n);
    if (had < 0)
        return -1;
    if (had == 0) {
        req_problem(r, 404, "not_found", "This workspace has no reference rate of %s.", in->pair);
        return 0;
    }
    struct fx_rate_history_page *page = arena_alloc(&r->arena, sizeof *page);
    page->object = "fx_rate_history";
    page->pair = in->pair;
    page->rate_type = FX_RATE_HISTORY_PAGE_RATE_TYPE_REFERENCE;
    page->field = in->has_field ? in->field : RATE_FIELD_MID;
    page->interval = in->interval;
    size_t shown = n > (size_t)pg.limit ? (size_t)pg.limit : n;
    pg.has_more = n > (size_t)pg.limit;
    page->data = points;
    page->data_count = shown;
    page->has_more = pg.has_more;
    const char *last = shown ? arena_printf(&r->arena, "%.10s", points[shown - 1].start) : NULL;
    page->next_cursor = shown ? page_next(r, &pg, last, last) : NULL;
    page->next_cursor_is_null = page->next_cursor == NULL;
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int rates_get_rate_history(struct req *r, const struct rates_get_rate_history_request *in,
                           struct rates_get_rate_history_response *out)
{
    char base[4], quote[4];
    if (!rates_pair_split(in->pair, base, quote))
        return bad_param(r, "/path/pair", "invalid_pair",
                         arena_printf(&r->arena, "%s is not two different active ISO 4217 codes.",
                                      in->pair));
    int64_t from, to;
    if (!format_time_parse_any(in->from, &from) || !format_time_parse_any(in->to, &to))
        return -1; /* the schema's format let it through */
    if (to <= from)
        return bad_param(r, "/query/to", "invalid_range", "to must be after from.");
    if (to - from > MAX_RANGE_MS[in->interval])
        return bad_param(r, "/query/to", "range_too_large",
                         in->interval == RATE_HISTORY_INTERVAL_1M
                             ? "A 1m history covers at most 7 days."
                         : in->interval == RATE_HISTORY_INTERVAL_1H
                             ? "A 1h history covers at most 366 days."
                             : "A 1d history covers at most 20 years.");
    bool reference = in->has_rate_type &&
                     in->rate_type == RATES_GET_RATE_HISTORY_PARAM_RATE_TYPE_REFERENCE;
    if (reference && in->interval != RATE_HISTORY_INTERVAL_1D)
        return bad_param(r, "/query/interval", "interval_not_available",
                         "Reference rates are published once a day: their history is 1d only.");
    enum rate_field field = in->has_field ? in->field : RATE_FIELD_MID;
    if (reference)
        return reference_history_page(r, in, base, quote, from, to, out);
    int had = ever_had(r, in->pair);
    if (had < 0)
        return -1;
    if (had == 0) {
        req_problem(r, 404, "not_found", "This workspace never had a live rate of %s.", in->pair);
        return 0;
    }
    char from_s[40], to_s[40];
    format_time_rfc3339(from, from_s, sizeof from_s);
    format_time_rfc3339(to, to_s, sizeof to_s);
    const char *interval = rate_history_interval_str(in->interval);
    const char *side = rate_field_str(field);
    struct page pg;
    const char *filters = arena_printf(&r->arena, "rate_history|%s|%s|%s|%s|%s|%s",
                                       r->principal.workspace_id, in->pair, interval, side,
                                       from_s, to_s);
    if (page_begin(r, &pg, filters, in->limit, in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    /* Columns of the side asked for: its four figures sit together in the table. */
    static const char *const SQL[] = {
        [RATE_FIELD_BID] = "SELECT start, first_as_of, last_as_of, bid_open, bid_high, bid_low, "
                           "bid_close, samples",
        [RATE_FIELD_ASK] = "SELECT start, first_as_of, last_as_of, ask_open, ask_high, ask_low, "
                           "ask_close, samples",
        [RATE_FIELD_MID] = "SELECT start, first_as_of, last_as_of, mid_open, mid_high, mid_low, "
                           "mid_close, samples",
    };
    const char *sql = arena_printf(
        &r->arena,
        "%s FROM fx_rate_bars WHERE COALESCE(workspace_id, '') IN (?3, '') AND pair = ?1 "
        "AND bucket = ?2 AND start >= ?4 AND start < ?5 AND "
        "(CAST(?6 AS TEXT) IS NULL OR start > ?6) ORDER BY start LIMIT ?7",
        SQL[field]);
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, in->pair);
    db_bind_text(st, 2, interval);
    db_bind_text(st, 3, r->principal.workspace_id);
    /* from is inclusive of the bucket it falls in only when it starts there: a bucket is in
     * the range when its start is */
    db_bind_text(st, 4, from_s);
    db_bind_text(st, 5, to_s);
    db_bind_text(st, 6, pg.after_key);
    /* each bucket is at most two rows (the workspace's and the market's): twice the page, and
     * one more bucket to tell whether more follow */
    db_bind_int64(st, 7, 2 * (pg.limit + 1));
    struct bar *bars = arena_alloc(&r->arena, (size_t)(2 * (pg.limit + 1)) * sizeof *bars);
    size_t n = 0;
    int rc;
    bool bad = false;
    while ((rc = db_step(st)) == DB_ROW) {
        struct bar b = {
            .start = db_column_dup(&r->arena, st, 0),
            .first = db_column_dup(&r->arena, st, 1),
            .last = db_column_dup(&r->arena, st, 2),
            .open = db_column_dup(&r->arena, st, 3),
            .high = db_column_dup(&r->arena, st, 4),
            .low = db_column_dup(&r->arena, st, 5),
            .close = db_column_dup(&r->arena, st, 6),
            .samples = db_column_int64(st, 7),
        };
        if (decimal_parse(b.high, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &b.hi) != 0 ||
            decimal_parse(b.low, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &b.lo) != 0)
            bad = true;
        if (n > 0 && strcmp(bars[n - 1].start, b.start) == 0)
            merge_bar(&bars[n - 1], &b);
        else
            bars[n++] = b;
    }
    db_reset(st);
    if (rc != DB_DONE)
        return -1;
    if (bad) {
        log_error("rates: a stored bar of %s holds a value that is not a rate", in->pair);
        return -1;
    }
    /* The last bucket read may be incomplete (its second row past the limit): it is never
     * shown, since a full page stops before it. */
    struct fx_rate_history_page *page = arena_alloc(&r->arena, sizeof *page);
    page->object = "fx_rate_history";
    page->pair = in->pair;
    page->rate_type = FX_RATE_HISTORY_PAGE_RATE_TYPE_LIVE;
    page->field = field;
    page->interval = in->interval;
    size_t shown = n > (size_t)pg.limit ? (size_t)pg.limit : n;
    pg.has_more = n > (size_t)pg.limit;
    page->data = arena_alloc(&r->arena, (shown + 1) * sizeof *page->data);
    for (size_t i = 0; i < shown; i++) {
        struct fx_rate_history_point *p = &page->data[i];
        p->start = bars[i].start;
        p->open = bars[i].open;
        p->high = bars[i].high;
        p->low = bars[i].low;
        p->close = bars[i].close;
        p->samples = bars[i].samples;
    }
    page->data_count = shown;
    page->has_more = pg.has_more;
    page->next_cursor = shown ? page_next(r, &pg, bars[shown - 1].start, bars[shown - 1].start)
                              : NULL;
    page->next_cursor_is_null = page->next_cursor == NULL;
    out->status = 200;
    out->body_200 = page;
    return 0;
}
