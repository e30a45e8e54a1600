/* libmicrohttpd glue: listening sockets and TLS, connection caps and deadlines (conn_guard),
 * each request's head (strict checks, client address, early answers) and body, then the
 * request pipeline (runtime/pipeline.c), the answer and the access log. */
#include "runtime/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/conn_guard.h"
#include "runtime/cors.h"
#include "runtime/forwarded.h"
#include "runtime/html.h"
#include "runtime/http_strict.h"
#include "runtime/idempotency.h"
#include "runtime/log.h"
#include "runtime/oauth_error.h"
#include "runtime/offload.h"
#include "runtime/pipeline.h"
#include "runtime/problem.h"
#include "runtime/proxy_listen.h"
#include "runtime/req.h"
#include "runtime/storage.h"

enum listener { LISTENER_HTTPS, LISTENER_HTTP };

/* A chunked body announces no length: one past its cap is read and dropped up to this much, so
 * that the client gets its 413 once it has sent it all; beyond, the connection is closed. */
#define DRAIN_BODY_MAX (16 * 1024 * 1024)

/* One per --listen address: its HTTPS daemon and its plain-HTTP one ("use HTTPS"). With
 * --proxy-protocol on, the HTTPS daemon has no listening socket: runtime/proxy_listen.c
 * accepts on it and hands each connection over with its client's address. */
struct listener_set {
    char addr[64];
    int https_fd, http_fd; /* until handed to a daemon (or to proxy_listen) */
    struct MHD_Daemon *https, *http;
};
static struct listener_set listeners[SERVER_MAX_LISTEN];
static int n_listeners;
static bool own_accept; /* --proxy-protocol: proxy_listen.c accepts on the HTTPS sockets */
_Static_assert(SERVER_MAX_LISTEN <= PROXY_LISTEN_MAX_SOCKETS, "a socket per --listen address");
_Static_assert(FORWARDED_MAX_PROXIES <= PROXY_LISTEN_MAX_TRUSTED, "every --trusted-proxy");
static struct forwarded_proxies proxies; /* --trusted-proxy */
static route_match_fn *route_match;
static const struct config *cfg;
static atomic_int in_flight;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* libmicrohttpd's own messages, at most MHD_LOG_PER_S a second: each failed TLS handshake
 * (a port scanner, a connection conn_guard shut down mid-handshake) writes one, and a flood of
 * them must not flood the log. What was left out is counted in the next line written. */
#define MHD_LOG_PER_S 5
static pthread_mutex_t mhd_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t mhd_log_second;
static int mhd_log_written, mhd_log_dropped;

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    int64_t second = (int64_t)(now_ms() / 1000.0);
    int dropped = 0;
    pthread_mutex_lock(&mhd_log_lock);
    if (second != mhd_log_second) {
        mhd_log_second = second;
        mhd_log_written = 0;
    }
    bool write = mhd_log_written < MHD_LOG_PER_S;
    if (write) {
        mhd_log_written++;
        dropped = mhd_log_dropped;
        mhd_log_dropped = 0;
    } else {
        mhd_log_dropped++;
    }
    pthread_mutex_unlock(&mhd_log_lock);
    if (!write)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    if (dropped)
        log_warn("libmicrohttpd: %s (and %d more messages left out)", msg, dropped);
    else
        log_warn("libmicrohttpd: %s", msg);
}

static const char *peer_of(struct MHD_Connection *conn, struct arena *a)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char buf[INET6_ADDRSTRLEN] = "-";
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
                      sizeof buf);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
                      sizeof buf);
    }
    return arena_strdup(a, buf);
}

/* True when the Vary list (comma-separated field names) names field, case-insensitively:
 * "Accept" is not named by "Accept-Encoding". */
static bool vary_names(const char *vary, const char *field)
{
    size_t n = strlen(field);
    for (const char *p = vary; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ' && *e != '\t')
            e++;
        if ((size_t)(e - p) == n && strncasecmp(p, field, n) == 0)
            return true;
        p = e;
    }
    return false;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, struct req *r)
{
    cors_answer(r);
    /* The routed operation, also when it was refused before it ran (plain HTTP, shutting
     * down): an RFC 6749 endpoint answers those in its own error format too. */
    const struct op *op = req_routed_op(r);
    if (op && op->negotiated) { /* the answer depends on Accept, refusals included (406) */
        const char *vary = req_response_header(r, "Vary");
        if (!vary)
            req_set_header(r, "Vary", "Accept");
        else if (!vary_names(vary, "Accept"))
            req_set_header(r, "Vary", arena_printf(&r->arena, "%s, Accept", vary));
    }
    if (r->status == 0) {
        log_error("operation %s set no response (request %s)",
                  r->op ? r->op->operation_id : "-", r->request_id);
        req_problem(r, 500, "internal_error", "The server produced no response.");
    }
    if (r->problem && r->op && r->op->page) {
        size_t len = 0;
        free(r->resp_body);
        r->resp_body = problem_render_html(&r->arena, r->status, r->problem_code,
                                           r->problem_detail, r->request_id,
                                           r->with_errors ? &r->verr : NULL, &len);
        r->resp_len = len;
        r->content_type = REQ_HTML;
    } else if (r->problem && op && op->oauth_errors) {
        size_t len = 0; /* RFC 6749 §5.2 JSON, the problem's status and headers kept */
        r->resp_body = oauth_error_render(r->status, r->problem_code, r->problem_detail,
                                          r->with_errors ? &r->verr : NULL, &len);
        r->resp_len = len;
        r->content_type = "application/json";
    } else if (r->problem) {
        size_t len = 0;
        r->resp_body = problem_render_with(
            r->status, r->problem_code, r->problem_detail, r->path, r->request_id,
            r->with_errors ? &r->verr : NULL, r->problem_member, r->problem_member_json, &len);
        r->resp_len = len;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(
        r->resp_len, r->resp_body, r->resp_body ? &free : NULL);
    if (!resp)
        return MHD_NO;
    r->resp_body = NULL; /* libmicrohttpd owns it now */
    if (r->content_type && r->resp_len > 0)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    MHD_add_response_header(resp, "X-Request-ID", r->request_id ? r->request_id : "-");
    /* no-store unless the operation chose its own (the public reference page, GET /docs,
     * which it sets from its spec) */
    if (!req_response_header(r, "Cache-Control"))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (op && op->oauth_errors) /* RFC 6749 §5.1 */
        MHD_add_response_header(resp, "Pragma", "no-cache");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (r->tls)
        MHD_add_response_header(resp, "Strict-Transport-Security", "max-age=31536000");
    if (r->content_type && strcmp(r->content_type, REQ_HTML) == 0) {
        /* A page with a stylesheet of its own (GET /docs) sends its own policy. */
        if (!req_response_header(r, "Content-Security-Policy"))
            MHD_add_response_header(resp, "Content-Security-Policy",
                                    html_csp(&r->arena, r->form_action));
        MHD_add_response_header(resp, "X-Frame-Options", "DENY");
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    for (int i = 0; i < r->n_resp_headers; i++)
        MHD_add_response_header(resp, r->resp_headers[i].name, r->resp_headers[i].value);
    conn_guard_answer(r->slot, r->resp_len); /* the client must read it in time */
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    r->queued = true;
    return ok;
}

/* The request line arrived (libmicrohttpd's URI log callback, given the target before it is
 * decoded): the request's struct is made here, so that the raw target can be checked. What
 * it returns is the request's context in every later callback. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    struct req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    arena_init(&r->arena);
    verr_init(&r->verr, &r->arena);
    r->started_ms = now_ms();
    r->conn = conn;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->slot = ci ? ci->socket_context : NULL;
    conn_guard_request_line(r->slot);
    r->raw_target = uri;
    r->raw_target_len = strlen(uri);
    r->target_bad = !http_strict_target(uri, &r->target_fault);
    return r;
}

struct field_list {
    struct req *r;
    struct http_field *items;
    size_t n, cap;
};

static enum MHD_Result add_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct field_list *l = cls;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        struct http_field *grown = arena_alloc(&l->r->arena, cap * sizeof *grown);
        if (l->n)
            memcpy(grown, l->items, l->n * sizeof *grown);
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = (struct http_field){ key, key_size, value, value_size };
    return MHD_YES;
}

/* The head is complete: the strict HTTP checks (runtime/http_strict.h). false with the fault
 * when it is refused. */
static bool head_acceptable(struct req *r, const char *method, const char *version,
                            struct http_fault *f)
{
    struct field_list l = { .r = r };
    MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, &add_field, &l);
    r->fields = l.items;
    r->n_fields = l.n;
    if (!http_strict_fields(version, l.items, l.n, f))
        return false;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return ci && http_strict_head(method, ci->header_size, r->raw_target, r->raw_target_len,
                                  version, l.items, l.n, f);
}

/* The client's address: the TCP peer, or behind a trusted proxy X-Forwarded-For's. With
 * --proxy-protocol on, a trusted proxy reaches the HTTPS port only in TCP mode (its header
 * names the client, runtime/proxy_listen.h), so an X-Forwarded-For there is the client's own
 * words: a connection that kept the proxy's address (a LOCAL header, v1 UNKNOWN) is believed
 * in nothing it says. */
static const char *client_address(struct req *r, const char *tcp_peer)
{
    r->via_proxy = !(r->tls && own_accept) && forwarded_is_trusted(&proxies, tcp_peer);
    if (!r->via_proxy)
        return tcp_peer;
    /* The last lines count (the proxy appends its own): the first 64 from the end, in order. */
    const char *values[64];
    size_t lens[64], n = 0;
    for (size_t i = r->n_fields; i-- > 0 && n < 64;) {
        const struct http_field *h = &r->fields[i];
        if (h->name_len == 15 && strncasecmp(h->name, "X-Forwarded-For", 15) == 0) {
            values[n] = h->value;
            lens[n++] = h->value_len;
        }
    }
    for (size_t i = 0; i < n / 2; i++) {
        const char *v = values[i];
        size_t len = lens[i];
        values[i] = values[n - 1 - i];
        lens[i] = lens[n - 1 - i];
        values[n - 1 - i] = v;
        lens[n - 1 - i] = len;
    }
    char *out = arena_alloc(&r->arena, INET6_ADDRSTRLEN);
    forwarded_client(&proxies, tcp_peer, values, lens, n, out, INET6_ADDRSTRLEN);
    return out;
}

/* First call: the head is complete. Returns the answer to give libmicrohttpd: an answer
 * queued now (a refused head, a body announced too large: the connection then closes,
 * lingering) or MHD_YES to read the body. */
static enum MHD_Result begin_request(struct req *r, enum listener l, const char *url,
                                     const char *method, const char *version)
{
    atomic_fetch_add(&in_flight, 1);
    r->begun = true;
    conn_guard_head_done(r->slot);
    r->method = arena_strdup(&r->arena, method);
    r->path = arena_strdup(&r->arena, url);
    r->tls = l == LISTENER_HTTPS;
    struct http_fault f;
    bool ok = head_acceptable(r, method, version, &f);
    r->peer = client_address(r, peer_of(r->conn, &r->arena));
    r->origin = req_header(r, "Origin");
    if (!ok) {
        pipeline_request_id(r);
        req_problem(r, f.status, f.code, "%s", f.detail);
        conn_guard_linger(r->slot); /* a body of unknown length may follow: read it away */
        return send_response(r->conn, r); /* queued on the first call: Connection: close */
    }
    /* HEAD is GET without the body (libmicrohttpd sends the head only). */
    const char *as = strcmp(r->method, "HEAD") == 0 ? "GET" : r->method;
    r->route_result = (int)route_match(&r->arena, as, r->path, &r->match, r->allow,
                                       sizeof r->allow);
    /* A body announced beyond what would be kept is refused before it is read; the
     * connection closes lingering, so that the client reads the answer whatever it does
     * with the rest of its body. With Expect: 100-continue the client sends none. */
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    bool kept = !r->target_bad && r->route_result == ROUTE_FOUND && r->match.op->has_body;
    size_t cap = kept ? r->match.op->max_body_bytes : PIPELINE_DROP_BODY_MAX;
    if (cl && strtoull(cl, NULL, 10) > cap) {
        r->upload_too_large = r->answered_early = true;
        conn_guard_busy(r->slot);
        pipeline_process(r, l == LISTENER_HTTP); /* a 413 (or an earlier refusal): never handed off */
        conn_guard_linger(r->slot);
        return send_response(r->conn, r);
    }
    return MHD_YES; /* queueing on the first call would force Connection: close */
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size, void **ctx)
{
    enum listener l = (enum listener)(intptr_t)cls;
    struct req *r = *ctx;
    if (!r)
        return MHD_NO; /* out of memory at the request line */
    if (!r->begun)
        return begin_request(r, l, url, method, version);
    if (r->queued)
        return MHD_YES;
    if (r->handed_off) /* resumed by the group commit or the offload pool with the answer */
        return send_response(conn, r);
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        conn_guard_body_read(r->slot, n);
        /* Bodies of unmatched routes and bodyless operations are read and dropped. */
        bool kept = !r->target_bad && r->route_result == ROUTE_FOUND;
        size_t cap = kept ? r->match.op->max_body_bytes : 0;
        if (r->upload_too_large || r->upload_len + n > cap) {
            r->upload_too_large = true;
            r->dropped += n;
            return r->dropped > DRAIN_BODY_MAX ? MHD_NO : MHD_YES;
        }
        if (r->upload_len + n + 1 > r->upload_cap) {
            size_t want = r->upload_cap ? r->upload_cap * 2 : 4096;
            while (want < r->upload_len + n + 1)
                want *= 2;
            char *grown = realloc(r->upload, want);
            if (!grown)
                return MHD_NO;
            r->upload = grown;
            r->upload_cap = want;
        }
        memcpy(r->upload + r->upload_len, upload_data, n);
        r->upload_len += n;
        r->upload[r->upload_len] = '\0';
        return MHD_YES;
    }
    conn_guard_busy(r->slot);
    storage_used(); /* from here on: whether this request read the database */
    if (pipeline_process(r, l == LISTENER_HTTP) || pipeline_wait_until_durable(r))
        return MHD_YES;
    return send_response(conn, r);
}

/* A request whose head libmicrohttpd refused itself after the request line (a field line
 * without a colon, a Content-Length that is no number, a head over the connection's memory)
 * never reaches on_request: it answered with its own short HTML page. One access line says
 * so; a connection that closed mid-head gets none (conn_guard logs those it closed). A
 * request line it refuses (an HTTP version it does not speak) comes before the URI log
 * callback, so the server never hears of it. */
static void log_refused_head(struct MHD_Connection *conn, struct req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (!ci || ci->http_status == 0)
        return;
    struct log_access a = {
        .method = "-",
        .route = "-",
        .status = (int)ci->http_status,
        .ms = now_ms() - r->started_ms,
        .request_id = "-",
        .code = "malformed_request",
        .peer = peer_of(conn, &r->arena),
    };
    log_access(&a);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    struct req *r = *ctx;
    if (!r)
        return;
    *ctx = NULL;
    conn_guard_request_done(r->slot); /* the wait for the next request starts */
    if (!r->begun) {
        log_refused_head(conn, r);
        arena_release(&r->arena);
        free(r);
        return;
    }
    char route[512];
    if (r->op)
        snprintf(route, sizeof route, "%s%s", r->op->base, r->op->path);
    else
        snprintf(route, sizeof route, "-");
    struct log_access a = {
        .method = r->method,
        .route = route,
        .status = r->status,
        .ms = now_ms() - r->started_ms,
        .request_id = r->request_id ? r->request_id : "-",
        .workspace = r->principal.authenticated ? r->principal.workspace_id : NULL,
        .user = r->principal.authenticated ? r->principal.user_id : NULL,
        .code = r->problem ? r->problem_code : NULL,
        .peer = r->peer,
    };
    log_access(&a);
    free(r->upload);
    free(r->resp_body);
    arena_release(&r->arena);
    free(r);
    atomic_fetch_sub(&in_flight, 1);
}

/* Binds ourselves so a port in use is reported as such (libmicrohttpd only says "failed"). */
static int open_listener(const char *addr, int port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
    if (family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
            goto bad_addr;
        sl = sizeof *s6;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
            goto bad_addr;
        sl = sizeof *s4;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0) {
        int e = errno;
        close(fd);
        if (e == EADDRINUSE)
            snprintf(err, errlen, "port %d on %s is already in use", port, addr);
        else
            snprintf(err, errlen, "cannot bind %s:%d: %s", addr, port, strerror(e));
        return -1;
    }
    if (listen(fd, 1024) != 0) {
        snprintf(err, errlen, "listen %s:%d: %s", addr, port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
bad_addr:
    snprintf(err, errlen, "invalid listen address '%s'", addr);
    return -1;
}

/* At accept, before libmicrohttpd allocates anything: the connection caps. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)cls;
    return conn_guard_admit(addr, len) ? MHD_YES : MHD_NO;
}

static socklen_t sockaddr_len(const struct sockaddr *sa)
{
    return sa && sa->sa_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6)
                                           : (socklen_t)sizeof(struct sockaddr_in);
}

/* A connection starts (its deadlines with it) or is about to be closed (fd still open). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_guard_close(*socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!fd)
        return;
    const struct sockaddr *sa = addr ? addr->client_addr : NULL;
    *socket_context = conn_guard_open(fd->connect_fd, sa, sockaddr_len(sa));
}

/* poll(2), not epoll, and not MHD_USE_TURBO: in libmicrohttpd 0.9.75 a TLS connection whose
 * handshake waits for more bytes stays in epoll mode's ready list (gnutls_handshake's EAGAIN
 * does not clear its read-ready flag), so a client that sends part of a ClientHello and stops
 * spins a worker thread at 100 % CPU until the connection ends; with MHD_USE_TURBO a new
 * connection starts in that list, so one that sends nothing at all spins it for good and is
 * never closed. poll is level-triggered: a socket with nothing to read costs nothing. It
 * scans every connection of a worker per wake-up; side by side on GET /healthz at 16 and 64
 * connections, turbo, epoll and poll cost the same CPU per request within noise. */
static struct MHD_Daemon *start_daemon(enum listener l, const char *addr, int fd,
                                       const struct config *c, const char *cert_pem,
                                       const char *key_pem)
{
    unsigned int flags = SERVER_MHD_FLAGS | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    if (strchr(addr, ':'))
        flags |= MHD_USE_IPv6;
    /* libmicrohttpd's inactivity timeout, in whole seconds, backs conn_guard's deadlines. */
    unsigned idle_s = (unsigned)((c->idle_timeout_ms + 999) / 1000);
    /* fd < 0: no listening socket, connections come through MHD_add_connection (a listening
     * socket's slot is then the timeout once more). */
    if (fd < 0)
        flags |= MHD_USE_NO_LISTEN_SOCKET;
    struct MHD_OptionItem common[] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)&mhd_log, NULL },
        fd >= 0 ? (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, fd, NULL }
                : (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)idle_s, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)SERVER_CONNECTION_MEMORY, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)idle_s, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)&on_completed, NULL },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)&on_connection, NULL },
        { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)&on_request_line, NULL },
        { MHD_OPTION_END, 0, NULL },
    };
    if (l == LISTENER_HTTPS) {
        flags |= MHD_USE_TLS;
        return MHD_start_daemon(
            flags, 0, &on_accept, NULL, &on_request, (void *)(intptr_t)l, MHD_OPTION_ARRAY,
            common, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)c->threads,
            MHD_OPTION_HTTPS_MEM_CERT, cert_pem, MHD_OPTION_HTTPS_MEM_KEY, key_pem,
            MHD_OPTION_HTTPS_PRIORITIES, SERVER_TLS_PRIORITIES, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)c->max_connections, MHD_OPTION_END);
    }
    /* The plain-HTTP listener: a trusted proxy's connections come here, as many as to HTTPS. */
    return MHD_start_daemon(flags, 0, &on_accept, NULL, &on_request, (void *)(intptr_t)l,
                            MHD_OPTION_ARRAY, common, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)c->max_connections, MHD_OPTION_END);
}

/* proxy_listen.c's hand-over: libmicrohttpd takes the socket (and closes it when it refuses
 * it: the accept policy, on_accept, applies the connection caps to the client's address). The
 * address is what MHD_CONNECTION_INFO_CLIENT_ADDRESS then gives: conn_guard, the access log and
 * the per-address quotas all see the client, not the proxy. */
static void hand_to_daemon(void *ctx, int fd, const struct sockaddr *client, socklen_t len)
{
    MHD_add_connection(ctx, fd, client, len);
}

/* The HTTPS sockets go to proxy_listen.c, which owns them from here on. */
static int start_own_accept(const struct config *c)
{
    struct proxy_listen_config pl = {
        .n = n_listeners,
        .n_trusted = proxies.n,
        .head_timeout_ms = c->head_timeout_ms,
        .hand = &hand_to_daemon,
    };
    for (int i = 0; i < n_listeners; i++) {
        pl.fds[i] = listeners[i].https_fd;
        pl.ctx[i] = listeners[i].https;
        listeners[i].https_fd = -1;
    }
    for (int i = 0; i < proxies.n && i < PROXY_LISTEN_MAX_TRUSTED; i++)
        pl.trusted[i] = proxies.addr[i];
    if (proxy_listen_start(&pl) != 0)
        return -1;
    log_info("HTTPS port: connections of the trusted proxies (%s) begin with a PROXY protocol "
             "header (--proxy-protocol on)", c->trusted_proxy);
    return 0;
}

int server_start(const struct config *c, const char *cert_pem, const char *key_pem,
                 route_match_fn *match, char *err, size_t errlen)
{
    cfg = c;
    pipeline_init(c->auth_rate_limit);
    route_match = match;
    if (forwarded_parse_list(c->trusted_proxy, &proxies, err, errlen) != 0)
        return -1;
    struct conn_guard_limits limits = {
        .max_connections = c->max_connections,
        .max_per_address = c->max_connections_per_address,
        .head_timeout_ms = c->head_timeout_ms,
        .idle_timeout_ms = c->idle_timeout_ms,
        .body_timeout_ms = c->body_timeout_ms,
        .body_min_rate = c->body_min_rate,
        .n_exempt = proxies.n,
    };
    for (int i = 0; i < proxies.n; i++)
        limits.exempt[i] = proxies.addr[i];
    if (conn_guard_start(&limits) != 0) {
        snprintf(err, errlen, "cannot start the connection deadline thread");
        return -1;
    }
    /* --listen: one or more addresses, each with its own listening sockets and daemons. */
    char list[sizeof c->listen];
    snprintf(list, sizeof list, "%s", c->listen);
    char *save = NULL;
    for (char *addr = strtok_r(list, ",", &save); addr; addr = strtok_r(NULL, ",", &save)) {
        if (n_listeners == SERVER_MAX_LISTEN) {
            snprintf(err, errlen, "--listen names more than %d addresses", SERVER_MAX_LISTEN);
            goto fail;
        }
        struct listener_set *ls = &listeners[n_listeners++];
        *ls = (struct listener_set){ .https_fd = -1, .http_fd = -1 };
        snprintf(ls->addr, sizeof ls->addr, "%s", addr);
        ls->https_fd = open_listener(addr, c->https_port, err, errlen);
        if (ls->https_fd < 0)
            goto fail;
        if (c->http_port) {
            ls->http_fd = open_listener(addr, c->http_port, err, errlen);
            if (ls->http_fd < 0)
                goto fail;
        }
    }
    own_accept = c->proxy_protocol;
    for (int i = 0; i < n_listeners; i++) {
        struct listener_set *ls = &listeners[i];
        ls->https = start_daemon(LISTENER_HTTPS, ls->addr, own_accept ? -1 : ls->https_fd, c,
                                 cert_pem, key_pem);
        if (!ls->https) {
            snprintf(err, errlen, "cannot start the HTTPS server (check the TLS certificate "
                                  "and key)");
            goto fail;
        }
        if (!own_accept)
            ls->https_fd = -1; /* the daemon closes it */
        if (c->http_port) {
            ls->http = start_daemon(LISTENER_HTTP, ls->addr, ls->http_fd, c, NULL, NULL);
            if (!ls->http) {
                snprintf(err, errlen, "cannot start the plain-HTTP listener");
                goto fail;
            }
            ls->http_fd = -1;
        }
    }
    if (own_accept && start_own_accept(c) != 0) {
        snprintf(err, errlen, "cannot start the PROXY protocol accept thread");
        goto fail;
    }
    return 0;
fail:
    server_stop();
    return -1;
}

/* Waits at most ms for the requests in flight to end; true when none is left. */
static bool wait_in_flight(int ms)
{
    double deadline = now_ms() + ms;
    while (atomic_load(&in_flight) > 0 && now_ms() < deadline) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return atomic_load(&in_flight) == 0;
}

/* Answers the offloaded requests still queued, none of which ran, 503 without running them,
 * and wakes their connections. Returns how many. */
static int refuse_queued_offloads(void)
{
    int n = 0;
    for (struct offload_item *it = offload_take_queued(), *next; it; it = next) {
        next = it->next; /* it lives in its request, which is not ours once resumed */
        struct req *r = it->ctx;
        req_problem(r, 503, "unavailable", "The server is shutting down; retry shortly.");
        req_set_header(r, "Connection", "close");
        idempotency_finish(r);
        MHD_resume_connection(r->conn);
        n++;
    }
    return n;
}

void server_stop(void)
{
    /* New requests are answered 503 while the ones in flight finish. MHD_quiesce_daemon is not
     * used: in libmicrohttpd 0.9.75 its removal of the listen socket from each worker's epoll
     * set races the workers doing the same, and the loser aborts the process ("Failed to
     * remove listen FD from epoll set"). */
    pipeline_set_draining(true);
    int drain_ms = cfg ? cfg->drain_timeout_ms : 10000;
    if (!wait_in_flight(drain_ms)) {
        /* Past the drain timeout, the logins still queued (a password hash each, on two
         * threads) could hold the stop for minutes: they are refused, and what is under way
         * (a hash, writes waiting for their fsync) gets as long again to end. Stopping
         * libmicrohttpd with a connection still suspended aborts the process. */
        int refused = refuse_queued_offloads();
        log_warn("server: drain timeout (%d ms) passed; %d queued request(s) answered 503 "
                 "unrun", drain_ms, refused);
        if (!wait_in_flight(drain_ms))
            log_error("server: %d request(s) still under way after twice the drain timeout "
                      "(an fsync that does not return?); stopping anyway",
                      atomic_load(&in_flight));
    }
    /* Nothing is handed to a daemon once it stops. */
    proxy_listen_stop();
    /* MHD_stop_daemon closes the listen socket it was given; one never handed over (a
     * failed start) is closed here. */
    for (int i = 0; i < n_listeners; i++) {
        struct listener_set *ls = &listeners[i];
        if (ls->http)
            MHD_stop_daemon(ls->http);
        if (ls->https)
            MHD_stop_daemon(ls->https);
        if (ls->http_fd >= 0)
            close(ls->http_fd);
        if (ls->https_fd >= 0)
            close(ls->https_fd);
    }
    n_listeners = 0;
    conn_guard_stop();
    pipeline_set_draining(false);
}
