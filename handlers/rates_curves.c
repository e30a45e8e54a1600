/* The rates API's custom forward curves: forward points per tenor for one pair, draft ->
 * active -> archived (a draft may also be archived or deleted), at most one active curve per
 * pair, and the interpolation that prices a value date between two tenors (rates_forward,
 * which the conversions API prices forward quotes with). The only writes of rate_curves. Rows,
 * loads, saves and the list come from the schema's x-table mapping (generated/rows_rates.h,
 * runtime/resource.h); what is here is the curves' own rules.
 *
 * A tenor's value date moves day by day (RateCurveTenor), so the stored points keep the value
 * dates of their last save only as a record: every read sets them for today. Forward points
 * are exact decimals (runtime/decimal.h), never a double. */
#include "generated/rates_api.h"

#include <stdio.h>
#include <string.h>

#include "generated/rows_rates.h"
#include "handlers/rates.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/outbox.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

#define CURVES_PATH "/v1/rates/curves"
#define OBJECT "rate_curve"

static int db_failed(const char *what)
{
    log_error("rate curves: %s failed: %s", what, storage_errmsg());
    return -1;
}

static const char *now_text(struct req *r)
{
    char buf[40];
    format_now_rfc3339(buf, sizeof buf);
    return arena_strdup(&r->arena, buf);
}

/* A value date on a Saturday or Sunday moves to the following Monday. */
static int64_t roll(int64_t day)
{
    while (rates_weekend(day))
        day++;
    return day;
}

static const char *day_text(struct req *r, int64_t day)
{
    char out[11];
    rates_date_of_days(day, out);
    return arena_strdup(&r->arena, out);
}

/* The value date tenor t of pair falls on when traded on day (RateCurveTenor): ON that day,
 * TN the next weekday, SPOT two weekdays later (one for USDCAD and CADUSD), 1W the spot date
 * plus 7 days, 1M ... 1Y the spot date plus that many months; a weekend rolls to Monday. */
static int64_t tenor_day(const char *pair, enum rate_curve_tenor t, int64_t day)
{
    int64_t spot = rates_spot_day(pair, day);
    switch (t) {
    case RATE_CURVE_TENOR_ON:
        return roll(day);
    case RATE_CURVE_TENOR_TN:
        return rates_add_weekdays(day, 1);
    case RATE_CURVE_TENOR_SPOT:
        return spot;
    case RATE_CURVE_TENOR_1_W:
        return roll(spot + 7);
    case RATE_CURVE_TENOR_1_M:
        return roll(rates_add_months(spot, 1));
    case RATE_CURVE_TENOR_3_M:
        return roll(rates_add_months(spot, 3));
    case RATE_CURVE_TENOR_6_M:
        return roll(rates_add_months(spot, 6));
    case RATE_CURVE_TENOR_1_Y:
        return roll(rates_add_months(spot, 12));
    }
    return day;
}

/* Sets every point's value date for today (points are kept in tenor order). */
static void refresh_points(struct req *r, struct rate_curve *c)
{
    int64_t now = rates_today();
    for (size_t i = 0; i < c->points_count; i++)
        c->points[i].value_date = day_text(r, tenor_day(c->pair, c->points[i].tenor, now));
}

/* ---- what a draft may hold ----------------------------------------------------------------- */

/* The points of a create or update body, checked (each tenor once, SPOT at 0: violations
 * into r->verr) and put in tenor order into c. false when a rule is broken. */
static bool take_points(struct req *r, struct rate_curve *c,
                        const struct rate_curve_point_input *in, size_t n)
{
    bool ok = true;
    int seen[RATE_CURVE_TENOR_1_Y + 1];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < n; i++) {
        const char *at = verr_index(&r->arena, "/points", i);
        enum rate_curve_tenor t = in[i].tenor;
        if (t < RATE_CURVE_TENOR_ON || t > RATE_CURVE_TENOR_1_Y)
            continue; /* the schema's enum refused it already */
        if (seen[t]) {
            verr_add(&r->verr, at, "tenor", "duplicate_tenor", "%s is given twice",
                     rate_curve_tenor_str(t));
            ok = false;
        }
        seen[t] = 1;
        struct decimal p;
        if (decimal_parse(in[i].forward_points, DECIMAL_MAX_DIGITS, RATES_SCALE, true, &p) != 0) {
            verr_add(&r->verr, at, "forward_points", "format", "not a decimal of at most %d places",
                     RATES_SCALE);
            ok = false;
        } else if (t == RATE_CURVE_TENOR_SPOT && p.units != 0) {
            verr_add(&r->verr, at, "forward_points", "spot_points_not_zero",
                     "the SPOT tenor's forward points are 0, not %s", in[i].forward_points);
            ok = false;
        }
    }
    if (!ok)
        return false;
    c->points = arena_alloc(&r->arena, n * sizeof *c->points);
    c->points_count = 0;
    for (int t = RATE_CURVE_TENOR_ON; t <= RATE_CURVE_TENOR_1_Y; t++)
        for (size_t i = 0; i < n; i++)
            if ((int)in[i].tenor == t) {
                c->points[c->points_count].tenor = in[i].tenor;
                c->points[c->points_count].forward_points = in[i].forward_points;
                c->points_count++;
            }
    refresh_points(r, c);
    return true;
}

/* ---- reading and saving ------------------------------------------------------------------ */

/* The curve an operation acts on, its points' value dates set for today: 1 go on, 0 answered
 * (404, 412), -1 failure. */
static int load_curve(struct req *r, const char *id, const char *if_match, struct rate_curve *c)
{
    int found = resource_load_current(r, &rows_rate_curve, id, if_match, c);
    if (found > 0)
        refresh_points(r, c);
    return found;
}

/* The active curve of pair in r's workspace: 1 into *c, 0 none, -1 failure. */
static int active_curve(struct req *r, const char *pair, struct rate_curve *c)
{
    struct db_stmt *st = storage_prepare("SELECT " ROWS_RATE_CURVE_COLUMNS
                                         " FROM rate_curves WHERE workspace_id = ? AND pair = ? "
                                         "AND status = 'active' LIMIT 1");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, pair);
    int rc = db_step(st), found = 0;
    if (rc == DB_ROW) {
        memset(c, 0, sizeof *c);
        if (rows_rate_curve.init)
            rows_rate_curve.init(c);
        found = row_read_rate_curve(&r->arena, st, 0, c) == 0 ? 1 : -1;
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("finding the active curve");
    if (found > 0)
        refresh_points(r, c);
    return found;
}

static void invalid_transition(struct req *r, const struct rate_curve *c, const char *verb,
                               const char *from)
{
    req_problem(r, 409, "invalid_transition", "Curve %s is %s; only %s curve can be %s.", c->id,
                rate_curve_status_str(c->status), from, verb);
}

static void not_editable(struct req *r, const struct rate_curve *c, const char *what)
{
    req_problem(r, 409, "curve_not_editable",
                "Curve %s is %s; only a draft can be %s (create a new draft and activate it).",
                c->id, rate_curve_status_str(c->status), what);
}

/* Saves c as its next version; a second active curve of the pair (the unique index) is 409.
 * 1 saved; 0 answered; -1 failure. */
static int save_curve(struct req *r, struct rate_curve *c)
{
    int saved = resource_save(r, &rows_rate_curve, c);
    if (saved == DB_ERR_UNIQUE) {
        req_problem(r, 409, "conflict", "Pair %s has another active curve.", c->pair);
        return 0;
    }
    return saved;
}

/* ---- operations -------------------------------------------------------------------------- */

int rates_list_rate_curves(struct req *r, const struct rates_list_rate_curves_request *in,
                           struct rates_list_rate_curves_response *out)
{
    const struct resource_filter f[] = {
        RESOURCE_TEXT("pair", RESOURCE_EQ, in->has_pair ? in->pair : NULL),
        RESOURCE_TEXT("status", RESOURCE_EQ,
                      in->has_status ? rate_curve_status_str(in->status) : NULL),
    };
    struct resource_page rp;
    int listed = resource_list(r, &rows_rate_curve, f, sizeof f / sizeof f[0], in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    struct rate_curve *items = rp.items;
    for (size_t i = 0; i < rp.count; i++)
        refresh_points(r, &items[i]);
    struct rate_curve_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int rates_create_rate_curve(struct req *r, const struct rates_create_rate_curve_request *in,
                            struct rates_create_rate_curve_response *out)
{
    const struct rate_curve_create *b = in->body;
    struct rate_curve *c = arena_alloc(&r->arena, sizeof *c);
    resource_new(r, &rows_rate_curve, c);
    bool ok = true;
    char base[4], quote[4];
    if (!rates_pair_split(b->pair, base, quote)) {
        verr_add(&r->verr, "/pair", NULL, "invalid_pair",
                 "%s is not two different active ISO 4217 codes", b->pair);
        ok = false;
    }
    c->pair = b->pair;
    if (!take_points(r, c, b->points, b->points_count) || !ok) {
        req_problem_validation(r, 422, "The curve breaks the rules of a curve.");
        return 0;
    }
    c->name = b->name;
    c->spot_source = b->has_spot_source ? b->spot_source : RATE_CURVE_SPOT_SOURCE_LIVE;
    c->status = RATE_CURVE_STATUS_DRAFT;
    c->created_by = r->principal.user_id;
    if (b->has_metadata) {
        c->metadata = b->metadata;
        c->metadata_count = b->metadata_count;
    }
    if (resource_insert(r, &rows_rate_curve, c) != 0)
        return -1;
    out->status = 201;
    out->body_201 = c;
    out->location = arena_printf(&r->arena, CURVES_PATH "/%s", c->id);
    return 0;
}

int rates_get_rate_curve(struct req *r, const struct rates_get_rate_curve_request *in,
                         struct rates_get_rate_curve_response *out)
{
    struct rate_curve *c = arena_alloc(&r->arena, sizeof *c);
    int found = load_curve(r, in->id, NULL, c);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = c;
    return 0;
}

int rates_update_rate_curve(struct req *r, const struct rates_update_rate_curve_request *in,
                            struct rates_update_rate_curve_response *out)
{
    const struct rate_curve_update *b = in->body;
    struct rate_curve *c = arena_alloc(&r->arena, sizeof *c);
    int found = load_curve(r, in->id, in->has_if_match ? in->if_match : NULL, c);
    if (found <= 0)
        return found;
    if (c->status != RATE_CURVE_STATUS_DRAFT) {
        not_editable(r, c, "changed");
        return 0;
    }
    if (b->has_points && !take_points(r, c, b->points, b->points_count)) {
        req_problem_validation(r, 422, "The curve breaks the rules of a curve.");
        return 0;
    }
    if (b->has_name)
        c->name = b->name;
    if (b->has_spot_source)
        c->spot_source = b->spot_source;
    if (b->has_metadata) {
        c->metadata = b->metadata;
        c->metadata_count = b->metadata_count;
    }
    int saved = save_curve(r, c);
    if (saved <= 0)
        return saved;
    out->status = 200;
    out->body_200 = c;
    return 0;
}

int rates_delete_rate_curve(struct req *r, const struct rates_delete_rate_curve_request *in,
                            struct rates_delete_rate_curve_response *out)
{
    struct rate_curve c;
    int found = load_curve(r, in->id, in->has_if_match ? in->if_match : NULL, &c);
    if (found <= 0)
        return found;
    if (c.status != RATE_CURVE_STATUS_DRAFT) {
        not_editable(r, &c, "deleted (archive an active one instead)");
        return 0;
    }
    /* at the version just read: a change that came first makes this a 412, not a loss */
    char version[FORMAT_I64_MAX];
    format_i64(version, c.version);
    const char *v[] = {c.id, r->principal.workspace_id, version};
    if (storage_exec_texts("DELETE FROM rate_curves WHERE id = ? AND workspace_id = ? AND "
                           "version = CAST(? AS INTEGER) AND status = 'draft'",
                           v, 3) != 0)
        return -1;
    if (storage_changes() != 1) {
        req_precondition_failed(r, in->has_if_match ? in->if_match : "*", c.version);
        return 0;
    }
    out->status = 204;
    return 0;
}

/* The curve as GET answers it (an event's object), in r's arena; NULL on failure. */
static const char *curve_json(struct req *r, const struct rate_curve *c)
{
    struct jsonw w;
    jsonw_init(&w);
    rows_rate_curve.encode(&w, c);
    return resource_json_text(&r->arena, &w);
}

int rates_activate_rate_curve(struct req *r, const struct rates_activate_rate_curve_request *in,
                              struct rates_activate_rate_curve_response *out)
{
    struct rate_curve *c = arena_alloc(&r->arena, sizeof *c);
    int found = load_curve(r, in->id, NULL, c);
    if (found <= 0)
        return found;
    if (c->status != RATE_CURVE_STATUS_DRAFT) {
        invalid_transition(r, c, "activated", "a draft");
        return 0;
    }
    const char *now = now_text(r);
    /* The pair's active curve, if any, is archived first in the same transaction (the unique
     * index admits one active curve per pair): quotes see the old curve or the new one. */
    struct rate_curve old;
    int had = active_curve(r, c->pair, &old);
    if (had < 0)
        return -1;
    if (had) {
        old.status = RATE_CURVE_STATUS_ARCHIVED;
        old.archived_at = now;
        old.has_archived_at = true;
        int saved = save_curve(r, &old);
        if (saved <= 0)
            return saved;
        const char *json = curve_json(r, &old);
        const char *detail = arena_printf(&r->arena, "{\"replaced_by\":\"%s\"}", c->id);
        if (!json || outbox_add(r, "rate_curve.archived", OBJECT, old.id, old.version, json) != 0 ||
            audit_change(r, "rate_curve.archived", OBJECT, old.id, "active", "archived", detail) !=
                0)
            return -1;
    }
    c->status = RATE_CURVE_STATUS_ACTIVE;
    c->effective_from = now;
    c->has_effective_from = true;
    c->activated_at = now;
    c->has_activated_at = true;
    int saved = save_curve(r, c);
    if (saved <= 0)
        return saved;
    out->status = 200;
    out->body_200 = c;
    return 0;
}

int rates_archive_rate_curve(struct req *r, const struct rates_archive_rate_curve_request *in,
                             struct rates_archive_rate_curve_response *out)
{
    struct rate_curve *c = arena_alloc(&r->arena, sizeof *c);
    int found = load_curve(r, in->id, NULL, c);
    if (found <= 0)
        return found;
    if (c->status == RATE_CURVE_STATUS_ARCHIVED) {
        invalid_transition(r, c, "archived", "a draft or active");
        return 0;
    }
    c->status = RATE_CURVE_STATUS_ARCHIVED;
    c->archived_at = now_text(r);
    c->has_archived_at = true;
    int saved = save_curve(r, c);
    if (saved <= 0)
        return saved;
    out->status = 200;
    out->body_200 = c;
    return 0;
}

/* ---- forward points (handlers/rates.h) --------------------------------------------------- */

int rates_forward(struct req *r, const char *base, const char *quote, const char *value_date,
                  struct rates_forward *out, const char **reason)
{
    *reason = NULL;
    int64_t d;
    if (!base || !quote || !rates_date_days(value_date, &d))
        return -1;
    const char *pair = arena_printf(&r->arena, "%s%s", base, quote);
    struct rate_curve c;
    int found = active_curve(r, pair, &c);
    if (found < 0)
        return -1;
    if (!found) {
        *reason = "no_forward_curve";
        return 0;
    }
    /* Points are kept in tenor order, so their value dates never decrease along them. */
    int64_t now = rates_today();
    size_t n = c.points_count;
    int64_t *days = arena_alloc(&r->arena, (n ? n : 1) * sizeof *days);
    for (size_t i = 0; i < n; i++)
        days[i] = tenor_day(c.pair, c.points[i].tenor, now);
    if (n == 0 || d < days[0] || d > days[n - 1]) {
        *reason = "outside_curve";
        return 0;
    }
    size_t i = 0;
    while (days[i] < d)
        i++;
    struct decimal p2;
    if (decimal_parse(c.points[i].forward_points, DECIMAL_MAX_DIGITS, RATES_SCALE, true, &p2) != 0)
        return -1;
    out->curve_id = c.id;
    out->reference_spot = c.spot_source == RATE_CURVE_SPOT_SOURCE_REFERENCE;
    if (days[i] == d) {
        out->points = p2;
        return 1;
    }
    /* days[i - 1] < d < days[i]: p = p1 + (p2 - p1) * (d - d1) / (d2 - d1), computed as
     * (p1 * (d2 - d1) + (p2 - p1) * (d - d1)) / (d2 - d1) so that it is rounded once, half-even
     * to RATES_SCALE places (rounding the fraction before adding p1 could break a tie the other
     * way). Every step before the division is exact. */
    struct decimal p1, diff, a, b, sum, q;
    struct decimal span = {days[i] - days[i - 1], 0}, into = {d - days[i - 1], 0};
    if (decimal_parse(c.points[i - 1].forward_points, DECIMAL_MAX_DIGITS, RATES_SCALE, true,
                      &p1) != 0 ||
        decimal_sub(p2, p1, &diff) != 0 ||
        decimal_mul(p1, span, RATES_SCALE, DECIMAL_ROUND_HALF_EVEN, &a) != 0 ||
        decimal_mul(diff, into, RATES_SCALE, DECIMAL_ROUND_HALF_EVEN, &b) != 0 ||
        decimal_add(a, b, &sum) != 0 ||
        decimal_div(sum, span, RATES_SCALE, DECIMAL_ROUND_HALF_EVEN, &q) != 0) {
        log_error("rate curves: interpolating curve %s at %s overflowed", c.id, value_date);
        return -1;
    }
    out->points = q;
    return 1;
}
