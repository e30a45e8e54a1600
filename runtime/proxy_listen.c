/* The HTTPS port's own accept and the PROXY protocol header of trusted proxies
 * (proxy_listen.h). Everything here runs on its one thread but start and stop. */
#define _GNU_SOURCE /* accept4 */
#include "runtime/proxy_listen.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/proxy_protocol.h"

#define ACCEPT_BATCH 64          /* accepts per listening socket and wake-up */
#define ACCEPT_PAUSE_MS 100      /* out of descriptors: the listening sockets wait this long */
#define LOG_EVERY_MS 1000

/* A trusted proxy's connection still owing its header, or the first byte after it. */
struct pending {
    int fd, listener;
    struct sockaddr_storage peer; /* the proxy; once read: the client (the header's) */
    socklen_t peer_len;
    bool header_read, local; /* local: a LOCAL (v1 UNKNOWN) header, the proxy's own */
    int64_t deadline;
    size_t have;
    unsigned char buf[PROXY_PROTOCOL_MAX];
};

static struct proxy_listen_config cfg;
static struct pending *pending[PROXY_LISTEN_PENDING_MAX];
static int n_pending;
static struct pollfd pfds[1 + PROXY_LISTEN_MAX_SOCKETS + PROXY_LISTEN_PENDING_MAX];
static int wakefd = -1;
static pthread_t thread;
static bool running;
static atomic_bool stopping;
/* Closed since the last log line: a bad header (and one reason), past the deadline, over the
 * cap; accept failures. */
static int closed_bad, closed_late, closed_full, accept_failed, accept_errno;
static const char *bad_example;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool trusted(const struct sockaddr_storage *ss, socklen_t len)
{
    struct ipaddr a;
    if (!ipaddr_of_sockaddr((const struct sockaddr *)ss, len, &a))
        return false;
    for (int i = 0; i < cfg.n_trusted; i++)
        if (ipaddr_equal(&cfg.trusted[i], &a))
            return true;
    return false;
}

/* Reads what the header still needs, never a byte past it: 1 complete (h filled), 0 wait for
 * more, -1 to be closed (*why; NULL: closed by the peer before it sent anything). */
static int advance(struct pending *p, struct proxy_protocol_header *h, const char **why)
{
    for (;;) {
        size_t need;
        enum proxy_protocol_result r = proxy_protocol_parse(p->buf, p->have, h, &need);
        if (r == PROXY_PROTOCOL_DONE)
            return 1;
        if (r == PROXY_PROTOCOL_BAD) {
            *why = h->why;
            return -1;
        }
        ssize_t n;
        if (need > p->have) { /* v2: its length is known */
            n = recv(p->fd, p->buf + p->have, need - p->have, 0);
        } else { /* up to a line end: look, then take up to the LF or all that came */
            n = recv(p->fd, p->buf + p->have, PROXY_PROTOCOL_V1_MAX - p->have, MSG_PEEK);
            if (n > 0) {
                const unsigned char *lf = memchr(p->buf + p->have, '\n', (size_t)n);
                size_t take = lf ? (size_t)(lf - (p->buf + p->have)) + 1 : (size_t)n;
                n = recv(p->fd, p->buf + p->have, take, 0);
            }
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0 && p->have == 0) {
            *why = NULL; /* closed before a byte: a health check of the port, not counted */
            return -1;
        }
        if (n <= 0) {
            *why = n == 0 ? "closed before its PROXY protocol header ended"
                          : "read error before its PROXY protocol header ended";
            return -1;
        }
        p->have += (size_t)n;
    }
}

/* After a LOCAL header: 1 the first byte after it is there, 0 not yet, -1 the proxy closed or
 * reset the connection (HAProxy's health check: a LOCAL header, then a reset; handed over, it
 * would be a failed TLS handshake in libmicrohttpd's log). */
static int first_byte(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
        return 1;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
}

static void drop(int i)
{
    close(pending[i]->fd);
    free(pending[i]);
    pending[i] = NULL;
}

static void accept_on(int listener, int64_t now, int64_t *paused_until)
{
    for (int k = 0; k < ACCEPT_BATCH; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(cfg.fds[listener], (struct sockaddr *)&ss, &sl,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) { /* EMFILE and the like */
                accept_failed++;
                accept_errno = errno;
                *paused_until = now + ACCEPT_PAUSE_MS;
            }
            return;
        }
        if (!trusted(&ss, sl)) {
            cfg.hand(cfg.ctx[listener], fd, (const struct sockaddr *)&ss, sl);
            continue;
        }
        struct pending *p = n_pending < PROXY_LISTEN_PENDING_MAX ? malloc(sizeof *p) : NULL;
        if (!p) {
            closed_full++;
            close(fd);
            continue;
        }
        p->fd = fd;
        p->listener = listener;
        p->peer = ss;
        p->peer_len = sl;
        p->deadline = now + cfg.head_timeout_ms;
        p->have = 0;
        p->header_read = p->local = false;
        pending[n_pending++] = p;
    }
}

static void log_closures(void)
{
    if (closed_bad)
        log_warn("proxy protocol: closed %d connection(s) of trusted proxies without a valid "
                 "PROXY protocol header (such as: %s)", closed_bad, bad_example);
    if (closed_late)
        log_warn("proxy protocol: closed %d connection(s) of trusted proxies not complete "
                 "within --head-timeout-ms %d (a PROXY protocol header, then the client's first "
                 "byte)", closed_late, cfg.head_timeout_ms);
    if (closed_full)
        log_warn("proxy protocol: closed %d connection(s) of trusted proxies: %d already "
                 "waiting for their header", closed_full, PROXY_LISTEN_PENDING_MAX);
    if (accept_failed)
        log_warn("proxy protocol: accept failed %d time(s) (%s)", accept_failed,
                 strerror(accept_errno));
    closed_bad = closed_late = closed_full = accept_failed = 0;
}

static void *loop(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-accept");
    int64_t paused_until = 0, last_log = now_ms();
    while (!atomic_load(&stopping)) {
        int64_t now = now_ms();
        int n = 0, timeout = LOG_EVERY_MS;
        pfds[n++] = (struct pollfd){ .fd = wakefd, .events = POLLIN };
        bool listening = now >= paused_until;
        if (!listening && paused_until - now < timeout)
            timeout = (int)(paused_until - now);
        for (int i = 0; i < cfg.n; i++)
            pfds[n++] = (struct pollfd){ .fd = listening ? cfg.fds[i] : -1, .events = POLLIN };
        int base = n, polled = n_pending;
        for (int i = 0; i < polled; i++) {
            pfds[n++] = (struct pollfd){ .fd = pending[i]->fd, .events = POLLIN };
            int64_t left = pending[i]->deadline - now;
            if (left < timeout)
                timeout = left > 0 ? (int)left : 0;
        }
        if (poll(pfds, (nfds_t)n, timeout) < 0 && errno != EINTR) {
            log_error("proxy protocol: poll: %s", strerror(errno));
            struct timespec ts = { 0, 100 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            continue;
        }
        if (pfds[0].revents) {
            uint64_t v;
            if (read(wakefd, &v, sizeof v) < 0) {
                /* nothing pending: read by someone else */
            }
        }
        if (atomic_load(&stopping))
            break;
        now = now_ms();
        for (int i = 0; i < polled; i++) {
            struct pending *p = pending[i];
            if (pfds[base + i].revents) {
                struct proxy_protocol_header h;
                const char *why = NULL;
                int r = p->header_read ? 1 : advance(p, &h, &why);
                if (r > 0 && !p->header_read) {
                    p->header_read = true;
                    p->local = h.local;
                    if (!h.local) {
                        p->peer = h.src;
                        p->peer_len = h.src_len;
                    }
                }
                /* A client's connection is handed over at once, so that from then on the
                 * connection caps and the head deadline count it as the client's (a client
                 * opening connections that send nothing is held to its own cap, not to this
                 * list's, which every client shares); the proxy's own (LOCAL: a health check)
                 * only with the first byte after its header, never before. */
                if (r > 0 && p->local)
                    r = first_byte(p->fd);
                if (r > 0) {
                    cfg.hand(cfg.ctx[p->listener], p->fd, (const struct sockaddr *)&p->peer,
                             p->peer_len);
                    free(p);
                    pending[i] = NULL;
                    continue;
                }
                if (r < 0 && p->header_read)
                    why = NULL; /* closed after its header: not counted */
                if (r < 0) {
                    if (why) {
                        closed_bad++;
                        bad_example = why;
                    }
                    drop(i);
                    continue;
                }
            }
            if (now >= p->deadline) {
                closed_late++;
                drop(i);
            }
        }
        int kept = 0; /* close the gaps, in order */
        for (int i = 0; i < n_pending; i++)
            if (pending[i])
                pending[kept++] = pending[i];
        n_pending = kept;
        for (int i = 0; i < cfg.n; i++)
            if (pfds[1 + i].revents)
                accept_on(i, now, &paused_until);
        if (now - last_log >= LOG_EVERY_MS) {
            log_closures();
            last_log = now;
        }
    }
    return NULL;
}

int proxy_listen_start(const struct proxy_listen_config *c)
{
    if (running) { /* the running thread's configuration stays as it is */
        for (int i = 0; i < c->n && i < PROXY_LISTEN_MAX_SOCKETS; i++)
            close(c->fds[i]);
        return -1;
    }
    cfg = *c;
    if (cfg.n < 1 || cfg.n > PROXY_LISTEN_MAX_SOCKETS ||
        cfg.n_trusted > PROXY_LISTEN_MAX_TRUSTED)
        goto fail;
    wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakefd < 0)
        goto fail;
    atomic_store(&stopping, false);
    if (pthread_create(&thread, NULL, loop, NULL) != 0)
        goto fail;
    running = true;
    return 0;
fail:
    if (wakefd >= 0)
        close(wakefd);
    wakefd = -1;
    for (int i = 0; i < c->n && i < PROXY_LISTEN_MAX_SOCKETS; i++)
        close(c->fds[i]);
    cfg.n = 0;
    return -1;
}

void proxy_listen_stop(void)
{
    if (!running)
        return;
    atomic_store(&stopping, true);
    uint64_t one = 1;
    if (write(wakefd, &one, sizeof one) < 0) {
        /* a full counter: a wake-up is pending anyway */
    }
    pthread_join(thread, NULL);
    running = false;
    for (int i = 0; i < n_pending; i++)
        drop(i);
    n_pending = 0;
    for (int i = 0; i < cfg.n; i++)
        close(cfg.fds[i]);
    cfg.n = 0;
    log_closures();
    close(wakefd);
    wakefd = -1;
}
