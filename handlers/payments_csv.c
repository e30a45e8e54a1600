/* The payments API: the CSV representation of a page of payments (GET /v1/payments with
 * Accept: text/csv): one header row, one row per payment (runtime/csv.h: RFC 4180 quoting,
 * CRLF row ends, formulas defused). */
#include "generated/payments_api.h"

#include "handlers/payments.h"
#include "runtime/csv.h"

static const char *opt(bool has, const char *v)
{
    return has ? v : NULL;
}

/* The page as CSV: one header row, one row per payment, CRLF line ends. */
void pay_csv(struct req *r, const struct payment_page *page, const char **text, size_t *len)
{
    static const char *const head[] = {
        "id",
        "created_at",
        "updated_at",
        "status",
        "amount",
        "currency",
        "type",
        "priority",
        "originating_account",
        "beneficiary_id",
        "effective_date",
        "remittance_information",
        "external_id",
        "batch_id",
        "failure_code",
        "failure_reason",
        "rail_reference",
        "version",
    };
    struct csv c;
    csv_init(&c, &r->arena);
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        csv_cell(&c, head[i]);
    csv_row_end(&c);
    for (size_t i = 0; i < page->data_count; i++) {
        const struct payment *p = &page->data[i];
        csv_cell(&c, p->id);
        csv_cell(&c, p->created_at);
        csv_cell(&c, p->updated_at);
        csv_cell(&c, payment_status_str(p->status));
        csv_int(&c, p->amount);
        csv_cell(&c, p->currency);
        csv_cell(&c, payment_type_str(p->type));
        csv_cell(&c, payment_priority_str(p->priority));
        csv_cell(&c, p->originating_account);
        csv_cell(&c, p->beneficiary_id);
        csv_cell(&c, p->effective_date);
        csv_cell(&c, opt(p->has_remittance_information, p->remittance_information));
        csv_cell(&c, opt(p->has_external_id, p->external_id));
        csv_cell(&c, opt(p->has_batch_id, p->batch_id));
        csv_cell(&c, opt(p->has_failure_code, p->failure_code));
        csv_cell(&c, opt(p->has_failure_reason, p->failure_reason));
        csv_cell(&c, opt(p->has_rail_reference, p->rail_reference));
        csv_int(&c, p->version);
        csv_row_end(&c);
    }
    *text = csv_text(&c, len);
}
