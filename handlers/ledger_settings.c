/* The ledger API: the posting settings (GET/PUT /v1/ledger/settings: where settled payments
 * post) and the payment postings they drive (handlers/ledger_posting.h: ledger_payment_settled,
 * ledger_payment_returned, called by the settlement worker, handlers/payments_settlement.c).
 * The only file that writes ledger_settings.
 *
 * Defaults: a workspace whose settings were never written reads them as enabled with no
 * mappings; the first payment that settles in a currency or from an originating account with
 * no mapping creates the account it needs (ledger_account_insert) and writes the settings
 * with the mapping. That goes on while the settings are the server's (client_written 0); once a
 * client wrote them (PUT), they rule: a missing mapping or enabled false posts nothing. */
#include <stdio.h>
#include <string.h>

#include "handlers/ledger.h"
#include "handlers/ledger_posting.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

/* How many codes a default account tries before giving up (1000..1099, 2100-XXX..2199-XXX):
 * a chart that took them all was built by hand, and the payment then waits unposted. */
#define DEFAULT_CODE_TRIES 100

/* ---- the settings ------------------------------------------------------------------------ */

/* r's workspace's settings (412 for a stale if_match, NULL: none). Never written, they are the
 * defaults: enabled, no mappings, version 1 (the first save makes 2, so an If-Match read
 * before it no longer matches), updated_at the epoch (there was no update), as the approval
 * policy's defaults are. 1 / 0 answered / -1. */
static int load_settings(struct req *r, const char *if_match, struct ledger_settings_row *s,
                         bool *stored)
{
    bool set = false;
    int rc = resource_load_singleton(r, &rows_ledger_settings, if_match, s, &set);
    if (rc != 1)
        return rc;
    s->obj.workspace_id = r->principal.workspace_id; /* computed: the key, not read */
    if (!set) {
        struct ledger_payment_posting *pp = arena_alloc(&r->arena, sizeof *pp);
        pp->enabled = true;
        s->obj.payment_posting = pp;
        s->obj.updated_at = "1970-01-01T00:00:00.000Z";
        s->client_written = 0;
    }
    if (stored)
        *stored = set;
    return 1;
}

/* The payment posting as JSON text (the audit record's before and after), in r's arena. */
static const char *posting_json(struct req *r, const struct ledger_payment_posting *pp)
{
    struct jsonw w;
    jsonw_init(&w);
    encode_ledger_payment_posting(&w, pp);
    return resource_json_text(&r->arena, &w);
}

/* Checks the account a mapping at base names: found in the workspace, active, of an allowed
 * classification (cash: asset; clearing: liability or asset) and, for a clearing account, in
 * the mapping's currency. Violations go to r->verr at base/ledger_account_id. 0 / -1. */
static int check_account(struct req *r, const char *base, const char *id, bool cash,
                         const char *currency)
{
    struct ledger_account_row *a = arena_alloc(&r->arena, sizeof *a);
    int found = resource_load(r, &rows_ledger_account, id, a);
    if (found == RESOURCE_FAILED)
        return -1;
    if (found == RESOURCE_MISSING) {
        verr_add(&r->verr, base, "ledger_account_id", "ledger_account_not_found",
                 "No ledger account %s in this workspace.", id);
        return 0;
    }
    enum ledger_classification c = a->obj.classification;
    if (a->obj.status == LEDGER_ACCOUNT_STATUS_ARCHIVED)
        verr_add(&r->verr, base, "ledger_account_id", "account_archived",
                 "Ledger account %s is archived.", id);
    if (cash && c != LEDGER_CLASSIFICATION_ASSET)
        verr_add(&r->verr, base, "ledger_account_id", "classification_mismatch",
                 "A cash account must be an asset; %s is %s.", id, ledger_classification_str(c));
    if (!cash && c != LEDGER_CLASSIFICATION_LIABILITY && c != LEDGER_CLASSIFICATION_ASSET)
        verr_add(&r->verr, base, "ledger_account_id", "classification_mismatch",
                 "A payee clearing account must be a liability or an asset; %s is %s.", id,
                 ledger_classification_str(c));
    if (currency && strcmp(a->obj.currency, currency) != 0)
        verr_add(&r->verr, base, "ledger_account_id", "currency_mismatch",
                 "Ledger account %s is in %s, not %s.", id, a->obj.currency, currency);
    return 0;
}

/* The checks of PUT beyond the schema, into r->verr. 0 / -1. */
static int check_posting(struct req *r, const struct ledger_payment_posting *pp)
{
    for (size_t i = 0; i < pp->cash_accounts_count; i++) {
        const struct ledger_cash_account_mapping *m = &pp->cash_accounts[i];
        const char *base = arena_printf(&r->arena, "/payment_posting/cash_accounts/%zu", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(pp->cash_accounts[j].originating_account, m->originating_account) == 0) {
                verr_add(&r->verr, base, "originating_account", "duplicate_originating_account",
                         "Originating account %s is mapped already (cash account %zu).",
                         m->originating_account, j);
                break;
            }
        /* The server keeps no bank accounts yet (the banking API is not built): no id can name
         * one, so any given is not found, as the spec says; and with no bank account there is
         * no currency of it to compare the cash account's with. */
        if (m->has_bank_account_id)
            verr_add(&r->verr, base, "bank_account_id", "bank_account_not_found",
                     "No bank account %s in this workspace.", m->bank_account_id);
        if (check_account(r, base, m->ledger_account_id, true, NULL) != 0)
            return -1;
    }
    for (size_t i = 0; i < pp->payee_clearing_accounts_count; i++) {
        const struct ledger_clearing_account_mapping *m = &pp->payee_clearing_accounts[i];
        const char *base =
            arena_printf(&r->arena, "/payment_posting/payee_clearing_accounts/%zu", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(pp->payee_clearing_accounts[j].currency, m->currency) == 0) {
                verr_add(&r->verr, base, "currency", "duplicate_currency",
                         "Currency %s is mapped already (clearing account %zu).", m->currency,
                         j);
                break;
            }
        if (check_account(r, base, m->ledger_account_id, false, m->currency) != 0)
            return -1;
    }
    return 0;
}

int ledger_get_ledger_settings(struct req *r, const struct ledger_get_ledger_settings_request *in,
                               struct ledger_get_ledger_settings_response *out)
{
    (void)in;
    struct ledger_settings_row *s = arena_alloc(&r->arena, sizeof *s);
    int rc = load_settings(r, NULL, s, NULL);
    if (rc <= 0)
        return rc;
    out->status = 200;
    out->body_200 = &s->obj;
    return 0;
}

int ledger_put_ledger_settings(struct req *r, const struct ledger_put_ledger_settings_request *in,
                               struct ledger_put_ledger_settings_response *out)
{
    struct ledger_settings_row *s = arena_alloc(&r->arena, sizeof *s);
    /* If-Match is required (x-if-match: the dispatcher answered 428 without it). */
    int rc = load_settings(r, in->has_if_match ? in->if_match : NULL, s, NULL);
    if (rc <= 0)
        return rc;
    /* before: what GET showed, the defaults included */
    const char *before = posting_json(r, s->obj.payment_posting);
    if (check_posting(r, in->body->payment_posting) != 0)
        return -1;
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The posting settings name accounts they cannot use.");
        return 0;
    }
    s->obj.payment_posting = in->body->payment_posting;
    s->client_written = 1; /* from now on they rule: no more default accounts */
    if ((rc = resource_save_singleton(r, &rows_ledger_settings, s)) <= 0)
        return rc;
    if (audit_change(r, "ledger.settings.updated", "ledger_settings", r->principal.workspace_id,
                     before, posting_json(r, s->obj.payment_posting), NULL) != 0)
        return -1;
    out->status = 200;
    out->body_200 = &s->obj;
    return 0;
}

/* ---- the payment postings ---------------------------------------------------------------- */

/* A posting is a part of the worker's step undone alone (storage_nested_begin): a refused
 * posting takes back what it wrote before the refusal (the default accounts and the
 * settings made for it) while the payment's own move stays. */
#define POSTING_PART "ledger_payment_posting"

/* A posting rule's refusal, logged and taken off r (the worker's request answers nobody; its
 * next steps must not find a problem set). */
static void refused(struct req *r, const char *what, const char *payment_id)
{
    log_warn("ledger: %s of payment %s not posted: %d %s: %s%s%s", what, payment_id, r->status,
             r->problem_code ? r->problem_code : "-",
             r->problem_detail ? r->problem_detail : "", r->verr.count > 0 ? " at " : "",
             r->verr.count > 0 ? r->verr.items[0].pointer : "");
    req_problem_clear(r);
}

/* Creates the default cash account (cash) of originating account orig in currency, or the
 * default payee clearing account of currency, at the first free code: 1 created (*id), 0 none
 * (an unknown currency or no free code: logged), -1 failure. */
static int create_default(struct req *r, bool cash, const char *currency, const char *orig,
                          const char **id)
{
    int exponent = format_currency_exponent(currency);
    if (exponent < 0) {
        log_warn("ledger: no default account for currency %s (no ISO 4217 exponent)", currency);
        return 0;
    }
    struct ledger_account_row *a = arena_alloc(&r->arena, sizeof *a);
    resource_new(r, &rows_ledger_account, a);
    a->obj.name = cash ? arena_printf(&r->arena, "Cash at bank: %s", orig)
                       : arena_printf(&r->arena, "Payee clearing %s", currency);
    a->obj.classification = cash ? LEDGER_CLASSIFICATION_ASSET : LEDGER_CLASSIFICATION_LIABILITY;
    a->obj.normal_balance = cash ? LEDGER_DIRECTION_DEBIT : LEDGER_DIRECTION_CREDIT;
    a->obj.currency = currency;
    a->obj.currency_exponent = exponent;
    a->obj.status = LEDGER_ACCOUNT_STATUS_ACTIVE;
    struct ledger_account_constraints *k = arena_alloc(&r->arena, sizeof *k);
    k->has_debits_must_not_exceed_credits = k->has_credits_must_not_exceed_debits = true;
    a->obj.constraints = k;
    for (int n = 0; n < DEFAULT_CODE_TRIES; n++) {
        a->obj.code = cash ? arena_printf(&r->arena, "%d", 1000 + n)
                           : arena_printf(&r->arena, "%d-%s", 2100 + n, currency);
        /* ledger_account_insert looks for the code before it inserts (0: taken), so no insert
         * fails on the UNIQUE constraint (on PostgreSQL a failed statement dooms the step) */
        int rc = ledger_account_insert(r, a);
        if (rc != 0) {
            if (rc == 1)
                *id = a->obj.id;
            return rc;
        }
    }
    log_warn("ledger: no free code for a default %s account in %s",
             cash ? "cash" : "payee clearing", currency);
    return 0;
}

/* The mapped accounts of p into *cash and *clearing (NULL: none), creating the defaults it
 * lacks while the settings are the server's (then written, audited as the system's change).
 * 1 both known, 0 not (posting disabled or a mapping missing: nothing to post), -1 failure. */
static int accounts_of(struct req *r, const struct ledger_payment *p, const char **cash,
                       const char **clearing)
{
    struct ledger_settings_row *s = arena_alloc(&r->arena, sizeof *s);
    if (load_settings(r, NULL, s, NULL) != 1)
        return -1;
    const struct ledger_payment_posting *pp = s->obj.payment_posting;
    if (!pp->enabled)
        return 0;
    *cash = *clearing = NULL;
    for (size_t i = 0; i < pp->cash_accounts_count; i++)
        if (strcmp(pp->cash_accounts[i].originating_account, p->originating_account) == 0)
            *cash = pp->cash_accounts[i].ledger_account_id;
    for (size_t i = 0; i < pp->payee_clearing_accounts_count; i++)
        if (strcmp(pp->payee_clearing_accounts[i].currency, p->currency) == 0)
            *clearing = pp->payee_clearing_accounts[i].ledger_account_id;
    if (*cash && *clearing)
        return 1;
    if (s->client_written)
        return 0; /* the client's settings rule */
    const char *before = posting_json(r, pp);
    struct ledger_payment_posting *next = arena_alloc(&r->arena, sizeof *next);
    *next = *pp;
    int rc;
    if (!*cash) {
        if ((rc = create_default(r, true, p->currency, p->originating_account, cash)) <= 0)
            return rc;
        struct ledger_cash_account_mapping *m =
            arena_alloc(&r->arena, (pp->cash_accounts_count + 1) * sizeof *m);
        if (pp->cash_accounts_count)
            memcpy(m, pp->cash_accounts, pp->cash_accounts_count * sizeof *m);
        m[pp->cash_accounts_count] = (struct ledger_cash_account_mapping){
            .originating_account = p->originating_account, .ledger_account_id = *cash};
        next->cash_accounts = m;
        next->cash_accounts_count = pp->cash_accounts_count + 1;
    }
    if (!*clearing) {
        if ((rc = create_default(r, false, p->currency, NULL, clearing)) <= 0)
            return rc;
        struct ledger_clearing_account_mapping *m =
            arena_alloc(&r->arena, (pp->payee_clearing_accounts_count + 1) * sizeof *m);
        if (pp->payee_clearing_accounts_count)
            memcpy(m, pp->payee_clearing_accounts, pp->payee_clearing_accounts_count * sizeof *m);
        m[pp->payee_clearing_accounts_count] = (struct ledger_clearing_account_mapping){
            .currency = p->currency, .ledger_account_id = *clearing};
        next->payee_clearing_accounts = m;
        next->payee_clearing_accounts_count = pp->payee_clearing_accounts_count + 1;
    }
    s->obj.payment_posting = next;
    /* The worker writes in its workspace's serialized transaction: no other writer came first
     * (a 412 here would be a bug, and fails the step). */
    if ((rc = resource_save_singleton(r, &rows_ledger_settings, s)) != 1)
        return -1;
    if (audit_record(r, "ledger.settings.defaults_added", "ledger_settings",
                     r->principal.workspace_id, before, posting_json(r, next),
                     arena_printf(&r->arena, "default accounts for payment %s", p->id)) != 0)
        return -1;
    return 1;
}

/* ledger_payment_settled's work inside its part: 1 posted, 0 nothing posted (*what says why
 * when a posting rule refused it, r answered), -1 failure. */
static int post_settlement(struct req *r, const struct ledger_payment *p, bool *rule)
{
    const char *cash = NULL, *clearing = NULL;
    int rc = accounts_of(r, p, &cash, &clearing);
    if (rc <= 0)
        return rc;
    const char *desc = p->description
                           ? p->description
                           : arena_printf(&r->arena, "Settlement of payment %s", p->id);
    struct ledger_line_in lines[2] = {
        {.ledger_account_id = clearing, .debit = true, .amount = p->amount,
         .currency = p->currency, .description = desc},
        {.ledger_account_id = cash, .debit = false, .amount = p->amount, .currency = p->currency,
         .description = desc},
    };
    struct ledger_entry_in e = {.description = desc, .effective_date = p->effective_date,
                                .source = "payment", .source_id = p->id, .lines = lines,
                                .n_lines = 2};
    const char *entry_id = NULL;
    rc = ledger_post_new(r, &e, &entry_id);
    if (rc == 0)
        *rule = true;
    else if (rc == 1)
        log_info("ledger: payment %s settled as entry %s", p->id, entry_id);
    return rc;
}

int ledger_payment_settled(struct req *r, const struct ledger_payment *p)
{
    if (p->amount <= 0)
        return 0; /* nothing moved (the payments API refuses such amounts anyway) */
    if (storage_nested_begin(POSTING_PART) != 0)
        return -1;
    bool rule = false;
    int rc = post_settlement(r, p, &rule);
    if (rule)
        refused(r, "the settlement", p->id);
    /* Anything but a posting undoes the part: a refusal leaves no default account, no
     * settings and no balance behind; a failure fails the step anyway. */
    if (storage_nested_end(POSTING_PART, rc == 1) != 0)
        return -1;
    return rc;
}

int ledger_payment_returned(struct req *r, const char *payment_id, const char *effective_date)
{
    if (storage_nested_begin(POSTING_PART) != 0)
        return -1;
    const char *entry_id = NULL, *reversal_id = NULL;
    int rc = ledger_entry_of(r, "payment", payment_id, &entry_id);
    if (rc == 1) {
        rc = ledger_reverse_entry(r, entry_id, effective_date,
                                  arena_printf(&r->arena, "Return of payment %s", payment_id),
                                  &reversal_id);
        if (rc == 0)
            refused(r, "the return", payment_id);
        else if (rc == 1)
            log_info("ledger: return of payment %s reversed entry %s as %s", payment_id,
                     entry_id, reversal_id);
    }
    if (storage_nested_end(POSTING_PART, rc == 1) != 0)
        return -1;
    return rc;
}
