/* X-Forwarded-For behind trusted proxies: the rightmost untrusted entry is the client. */
#include "runtime/forwarded.h"

#include <string.h>

#include "tests/unit/unit.h"

static struct forwarded_proxies proxies;

static const char *client(const char *peer, const char *const *values, size_t n)
{
    static char out[INET6_ADDRSTRLEN];
    size_t lens[8];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(values[i]);
    forwarded_client(&proxies, peer, values, lens, n, out, sizeof out);
    return out;
}

static void setup(void)
{
    char err[128];
    CHECK(forwarded_parse_list("10.0.0.1, 10.0.0.2,::1", &proxies, err, sizeof err) == 0);
    CHECK(proxies.n == 3);
}

static void test_a_peer_that_is_no_proxy_is_the_client_whatever_it_sends(void)
{
    setup();
    const char *v[] = { "1.2.3.4" };
    CHECK_STR(client("203.0.113.9", v, 1), "203.0.113.9");
}

static void test_the_rightmost_untrusted_entry_is_the_client(void)
{
    setup();
    const char *forged[] = { "6.6.6.6, 198.51.100.7" };
    CHECK_STR(client("10.0.0.1", forged, 1), "198.51.100.7");
    const char *chain[] = { "6.6.6.6, 198.51.100.7, 10.0.0.2" };
    CHECK_STR(client("10.0.0.1", chain, 1), "198.51.100.7");
    const char *lines[] = { "6.6.6.6", "198.51.100.7", " 10.0.0.2 " };
    CHECK_STR(client("10.0.0.1", lines, 3), "198.51.100.7");
    const char *v6[] = { "[2001:db8::7]" };
    CHECK_STR(client("::1", v6, 1), "2001:db8::7");
}

static void test_without_a_usable_entry_the_last_trusted_hop_is_taken(void)
{
    setup();
    CHECK_STR(client("10.0.0.1", NULL, 0), "10.0.0.1");
    const char *junk[] = { "198.51.100.7, not-an-address" };
    CHECK_STR(client("10.0.0.1", junk, 1), "10.0.0.1");
    const char *all[] = { "10.0.0.2" };
    CHECK_STR(client("10.0.0.1", all, 1), "10.0.0.2");
    const char *empty[] = { "" };
    CHECK_STR(client("10.0.0.1", empty, 1), "10.0.0.1");
}

static void test_an_entry_may_carry_the_clients_port(void)
{
    setup();
    const char *v4[] = { "6.6.6.6:1, 198.51.100.9:51234" };
    CHECK_STR(client("10.0.0.1", v4, 1), "198.51.100.9");
    const char *v6[] = { "[2001:db8::1]:443" };
    CHECK_STR(client("10.0.0.1", v6, 1), "2001:db8::1");
    /* A trusted hop with a port is still that hop. */
    const char *hops[] = { "198.51.100.9:80, 10.0.0.2:3128" };
    CHECK_STR(client("10.0.0.1", hops, 1), "198.51.100.9");
    /* Colons in a bare IPv6 address are no port. */
    const char *bare[] = { "2001:db8::1:443", " ::1 , 2001:db8::9" };
    CHECK_STR(client("10.0.0.1", bare, 1), "2001:db8::1:443");
    CHECK_STR(client("10.0.0.1", bare + 1, 1), "2001:db8::9");
    /* What is no port (or no address before it) ends the walk as before. */
    const char *bad[] = { "198.51.100.9:", "198.51.100.9:65536", "198.51.100.9:8x",
                          "198.51.100.9:1:2", "[2001:db8::1]:", "2001:db8::1]:443", ":443",
                          "[2001:db8::1]443" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_STR(client("10.0.0.1", bad + i, 1), "10.0.0.1");
}

static void test_the_list_is_parsed_strictly(void)
{
    struct forwarded_proxies p;
    char err[128];
    CHECK(forwarded_parse_list("", &p, err, sizeof err) == 0 && p.n == 0);
    CHECK(forwarded_parse_list("10.0.0.1,proxy.example", &p, err, sizeof err) == -1);
    CHECK(strstr(err, "proxy.example") != NULL);
    CHECK(forwarded_parse_list("1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,1.1.1.7,"
                               "1.1.1.8,1.1.1.9", &p, err, sizeof err) == -1);
    CHECK(forwarded_parse_list("::ffff:10.0.0.1", &p, err, sizeof err) == 0);
    CHECK(forwarded_is_trusted(&p, "10.0.0.1"));
    CHECK(!forwarded_is_trusted(&p, "10.0.0.2"));
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_peer_that_is_no_proxy_is_the_client_whatever_it_sends),
        UNIT_TEST(test_the_rightmost_untrusted_entry_is_the_client),
        UNIT_TEST(test_without_a_usable_entry_the_last_trusted_hop_is_taken),
        UNIT_TEST(test_an_entry_may_carry_the_clients_port),
        UNIT_TEST(test_the_list_is_parsed_strictly),
    };
    return unit_run("forwarded", tests, sizeof tests / sizeof tests[0]);
}
