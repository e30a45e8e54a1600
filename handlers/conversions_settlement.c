/* The conversions' settlement job: from a conversion's cut-off (12:00 UTC on its value date,
 * settlement_cutoff_at) on, each round looks at every `scheduled` and `overdue` one that is
 * due. When the available balance of the workspace's FX cash account of the sell currency
 * (ledger_fx_accounts: FXC-<sell>) covers sell_amount, it posts the conversion's ONE ledger
 * entry (source `conversion`, source_id the conversion, dated the value date) and marks it
 * `settled` with ledger_transaction_id; otherwise it marks a `scheduled` one `overdue` (once;
 * an overdue one is looked at again every round, and settles once funded). The entry:
 *
 *   sell currency S: debit FXL-S sell_amount, credit FXC-S sell_amount
 *   buy currency B:  debit FXC-B buy_amount, debit FXS-B spread, credit FXL-B buy + spread
 *
 * spread = floor(sell_amount × mid_rate, in B's minor units) − buy_amount, the difference
 * between the mid and the client rate (its line left out when 0). Both legs are lines of one
 * entry, so they post together or not at all; the entry and the conversion's new state are
 * written in one step of the group-commit writer (runtime/job_steps.h), so a
 * crash never leaves one without the other. A posting rule's refusal (a period closed since
 * the execution, an archived FX account) leaves the conversion unsettled (overdue), logged.
 *
 * The job writes fx_conversions through conversions.c (conversions_save_settlement) and the
 * ledger through handlers/ledger_posting.h. Its principal is "system". */
#include <stdio.h>
#include <string.h>

#include "generated/rows_conversions.h"
#include "handlers/conversions.h"
#include "handlers/ledger_posting.h"
#include "handlers/rates.h"
#include "runtime/arena.h"
#include "runtime/clock.h"
#include "runtime/decimal.h"
#include "runtime/format.h"
#include "runtime/job_steps.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/verr.h"

#define BATCH 50
/* The part of a step the ledger posting runs in: a refused posting is undone alone, and the
 * conversion then stays unsettled (storage_nested_begin). */
#define POSTING_PART "fx_conversion_posting"

/* spread = floor(sell × mid in B's minor units) − buy (>= 0: buy was rounded down from sell ×
 * rate, or sell rounded up from buy ÷ rate, and rate <= mid). 0 / -1. */
static int spread_of(const struct fx_conversion *c, int64_t *spread)
{
    struct decimal mid;
    int es = format_currency_exponent(c->sell_currency);
    int eb = format_currency_exponent(c->buy_currency);
    int64_t at_mid = 0;
    if (es < 0 || eb < 0 ||
        decimal_parse(c->mid_rate, DECIMAL_MAX_DIGITS, RATES_SCALE, false, &mid) != 0 ||
        decimal_amount_mul(c->sell_amount, es, mid, eb, DECIMAL_ROUND_DOWN, &at_mid) != 0 ||
        at_mid < c->buy_amount)
        return -1;
    *spread = at_mid - c->buy_amount;
    return 0;
}

/* Posts c's entry: 1 posted (*entry_id), 0 refused by a posting rule (logged, the part
 * undone), -1 failure. */
static int post(struct req *r, const struct fx_conversion *c, const struct ledger_fx_accounts *s,
                const struct ledger_fx_accounts *b, const char **entry_id)
{
    int64_t spread = 0;
    if (spread_of(c, &spread) != 0) {
        log_error("conversions: cannot compute the spread of %s (mid %s)", c->id, c->mid_rate);
        return -1;
    }
    const char *desc = arena_printf(&r->arena, "FX conversion %s (%s): %s to %s at %s",
                                    c->short_reference, c->id, c->sell_currency,
                                    c->buy_currency, c->client_rate);
    struct ledger_line_in lines[5] = {
        {.ledger_account_id = s->liquidity, .debit = true, .amount = c->sell_amount,
         .currency = c->sell_currency, .description = "sold to the liquidity provider"},
        {.ledger_account_id = s->cash, .debit = false, .amount = c->sell_amount,
         .currency = c->sell_currency, .description = "paid out of FX cash"},
        {.ledger_account_id = b->cash, .debit = true, .amount = c->buy_amount,
         .currency = c->buy_currency, .description = "bought into FX cash"},
        {.ledger_account_id = b->liquidity, .debit = false, .amount = c->buy_amount + spread,
         .currency = c->buy_currency, .description = "bought from the liquidity provider at mid"},
        {.ledger_account_id = b->spread, .debit = true, .amount = spread,
         .currency = c->buy_currency, .description = "spread paid"},
    };
    struct ledger_entry_in e = {.description = desc, .effective_date = c->value_date,
                                .source = "conversion", .source_id = c->id, .lines = lines,
                                .n_lines = spread > 0 ? 5 : 4};
    if (storage_nested_begin(POSTING_PART) != 0)
        return -1;
    int rc = ledger_post_new(r, &e, entry_id);
    if (rc == 0) {
        log_warn("conversions: the entry of %s was refused: %d %s: %s%s%s", c->id, r->status,
                 r->problem_code ? r->problem_code : "-",
                 r->problem_detail ? r->problem_detail : "", r->verr.count > 0 ? " at " : "",
                 r->verr.count > 0 ? r->verr.items[0].pointer : "");
        req_problem_clear(r);
        verr_init(&r->verr, &r->arena);
    }
    if (storage_nested_end(POSTING_PART, rc == 1) != 0)
        return -1;
    return rc;
}

/* One due conversion, in the writer's transaction: settled when funded, else overdue. 0 / -1. */
static int settle(struct job_step *st, struct fx_conversion *x)
{
    struct req *r = &st->r;
    struct fx_conversion *c = x;
    const char *before = fx_conversion_status_str(c->status);
    struct ledger_fx_accounts s, b;
    int usable = ledger_fx_accounts(r, c->sell_currency, &s);
    if (usable > 0)
        usable = ledger_fx_accounts(r, c->buy_currency, &b);
    if (usable < 0)
        return -1;
    int64_t available = 0;
    int found = usable ? ledger_account_available(r, s.cash, &available) : 0;
    if (found < 0)
        return -1;
    const char *entry_id = NULL;
    int posted = 0;
    if (found && available >= c->sell_amount && (posted = post(r, c, &s, &b, &entry_id)) < 0)
        return -1;
    if (posted == 1) {
        char now[40];
        format_time_rfc3339(st->now, now, sizeof now);
        c->status = FX_CONVERSION_STATUS_SETTLED;
        c->settled_at = arena_strdup(&r->arena, now);
        c->has_settled_at = true;
        c->ledger_transaction_id = entry_id;
        c->has_ledger_transaction_id = true;
        const char *detail = arena_printf(&r->arena, "ledger entry %s", entry_id);
        if (conversions_save_settlement(r, x, "fx_conversion.settled", before, detail) < 0)
            return -1;
        st->moved = arena_printf(&r->arena, "%s -> settled: %s", before, detail);
        return 0;
    }
    if (c->status == FX_CONVERSION_STATUS_OVERDUE)
        return 0; /* still not funded (or not postable): looked at again next round */
    const char *why =
        !usable ? "the FX accounts cannot be used (logged)"
        : posted == 0 && found && available >= c->sell_amount
            ? "the ledger refused the entry (logged)"
            : arena_printf(&r->arena, "FX cash of %s available %lld, needs %lld",
                           c->sell_currency, (long long)available, (long long)c->sell_amount);
    c->status = FX_CONVERSION_STATUS_OVERDUE;
    if (conversions_save_settlement(r, x, "fx_conversion.overdue", before, why) < 0)
        return -1;
    st->moved = arena_printf(&r->arena, "%s -> overdue: %s", before, why);
    return 0;
}

/* On the writer, in its transaction, the conversion claimed: settles it when it is still due
 * (not cancelled or settled meanwhile, its cut-off reached). */
static int step_work(struct job_step *st)
{
    struct req *r = &st->r;
    struct fx_conversion *x = arena_alloc(&r->arena, sizeof *x);
    int found = resource_load(r, &rows_fx_conversion, st->id, x);
    if (found == RESOURCE_FAILED)
        return -1;
    char now[40];
    format_time_rfc3339(st->now, now, sizeof now);
    if (found == RESOURCE_MISSING ||
        (x->status != FX_CONVERSION_STATUS_SCHEDULED &&
         x->status != FX_CONVERSION_STATUS_OVERDUE) ||
        strcmp(x->settlement_cutoff_at, now) > 0)
        return 0; /* cancelled or settled meanwhile */
    return settle(st, x);
}

static struct job_step steps[BATCH];
static struct job_steps due =
    JOB_STEPS_INIT("conversions settlement", "fx_conversions", step_work, steps, BATCH);
/* Where the next round starts (cut-off, id): overdue conversions stay due, so each round
 * goes on after the last one's, and starts over once a round reaches the end. */
static char after_cutoff[40], after_id[40];

/* The round's reading part: the due conversions after the last round's, at most BATCH. */
static int settle_pick(void)
{
    int64_t now_ms = clock_now_ms();
    char now[40];
    format_time_rfc3339(now_ms, now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "SELECT id, workspace_id, settlement_cutoff_at FROM fx_conversions "
        "WHERE status IN ('scheduled', 'overdue') AND settlement_cutoff_at <= ?1 "
        "AND (settlement_cutoff_at > ?2 OR (settlement_cutoff_at = ?2 AND id > ?3)) "
        "ORDER BY settlement_cutoff_at, id LIMIT ?4");
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, after_cutoff);
    db_bind_text(st, 3, after_id);
    db_bind_int64(st, 4, BATCH);
    job_steps_reset(&due);
    int rc;
    struct job_step *s;
    while ((rc = db_step(st)) == DB_ROW &&
           (s = job_steps_add(&due, db_column_text(st, 0), db_column_text(st, 1), now_ms))) {
        snprintf(after_cutoff, sizeof after_cutoff, "%s", db_column_text(st, 2));
        snprintf(after_id, sizeof after_id, "%s", s->id);
    }
    db_reset(st);
    if (rc != DB_DONE && rc != DB_ROW) {
        log_error("conversions: cannot read the due conversions: %s", storage_errmsg());
        return -1;
    }
    if (due.n < BATCH) /* the end reached: the next round starts over */
        after_cutoff[0] = after_id[0] = '\0';
    return due.n;
}

/* The round's steps, handed to the writer; waits until each has ended. */
static int settle_act(void)
{
    return job_steps_run(&due);
}

struct job conversions_settlement_job(const struct config *c)
{
    struct job j = {.name = "fx-settlement", .run = settle_pick, .act = settle_act,
                    .batch = BATCH, .period_ms = c->settlement_interval_ms};
    return j;
}
