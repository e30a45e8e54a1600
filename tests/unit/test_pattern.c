/* The simple-pattern fast path (runtime/pattern.c) against regexec: for every pattern of the
 * spec and some of our own, the two must agree on valid, near-valid and random strings. */
#include "runtime/pattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generated/patterns.h"
#include "tests/unit/unit.h"

static const char *const extra[] = {
    "^[a-z]{2,8}_[0-9a-z]{26}$", "^ab?cd+$", "^x{2,}y{1,3}$", "^[0-9]{4}-[0-9]{2}$",
    "^\"v[1-9][0-9]{0,9}\"$", "^/v1/", "^[a-z]+[a-z0-9]+$", /* overlapping: regexec */
    "^[-a]+b$", "^[a-]+b$", "^a|b$", "^(ab)+$", "^a.c$", "[a-z]+$", "^ab?c*d$",
};

static unsigned long long rng = 88172645463325252ull;

static unsigned next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)rng;
}

/* A string near the pattern: its own characters, mutated. */
static void candidate(const char *pat, char *out, size_t cap)
{
    static const char noise[] = "az09AZ_-.:/\"v \x80\xff";
    size_t plen = strlen(pat), n = next() % (cap - 1);
    for (size_t i = 0; i < n; i++)
        out[i] = next() % 4 ? pat[next() % plen] : noise[next() % (sizeof noise - 1)];
    out[n] = '\0';
}

static size_t agree(size_t idx, const char *pat)
{
    char s[64];
    size_t matched = 0;
    for (int i = 0; i < 20000; i++) {
        candidate(pat, s, sizeof s);
        bool fast = pattern_match(idx, s), slow = pattern_match_regex(idx, s);
        if (fast != slow) {
            fprintf(stderr, "  pattern %s on \"%s\": fast %d, regexec %d\n", pat, s, fast, slow);
            CHECK(fast == slow);
            return matched;
        }
        matched += fast;
    }
    return matched;
}

static void test_the_fast_path_agrees_with_regexec_on_the_spec_patterns(void)
{
    char err[256];
    CHECK(pattern_init(patterns, patterns_count, err, sizeof err) == 0);
    size_t simple_count = 0;
    for (size_t i = 0; i < patterns_count; i++) {
        simple_count += pattern_is_simple(i);
        agree(i, patterns[i]);
    }
    CHECK(simple_count * 2 > patterns_count); /* most of them take the fast path */
    pattern_release();
}

static void test_the_fast_path_agrees_on_quantifiers_and_edges(void)
{
    char err[256];
    size_t n = sizeof extra / sizeof extra[0];
    CHECK(pattern_init(extra, n, err, sizeof err) == 0);
    for (size_t i = 0; i < n; i++)
        agree(i, extra[i]);
    CHECK(pattern_is_simple(0) && pattern_is_simple(1) && pattern_is_simple(2));
    CHECK(!pattern_is_simple(6));  /* overlapping variable atoms */
    CHECK(!pattern_is_simple(9) && !pattern_is_simple(10) && !pattern_is_simple(11));
    CHECK(!pattern_is_simple(12)); /* not anchored */
    CHECK(pattern_match(0, "pay_01jq57rhym4n0qhqtvs6hcx1jr"));
    CHECK(!pattern_match(0, "pay_01jq57rhym4n0qhqtvs6hcx1j"));
    CHECK(!pattern_match(0, "pay_01jq57rhym4n0qhqtvs6hcx1jrr"));
    CHECK(!pattern_match(0, "p_01jq57rhym4n0qhqtvs6hcx1jr"));
    CHECK(!pattern_is_simple(13)); /* optional atoms in a row: regexec */
    CHECK(pattern_match(1, "acd") && pattern_match(1, "abcddd") && !pattern_match(1, "abbcd"));
    CHECK(pattern_match(2, "xxy") && pattern_match(2, "xxxxxyyy") && !pattern_match(2, "xyyy"));
    CHECK(!pattern_match(2, "xxxyyyy") && !pattern_match(2, "xxx"));
    CHECK(pattern_match(5, "/v1/anything") && !pattern_match(5, "/v2/"));
    CHECK(pattern_match(7, "-a-ab") && pattern_match(8, "a--b"));
    pattern_release();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_the_fast_path_agrees_with_regexec_on_the_spec_patterns),
        UNIT_TEST(test_the_fast_path_agrees_on_quantifiers_and_edges),
    };
    return unit_run("pattern", tests, sizeof tests / sizeof tests[0]);
}
