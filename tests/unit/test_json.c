/* JSON parser and writer: RFC 8259 accept/reject tables (JSONTestSuite classics), error
 * offsets, exact integer conversion, UTF-8 rules, writer separators, escaping, round trips. */
#include "runtime/json.h"
#include "runtime/jsonw.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/unit.h"

struct doc {
    const char *text;
    size_t len; /* 0: strlen(text) */
};

#define DOC(s) { s, sizeof(s) - 1 }

static int parse(struct arena *a, struct doc d, struct json_value **v, struct json_error *e)
{
    return json_parse(a, d.text, d.len, v, e);
}

static void test_parser_accepts_valid_documents(void)
{
    static const struct doc ok[] = {
        DOC("0"), DOC("-0"), DOC("1"), DOC("-1"), DOC("1.5"), DOC("-0.0"), DOC("1e5"),
        DOC("1E+5"), DOC("1e-5"), DOC("0e0"), DOC("-0.0e-0"), DOC("123456789012345678901234567890"),
        DOC("1e999999999"), DOC("true"), DOC("false"), DOC("null"), DOC("\"\""), DOC("\"a\""),
        DOC("[]"), DOC("{}"), DOC(" [ 1 , 2 ] "), DOC("\t\n\r 1 \t\n\r"),
        DOC("{\"a\":{\"b\":[null,true,false,{}]}}"), DOC("[[],[[]],{\"\":[]}]"),
        DOC("\"\\u00e9\""), DOC("\"\\ud83d\\ude00\""), DOC("\"\\uDBFF\\uDFFF\""),
        DOC("\"\xc3\xa9\""), DOC("\"\xf0\x9f\x98\x80\""), DOC("\"\xef\xbf\xbf\""),
        DOC("\"\xf4\x8f\xbf\xbf\""), DOC("\"\x7f\""), DOC("\"\\/\\b\\f\\n\\r\\t\\\"\\\\\""),
        DOC("{\"a\":1,\"ab\":2,\"b\":3}"), DOC("{\"a\":1,\"A\":2}"),
        DOC("[\"\xe2\x80\xa8\"]"),
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct arena a;
        struct json_value *v = NULL;
        struct json_error e = { 0, NULL };
        arena_init(&a);
        int rc = parse(&a, ok[i], &v, &e);
        if (rc != 0)
            fprintf(stderr, "  rejected %s: %s at %zu\n", ok[i].text, e.msg, e.offset);
        CHECK(rc == 0 && v != NULL);
        arena_release(&a);
    }
}

static void test_parser_rejects_invalid_documents(void)
{
    static const struct doc bad[] = {
        DOC(""), DOC("   "), DOC("[1,]"), DOC("{\"a\":1,}"), DOC("[,1]"), DOC("[1,,2]"),
        DOC("01"), DOC("-01"), DOC("00"), DOC("1."), DOC(".1"), DOC("+1"), DOC("-"), DOC("1e"),
        DOC("1e+"), DOC("1.e5"), DOC("0x10"), DOC("NaN"), DOC("Infinity"), DOC("-Infinity"),
        DOC("[1 2]"), DOC("{\"a\" 1}"), DOC("{a:1}"), DOC("{'a':1}"), DOC("['a']"),
        DOC("{\"a\":1 \"b\":2}"), DOC("{\"a\"}"), DOC("{1:1}"), DOC("[1"), DOC("{"), DOC("["),
        DOC("]"), DOC("[1]]"), DOC("1 2"), DOC("tru"), DOC("truex"), DOC("nul"), DOC("True"),
        DOC("\"abc"), DOC("\"\\\""), DOC("\"\\x\""), DOC("\"\\u12\""), DOC("\"\\u12G4\""),
        DOC("\"\\ud800\""), DOC("\"\\udc00\""), DOC("\"\\ud800\\u0041\""), DOC("\"\\ud800x\""),
        DOC("\"\\udc00\\ud800\""), DOC("\"\\u0000\""), DOC("{\"\\u0000\":1}"), DOC("\"\x01\""),
        DOC("\"a\nb\""), DOC("\"\t\""), DOC("\"\x1f\""), DOC("\"\xc0\x80\""), DOC("\"\xc1\xbf\""),
        DOC("\"\xe0\x80\x80\""), DOC("\"\xf0\x80\x80\x80\""), DOC("\"\xed\xa0\x80\""),
        DOC("\"\xed\xbf\xbf\""), DOC("\"\xf4\x90\x80\x80\""), DOC("\"\xf5\x80\x80\x80\""),
        DOC("\"\xff\""), DOC("\"\x80\""), DOC("\"\xc3\""), DOC("\"\xe2\x82\""), DOC("\xef\xbb\xbf{}"),
        DOC("[1]\x00"), DOC("\x00"), DOC("[\"a\"]\xc3\xa9"), DOC("{\"a\":1,\"a\":2}"),
        DOC("{\"a\":1,\"\\u0061\":2}"), DOC("{\"a\":{\"b\":1,\"b\":1}}"), DOC("/* c */ 1"),
        DOC("[1] x"), DOC("\"\\u00e9"),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct arena a;
        struct json_value *v = NULL;
        struct json_error e = { 0, NULL };
        arena_init(&a);
        int rc = parse(&a, bad[i], &v, &e);
        if (rc != -1)
            fprintf(stderr, "  accepted case %zu: %s\n", i, bad[i].text);
        CHECK(rc == -1);
        CHECK(v == NULL);
        CHECK(e.msg != NULL && e.offset <= bad[i].len);
        arena_release(&a);
    }
}

struct error_case {
    struct doc d;
    size_t offset;
    const char *msg;
};

static void test_parse_errors_give_offset_and_reason(void)
{
    static const struct error_case cases[] = {
        { DOC(""), 0, "empty input" },
        { DOC("  \n"), 3, "empty input" },
        { DOC("[1,]"), 3, "unexpected character" },
        { DOC("01"), 1, "leading zero" },
        { DOC("[1] x"), 4, "trailing characters" },
        { DOC("{\"a\":1,\"a\":2}"), 7, "duplicate key" },
        { DOC("\"ab\\u0000\""), 3, "\\u0000 not allowed" },
        { DOC("\"\\ud800\""), 1, "lone surrogate" },
        { DOC("[\"\xc0\x80\"]"), 2, "invalid UTF-8" },
        { DOC("\"a\x01\""), 2, "control character in string" },
        { DOC("\"abc"), 0, "unterminated string" },
        { DOC("1."), 2, "digit expected after '.'" },
        { DOC("[1 2]"), 3, "expected ',' or ']'" },
        { DOC("{\"a\" 1}"), 5, "expected ':'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct arena a;
        struct json_value *v = NULL;
        struct json_error e = { 0, NULL };
        arena_init(&a);
        CHECK(parse(&a, cases[i].d, &v, &e) == -1);
        if (e.offset != cases[i].offset || !e.msg || strcmp(e.msg, cases[i].msg) != 0)
            fprintf(stderr, "  case %zu: got \"%s\" at %zu\n", i, e.msg ? e.msg : "", e.offset);
        CHECK(e.offset == cases[i].offset);
        CHECK_STR(e.msg, cases[i].msg);
        arena_release(&a);
    }
}

static char *nested(const char *open, const char *close, int depth)
{
    size_t lo = strlen(open), lc = strlen(close);
    char *s = malloc((size_t)depth * (lo + lc) + 2);
    char *p = s;
    for (int i = 0; i < depth; i++, p += lo)
        memcpy(p, open, lo);
    *p++ = '1';
    for (int i = 0; i < depth; i++, p += lc)
        memcpy(p, close, lc);
    *p = '\0';
    return s;
}

static void test_nesting_deeper_than_64_is_rejected(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    char *ok = nested("[", "]", JSON_MAX_DEPTH);
    char *deep = nested("[", "]", JSON_MAX_DEPTH + 1);
    char *okobj = nested("{\"a\":", "}", JSON_MAX_DEPTH);
    char *deepobj = nested("{\"a\":", "}", JSON_MAX_DEPTH + 1);
    char *huge = nested("[", "]", 100000);
    CHECK(json_parse(&a, ok, strlen(ok), &v, &e) == 0);
    CHECK(json_parse(&a, okobj, strlen(okobj), &v, &e) == 0);
    CHECK(json_parse(&a, deep, strlen(deep), &v, &e) == -1);
    CHECK_STR(e.msg, "nesting too deep");
    CHECK(e.offset == JSON_MAX_DEPTH);
    CHECK(json_parse(&a, deepobj, strlen(deepobj), &v, &e) == -1);
    CHECK_STR(e.msg, "nesting too deep");
    CHECK(json_parse(&a, huge, strlen(huge), &v, &e) == -1);
    free(ok);
    free(deep);
    free(okobj);
    free(deepobj);
    free(huge);
    arena_release(&a);
}

static void test_strings_are_decoded(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    const char *doc = "[\"\\u00e9\\u20ac\\ud83d\\ude00\", \"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\xc3\xa9x\", \"\"]";
    CHECK(json_parse(&a, doc, strlen(doc), &v, &e) == 0);
    CHECK(v->type == JSON_ARRAY && v->count == 4);
    CHECK_STR(v->items[0]->s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    CHECK(v->items[0]->len == 9);
    CHECK_STR(v->items[1]->s, "\"\\/\b\f\n\r\t");
    CHECK(v->items[1]->len == 8);
    CHECK_STR(v->items[2]->s, "\xc3\xa9x");
    CHECK(v->items[3]->type == JSON_STRING && v->items[3]->len == 0);
    CHECK_STR(v->items[3]->s, "");
    arena_release(&a);
}

static void test_numbers_keep_their_literal_text(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    const char *doc = "{\"x\":-1.50e+3,\"y\":0,\"z\":12345678901234567890123}";
    CHECK(json_parse(&a, doc, strlen(doc), &v, &e) == 0);
    const struct json_value *x = json_get(v, "x");
    CHECK(x && x->type == JSON_NUMBER);
    CHECK_STR(x->s, "-1.50e+3");
    CHECK(x->len == 8);
    CHECK_STR(json_get(v, "y")->s, "0");
    CHECK_STR(json_get(v, "z")->s, "12345678901234567890123");
    CHECK(json_number_to_double(x) == -1500.0);
    arena_release(&a);
}

static void test_objects_keep_document_order_and_json_get_finds_members(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    const char *doc = "{\"b\":true,\"a\":null,\"\\u00e9\":[1],\"c\":false}";
    CHECK(json_parse(&a, doc, strlen(doc), &v, &e) == 0);
    CHECK(v->type == JSON_OBJECT && v->count == 4);
    CHECK_STR(v->members[0].key, "b");
    CHECK_STR(v->members[1].key, "a");
    CHECK(v->members[2].key_len == 2);
    CHECK(json_get(v, "b")->type == JSON_TRUE);
    CHECK(json_get(v, "a")->type == JSON_NULL);
    CHECK(json_get(v, "c")->type == JSON_FALSE);
    CHECK(json_get(v, "\xc3\xa9")->type == JSON_ARRAY);
    CHECK(json_get(v, "d") == NULL);
    CHECK(json_get(v, "") == NULL);
    CHECK(json_get(json_get(v, "\xc3\xa9"), "a") == NULL);
    CHECK(json_get(NULL, "a") == NULL);
    arena_release(&a);
}

/* Builds {"k0":0,"k1":1,...}, optionally with key k<dup_of> repeated at the end. */
static char *many_keys(int n, int dup_of)
{
    size_t cap = (size_t)n * 24 + 64, len = 0;
    char *s = malloc(cap);
    s[len++] = '{';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s\"k%d\":%d", i ? "," : "", i, i);
    if (dup_of >= 0)
        len += (size_t)snprintf(s + len, cap - len, ",\"k%d\":0", dup_of);
    s[len++] = '}';
    s[len] = '\0';
    return s;
}

static void test_duplicate_keys_are_found_in_large_objects_quickly(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    char *ok = many_keys(50000, -1);
    char *dup = many_keys(50000, 31337);
    clock_t t0 = clock();
    CHECK(json_parse(&a, ok, strlen(ok), &v, &e) == 0);
    CHECK(v && v->count == 50000);
    CHECK(json_parse(&a, dup, strlen(dup), &v, &e) == -1);
    CHECK_STR(e.msg, "duplicate key");
    CHECK(e.offset == (size_t)(strrchr(dup, ',') - dup) + 1);
    /* Pairwise comparison would be 1.25e9 key compares; sorting is milliseconds. */
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0);
    free(ok);
    free(dup);
    arena_release(&a);
}

static void test_earliest_duplicate_key_is_reported(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    /* 20 keys takes the sorting path; "b" repeats at 1 then "a" at the end. */
    const char *doc = "{\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1,"
                      "\"j\":1,\"k\":1,\"l\":1,\"m\":1,\"n\":1,\"o\":1,\"p\":1,\"b\":2,\"q\":1,"
                      "\"r\":1,\"a\":2}";
    CHECK(json_parse(&a, doc, strlen(doc), &v, &e) == -1);
    CHECK(e.offset == (size_t)(strstr(doc, "\"b\":2") - doc));
    arena_release(&a);
}

static void test_64k_body_parses_in_linear_time(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    size_t cap = 70000, len = 0;
    char *s = malloc(cap);
    s[len++] = '[';
    for (int i = 0; len < 65000; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s{\"id\":%d,\"name\":\"n\\u00e9%d\",\"ok\":true}",
                                i ? "," : "", i, i);
    s[len++] = ']';
    clock_t t0 = clock();
    for (int i = 0; i < 20; i++)
        CHECK(json_parse(&a, s, len, &v, &e) == 0);
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0);
    free(s);
    arena_release(&a);
}

struct int_case {
    const char *lit;
    enum json_int_result rc;
    int64_t value;
};

static void test_number_to_int64_is_exact(void)
{
    static const struct int_case cases[] = {
        { "0", JSON_INT_OK, 0 },
        { "-0", JSON_INT_OK, 0 },
        { "12", JSON_INT_OK, 12 },
        { "-3", JSON_INT_OK, -3 },
        { "1.0", JSON_INT_OK, 1 },
        { "1e2", JSON_INT_OK, 100 },
        { "1E+2", JSON_INT_OK, 100 },
        { "1.50e1", JSON_INT_OK, 15 },
        { "100e-2", JSON_INT_OK, 1 },
        { "1200e-2", JSON_INT_OK, 12 },
        { "0.0", JSON_INT_OK, 0 },
        { "-0.0e-5", JSON_INT_OK, 0 },
        { "0e999999999", JSON_INT_OK, 0 },
        { "10000000000000000000000e-20", JSON_INT_OK, 100 },
        { "0.000000000000000000001e21", JSON_INT_OK, 1 },
        { "9223372036854775807", JSON_INT_OK, INT64_MAX },
        { "-9223372036854775808", JSON_INT_OK, INT64_MIN },
        { "9.223372036854775807e18", JSON_INT_OK, INT64_MAX },
        { "92233720368547758070e-1", JSON_INT_OK, INT64_MAX },
        { "1e18", JSON_INT_OK, 1000000000000000000LL },
        { "9007199254740993", JSON_INT_OK, 9007199254740993LL },
        { "9223372036854775808", JSON_INT_RANGE, 0 },
        { "-9223372036854775809", JSON_INT_RANGE, 0 },
        { "1e19", JSON_INT_RANGE, 0 },
        { "10000000000000000000", JSON_INT_RANGE, 0 },
        { "1e999999999", JSON_INT_RANGE, 0 },
        { "-1e99999999999999999999999999", JSON_INT_RANGE, 0 },
        { "123456789012345678901234567890", JSON_INT_RANGE, 0 },
        { "1.5", JSON_INT_NOT_INTEGER, 0 },
        { "1e-1", JSON_INT_NOT_INTEGER, 0 },
        { "0.1", JSON_INT_NOT_INTEGER, 0 },
        { "1.05e1", JSON_INT_NOT_INTEGER, 0 },
        { "-2.5", JSON_INT_NOT_INTEGER, 0 },
        { "1e-999999999", JSON_INT_NOT_INTEGER, 0 },
        { "1e-99999999999999999999999999", JSON_INT_NOT_INTEGER, 0 },
        { "123456789012345678901e-20", JSON_INT_NOT_INTEGER, 0 },
        /* Out of range and fractional at once: the fraction decides. */
        { "1234567890123456789012345.5", JSON_INT_NOT_INTEGER, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct arena a;
        struct json_value *v;
        struct json_error e;
        arena_init(&a);
        CHECK(json_parse(&a, cases[i].lit, strlen(cases[i].lit), &v, &e) == 0);
        int64_t out = 42;
        enum json_int_result rc = json_number_to_int64(v, &out);
        if (rc != cases[i].rc || (rc == JSON_INT_OK && out != cases[i].value))
            fprintf(stderr, "  %s: rc %d value %lld\n", cases[i].lit, rc, (long long)out);
        CHECK(rc == cases[i].rc);
        if (cases[i].rc == JSON_INT_OK)
            CHECK(out == cases[i].value);
        arena_release(&a);
    }
}

static void test_number_to_int64_refuses_non_numbers(void)
{
    struct json_value s = { .type = JSON_STRING, .s = "12", .len = 2 };
    int64_t out;
    CHECK(json_number_to_int64(&s, &out) == JSON_INT_NOT_INTEGER);
    CHECK(json_number_to_int64(NULL, &out) == JSON_INT_NOT_INTEGER);
}

static void test_number_to_double_reads_the_literal(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    CHECK(json_parse(&a, "[1.5,-2e3,0.1,1e400]", 20, &v, &e) == 0);
    CHECK(json_number_to_double(v->items[0]) == 1.5);
    CHECK(json_number_to_double(v->items[1]) == -2000.0);
    CHECK(json_number_to_double(v->items[2]) == 0.1);
    CHECK(isinf(json_number_to_double(v->items[3])));
    arena_release(&a);
}

static void test_utf8_validity_and_code_points(void)
{
    CHECK(json_utf8_valid("", 0));
    CHECK(json_utf8_valid("abc", 3));
    CHECK(json_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
    CHECK(json_utf8_valid("\xf4\x8f\xbf\xbf", 4));
    CHECK(json_utf8_valid("a\0b", 3));
    CHECK(!json_utf8_valid("\xc0\x80", 2));
    CHECK(!json_utf8_valid("\xc1\xbf", 2));
    CHECK(!json_utf8_valid("\xe0\x9f\xbf", 3));
    CHECK(!json_utf8_valid("\xed\xa0\x80", 3));
    CHECK(!json_utf8_valid("\xf0\x8f\xbf\xbf", 4));
    CHECK(!json_utf8_valid("\xf4\x90\x80\x80", 4));
    CHECK(!json_utf8_valid("\xf5\x80\x80\x80", 4));
    CHECK(!json_utf8_valid("\xff", 1));
    CHECK(!json_utf8_valid("\x80", 1));
    CHECK(!json_utf8_valid("\xc3", 1));
    CHECK(!json_utf8_valid("\xe2\x82", 2));
    CHECK(!json_utf8_valid("\xc3\x28", 2));
    CHECK(json_utf8_codepoints("", 0) == 0);
    CHECK(json_utf8_codepoints("abc", 3) == 3);
    CHECK(json_utf8_codepoints("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10) == 4);
}

/* ---- writer ----------------------------------------------------------------------------- */

static char *take(struct jsonw *w)
{
    size_t len;
    char *s = jsonw_take(w, &len);
    CHECK(strlen(s) == len);
    return s;
}

static void test_writer_spells_integers_and_escapes_after_plain_runs(void)
{
    static const struct {
        int64_t v;
        const char *want;
    } ints[] = {{0, "0"}, {7, "7"}, {-7, "-7"}, {1234567890, "1234567890"},
                {INT64_MAX, "9223372036854775807"}, {INT64_MIN, "-9223372036854775808"}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        struct jsonw w;
        size_t len = 0;
        jsonw_init(&w);
        jsonw_int(&w, ints[i].v);
        char *out = jsonw_take(&w, &len);
        CHECK_STR(out, ints[i].want);
        CHECK(len == strlen(ints[i].want));
        free(out);
    }
    /* A plain run, then a byte to escape, then more plain text, in one string; and a plain
     * string long enough to make the buffer grow. */
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    jsonw_string(&w, "plain text\nthen \"quoted\" \xc3\xa9 end");
    jsonw_string(&w, big);
    jsonw_string(&w, "");
    jsonw_array_end(&w);
    char *out = jsonw_take(&w, &len);
    char want[3100];
    snprintf(want, sizeof want, "[\"plain text\\nthen \\\"quoted\\\" \xc3\xa9 end\",\"%s\",\"\"]",
             big);
    CHECK_STR(out, want);
    CHECK(len == strlen(want));
    free(out);
}

static void test_writer_places_commas_at_every_depth(void)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "a");
    jsonw_int(&w, 1);
    jsonw_key(&w, "b");
    jsonw_array_begin(&w);
    jsonw_int(&w, 1);
    jsonw_object_begin(&w);
    jsonw_object_end(&w);
    jsonw_array_begin(&w);
    jsonw_array_end(&w);
    jsonw_array_begin(&w);
    jsonw_null(&w);
    jsonw_bool(&w, true);
    jsonw_bool(&w, false);
    jsonw_array_end(&w);
    jsonw_array_end(&w);
    jsonw_key(&w, "c");
    jsonw_object_begin(&w);
    jsonw_key(&w, "d");
    jsonw_string(&w, "x");
    jsonw_key(&w, "e");
    jsonw_object_begin(&w);
    jsonw_object_end(&w);
    jsonw_object_end(&w);
    jsonw_key(&w, "f");
    jsonw_string(&w, NULL);
    jsonw_object_end(&w);
    char *s = take(&w);
    CHECK_STR(s, "{\"a\":1,\"b\":[1,{},[],[null,true,false]],\"c\":{\"d\":\"x\",\"e\":{}},\"f\":null}");
    free(s);
    jsonw_release(&w);
}

static void test_writer_escapes_strings_per_rfc_8259(void)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    jsonw_string(&w, "a\"b\\c/d\b\f\n\r\t\x01\x1f\x7f");
    jsonw_string(&w, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    jsonw_string(&w, "line\xe2\x80\xa8para\xe2\x80\xa9");
    jsonw_stringn(&w, "nul\0byte", 8);
    jsonw_string(&w, "bad\xff\xc0\x80utf8\xe2\x82");
    jsonw_array_end(&w);
    char *s = take(&w);
    CHECK_STR(s, "[\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\","
                 "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
                 "\"line\\u2028para\\u2029\","
                 "\"nul\\u0000byte\","
                 "\"bad\\ufffd\\ufffd\\ufffdutf8\\ufffd\\ufffd\"]");
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    CHECK(json_parse(&a, s, strlen(s), &v, &e) == -1); /* "\u0000" is ours to refuse */
    free(s);
    jsonw_release(&w);
    arena_release(&a);
}

/* The plain-ASCII fast path tests eight bytes at a time: a byte to escape at every place of
 * strings of every length up to 40 (in the first eight, in the middle, in the overlapping last
 * eight) is escaped, and the plain bytes around it kept; 0x7f and ' ' are plain, 0x1f, '"',
 * '\\' and bytes of 0x80 and up are not. */
static void test_writer_escapes_at_every_place_of_the_fast_path(void)
{
    static const struct {
        const char *in, *out;
    } specials[] = {{"\x1f", "\\u001f"}, {"\"", "\\\""}, {"\\", "\\\\"},
                    {"\n", "\\n"}, {"\xc3\xa9", "\xc3\xa9"}, {"\xff", "\\ufffd"},
                    {"\x7f", "\x7f"}, {" ", " "}};
    for (size_t n = 1; n <= 40; n++)
        for (size_t at = 0; at < n; at++)
            for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
                char in[64], want[80];
                size_t sl = strlen(specials[k].in);
                for (size_t i = 0; i < n; i++)
                    in[i] = (char)('a' + i % 26);
                memcpy(in + at, specials[k].in, sl);
                size_t len = at + sl + (n - at - 1);
                for (size_t i = at + 1; i < n; i++)
                    in[at + sl + i - at - 1] = (char)('a' + i % 26);
                in[len] = '\0';
                snprintf(want, sizeof want, "\"%.*s%s%s\"", (int)at, in, specials[k].out,
                         in + at + sl);
                struct jsonw w;
                jsonw_init(&w);
                jsonw_string(&w, in);
                char *s = take(&w);
                CHECK_STR(s, want);
                free(s);
            }
}

static void test_writer_keys_are_escaped(void)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "a\"\n");
    jsonw_int(&w, 0);
    jsonw_object_end(&w);
    char *s = take(&w);
    CHECK_STR(s, "{\"a\\\"\\n\":0}");
    free(s);
    /* Plain keys of every length (short ones take a one-pass path), and each with a byte to
     * escape as its first and as its last */
    for (size_t n = 0; n <= 70; n++)
        for (int esc = 0; esc < 3; esc++) {
            char key[80], want[100];
            for (size_t i = 0; i < n; i++)
                key[i] = (char)('a' + i % 26);
            key[n] = '\0';
            if (n && esc)
                key[esc == 1 ? 0 : n - 1] = '\t';
            const char *tab = strchr(key, '\t');
            if (tab)
                snprintf(want, sizeof want, "{\"%.*s\\t%s\":0}", (int)(tab - key), key, tab + 1);
            else
                snprintf(want, sizeof want, "{\"%s\":0}", key);
            jsonw_init(&w);
            jsonw_object_begin(&w);
            jsonw_key(&w, key);
            jsonw_int(&w, 0);
            jsonw_object_end(&w);
            s = take(&w);
            CHECK_STR(s, want);
            free(s);
        }
}

/* Generated encoders write their keys with jsonw_raw_key: the same text as jsonw_key, the comma
 * before every member but an object's first, at every depth, after every kind of value. */
static void test_writer_raw_keys_place_commas_like_keys(void)
{
#define RAW(w, k) jsonw_raw_key(w, "\"" k "\":", sizeof "\"" k "\":" - 1)
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    RAW(&w, "a");
    jsonw_int(&w, 1);
    RAW(&w, "b");
    jsonw_object_begin(&w); /* an object's first member, nested */
    RAW(&w, "c");
    jsonw_object_begin(&w);
    jsonw_object_end(&w);
    RAW(&w, "d"); /* after an empty object */
    jsonw_array_begin(&w);
    jsonw_object_begin(&w); /* an object inside an array */
    RAW(&w, "e");
    jsonw_null(&w);
    jsonw_object_end(&w);
    jsonw_object_begin(&w);
    RAW(&w, "f");
    jsonw_string(&w, "{");
    jsonw_object_end(&w);
    jsonw_array_end(&w);
    RAW(&w, "g"); /* after an array */
    jsonw_array_begin(&w);
    jsonw_array_end(&w);
    jsonw_key(&w, "h"); /* mixed with escaped keys, either way round */
    jsonw_bool(&w, false);
    RAW(&w, "i");
    jsonw_string(&w, "x");
    jsonw_object_end(&w);
    RAW(&w, "j"); /* after the nested object */
    jsonw_int(&w, 2);
    jsonw_object_end(&w);
    char *s = take(&w);
    CHECK_STR(s, "{\"a\":1,\"b\":{\"c\":{},\"d\":[{\"e\":null},{\"f\":\"{\"}],\"g\":[],"
                 "\"h\":false,\"i\":\"x\"},\"j\":2}");
    free(s);
    /* Byte for byte what jsonw_key writes, also where the buffer must grow for the key. */
    for (size_t at = 0; at < 1100; at += 7) {
        struct jsonw k;
        char pad[1100];
        memset(pad, 'p', at);
        pad[at] = '\0';
        jsonw_init(&w);
        jsonw_init(&k);
        jsonw_object_begin(&w);
        jsonw_object_begin(&k);
        RAW(&w, "pad");
        jsonw_key(&k, "pad");
        jsonw_string(&w, pad);
        jsonw_string(&k, pad);
        RAW(&w, "remittance_information");
        jsonw_key(&k, "remittance_information");
        jsonw_int(&w, 0);
        jsonw_int(&k, 0);
        jsonw_object_end(&w);
        jsonw_object_end(&k);
        char *a = take(&w), *b = take(&k);
        CHECK_STR(a, b);
        free(a);
        free(b);
    }
#undef RAW
}

static void test_writer_integers_are_exact(void)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    jsonw_int(&w, 0);
    jsonw_int(&w, -1);
    jsonw_int(&w, INT64_MAX);
    jsonw_int(&w, INT64_MIN);
    jsonw_int(&w, 9007199254740993LL);
    jsonw_array_end(&w);
    char *s = take(&w);
    CHECK_STR(s, "[0,-1,9223372036854775807,-9223372036854775808,9007199254740993]");
    free(s);
}

static void test_writer_doubles_round_trip_and_non_finite_is_null(void)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    jsonw_double(&w, 0.1);
    jsonw_double(&w, 1.5);
    jsonw_double(&w, 1.0 / 3.0);
    jsonw_double(&w, 1e300);
    jsonw_double(&w, NAN);
    jsonw_double(&w, INFINITY);
    jsonw_double(&w, -INFINITY);
    jsonw_double(&w, 5e-324);
    jsonw_array_end(&w);
    char *s = take(&w);
    /* The shortest of %.15g..%.17g that reads back exactly, not always 17 digits. */
    CHECK_STR(s, "[0.1,1.5,0.3333333333333333,1e+300,null,null,null,4.94065645841247e-324]");
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    CHECK(json_parse(&a, s, strlen(s), &v, &e) == 0);
    CHECK(json_number_to_double(v->items[2]) == 1.0 / 3.0);
    CHECK(json_number_to_double(v->items[3]) == 1e300);
    CHECK(json_number_to_double(v->items[7]) == 5e-324);
    free(s);
    arena_release(&a);
}

static void test_writer_value_reserialises_a_parsed_tree(void)
{
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    const char *doc = " { \"amount\" : 1.50e1 , \"list\" : [ -0 , 1E+2 , \"\\u00e9\\n\\ud83d\\ude00\" ] ,"
                      " \"o\" : { } , \"t\" : true , \"f\" : false , \"n\" : null , \"k\\\"\" : [] } ";
    CHECK(json_parse(&a, doc, strlen(doc), &v, &e) == 0);
    struct jsonw w;
    jsonw_init(&w);
    jsonw_value(&w, v);
    char *s = take(&w);
    CHECK_STR(s, "{\"amount\":1.50e1,\"list\":[-0,1E+2,\"\xc3\xa9\\n\xf0\x9f\x98\x80\"],"
                 "\"o\":{},\"t\":true,\"f\":false,\"n\":null,\"k\\\"\":[]}");
    /* And the output is a fixed point. */
    struct json_value *v2;
    CHECK(json_parse(&a, s, strlen(s), &v2, &e) == 0);
    jsonw_value(&w, v2);
    char *s2 = take(&w);
    CHECK_STR(s2, s);
    /* Inside a container, as a member value. */
    jsonw_object_begin(&w);
    jsonw_key(&w, "replay");
    jsonw_value(&w, json_get(v, "list"));
    jsonw_key(&w, "x");
    jsonw_value(&w, NULL);
    jsonw_object_end(&w);
    char *s3 = take(&w);
    CHECK_STR(s3, "{\"replay\":[-0,1E+2,\"\xc3\xa9\\n\xf0\x9f\x98\x80\"],\"x\":null}");
    free(s);
    free(s2);
    free(s3);
    arena_release(&a);
}

static void test_writer_nests_deeply(void)
{
    struct jsonw w;
    jsonw_init(&w);
    int depth = 100;
    for (int i = 0; i < depth; i++) {
        jsonw_array_begin(&w);
        jsonw_int(&w, i);
    }
    for (int i = 0; i < depth; i++)
        jsonw_array_end(&w);
    size_t len;
    char *s = jsonw_take(&w, &len);
    /* 100 brackets each way, 10 one-digit and 90 two-digit numbers, 99 commas. */
    CHECK(len == (size_t)depth * 2 + 190 + (size_t)(depth - 1));
    CHECK(strncmp(s, "[0,[1,[2,", 9) == 0);
    CHECK(strstr(s, "[98,[99]]") != NULL);
    free(s);
}

static void test_take_on_empty_writer_gives_empty_string_and_resets(void)
{
    struct jsonw w;
    jsonw_init(&w);
    size_t len = 99;
    char *s = jsonw_take(&w, &len);
    CHECK_STR(s, "");
    CHECK(len == 0);
    free(s);
    jsonw_int(&w, 7);
    s = jsonw_take(&w, &len);
    CHECK_STR(s, "7");
    free(s);
    CHECK(w.buf == NULL && w.len == 0 && w.depth == 0);
    jsonw_release(&w); /* after take, as handlers/admin_cli.c does */
    jsonw_release(&w);
}

static void test_long_strings_grow_the_buffer(void)
{
    struct jsonw w;
    jsonw_init(&w);
    size_t n = 100000;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = i % 10 == 0 ? '\n' : 'a';
    big[n] = '\0';
    jsonw_string(&w, big);
    size_t len;
    char *s = jsonw_take(&w, &len);
    CHECK(len == n + n / 10 + 2);
    struct arena a;
    struct json_value *v;
    struct json_error e;
    arena_init(&a);
    CHECK(json_parse(&a, s, len, &v, &e) == 0);
    CHECK(v->len == n && memcmp(v->s, big, n) == 0);
    free(big);
    free(s);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_parser_accepts_valid_documents),
        UNIT_TEST(test_parser_rejects_invalid_documents),
        UNIT_TEST(test_parse_errors_give_offset_and_reason),
        UNIT_TEST(test_nesting_deeper_than_64_is_rejected),
        UNIT_TEST(test_strings_are_decoded),
        UNIT_TEST(test_numbers_keep_their_literal_text),
        UNIT_TEST(test_objects_keep_document_order_and_json_get_finds_members),
        UNIT_TEST(test_duplicate_keys_are_found_in_large_objects_quickly),
        UNIT_TEST(test_earliest_duplicate_key_is_reported),
        UNIT_TEST(test_64k_body_parses_in_linear_time),
        UNIT_TEST(test_number_to_int64_is_exact),
        UNIT_TEST(test_number_to_int64_refuses_non_numbers),
        UNIT_TEST(test_number_to_double_reads_the_literal),
        UNIT_TEST(test_utf8_validity_and_code_points),
        UNIT_TEST(test_writer_places_commas_at_every_depth),
        UNIT_TEST(test_writer_spells_integers_and_escapes_after_plain_runs),
        UNIT_TEST(test_writer_escapes_strings_per_rfc_8259),
        UNIT_TEST(test_writer_escapes_at_every_place_of_the_fast_path),
        UNIT_TEST(test_writer_keys_are_escaped),
        UNIT_TEST(test_writer_raw_keys_place_commas_like_keys),
        UNIT_TEST(test_writer_integers_are_exact),
        UNIT_TEST(test_writer_doubles_round_trip_and_non_finite_is_null),
        UNIT_TEST(test_writer_value_reserialises_a_parsed_tree),
        UNIT_TEST(test_writer_nests_deeply),
        UNIT_TEST(test_take_on_empty_writer_gives_empty_string_and_resets),
        UNIT_TEST(test_long_strings_grow_the_buffer),
    };
    return unit_run("json", tests, sizeof tests / sizeof tests[0]);
}
