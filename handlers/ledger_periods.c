/* The ledger API's accounting periods: whole days, both ends inclusive, never overlapping,
 * moved through future -> open -> closing -> closed -> locked (closing and closed back to open
 * by a reopen), the close checklist that guards the close, and the posting rule the posting
 * engine asks about every entry's date (ledger_period_admits). The only writes of
 * ledger_periods. Rows, loads, saves and the list come from the schema's x-table mapping
 * (generated/rows_ledger.h, runtime/resource.h); what is here is the periods' own rules.
 *
 * A workspace's writes are serialized (SQLite has one writer; PostgreSQL write transactions
 * are SERIALIZABLE and serialized per workspace), so the overlap test, the earlier/later
 * period tests and the checklist read what the save that follows them will be judged by. */
#include "handlers/ledger.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "generated/scopes.h"
#include "handlers/admin.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define PERIODS_PATH "/v1/ledger/periods"
#define OBJECT "ledger_period"

static int db_failed(const char *what)
{
    log_error("ledger periods: %s failed: %s", what, storage_errmsg());
    return -1;
}

static const char *status_str(enum ledger_period_status s)
{
    return ledger_period_status_str(s);
}

static const char *now_text(struct req *r)
{
    char buf[40];
    format_now_rfc3339(buf, sizeof buf);
    return arena_strdup(&r->arena, buf);
}

/* The person a transition is recorded as done by (closed_by, locked_by, reopened_by: user ids
 * in the spec): the caller, or for a service-account token the person who minted it. NULL
 * (nothing recorded beside the audit record, which names the principal) when no person can
 * be named; *failed on a database failure. */
static const char *person(struct req *r, bool *failed)
{
    const char *me = r->principal.user_id;
    *failed = false;
    if (!token_is_service_subject(me))
        return me;
    char minter[64];
    int found = r->principal.token_id
                    ? admin_service_token_minter(r->principal.workspace_id, me,
                                                 r->principal.token_id, minter, sizeof minter)
                    : 0;
    if (found < 0) {
        *failed = true;
        return NULL;
    }
    return found && !token_is_service_subject(minter) ? arena_strdup(&r->arena, minter) : NULL;
}

/* ---- reading other periods ------------------------------------------------------------- */

/* One other period of r's workspace a rule names: id, name and status. */
struct other {
    const char *id, *name, *status;
};

/* The first row of sql (parameters: the workspace, then a and b when not NULL; columns id,
 * name, status) into *o: 1 found, 0 none, -1 failure. */
static int find_other(struct req *r, const char *sql, const char *a, const char *b, struct other *o)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    if (a)
        db_bind_text(st, 2, a);
    if (b)
        db_bind_text(st, 3, b);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        o->id = db_column_dup(&r->arena, st, 0);
        o->name = db_column_dup(&r->arena, st, 1);
        o->status = db_column_dup(&r->arena, st, 2);
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("reading another period");
    return rc == DB_ROW;
}

/* A period sharing a day with [start, end]. */
static int overlapping(struct req *r, const char *start, const char *end, struct other *o)
{
    return find_other(r,
                      "SELECT id, name, status FROM ledger_periods WHERE workspace_id = ? AND "
                      "start_date <= ? AND end_date >= ? ORDER BY start_date, id LIMIT 1",
                      end, start, o);
}

/* The earliest period before p that is neither closed nor locked. */
static int earliest_unclosed_before(struct req *r, const struct ledger_period *p, struct other *o)
{
    return find_other(r,
                      "SELECT id, name, status FROM ledger_periods WHERE workspace_id = ? AND "
                      "start_date < ? AND status NOT IN ('closed', 'locked') "
                      "ORDER BY start_date, id LIMIT 1",
                      p->start_date, NULL, o);
}

/* The earliest period after p that is closed or locked. */
static int closed_after(struct req *r, const struct ledger_period *p, struct other *o)
{
    return find_other(r,
                      "SELECT id, name, status FROM ledger_periods WHERE workspace_id = ? AND "
                      "start_date > ? AND status IN ('closed', 'locked') "
                      "ORDER BY start_date, id LIMIT 1",
                      p->start_date, NULL, o);
}

/* count(*) of sql (parameters: the workspace, then a, b when not NULL) into *n. 0 / -1. */
static int count_of(struct req *r, const char *sql, const char *a, const char *b, int64_t *n)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    if (a)
        db_bind_text(st, 2, a);
    if (b)
        db_bind_text(st, 3, b);
    int rc = db_step(st);
    *n = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_reset(st);
    return rc == DB_ROW ? 0 : db_failed("counting");
}

/* ---- the close checklist --------------------------------------------------------------- */

/* Booked bank transactions dated in p that are neither reconciled nor ignored. The bank feeds
 * API (openapi/banking.yaml) is not built yet, so there are none: when it is, this counts its
 * transactions of r's workspace booked between p's start_date and end_date whose
 * reconciliation status is neither reconciled nor ignored (a read of its table, which
 * stays its handler's to write). 0 / -1. */
static int unreconciled_bank_transactions(struct req *r, const struct ledger_period *p, int64_t *n)
{
    (void)r;
    (void)p;
    *n = 0;
    return 0;
}

static void set_check(struct req *r, struct ledger_period_close_check *c,
                      enum ledger_period_close_check_check which, int64_t count,
                      const char *failed_detail)
{
    c->check = which;
    c->count = count;
    c->result = count == 0 ? LEDGER_PERIOD_CLOSE_CHECK_RESULT_PASSED
                           : LEDGER_PERIOD_CLOSE_CHECK_RESULT_FAILED;
    c->has_detail = count != 0;
    c->detail = count != 0 ? failed_detail : NULL;
    (void)r;
}

enum { CHECKS = 4 };

/* Every check closing p runs, computed now, into cl (in r's arena). 0 / -1. */
static int checklist(struct req *r, const struct ledger_period *p,
                     struct ledger_period_close_checklist *cl)
{
    struct ledger_period_close_check *c = arena_alloc(&r->arena, CHECKS * sizeof *c);
    memset(c, 0, CHECKS * sizeof *c);
    int64_t earlier = 0, drafts = 0, bank = 0;
    int unbalanced = 0;
    struct other first = {0};
    if (count_of(r,
                 "SELECT count(*) FROM ledger_periods WHERE workspace_id = ? AND start_date < ? "
                 "AND status NOT IN ('closed', 'locked')",
                 p->start_date, NULL, &earlier) != 0 ||
        (earlier > 0 && earliest_unclosed_before(r, p, &first) < 0) ||
        count_of(r,
                 "SELECT count(*) FROM journal_entries WHERE workspace_id = ? AND "
                 "status = 'draft' AND effective_date >= ? AND effective_date <= ?",
                 p->start_date, p->end_date, &drafts) != 0 ||
        unreconciled_bank_transactions(r, p, &bank) != 0 ||
        ledger_unbalanced_currencies(r, p->end_date, &unbalanced) != 0)
        return -1;
    set_check(r, &c[0], LEDGER_PERIOD_CLOSE_CHECK_CHECK_EARLIER_PERIODS_CLOSED, earlier,
              arena_printf(&r->arena,
                           "%" PRId64 " earlier period%s not closed (the earliest: %s, %s).",
                           earlier, earlier == 1 ? " is" : "s are", first.name ? first.name : "?",
                           first.status ? first.status : "?"));
    set_check(r, &c[1], LEDGER_PERIOD_CLOSE_CHECK_CHECK_UNPOSTED_DRAFTS, drafts,
              arena_printf(&r->arena, "%" PRId64 " draft entr%s dated in %s.", drafts,
                           drafts == 1 ? "y is" : "ies are", p->name));
    set_check(r, &c[2], LEDGER_PERIOD_CLOSE_CHECK_CHECK_UNRECONCILED_BANK_TRANSACTIONS, bank,
              arena_printf(&r->arena, "%" PRId64 " booked bank transaction%s of %s not reconciled.",
                           bank, bank == 1 ? " is" : "s are", p->name));
    set_check(r, &c[3], LEDGER_PERIOD_CLOSE_CHECK_CHECK_TRIAL_BALANCE_BALANCED, unbalanced,
              arena_printf(&r->arena,
                           "The trial balance as of %s does not balance in %d "
                           "currenc%s.",
                           p->end_date, unbalanced, unbalanced == 1 ? "y" : "ies"));
    cl->object = "period_close_checklist";
    cl->period_id = p->id;
    cl->checks = c;
    cl->checks_count = CHECKS;
    cl->ready = true;
    for (int i = 0; i < CHECKS; i++)
        cl->ready = cl->ready && c[i].result == LEDGER_PERIOD_CLOSE_CHECK_RESULT_PASSED;
    cl->generated_at = now_text(r);
    return 0;
}

/* ---- transitions ------------------------------------------------------------------------- */

/* One step of a period's life: from which statuses, to which, and what the step itself checks
 * and marks on the period (the person who took it: NULL for a client without one). */
struct step {
    unsigned from; /* a bit per enum ledger_period_status it may start from */
    enum ledger_period_status to;
    const char *verb, *from_text; /* "Period x is y; only <from_text> period can be <verb>." */
    const char *action;           /* the audit record's action */
    /* The step's own rules (NULL: none): 1 go on, 0 answered, -1 failure. */
    int (*rules)(struct req *r, const struct ledger_period *p);
    /* Marks what this step records on p (who took it and when). */
    void (*mark)(struct req *r, struct ledger_period *p, const char *who, const char *now);
    bool needs_person; /* mark records who */
};

#define FROM(s) (1u << (s))

/* Moves the period id (If-Match: if_match, NULL none) by step: the period as saved, NULL
 * with *rc 0 answered (404, 412, 409 a refused step), -1 failure. The change is reported
 * for the audit record with the status before and after. */
static struct ledger_period *take_step(struct req *r, const char *id, const char *if_match,
                                       const struct step *st, int *rc)
{
    struct ledger_period *p = arena_alloc(&r->arena, sizeof *p);
    *rc = resource_load_current(r, &rows_ledger_period, id, if_match, p);
    if (*rc <= 0)
        return NULL;
    if (!(st->from & FROM(p->status))) {
        req_problem(r, 409, "invalid_transition",
                    "Period %s (%s) is %s; only %s period can be %s.", p->name, p->id,
                    status_str(p->status), st->from_text, st->verb);
        *rc = 0;
        return NULL;
    }
    if (st->rules && (*rc = st->rules(r, p)) <= 0)
        return NULL;
    bool failed = false;
    const char *who = st->needs_person ? person(r, &failed) : NULL;
    if (failed) {
        *rc = -1;
        return NULL;
    }
    enum ledger_period_status before = p->status;
    p->status = st->to;
    st->mark(r, p, who, now_text(r));
    int saved = resource_save(r, &rows_ledger_period, p);
    if (saved <= 0) {
        *rc = saved == DB_ERR_UNIQUE ? -1 : saved;
        return NULL;
    }
    if (audit_change(r, st->action, OBJECT, p->id, status_str(before), status_str(p->status),
                     NULL) != 0) {
        *rc = -1;
        return NULL;
    }
    *rc = 1;
    return p;
}

/* The operation's answer: 200 with the period moved, or what take_step answered. */
#define ANSWER_STEP(out, p, rc)                                                                    \
    do {                                                                                           \
        if (!(p))                                                                                  \
            return (rc);                                                                           \
        (out)->status = 200;                                                                       \
        (out)->body_200 = (p);                                                                     \
        return 0;                                                                                  \
    } while (0)

static void mark_opened(struct req *r, struct ledger_period *p, const char *who, const char *now)
{
    (void)r, (void)who;
    p->opened_at = now;
    p->has_opened_at = true;
}

static void mark_soft_closed(struct req *r, struct ledger_period *p, const char *who,
                             const char *now)
{
    (void)r, (void)who;
    p->soft_closed_at = now;
    p->has_soft_closed_at = true;
}

static void mark_closed(struct req *r, struct ledger_period *p, const char *who, const char *now)
{
    (void)r;
    p->closed_at = now;
    p->has_closed_at = true;
    p->closed_by = who;
    p->has_closed_by = who != NULL;
}

static void mark_locked(struct req *r, struct ledger_period *p, const char *who, const char *now)
{
    (void)r;
    p->locked_at = now;
    p->has_locked_at = true;
    p->locked_by = who;
    p->has_locked_by = who != NULL;
}

static void mark_reopened(struct req *r, struct ledger_period *p, const char *who,
                          const char *now)
{
    (void)r;
    /* Open again: the marks of the close it undoes go (the audit records keep them); the
     * next soft-close and close set them anew. */
    p->soft_closed_at = NULL;
    p->has_soft_closed_at = false;
    p->closed_at = NULL;
    p->has_closed_at = false;
    p->closed_by = NULL;
    p->has_closed_by = false;
    p->reopened_at = now;
    p->has_reopened_at = true;
    p->reopened_by = who;
    p->has_reopened_by = who != NULL;
    p->reopen_count = (p->has_reopen_count ? p->reopen_count : 0) + 1;
    p->has_reopen_count = true;
}

/* Periods close in order: an open one before this would take entries dated before a closed
 * one, and the earlier figures the close signs off would still move. Then the checklist. */
static int close_rules(struct req *r, const struct ledger_period *p)
{
    struct other o = {0};
    int earlier = earliest_unclosed_before(r, p, &o);
    if (earlier < 0)
        return -1;
    if (earlier) {
        req_problem(r, 409, "earlier_period_not_closed",
                    "Period %s (%s) is %s; every period before %s must be closed or locked "
                    "first.",
                    o.name, o.id, o.status, p->name);
        return 0;
    }
    struct ledger_period_close_checklist cl;
    if (checklist(r, p, &cl) != 0)
        return -1;
    if (cl.ready)
        return 1;
    int failing = 0;
    for (size_t i = 0; i < cl.checks_count; i++) {
        const struct ledger_period_close_check *c = &cl.checks[i];
        if (c->result != LEDGER_PERIOD_CLOSE_CHECK_RESULT_FAILED)
            continue;
        const char *name = ledger_period_close_check_check_str(c->check);
        verr_add(&r->verr, "/checks", name, name, "%s", c->detail);
        failing++;
    }
    req_problem(r, 409, "close_checklist_failed", "%d of %zu close checks fail for period %s.",
                failing, cl.checks_count, p->name);
    r->with_errors = true;
    return 0;
}

/* Reopening under a closed later period would let entries move figures the later close
 * carried forward: the later one is reopened first. */
static int reopen_rules(struct req *r, const struct ledger_period *p)
{
    struct other o = {0};
    int later = closed_after(r, p, &o);
    if (later < 0)
        return -1;
    if (later) {
        req_problem(r, 409, "later_period_closed",
                    "Period %s (%s) after %s is %s; reopen it first.", o.name, o.id, p->name,
                    o.status);
        return 0;
    }
    return 1;
}

/* A closing or closed period goes back to open through a reopen (audited, with a reason, by
 * an administrator), never through open. The reopen's declared record copies the request's
 * reason (x-audit fields: [reason]). */
static const struct step OPEN = {FROM(LEDGER_PERIOD_STATUS_FUTURE), LEDGER_PERIOD_STATUS_OPEN,
                                 "opened (a closing or closed one is reopened)", "a future",
                                 "ledger_period.opened", NULL, mark_opened, false};
static const struct step SOFT_CLOSE = {FROM(LEDGER_PERIOD_STATUS_OPEN),
                                       LEDGER_PERIOD_STATUS_CLOSING, "soft-closed", "an open",
                                       "ledger_period.soft_closed", NULL, mark_soft_closed, false};
static const struct step CLOSE = {FROM(LEDGER_PERIOD_STATUS_CLOSING), LEDGER_PERIOD_STATUS_CLOSED,
                                  "closed", "a closing", "ledger_period.closed", close_rules,
                                  mark_closed, true};
static const struct step LOCK = {FROM(LEDGER_PERIOD_STATUS_CLOSED), LEDGER_PERIOD_STATUS_LOCKED,
                                 "locked", "a closed", "ledger_period.locked", NULL, mark_locked,
                                 true};
static const struct step REOPEN = {
    FROM(LEDGER_PERIOD_STATUS_CLOSING) | FROM(LEDGER_PERIOD_STATUS_CLOSED),
    LEDGER_PERIOD_STATUS_OPEN, "reopened", "a closing or closed", "ledger_period.reopened",
    reopen_rules, mark_reopened, true};

/* ---- operations -------------------------------------------------------------------------- */

int ledger_list_ledger_periods(struct req *r, const struct ledger_list_ledger_periods_request *in,
                               struct ledger_list_ledger_periods_response *out)
{
    /* date: the period covering that day, start_date <= date <= end_date */
    const struct resource_filter f[] = {
        RESOURCE_TEXT("status", RESOURCE_EQ, in->has_status ? status_str(in->status) : NULL),
        RESOURCE_INT("fiscal_year", RESOURCE_EQ, in->has_fiscal_year, in->fiscal_year),
        RESOURCE_TEXT("start_date", RESOURCE_LE, in->has_date ? in->date : NULL),
        RESOURCE_TEXT("end_date", RESOURCE_GE, in->has_date ? in->date : NULL),
    };
    struct resource_page rp;
    int listed = resource_list(r, &rows_ledger_period, f, sizeof f / sizeof f[0], in->limit,
                               in->has_cursor ? in->cursor : NULL, &rp);
    if (listed <= 0)
        return listed;
    struct ledger_period_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}

int ledger_create_ledger_period(struct req *r, const struct ledger_create_ledger_period_request *in,
                                struct ledger_create_ledger_period_response *out)
{
    const struct ledger_period_create *c = in->body;
    if (strcmp(c->end_date, c->start_date) < 0) {
        verr_add(&r->verr, "/end_date", NULL, "end_before_start", "%s is before start_date %s",
                 c->end_date, c->start_date);
        req_problem_validation(r, 422, "The period ends before it starts.");
        return 0;
    }
    struct other o = {0};
    int found = overlapping(r, c->start_date, c->end_date, &o);
    if (found < 0)
        return -1;
    if (found) {
        req_problem(r, 409, "period_overlap",
                    "%s to %s overlaps period %s (%s), which is %s; periods never overlap.",
                    c->start_date, c->end_date, o.name, o.id, o.status);
        return 0;
    }
    struct ledger_period *p = arena_alloc(&r->arena, sizeof *p);
    resource_new(r, &rows_ledger_period, p);
    p->name = c->name;
    p->fiscal_year = c->fiscal_year;
    p->start_date = c->start_date;
    p->end_date = c->end_date;
    p->status = LEDGER_PERIOD_STATUS_FUTURE;
    if (c->has_metadata) {
        p->metadata = c->metadata;
        p->metadata_count = c->metadata_count;
    }
    int rc = resource_insert(r, &rows_ledger_period, p);
    if (rc == DB_ERR_UNIQUE) {
        req_problem(r, 409, "duplicate_name",
                    "Another period of this workspace is already named %s.", p->name);
        return 0;
    }
    if (rc != 0)
        return -1;
    out->status = 201;
    out->body_201 = p;
    out->location = arena_printf(&r->arena, PERIODS_PATH "/%s", p->id);
    return 0;
}

int ledger_get_ledger_period(struct req *r, const struct ledger_get_ledger_period_request *in,
                             struct ledger_get_ledger_period_response *out)
{
    struct ledger_period *p = arena_alloc(&r->arena, sizeof *p);
    int found = resource_load_current(r, &rows_ledger_period, in->id, NULL, p);
    if (found <= 0)
        return found;
    out->status = 200;
    out->body_200 = p;
    return 0;
}

int ledger_get_ledger_period_checklist(struct req *r,
                                       const struct ledger_get_ledger_period_checklist_request *in,
                                       struct ledger_get_ledger_period_checklist_response *out)
{
    struct ledger_period p;
    int found = resource_load_current(r, &rows_ledger_period, in->id, NULL, &p);
    if (found <= 0)
        return found;
    struct ledger_period_close_checklist *cl = arena_alloc(&r->arena, sizeof *cl);
    if (checklist(r, &p, cl) != 0)
        return -1;
    out->status = 200;
    out->body_200 = cl;
    return 0;
}

int ledger_open_ledger_period(struct req *r, const struct ledger_open_ledger_period_request *in,
                              struct ledger_open_ledger_period_response *out)
{
    int rc;
    struct ledger_period *p =
        take_step(r, in->id, in->has_if_match ? in->if_match : NULL, &OPEN, &rc);
    ANSWER_STEP(out, p, rc);
}

int ledger_soft_close_ledger_period(struct req *r,
                                    const struct ledger_soft_close_ledger_period_request *in,
                                    struct ledger_soft_close_ledger_period_response *out)
{
    int rc;
    struct ledger_period *p =
        take_step(r, in->id, in->has_if_match ? in->if_match : NULL, &SOFT_CLOSE, &rc);
    ANSWER_STEP(out, p, rc);
}

int ledger_close_ledger_period(struct req *r, const struct ledger_close_ledger_period_request *in,
                               struct ledger_close_ledger_period_response *out)
{
    int rc;
    struct ledger_period *p =
        take_step(r, in->id, in->has_if_match ? in->if_match : NULL, &CLOSE, &rc);
    ANSWER_STEP(out, p, rc);
}

int ledger_lock_ledger_period(struct req *r, const struct ledger_lock_ledger_period_request *in,
                              struct ledger_lock_ledger_period_response *out)
{
    int rc;
    struct ledger_period *p =
        take_step(r, in->id, in->has_if_match ? in->if_match : NULL, &LOCK, &rc);
    ANSWER_STEP(out, p, rc);
}

int ledger_reopen_ledger_period(struct req *r, const struct ledger_reopen_ledger_period_request *in,
                                struct ledger_reopen_ledger_period_response *out)
{
    int rc;
    struct ledger_period *p =
        take_step(r, in->id, in->has_if_match ? in->if_match : NULL, &REOPEN, &rc);
    ANSWER_STEP(out, p, rc);
}

/* ---- what the posting engine asks (handlers/ledger.h) ------------------------------------ */

int ledger_period_covering(struct req *r, const char *date, struct ledger_period *out)
{
    struct db_stmt *st = storage_prepare("SELECT " ROWS_LEDGER_PERIOD_COLUMNS
                                         " FROM ledger_periods WHERE workspace_id = ? AND "
                                         "start_date <= ? AND end_date >= ? LIMIT 1");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, date);
    db_bind_text(st, 3, date);
    int rc = db_step(st), found = 0;
    if (rc == DB_ROW) {
        memset(out, 0, sizeof *out);
        if (rows_ledger_period.init)
            rows_ledger_period.init(out);
        found = row_read_ledger_period(&r->arena, st, 0, out) == 0 ? 1 : -1;
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("finding the period covering a date");
    return found;
}

int ledger_period_admits(struct req *r, const char *date, const char *pointer,
                         const char **period_id)
{
    *period_id = NULL;
    int64_t periods = 0;
    if (count_of(r,
                 "SELECT count(*) FROM (SELECT 1 FROM ledger_periods WHERE workspace_id = ? "
                 "LIMIT 1) x",
                 NULL, NULL, &periods) != 0)
        return -1;
    if (periods == 0)
        return 1; /* a workspace that keeps no periods posts on any date */
    struct ledger_period p;
    int found = ledger_period_covering(r, date, &p);
    if (found < 0)
        return -1;
    if (!found) {
        verr_add(&r->verr, pointer ? pointer : "", NULL, "period_closed",
                 "no accounting period covers %s", date);
        req_problem(r, 409, "period_closed", "No accounting period covers %s; %s cannot be posted.",
                    date, date);
        r->with_errors = true;
        return 0;
    }
    switch (p.status) {
    case LEDGER_PERIOD_STATUS_OPEN:
        break;
    case LEDGER_PERIOD_STATUS_CLOSING:
        if (!(r->principal.scopes & SCOPE_LEDGER_CLOSE)) {
            req_problem(r, 403, "insufficient_scope",
                        "Period %s is closing: only callers with ledger:close post into it "
                        "(%s).",
                        p.name, date);
            return 0;
        }
        break;
    case LEDGER_PERIOD_STATUS_FUTURE:
    case LEDGER_PERIOD_STATUS_CLOSED:
    case LEDGER_PERIOD_STATUS_LOCKED:
        verr_add(&r->verr, pointer ? pointer : "", NULL, "period_closed",
                 "falls in %s, which is %s", p.name, status_str(p.status));
        req_problem(r, 409, "period_closed", "Period %s is %s; %s cannot be posted.", p.name,
                    status_str(p.status), date);
        r->with_errors = true;
        return 0;
    }
    *period_id = p.id;
    return 1;
}

int ledger_unbalanced_currencies(struct req *r, const char *as_of, int *unbalanced)
{
    /* Each account's latest checkpoint on or before as_of holds its cumulative posted sums
     * then; summed per currency, debits equal credits in a ledger whose every entry balanced
     * per currency. */
    int64_t n = 0;
    int rc = count_of(r,
                      "SELECT count(*) FROM (SELECT a.currency FROM ledger_balance_days d "
                      "JOIN ledger_accounts a ON a.id = d.ledger_account_id "
                      "AND a.workspace_id = d.workspace_id "
                      "WHERE d.workspace_id = ? AND d.day = (SELECT max(d2.day) FROM "
                      "ledger_balance_days d2 WHERE d2.ledger_account_id = d.ledger_account_id "
                      "AND d2.day <= ?) "
                      "GROUP BY a.currency "
                      "HAVING sum(d.posted_debits) <> sum(d.posted_credits)) x",
                      as_of, NULL, &n);
    *unbalanced = (int)n;
    return rc;
}
