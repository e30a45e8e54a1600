/* libFuzzer: the golden small spec's generated code (tests/codegen/small/expected, with the
 * handlers of tests/codegen/small/handlers*.c), which has built operations and schemas with
 * what only planned operations of the real spec use: fuzz_dispatch cannot reach those (a
 * planned dispatcher answers 501 before it parses anything). The Makefile builds it with the
 * small spec's generated/ first on the include path (build/fuzz/small/generated).
 * Input: byte 0 = 0xff: the rest is a Thing (its arrays of arrays grid and cube, its map of
 * arrays groups, its maps index and tally), validated as a request and as a response and,
 * when valid as a response, decoded and encoded: the result must be a valid response that
 * encodes to the same bytes. Otherwise fuzz_dispatch.c's input and properties over the small
 * spec's dispatchers: text/plain and application/xml raw request bodies (POST
 * /exports/imports), negotiated CSV, text and PDF answers, array query parameters. */
#include "generated/schemas_things.h"
#include "runtime/jsonw.h"

#define LLVMFuzzerTestOneInput fuzz_dispatch_one
#include "tests/fuzz/fuzz_dispatch.c"
#undef LLVMFuzzerTestOneInput

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int thing_errors(const struct json_value *v, int mode, struct arena *a)
{
    struct verr_list l;
    verr_init(&l, a);
    validate_thing(v, "", mode, &l);
    if (l.count > VERR_MAX)
        abort();
    return l.count;
}

static char *recode_thing(struct arena *a, const struct json_value *v, size_t *len)
{
    struct thing *t = arena_alloc(a, sizeof *t);
    memset(t, 0, sizeof *t);
    if (decode_thing(a, v, t) != 0)
        return NULL;
    struct jsonw w;
    jsonw_init(&w);
    encode_thing(&w, t);
    char *text = jsonw_take(&w, len);
    jsonw_release(&w);
    return text;
}

static void fuzz_thing(const unsigned char *data, size_t size)
{
    struct arena a;
    struct json_value *v = NULL, *again = NULL;
    struct json_error err;
    arena_init(&a);
    if (json_parse(&a, (const char *)data, size, &v, &err) == 0) {
        (void)thing_errors(v, VALIDATE_REQUEST, &a);
        if (thing_errors(v, VALIDATE_RESPONSE, &a) == 0) {
            size_t n1 = 0, n2 = 0;
            char *one = recode_thing(&a, v, &n1);
            if (!one || json_parse(&a, one, n1, &again, &err) != 0 ||
                thing_errors(again, VALIDATE_RESPONSE, &a) != 0)
                abort();
            char *two = recode_thing(&a, again, &n2);
            if (!two || n1 != n2 || memcmp(one, two, n1) != 0)
                abort();
            free(one);
            free(two);
        }
    }
    arena_release(&a);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size >= 1 && data[0] == 0xff) {
        (void)fuzz_dispatch_one(data, 0); /* compiles the patterns once (routes_init) */
        fuzz_thing(data + 1, size - 1);
        return 0;
    }
    return fuzz_dispatch_one(data, size);
}
