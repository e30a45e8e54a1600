/* Unit tests for the balance moves of handlers/ledger_accounts.c (ledger_account_move,
 * ledger_account_drafts, ledger_account_insert), which no HTTP operation reaches until journal
 * entries post: the guarded UPDATE against the real schema, on SQLite. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "handlers/ledger.h"
#include "runtime/arena.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

#define MAX INT64_C(9007199254740991)

static char dir[] = "/tmp/treasury-ledger-XXXXXX", path[80];
static struct req req;

static struct req *fresh_req(void)
{
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
    arena_init(&req.arena);
    req.principal.workspace_id = "wsp_1";
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

/* A new active account of r's workspace; its id. */
static const char *account(struct req *r, const char *code, enum ledger_direction nb,
                           bool debits_le_credits, bool credits_le_debits)
{
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    resource_new(r, &rows_ledger_account, row);
    struct ledger_account *a = &row->obj;
    a->code = code;
    a->name = code;
    a->classification =
        nb == LEDGER_DIRECTION_DEBIT ? LEDGER_CLASSIFICATION_ASSET : LEDGER_CLASSIFICATION_LIABILITY;
    a->normal_balance = nb;
    a->currency = "EUR";
    a->currency_exponent = 2;
    a->status = LEDGER_ACCOUNT_STATUS_ACTIVE;
    struct ledger_account_constraints *k = arena_alloc(&r->arena, sizeof *k);
    k->has_debits_must_not_exceed_credits = k->has_credits_must_not_exceed_debits = true;
    k->debits_must_not_exceed_credits = debits_le_credits;
    k->credits_must_not_exceed_debits = credits_le_debits;
    a->constraints = k;
    CHECK(ledger_account_insert(r, row) == 1);
    return a->id;
}

static struct ledger_account_row load(struct req *r, const char *id)
{
    struct ledger_account_row row;
    memset(&row, 0, sizeof row);
    CHECK(resource_load(r, &rows_ledger_account, id, &row) == RESOURCE_FOUND);
    return row;
}

static struct ledger_move mv(const char *id, int64_t d, int64_t c)
{
    return (struct ledger_move){.account_id = id, .currency = "EUR", .debits = d, .credits = c};
}

static void test_a_move_adds_and_counts_in_lock_version(void)
{
    setup();
    struct req *r = fresh_req();
    const char *id = account(r, "1000", LEDGER_DIRECTION_DEBIT, false, false);
    struct ledger_move m = mv(id, 100, 30);
    CHECK(ledger_account_move(r, &m) == 1);
    struct ledger_account_row row = load(r, id);
    CHECK(row.posted_debits == 100 && row.posted_credits == 30 && row.obj.lock_version == 1);
    ledger_account_balances(r, &row);
    CHECK(row.obj.balances->posted->amount == 70);
    /* lock_version guard */
    m = mv(id, 1, 0);
    m.has_lock_version = true;
    m.lock_version = 0;
    CHECK(ledger_account_move(r, &m) == 0);
    m.lock_version = 1;
    CHECK(ledger_account_move(r, &m) == 1);
    CHECK(load(r, id).obj.lock_version == 2);
    /* another currency, another workspace, an archived account: refused */
    m = mv(id, 1, 0);
    m.currency = "USD";
    CHECK(ledger_account_move(r, &m) == 0);
    req.principal.workspace_id = "wsp_2";
    m = mv(id, 1, 0);
    CHECK(ledger_account_move(r, &m) == 0);
    req.principal.workspace_id = "wsp_1";
    CHECK(storage_exec_texts("UPDATE ledger_accounts SET status = 'archived'", NULL, 0) == 0);
    CHECK(ledger_account_move(r, &m) == 0);
    CHECK(load(r, id).posted_debits == 101);
    teardown();
}

static void test_guards_are_on_the_signed_balances_after_the_move(void)
{
    setup();
    struct req *r = fresh_req();
    const char *deb = account(r, "1000", LEDGER_DIRECTION_DEBIT, false, false);
    const char *cred = account(r, "2000", LEDGER_DIRECTION_CREDIT, false, false);
    /* debit-normal: posted after = 50 - 20 = 30 */
    struct ledger_move m = mv(deb, 50, 20);
    m.has_posted_gte = true;
    m.posted_gte = 31;
    CHECK(ledger_account_move(r, &m) == 0);
    m.posted_gte = 30;
    m.has_posted_lte = true;
    m.posted_lte = 30;
    CHECK(ledger_account_move(r, &m) == 1);
    /* credit-normal: posted after = 20 - 50 = -30 */
    m = mv(cred, 50, 20);
    m.has_posted_gte = true;
    m.posted_gte = -29;
    CHECK(ledger_account_move(r, &m) == 0);
    m.posted_gte = -30;
    CHECK(ledger_account_move(r, &m) == 1);
    /* available counts the drafts that lower it: for the debit-normal one, draft credits */
    CHECK(ledger_account_drafts(r, deb, "EUR", 1000, 25) == 0);
    m = mv(deb, 0, 0);
    m.has_available_gte = true;
    m.available_gte = 6; /* 50 - (20 + 25) = 5 */
    CHECK(ledger_account_move(r, &m) == 0);
    m.available_gte = 5;
    m.has_available_lte = true;
    m.available_lte = 5;
    CHECK(ledger_account_move(r, &m) == 1);
    /* for the credit-normal one, draft debits: 20 - (50 + 7) = -37 */
    CHECK(ledger_account_drafts(r, cred, "EUR", 7, 1000) == 0);
    m = mv(cred, 0, 0);
    m.has_available_lte = true;
    m.available_lte = -38;
    CHECK(ledger_account_move(r, &m) == 0);
    m.available_lte = -37;
    CHECK(ledger_account_move(r, &m) == 1);
    teardown();
}

static void test_constraints_refuse_a_move_that_would_break_them(void)
{
    setup();
    struct req *r = fresh_req();
    const char *id = account(r, "2000", LEDGER_DIRECTION_CREDIT, true, false);
    struct ledger_move m = mv(id, 10, 0);
    CHECK(ledger_account_move(r, &m) == 0); /* debits would exceed credits */
    m = mv(id, 10, 10);
    CHECK(ledger_account_move(r, &m) == 1);
    const char *a = account(r, "1000", LEDGER_DIRECTION_DEBIT, false, true);
    m = mv(a, 0, 1);
    CHECK(ledger_account_move(r, &m) == 0);
    struct ledger_account_row row = load(r, id);
    CHECK(row.posted_debits == 10 && row.posted_credits == 10 && row.obj.lock_version == 1);
    teardown();
}

static void test_sums_never_pass_the_largest_amount(void)
{
    setup();
    struct req *r = fresh_req();
    const char *id = account(r, "1000", LEDGER_DIRECTION_DEBIT, false, false);
    struct ledger_move m = mv(id, MAX, 0);
    CHECK(ledger_account_move(r, &m) == 1);
    m = mv(id, 1, 0);
    CHECK(ledger_account_move(r, &m) == 0);
    m = mv(id, MAX + 1, 0);
    CHECK(ledger_account_move(r, &m) == 0);
    m = mv(id, INT64_MAX, INT64_MAX);
    CHECK(ledger_account_move(r, &m) == 0);
    m = mv(id, -1, 0);
    CHECK(ledger_account_move(r, &m) == -1);
    /* pending too: posted + drafts */
    CHECK(ledger_account_drafts(r, id, "EUR", 1, 0) == -1);
    CHECK(ledger_account_drafts(r, id, "EUR", 0, MAX) == 0);
    CHECK(ledger_account_drafts(r, id, "EUR", INT64_MIN, 0) == -1);
    struct ledger_account_row row = load(r, id);
    CHECK(row.posted_debits == MAX && row.draft_debits == 0 && row.draft_credits == MAX);
    ledger_account_balances(r, &row);
    CHECK(row.obj.balances->pending->debits == MAX);
    teardown();
}

static void test_drafts_add_and_take_away_in_their_currency_only(void)
{
    setup();
    struct req *r = fresh_req();
    const char *id = account(r, "1000", LEDGER_DIRECTION_DEBIT, false, false);
    CHECK(ledger_account_drafts(r, id, "EUR", 40, 15) == 0);
    CHECK(ledger_account_drafts(r, id, "USD", 1, 1) == 0); /* counts nowhere */
    CHECK(ledger_account_drafts(r, "lac_00000000000000000000000000", "EUR", 1, 1) == 0);
    CHECK(ledger_account_drafts(r, id, "EUR", -10, -15) == 0);
    struct ledger_account_row row = load(r, id);
    CHECK(row.draft_debits == 30 && row.draft_credits == 0 && row.obj.lock_version == 0);
    CHECK(ledger_account_drafts(r, id, "EUR", -31, 0) == -1); /* never below zero */
    teardown();
}

static void test_insert_answers_0_for_a_taken_code(void)
{
    setup();
    struct req *r = fresh_req();
    account(r, "1000", LEDGER_DIRECTION_DEBIT, false, false);
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    resource_new(r, &rows_ledger_account, row);
    row->obj.code = row->obj.name = "1000";
    row->obj.classification = LEDGER_CLASSIFICATION_ASSET;
    row->obj.normal_balance = LEDGER_DIRECTION_DEBIT;
    row->obj.currency = "EUR";
    row->obj.currency_exponent = 2;
    row->obj.status = LEDGER_ACCOUNT_STATUS_ACTIVE;
    CHECK(ledger_account_insert(r, row) == 0);
    row->obj.code = "1001";
    CHECK(ledger_account_insert(r, row) == 1);
    CHECK(ledger_signed(LEDGER_DIRECTION_DEBIT, 5, 8) == -3);
    CHECK(ledger_signed(LEDGER_DIRECTION_CREDIT, 5, 8) == 3);
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_move_adds_and_counts_in_lock_version),
        UNIT_TEST(test_guards_are_on_the_signed_balances_after_the_move),
        UNIT_TEST(test_constraints_refuse_a_move_that_would_break_them),
        UNIT_TEST(test_sums_never_pass_the_largest_amount),
        UNIT_TEST(test_drafts_add_and_take_away_in_their_currency_only),
        UNIT_TEST(test_insert_answers_0_for_a_taken_code),
    };
    return unit_run("ledger_accounts", tests, sizeof tests / sizeof tests[0]);
}
