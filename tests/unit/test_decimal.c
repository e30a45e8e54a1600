/* Exact decimals (runtime/decimal.c): the grammar, precision and scale limits, normalisation,
 * exact comparison across scales and signs, canonical text. */
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
    };
    return unit_run("decimal", tests, sizeof tests / sizeof tests[0]);
}
