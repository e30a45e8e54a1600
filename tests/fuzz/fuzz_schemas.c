/* libFuzzer: the generated validators and JSON codecs of the schemas of planned APIs, called
 * directly (generated/schemas_sheets_*.c, schemas_banking_*.c). fuzz_dispatch cannot reach
 * them: a planned operation's dispatcher answers 501 before it parses anything, so the sheet
 * ranges (arrays of arrays: SheetValueMatrix, SheetValuesWrite) and the bank statements would
 * otherwise meet no fuzz input until the operations are built. Input: byte 0 picks the schema
 * (modulo the table below), the rest is a JSON document. Properties: never crashes; the error
 * list stays capped; a value valid as a request decodes; a value valid as a response decodes,
 * and what it encodes to is a valid response again that encodes to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "generated/routes.h"
#include "generated/schemas_banking.h"
#include "generated/schemas_sheets.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"
#include "runtime/verr.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Every schema of the two files with a decoder (tests/fuzz/seeds.py reads this list, in this
 * order, to write each one's examples with its index). */
#define SCHEMAS(X)                                                                             \
    X(sheet) X(sheet_cell) X(sheet_cell_input) X(sheet_cell_input_bool)                        \
    X(sheet_cell_input_formula) X(sheet_cell_input_number) X(sheet_cell_input_string)          \
    X(sheet_cell_range) X(sheet_cell_update) X(sheet_cells_update) X(sheet_create)             \
    X(sheet_function_balance) X(sheet_function_call) X(sheet_function_evaluation)              \
    X(sheet_function_fx) X(sheet_function_results) X(sheet_page) X(sheet_share)                \
    X(sheet_share_list) X(sheet_share_list_update) X(sheet_tab) X(sheet_tab_input)             \
    X(sheet_update) X(sheet_value) X(sheet_value_bool) X(sheet_value_error)                    \
    X(sheet_value_money) X(sheet_value_number) X(sheet_value_range) X(sheet_value_string)      \
    X(sheet_values_write) X(sheet_version) X(sheet_version_page) X(sheet_write_result)         \
    X(bank_account) X(bank_account_balance) X(bank_account_page) X(bank_account_servicer)      \
    X(bank_balance) X(bank_balance_history_page) X(bank_connection)                            \
    X(bank_connection_create) X(bank_connection_error) X(bank_connection_page)                 \
    X(bank_connection_reauthentication) X(bank_connection_sync) X(bank_connection_update)      \
    X(bank_credit_line) X(bank_daily_balance) X(bank_institution) X(bank_statement)            \
    X(bank_statement_balance_check) X(bank_statement_page) X(bank_transaction)                 \
    X(bank_transaction_code) X(bank_transaction_page) X(bank_transaction_reconciliation)       \
    X(bank_transaction_sync_page) X(removed_bank_transaction)

typedef void validate_fn(const struct json_value *v, const char *ptr, int mode,
                         struct verr_list *l);
/* decodes v (which the validator accepted) and encodes it again: the text, or NULL when the
 * decoder refused */
typedef char *recode_fn(struct arena *a, const struct json_value *v, size_t *len);

#define RECODE(name)                                                                           \
    static char *recode_##name(struct arena *a, const struct json_value *v, size_t *len)       \
    {                                                                                          \
        struct name *x = arena_alloc(a, sizeof *x);                                            \
        memset(x, 0, sizeof *x);                                                               \
        if (decode_##name(a, v, x) != 0)                                                       \
            return NULL;                                                                       \
        struct jsonw w;                                                                        \
        jsonw_init(&w);                                                                        \
        encode_##name(&w, x);                                                                  \
        char *text = jsonw_take(&w, len);                                                      \
        jsonw_release(&w);                                                                     \
        return text;                                                                           \
    }
SCHEMAS(RECODE)

#define ENTRY(name) { validate_##name, recode_##name },
static const struct {
    validate_fn *validate;
    recode_fn *recode;
} schemas[] = { SCHEMAS(ENTRY) };

static int errors(const struct json_value *v, validate_fn *validate, int mode, struct arena *a)
{
    struct verr_list l;
    verr_init(&l, a);
    validate(v, "", mode, &l);
    if (l.count > VERR_MAX)
        abort();
    return l.count;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        char err[256];
        if (routes_init(err, sizeof err) != 0) /* compiles the patterns the validators use */
            abort();
        ready = 1;
    }
    if (size < 1)
        return 0;
    validate_fn *validate = schemas[data[0] % (sizeof schemas / sizeof schemas[0])].validate;
    recode_fn *recode = schemas[data[0] % (sizeof schemas / sizeof schemas[0])].recode;
    struct arena a;
    struct json_value *v = NULL, *again = NULL;
    struct json_error err;
    arena_init(&a);
    if (json_parse(&a, (const char *)data + 1, size - 1, &v, &err) != 0)
        goto out;
    size_t n1 = 0, n2 = 0;
    if (errors(v, validate, VALIDATE_REQUEST, &a) == 0) {
        char *text = recode(&a, v, &n1);
        if (!text)
            abort();
        free(text);
    }
    if (errors(v, validate, VALIDATE_RESPONSE, &a) == 0) {
        char *one = recode(&a, v, &n1);
        if (!one || json_parse(&a, one, n1, &again, &err) != 0 ||
            errors(again, validate, VALIDATE_RESPONSE, &a) != 0)
            abort();
        char *two = recode(&a, again, &n2);
        if (!two || n1 != n2 || memcmp(one, two, n1) != 0)
            abort();
        free(one);
        free(two);
    }
out:
    arena_release(&a);
    return 0;
}
