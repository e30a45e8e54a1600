/* Connection caps, request deadlines and lingering close, on real sockets. */
#include "runtime/conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/unit.h"

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static struct sockaddr_in v4(const char *a)
{
    struct sockaddr_in s = { .sin_family = AF_INET };
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

static struct sockaddr_in6 v6(const char *a)
{
    struct sockaddr_in6 s = { .sin6_family = AF_INET6 };
    inet_pton(AF_INET6, a, &s.sin6_addr);
    return s;
}

#define SA(x) ((const struct sockaddr *)(const void *)&(x)), (socklen_t)sizeof(x)

static void start(int head_ms, int idle_ms, int body_ms, int rate, int per_address, int total)
{
    struct conn_guard_limits l = {
        .max_connections = total,
        .max_per_address = per_address,
        .head_timeout_ms = head_ms,
        .idle_timeout_ms = idle_ms,
        .body_timeout_ms = body_ms,
        .body_min_rate = rate,
        .n_exempt = 1,
    };
    CHECK(ipaddr_parse("10.9.9.9", 8, &l.exempt[0]));
    CHECK(conn_guard_start(&l) == 0);
}

/* Whether the peer of a socketpair end has been shut down (reads end of stream). */
static bool shut(int peer)
{
    struct pollfd p = { .fd = peer, .events = POLLIN };
    if (poll(&p, 1, 0) != 1)
        return false;
    char c;
    return recv(peer, &c, 1, MSG_DONTWAIT) == 0;
}

static void test_one_address_is_capped_and_others_are_not(void)
{
    start(60000, 60000, 60000, 1024, 3, 100);
    int sv[8][2];
    struct conn_slot *s[8];
    struct sockaddr_in a = v4("192.0.2.1"), b = v4("192.0.2.2");
    for (int i = 0; i < 4; i++) {
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]);
        CHECK(i < 3 ? conn_guard_admit(SA(a)) : !conn_guard_admit(SA(a)));
        s[i] = i < 3 ? conn_guard_open(sv[i][0], SA(a)) : NULL;
    }
    CHECK(conn_guard_count(SA(a)) == 3);
    /* Admitted by a racing thread anyway: refused at open, its socket shut down. */
    CHECK(conn_guard_open(sv[3][0], SA(a)) == NULL);
    CHECK(shut(sv[3][1]));
    CHECK(conn_guard_count(SA(a)) == 3);
    CHECK(conn_guard_admit(SA(b)));
    conn_guard_close(s[0]);
    CHECK(conn_guard_admit(SA(a)));
    CHECK(conn_guard_count(SA(a)) == 2 && conn_guard_total() == 2);
    conn_guard_close(s[1]);
    conn_guard_close(s[2]);
    CHECK(conn_guard_total() == 0 && conn_guard_count(SA(a)) == 0);
    conn_guard_stop();
    for (int i = 0; i < 4; i++) {
        close(sv[i][0]);
        close(sv[i][1]);
    }
}

static void test_ipv6_counts_by_64_and_trusted_proxies_are_exempt(void)
{
    start(60000, 60000, 60000, 1024, 2, 100);
    struct sockaddr_in6 x = v6("2001:db8:1:2::1"), y = v6("2001:db8:1:2:ffff::9"),
                        z = v6("2001:db8:1:3::1");
    struct sockaddr_in proxy = v4("10.9.9.9");
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    struct conn_slot *a = conn_guard_open(sv[0], SA(x));
    struct conn_slot *b = conn_guard_open(sv[0], SA(y));
    CHECK(a && b);
    CHECK(!conn_guard_admit(SA(x)));
    CHECK(conn_guard_admit(SA(z)));
    struct conn_slot *p[5];
    for (int i = 0; i < 5; i++) {
        CHECK(conn_guard_admit(SA(proxy)));
        p[i] = conn_guard_open(sv[0], SA(proxy));
        CHECK(p[i] != NULL);
    }
    CHECK(conn_guard_total() == 7);
    conn_guard_close(a);
    conn_guard_close(b);
    for (int i = 0; i < 5; i++)
        conn_guard_close(p[i]);
    conn_guard_stop();
    close(sv[0]);
    close(sv[1]);
}

static void test_the_total_cap_holds_for_every_address(void)
{
    start(60000, 60000, 60000, 1024, 10, 2);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    struct sockaddr_in a = v4("192.0.2.1"), b = v4("192.0.2.2");
    struct conn_slot *s1 = conn_guard_open(sv[0], SA(a)), *s2 = conn_guard_open(sv[0], SA(b));
    CHECK(s1 && s2);
    struct sockaddr_in proxy = v4("10.9.9.9");
    CHECK(!conn_guard_admit(SA(proxy)));
    conn_guard_close(s1);
    conn_guard_close(s2);
    conn_guard_stop();
    close(sv[0]);
    close(sv[1]);
}

/* Deadlines of 300-600 ms, checked 150 ms or more away from each: a loaded machine (the
 * sanitizer run) oversleeps by tens of milliseconds. */
static void test_each_phase_has_an_absolute_deadline(void)
{
    start(300, 600, 300, 1000, 10, 10);
    struct sockaddr_in a = v4("192.0.2.1");
    int head[2], idle[2], body[2], busy[2], fast[2], answer[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, head);
    socketpair(AF_UNIX, SOCK_STREAM, 0, idle);
    socketpair(AF_UNIX, SOCK_STREAM, 0, body);
    socketpair(AF_UNIX, SOCK_STREAM, 0, busy);
    socketpair(AF_UNIX, SOCK_STREAM, 0, fast);
    socketpair(AF_UNIX, SOCK_STREAM, 0, answer);
    struct conn_slot *sh = conn_guard_open(head[0], SA(a));
    struct conn_slot *si = conn_guard_open(idle[0], SA(a));
    struct conn_slot *sb = conn_guard_open(body[0], SA(a));
    struct conn_slot *su = conn_guard_open(busy[0], SA(a));
    struct conn_slot *sf = conn_guard_open(fast[0], SA(a));
    struct conn_slot *sa = conn_guard_open(answer[0], SA(a));
    conn_guard_request_done(si);     /* waiting for its next request: 600 ms */
    conn_guard_head_done(sb);        /* its body: 300 ms ... */
    conn_guard_head_done(sf);
    conn_guard_body_read(sf, 600);   /* ... and 600 ms more for 600 bytes at 1000 B/s */
    conn_guard_busy(su);             /* the server has it: no deadline */
    conn_guard_answer(sa, 600);      /* its answer: 600 ms + 600 ms for 600 bytes */
    conn_guard_sweep();
    CHECK(!shut(head[1]) && !shut(idle[1]) && !shut(body[1]));
    sleep_ms(450);                   /* t = 450 */
    conn_guard_sweep();
    CHECK(shut(head[1]) && shut(body[1]));
    CHECK(!shut(idle[1]) && !shut(fast[1]) && !shut(answer[1]));
    /* A request line on the idle connection starts a head deadline of its own (t + 300). */
    conn_guard_request_line(si);
    sleep_ms(150);                   /* t = 600: the idle deadline would have passed */
    conn_guard_sweep();
    CHECK(!shut(idle[1]));
    sleep_ms(300);                   /* t = 900 */
    conn_guard_sweep();
    CHECK(shut(idle[1]));
    CHECK(shut(fast[1]));            /* 900 past 300 + 600 */
    CHECK(!shut(answer[1]));
    sleep_ms(450);                   /* t = 1350 */
    conn_guard_sweep();
    CHECK(shut(answer[1]));
    CHECK(!shut(busy[1]));
    struct conn_slot *all[] = { sh, si, sb, su, sf, sa };
    for (int i = 0; i < 6; i++)
        conn_guard_close(all[i]);
    conn_guard_stop();
    int *fds[] = { head, idle, body, busy, fast, answer };
    for (int i = 0; i < 6; i++) {
        close(fds[i][0]);
        close(fds[i][1]);
    }
}

/* A connected TCP pair on loopback: *server (accepted) and *client. */
static void tcp_pair(int *server, int *client)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = v4("127.0.0.1");
    socklen_t len = sizeof a;
    bind(l, (struct sockaddr *)&a, sizeof a);
    listen(l, 1);
    getsockname(l, (struct sockaddr *)&a, &len);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(*client, (struct sockaddr *)&a, sizeof a) == 0);
    *server = accept(l, NULL, NULL);
    close(l);
}

static void test_a_lingering_close_reads_what_the_client_still_sends(void)
{
    start(60000, 60000, 60000, 1024, 10, 10);
    int srv, cli;
    tcp_pair(&srv, &cli);
    struct sockaddr_in a = v4("127.0.0.1");
    struct conn_slot *s = conn_guard_open(srv, SA(a));
    CHECK(send(srv, "413", 3, 0) == 3);
    conn_guard_linger(s);
    conn_guard_close(s);
    close(srv); /* as the server does right after */
    CHECK(conn_guard_lingering() == 1);
    /* The client still sends megabytes: without the linger the kernel would reset the
     * connection, and the answer in flight with it. */
    static char chunk[65536];
    long sent = 0;
    fcntl(cli, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < 2000 && sent < 8 * 1024 * 1024; i++) {
        ssize_t n = send(cli, chunk, sizeof chunk, MSG_NOSIGNAL);
        if (n > 0)
            sent += n;
        else if (errno == EAGAIN)
            sleep_ms(1);
        else
            break;
    }
    CHECK(sent >= 8 * 1024 * 1024);
    char got[8] = "";
    CHECK(recv(cli, got, sizeof got, 0) == 3 && memcmp(got, "413", 3) == 0);
    sleep_ms(50);
    CHECK(recv(cli, got, sizeof got, 0) == 0); /* its write side was shut: end of stream */
    close(cli);
    for (int i = 0; i < 100 && conn_guard_lingering() > 0; i++)
        sleep_ms(10);
    CHECK(conn_guard_lingering() == 0);
    conn_guard_stop();
}

static void test_one_address_lingers_on_few_sockets_and_a_second_start_is_refused(void)
{
    start(60000, 60000, 60000, 1024, 100, 100);
    struct sockaddr_in a = v4("127.0.0.1");
    int srv[6], cli[6];
    for (int i = 0; i < 6; i++) {
        tcp_pair(&srv[i], &cli[i]);
        struct conn_slot *s = conn_guard_open(srv[i], SA(a));
        conn_guard_linger(s);
        conn_guard_close(s);
        close(srv[i]);
    }
    CHECK(conn_guard_lingering() == 4);
    struct conn_guard_limits again = { .max_connections = 1, .max_per_address = 1 };
    CHECK(conn_guard_start(&again) == -1);
    conn_guard_stop();
    CHECK(conn_guard_lingering() == 0);
    for (int i = 0; i < 6; i++)
        close(cli[i]);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_one_address_is_capped_and_others_are_not),
        UNIT_TEST(test_ipv6_counts_by_64_and_trusted_proxies_are_exempt),
        UNIT_TEST(test_the_total_cap_holds_for_every_address),
        UNIT_TEST(test_each_phase_has_an_absolute_deadline),
        UNIT_TEST(test_a_lingering_close_reads_what_the_client_still_sends),
        UNIT_TEST(test_one_address_lingers_on_few_sockets_and_a_second_start_is_refused),
    };
    return unit_run("conn_guard", tests, sizeof tests / sizeof tests[0]);
}
