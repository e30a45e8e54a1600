/* Client addresses: both families in one form, text both ways, the /64 block. */
#include "runtime/ipaddr.h"

#include <netinet/in.h>
#include <string.h>

#include "tests/unit/unit.h"

static const char *text(const struct ipaddr *a)
{
    static char out[INET6_ADDRSTRLEN];
    ipaddr_text(a, out, sizeof out);
    return out;
}

static void test_text_and_socket_addresses_agree(void)
{
    struct ipaddr a, b, c;
    CHECK(ipaddr_parse(" 192.0.2.7 ", 11, &a) && ipaddr_is_v4(&a));
    CHECK_STR(text(&a), "192.0.2.7");
    struct sockaddr_in s4 = { .sin_family = AF_INET };
    inet_pton(AF_INET, "192.0.2.7", &s4.sin_addr);
    CHECK(ipaddr_of_sockaddr((struct sockaddr *)&s4, sizeof s4, &b) && ipaddr_equal(&a, &b));
    /* An IPv4-mapped IPv6 socket address is the IPv4 client. */
    struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
    inet_pton(AF_INET6, "::ffff:192.0.2.7", &s6.sin6_addr);
    CHECK(ipaddr_of_sockaddr((struct sockaddr *)&s6, sizeof s6, &c) && ipaddr_equal(&a, &c));
    CHECK(ipaddr_parse("[2001:db8::1]", 13, &a) && !ipaddr_is_v4(&a));
    CHECK_STR(text(&a), "2001:db8::1");
    struct sockaddr un = { .sa_family = AF_UNIX };
    CHECK(!ipaddr_of_sockaddr(&un, sizeof un, &a));
    CHECK(!ipaddr_parse("", 0, &a) && !ipaddr_parse("host.example", 12, &a) &&
          !ipaddr_parse("[192.0.2.7", 10, &a));
}

static void test_an_ipv6_client_is_grouped_by_its_64(void)
{
    struct ipaddr a, b;
    CHECK(ipaddr_parse("2001:db8:1:2:aaaa::1", 20, &a) && ipaddr_parse("2001:db8:1:2::9", 15, &b));
    struct ipaddr ba = ipaddr_block(&a), bb = ipaddr_block(&b);
    CHECK(ipaddr_equal(&ba, &bb));
    CHECK_STR(text(&ba), "2001:db8:1:2::");
    CHECK(ipaddr_parse("192.0.2.7", 9, &a));
    ba = ipaddr_block(&a);
    CHECK(ipaddr_equal(&ba, &a)); /* an IPv4 address is its own block */
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_text_and_socket_addresses_agree),
        UNIT_TEST(test_an_ipv6_client_is_grouped_by_its_64),
    };
    return unit_run("ipaddr", tests, sizeof tests / sizeof tests[0]);
}
