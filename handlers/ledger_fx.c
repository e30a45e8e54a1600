/* The ledger's FX accounts (handlers/ledger_posting.h: ledger_fx_accounts,
 * ledger_account_available), through which the conversions API posts its settlements: per
 * currency a cash account FXC-<CCY> (asset: what the workspace holds for conversions; its
 * available balance funds a conversion's sell side), a liquidity account FXL-<CCY> (liability:
 * the liquidity provider's side of each leg, at the mid rate) and a spread account FXS-<CCY>
 * (expense: the spread paid). A client may create them first with its own names (found by
 * code); otherwise they are created at first use, through ledger_accounts.c's
 * ledger_account_insert (the only writer of ledger_accounts), each audited. */
#include <string.h>

#include "handlers/ledger.h"
#include "handlers/ledger_posting.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

struct fx_kind {
    const char *prefix, *name;
    enum ledger_classification classification;
    enum ledger_direction normal;
};
static const struct fx_kind KINDS[3] = {
    {"FXC", "FX cash", LEDGER_CLASSIFICATION_ASSET, LEDGER_DIRECTION_DEBIT},
    {"FXL", "FX liquidity", LEDGER_CLASSIFICATION_LIABILITY, LEDGER_DIRECTION_CREDIT},
    {"FXS", "FX spread", LEDGER_CLASSIFICATION_EXPENSE, LEDGER_DIRECTION_DEBIT},
};

/* The account of kind k in currency into *id: found by its code (1, or 0 when it is in another
 * currency or archived: logged), else created (1); -1 failure. */
static int fx_account(struct req *r, const struct fx_kind *k, const char *currency,
                      int exponent, const char **id)
{
    const char *code = arena_printf(&r->arena, "%s-%s", k->prefix, currency);
    struct db_stmt *st = storage_prepare("SELECT id, currency, status FROM ledger_accounts "
                                         "WHERE workspace_id = ?1 AND code = ?2");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, code);
    int rc = db_step(st);
    bool usable = false;
    if (rc == DB_ROW) {
        *id = db_column_dup(&r->arena, st, 0);
        usable = strcmp(db_column_text(st, 1), currency) == 0 &&
                 strcmp(db_column_text(st, 2), "active") == 0;
    }
    db_reset(st);
    if (rc == DB_ROW) {
        if (!usable)
            log_warn("ledger: FX account %s of workspace %s is archived or not in %s", code,
                     r->principal.workspace_id, currency);
        return usable ? 1 : 0;
    }
    if (rc != DB_DONE) {
        log_error("ledger: looking up FX account %s failed: %s", code, storage_errmsg());
        return -1;
    }
    struct ledger_account_row *a = arena_alloc(&r->arena, sizeof *a);
    resource_new(r, &rows_ledger_account, a);
    a->obj.code = code;
    a->obj.name = arena_printf(&r->arena, "%s %s", k->name, currency);
    a->obj.classification = k->classification;
    a->obj.normal_balance = k->normal;
    a->obj.currency = currency;
    a->obj.currency_exponent = exponent;
    a->obj.status = LEDGER_ACCOUNT_STATUS_ACTIVE;
    int inserted = ledger_account_insert(r, a);
    if (inserted <= 0) /* 0: the code was taken after all (it was not a moment ago) */
        return inserted < 0 ? -1 : 0;
    *id = a->obj.id;
    return audit_record(r, "ledger_account.created", "ledger_account", a->obj.id, NULL, "active",
                        "FX account created at its first use by a conversion") == 0
               ? 1
               : -1;
}

int ledger_fx_accounts(struct req *r, const char *currency, struct ledger_fx_accounts *out)
{
    int exponent = format_currency_exponent(currency);
    if (exponent < 0) {
        log_warn("ledger: no FX accounts for %s (no ISO 4217 minor unit)", currency);
        return 0;
    }
    const char **ids[3] = {&out->cash, &out->liquidity, &out->spread};
    for (int i = 0; i < 3; i++) {
        int rc = fx_account(r, &KINDS[i], currency, exponent, ids[i]);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

int ledger_account_available(struct req *r, const char *account_id, int64_t *available)
{
    struct ledger_account_row *row = arena_alloc(&r->arena, sizeof *row);
    int found = resource_load(r, &rows_ledger_account, account_id, row);
    if (found != RESOURCE_FOUND)
        return found == RESOURCE_MISSING ? 0 : -1;
    ledger_account_balances(r, row);
    *available = row->obj.balances->available->amount;
    return 1;
}
