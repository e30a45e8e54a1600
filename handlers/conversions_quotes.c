/* The conversions API's quotes: POST /conversions/quote prices a conversion from the pair's
 * live mid (handlers/rates.h: rates_live_mid, and rates_forward for a value date after spot),
 * less the workspace's spread (handlers/workspace.h), and locks the price for the workspace's
 * quote lifetime; GET /conversions/quotes/{id} answers one. The only file that writes
 * fx_quotes: a quote is consumed here for executeConversion (conversions_quote_usable,
 * conversions_quote_consume: handlers/conversions.h).
 *
 * Exactness (runtime/decimal.h, never a double): rate = mid × (1 − spread_bps / 10000)
 * rounded half-even to 10 decimals; the computed amount is rounded once, in favour of the
 * workspace's liquidity account: `sell` fixed, buy = floor(sell × rate); `buy` fixed, sell =
 * ceil(buy ÷ rate), each in the currency's ISO 4217 minor units. */
#include "generated/conversions_api.h"

#include <stdio.h>
#include <string.h>

#include "generated/rows_conversions.h"
#include "handlers/conversions.h"
#include "handlers/rates.h"
#include "handlers/workspace.h"
#include "runtime/clock.h"
#include "runtime/decimal.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/resource.h"

#define QUOTES_PATH "/v1/conversions/quotes"
#define AMOUNT_MAX INT64_C(9007199254740991) /* 2^53 - 1, the API's largest amount */

/* ---- dates --------------------------------------------------------------------------------- */

/* The UTC day of now into out (11 bytes). */
/* ---- pricing ------------------------------------------------------------------------------- */

/* mid × (1 − bps / 10000), half-even to RATES_SCALE decimals. 0 / -1. */
static int client_rate(struct decimal mid, int bps, struct decimal *out)
{
    struct decimal share, factor, one = {1, 0};
    if (decimal_div((struct decimal){bps, 0}, (struct decimal){10000, 0}, 4,
                    DECIMAL_ROUND_HALF_EVEN, &share) != 0 ||
        decimal_sub(one, share, &factor) != 0)
        return -1;
    return decimal_mul(mid, factor, RATES_SCALE, DECIMAL_ROUND_HALF_EVEN, out);
}

/* The checks of the body alone (sides, amounts, dates), into r->verr; the value date into
 * *value_date (the spot date when absent) and whether it is a forward into *forward. 0 / -1. */
static int check_body(struct req *r, const struct fx_quote_create *c, const char *day,
                      const char **value_date, bool *forward)
{
    if (strcmp(c->sell_currency, c->buy_currency) == 0)
        verr_add(&r->verr, "/buy_currency", NULL, "same_currency",
                 "is the sell currency (%s): a conversion changes one currency into another",
                 c->sell_currency);
    bool sell = c->fixed_side == FX_FIXED_SIDE_SELL;
    if (sell ? !c->has_sell_amount : !c->has_buy_amount)
        verr_add(&r->verr, sell ? "/sell_amount" : "/buy_amount", NULL, "required",
                 "is required with fixed_side %s", fx_fixed_side_str(c->fixed_side));
    if (sell ? c->has_buy_amount : c->has_sell_amount)
        verr_add(&r->verr, sell ? "/buy_amount" : "/sell_amount", NULL, "fixed_side_mismatch",
                 "is computed with fixed_side %s: give only %s", fx_fixed_side_str(c->fixed_side),
                 sell ? "sell_amount" : "buy_amount");
    char pair[8], spot[11];
    snprintf(pair, sizeof pair, "%s%s", c->sell_currency, c->buy_currency);
    if (rates_spot_date(pair, day, spot) != 0) {
        log_error("conversions: no spot date for %s on %s", pair, day);
        return -1;
    }
    *value_date = c->has_value_date ? c->value_date : arena_strdup(&r->arena, spot);
    *forward = strcmp(*value_date, spot) > 0;
    if (c->has_product && (c->product == FX_PRODUCT_FORWARD) != *forward)
        verr_add(&r->verr, "/product", NULL, "product_mismatch",
                 "a value date of %s is a %s (spot date %s)", *value_date,
                 *forward ? "forward" : "spot", spot);
    if (!c->has_value_date)
        return 0;
    /* a year after spot: the same day of the month, or February's last (rates_add_months) */
    int64_t spot_day = 0, value_day = 0;
    char limit[11];
    if (!rates_date_days(spot, &spot_day) || !rates_date_days(c->value_date, &value_day))
        return -1; /* both real dates: the spot date computed, the value date by its format */
    rates_date_of_days(rates_add_months(spot_day, 12), limit);
    if (strcmp(c->value_date, day) < 0)
        verr_add(&r->verr, "/value_date", NULL, "value_date_in_past",
                 "is before today (%s, UTC)", day);
    else if (rates_weekend(value_day))
        verr_add(&r->verr, "/value_date", NULL, "value_date_not_business_day",
                 "%s is a Saturday or a Sunday", c->value_date);
    else if (strcmp(c->value_date, limit) > 0)
        verr_add(&r->verr, "/value_date", NULL, "value_date_too_far",
                 "is more than a year after the spot date %s", spot);
    return 0;
}

/* The amount of the computed side of q (its rate set) into q, or a violation at its member;
 * the amount bought at the mid (the settlement's liquidity line) must fit as well.
 * 0 / -1 (an exponent outside the table: the schema's format admits only codes with one). */
static int compute_amount(struct req *r, struct fx_quote *q, struct decimal mid,
                          struct decimal rate)
{
    int es = format_currency_exponent(q->sell_currency);
    int eb = format_currency_exponent(q->buy_currency);
    if (es < 0 || eb < 0)
        return -1;
    bool sell = q->fixed_side == FX_FIXED_SIDE_SELL;
    int64_t v = 0;
    int rc = sell ? decimal_amount_mul(q->sell_amount, es, rate, eb, DECIMAL_ROUND_DOWN, &v)
                  : decimal_amount_div(q->buy_amount, eb, rate, es, DECIMAL_ROUND_UP, &v);
    const char *at = sell ? "/buy_amount" : "/sell_amount";
    const char *ccy = sell ? q->buy_currency : q->sell_currency;
    /* Settling posts the bought amount at the mid to the liquidity account (the bought amount
     * plus the spread, conversions_settlement.c): that must be an amount the ledger takes too. */
    int64_t at_mid = 0;
    if (rc == 0 && v <= AMOUNT_MAX &&
        decimal_amount_mul(sell ? q->sell_amount : v, es, mid, eb, DECIMAL_ROUND_DOWN,
                           &at_mid) != 0)
        at_mid = AMOUNT_MAX + 1;
    if (rc != 0 || v > AMOUNT_MAX || at_mid > AMOUNT_MAX)
        verr_add(&r->verr, at, NULL, "amount_too_large",
                 "the computed amount in %s would pass 2^53 - 1 minor units", ccy);
    else if (v < 1)
        verr_add(&r->verr, at, NULL, "amount_too_small",
                 "the computed amount in %s is below one minor unit", ccy);
    else if (sell)
        q->buy_amount = v;
    else
        q->sell_amount = v;
    return 0;
}

/* A rate the API can show (the spec's Rate: below 10^8, above 0). */
static bool showable(struct decimal v)
{
    static const struct decimal limit = {100000000, 0};
    return v.units > 0 && decimal_cmp(v, limit) < 0;
}

/* The quote's prices (mid_rate, rate, rate_source): the spot, the live mid or for a forward
 * from a curve whose spot_source is `reference` the reference rate, plus the forward points of
 * the pair's curve; violations into r->verr. The client rate into *rate. 0 / -1. */
static int price(struct req *r, struct fx_quote *q, bool forward, struct decimal *rate)
{
    struct rates_forward fw = {0};
    if (forward) {
        const char *reason = NULL;
        int priced = rates_forward(r, q->sell_currency, q->buy_currency, q->value_date, &fw,
                                   &reason);
        if (priced < 0)
            return -1;
        if (priced == 0) {
            bool none = reason && strcmp(reason, "no_forward_curve") == 0;
            verr_add(&r->verr, "/value_date", NULL, none ? "no_forward_curve" : "outside_curve",
                     none ? "is after spot and %s%s has no active curve"
                          : "is outside the tenors of %s%s's active curve",
                     q->sell_currency, q->buy_currency);
            return 0;
        }
    }
    struct rates_price spot;
    int found = fw.reference_spot
                    ? rates_reference_latest(r, q->sell_currency, q->buy_currency, NULL, &spot)
                    : rates_live_mid(r, q->sell_currency, q->buy_currency, &spot);
    if (found < 0)
        return -1;
    if (found == 0) {
        verr_add(&r->verr, "/buy_currency", NULL, "rate_not_available",
                 "no %s rate of %s%s (nor %s%s)", fw.reference_spot ? "reference" : "live",
                 q->sell_currency, q->buy_currency, q->buy_currency, q->sell_currency);
        return 0;
    }
    struct decimal mid = spot.mid;
    q->rate_source = spot.source;
    if (forward) {
        if (decimal_add(mid, fw.points, &mid) != 0)
            return -1;
        q->rate_source = arena_printf(&r->arena, "curve:%s", fw.curve_id);
    }
    if (mid.units <= 0) { /* forward points larger than the rate: no price */
        verr_add(&r->verr, "/value_date", NULL, "outside_curve",
                 "the forward points at %s leave no positive rate", q->value_date);
        return 0;
    }
    char text[DECIMAL_TEXT_MAX];
    if (client_rate(mid, (int)q->spread_bps, rate) != 0 || !showable(mid) || !showable(*rate)) {
        verr_add(&r->verr, "/buy_currency", NULL, "rate_not_available",
                 "no rate of %s%s a quote can show (above 0, below 10^8)", q->sell_currency,
                 q->buy_currency);
        return 0;
    }
    q->mid_rate = arena_strdup(&r->arena, decimal_format_fixed(mid, RATES_SCALE, text,
                                                               sizeof text));
    q->rate = arena_strdup(&r->arena, decimal_format_fixed(*rate, RATES_SCALE, text,
                                                           sizeof text));
    return 0;
}

/* ---- expiry -------------------------------------------------------------------------------- */

/* Whether q (active) has expired: now >= expires_at. */
static bool past_expiry(const struct fx_quote *q)
{
    int64_t at = 0;
    return format_time_parse(q->expires_at, &at) && clock_now_ms() >= at;
}

/* ---- operations ---------------------------------------------------------------------------- */

int conversions_create_conversion_quote(
    struct req *r, const struct conversions_create_conversion_quote_request *in,
    struct conversions_create_conversion_quote_response *out)
{
    const struct fx_quote_create *c = in->body;
    struct workspace_treasury ws;
    if (workspace_treasury_of(r, &ws) != 0)
        return -1;
    char day[11];
    rates_today_date(day);
    const char *value_date = NULL;
    bool forward = false;
    if (check_body(r, c, day, &value_date, &forward) != 0)
        return -1;

    struct fx_quote *q = arena_alloc(&r->arena, sizeof *q);
    resource_new(r, &rows_fx_quote, q);
    q->sell_currency = c->sell_currency;
    q->buy_currency = c->buy_currency;
    q->fixed_side = c->fixed_side;
    q->sell_amount = c->has_sell_amount ? c->sell_amount : 0;
    q->buy_amount = c->has_buy_amount ? c->buy_amount : 0;
    q->spread_bps = ws.fx_spread_bps;
    q->value_date = value_date;
    q->product = forward ? FX_PRODUCT_FORWARD : FX_PRODUCT_SPOT;
    q->ttl_seconds = ws.fx_quote_ttl_seconds;
    q->status = FX_QUOTE_STATUS_ACTIVE;
    q->created_by = r->principal.user_id;
    if (c->has_metadata) {
        q->metadata = c->metadata;
        q->metadata_count = c->metadata_count;
    }
    /* price only a pair of two currencies on a usable date */
    bool same = strcmp(c->sell_currency, c->buy_currency) == 0;
    bool date_refused = false;
    for (int i = 0; i < r->verr.count; i++)
        date_refused |= strcmp(r->verr.items[i].pointer, "/value_date") == 0;
    struct decimal rate = {0, 0};
    if (!same && !date_refused && price(r, q, forward, &rate) != 0)
        return -1;
    struct decimal mid = {0, 0};
    if (r->verr.count == 0 &&
        (decimal_parse(q->mid_rate, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &mid) != 0 ||
         compute_amount(r, q, mid, rate) != 0))
        return -1;
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The quote cannot be priced as asked.");
        return 0;
    }
    int64_t created = 0;
    if (!format_time_parse(q->created_at, &created))
        return -1;
    char at[40];
    format_time_rfc3339(created + q->ttl_seconds * 1000, at, sizeof at);
    q->expires_at = arena_strdup(&r->arena, at);
    if (resource_insert(r, &rows_fx_quote, q) != 0)
        return -1;
    out->status = 201;
    out->body_201 = q;
    out->location = arena_printf(&r->arena, QUOTES_PATH "/%s", q->id);
    out->etag = req_etag(r, q->version);
    return 0;
}

int conversions_get_conversion_quote(struct req *r,
                                     const struct conversions_get_conversion_quote_request *in,
                                     struct conversions_get_conversion_quote_response *out)
{
    struct fx_quote *q = arena_alloc(&r->arena, sizeof *q);
    int found = resource_load_current(r, &rows_fx_quote, in->id, NULL, q);
    if (found <= 0)
        return found;
    /* A read stores nothing (it runs outside the write transaction): the quote is answered as
     * what it is now, and stored as expired by the first execution attempt. */
    if (q->status == FX_QUOTE_STATUS_ACTIVE && past_expiry(q))
        q->status = FX_QUOTE_STATUS_EXPIRED;
    out->status = 200;
    out->body_200 = q;
    out->etag = req_etag(r, q->version);
    return 0;
}

/* ---- for executeConversion (handlers/conversions.h) ----------------------------------------- */

int conversions_quote_usable(struct req *r, const struct fx_conversion_execute *x,
                             struct fx_quote *q)
{
    switch (resource_load(r, &rows_fx_quote, x->quote_id, q)) {
    case RESOURCE_FAILED:
        return -1;
    case RESOURCE_MISSING:
        verr_add(&r->verr, "/quote_id", NULL, "quote_not_found",
                 "no quote %s in this workspace", x->quote_id);
        req_problem_validation(r, 422, "The quote to execute does not exist.");
        return 0;
    }
    struct {
        const char *at;
        bool same;
    } members[] = {
        {"/sell_currency", strcmp(x->sell_currency, q->sell_currency) == 0},
        {"/buy_currency", strcmp(x->buy_currency, q->buy_currency) == 0},
        {"/sell_amount", x->sell_amount == q->sell_amount},
        {"/buy_amount", x->buy_amount == q->buy_amount},
        {"/value_date", strcmp(x->value_date, q->value_date) == 0},
    };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
        if (!members[i].same)
            verr_add(&r->verr, members[i].at, NULL, "quote_mismatch",
                     "differs from quote %s's", q->id);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The request does not repeat the quote's terms.");
        return 0;
    }
    if (q->status == FX_QUOTE_STATUS_CONSUMED) {
        req_problem(r, 409, "quote_already_used", "Quote %s was executed already (conversion %s).",
                    q->id, q->has_conversion_id ? q->conversion_id : "-");
        return 0;
    }
    if (q->status == FX_QUOTE_STATUS_ACTIVE && past_expiry(q)) {
        /* stored as what it is now, though the request is refused */
        q->status = FX_QUOTE_STATUS_EXPIRED;
        int saved = resource_save_state(r, &rows_fx_quote, q);
        if (saved < 0)
            return -1;
        if (saved == 0)
            return 0; /* 412: another writer came first; answered */
        r->keep_writes = true;
    }
    if (q->status == FX_QUOTE_STATUS_EXPIRED) {
        req_problem(r, 409, "quote_expired", "Quote %s expired at %s; ask for a new one.", q->id,
                    q->expires_at);
        return 0;
    }
    return 1;
}

int conversions_quote_consume(struct req *r, struct fx_quote *q, const char *conversion_id)
{
    q->status = FX_QUOTE_STATUS_CONSUMED;
    q->conversion_id = conversion_id;
    q->has_conversion_id = true;
    int saved = resource_save_state(r, &rows_fx_quote, q);
    if (saved == 0) { /* another execution came first (the version moved) */
        req_problem_clear(r);
        req_problem(r, 409, "quote_already_used", "Quote %s was executed already.", q->id);
    }
    return saved < 0 ? -1 : saved;
}
