/* Unit tests for runtime/html.c: escaping, the page shell, and a CSP whose style hash is the
 * SHA-256 of the stylesheet the page carries. */
#include <openssl/evp.h>

#include "runtime/digest.h"
#include "runtime/html.h"
#include "tests/unit/unit.h"

static void test_every_markup_character_is_escaped(void)
{
    struct arena a;
    arena_init(&a);
    CHECK_STR(html_escape(&a, "<a href=\"x\" title='y'>&</a>"),
              "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
    CHECK_STR(html_escape(&a, ""), "");
    CHECK_STR(html_escape(&a, "plain ünïcode"), "plain ünïcode");
    arena_release(&a);
}

static void test_the_csp_allows_exactly_the_pages_stylesheet(void)
{
    struct arena a;
    arena_init(&a);
    const char *page = html_page(&a, "Sign in <now>", "<p>x</p>");
    CHECK(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(page, "<title>Sign in &lt;now&gt;</title>") != NULL);
    CHECK(strstr(page, "<script") == NULL && strstr(page, "http") == NULL);
    const char *open = strstr(page, "<style>"), *close = strstr(page, "</style>");
    CHECK(open && close);
    unsigned char d[DIGEST_BYTES];
    char b64[64], want[128];
    open += 7;
    digest_sha256(open, (size_t)(close - open), d);
    EVP_EncodeBlock((unsigned char *)b64, d, DIGEST_BYTES);
    snprintf(want, sizeof want, "style-src 'sha256-%s';", b64);
    const char *csp = html_csp(&a, NULL);
    CHECK(strstr(csp, want) != NULL);
    CHECK(strstr(csp, "default-src 'none'") && strstr(csp, "frame-ancestors 'none'"));
    CHECK(strstr(csp, "form-action 'self';") != NULL);
    CHECK(strstr(html_csp(&a, "https://app.example"),
                 "form-action 'self' https://app.example;") != NULL);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_every_markup_character_is_escaped),
        UNIT_TEST(test_the_csp_allows_exactly_the_pages_stylesheet),
    };
    return unit_run("html", tests, sizeof tests / sizeof tests[0]);
}
