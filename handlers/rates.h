/* What the rates files share, and the rates that other APIs read (the conversions API prices
 * quotes through rates_live_mid and rates_forward). Who writes what (handlers/sql/README.md):
 *
 *   rates_dates.c      currency pairs and the FX calendar (spot dates, weekends, months)
 *   rates_live.c       live rates: the pair's current rate and its history (pushRates),
 *                      read by rates_live_read.c (listRates, getRate, getRateHistory)
 *   rates_market.c     the embedded sandbox market: a seeded random walk per pair, a
 *                      background job that records a tick every configured interval
 *   rates_reference.c  the ECB reference-rate file import and the reference rates (cross
 *                      rates through EUR)
 *   rates_curves.c     custom forward curves (draft, active, archived) and their interpolation
 *   rates_alerts.c     rate alerts and their evaluation on every new current rate
 *
 * Rates are exact decimals (runtime/decimal.h): quote-currency units for one base-currency
 * unit, at most 10 decimal places, never a double. */
#ifndef HANDLERS_RATES_H
#define HANDLERS_RATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/decimal.h"
#include "runtime/req.h"

/* The largest scale a rate has (the spec's Rate: 10 decimal places). */
#define RATES_SCALE 10

/* ---- rates_dates.c: pairs and the FX calendar ------------------------------------------ */

/* Whether pair is two different active ISO 4217 codes (`EURUSD`): true into base and quote
 * (each 4 bytes, NUL-terminated), false otherwise. */
bool rates_pair_split(const char *pair, char base[4], char quote[4]);
/* A date as its day number since 1970-01-01: false when date is not YYYY-MM-DD of a real day. */
bool rates_date_days(const char *date, int64_t *days);
/* Day number days as YYYY-MM-DD into out (11 bytes). */
void rates_date_of_days(int64_t days, char out[11]);
/* Today's day number (UTC, the server clock), and as YYYY-MM-DD into out (11 bytes). */
int64_t rates_today(void);
void rates_today_date(char out[11]);
/* Whether day is a Saturday or a Sunday (public holidays are not modelled). */
bool rates_weekend(int64_t day);
/* day plus n weekdays (n >= 0). */
int64_t rates_add_weekdays(int64_t day, int n);
/* The same day of the month n months after day, or that month's last day when shorter. */
int64_t rates_add_months(int64_t day, int n);
/* The spot day of pair for a trade on trade_day: two weekdays later, one for USDCAD and
 * CADUSD. rates_spot_date: the same on dates (YYYY-MM-DD into out, 11 bytes); 0 / -1 (a
 * malformed date). */
int64_t rates_spot_day(const char *pair, int64_t trade_day);
int rates_spot_date(const char *pair, const char *trade_date, char out[11]);

/* ---- rates_live.c: the current live rate -------------------------------------------------- */

/* A live mid price of base in quote, as conversions price from it. */
struct rates_price {
    struct decimal mid; /* quote units for one base unit: exact as stored, or, when only the
                         * inverse pair has a rate, 1 / its mid rounded half-even to
                         * RATES_SCALE decimals */
    const char *source; /* the rate's source (`provider:sandbox`, `manual`, ...), r's arena */
    const char *as_of;  /* RFC 3339, r's arena */
    const char *value_date; /* a reference rate's publication date (rates_reference_latest);
                             * NULL for a live rate */
    const char *text; /* a reference rate as the API shows it: the file's own figure against
                       * EUR, a cross rate with RATES_SCALE decimals; NULL for a live rate */
};
/* The current live mid of base/quote in r's workspace (the workspace's pushed rates and the
 * sandbox market's, the later as_of wins), the pair or its inverse: 1 found into *out, 0 none
 * (nothing answered), -1 failure. */
int rates_live_mid(struct req *r, const char *base, const char *quote, struct rates_price *out);

/* Records a live rate of t->pair observed at t->as_of from source, for workspace_id (NULL:
 * the sandbox market's, which every workspace sees) into the history; it becomes the pair's
 * current live rate unless a later one is current already (*became_current says which), and
 * then the alerts it concerns are evaluated (rates_alerts_on_rate). value_date NULL: the spot
 * date. For pushRates and the market job. 0 / -1. */
struct rates_tick;
int rates_record_live(struct req *r, const char *workspace_id, const struct rates_tick *t,
                      const char *source, const char *value_date, bool *became_current);

/* ---- rates_reference.c: the ECB reference rates ------------------------------------------
 * Kept per workspace in reference_publications (workspace_id, source 'ecb', date,
 * imported_at, rate_count) and reference_rates (workspace_id, source, date, currency, rate:
 * units of currency for one EUR, the text as published). */

/* The reference rate of base in quote from r's workspace's latest publication on or before
 * date (YYYY-MM-DD; NULL: today, UTC): the file's figure for EUR/quote, 1 / EURbase for
 * base/EUR, EURquote / EURbase otherwise (a cross rate through EUR), the last two rounded
 * half-even to RATES_SCALE decimals. source "ecb", as_of the publication's import time,
 * value_date its date. 1 found into *out; 0 none (no publication by then, or it lacks base or
 * quote); -1 failure. */
int rates_reference_latest(struct req *r, const char *base, const char *quote, const char *date,
                           struct rates_price *out);
/* The currencies r's workspace's latest publication on or before date (NULL: today, UTC)
 * quotes against EUR, by code, into *codes (n of them, r's arena), its date into *pub_date:
 * the EURXXX pairs of listRates' reference rates. 1 / 0 no publication by then / -1. */
int rates_reference_currencies(struct req *r, const char *date, const char **pub_date,
                               const char ***codes, size_t *n);

/* ---- rates_curves.c: forward points ------------------------------------------------------ */

/* What the pair's active curve adds to the spot rate for a value date. */
struct rates_forward {
    const char *curve_id;        /* the active curve that priced it, r's arena */
    bool reference_spot;         /* its spot_source is `reference`: the points are added to
                                  * the reference rate (rates_reference_latest), not the live */
    struct decimal points;       /* forward points at value_date (rate units), interpolated
                                  * linearly in calendar days between the enclosing tenors,
                                  * half-even to RATES_SCALE decimals */
};
/* The forward points of base/quote (or, with only the inverse pair's curve, none: a curve
 * prices its own pair only) at value_date (YYYY-MM-DD), from the workspace's active curve
 * as of today: 1 priced into *out; 0 not priced, *reason "no_forward_curve" (no active
 * curve for the pair) or "outside_curve" (before the first tenor's value date or after the
 * last one's), nothing answered; -1 failure. */
int rates_forward(struct req *r, const char *base, const char *quote, const char *value_date,
                  struct rates_forward *out, const char **reason);

/* ---- rates_alerts.c: evaluation ---------------------------------------------------------- */

/* A rate that just became current (bid <= mid <= ask). */
struct rates_tick {
    const char *pair;
    struct decimal bid, ask, mid;
    const char *as_of; /* RFC 3339 */
};
/* Evaluates the active alerts on t->pair of workspace_id (NULL: every workspace's, for a
 * market tick) against t, in the caller's transaction: each alert whose condition holds is
 * triggered (status, triggered_at, last_evaluated_rate; `once` alerts stop, `every_time`
 * alerts re-arm) and an fx_rate_alert.triggered event is queued in the outbox; expired
 * alerts become `expired`. 0 / -1. */
int rates_alerts_on_rate(struct req *r, const char *workspace_id, const struct rates_tick *t);

/* The condition of an alert, pure and exact (decimal_cmp; the tests' way in): whether field
 * ("bid", "ask", "mid") of t against value (a Rate's text) holds by op ("gt", "gte", "lt",
 * "lte", "cross_above", "cross_below"), prev being the field of the previous rate evaluated
 * (last_evaluated_rate; NULL: none). cross_above holds when prev < value <= now, cross_below
 * when prev > value >= now; with no prev a crossing only records the side (0). 1 holds, 0
 * not, -1 an unknown field or operator or a value or prev that is not a Rate. */
int rates_alert_holds(const char *field, const char *op, const char *value, const char *prev,
                      const struct rates_tick *t);
/* Whether an active alert fires on t: `once` when its condition holds; `every_time` when it
 * becomes true again (gt, gte, lt, lte: held now and not at prev; a crossing is its own
 * edge). Same answers as rates_alert_holds. */
int rates_alert_fires(const char *field, const char *op, const char *value, bool every_time,
                      const char *prev, const struct rates_tick *t);

#endif
