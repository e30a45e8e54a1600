/* Unit tests for the rate alerts' evaluation (handlers/rates_alerts.c): the condition, pure and
 * exact, every operator on every field, with and without a previous rate (rates_alert_holds,
 * rates_alert_fires); and rates_alerts_on_rate against the real schema on SQLite, which no
 * HTTP operation reaches until pushRates is built: firing once and every time, one event per
 * firing in the alert's workspace, the last evaluated rate moving without a new version,
 * expiry, paused alerts, older rates, and a market rate (no workspace) reaching every
 * workspace while a pushed one reaches its own. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "handlers/rates.h"
#include "runtime/arena.h"
#include "runtime/format.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

static struct decimal dec(const char *s)
{
    struct decimal d = {0, 0};
    CHECK(decimal_parse(s, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &d) == 0);
    return d;
}

/* A tick of EURUSD with these bid, mid, ask. */
static struct rates_tick tick(const char *bid, const char *mid, const char *ask, const char *at)
{
    struct rates_tick t = {.pair = "EURUSD", .bid = dec(bid), .ask = dec(ask), .mid = dec(mid),
                           .as_of = at};
    return t;
}

/* ---- the condition ----------------------------------------------------------------------- */

static void test_plain_comparisons_on_each_field_exactly(void)
{
    /* the threshold written with other trailing zeros is the same number */
    struct rates_tick t = tick("1.0899999999", "1.09", "1.0900000001", "x");
    static const struct {
        const char *field, *op, *value;
        int want;
    } cases[] = {
        {"mid", "gt", "1.09", 0},           {"mid", "gte", "1.0900000000", 1},
        {"mid", "lt", "1.09", 0},           {"mid", "lte", "1.090", 1},
        {"mid", "gt", "1.0899999999", 1},   {"mid", "lt", "1.0900000001", 1},
        {"bid", "gt", "1.0899999998", 1},   {"bid", "gt", "1.0899999999", 0},
        {"bid", "gte", "1.0899999999", 1},  {"bid", "lt", "1.09", 1},
        {"bid", "lte", "1.0899999998", 0},  {"ask", "gt", "1.09", 1},
        {"ask", "gte", "1.0900000002", 0},  {"ask", "lt", "1.0900000001", 0},
        {"ask", "lte", "1.0900000001", 1},  {"ask", "lte", "1.09", 0},
        {"mid", "gt", "0.0000000001", 1},   {"mid", "lt", "99999999.9999999999", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = rates_alert_holds(cases[i].field, cases[i].op, cases[i].value, NULL, &t);
        if (got != cases[i].want)
            fprintf(stderr, "  case %zu: %s %s %s: %d\n", i, cases[i].field, cases[i].op,
                    cases[i].value, got);
        CHECK(got == cases[i].want);
        /* a previous rate changes nothing for a plain comparison */
        CHECK(rates_alert_holds(cases[i].field, cases[i].op, cases[i].value, "5", &t) == got);
    }
}

static void test_crossings_need_the_previous_rate_on_the_other_side(void)
{
    struct rates_tick at = tick("1.0898", "1.09", "1.0902", "x");
    struct rates_tick above = tick("1.0908", "1.091", "1.0912", "x");
    struct rates_tick below = tick("1.0888", "1.089", "1.0892", "x");
    /* cross_above: prev < value <= now */
    CHECK(rates_alert_holds("mid", "cross_above", "1.09", NULL, &above) == 0); /* side only */
    CHECK(rates_alert_holds("mid", "cross_above", "1.09", "1.0899999999", &at) == 1);
    CHECK(rates_alert_holds("mid", "cross_above", "1.09", "1.08", &above) == 1);
    CHECK(rates_alert_holds("mid", "cross_above", "1.09", "1.09", &above) == 0);
    CHECK(rates_alert_holds("mid", "cross_above", "1.09", "1.0900000001", &above) == 0);
    CHECK(rates_alert_holds("mid", "cross_above", "1.09", "1.08", &below) == 0);
    /* cross_below: prev > value >= now */
    CHECK(rates_alert_holds("mid", "cross_below", "1.09", NULL, &below) == 0);
    CHECK(rates_alert_holds("mid", "cross_below", "1.09", "1.0900000001", &at) == 1);
    CHECK(rates_alert_holds("mid", "cross_below", "1.09", "1.1", &below) == 1);
    CHECK(rates_alert_holds("mid", "cross_below", "1.09", "1.09", &below) == 0);
    CHECK(rates_alert_holds("mid", "cross_below", "1.09", "1.1", &above) == 0);
    /* on the field named: bid crosses 1.09 when mid and ask are above already */
    CHECK(rates_alert_holds("bid", "cross_above", "1.09", "1.0899", &at) == 0);
    CHECK(rates_alert_holds("bid", "cross_above", "1.09", "1.0899", &above) == 1);
    CHECK(rates_alert_holds("ask", "cross_below", "1.09", "1.0903", &below) == 1);
    CHECK(rates_alert_holds("ask", "cross_below", "1.09", "1.0903", &at) == 0);
}

static void test_what_is_not_a_condition_is_minus_one(void)
{
    struct rates_tick t = tick("1", "1", "1", "x");
    CHECK(rates_alert_holds("last", "gt", "1", NULL, &t) == -1);
    CHECK(rates_alert_holds(NULL, "gt", "1", NULL, &t) == -1);
    CHECK(rates_alert_holds("mid", "eq", "1", NULL, &t) == -1);
    CHECK(rates_alert_holds("mid", NULL, "1", NULL, &t) == -1);
    CHECK(rates_alert_holds("mid", "gt", "1e3", NULL, &t) == -1);
    CHECK(rates_alert_holds("mid", "gt", "-1", NULL, &t) == -1);
    CHECK(rates_alert_holds("mid", "gt", "1.12345678901", NULL, &t) == -1);
    CHECK(rates_alert_holds("mid", "cross_above", "1", "x", &t) == -1);
    CHECK(rates_alert_fires("mid", "gt", "1", true, "bad", &t) == -1);
}

static void test_every_time_fires_when_the_condition_becomes_true_again(void)
{
    struct rates_tick hi = tick("1.1", "1.1", "1.1", "x");
    struct rates_tick lo = tick("1.0", "1.0", "1.0", "x");
    /* once: whenever it holds (a once alert is active only until it fires) */
    CHECK(rates_alert_fires("mid", "gt", "1.05", false, "1.2", &hi) == 1);
    CHECK(rates_alert_fires("mid", "gt", "1.05", false, NULL, &hi) == 1);
    CHECK(rates_alert_fires("mid", "gt", "1.05", false, NULL, &lo) == 0);
    /* every_time: held at prev too - no new firing; prev not holding or none - fires */
    CHECK(rates_alert_fires("mid", "gt", "1.05", true, "1.2", &hi) == 0);
    CHECK(rates_alert_fires("mid", "gt", "1.05", true, "1.05", &hi) == 1);
    CHECK(rates_alert_fires("mid", "gte", "1.05", true, "1.05", &hi) == 0);
    CHECK(rates_alert_fires("mid", "gt", "1.05", true, NULL, &hi) == 1);
    CHECK(rates_alert_fires("mid", "lt", "1.05", true, "1.0", &lo) == 0);
    CHECK(rates_alert_fires("mid", "lte", "1.05", true, "1.06", &lo) == 1);
    CHECK(rates_alert_fires("mid", "lt", "1.05", true, "1.0", &hi) == 0);
    /* a crossing is an edge by itself */
    CHECK(rates_alert_fires("mid", "cross_above", "1.05", true, "1.0", &hi) == 1);
    CHECK(rates_alert_fires("mid", "cross_above", "1.05", true, "1.06", &hi) == 0);
    CHECK(rates_alert_fires("mid", "cross_below", "1.05", true, "1.06", &lo) == 1);
    CHECK(rates_alert_fires("mid", "cross_below", "1.05", false, "1.06", &lo) == 1);
    CHECK(rates_alert_fires("mid", "cross_below", "1.05", true, NULL, &lo) == 0);
}

/* ---- rates_alerts_on_rate against the schema ------------------------------------------- */

static char dir[] = "/tmp/treasury-alerts-XXXXXX", path[80];
static struct req req;

static struct req *fresh_req(const char *workspace)
{
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
    arena_init(&req.arena);
    verr_init(&req.verr, &req.arena);
    req.principal.workspace_id = workspace;
    req.principal.user_id = "system";
    req.request_id = "req_00000000000000000000000000";
    return &req;
}

static void setup(void)
{
    char err[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.db", dir);
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(storage_begin(true) == 0);
    CHECK(storage_exec_texts("INSERT INTO workspaces (id, name, created_at, updated_at) VALUES "
                             "('wsp_1', 'one', 't', 't'), ('wsp_2', 'two', 't', 't')",
                             NULL, 0) == 0);
}

static void teardown(void)
{
    char f[100];
    const char *suffix[] = {"", "-wal", "-shm"};
    storage_rollback();
    storage_close();
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
}

/* An alert row as create leaves it (id alr_<n padded>), expiring at expires. */
static void alert(const char *id, const char *ws, const char *field, const char *op,
                  const char *value, const char *repeat, const char *status, const char *expires)
{
    const char *v[] = {id, ws, field, op, value, repeat, status, expires};
    CHECK(storage_exec_texts(
              "INSERT INTO rate_alerts (id, workspace_id, pair, condition_field, "
              "condition_operator, condition_value, repeat, notify, status, expires_at, "
              "trigger_count, created_by, metadata, version, created_at, updated_at) VALUES "
              "(?1, ?2, 'EURUSD', ?3, ?4, ?5, ?6, '{\"channels\":[\"webhook\"]}', ?7, ?8, 0, "
              "'usr_00000000000000000000000000', '{}', 1, '2026-01-01T00:00:00.000Z', "
              "'2026-01-01T00:00:00.000Z')",
              v, 8) == 0);
}

/* One column of alert id as text ("" for NULL). */
static const char *col(const char *id, const char *column)
{
    static char out[200];
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT %s FROM rate_alerts WHERE id = ?", column);
    const char *v[] = {id};
    out[0] = '\0';
    CHECK(storage_query_text(sql, v, 1, out, sizeof out) == 1);
    return out;
}

/* How many events of type about id, in workspace ws. */
static int events(const char *id, const char *ws)
{
    char out[20] = "";
    const char *v[] = {id, ws};
    CHECK(storage_query_text("SELECT count(*) FROM events WHERE resource_id = ? AND "
                             "workspace_id = ? AND type = 'fx_rate_alert.triggered'",
                             v, 2, out, sizeof out) == 1);
    return atoi(out);
}

#define A_ONCE "alr_0000000000000000000000000a"
#define A_EVERY "alr_0000000000000000000000000b"
#define A_CROSS "alr_0000000000000000000000000c"
#define A_PAUSED "alr_0000000000000000000000000d"
#define A_OLD "alr_0000000000000000000000000e"
#define A_OTHER "alr_0000000000000000000000000f"
#define FAR "2999-01-01T00:00:00.000Z"

static int on_rate(const char *ws, const char *bid, const char *mid, const char *ask,
                   const char *at)
{
    struct rates_tick t = tick(bid, mid, ask, at);
    return rates_alerts_on_rate(fresh_req(ws), ws, &t);
}

static void test_evaluation_fires_records_and_queues_one_event_per_firing(void)
{
    setup();
    alert(A_ONCE, "wsp_1", "mid", "gte", "1.1", "once", "active", FAR);
    alert(A_EVERY, "wsp_1", "bid", "gt", "1.1", "every_time", "active", FAR);
    alert(A_CROSS, "wsp_1", "ask", "cross_above", "1.1", "every_time", "active", FAR);
    alert(A_PAUSED, "wsp_1", "mid", "gt", "0.5", "once", "paused", FAR);
    alert(A_OLD, "wsp_1", "mid", "gt", "0.5", "once", "active", "2020-01-01T00:00:00.000Z");
    alert(A_OTHER, "wsp_2", "mid", "gt", "0.5", "once", "active", FAR);

    CHECK(on_rate("wsp_1", "1.0998", "1.1", "1.1002", "2026-03-01T10:00:00+01:00") == 0);
    CHECK_STR(col(A_ONCE, "status"), "triggered");
    CHECK_STR(col(A_ONCE, "trigger_count"), "1");
    CHECK_STR(col(A_ONCE, "version"), "2");
    CHECK_STR(col(A_ONCE, "last_evaluated_rate"), "1.1000000000");
    CHECK_STR(col(A_ONCE, "last_evaluated_at"), "2026-03-01T09:00:00.000Z"); /* UTC */
    CHECK_STR(col(A_ONCE, "triggered_at"), "2026-03-01T09:00:00.000Z");
    CHECK(events(A_ONCE, "wsp_1") == 1);
    /* not fired: the rate recorded, no new version */
    CHECK_STR(col(A_EVERY, "trigger_count"), "0");
    CHECK_STR(col(A_EVERY, "version"), "1");
    CHECK_STR(col(A_EVERY, "last_evaluated_rate"), "1.0998000000");
    CHECK_STR(col(A_CROSS, "last_evaluated_rate"), "1.1002000000"); /* the side only */
    CHECK_STR(col(A_CROSS, "trigger_count"), "0");
    CHECK_STR(col(A_PAUSED, "last_evaluated_rate"), "");
    CHECK_STR(col(A_OLD, "status"), "expired");
    CHECK_STR(col(A_OLD, "version"), "2");
    CHECK(events(A_OLD, "wsp_1") == 0);
    CHECK_STR(col(A_OTHER, "last_evaluated_rate"), ""); /* a pushed rate is its workspace's */
    CHECK_STR(col(A_OTHER, "status"), "active");

    CHECK(on_rate("wsp_1", "1.1001", "1.1002", "1.1003", "2026-03-01T09:00:01.000Z") == 0);
    CHECK_STR(col(A_EVERY, "trigger_count"), "1");
    CHECK_STR(col(A_EVERY, "status"), "active");
    CHECK_STR(col(A_EVERY, "version"), "2");
    CHECK_STR(col(A_CROSS, "trigger_count"), "0"); /* above already */
    CHECK_STR(col(A_ONCE, "trigger_count"), "1");  /* triggered: not evaluated */
    CHECK_STR(col(A_ONCE, "last_evaluated_rate"), "1.1000000000");
    CHECK(on_rate("wsp_1", "1.1002", "1.1003", "1.1004", "2026-03-01T09:00:02.000Z") == 0);
    CHECK_STR(col(A_EVERY, "trigger_count"), "1"); /* still above: once per becoming true */
    CHECK(on_rate("wsp_1", "1.099", "1.0992", "1.0994", "2026-03-01T09:00:03.000Z") == 0);
    CHECK(on_rate("wsp_1", "1.1005", "1.1007", "1.1009", "2026-03-01T09:00:04.000Z") == 0);
    CHECK_STR(col(A_EVERY, "trigger_count"), "2");
    CHECK_STR(col(A_CROSS, "trigger_count"), "1");
    CHECK(events(A_EVERY, "wsp_1") == 2);
    CHECK(events(A_CROSS, "wsp_1") == 1);
    /* an older rate than the one an alert saw last is not evaluated against it */
    CHECK(on_rate("wsp_1", "1.0", "1.0", "1.0", "2026-03-01T08:00:00.000Z") == 0);
    CHECK_STR(col(A_EVERY, "last_evaluated_rate"), "1.1005000000");
    /* the event's object is the alert right after the firing */
    char data[2000] = "";
    const char *v[] = {A_EVERY};
    CHECK(storage_query_text("SELECT data FROM events WHERE resource_id = ? ORDER BY seq DESC "
                             "LIMIT 1",
                             v, 1, data, sizeof data) == 1);
    CHECK(strstr(data, "\"trigger_count\":2") != NULL);
    CHECK(strstr(data, "\"last_evaluated_rate\":\"1.1005000000\"") != NULL);
    CHECK(strstr(data, "\"object\":\"fx_rate_alert\"") != NULL);
    teardown();
}

static void test_an_email_alert_mails_its_creator_and_a_service_account_none(void)
{
    setup();
    CHECK(storage_exec_texts("INSERT INTO users (id, email, email_norm, password_hash, "
                             "created_at, updated_at) VALUES ('usr_00000000000000000000000000', "
                             "'Ann@example.com', 'ann@example.com', 'x', 't', 't')",
                             NULL, 0) == 0);
    alert(A_ONCE, "wsp_1", "mid", "gt", "1", "once", "active", FAR);
    alert(A_EVERY, "wsp_1", "mid", "gt", "1", "once", "active", FAR);
    alert(A_CROSS, "wsp_1", "mid", "gt", "5", "once", "active", FAR); /* does not fire */
    CHECK(storage_exec_texts("UPDATE rate_alerts SET notify = "
                             "'{\"channels\":[\"email\",\"webhook\"]}'",
                             NULL, 0) == 0);
    CHECK(storage_exec_texts("UPDATE rate_alerts SET created_by = "
                             "'sa_00000000000000000000000000' WHERE id = '" A_EVERY "'",
                             NULL, 0) == 0);
    CHECK(on_rate("wsp_1", "1.1", "1.2", "1.3", "2026-03-01T09:00:00.000Z") == 0);
    CHECK_STR(col(A_EVERY, "status"), "triggered");
    char out[600] = "";
    CHECK(storage_query_text("SELECT count(*) FROM mail_outbox", NULL, 0, out, sizeof out) == 1);
    CHECK_STR(out, "1");
    CHECK(storage_query_text("SELECT recipient || ' ' || subject FROM mail_outbox", NULL, 0, out,
                             sizeof out) == 1);
    CHECK_STR(out, "Ann@example.com Rate alert on EURUSD: mid gt 1");
    CHECK(storage_query_text("SELECT body FROM mail_outbox", NULL, 0, out, sizeof out) == 1);
    CHECK(strstr(out, A_ONCE) != NULL && strstr(out, "Rate: 1.2000000000") != NULL);
    teardown();
}

static void test_a_market_rate_reaches_every_workspace(void)
{
    setup();
    alert(A_ONCE, "wsp_1", "mid", "gt", "1", "once", "active", FAR);
    alert(A_OTHER, "wsp_2", "mid", "gt", "1", "once", "active", FAR);
    alert(A_EVERY, "wsp_2", "mid", "gt", "1", "every_time", "active", FAR);
    /* wsp_2's alert saw a later rate (its own pushed one): the market's older one leaves it */
    CHECK(storage_exec_texts("UPDATE rate_alerts SET last_evaluated_rate = '0.9', "
                             "last_evaluated_at = '2026-03-01T10:00:00.000Z' WHERE id = '"
                             A_EVERY "'",
                             NULL, 0) == 0);
    CHECK(on_rate(NULL, "1.1", "1.2", "1.3", "2026-03-01T09:00:00.000Z") == 0);
    CHECK_STR(col(A_ONCE, "status"), "triggered");
    CHECK_STR(col(A_OTHER, "status"), "triggered");
    CHECK(events(A_ONCE, "wsp_1") == 1);
    CHECK(events(A_OTHER, "wsp_2") == 1); /* each event in its alert's workspace */
    CHECK_STR(col(A_EVERY, "trigger_count"), "0");
    CHECK_STR(col(A_EVERY, "last_evaluated_rate"), "0.9");
    CHECK(req.principal.workspace_id == NULL); /* the caller's workspace given back */
    teardown();
}

static void test_a_market_rate_leaves_out_a_workspace_whose_own_rate_is_later(void)
{
    setup();
    alert(A_ONCE, "wsp_1", "mid", "gt", "1", "once", "active", FAR);
    alert(A_OTHER, "wsp_2", "mid", "gt", "1", "once", "active", FAR);
    /* wsp_2 pushed a rate later than the market's coming one: its alert, never evaluated
     * yet, is judged by that rate (its current one), never by the market's older one */
    CHECK(storage_exec_texts("INSERT INTO fx_live_rates (workspace_id, pair, bid, ask, mid, "
                             "source, as_of, value_date) VALUES ('wsp_2', 'EURUSD', '0.5', "
                             "'0.5', '0.5', 'manual', '2026-03-01T10:00:00.000Z', "
                             "'2026-03-03')",
                             NULL, 0) == 0);
    CHECK(on_rate(NULL, "1.1", "1.2", "1.3", "2026-03-01T09:00:00.000Z") == 0);
    CHECK_STR(col(A_ONCE, "status"), "triggered");
    CHECK_STR(col(A_OTHER, "status"), "active");
    CHECK_STR(col(A_OTHER, "last_evaluated_rate"), "");
    CHECK(events(A_OTHER, "wsp_2") == 0);
    /* a market rate later than its own reaches it */
    CHECK(on_rate(NULL, "1.1", "1.2", "1.3", "2026-03-01T11:00:00.000Z") == 0);
    CHECK_STR(col(A_OTHER, "status"), "triggered");
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_plain_comparisons_on_each_field_exactly),
        UNIT_TEST(test_crossings_need_the_previous_rate_on_the_other_side),
        UNIT_TEST(test_what_is_not_a_condition_is_minus_one),
        UNIT_TEST(test_every_time_fires_when_the_condition_becomes_true_again),
        UNIT_TEST(test_evaluation_fires_records_and_queues_one_event_per_firing),
        UNIT_TEST(test_an_email_alert_mails_its_creator_and_a_service_account_none),
        UNIT_TEST(test_a_market_rate_reaches_every_workspace),
        UNIT_TEST(test_a_market_rate_leaves_out_a_workspace_whose_own_rate_is_later),
    };
    return unit_run("rates_alerts", tests, sizeof tests / sizeof tests[0]);
}
