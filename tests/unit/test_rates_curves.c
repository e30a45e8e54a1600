/* Unit tests for rates_forward (handlers/rates_curves.c), which no operation of the rates API
 * answers (the conversions API prices forward quotes with it): the pair's active curve only,
 * nothing outside the tenors, a tenor's own points on its value date, and between two tenors
 * the linear interpolation in calendar days, exact and rounded once, half-even to 10 places.
 *
 * The expected figures were computed with Python's fractions (round() of a Fraction is
 * half-even), e.g. for the EURJPY case:
 *     from fractions import Fraction as F
 *     round(F('-0.12') + (F('-0.3655') - F('-0.12')) * 17 / 59, 10)  # -1907372881/10^10
 * The clock is pinned (test builds, TREASURY_TEST_CLOCK) to Monday 2025-03-10, 12:00 UTC: ON
 * 03-10, TN 03-11, SPOT 03-12, 1W 03-19, 1M 04-14 (04-12 is a Saturday), 3M 06-12. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "generated/patterns.h"
#include "generated/rates_api.h"
#include "generated/rows_rates.h"
#include "handlers/rates.h"
#include "runtime/arena.h"
#include "runtime/clock.h"
#include "runtime/pattern.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

static char dir[] = "/tmp/treasury-curves-XXXXXX", path[80];
static struct req req;

static struct req *fresh_req(void)
{
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
    arena_init(&req.arena);
    req.principal.workspace_id = "wsp_1";
    req.principal.user_id = "usr_00000000000000000000000000";
    return &req;
}

/* 2025-03-10T12:00:00Z */
#define PINNED INT64_C(1741608000)

static bool pin_clock(void)
{
#ifdef TREASURY_TEST_CLOCK
    if (clock_init(dir) != 0)
        return false;
    char f[120];
    snprintf(f, sizeof f, "%s/test-clock-offset", dir);
    int fd = open(f, O_WRONLY);
    int64_t offset = PINNED - (int64_t)time(NULL);
    bool ok = fd >= 0 && pwrite(fd, &offset, sizeof offset, 0) == (ssize_t)sizeof offset;
    if (fd >= 0)
        close(fd);
    return ok && clock_now_s() / 86400 == PINNED / 86400;
#else
    return false;
#endif
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
    char f[120];
    const char *suffix[] = {"", "-wal", "-shm"};
    storage_rollback();
    storage_close();
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    snprintf(f, sizeof f, "%s/test-clock-offset", dir);
    unlink(f);
    rmdir(dir);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
}

/* A curve of pair in r's workspace with n points (tenor, forward points: alternating), in
 * status st; its id. */
static const char *curve(struct req *r, const char *pair, enum rate_curve_status st, size_t n,
                         const enum rate_curve_tenor *tenors, const char *const *points)
{
    struct rate_curve *c = arena_alloc(&r->arena, sizeof *c);
    resource_new(r, &rows_rate_curve, c);
    c->name = "t";
    c->pair = pair;
    c->spot_source = RATE_CURVE_SPOT_SOURCE_LIVE;
    c->status = st;
    c->created_by = r->principal.user_id;
    c->points = arena_alloc(&r->arena, n * sizeof *c->points);
    c->points_count = n;
    for (size_t i = 0; i < n; i++) {
        c->points[i].tenor = tenors[i];
        c->points[i].forward_points = points[i];
        c->points[i].value_date = "2000-01-01"; /* as stored long ago: never read back */
    }
    CHECK(resource_insert(r, &rows_rate_curve, c) == 0);
    return c->id;
}

/* rates_forward's answer as text: the points (10 places) or the reason. */
static const char *forward(const char *base, const char *quote, const char *date)
{
    struct req *r = &req;
    struct rates_forward f;
    memset(&f, 0, sizeof f);
    const char *reason = NULL;
    int rc = rates_forward(r, base, quote, date, &f, &reason);
    if (rc < 0)
        return "failed";
    if (rc == 0)
        return reason ? reason : "(no reason)";
    char buf[DECIMAL_TEXT_MAX];
    return arena_strdup(&r->arena, decimal_format_fixed(f.points, RATES_SCALE, buf, sizeof buf));
}

static void test_forward_points(void)
{
    setup();
    struct req *r = fresh_req();
    if (!pin_clock()) {
        printf("  (skipped: a build without the test clock)\n");
        teardown();
        return;
    }
    const enum rate_curve_tenor on_spot[] = {RATE_CURVE_TENOR_ON, RATE_CURVE_TENOR_SPOT};
    const enum rate_curve_tenor spot_1m_3m[] = {RATE_CURVE_TENOR_SPOT, RATE_CURVE_TENOR_1_M,
                                                RATE_CURVE_TENOR_3_M};
    const enum rate_curve_tenor spot_1w[] = {RATE_CURVE_TENOR_SPOT, RATE_CURVE_TENOR_1_W};

    /* ties at the 11th place, half-even, rounded once: 3e-10 / 2 = 1.5e-10 -> 2e-10 (adding
     * 3e-10 to the rounded -1.5e-10 would give 1e-10); 5e-10 / 2 = 2.5e-10 -> 2e-10 */
    curve(r, "EURUSD", RATE_CURVE_STATUS_ACTIVE, 2, on_spot,
          (const char *const[]){"0.0000000003", "0"});
    CHECK_STR(forward("EUR", "USD", "2025-03-11"), "0.0000000002");
    curve(r, "GBPUSD", RATE_CURVE_STATUS_ACTIVE, 2, on_spot,
          (const char *const[]){"0.0000000005", "0"});
    CHECK_STR(forward("GBP", "USD", "2025-03-11"), "0.0000000002");
    curve(r, "AUDUSD", RATE_CURVE_STATUS_ACTIVE, 2, on_spot,
          (const char *const[]){"-0.0000000003", "0"});
    CHECK_STR(forward("AUD", "USD", "2025-03-11"), "-0.0000000002");

    /* between 1M (04-14) and 3M (06-12): 17 of 59 days */
    const char *jpy = curve(r, "EURJPY", RATE_CURVE_STATUS_ACTIVE, 3, spot_1m_3m,
                            (const char *const[]){"0", "-0.12", "-0.3655"});
    CHECK_STR(forward("EUR", "JPY", "2025-05-01"), "-0.1907372881");
    /* between SPOT (03-12) and 1M (04-14): 19 of 33 days, 0.00125 * 19 / 33 = 0.00071969696.. */
    curve(r, "USDCHF", RATE_CURVE_STATUS_ACTIVE, 3, spot_1m_3m,
          (const char *const[]){"0", "0.00125", "0.0036"});
    CHECK_STR(forward("USD", "CHF", "2025-03-31"), "0.0007196970");
    /* on a tenor's own value date: its points, as written */
    CHECK_STR(forward("USD", "CHF", "2025-04-14"), "0.0012500000");
    CHECK_STR(forward("USD", "CHF", "2025-03-12"), "0.0000000000");
    CHECK_STR(forward("USD", "CHF", "2025-06-12"), "0.0036000000");
    /* the curve that priced it */
    struct rates_forward f;
    const char *reason = NULL;
    CHECK(rates_forward(r, "EUR", "JPY", "2025-04-14", &f, &reason) == 1);
    CHECK_STR(f.curve_id, jpy);
    /* a weekend day between tenors is priced like any other calendar day: 1 of 7 */
    curve(r, "NZDUSD", RATE_CURVE_STATUS_ACTIVE, 2, spot_1w,
          (const char *const[]){"0", "0.0000000007"});
    CHECK_STR(forward("NZD", "USD", "2025-03-15"), "0.0000000003");

    /* nothing is extrapolated */
    CHECK_STR(forward("USD", "CHF", "2025-03-11"), "outside_curve");
    CHECK_STR(forward("USD", "CHF", "2025-06-13"), "outside_curve");
    CHECK_STR(forward("EUR", "USD", "2025-03-13"), "outside_curve");
    /* only the pair's active curve, of this workspace, prices */
    CHECK_STR(forward("CHF", "USD", "2025-03-31"), "no_forward_curve"); /* the inverse pair */
    curve(r, "EURGBP", RATE_CURVE_STATUS_DRAFT, 3, spot_1m_3m,
          (const char *const[]){"0", "0.001", "0.002"});
    curve(r, "EURCAD", RATE_CURVE_STATUS_ARCHIVED, 3, spot_1m_3m,
          (const char *const[]){"0", "0.001", "0.002"});
    CHECK_STR(forward("EUR", "GBP", "2025-03-31"), "no_forward_curve");
    CHECK_STR(forward("EUR", "CAD", "2025-03-31"), "no_forward_curve");
    r->principal.workspace_id = "wsp_2";
    CHECK_STR(forward("USD", "CHF", "2025-03-31"), "no_forward_curve");
    r->principal.workspace_id = "wsp_1";
    /* a malformed date is the caller's failure */
    CHECK_STR(forward("USD", "CHF", "2025-02-30"), "failed");
    teardown();
}

int main(void)
{
    char err[256];
    /* reading a curve validates its stored points against the schema: the patterns */
    if (pattern_init(patterns, patterns_count, err, sizeof err) != 0) {
        fprintf(stderr, "patterns: %s\n", err);
        return 1;
    }
    static const struct unit_test tests[] = {
        {"forward_points", test_forward_points},
    };
    return unit_run("rates_curves", tests, sizeof tests / sizeof tests[0]);
}
