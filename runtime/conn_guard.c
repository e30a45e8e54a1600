/* Per-address connection caps, absolute request deadlines and lingering close (conn_guard.h).
 * One mutex guards the list of connections, the per-address counts and the lingering
 * sockets; it is taken at accept and close, never per request. A connection's deadline and
 * phase are atomics its server thread stores and the sweep reads. The sweep runs on this
 * module's thread every TICK_MS while anything is tracked, and sleeps otherwise. */
#include "runtime/conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "runtime/log.h"

#define TICK_MS 200
#define BUCKETS 1024
#define LINGER_IDLE_MS 5000
#define LINGER_MAX_MS 30000
#define LINGER_SOCKETS_MAX 256
#define LINGER_PER_ADDRESS 4
#define LINGER_READ_MAX (64 * 1024) /* per wake-up: a fast sender cannot hold the thread */

enum phase { PHASE_BUSY, PHASE_HEAD, PHASE_BODY, PHASE_IDLE, PHASE_ANSWER, PHASES };

struct addr_count {
    struct ipaddr key;
    int n;
    struct addr_count *next;
};

struct conn_slot {
    struct conn_slot *prev, *next;
    int fd;
    struct ipaddr key; /* the per-address cap's key (an IPv6 /64) */
    bool exempt;
    bool expired;               /* shut down by the sweep */
    _Atomic int64_t deadline;   /* monotonic ms; 0: none */
    atomic_int phase;
    atomic_bool linger;
};

/* Listed under the lock; freed, and its fields but the links written, only by this module's
 * thread (or by stop once the thread has ended), so that thread reads from it unlocked. */
struct lingerer {
    struct lingerer *prev, *next;
    int fd;
    struct ipaddr key;
    int64_t last_ms, until_ms;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn_guard_limits lim;
static struct ipaddr exempt[CONN_GUARD_MAX_EXEMPT];
static int n_exempt;
static struct addr_count *counts[BUCKETS];
static struct conn_slot *slots;
static struct lingerer *lingerers;
static int total, n_lingering;
static int epfd = -1, wakefd = -1;
static pthread_t thread;
static bool running;
static atomic_bool stopping;
/* Refusals since the sweep last logged them. */
static atomic_int refused_address, refused_total;
static char refused_example[INET6_ADDRSTRLEN + 4]; /* locked */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* full: the address itself; cap: what the per-address cap counts (an IPv6 /64). */
static bool key_of(const struct sockaddr *sa, socklen_t len, struct ipaddr *full,
                   struct ipaddr *cap)
{
    if (!ipaddr_of_sockaddr(sa, len, full))
        return false;
    *cap = ipaddr_block(full);
    return true;
}

static bool is_exempt(const struct ipaddr *full)
{
    for (int i = 0; i < n_exempt; i++)
        if (ipaddr_equal(&exempt[i], full))
            return true;
    return false;
}

static unsigned bucket_of(const struct ipaddr *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ k->b[i]) * 1099511628211ull;
    return (unsigned)(h % BUCKETS);
}

/* The count for k, created at 0 when create; NULL when absent (or out of memory). Locked. */
static struct addr_count *count_of(const struct ipaddr *k, bool create)
{
    struct addr_count **head = &counts[bucket_of(k)];
    for (struct addr_count *c = *head; c; c = c->next)
        if (ipaddr_equal(&c->key, k))
            return c;
    if (!create)
        return NULL;
    struct addr_count *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->key = *k;
    c->next = *head;
    *head = c;
    return c;
}

static void count_drop(const struct ipaddr *k)
{
    struct addr_count **p = &counts[bucket_of(k)];
    for (; *p; p = &(*p)->next) {
        if (ipaddr_equal(&(*p)->key, k)) {
            struct addr_count *c = *p;
            if (--c->n <= 0) {
                *p = c->next;
                free(c);
            }
            return;
        }
    }
}

static void note_refusal(const struct ipaddr *k, bool over_address)
{
    atomic_fetch_add(over_address ? &refused_address : &refused_total, 1);
    if (over_address)
        ipaddr_text(k, refused_example, sizeof refused_example);
}

static void wake(void)
{
    uint64_t one = 1;
    if (wakefd >= 0 && write(wakefd, &one, sizeof one) < 0) {
        /* a full counter means a wake-up is pending anyway */
    }
}

bool conn_guard_admit(const struct sockaddr *sa, socklen_t len)
{
    struct ipaddr full, cap;
    if (!key_of(sa, len, &full, &cap))
        return true; /* not an IP socket: nothing to count by */
    pthread_mutex_lock(&lock);
    bool ok = total < lim.max_connections;
    if (!ok) {
        note_refusal(&cap, false);
    } else if (!is_exempt(&full)) {
        struct addr_count *c = count_of(&cap, false);
        ok = !c || c->n < lim.max_per_address;
        if (!ok)
            note_refusal(&cap, true);
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

struct conn_slot *conn_guard_open(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct ipaddr full, cap;
    bool keyed = key_of(sa, len, &full, &cap);
    struct conn_slot *s = calloc(1, sizeof *s);
    if (!s) {
        shutdown(fd, SHUT_RDWR);
        return NULL;
    }
    s->fd = fd;
    s->key = keyed ? cap : (struct ipaddr){ { 0 } };
    s->exempt = !keyed || is_exempt(&full);
    atomic_store(&s->phase, PHASE_HEAD);
    atomic_store(&s->deadline, now_ms() + lim.head_timeout_ms);
    pthread_mutex_lock(&lock);
    /* Admitted moments ago, but another thread may have admitted one of the same address. */
    struct addr_count *c = s->exempt ? NULL : count_of(&s->key, true);
    bool over = total >= lim.max_connections ||
                (!s->exempt && (!c || c->n >= lim.max_per_address));
    if (over) {
        if (c && c->n == 0)
            count_drop(&s->key); /* frees the entry made for it */
        note_refusal(&s->key, total < lim.max_connections);
        pthread_mutex_unlock(&lock);
        free(s);
        shutdown(fd, SHUT_RDWR);
        return NULL;
    }
    if (c)
        c->n++;
    s->next = slots;
    if (slots)
        slots->prev = s;
    slots = s;
    bool first = total++ == 0 && n_lingering == 0;
    pthread_mutex_unlock(&lock);
    if (first)
        wake(); /* the thread sleeps while nothing is tracked */
    return s;
}

/* Locked. */
static void linger_start(int fd, const struct ipaddr *key, int64_t now)
{
    int same = 0;
    for (struct lingerer *l = lingerers; l; l = l->next)
        same += ipaddr_equal(&l->key, key);
    if (n_lingering >= LINGER_SOCKETS_MAX || same >= LINGER_PER_ADDRESS)
        return; /* closed at once: a reset the client may see, but no more sockets held */
    struct lingerer *l = calloc(1, sizeof *l);
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (!l || dup < 0) {
        free(l);
        if (dup >= 0)
            close(dup);
        return;
    }
    shutdown(dup, SHUT_WR); /* the answer is complete: the client reads its end */
    l->fd = dup;
    l->key = *key;
    l->last_ms = now;
    l->until_ms = now + LINGER_MAX_MS;
    struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = l };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, dup, &ev) != 0) {
        close(dup);
        free(l);
        return;
    }
    l->next = lingerers;
    if (lingerers)
        lingerers->prev = l;
    lingerers = l;
    n_lingering++;
}

void conn_guard_close(struct conn_slot *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&lock);
    if (s->prev)
        s->prev->next = s->next;
    else
        slots = s->next;
    if (s->next)
        s->next->prev = s->prev;
    if (!s->exempt)
        count_drop(&s->key);
    total--;
    bool first = false;
    if (atomic_load(&s->linger) && running) {
        first = total == 0 && n_lingering == 0;
        linger_start(s->fd, &s->key, now_ms());
    }
    pthread_mutex_unlock(&lock);
    if (first)
        wake();
    free(s);
}

static void set_phase(struct conn_slot *s, enum phase p, int64_t deadline)
{
    atomic_store_explicit(&s->phase, p, memory_order_relaxed);
    atomic_store_explicit(&s->deadline, deadline, memory_order_relaxed);
}

void conn_guard_request_line(struct conn_slot *s)
{
    /* A new connection's head deadline runs from its accept (the handshake is in it). */
    if (s && atomic_load_explicit(&s->phase, memory_order_relaxed) == PHASE_IDLE)
        set_phase(s, PHASE_HEAD, now_ms() + lim.head_timeout_ms);
}

void conn_guard_head_done(struct conn_slot *s)
{
    if (s)
        set_phase(s, PHASE_BODY, now_ms() + lim.body_timeout_ms);
}

void conn_guard_body_read(struct conn_slot *s, size_t n)
{
    if (s && lim.body_min_rate > 0)
        atomic_fetch_add_explicit(&s->deadline,
                                  (int64_t)(n * 1000 / (size_t)lim.body_min_rate),
                                  memory_order_relaxed);
}

void conn_guard_busy(struct conn_slot *s)
{
    if (s)
        set_phase(s, PHASE_BUSY, 0);
}

void conn_guard_request_done(struct conn_slot *s)
{
    if (s)
        set_phase(s, PHASE_IDLE, now_ms() + lim.idle_timeout_ms);
}

void conn_guard_answer(struct conn_slot *s, size_t bytes)
{
    if (!s)
        return;
    int64_t extra = lim.body_min_rate > 0 ? (int64_t)(bytes * 1000 / (size_t)lim.body_min_rate)
                                          : 0;
    set_phase(s, PHASE_ANSWER, now_ms() + lim.idle_timeout_ms + extra);
}

void conn_guard_linger(struct conn_slot *s)
{
    if (s)
        atomic_store(&s->linger, true);
}

/* Locked. */
static void linger_end(struct lingerer *l)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, l->fd, NULL);
    close(l->fd);
    if (l->prev)
        l->prev->next = l->next;
    else
        lingerers = l->next;
    if (l->next)
        l->next->prev = l->prev;
    n_lingering--;
    free(l);
}

/* Reads and drops what the client still sends, at most LINGER_READ_MAX a wake-up (epoll
 * reports the socket again); false at its end of stream or an error. Unlocked: only this
 * thread frees l. */
static bool linger_drain(struct lingerer *l, int64_t now)
{
    char buf[16384];
    for (size_t taken = 0; taken < LINGER_READ_MAX;) {
        ssize_t n = recv(l->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            l->last_ms = now;
            taken += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return true;
}

/* Ends the lingers that are done: the client closed (ended), or idle or too long. */
static void linger_sweep(struct lingerer *const *ended, int n_ended, int64_t now)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_ended; i++)
        linger_end(ended[i]);
    for (struct lingerer *l = lingerers, *next; l; l = next) {
        next = l->next;
        if (now >= l->until_ms || now - l->last_ms >= LINGER_IDLE_MS)
            linger_end(l);
    }
    pthread_mutex_unlock(&lock);
}

void conn_guard_sweep(void)
{
    static const char *const names[PHASES] = { "busy", "head", "body", "idle", "answer" };
    int closed[PHASES] = { 0 };
    int64_t now = now_ms();
    pthread_mutex_lock(&lock);
    for (struct conn_slot *s = slots; s; s = s->next) {
        int64_t d = atomic_load_explicit(&s->deadline, memory_order_relaxed);
        if (s->expired || d == 0 || now < d)
            continue;
        /* The fd is open: the server closes it only after conn_guard_close, which waits for
         * this lock. The server's thread sees the end of the stream and closes. */
        shutdown(s->fd, SHUT_RDWR);
        s->expired = true;
        int p = atomic_load_explicit(&s->phase, memory_order_relaxed);
        closed[p >= 0 && p < PHASES ? p : PHASE_BUSY]++;
    }
    char example[sizeof refused_example];
    memcpy(example, refused_example, sizeof example);
    pthread_mutex_unlock(&lock);
    int n = 0;
    for (int p = 0; p < PHASES; p++)
        n += closed[p];
    if (n)
        log_warn("connections: closed %d past their deadline (%s %d, %s %d, %s %d, %s %d)", n,
                 names[PHASE_HEAD], closed[PHASE_HEAD], names[PHASE_BODY], closed[PHASE_BODY],
                 names[PHASE_IDLE], closed[PHASE_IDLE], names[PHASE_ANSWER],
                 closed[PHASE_ANSWER]);
    int ra = atomic_exchange(&refused_address, 0), rt = atomic_exchange(&refused_total, 0);
    if (ra)
        log_warn("connections: refused %d over --max-connections-per-address %d (such as %s)",
                 ra, lim.max_per_address, example);
    if (rt)
        log_warn("connections: refused %d over --max-connections %d", rt, lim.max_connections);
}

static void *loop(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-connections");
    int64_t last_sweep = 0;
    while (!atomic_load(&stopping)) {
        pthread_mutex_lock(&lock);
        int timeout = total > 0 || n_lingering > 0 ? TICK_MS : -1;
        pthread_mutex_unlock(&lock);
        struct epoll_event evs[32];
        struct lingerer *ended[32];
        int n = epoll_wait(epfd, evs, 32, timeout), n_ended = 0;
        int64_t now = now_ms();
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t v;
                if (read(wakefd, &v, sizeof v) < 0) {
                    /* nothing pending: someone else read it */
                }
            } else if (!linger_drain(evs[i].data.ptr, now)) {
                ended[n_ended++] = evs[i].data.ptr;
            }
        }
        if (n_ended || now - last_sweep >= TICK_MS) {
            linger_sweep(ended, n_ended, now);
        }
        if (now - last_sweep >= TICK_MS) {
            conn_guard_sweep();
            last_sweep = now;
        }
    }
    return NULL;
}

int conn_guard_start(const struct conn_guard_limits *limits)
{
    if (running)
        return -1;
    lim = *limits;
    n_exempt = limits->n_exempt < CONN_GUARD_MAX_EXEMPT ? limits->n_exempt
                                                        : CONN_GUARD_MAX_EXEMPT;
    for (int i = 0; i < n_exempt; i++)
        exempt[i] = limits->exempt[i];
    epfd = epoll_create1(EPOLL_CLOEXEC);
    wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    if (epfd < 0 || wakefd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, wakefd, &ev) != 0)
        goto fail;
    atomic_store(&stopping, false);
    if (pthread_create(&thread, NULL, loop, NULL) != 0)
        goto fail;
    running = true;
    return 0;
fail:
    if (epfd >= 0)
        close(epfd);
    if (wakefd >= 0)
        close(wakefd);
    epfd = wakefd = -1;
    return -1;
}

void conn_guard_stop(void)
{
    if (!running)
        return;
    atomic_store(&stopping, true);
    wake();
    pthread_join(thread, NULL);
    pthread_mutex_lock(&lock);
    running = false;
    while (lingerers)
        linger_end(lingerers);
    pthread_mutex_unlock(&lock);
    close(epfd);
    close(wakefd);
    epfd = wakefd = -1;
}

int conn_guard_count(const struct sockaddr *sa, socklen_t len)
{
    struct ipaddr full, cap;
    if (!key_of(sa, len, &full, &cap))
        return 0;
    pthread_mutex_lock(&lock);
    struct addr_count *c = count_of(&cap, false);
    int n = c ? c->n : 0;
    pthread_mutex_unlock(&lock);
    return n;
}

int conn_guard_total(void)
{
    pthread_mutex_lock(&lock);
    int n = total;
    pthread_mutex_unlock(&lock);
    return n;
}

int conn_guard_lingering(void)
{
    pthread_mutex_lock(&lock);
    int n = n_lingering;
    pthread_mutex_unlock(&lock);
    return n;
}
