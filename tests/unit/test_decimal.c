/* Exact decimals (runtime/decimal.c): the grammar, precision and scale limits, normalisation,
 * exact comparison across scales and signs, canonical text, and the arithmetic: sums, products
 * and quotients rounded once by the rule given, money through a rate in minor units. */
#include "runtime/decimal.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/unit.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct decimal dec(const char *s)
{
    struct decimal d = {-999, -1};
    if (decimal_parse(s, 18, 18, true, &d) != 0)
        fprintf(stderr, "  could not parse \"%s\"\n", s);
    return d;
}

static void test_parse_accepts_the_grammar_and_normalises(void)
{
    static const struct {
        const char *text;
        int64_t units;
        int scale;
    } cases[] = {
        {"0", 0, 0},           {"0.0", 0, 0},         {"-0", 0, 0},
        {"-0.000", 0, 0},      {"1", 1, 0},           {"1.50", 15, 1},
        {"1.0842500000", 108425, 5}, {"-0.0012500000", -125, 5}, {"100", 100, 0},
        {"12345678.1234567891", 123456781234567891, 10}, {"0.0000000001", 1, 10},
        {"999999999999999999", 999999999999999999, 0},
    };
    for (size_t i = 0; i < N(cases); i++) {
        struct decimal d;
        CHECK(decimal_parse(cases[i].text, 18, 10, true, &d) == 0);
        if (d.units != cases[i].units || d.scale != cases[i].scale)
            fprintf(stderr, "  \"%s\" gave %lld/10^%d\n", cases[i].text, (long long)d.units,
                    d.scale);
        CHECK(d.units == cases[i].units && d.scale == cases[i].scale);
    }
}

static void test_parse_refuses_what_the_grammar_does_not_allow(void)
{
    static const char *const bad[] = {
        "", "-", "+1", " 1", "1 ", "01", "00.5", ".5", "1.", "1..2", "1.2.3", "1e5", "1E-2",
        "0x10", "1,5", "--1", "NaN", "inf", "1.5-", "\xc2\xb9",
    };
    for (size_t i = 0; i < N(bad); i++) {
        struct decimal d;
        if (decimal_parse(bad[i], 18, 10, true, &d) == 0)
            fprintf(stderr, "  \"%s\" was accepted\n", bad[i]);
        CHECK(decimal_parse(bad[i], 18, 10, true, &d) != 0);
    }
    struct decimal d;
    CHECK(decimal_parse(NULL, 18, 10, true, &d) != 0);
}

static void test_sign_only_when_negatives_are_allowed(void)
{
    struct decimal d;
    CHECK(decimal_parse("-1.5", 18, 10, false, &d) != 0);
    CHECK(decimal_parse("-0", 18, 10, false, &d) != 0);
    CHECK(decimal_parse("1.5", 18, 10, false, &d) == 0 && d.units == 15);
    CHECK(decimal_parse("-1.5", 18, 10, true, &d) == 0 && d.units == -15 && d.scale == 1);
}

static void test_scale_counts_the_digits_written(void)
{
    struct decimal d;
    CHECK(decimal_parse("1.1234567890", 18, 10, true, &d) == 0);
    CHECK(decimal_parse("1.12345678901", 18, 10, true, &d) != 0);
    CHECK(decimal_parse("1.10000000000", 18, 10, true, &d) != 0); /* 11 written, even zeros */
    CHECK(decimal_parse("1", 18, 0, true, &d) == 0);
    CHECK(decimal_parse("1.0", 18, 0, true, &d) != 0);
}

static void test_precision_counts_significant_digits(void)
{
    struct decimal d;
    CHECK(decimal_parse("123456789012345678", 18, 0, true, &d) == 0);
    CHECK(decimal_parse("1234567890123456789", 18, 0, true, &d) != 0);
    CHECK(decimal_parse("0.000000000012345678", 8, 18, true, &d) == 0); /* leading zeros free */
    CHECK(d.units == 12345678 && d.scale == 18);
    CHECK(decimal_parse("0.0000000000123456789", 8, 19, true, &d) != 0); /* scale > 18 */
    CHECK(decimal_parse("1.50", 2, 10, true, &d) != 0); /* written trailing zero counts */
    CHECK(decimal_parse("1.5", 2, 10, true, &d) == 0);
    CHECK(decimal_parse("1000", 3, 0, true, &d) != 0);
    CHECK(decimal_parse("1", 19, 0, true, &d) != 0);   /* precision above 18 is refused */
    CHECK(decimal_parse("1", 0, 0, true, &d) != 0);
    CHECK(decimal_parse("1", 18, 19, true, &d) != 0);
}

static void test_compare_is_exact_across_scales_and_signs(void)
{
    static const char *const ascending[] = {
        "-99999999.9999999999", "-12345678", "-1.5", "-1.25", "-1", "-0.9999999999",
        "-0.0000000001", "0", "0.0000000001", "0.5", "0.9999999999", "1", "1.0000000001",
        "1.25", "1.5", "2", "12345678.1234567890", "99999999.9999999999",
        "999999999999999999",
    };
    for (size_t i = 0; i < N(ascending); i++)
        for (size_t j = 0; j < N(ascending); j++) {
            int want = i < j ? -1 : i > j ? 1 : 0;
            int got = decimal_cmp(dec(ascending[i]), dec(ascending[j]));
            if (got != want)
                fprintf(stderr, "  cmp(%s, %s) = %d\n", ascending[i], ascending[j], got);
            CHECK(got == want);
        }
    CHECK(decimal_cmp(dec("1.50"), dec("1.5")) == 0);
    CHECK(decimal_cmp(dec("-0.0"), dec("0")) == 0);
}

static void test_format_prints_the_canonical_text(void)
{
    static const char *const cases[][2] = {
        {"1.50", "1.5"}, {"-0.000", "0"}, {"0.0000000001", "0.0000000001"}, {"-1.25", "-1.25"},
        {"100", "100"},
        {"-0.0012500000", "-0.00125"},
        {"999999999999999999", "999999999999999999"},
        {"0.000000000000000001", "0.000000000000000001"},
        {"-99999999.9999999999", "-99999999.9999999999"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char buf[DECIMAL_TEXT_MAX];
        CHECK_STR(decimal_format(dec(cases[i][0]), buf, sizeof buf), cases[i][1]);
    }
}

static const char *text(struct decimal d)
{
    static char buf[DECIMAL_TEXT_MAX];
    return decimal_format(d, buf, sizeof buf);
}

static void test_add_and_sub_are_exact_across_scales_and_signs(void)
{
    static const char *const cases[][4] = { /* a, b, a + b, a - b */
        {"1.08415", "1.08435", "2.1685", "-0.0002"},
        {"-0.5", "0.5", "0", "-1"},
        {"99999999.9999999999", "0.0000000001", "100000000", "99999999.9999999998"},
        {"0", "-3.25", "-3.25", "3.25"},
        {"0.000000000000000001", "999999999999999998", "", "-999999999999999997.999999999999999999"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        struct decimal out;
        if (cases[i][2][0] == '\0') { /* past 18 significant digits */
            CHECK(decimal_add(dec(cases[i][0]), dec(cases[i][1]), &out) == -1);
            CHECK(decimal_sub(dec(cases[i][0]), dec(cases[i][1]), &out) == -1);
            continue;
        }
        CHECK(decimal_add(dec(cases[i][0]), dec(cases[i][1]), &out) == 0);
        CHECK_STR(text(out), cases[i][2]);
        CHECK(decimal_sub(dec(cases[i][0]), dec(cases[i][1]), &out) == 0);
        CHECK_STR(text(out), cases[i][3]);
    }
}

static void test_mul_and_div_round_once_by_the_rule_given(void)
{
    static const struct {
        const char *a, *b;
        char op;
        int scale;
        enum decimal_rounding mode;
        const char *want; /* NULL: refused */
    } cases[] = {
        /* the spec's quote: mid 1.08425 less 5 bps */
        {"1.08425", "0.9995", '*', 10, DECIMAL_ROUND_HALF_EVEN, "1.083707875"},
        /* (bid + ask) / 2 */
        {"2.1685", "2", '/', 10, DECIMAL_ROUND_HALF_EVEN, "1.08425"},
        /* ties go to the even digit, other halves to the nearest */
        {"0.25", "1", '*', 1, DECIMAL_ROUND_HALF_EVEN, "0.2"},
        {"0.35", "1", '*', 1, DECIMAL_ROUND_HALF_EVEN, "0.4"},
        {"-0.25", "1", '*', 1, DECIMAL_ROUND_HALF_EVEN, "-0.2"},
        {"0.2500000001", "1", '*', 1, DECIMAL_ROUND_HALF_EVEN, "0.3"},
        /* down is the floor and up the ceiling, also below zero */
        {"1", "3", '/', 4, DECIMAL_ROUND_DOWN, "0.3333"},
        {"1", "3", '/', 4, DECIMAL_ROUND_UP, "0.3334"},
        {"-1", "3", '/', 4, DECIMAL_ROUND_DOWN, "-0.3334"},
        {"-1", "3", '/', 4, DECIMAL_ROUND_UP, "-0.3333"},
        {"2", "3", '/', 10, DECIMAL_ROUND_HALF_EVEN, "0.6666666667"},
        /* an inverse rate: 1 / 1.0842500000 */
        {"1", "1.08425", '/', 10, DECIMAL_ROUND_HALF_EVEN, "0.9222965183"},
        /* a cross through EUR: JPY per USD = EURJPY / EURUSD */
        {"161.45", "1.0882", '/', 10, DECIMAL_ROUND_HALF_EVEN, "148.3642712737"},
        /* exact products keep every digit they fit in */
        {"99999999.9999999999", "1", '*', 10, DECIMAL_ROUND_DOWN, "99999999.9999999999"},
        /* past 18 significant digits, or a zero divisor: refused */
        {"9999999999.9", "9999999999.9", '*', 0, DECIMAL_ROUND_DOWN, NULL},
        {"1", "0", '/', 10, DECIMAL_ROUND_DOWN, NULL},
        {"999999999999999999", "0.1", '/', 0, DECIMAL_ROUND_DOWN, NULL},
    };
    for (size_t i = 0; i < N(cases); i++) {
        struct decimal out = {0, 0};
        int rc = cases[i].op == '*'
                     ? decimal_mul(dec(cases[i].a), dec(cases[i].b), cases[i].scale,
                                   cases[i].mode, &out)
                     : decimal_div(dec(cases[i].a), dec(cases[i].b), cases[i].scale,
                                   cases[i].mode, &out);
        if (!cases[i].want) {
            CHECK(rc == -1);
            continue;
        }
        CHECK(rc == 0);
        if (rc == 0 && strcmp(text(out), cases[i].want) != 0)
            fprintf(stderr, "  %s %c %s gave %s\n", cases[i].a, cases[i].op, cases[i].b,
                    text(out));
        CHECK_STR(text(out), cases[i].want);
    }
}

static void test_amounts_convert_through_a_rate_in_minor_units(void)
{
    static const struct {
        int64_t amount;
        int from_exp;
        const char *rate;
        int to_exp;
        char op;
        enum decimal_rounding mode;
        int64_t want;
        int rc;
    } cases[] = {
        /* the spec's example: 1,000,000.00 EUR at 1.0837078750 is 1,083,707.87 USD (down) */
        {100000000, 2, "1.083707875", 2, '*', DECIMAL_ROUND_DOWN, 108370787, 0},
        {100000000, 2, "1.083707875", 2, '*', DECIMAL_ROUND_UP, 108370788, 0},
        /* buy fixed: 1,000.00 USD costs EUR 1000 / 1.0837078750 = 922.757... up to 922.76 */
        {100000, 2, "1.083707875", 2, '/', DECIMAL_ROUND_UP, 92276, 0},
        {100000, 2, "1.083707875", 2, '/', DECIMAL_ROUND_DOWN, 92275, 0},
        /* exponents 0 and 3: 1,000 JPY at 0.0061 EUR is 6.10 EUR; 1.000 KWD at 2.9876 EUR */
        {1000, 0, "0.0061", 2, '*', DECIMAL_ROUND_DOWN, 610, 0},
        {1000, 3, "2.9876", 2, '*', DECIMAL_ROUND_DOWN, 298, 0},
        {1000, 3, "2.9876", 2, '*', DECIMAL_ROUND_UP, 299, 0},
        {298, 2, "2.9876", 3, '/', DECIMAL_ROUND_UP, 998, 0},
        {100, 2, "161.45", 0, '*', DECIMAL_ROUND_DOWN, 161, 0},
        /* a tie, half-even */
        {5, 0, "0.5", 0, '*', DECIMAL_ROUND_HALF_EVEN, 2, 0},
        {7, 0, "0.5", 0, '*', DECIMAL_ROUND_HALF_EVEN, 4, 0},
        /* the largest amount the API takes, at the largest rate: past int64, refused */
        {9007199254740991, 0, "99999999.9999999999", 4, '*', DECIMAL_ROUND_DOWN, 0, -1},
        {9007199254740991, 0, "0.0000000001", 4, '/', DECIMAL_ROUND_DOWN, 0, -1},
        {100, 2, "0", 2, '/', DECIMAL_ROUND_DOWN, 0, -1},
    };
    for (size_t i = 0; i < N(cases); i++) {
        int64_t out = -1;
        int rc = cases[i].op == '*'
                     ? decimal_amount_mul(cases[i].amount, cases[i].from_exp,
                                          dec(cases[i].rate), cases[i].to_exp, cases[i].mode,
                                          &out)
                     : decimal_amount_div(cases[i].amount, cases[i].from_exp,
                                          dec(cases[i].rate), cases[i].to_exp, cases[i].mode,
                                          &out);
        CHECK(rc == cases[i].rc);
        if (rc == 0 && out != cases[i].want)
            fprintf(stderr, "  case %zu gave %lld, not %lld\n", i, (long long)out,
                    (long long)cases[i].want);
        if (rc == 0)
            CHECK(out == cases[i].want);
    }
}

static void test_format_fixed_keeps_the_scale_asked_for(void)
{
    char buf[DECIMAL_TEXT_MAX];
    CHECK_STR(decimal_format_fixed(dec("1.08425"), 10, buf, sizeof buf), "1.0842500000");
    CHECK_STR(decimal_format_fixed(dec("2"), 10, buf, sizeof buf), "2.0000000000");
    CHECK_STR(decimal_format_fixed(dec("0"), 2, buf, sizeof buf), "0.00");
    CHECK_STR(decimal_format_fixed(dec("-0.5"), 3, buf, sizeof buf), "-0.500");
    CHECK_STR(decimal_format_fixed(dec("7"), 0, buf, sizeof buf), "7");
    /* a value with more decimals than asked keeps its own form rather than lose digits */
    CHECK_STR(decimal_format_fixed(dec("0.125"), 2, buf, sizeof buf), "0.125");
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_parse_accepts_the_grammar_and_normalises),
        UNIT_TEST(test_parse_refuses_what_the_grammar_does_not_allow),
        UNIT_TEST(test_sign_only_when_negatives_are_allowed),
        UNIT_TEST(test_scale_counts_the_digits_written),
        UNIT_TEST(test_precision_counts_significant_digits),
        UNIT_TEST(test_compare_is_exact_across_scales_and_signs),
        UNIT_TEST(test_format_prints_the_canonical_text),
        UNIT_TEST(test_add_and_sub_are_exact_across_scales_and_signs),
        UNIT_TEST(test_mul_and_div_round_once_by_the_rule_given),
        UNIT_TEST(test_amounts_convert_through_a_rate_in_minor_units),
        UNIT_TEST(test_format_fixed_keeps_the_scale_asked_for),
    };
    return unit_run("decimal", tests, sizeof tests / sizeof tests[0]);
}
