/* The request pipeline (pipeline.h): what becomes of a request once its head and body are in.
 * runtime/server.c reads them and sends the answer this leaves in the struct req. */
#include "runtime/pipeline.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "runtime/auth.h"
#include "runtime/cors.h"
#include "runtime/form.h"
#include "runtime/format.h"
#include "runtime/group_commit.h"
#include "runtime/id.h"
#include "runtime/idempotency.h"
#include "runtime/ipaddr.h"
#include "runtime/log.h"
#include "runtime/offload.h"
#include "runtime/ratelimit.h"
#include "runtime/revocation.h"
#include "runtime/storage.h"

static int auth_rate_limit;
static atomic_bool draining; /* shutting down: new requests get 503 */

void pipeline_init(int auth_limit)
{
    auth_rate_limit = auth_limit;
}

void pipeline_set_draining(bool on)
{
    atomic_store(&draining, on);
}

void pipeline_request_id(struct req *r)
{
    const char *rid = req_header(r, "X-Request-ID");
    r->request_id = format_is_uuid(rid) ? arena_strdup(&r->arena, rid) : id_new(&r->arena, "req");
}

/* Whether the Content-Type's media type (parameters such as charset ignored) is want. */
static bool is_media_type(const char *ct, const char *want)
{
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    size_t n = strcspn(ct, "; ");
    return n == strlen(want) && strncasecmp(ct, want, n) == 0;
}

/* The body as the dispatcher reads it: JSON as sent, or a form turned into a JSON object of
 * strings for the operations that accept one. false when a problem was recorded. */
static bool take_body(struct req *r)
{
    const char *ct = req_header(r, "Content-Type");
    if (r->op->raw_body_media) { /* the bytes as sent: the dispatcher checks the type (415) */
        r->body = r->upload;
        r->body_len = r->upload_len;
        return true;
    }
    if (!ct && r->upload_len == 0 && !r->op->body_required)
        return true; /* an optional body not sent (POST .../reverse): no type to check */
    if (is_media_type(ct, "application/json")) {
        r->body = r->upload;
        r->body_len = r->upload_len;
        return true;
    }
    if (r->op->form_body && is_media_type(ct, "application/x-www-form-urlencoded")) {
        char *json = NULL;
        const char *why = NULL;
        if (form_to_json(&r->arena, r->upload ? r->upload : "", r->upload_len, &json,
                         &r->body_len, &why) != 0) {
            req_problem(r, 400, "invalid_request", "The form body is malformed: %s.", why);
            return false;
        }
        r->body = json;
        return true;
    }
    req_problem(r, 415, "unsupported_media_type",
                r->op->form_body ? "Send the request body as Content-Type: application/json or "
                                   "application/x-www-form-urlencoded."
                                 : "Send the request body as Content-Type: application/json.");
    return false;
}

/* The client address as a quota key: an IPv6 client is counted by its /64, the block one
 * subscriber usually holds, so rotating addresses inside it is no way around the limit. */
static void address_key(const struct req *r, const char *prefix, char *key, size_t n)
{
    struct ipaddr a;
    if (ipaddr_parse(r->peer, strlen(r->peer), &a) && !ipaddr_is_v4(&a)) {
        char text[INET6_ADDRSTRLEN];
        struct ipaddr block = ipaddr_block(&a);
        ipaddr_text(&block, text, sizeof text);
        snprintf(key, n, "%s%s/64", prefix, text);
        return;
    }
    snprintf(key, n, "%s%s", prefix, r->peer);
}

/* Counts the request against its quota and records a 429 when over. Returns false when
 * limited. Policies: `auth` operations (login) per client address with their own tight quota;
 * everything else per workspace once authenticated, per client address before. */
static bool count_request(struct req *r)
{
    char key[RATELIMIT_KEY_MAX + 1];
    const char *policy = "default";
    int64_t limit = ratelimit_default();
    if (r->op && strcmp(r->op->rate_limit_class, "auth") == 0) {
        policy = "auth";
        limit = auth_rate_limit;
        address_key(r, "auth:", key, sizeof key);
    } else if (r->principal.authenticated) {
        ratelimit_workspace_key(key, sizeof key, r->principal.workspace_id);
    } else {
        address_key(r, "ip:", key, sizeof key);
    }
    struct ratelimit_verdict v;
    ratelimit_check(key, limit, RATELIMIT_WINDOW_S, ratelimit_now_ns(), &v);
    ratelimit_set_headers(r, policy, &v);
    if (!v.allowed) {
        req_problem(r, 429, "rate_limited",
                    "Rate limit of %lld requests per minute exceeded; retry in %lld s.",
                    (long long)v.limit, (long long)v.retry_after);
        return false;
    }
    return true;
}

static void internal_error(struct req *r, const char *detail)
{
    req_problem(r, 500, "internal_error", "%s", detail);
}

/* A change that was not stored after all: the operation's answer (and its Location or ETag)
 * gives way to a 500 that says so. */
static void not_stored(struct req *r)
{
    log_error("commit failed for %s (request %s)", r->op->operation_id, r->request_id);
    r->n_resp_headers = r->op_headers;
    internal_error(r, "The server could not durably store the change; nothing was changed.");
}

/* What becomes of the writes of an operation that ran. */
enum writes {
    WRITES_DISCARD,              /* roll back */
    WRITES_KEEP,                 /* commit: a success (its idempotency record included), or a
                                    refusal that itself changed state (keep_writes) */
    WRITES_DISCARD_STORE_ANSWER, /* roll back, then store the handler's own refusal (404, 409,
                                    412, a business 422) as the answer to its idempotency key */
};

/* The operation inside the open transaction: a replay of a stored idempotent answer, or the
 * handler; a successful idempotent answer is stored in the same transaction as its writes. */
static enum writes execute(struct req *r)
{
    if (r->idem_key) {
        int found = idempotency_lookup(r);
        if (found != 0) {
            if (found < 0)
                internal_error(r, "The server failed to complete the request; nothing was changed.");
            return WRITES_DISCARD;
        }
    }
    r->op_headers = r->n_resp_headers;
    if (r->op->dispatch(r) != 0) {
        log_error("operation %s failed (request %s)", r->op->operation_id, r->request_id);
        r->n_resp_headers = r->op_headers;
        internal_error(r, "The server failed to complete the request; nothing was changed.");
        return WRITES_DISCARD;
    }
    if (r->keep_writes && r->problem && r->status < 500)
        return WRITES_KEEP;
    if (r->status >= 200 && r->status < 400 && !r->problem) {
        if (r->idem_key && r->status < 300 && idempotency_store(r, r->op_headers) != 0) {
            r->n_resp_headers = r->op_headers;
            internal_error(r, "The server failed to complete the request; nothing was changed.");
            return WRITES_DISCARD;
        }
        return WRITES_KEEP;
    }
    if (r->idem_key && r->handler_ran && r->status < 500)
        return WRITES_DISCARD_STORE_ANSWER;
    return WRITES_DISCARD;
}

static void refusal_not_stored(const struct req *r)
{
    log_warn("idempotency: could not store the %d answer of request %s; a retry will run again",
             r->status, r->request_id);
}

static void rewind_request(struct req *r);

/* How often a transaction that failed on a conflict with a concurrent one (PostgreSQL's
 * serialization failures and deadlocks: storage_should_retry) is run again before the client
 * gets a 503. Each run starts from the request as it arrived (rewind_request). */
#define CONFLICT_RUNS 8

/* One run of the operation in a transaction on this thread. Returns true when it failed on a
 * conflict and may be run again. */
static bool run_once(struct req *r, bool write)
{
    if (storage_begin(write) != 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return false;
    }
    enum writes w = execute(r);
    if (w == WRITES_KEEP) {
        if (storage_commit() != 0) {
            if (storage_should_retry())
                return true;
            not_stored(r);
        } else {
            revocation_publish(r);
        }
        return false;
    }
    storage_rollback();
    if (storage_should_retry())
        return true;
    if (w == WRITES_DISCARD_STORE_ANSWER) {
        if (storage_begin(true) != 0 || idempotency_store(r, r->op_headers) != 0 ||
            storage_commit() != 0) {
            storage_rollback();
            storage_should_retry();
            refusal_not_stored(r);
        }
    }
    return false;
}

/* Reads, the writes of x-own-transaction operations, and every write on an engine without
 * the group-commit writer: one transaction on this thread, run again from the start while it
 * fails on a conflict with a concurrent one (never on SQLite: one writer). */
static void run_operation(struct req *r, bool write)
{
    if (storage_batches_writes()) {
        run_once(r, write);
        return;
    }
    r->before_run = arena_alloc(&r->arena, sizeof *r);
    *r->before_run = *r;
    /* A workspace's writes all extend its audit chain: they queue rather than conflict and
     * run again (storage_begin_serial), also those a handler begins itself. */
    storage_serialize_writes(write && r->principal.authenticated ? r->principal.workspace_id
                                                                 : NULL);
    for (int run = 1;; run++) {
        uint64_t commits = storage_commit_count();
        if (!run_once(r, write))
            break;
        rewind_request(r);
        /* A handler that committed part of its work on the way (a login records a failure
         * before it hashes) cannot be run from the start: that part would count twice. */
        bool partly = storage_commit_count() != commits;
        if (run == CONFLICT_RUNS || partly) {
            req_problem(r, 503, "unavailable", "%s",
                        partly ? "The request met a concurrent change; retry shortly."
                               : "The request met too many concurrent changes; nothing was "
                                 "changed. Retry shortly.");
            req_set_header(r, "Retry-After", "1");
            break;
        }
        log_warn("operation %s (request %s) met a concurrent transaction; run %d of %d",
                 r->op->operation_id, r->request_id, run + 1, CONFLICT_RUNS);
        /* Apart a little, growing, so that two colliding requests do not collide again. */
        struct timespec pause = {0, (long)(rand() % (run * 2000) + 500) * 1000L};
        nanosleep(&pause, NULL);
    }
    storage_serialize_writes(NULL);
}

/* A run that must be repeated starts from the request as it was handed over: the handler's
 * on_rewind undoes what it did outside the database, then the answer, its headers and
 * whatever the handler set are put back (the arena keeps what the first run allocated; its
 * response body, if any, is freed). */
static void rewind_request(struct req *r)
{
    struct req *from = r->before_run;
    if (r->on_rewind)
        r->on_rewind(r);
    struct arena arena = r->arena;
    struct group_commit_item write = r->write;
    if (r->resp_body != from->resp_body)
        free(r->resp_body);
    *r = *from;
    r->arena = arena;
    r->write = write;
    r->before_run = from;
}

/* A request's part of the batch's transaction: in a savepoint of its own (guarded) or straight
 * in the transaction. end: 0 kept or undone, 1 must be undone by the whole transaction (only
 * unguarded), -1 the transaction is gone or was misused. */
static int part_begin(bool guarded)
{
    return guarded ? storage_savepoint() : storage_unguarded_begin();
}

static int part_end(bool guarded, bool keep)
{
    return guarded ? storage_savepoint_end(keep) : storage_unguarded_end(keep);
}

/* Every other write, on the group-commit writer thread, inside the batch's transaction: first
 * unguarded (no savepoint: cheaper). Returns true when it must be undone: the writer then
 * rolls the batch back and runs it again guarded, each request in a savepoint of its own,
 * where a refusal or a failed statement rolls back to the savepoint, undoing this request
 * only. */
static bool run_batched(void *ctx, bool guarded)
{
    struct req *r = ctx;
    if (!guarded) {
        r->before_run = arena_alloc(&r->arena, sizeof *r);
        *r->before_run = *r;
    } else if (r->before_run) {
        rewind_request(r);
    }
    if (part_begin(guarded) != 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return false;
    }
    enum writes w = execute(r);
    int end = part_end(guarded, w == WRITES_KEEP);
    if (end > 0)
        return true;
    if (end < 0) {
        r->n_resp_headers = r->op_headers;
        internal_error(r, "The server failed to complete the request; nothing was changed.");
        return false;
    }
    r->must_commit = w == WRITES_KEEP;
    if (w == WRITES_DISCARD_STORE_ANSWER) {
        if (part_begin(guarded) != 0) {
            refusal_not_stored(r);
            return false;
        }
        bool stored = idempotency_store(r, r->op_headers) == 0;
        end = part_end(guarded, stored);
        if (end > 0)
            return true;
        if (end < 0 || !stored)
            refusal_not_stored(r);
    }
    return false;
}

/* The batch ended: settle the answer, then wake the connection (after which r is not ours). */
static void batch_done(void *ctx, enum group_commit_outcome outcome)
{
    struct req *r = ctx;
    if (outcome == GROUP_COMMIT_NOT_RUN)
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
    else if (r->must_commit && outcome == GROUP_COMMIT_LOST)
        not_stored(r);
    else if (r->must_commit)
        revocation_publish(r);
    idempotency_finish(r);
    MHD_resume_connection(r->conn);
}

/* An x-own-transaction operation, on an offload thread; then, once what it read is durable,
 * wakes the connection (after which r is not ours). */
static void run_offloaded(void *ctx)
{
    struct req *r = ctx;
    bool write = strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
    storage_used();
    run_operation(r, write);
    idempotency_finish(r);
    if (storage_used() && storage_batches_writes())
        group_commit_wait_durable(group_commit_visible());
    MHD_resume_connection(r->conn);
}

static void durable_done(void *ctx, enum group_commit_outcome outcome)
{
    (void)outcome;
    struct req *r = ctx;
    MHD_resume_connection(r->conn);
}

bool pipeline_wait_until_durable(struct req *r)
{
    /* PostgreSQL shows a commit to others only once it is flushed (synchronous_commit=on). */
    if (!storage_used() || !storage_batches_writes())
        return false;
    group_commit_note_read();
    uint64_t seq = group_commit_visible();
    if (group_commit_durable(seq))
        return false;
    r->handed_off = true;
    r->write = (struct group_commit_item){ .done = durable_done, .ctx = r };
    MHD_suspend_connection(r->conn); /* first: the syncer may resume it at once */
    if (!group_commit_after_durable(seq, &r->write))
        MHD_resume_connection(r->conn); /* durable meanwhile */
    return true;
}

/* The methods a path allows, as the Allow header lists them: the generated router's, with
 * HEAD wherever GET is (server.c serves it) and OPTIONS (answered here for every path). */
static const char *allowed_methods(struct req *r)
{
    bool get = false;
    for (const char *p = r->allow; *p; p += strcspn(p, ",")) {
        while (*p == ',' || *p == ' ')
            p++;
        if (strncmp(p, "GET", 3) == 0 && (p[3] == ',' || p[3] == '\0'))
            get = true;
    }
    return arena_printf(&r->arena, "%s%s%sOPTIONS", r->allow, get ? ", HEAD" : "",
                        r->allow[0] ? ", " : "");
}

bool pipeline_process(struct req *r, bool plain_listener)
{
    pipeline_request_id(r);

    if (!r->tls) {
        const char *fwd = req_header(r, "X-Forwarded-Proto");
        if (plain_listener && r->via_proxy &&
            fwd && strcasecmp(fwd, "https") == 0) {
            r->tls = true;
        } else {
            count_request(r);
            req_problem(r, 400, "use_https",
                        "This API is served over HTTPS only; repeat the request with https://.");
            return false;
        }
    }
    if (atomic_load(&draining)) {
        count_request(r);
        req_problem(r, 503, "unavailable", "The server is shutting down; retry shortly.");
        req_set_header(r, "Connection", "close");
        return false;
    }
    if (r->target_bad) {
        count_request(r);
        req_problem(r, r->target_fault.status, r->target_fault.code, "%s",
                    r->target_fault.detail);
        return false;
    }
    enum route_result rr = (enum route_result)r->route_result;
    if (rr != ROUTE_FOUND) {
        if (!count_request(r))
            return false;
        const char *allow = allowed_methods(r);
        if (rr == ROUTE_METHOD_NOT_ALLOWED && strcmp(r->method, "OPTIONS") == 0) {
            if (cors_is_preflight(r)) {
                cors_preflight(r, allow);
            } else {
                r->status = 204; /* RFC 9110 §9.3.7: what the path allows */
                req_set_header(r, "Allow", allow);
            }
        } else if (rr == ROUTE_METHOD_NOT_ALLOWED) {
            req_problem(r, 405, "method_not_allowed", "%s is not allowed on %s; allowed: %s.",
                        r->method, r->path, allow);
            req_set_header(r, "Allow", allow);
        } else {
            req_problem(r, 404, "not_found", "No operation is served at %s.", r->path);
        }
        return false;
    }
    r->op = r->match.op;
    if (!r->op->is_public && auth_check(r) != 0) {
        count_request(r);
        return false;
    }
    if (!count_request(r))
        return false;
    /* Answered before the body is read (begin_request): also an operation that takes no body
     * is refused here rather than run, since it must not be handed off on the first call. */
    if (r->upload_too_large && (r->op->has_body || r->answered_early)) {
        req_problem(r, 413, "payload_too_large", "The request body exceeds %zu bytes.",
                    r->op->has_body ? r->op->max_body_bytes : (size_t)PIPELINE_DROP_BODY_MAX);
        return false;
    }
    if (r->op->has_body) {
        if (!take_body(r))
            return false;
    }
    if (r->op->idempotent && r->principal.authenticated && idempotency_prepare(r) != 0)
        return false;
    bool write = strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
    if (write && !r->op->own_transaction && storage_batches_writes()) {
        r->handed_off = true;
        r->write = (struct group_commit_item){ .run = run_batched, .done = batch_done, .ctx = r };
        /* Suspended first: the writer may finish and resume it before submit returns. */
        MHD_suspend_connection(r->conn);
        group_commit_submit(&r->write);
        return true;
    }
    if (r->op->own_transaction || write) {
        enum offload_lane lane = r->op->own_transaction ? OFFLOAD_HASHING : OFFLOAD_WRITES;
        /* It hashes a password, or is a write on an engine that takes them on every connection:
         * off this thread, which serves other connections meanwhile. */
        r->handed_off = true;
        /* A workspace's writes take their turns on its lock anyway: a few of them hold write
         * threads at once, the rest wait without one (offload.h). */
        const char *key = lane == OFFLOAD_WRITES && r->principal.authenticated
                              ? r->principal.workspace_id
                              : NULL;
        r->offload = (struct offload_item){ .run = run_offloaded, .ctx = r, .key = key };
        MHD_suspend_connection(r->conn);
        offload_submit(lane, &r->offload);
        return true;
    }
    run_operation(r, write);
    idempotency_finish(r);
    return false;
}
