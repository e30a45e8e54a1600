/* The conversions API's conversions: execute one from a quote (which it consumes, once), get,
 * list (JSON pages, or every match as CSV), cancel, and the currency positions they make. The
 * only file that writes fx_conversions: the settlement job (conversions_settlement.c) saves
 * what it decides through conversions_save_settlement (handlers/conversions.h). Rows, loads,
 * saves and the list come from the schema's x-table mapping (generated/rows_conversions.h).
 *
 *   scheduled --cut-off, funded--> settled
 *   scheduled --cut-off, unfunded--> overdue --funded--> settled
 *   scheduled | overdue --cancel--> cancelled */
#include "generated/conversions_api.h"

#include <stdio.h>
#include <string.h>

#include "generated/rows_conversions.h"
#include "handlers/conversions.h"
#include "handlers/payments_funding.h"
#include "runtime/audit.h"
#include "runtime/csv.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/outbox.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

#define CONVERSIONS_PATH "/v1/conversions"
#define CSV_MAX_ROWS 10000
#define AMOUNT_MAX INT64_C(9007199254740991) /* 2^53 - 1, the API's largest amount */
/* The cut-off on the value date (UTC): from then on the settlement job settles a conversion
 * whose sell-currency funds cover it. */
#define CUTOFF_TIME "T12:00:00.000Z"

static int db_failed(const char *what)
{
    log_error("conversions: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- execute ------------------------------------------------------------------------------- */

/* Whether an accounting period of r's workspace that covers date is closed or locked: 1 (r
 * answered 409 period_closed), 0 no, -1 failure. A read of the ledger's table (its owner is
 * ledger_periods.c): the conversion's entry will be dated its value date. */
static int period_closed(struct req *r, const char *date)
{
    const char *v[] = {r->principal.workspace_id, date};
    char status[16];
    int found = storage_query_text("SELECT status FROM ledger_periods WHERE workspace_id = ? AND "
                                   "? BETWEEN start_date AND end_date",
                                   v, 2, status, sizeof status);
    if (found < 0)
        return -1;
    if (found == 0 || (strcmp(status, "closed") != 0 && strcmp(status, "locked") != 0))
        return 0;
    verr_add(&r->verr, "/value_date", NULL, "period_closed",
             "the accounting period covering %s is %s", date, status);
    req_problem(r, 409, "period_closed",
                "The accounting period covering the value date %s is %s: the conversion could "
                "never be recorded.",
                date, status);
    r->with_errors = true;
    return 1;
}

/* FX-<yymmdd>-<6 characters>: the day it was made and the last characters of its id (random). */
static const char *short_reference(struct req *r, const struct fx_conversion *c)
{
    char tail[7];
    size_t n = strlen(c->id);
    for (int i = 0; i < 6; i++) {
        char ch = c->id[n - 6 + (size_t)i];
        tail[i] = ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
    }
    tail[6] = '\0';
    return arena_printf(&r->arena, "FX-%.2s%.2s%.2s-%s", c->created_at + 2, c->created_at + 5,
                        c->created_at + 8, tail);
}

int conversions_execute_conversion(struct req *r,
                                   const struct conversions_execute_conversion_request *in,
                                   struct conversions_execute_conversion_response *out)
{
    const struct fx_conversion_execute *x = in->body;
    struct fx_quote *q = arena_alloc(&r->arena, sizeof *q);
    int usable = conversions_quote_usable(r, x, q); /* 422, 409 */
    if (usable <= 0)
        return usable;
    int closed = period_closed(r, x->value_date);
    if (closed != 0)
        return closed > 0 ? 0 : -1;

    struct fx_conversion *c = arena_alloc(&r->arena, sizeof *c);
    resource_new(r, &rows_fx_conversion, c);
    c->quote_id = q->id;
    c->short_reference = short_reference(r, c);
    c->sell_currency = q->sell_currency;
    c->sell_amount = q->sell_amount;
    c->buy_currency = q->buy_currency;
    c->buy_amount = q->buy_amount;
    c->client_rate = q->rate;
    c->mid_rate = q->mid_rate;
    c->spread_bps = q->spread_bps;
    c->product = q->product;
    c->value_date = q->value_date;
    c->settlement_cutoff_at = arena_printf(&r->arena, "%s" CUTOFF_TIME, q->value_date);
    c->status = FX_CONVERSION_STATUS_SCHEDULED;
    c->created_by = r->principal.user_id;
    if (x->has_metadata) {
        c->metadata = x->metadata;
        c->metadata_count = x->metadata_count;
    }

    /* The quote first: its guarded save is what makes a second execution fail, in this
     * transaction; the UNIQUE index on quote_id stands behind it. */
    int consumed = conversions_quote_consume(r, q, c->id);
    if (consumed <= 0)
        return consumed;
    int rc = resource_insert(r, &rows_fx_conversion, c);
    if (rc == DB_ERR_UNIQUE) {
        req_problem(r, 409, "quote_already_used", "Quote %s was executed already.", q->id);
        return 0;
    }
    if (rc != 0)
        return -1;
    out->status = 201;
    out->body_201 = c;
    out->location = arena_printf(&r->arena, CONVERSIONS_PATH "/%s", c->id);
    out->etag = req_etag(r, c->version);
    return 0;
}

/* ---- get, list ----------------------------------------------------------------------------- */

int conversions_get_conversion(struct req *r, const struct conversions_get_conversion_request *in,
                               struct conversions_get_conversion_response *out)
{
    struct fx_conversion *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load_current(r, &rows_fx_conversion, in->id, NULL, row);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = row;
    out->etag = req_etag(r, row->version);
    return 0;
}

/* The page's conversions as one CSV document (the columns of the spec's example). */
static const char *conversions_csv(struct req *r, const struct fx_conversion *c, size_t n,
                                   size_t *len)
{
    static const char *const header[] = {"id", "short_reference", "status", "product",
                                         "sell_currency", "sell_amount", "buy_currency",
                                         "buy_amount", "client_rate", "value_date",
                                         "created_at", "settled_at"};
    struct csv w;
    csv_init(&w, &r->arena);
    for (size_t i = 0; i < sizeof header / sizeof header[0]; i++)
        csv_cell(&w, header[i]);
    csv_row_end(&w);
    for (size_t i = 0; i < n; i++) {
        csv_cell(&w, c[i].id);
        csv_cell(&w, c[i].short_reference);
        csv_cell(&w, fx_conversion_status_str(c[i].status));
        csv_cell(&w, fx_product_str(c[i].product));
        csv_cell(&w, c[i].sell_currency);
        csv_int(&w, c[i].sell_amount);
        csv_cell(&w, c[i].buy_currency);
        csv_int(&w, c[i].buy_amount);
        csv_cell(&w, c[i].client_rate);
        csv_cell(&w, c[i].value_date);
        csv_cell(&w, c[i].created_at);
        csv_cell(&w, c[i].has_settled_at ? c[i].settled_at : NULL);
        csv_row_end(&w);
    }
    return csv_text(&w, len);
}

int conversions_list_conversions(struct req *r,
                                 const struct conversions_list_conversions_request *in,
                                 struct conversions_list_conversions_response *out)
{
    bool csv = in->accept == MEDIA_CSV;
    if (in->has_value_date_from && in->has_value_date_to &&
        strcmp(in->value_date_to, in->value_date_from) <= 0) {
        req_problem(r, 400, "invalid_range",
                    "value_date_to (%s, exclusive) must be after value_date_from (%s).",
                    in->value_date_to, in->value_date_from);
        return 0;
    }
    if (csv && in->has_cursor) {
        verr_add(&r->verr, "/query/cursor", NULL, "invalid_request",
                 "the CSV history is one document: no cursor");
        req_problem(r, 400, "invalid_request",
                    "A CSV history is not paged: leave out cursor (and narrow the value dates "
                    "instead).");
        r->with_errors = true;
        return 0;
    }
    const struct resource_filter f[] = {
        RESOURCE_TEXT("status", RESOURCE_IN,
                      fx_conversion_status_set(&r->arena, in->status, in->status_count)),
        /* sold or bought: the ids of the workspace's conversions in the currency on either
         * side (each side by its index; ?1 is the list's workspace) */
        RESOURCE_TEXT("id IN (SELECT x.id FROM (SELECT id, sell_currency AS ccy FROM "
                      "fx_conversions WHERE workspace_id = ?1 UNION ALL SELECT id, buy_currency "
                      "FROM fx_conversions WHERE workspace_id = ?1) x WHERE x.ccy =",
                      RESOURCE_IN_SELECT, in->has_currency ? in->currency : NULL),
        RESOURCE_TEXT("product", RESOURCE_EQ,
                      in->has_product ? fx_product_str(in->product) : NULL),
        RESOURCE_TEXT("value_date", RESOURCE_GE,
                      in->has_value_date_from ? in->value_date_from : NULL),
        RESOURCE_TEXT("value_date", RESOURCE_LT,
                      in->has_value_date_to ? in->value_date_to : NULL),
    };
    struct resource_page rp;
    int listed = resource_list(r, &rows_fx_conversion, f, sizeof f / sizeof f[0],
                               csv ? CSV_MAX_ROWS : in->limit,
                               csv ? NULL : in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    out->status = 200;
    if (csv) {
        if (rp.has_more) {
            req_problem(r, 400, "too_many_rows",
                        "More than %d conversions match: narrow the value-date range.",
                        CSV_MAX_ROWS);
            return 0;
        }
        out->raw_200 = conversions_csv(r, rp.items, rp.count, &out->raw_200_len);
        return out->raw_200 ? 0 : -1;
    }
    struct fx_conversion_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->body_200 = page;
    return 0;
}

/* ---- cancel -------------------------------------------------------------------------------- */

int conversions_cancel_conversion(struct req *r,
                                  const struct conversions_cancel_conversion_request *in,
                                  struct conversions_cancel_conversion_response *out)
{
    struct fx_conversion *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load_current(r, &rows_fx_conversion, in->id, NULL, row);
    if (found <= 0)
        return found;
    struct fx_conversion *c = row;
    enum fx_conversion_status before = c->status;
    if (before != FX_CONVERSION_STATUS_SCHEDULED && before != FX_CONVERSION_STATUS_OVERDUE) {
        req_problem(r, 409, "invalid_transition",
                    "Conversion %s is %s: only a scheduled or overdue conversion can be "
                    "cancelled.",
                    c->id, fx_conversion_status_str(before));
        return 0;
    }
    char now[40];
    format_now_rfc3339(now, sizeof now);
    c->status = FX_CONVERSION_STATUS_CANCELLED;
    c->cancelled_at = arena_strdup(&r->arena, now);
    c->has_cancelled_at = true;
    int saved = resource_save_state(r, &rows_fx_conversion, row);
    if (saved <= 0)
        return saved;
    /* the payments it was to fund cannot go out now: held, with the reason (trade flows) */
    int held = payments_hold_funded_by(r, c->id);
    if (held < 0)
        return -1;
    if (audit_change(r, "fx_conversion.cancelled", "fx_conversion", c->id,
                     fx_conversion_status_str(before), "cancelled",
                     held > 0 ? arena_printf(&r->arena, "%d funded payment%s held", held,
                                             held == 1 ? "" : "s")
                              : NULL) != 0)
        return -1;
    out->status = 200;
    out->body_200 = c;
    out->etag = req_etag(r, c->version);
    return 0;
}

/* ---- positions ----------------------------------------------------------------------------- */

/* Per currency, the settled sums (vd '') and the pending sums by value date, in currency and
 * date order: each conversion counts twice, once bought and once sold. */
static const char POSITIONS_SQL[] =
    "SELECT ccy, vd, CAST(SUM(buys) AS BIGINT), CAST(SUM(sells) AS BIGINT) FROM ("
    "SELECT buy_currency AS ccy, CASE WHEN status = 'settled' THEN '' ELSE value_date END AS vd, "
    "buy_amount AS buys, 0 AS sells FROM fx_conversions "
    "WHERE workspace_id = ?1 AND status IN ('scheduled', 'overdue', 'settled') "
    "UNION ALL "
    "SELECT sell_currency, CASE WHEN status = 'settled' THEN '' ELSE value_date END, "
    "0, sell_amount FROM fx_conversions "
    "WHERE workspace_id = ?1 AND status IN ('scheduled', 'overdue', 'settled')"
    ") x WHERE CAST(?2 AS TEXT) IS NULL OR ccy = ?2 GROUP BY ccy, vd ORDER BY ccy, vd";

/* A sum the API shows, kept within what it can show (the sums of amounts that each are). */
static int64_t shown(int64_t v)
{
    return v > AMOUNT_MAX ? AMOUNT_MAX : v < -AMOUNT_MAX ? -AMOUNT_MAX : v;
}

#define POSITIONS_MAX 200
#define EXPOSURES_MAX 400

int conversions_get_conversion_positions(
    struct req *r, const struct conversions_get_conversion_positions_request *in,
    struct conversions_get_conversion_positions_response *out)
{
    struct fx_position_report *rep = arena_alloc(&r->arena, sizeof *rep);
    rep->object = "fx_position_report";
    rep->workspace_id = r->principal.workspace_id;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    rep->as_of = arena_strdup(&r->arena, now);
    rep->data = arena_alloc(&r->arena, POSITIONS_MAX * sizeof *rep->data);
    struct db_stmt *st = storage_prepare(POSITIONS_SQL);
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, in->has_currency ? in->currency : NULL);
    struct fx_position *p = NULL;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *ccy = db_column_text(st, 0);
        if (!p || strcmp(p->currency, ccy) != 0) {
            if (rep->data_count == POSITIONS_MAX)
                break; /* the schema's bound; ISO 4217 has fewer active codes */
            p = &rep->data[rep->data_count++];
            memset(p, 0, sizeof *p);
            p->currency = arena_strdup(&r->arena, ccy);
            p->forward_exposure =
                arena_alloc(&r->arena, EXPOSURES_MAX * sizeof *p->forward_exposure);
        }
        const char *vd = db_column_text(st, 1);
        int64_t buys = db_column_int64(st, 2), sells = db_column_int64(st, 3);
        if (!vd || !*vd) {
            p->settled_balance = shown(buys - sells);
            continue;
        }
        p->pending_buys = shown(p->pending_buys + buys);
        p->pending_sells = shown(p->pending_sells + sells);
        if (p->forward_exposure_count < EXPOSURES_MAX)
            p->forward_exposure[p->forward_exposure_count++] = (struct fx_forward_exposure){
                .value_date = arena_strdup(&r->arena, vd),
                .buys = shown(buys),
                .sells = shown(sells),
                .net = shown(buys - sells),
            };
    }
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW)
        return db_failed("the positions");
    for (size_t i = 0; i < rep->data_count; i++) {
        struct fx_position *x = &rep->data[i];
        x->net_position = shown(x->settled_balance + x->pending_buys - x->pending_sells);
    }
    out->status = 200;
    out->body_200 = rep;
    return 0;
}

/* ---- for the other files and APIs (handlers/conversions.h) ---------------------------------- */

int conversions_funding(struct req *r, const char *id, struct conversion_funding *out)
{
    struct fx_conversion *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load(r, &rows_fx_conversion, id, row);
    if (found != RESOURCE_FOUND)
        return found == RESOURCE_MISSING ? 0 : -1;
    out->id = row->id;
    out->status = fx_conversion_status_str(row->status);
    out->buy_currency = row->buy_currency;
    out->buy_amount = row->buy_amount;
    out->value_date = row->value_date;
    return 1;
}

int conversions_save_settlement(struct req *r, struct fx_conversion *c, const char *type,
                                const char *before, const char *detail)
{
    int saved = resource_save_state(r, &rows_fx_conversion, c);
    if (saved == 0) {
        req_problem_clear(r); /* the job's request answers nobody */
        return 0;
    }
    if (saved < 0)
        return -1;
    struct jsonw w;
    jsonw_init(&w);
    encode_fx_conversion(&w, c);
    const char *json = resource_json_text(&r->arena, &w);
    if (!json || outbox_add(r, type, "fx_conversion", c->id, c->version, json) != 0)
        return -1;
    if (audit_record(r, type, "fx_conversion", c->id, before,
                     fx_conversion_status_str(c->status), detail) != 0)
        return -1;
    return 1;
}
