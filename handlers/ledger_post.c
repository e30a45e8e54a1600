/* The ledger's posting engine: what turns an entry into posted balances (after Modern
 * Treasury's ledger transactions and TigerBeetle's transfers). The rules run in the spec's
 * order and refuse the whole entry on the first one broken, naming its lines:
 *
 *   1. every currency balances (422 unbalanced_entry, with `imbalances`)
 *   2. every account exists (422 validation_failed ledger_account_not_found) and is active
 *      (422 account_archived)
 *   3. every line is in its account's currency (422 currency_mismatch)
 *   4. the period of the effective date takes entries (409 period_closed, 403 in a closing
 *      period without ledger:close: ledger_periods.c)
 *   5. no other posted entry has the external_id (409 duplicate_external_id)
 *   6. balance assertions and account constraints hold on the balances the entry leaves (422
 *      balance_assertion_failed), every account_lock_version is still the account's (409
 *      lock_version_mismatch)
 *
 * Then each account's share of the entry is added by one guarded UPDATE
 * (ledger_account_move): the database re-checks the guards of rule 6 on the row it changes,
 * so two postings can never both pass an assertion that only one satisfies, whichever
 * engine and however the writes interleave. The posted lines become immutable rows of
 * ledger_postings and the per-day checkpoints (ledger_balance_days) move with them, so a
 * balance as of any day is one row read. */
#include "generated/ledger_api.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "handlers/ledger.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

static int db_failed(const char *what)
{
    log_error("ledger posting: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* ---- rule 1: totals and balance per currency ---------------------------------------------- */

void ledger_entry_totals(struct req *r, struct journal_entry *e)
{
    struct journal_currency_total *t =
        arena_alloc(&r->arena, (e->lines_count ? e->lines_count : 1) * sizeof *t);
    size_t n = 0;
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct journal_line *l = &e->lines[i];
        size_t k = 0;
        while (k < n && strcmp(t[k].currency, l->currency) != 0)
            k++;
        if (k == n)
            t[n++] = (struct journal_currency_total){ .currency = l->currency };
        /* each amount is at most 2^53 and an entry has at most 500 lines: no overflow */
        if (l->direction == LEDGER_DIRECTION_DEBIT)
            t[k].debits += l->amount;
        else
            t[k].credits += l->amount;
    }
    e->totals = t;
    e->totals_count = n;
}

/* 1 answered (422 unbalanced_entry with each unbalanced currency), 0 balanced. */
static int refuse_unbalanced(struct req *r, struct journal_entry *e)
{
    ledger_entry_totals(r, e);
    struct jsonw w;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    int bad = 0;
    const char *first = NULL;
    for (size_t k = 0; k < e->totals_count; k++) {
        const struct journal_currency_total *t = &e->totals[k];
        if (t->debits == t->credits)
            continue;
        int64_t diff = t->debits - t->credits;
        const char *what = arena_printf(&r->arena,
                                        "%s: debits %" PRId64 ", credits %" PRId64
                                        ", difference %" PRId64 ".",
                                        t->currency, t->debits, t->credits, diff);
        if (!first)
            first = what;
        verr_add(&r->verr, "/lines", NULL, "unbalanced_entry", "%s: %s exceed %s by %" PRId64 ".",
                 t->currency, diff > 0 ? "debits" : "credits", diff > 0 ? "credits" : "debits",
                 diff > 0 ? diff : -diff);
        jsonw_object_begin(&w);
        jsonw_key(&w, "currency");
        jsonw_string(&w, t->currency);
        jsonw_key(&w, "debits");
        jsonw_int(&w, t->debits);
        jsonw_key(&w, "credits");
        jsonw_int(&w, t->credits);
        jsonw_key(&w, "difference");
        jsonw_int(&w, diff);
        jsonw_object_end(&w);
        bad++;
    }
    jsonw_array_end(&w);
    if (!bad) {
        jsonw_release(&w);
        return 0;
    }
    const char *imbalances = resource_json_text(&r->arena, &w);
    req_problem(r, 422, "unbalanced_entry", "%s%s", first,
                bad > 1 ? arena_printf(&r->arena, " (and %d more currencies)", bad - 1) : "");
    r->with_errors = true;
    if (imbalances)
        req_problem_member(r, "imbalances", imbalances);
    return 1;
}

/* ---- rules 2, 3, 6: the accounts ------------------------------------------------------------ */

/* One account the entry touches: its row, its share and the guards its lines ask for. */
struct touched {
    struct ledger_account_row row;
    bool found;
    struct ledger_move m;
    size_t first_line;     /* the first line on it, for pointers */
    bool lock_conflict;    /* two lines ask for different lock versions */
};

/* The accounts of e's lines (each once, in the order of their first line), loaded. */
static int load_touched(struct req *r, const struct journal_entry *e, struct touched **out,
                        size_t *n_out, size_t **line_account)
{
    struct touched *t = arena_alloc(&r->arena, e->lines_count * sizeof *t);
    size_t *of = arena_alloc(&r->arena, e->lines_count * sizeof *of);
    size_t n = 0;
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct journal_line *l = &e->lines[i];
        size_t k = 0;
        while (k < n && strcmp(t[k].m.account_id, l->ledger_account_id) != 0)
            k++;
        of[i] = k;
        if (k < n)
            continue;
        memset(&t[k], 0, sizeof t[k]);
        t[k].m.account_id = l->ledger_account_id;
        t[k].first_line = i;
        int found = resource_load(r, &rows_ledger_account, l->ledger_account_id, &t[k].row);
        if (found < 0)
            return -1;
        t[k].found = found == RESOURCE_FOUND;
        t[k].m.currency = t[k].found ? t[k].row.obj.currency : l->currency;
        n++;
    }
    *out = t;
    *n_out = n;
    *line_account = of;
    return 0;
}

/* Rules 2 and 3: 1 answered, 0 go on. */
static int refuse_accounts(struct req *r, const struct journal_entry *e, const struct touched *t,
                           const size_t *of)
{
    for (size_t i = 0; i < e->lines_count; i++)
        if (!t[of[i]].found)
            verr_add(&r->verr, arena_printf(&r->arena, "/lines/%zu/ledger_account_id", i), NULL,
                     "ledger_account_not_found", "no ledger account %s in this workspace",
                     e->lines[i].ledger_account_id);
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, arena_printf(&r->arena, "%d line%s name%s no account of "
                                                    "this workspace.", r->verr.count,
                                                    r->verr.count == 1 ? "" : "s",
                                                    r->verr.count == 1 ? "s" : ""));
        return 1;
    }
    const char *archived = NULL;
    for (size_t i = 0; i < e->lines_count; i++)
        if (t[of[i]].row.obj.status == LEDGER_ACCOUNT_STATUS_ARCHIVED) {
            verr_add(&r->verr, arena_printf(&r->arena, "/lines/%zu/ledger_account_id", i), NULL,
                     "account_archived", "ledger account %s is archived",
                     e->lines[i].ledger_account_id);
            archived = archived ? archived : e->lines[i].ledger_account_id;
        }
    if (archived) {
        req_problem(r, 422, "account_archived",
                    "Ledger account %s is archived: no entry posts to it.", archived);
        r->with_errors = true;
        return 1;
    }
    const char *wrong = NULL;
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct ledger_account *a = &t[of[i]].row.obj;
        if (strcmp(a->currency, e->lines[i].currency) != 0) {
            verr_add(&r->verr, arena_printf(&r->arena, "/lines/%zu/currency", i), NULL,
                     "currency_mismatch", "is %s; ledger account %s (%s) is in %s",
                     e->lines[i].currency, a->id, a->code, a->currency);
            wrong = wrong ? wrong : a->id;
        }
    }
    if (wrong) {
        req_problem(r, 422, "currency_mismatch",
                    "A line's currency is not its account's (ledger account %s).", wrong);
        r->with_errors = true;
        return 1;
    }
    return 0;
}

static void tighten(bool *has, int64_t *v, bool line_has, int64_t line_v, bool lower)
{
    if (!line_has)
        return;
    if (!*has || (lower ? line_v > *v : line_v < *v))
        *v = line_v;
    *has = true;
}

/* Each account's share of e and the guards of its lines (assertions combine: the tightest). */
static void gather_moves(const struct journal_entry *e, struct touched *t, const size_t *of)
{
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct journal_line *l = &e->lines[i];
        struct ledger_move *m = &t[of[i]].m;
        if (l->direction == LEDGER_DIRECTION_DEBIT)
            m->debits += l->amount;
        else
            m->credits += l->amount;
        if (l->has_account_lock_version) {
            if (m->has_lock_version && m->lock_version != l->account_lock_version)
                t[of[i]].lock_conflict = true;
            m->has_lock_version = true;
            m->lock_version = l->account_lock_version;
        }
        if (!l->has_balance_assertions)
            continue;
        const struct journal_balance_assertions *b = l->balance_assertions;
        tighten(&m->has_posted_gte, &m->posted_gte, b->has_posted_balance_gte,
                b->posted_balance_gte, true);
        tighten(&m->has_posted_lte, &m->posted_lte, b->has_posted_balance_lte,
                b->posted_balance_lte, false);
        tighten(&m->has_available_gte, &m->available_gte, b->has_available_balance_gte,
                b->available_balance_gte, true);
        tighten(&m->has_available_lte, &m->available_lte, b->has_available_balance_lte,
                b->available_balance_lte, false);
    }
}

/* The balances x would have after m: signed posted and available. */
static void after_move(const struct ledger_account_row *x, const struct ledger_move *m,
                       int64_t *posted, int64_t *available)
{
    int64_t d = x->posted_debits + m->debits, c = x->posted_credits + m->credits;
    enum ledger_direction nb = x->obj.normal_balance;
    *posted = ledger_signed(nb, d, c);
    *available = nb == LEDGER_DIRECTION_DEBIT ? d - (c + x->draft_credits)
                                              : c - (d + x->draft_debits);
}

/* Rule 6 on the rows as loaded: every assertion and constraint broken gets an error at the
 * lines that ask for it; then lock versions. 1 answered, 0 go on. */
static int refuse_guards(struct req *r, const struct journal_entry *e, const struct touched *t,
                         const size_t *of)
{
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct touched *a = &t[of[i]];
        const struct journal_line *l = &e->lines[i];
        int64_t posted, available;
        after_move(&a->row, &a->m, &posted, &available);
        const struct ledger_account_constraints *k = a->row.obj.constraints;
        int64_t d = a->row.posted_debits + a->m.debits, c = a->row.posted_credits + a->m.credits;
        if (a->first_line == i && k && k->has_debits_must_not_exceed_credits &&
            k->debits_must_not_exceed_credits && d > c)
            verr_add(&r->verr, arena_printf(&r->arena, "/lines/%zu", i), NULL,
                     "balance_assertion_failed",
                     "ledger account %s must not have debits beyond its credits: it would have "
                     "%" PRId64 " against %" PRId64, a->row.obj.id, d, c);
        if (a->first_line == i && k && k->has_credits_must_not_exceed_debits &&
            k->credits_must_not_exceed_debits && c > d)
            verr_add(&r->verr, arena_printf(&r->arena, "/lines/%zu", i), NULL,
                     "balance_assertion_failed",
                     "ledger account %s must not have credits beyond its debits: it would have "
                     "%" PRId64 " against %" PRId64, a->row.obj.id, c, d);
        if (!l->has_balance_assertions)
            continue;
        const struct journal_balance_assertions *b = l->balance_assertions;
        const struct {
            bool has, lower;
            int64_t bound, value;
            const char *name;
        } checks[] = {
            {b->has_posted_balance_gte, true, b->posted_balance_gte, posted, "posted_balance_gte"},
            {b->has_posted_balance_lte, false, b->posted_balance_lte, posted, "posted_balance_lte"},
            {b->has_available_balance_gte, true, b->available_balance_gte, available,
             "available_balance_gte"},
            {b->has_available_balance_lte, false, b->available_balance_lte, available,
             "available_balance_lte"},
        };
        for (size_t j = 0; j < sizeof checks / sizeof checks[0]; j++)
            if (checks[j].has && (checks[j].lower ? checks[j].value < checks[j].bound
                                                  : checks[j].value > checks[j].bound))
                verr_add(&r->verr,
                         arena_printf(&r->arena, "/lines/%zu/balance_assertions/%s", i,
                                      checks[j].name),
                         NULL, "balance_assertion_failed",
                         "the balance of ledger account %s would be %" PRId64 ", not %s %" PRId64,
                         a->row.obj.id, checks[j].value, checks[j].lower ? ">=" : "<=",
                         checks[j].bound);
    }
    if (r->verr.count > 0) {
        req_problem(r, 422, "balance_assertion_failed",
                    "%d balance assertion%s or account constraint%s would not hold after this "
                    "entry.", r->verr.count, r->verr.count == 1 ? "" : "s",
                    r->verr.count == 1 ? "" : "s");
        r->with_errors = true;
        return 1;
    }
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct touched *a = &t[of[i]];
        const struct journal_line *l = &e->lines[i];
        if (l->has_account_lock_version &&
            (a->lock_conflict || l->account_lock_version != a->row.obj.lock_version))
            verr_add(&r->verr, arena_printf(&r->arena, "/lines/%zu/account_lock_version", i),
                     NULL, "lock_version_mismatch",
                     "ledger account %s is at lock_version %" PRId64 ", not %" PRId64,
                     a->row.obj.id, a->row.obj.lock_version, l->account_lock_version);
    }
    if (r->verr.count > 0) {
        req_problem(r, 409, "lock_version_mismatch",
                    "An account moved since the lock_version a line gives: read it again.");
        r->with_errors = true;
        return 1;
    }
    return 0;
}

/* ---- rule 5 ----------------------------------------------------------------------------- */

static int refuse_duplicate(struct req *r, const struct journal_entry *e)
{
    if (!e->has_external_id)
        return 0;
    struct db_stmt *st = storage_prepare(
        "SELECT id FROM journal_entries WHERE workspace_id = ?1 AND external_id = ?2 AND "
        "status = 'posted' AND id <> ?3");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, e->external_id);
    db_bind_text(st, 3, e->id);
    int rc = db_step(st);
    const char *other = rc == DB_ROW ? db_column_dup(&r->arena, st, 0) : NULL;
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return db_failed("external_id lookup");
    if (!other)
        return 0;
    verr_add(&r->verr, "/external_id", NULL, "duplicate_external_id", "posted entry %s has it",
             other);
    req_problem(r, 409, "duplicate_external_id",
                "Posted journal entry %s already has external_id %s.", other, e->external_id);
    r->with_errors = true;
    return 1;
}

/* ---- checkpoints ------------------------------------------------------------------------ */

/* Adds m to the account's checkpoint of day and of every later day it has. 0 / -1. */
static int move_checkpoints(struct req *r, const struct ledger_move *m, const char *day)
{
    struct db_stmt *st = storage_prepare(
        "INSERT INTO ledger_balance_days (ledger_account_id, day, workspace_id, posted_debits, "
        "posted_credits) SELECT ?1, ?2, ?3, "
        "COALESCE((SELECT b.posted_debits FROM ledger_balance_days b WHERE "
        "b.ledger_account_id = ?1 AND b.day < ?2 ORDER BY b.day DESC LIMIT 1), 0), "
        "COALESCE((SELECT b.posted_credits FROM ledger_balance_days b WHERE "
        "b.ledger_account_id = ?1 AND b.day < ?2 ORDER BY b.day DESC LIMIT 1), 0) "
        "ON CONFLICT (ledger_account_id, day) DO NOTHING");
    if (!st)
        return -1;
    db_bind_text(st, 1, m->account_id);
    db_bind_text(st, 2, day);
    db_bind_text(st, 3, r->principal.workspace_id);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("checkpoint of the day");
    st = storage_prepare("UPDATE ledger_balance_days SET posted_debits = posted_debits + ?1, "
                         "posted_credits = posted_credits + ?2 WHERE ledger_account_id = ?3 AND "
                         "day >= ?4");
    if (!st)
        return -1;
    db_bind_int64(st, 1, m->debits);
    db_bind_int64(st, 2, m->credits);
    db_bind_text(st, 3, m->account_id);
    db_bind_text(st, 4, day);
    rc = db_step(st);
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("checkpoints after the day");
}

/* ---- posting ---------------------------------------------------------------------------- */

int ledger_post_entry(struct req *r, struct journal_entry *e)
{
    if (refuse_unbalanced(r, e))
        return 0;
    struct touched *t;
    size_t n, *of;
    if (load_touched(r, e, &t, &n, &of) != 0)
        return -1;
    if (refuse_accounts(r, e, t, of))
        return 0;
    const char *period_id = NULL;
    int admits = ledger_period_admits(r, e->effective_date, "/effective_date", &period_id);
    if (admits <= 0)
        return admits;
    int dup = refuse_duplicate(r, e);
    if (dup != 0)
        return dup > 0 ? 0 : -1;
    gather_moves(e, t, of);
    if (refuse_guards(r, e, t, of))
        return 0;
    for (size_t k = 0; k < n; k++) {
        int moved = ledger_account_move(r, &t[k].m);
        if (moved < 0)
            return -1;
        if (moved == 0) {
            /* The row changed between the read above and this statement (not possible while
             * a workspace's writes are serialized, which they are on both engines): say what
             * the database refused, from the row as it is now. */
            if (load_touched(r, e, &t, &n, &of) != 0)
                return -1;
            gather_moves(e, t, of);
            if (refuse_accounts(r, e, t, of) || refuse_guards(r, e, t, of))
                return 0;
            req_problem(r, 409, "conflict",
                        "Ledger account %s changed while this entry posted; try again.",
                        t[k].m.account_id);
            return 0;
        }
        if (move_checkpoints(r, &t[k].m, e->effective_date) != 0)
            return -1;
    }
    char now[40];
    format_time_rfc3339(clock_now_ms(), now, sizeof now);
    e->status = JOURNAL_ENTRY_STATUS_POSTED;
    e->posted_at = arena_strdup(&r->arena, now);
    e->has_posted_at = true;
    e->posted_by = r->principal.user_id;
    e->has_posted_by = true;
    e->period_id = period_id;
    e->has_period_id = period_id != NULL;
    return 1;
}

int ledger_post_record(struct req *r, const struct journal_entry *e)
{
    struct db_stmt *st = storage_prepare(
        "INSERT INTO ledger_postings (journal_entry_id, line, workspace_id, ledger_account_id, "
        "direction, amount, currency, effective_date, posted_at) VALUES (?1, ?2, ?3, ?4, ?5, "
        "?6, ?7, ?8, ?9)");
    if (!st)
        return -1;
    for (size_t i = 0; i < e->lines_count; i++) {
        const struct journal_line *l = &e->lines[i];
        db_bind_text(st, 1, e->id);
        db_bind_int64(st, 2, (int64_t)i);
        db_bind_text(st, 3, r->principal.workspace_id);
        db_bind_text(st, 4, l->ledger_account_id);
        db_bind_text(st, 5, ledger_direction_str(l->direction));
        db_bind_int64(st, 6, l->amount);
        db_bind_text(st, 7, l->currency);
        db_bind_text(st, 8, e->effective_date);
        db_bind_text(st, 9, e->posted_at);
        int rc = db_step(st);
        db_reset(st);
        if (rc != DB_DONE)
            return db_failed("posting a line");
    }
    return 0;
}
