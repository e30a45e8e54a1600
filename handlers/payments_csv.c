/* The payments API: the CSV representation of a page of payments (GET /v1/payments with
 * Accept: text/csv): one header row, one row per payment, RFC 4180 quoting. */
#include "generated/payments_api.h"

#include <string.h>

#include "handlers/payments.h"
#include "runtime/arena.h"

struct csv {
    struct arena *a;
    char *p;
    size_t len, cap;
};

static void csv_put(struct csv *c, const char *s, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *p = arena_alloc(c->a, cap);
        if (c->len)
            memcpy(p, c->p, c->len);
        c->p = p;
        c->cap = cap;
    }
    memcpy(c->p + c->len, s, n);
    c->len += n;
    c->p[c->len] = '\0';
}

/* One cell (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled;
 * a cell a spreadsheet would read as a formula (starting with = + - @, tab or CR) gets a
 * leading ' (OWASP CSV injection). NULL is an empty cell. */
static void csv_cell(struct csv *c, bool first, const char *v)
{
    if (!first)
        csv_put(c, ",", 1);
    if (!v)
        return;
    bool formula = v[0] && strchr("=+-@\t\r", v[0]);
    bool quote = strpbrk(v, ",\"\r\n") != NULL;
    if (quote)
        csv_put(c, "\"", 1);
    if (formula)
        csv_put(c, "'", 1);
    for (const char *s = v; *s; s++) {
        csv_put(c, s, 1);
        if (*s == '"')
            csv_put(c, "\"", 1); /* doubled */
    }
    if (quote)
        csv_put(c, "\"", 1);
}

static const char *opt(bool has, const char *v)
{
    return has ? v : NULL;
}

/* The page as CSV: one header row, one row per payment, CRLF line ends. */
void pay_csv(struct req *r, const struct payment_page *page, const char **text, size_t *len)
{
    static const char *const head[] = {
        "id", "created_at", "updated_at", "status", "amount", "currency", "type", "priority",
        "originating_account", "beneficiary_id", "effective_date", "remittance_information",
        "external_id", "batch_id", "failure_code", "failure_reason", "rail_reference", "version",
    };
    struct csv c = { .a = &r->arena };
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        csv_cell(&c, i == 0, head[i]);
    csv_put(&c, "\r\n", 2);
    for (size_t i = 0; i < page->data_count; i++) {
        const struct payment *p = &page->data[i];
        const char *row[] = {
            p->id, p->created_at, p->updated_at, payment_status_str(p->status),
            arena_printf(&r->arena, "%lld", (long long)p->amount), p->currency,
            payment_type_str(p->type), payment_priority_str(p->priority),
            p->originating_account, p->beneficiary_id, p->effective_date,
            opt(p->has_remittance_information, p->remittance_information),
            opt(p->has_external_id, p->external_id), opt(p->has_batch_id, p->batch_id),
            opt(p->has_failure_code, p->failure_code),
            opt(p->has_failure_reason, p->failure_reason),
            opt(p->has_rail_reference, p->rail_reference),
            arena_printf(&r->arena, "%lld", (long long)p->version),
        };
        for (size_t k = 0; k < sizeof row / sizeof row[0]; k++)
            csv_cell(&c, k == 0, row[k]);
        csv_put(&c, "\r\n", 2);
    }
    *text = c.p;
    *len = c.len;
}
