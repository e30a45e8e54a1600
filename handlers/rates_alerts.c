/* The rates API's rate alerts: a watch on one pair's live rate (gt, gte, lt, lte, cross_above,
 * cross_below on its bid, ask or mid), fired once or every time, until expires_at; and their
 * evaluation against every rate that becomes current (rates_alerts_on_rate, called by
 * rates_record_live in the transaction that records the rate). The only writes of
 * rate_alerts. Rows, loads, saves and the CRUD come from the schema's x-table mapping
 * (generated/rows_rates.h, runtime/resource.h); what is here is the alerts' own rules.
 *
 * Expiry is lazy: an alert whose expires_at has passed is shown `expired` by every read from
 * then on (a GET runs in a read transaction and writes nothing); the next evaluation of its
 * pair, or a resume, stores it. So there is no sweeping job, and the test clock moves expiry
 * exactly.
 *
 * Evaluating does not make a new version of an alert that does not fire: last_evaluated_rate
 * and last_evaluated_at move on every rate (a crossing and an every_time re-arm are judged
 * from them), but only a firing is a change the client made or must see in the ETag (the
 * spec's examples: an active alert at version 1 with a last evaluated rate). */
#include "handlers/rates.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "generated/rates_api.h"
#include "generated/rows_rates.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/mail.h"
#include "runtime/outbox.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define ALERTS_PATH "/v1/rates/alerts"
#define OBJECT "fx_rate_alert"
#define TRIGGERED "fx_rate_alert.triggered"
/* A workspace keeps at most this many active or paused alerts (the spec's 409). */
#define ALERT_LIMIT 200
/* expires_at at most this far ahead (366 days, in ms). */
#define MAX_AHEAD_MS (INT64_C(366) * 86400 * 1000)

static int db_failed(const char *what)
{
    log_error("rate alerts: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- the condition: pure, exact ------------------------------------------------------ */

/* A Rate as the spec writes it: at most 18 significant digits, 10 decimals, not negative. */
static int parse_rate(const char *s, struct decimal *d)
{
    return s ? decimal_parse(s, DECIMAL_MAX_DIGITS, RATES_SCALE, false, d) : -1;
}

static const struct decimal *tick_field(const char *field, const struct rates_tick *t)
{
    if (!field)
        return NULL;
    if (strcmp(field, "bid") == 0)
        return &t->bid;
    if (strcmp(field, "ask") == 0)
        return &t->ask;
    if (strcmp(field, "mid") == 0)
        return &t->mid;
    return NULL;
}

enum alert_op { OP_BAD, OP_GT, OP_GTE, OP_LT, OP_LTE, OP_CROSS_ABOVE, OP_CROSS_BELOW };

static enum alert_op op_of(const char *op)
{
    static const char *const names[] = {"gt", "gte", "lt", "lte", "cross_above", "cross_below"};
    for (int i = 0; op && i < 6; i++)
        if (strcmp(op, names[i]) == 0)
            return (enum alert_op)(i + 1);
    return OP_BAD;
}

/* A plain comparison of rate with value (gt, gte, lt, lte). */
static bool compares(enum alert_op op, struct decimal rate, struct decimal value)
{
    int c = decimal_cmp(rate, value);
    switch (op) {
    case OP_GT:
        return c > 0;
    case OP_GTE:
        return c >= 0;
    case OP_LT:
        return c < 0;
    case OP_LTE:
        return c <= 0;
    default:
        return false;
    }
}

int rates_alert_holds(const char *field, const char *op, const char *value, const char *prev,
                      const struct rates_tick *t)
{
    const struct decimal *now = tick_field(field, t);
    enum alert_op o = op_of(op);
    struct decimal v, p;
    if (!now || o == OP_BAD || parse_rate(value, &v) != 0 || (prev && parse_rate(prev, &p) != 0))
        return -1;
    switch (o) {
    case OP_CROSS_ABOVE: /* from below value to at or above it; the first rate only records
                          * the side */
        return prev && decimal_cmp(p, v) < 0 && decimal_cmp(*now, v) >= 0;
    case OP_CROSS_BELOW:
        return prev && decimal_cmp(p, v) > 0 && decimal_cmp(*now, v) <= 0;
    default:
        return compares(o, *now, v);
    }
}

int rates_alert_fires(const char *field, const char *op, const char *value, bool every_time,
                      const char *prev, const struct rates_tick *t)
{
    int holds = rates_alert_holds(field, op, value, prev, t);
    if (holds != 1 || !every_time || !prev)
        return holds;
    enum alert_op o = op_of(op);
    if (o == OP_CROSS_ABOVE || o == OP_CROSS_BELOW)
        return 1; /* a crossing is its own edge: the next one needs the other side first */
    /* every_time: only when the condition becomes true again, so a rate that keeps meeting
     * `gt` fires once, not on every tick. prev parsed already by rates_alert_holds. */
    struct decimal v, p;
    parse_rate(value, &v);
    parse_rate(prev, &p);
    return !compares(o, p, v);
}

/* d with exactly RATES_SCALE decimals ("1.0842500000"), as the spec shows rates; d has at most
 * RATES_SCALE (a tick's). NULL if not. */
static const char *rate_text(struct arena *a, struct decimal d)
{
    char buf[DECIMAL_TEXT_MAX];
    if (d.scale > RATES_SCALE || d.units < 0)
        return NULL;
    return arena_strdup(a, decimal_format_fixed(d, RATES_SCALE, buf, sizeof buf));
}

/* ---- shared rules ---------------------------------------------------------------------- */

/* Any RFC 3339 time as stored (UTC, milliseconds), in r's arena; NULL if not one. */
static const char *utc(struct req *r, const char *ts, int64_t *ms_out)
{
    int64_t ms = 0;
    if (!ts || !format_time_parse_any(ts, &ms))
        return NULL;
    char buf[40];
    format_time_rfc3339(ms, buf, sizeof buf);
    if (ms_out)
        *ms_out = ms;
    return arena_strdup(&r->arena, buf);
}

static const char *now_text(struct req *r)
{
    char buf[40];
    format_time_rfc3339(clock_now_ms(), buf, sizeof buf);
    return arena_strdup(&r->arena, buf);
}

/* Whether a's expires_at has passed while it is not stored as expired. */
static bool lapsed(const struct rate_alert *a)
{
    int64_t ms = 0;
    return a->status != RATE_ALERT_STATUS_EXPIRED && format_time_parse_any(a->expires_at, &ms) &&
           ms <= clock_now_ms();
}

/* What a read shows: an alert past its expires_at is expired (stored so later). */
static void show(struct rate_alert *a)
{
    if (lapsed(a))
        a->status = RATE_ALERT_STATUS_EXPIRED;
}

/* The 422 rules of create and update: pair (create only: NULL on update), expires_at (NULL:
 * not given) in the future and at most 366 days ahead, normalised into *expires_utc. 1 go on,
 * 0 answered. */
static int check_body(struct req *r, const char *pair, const char *expires_at,
                      const char **expires_utc)
{
    char base[4], quote[4];
    if (pair && !rates_pair_split(pair, base, quote))
        verr_add(&r->verr, "/pair", NULL, "invalid_pair",
                 "%s is not two different active ISO 4217 codes", pair);
    if (expires_at) {
        int64_t ms = 0, now = clock_now_ms();
        *expires_utc = utc(r, expires_at, &ms);
        if (!*expires_utc)
            verr_add(&r->verr, "/expires_at", NULL, "format", "not an RFC 3339 date-time");
        else if (ms <= now)
            verr_add(&r->verr, "/expires_at", NULL, "expires_at_in_past",
                     "%s is not in the future", expires_at);
        else if (ms - now > MAX_AHEAD_MS)
            verr_add(&r->verr, "/expires_at", NULL, "expires_at_too_far",
                     "%s is more than 366 days ahead", expires_at);
    }
    if (r->verr.count == 0)
        return 1;
    req_problem_validation(r, 422, "The alert cannot be kept as given.");
    return 0;
}

static void invalid_transition(struct req *r, const struct rate_alert *a, const char *verb,
                               const char *from)
{
    req_problem(r, 409, "invalid_transition", "Rate alert %s is %s; only %s alert can be %s.",
                a->id, rate_alert_status_str(a->status), from, verb);
}

/* Saves a transition of a (status and what an evaluation writes) as its next version and
 * reports it for the audit record. 1 saved; 0 answered (412); -1 failure. */
static int save_transition(struct req *r, struct rate_alert *a, enum rate_alert_status before,
                           const char *action)
{
    int saved = resource_save_state(r, &rows_rate_alert, a);
    if (saved <= 0)
        return saved == DB_ERR_UNIQUE ? -1 : saved;
    if (audit_change(r, action, OBJECT, a->id, rate_alert_status_str(before),
                     rate_alert_status_str(a->status), NULL) != 0)
        return -1;
    return 1;
}

static void forget_rate(struct rate_alert *a)
{
    a->last_evaluated_rate = NULL;
    a->has_last_evaluated_rate = false;
    a->last_evaluated_at = NULL;
    a->has_last_evaluated_at = false;
}

/* ---- operations -------------------------------------------------------------------------- */

int rates_list_rate_alerts(struct req *r, const struct rates_list_rate_alerts_request *in,
                           struct rates_list_rate_alerts_response *out)
{
    /* The status filter is on the status a read shows (an alert past expires_at is expired),
     * so the list says what a GET of each item says; `now` moves between pages and is not in
     * the cursor. */
    const char *set = in->has_status ? rate_alert_status_set(&r->arena, in->status,
                                                             in->status_count)
                                     : NULL;
    const char *pair = in->has_pair ? in->pair : NULL;
    const char *args[] = {r->principal.workspace_id, pair, set, now_text(r)};
    const struct resource_sql_list alerts = {
        .digest = arena_printf(&r->arena, "rate_alerts&w=%s&pair=%s&status=%s",
                               r->principal.workspace_id, pair ? pair : "", set ? set : ""),
        .sql = "SELECT " ROWS_RATE_ALERT_COLUMNS " FROM rate_alerts WHERE workspace_id = ?1 "
               "AND (CAST(?2 AS TEXT) IS NULL OR pair = ?2) "
               "AND (CAST(?3 AS TEXT) IS NULL OR length(replace(?3, ',' || "
               "(CASE WHEN status <> 'expired' AND expires_at <= ?4 THEN 'expired' "
               "ELSE status END) || ',', '')) < length(?3)) "
               "AND (CAST(?5 AS TEXT) IS NULL OR created_at < ?5 OR (created_at = ?5 "
               "AND id < ?6)) ORDER BY created_at DESC, id DESC LIMIT ?7",
        .args = args,
        .n_args = 4,
        .item_size = sizeof(struct rate_alert),
        .row = rows_rate_alert.page_row,
        .key_offset = offsetof(struct rate_alert, created_at),
        .id_offset = offsetof(struct rate_alert, id),
    };
    struct resource_page rp;
    int listed =
        resource_list_sql(r, &alerts, in->limit, in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    for (size_t i = 0; i < rp.count; i++)
        show((struct rate_alert *)rp.items + i);
    struct rate_alert_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

/* How many active or paused alerts r's workspace keeps (the expired-by-now left out). */
static int live_alerts(struct req *r, int64_t *n)
{
    const char *now = now_text(r);
    struct db_stmt *st = storage_prepare(
        "SELECT count(*) FROM rate_alerts WHERE workspace_id = ? AND status IN ('active', "
        "'paused') AND expires_at > ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, now);
    int rc = db_step(st);
    *n = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_reset(st);
    return rc == DB_ROW ? 0 : db_failed("counting the alerts");
}

int rates_create_rate_alert(struct req *r, const struct rates_create_rate_alert_request *in,
                            struct rates_create_rate_alert_response *out)
{
    const struct rate_alert_create *c = in->body;
    const char *expires = NULL;
    int ok = check_body(r, c->pair, c->expires_at, &expires);
    if (ok <= 0)
        return ok;
    int64_t n = 0;
    if (live_alerts(r, &n) != 0)
        return -1;
    if (n >= ALERT_LIMIT) {
        req_problem(r, 409, "alert_limit_reached",
                    "This workspace keeps %" PRId64 " active or paused rate alerts, the most "
                    "it may; delete or let one expire first.",
                    n);
        return 0;
    }
    struct rate_alert *a = arena_alloc(&r->arena, sizeof *a);
    resource_new(r, &rows_rate_alert, a);
    a->repeat = RATE_ALERT_REPEAT_ONCE;
    merge_rate_alert_create_into_rate_alert(&r->arena, c, a);
    a->expires_at = expires;
    if (!c->has_notify) { /* the spec's default: the event, delivered to webhooks */
        struct rate_alert_notify *nt = arena_alloc(&r->arena, sizeof *nt);
        nt->channels = arena_alloc(&r->arena, sizeof *nt->channels);
        nt->channels[0] = RATE_ALERT_NOTIFY_CHANNELS_ITEM_WEBHOOK;
        nt->channels_count = 1;
        a->notify = nt;
    }
    a->status = RATE_ALERT_STATUS_ACTIVE;
    a->trigger_count = 0;
    a->created_by = r->principal.user_id;
    if (resource_insert(r, &rows_rate_alert, a) != 0)
        return -1;
    out->status = 201;
    out->body_201 = a;
    out->location = arena_printf(&r->arena, ALERTS_PATH "/%s", a->id);
    return 0;
}

int rates_get_rate_alert(struct req *r, const struct rates_get_rate_alert_request *in,
                         struct rates_get_rate_alert_response *out)
{
    struct rate_alert *a = arena_alloc(&r->arena, sizeof *a);
    int found = resource_load_current(r, &rows_rate_alert, in->id, NULL, a);
    if (found <= 0)
        return found;
    show(a);
    out->status = 200;
    out->body_200 = a;
    return 0;
}

/* Whether two conditions are the same (the value compared as a decimal: 1.09 is 1.0900). */
static bool same_condition(const struct rate_alert_condition *x,
                           const struct rate_alert_condition *y)
{
    struct decimal a, b;
    return x->field == y->field && x->operator == y->operator &&
           parse_rate(x->value, &a) == 0 && parse_rate(y->value, &b) == 0 &&
           decimal_cmp(a, b) == 0;
}

int rates_update_rate_alert(struct req *r, const struct rates_update_rate_alert_request *in,
                            struct rates_update_rate_alert_response *out)
{
    struct rate_alert *a = arena_alloc(&r->arena, sizeof *a);
    int found = resource_load_current(r, &rows_rate_alert, in->id,
                                      in->has_if_match ? in->if_match : NULL, a);
    if (found <= 0)
        return found;
    show(a);
    if (a->status == RATE_ALERT_STATUS_EXPIRED) {
        req_problem(r, 409, "alert_not_editable",
                    "Rate alert %s is expired (expires_at %s); an expired alert is final.",
                    a->id, a->expires_at);
        return 0;
    }
    const struct rate_alert_update *u = in->body;
    const char *expires = NULL;
    int ok = check_body(r, NULL, u->has_expires_at ? u->expires_at : NULL, &expires);
    if (ok <= 0)
        return ok;
    /* A changed condition judges a crossing afresh from the next rate: the last one was
     * measured against another threshold, or another field. */
    if (u->has_condition && !same_condition(u->condition, a->condition))
        forget_rate(a);
    merge_rate_alert_update_into_rate_alert(&r->arena, u, a);
    if (expires)
        a->expires_at = expires;
    int saved = resource_save(r, &rows_rate_alert, a);
    if (saved <= 0)
        return saved == DB_ERR_UNIQUE ? -1 : saved;
    out->status = 200;
    out->body_200 = a;
    return 0;
}

int rates_delete_rate_alert(struct req *r, const struct rates_delete_rate_alert_request *in,
                            struct rates_delete_rate_alert_response *out)
{
    struct rate_alert a;
    int found = resource_load_current(r, &rows_rate_alert, in->id,
                                      in->has_if_match ? in->if_match : NULL, &a);
    if (found <= 0)
        return found;
    struct db_stmt *st = storage_prepare(
        "DELETE FROM rate_alerts WHERE id = ? AND workspace_id = ? AND version = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, a.id);
    db_bind_text(st, 2, r->principal.workspace_id);
    db_bind_int64(st, 3, a.version);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("deleting an alert");
    if (storage_changes() != 1) { /* another writer came first (not on one writer) */
        req_problem(r, 412, "precondition_failed", "Rate alert %s changed meanwhile.", a.id);
        return 0;
    }
    out->status = 204;
    return 0;
}

int rates_pause_rate_alert(struct req *r, const struct rates_pause_rate_alert_request *in,
                           struct rates_pause_rate_alert_response *out)
{
    struct rate_alert *a = arena_alloc(&r->arena, sizeof *a);
    int found = resource_load_current(r, &rows_rate_alert, in->id, NULL, a);
    if (found <= 0)
        return found;
    show(a);
    if (a->status != RATE_ALERT_STATUS_ACTIVE) {
        invalid_transition(r, a, "paused", "an active");
        return 0;
    }
    a->status = RATE_ALERT_STATUS_PAUSED;
    int saved = save_transition(r, a, RATE_ALERT_STATUS_ACTIVE, "fx_rate_alert.paused");
    if (saved <= 0)
        return saved;
    out->status = 200;
    out->body_200 = a;
    return 0;
}

int rates_resume_rate_alert(struct req *r, const struct rates_resume_rate_alert_request *in,
                            struct rates_resume_rate_alert_response *out)
{
    struct rate_alert *a = arena_alloc(&r->arena, sizeof *a);
    int found = resource_load_current(r, &rows_rate_alert, in->id, NULL, a);
    if (found <= 0)
        return found;
    enum rate_alert_status before = a->status;
    if (lapsed(a)) {
        /* The spec: it becomes expired instead, and the request is refused; the refusal
         * keeps that write. */
        a->status = RATE_ALERT_STATUS_EXPIRED;
        int saved = save_transition(r, a, before, "fx_rate_alert.expired");
        if (saved <= 0)
            return saved;
        req_problem(r, 409, "invalid_transition",
                    "Rate alert %s expired at %s; an expired alert cannot be resumed.", a->id,
                    a->expires_at);
        r->keep_writes = true;
        return 0;
    }
    if (before != RATE_ALERT_STATUS_PAUSED && before != RATE_ALERT_STATUS_TRIGGERED) {
        invalid_transition(r, a, "resumed", "a paused or triggered");
        return 0;
    }
    a->status = RATE_ALERT_STATUS_ACTIVE;
    forget_rate(a); /* a crossing is judged afresh from the next rate */
    int saved = save_transition(r, a, before, "fx_rate_alert.resumed");
    if (saved <= 0)
        return saved;
    out->status = 200;
    out->body_200 = a;
    return 0;
}

/* ---- evaluation: every rate that becomes current ------------------------------------------ */

/* One active alert a rate is evaluated against, as the evaluation reads it (not the whole row:
 * most do not fire). */
struct candidate {
    const char *id, *workspace_id, *field, *op, *value, *prev;
    bool every_time;
};

/* The mail of a firing to the alert's creator (notify `email`): a person has an address; a
 * service account has none, and only the event announces it then. 0 / -1. */
static int mail_creator(struct req *r, const struct rate_alert *a)
{
    if (token_is_service_subject(a->created_by))
        return 0;
    char to[320] = "";
    const char *args[] = {a->created_by};
    int found = storage_query_text("SELECT email FROM users WHERE id = ?", args, 1, to, sizeof to);
    if (found < 0)
        return -1;
    if (found == 0 || !to[0])
        return 0; /* a creator no longer known: nobody to mail */
    const char *subject = arena_printf(&r->arena, "Rate alert on %s: %s %s %s", a->pair,
                                       rate_field_str(a->condition->field),
                                       rate_alert_condition_operator_str(a->condition->operator),
                                       a->condition->value);
    const char *body = arena_printf(
        &r->arena,
        "Your rate alert %s fired.\n\nPair: %s\nCondition: %s %s %s\nRate: %s (as of %s)\n"
        "Times fired: %" PRId64 "\nStatus now: %s\n",
        a->id, a->pair, rate_field_str(a->condition->field),
        rate_alert_condition_operator_str(a->condition->operator), a->condition->value,
        a->last_evaluated_rate, a->last_evaluated_at, a->trigger_count,
        rate_alert_status_str(a->status));
    return mail_enqueue(to, subject, body, NULL, 0);
}

/* Fires candidate c, of c->workspace_id, at the rate `rate` of the tick at tick_at: its
 * firing saved as a new version with its event (and mail) in r's transaction. r's workspace
 * is c's while it runs (the rows, the event and the audit trail are the alert's workspace's,
 * whoever's rate it was). 0 / -1. */
static int fire(struct req *r, const struct candidate *c, const char *rate, const char *tick_at)
{
    const char *own = r->principal.workspace_id;
    r->principal.workspace_id = c->workspace_id;
    struct rate_alert *a = arena_alloc(&r->arena, sizeof *a);
    int rc = -1;
    int found = resource_load(r, &rows_rate_alert, c->id, a);
    if (found != RESOURCE_FOUND)
        goto out; /* read a moment ago in this transaction */
    a->last_evaluated_rate = rate;
    a->has_last_evaluated_rate = true;
    a->last_evaluated_at = tick_at;
    a->has_last_evaluated_at = true;
    a->triggered_at = tick_at;
    a->has_triggered_at = true;
    if (a->trigger_count < INT32_MAX)
        a->trigger_count++;
    if (a->repeat == RATE_ALERT_REPEAT_ONCE)
        a->status = RATE_ALERT_STATUS_TRIGGERED;
    if (resource_save_state(r, &rows_rate_alert, a) != 1)
        goto out; /* 0 (another writer first) cannot happen inside the one transaction */
    struct jsonw w;
    jsonw_init(&w);
    encode_rate_alert(&w, a);
    const char *json = resource_json_text(&r->arena, &w);
    if (!json || outbox_add(r, TRIGGERED, OBJECT, a->id, a->version, json) != 0)
        goto out;
    for (size_t i = 0; i < a->notify->channels_count; i++)
        if (a->notify->channels[i] == RATE_ALERT_NOTIFY_CHANNELS_ITEM_EMAIL &&
            mail_creator(r, a) != 0)
            goto out;
    rc = 0;
out:
    r->principal.workspace_id = own;
    if (rc != 0)
        log_error("rate alerts: firing %s failed", c->id);
    return rc;
}

/* For a market rate (the workspace parameter ?W NULL): the alert's workspace has no pushed
 * rate of the pair later than the market's (as_of ?T), which stays its current one. Both
 * as_of texts are format_time_rfc3339's, whose order is time order. */
#define OWN_RATE_LATER(W, T)                                                                       \
    "AND (CAST(" W " AS TEXT) IS NOT NULL OR NOT EXISTS (SELECT 1 FROM fx_live_rates l WHERE "    \
    "l.workspace_id = rate_alerts.workspace_id AND l.pair = rate_alerts.pair AND l.as_of > " T   \
    ")) "

int rates_alerts_on_rate(struct req *r, const char *workspace_id, const struct rates_tick *t)
{
    /* workspace_id NULL: a sandbox-market rate, which every workspace sees, so the alerts of
     * every workspace on the pair are evaluated. A workspace whose own pushed rate of the pair
     * is later than the market's keeps its own as current (rates_live_mid): its alerts were
     * last evaluated at that later as_of (an alert last evaluated after this rate's as_of is
     * left alone below), and one not evaluated since it was created, changed or resumed is
     * left out by OWN_RATE_LATER. */
    int64_t tick_ms = 0;
    const char *tick_at = utc(r, t->as_of, &tick_ms);
    const char *now = now_text(r);
    const char *texts[3] = {rate_text(&r->arena, t->bid), rate_text(&r->arena, t->ask),
                            rate_text(&r->arena, t->mid)};
    static const char *const fields[3] = {"bid", "ask", "mid"};
    if (!t->pair || !tick_at || !texts[0] || !texts[1] || !texts[2]) {
        log_error("rate alerts: a rate of %s that cannot be evaluated (as_of %s)",
                  t->pair ? t->pair : "?", t->as_of ? t->as_of : "?");
        return -1;
    }
    /* Alerts of the pair past their expires_at become expired (no event), whatever their
     * status but expired: by the (pair, status) index. */
    struct db_stmt *st = storage_prepare(
        "UPDATE rate_alerts SET status = 'expired', version = version + 1, updated_at = ?1 "
        "WHERE pair = ?2 AND status IN ('active', 'paused', 'triggered') AND expires_at <= ?1 "
        "AND (CAST(?3 AS TEXT) IS NULL OR workspace_id = ?3)");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, t->pair);
    if (workspace_id)
        db_bind_text(st, 3, workspace_id);
    else
        db_bind_null(st, 3);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("expiring alerts");

    /* The active alerts of the pair, read before any is written. */
    st = storage_prepare(
        "SELECT id, workspace_id, condition_field, condition_operator, condition_value, "
        "repeat, last_evaluated_rate FROM rate_alerts WHERE pair = ?1 AND status = 'active' "
        "AND (CAST(?2 AS TEXT) IS NULL OR workspace_id = ?2) " OWN_RATE_LATER("?2", "?3")
        "AND (last_evaluated_at IS NULL OR last_evaluated_at <= ?3) ORDER BY id");
    if (!st)
        return -1;
    db_bind_text(st, 1, t->pair);
    if (workspace_id)
        db_bind_text(st, 2, workspace_id);
    else
        db_bind_null(st, 2);
    db_bind_text(st, 3, tick_at);
    size_t n = 0, cap = 16;
    struct candidate *fired = arena_alloc(&r->arena, cap * sizeof *fired);
    const char **fired_rate = arena_alloc(&r->arena, cap * sizeof *fired_rate);
    bool watched[3] = {false, false, false};
    while ((rc = db_step(st)) == DB_ROW) {
        struct candidate c = {
            .id = db_column_text(st, 0),
            .workspace_id = db_column_text(st, 1),
            .field = db_column_text(st, 2),
            .op = db_column_text(st, 3),
            .value = db_column_text(st, 4),
            .every_time = strcmp(db_column_text(st, 5), "every_time") == 0,
            .prev = db_column_is_null(st, 6) ? NULL : db_column_text(st, 6),
        };
        int f = c.field[0] == 'b' ? 0 : c.field[0] == 'a' ? 1 : 2;
        watched[f] = true;
        int fires = rates_alert_fires(c.field, c.op, c.value, c.every_time, c.prev, t);
        if (fires < 0)
            log_error("rate alerts: %s has a condition this server cannot read", c.id);
        if (fires != 1)
            continue;
        if (n == cap) {
            struct candidate *more = arena_alloc(&r->arena, 2 * cap * sizeof *more);
            const char **more_rate = arena_alloc(&r->arena, 2 * cap * sizeof *more_rate);
            memcpy(more, fired, n * sizeof *more);
            memcpy(more_rate, fired_rate, n * sizeof *more_rate);
            fired = more;
            fired_rate = more_rate;
            cap *= 2;
        }
        c.id = arena_strdup(&r->arena, c.id);
        c.workspace_id = arena_strdup(&r->arena, c.workspace_id);
        c.field = c.op = c.value = c.prev = NULL; /* the row's, gone with the next step */
        fired[n] = c;
        fired_rate[n++] = texts[f];
    }
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("reading the alerts of a pair");

    for (size_t i = 0; i < n; i++)
        if (fire(r, &fired[i], fired_rate[i], tick_at) != 0)
            return -1;

    /* Every other active alert of the pair records the rate it was evaluated against (one
     * statement per field watched, no new version): a crossing and an every_time re-arm are
     * judged from it. The fired ones read the same values already. */
    for (int f = 0; f < 3; f++) {
        if (!watched[f])
            continue;
        st = storage_prepare(
            "UPDATE rate_alerts SET last_evaluated_rate = ?1, last_evaluated_at = ?2 "
            "WHERE pair = ?3 AND status = 'active' AND condition_field = ?4 "
            "AND (CAST(?5 AS TEXT) IS NULL OR workspace_id = ?5) " OWN_RATE_LATER("?5", "?2")
            "AND (last_evaluated_at IS NULL OR last_evaluated_at <= ?2)");
        if (!st)
            return -1;
        db_bind_text(st, 1, texts[f]);
        db_bind_text(st, 2, tick_at);
        db_bind_text(st, 3, t->pair);
        db_bind_text(st, 4, fields[f]);
        if (workspace_id)
            db_bind_text(st, 5, workspace_id);
        else
            db_bind_null(st, 5);
        rc = db_step(st);
        db_reset(st);
        if (rc != DB_DONE)
            return db_failed("recording the evaluated rate");
    }
    return 0;
}
