/* One HTTP request as the generated dispatchers and the handlers see it: the arena, the
 * matched operation and parameters, the authenticated principal, and the response being built.
 * Everything reachable from a struct req lives in r->arena unless a field says otherwise. */
#ifndef RUNTIME_REQ_H
#define RUNTIME_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/arena.h"
#include "runtime/group_commit.h"
#include "runtime/http_strict.h"
#include "runtime/offload.h"
#include "runtime/op.h"
#include "runtime/verr.h"

struct MHD_Connection;
struct conn_slot;

struct principal {
    bool authenticated;
    const char *user_id;      /* "usr_..." (JWT sub) */
    const char *workspace_id; /* "wsp_..." (JWT wid) */
    const char *session_id;   /* JWT sid */
    const char *token_id;     /* JWT jti */
    const char *client_id;    /* the OAuth application the token was issued to; NULL for our
                                 own (first-party) tokens */
    uint64_t scopes;          /* granted scope bits, workspace:admin already expanded */
};

#define REQ_MAX_HEADERS 32

struct req_header {
    const char *name;
    const char *value;
};

/* A session, token or principal id to refuse once the request's transaction committed, until
 * until_s (Unix seconds; INT64_MAX for ever). */
struct req_revocation {
    const char *id;
    int64_t until_s;
    struct req_revocation *next;
};

struct req {
    struct arena arena;
    struct MHD_Connection *conn;
    const char *method;
    const char *path;        /* full URL path as received (e.g. "/v1/beneficiaries/ben_...") */
    const char *request_id;  /* X-Request-ID when given and valid, else generated "req_..." */
    struct route_match match;
    const struct op *op;
    struct principal principal;
    const char *body; /* NUL-terminated copy of the request body; NULL when none */
    size_t body_len;
    struct verr_list verr;

    /* Response being built. */
    int status;               /* 0 until set */
    char *resp_body;          /* malloc'd; ownership passes to libmicrohttpd */
    size_t resp_len;
    const char *content_type; /* static string */
    struct req_header resp_headers[REQ_MAX_HEADERS];
    int n_resp_headers;
    bool problem; /* the response is a problem document */
    const char *problem_code;   /* also in the access log */
    const char *problem_detail; /* lives in the arena */
    /* One member a problem of an operation adds beside errors (a journal's `imbalances`):
     * its name and JSON value text, in the arena; NULL: none (req_problem_member). */
    const char *problem_member, *problem_member_json;
    bool with_errors;           /* include verr as errors[] */

    /* Idempotency (runtime/idempotency.c). */
    const char *idem_key;          /* the client's key when this request is idempotent */
    const char *idem_header;       /* the header it came in: Idempotency-Key or X-Request-ID */
    char idem_fingerprint[65];     /* SHA-256 hex of the canonical body */
    unsigned char idem_claim[32];  /* SHA-256 of scope + key, claimed in this process */
    bool idem_claimed;
    bool replayed;                 /* answered from a stored record */
    bool handler_ran;              /* parameters and body were valid and the handler was called
                                      (set by the generated dispatcher) */

    /* The operation's declared audit record (x-audit, runtime/audit.h). */
    struct req_audit {
        const char *fields; /* the declared request members, a JSON object's text (set by the
                               dispatcher before the handler) */
        bool written;       /* the declared record is written (audit_change, or the
                               dispatcher's after a success when the handler reported none) */
    } audit;
    /* A 204's declared event (x-event) is about the resource the handler last inserted or
     * saved through runtime/resource.h: when the dispatcher wants it, the save encodes it
     * there and then (the handler's struct may live on its stack). */
    struct req_saved {
        bool wanted;      /* set by the dispatcher */
        const char *json; /* the resource as saved, in r->arena; NULL: nothing saved */
        const char *id;
        int64_t version;
    } saved;

    /* Set by handlers. */
    bool keep_writes; /* commit even though the answer is a problem (the refusal itself changed
                         state, e.g. a reused refresh token revokes its session) */
    struct req_revocation *revocations; /* refused from the next request once the transaction
                                           committed (runtime/revocation.h) */
    void (*on_rewind)(struct req *r); /* undoes what the handler did outside the database when
                                         its run is thrown away to be run again (group commit:
                                         runtime/group_commit.h), e.g. gives back a spent
                                         attempt */
    const char *on_rewind_arg;
    const char *form_action; /* an origin a page's form may lead to besides this server (the
                                OAuth redirect after consent); NULL: none */

    /* Runtime bookkeeping (server.c). */
    bool tls;             /* arrived over HTTPS (or a trusted proxy said so) */
    const char *peer;     /* client address, text (behind a trusted proxy: X-Forwarded-For's) */
    bool via_proxy;       /* the connection came from a trusted proxy */
    const char *origin;   /* the Origin header (a browser's cross-origin request), or NULL */
    struct conn_slot *slot;       /* the connection's deadlines (runtime/conn_guard.h) */
    bool begun;                   /* the head was complete and checked (first handler call) */
    const char *raw_target;       /* the target in libmicrohttpd's buffer, and its length as
                                     a C string, before it was decoded in place */
    size_t raw_target_len;
    bool target_bad;              /* the raw request target failed http_strict_target */
    struct http_fault target_fault;
    const struct http_field *fields; /* the request's header fields in order (arena) */
    size_t n_fields;
    double started_ms;    /* monotonic start */
    char *upload;         /* malloc'd body accumulator */
    size_t upload_len, upload_cap;
    bool upload_too_large;
    bool answered_early;  /* its Content-Length was refused before the body was read */
    size_t dropped;       /* body bytes read and dropped (past the cap, or not wanted) */
    bool queued;
    int route_result;     /* enum route_result, matched on the first call */
    int op_headers;       /* response headers set before the operation ran (a failed commit
                             drops the operation's own: Location, ETag) */
    bool handed_off;      /* a write given to the group commit; answered once it resumes us */
    bool must_commit;     /* the operation kept writes: its answer stands only if committed */
    struct group_commit_item write; /* its queue entry */
    struct offload_item offload;     /* an x-own-transaction operation's entry (runtime/offload.h) */
    struct req *before_run; /* a copy taken before its first group-commit run, for a second */
    char allow[128];      /* Allow header value for 405 */
};

/* First value of a request header / query argument / cookie, NULL when absent. Lives in MHD's
 * memory for the life of the request. */
const char *req_header(const struct req *r, const char *name);
const char *req_query(const struct req *r, const char *name);
const char *req_cookie(const struct req *r, const char *name);
/* Every value of a query argument given once or more (`?status=a&status=b`), in request order:
 * the first max into out (a key without `=` gives ""), the number of occurrences returned
 * (more than max when the client sent more). Values live in MHD's memory like req_query's. */
size_t req_query_values(const struct req *r, const char *name, const char **out, size_t max);
/* The value of an RFC 8288 Link header naming the next page of a list: this request's path and
 * query arguments (filters, limit, in the order sent, percent-encoded again) with `cursor` set
 * to cursor: `</v1/payments?limit=2&cursor=...>; rel="next"`. In r->arena. */
const char *req_next_link(struct req *r, const char *cursor);
/* The operation the request was routed to, also when it was refused before the operation
 * ran (plain HTTP, shutting down); NULL when none matched or the head was refused. */
const struct op *req_routed_op(const struct req *r);
/* Path parameter captured by the router, NULL when the template has no such name. */
const char *req_path_param(const struct req *r, const char *name);
/* Adds a response header; name and value are copied into the arena. */
void req_set_header(struct req *r, const char *name, const char *value);
/* A response header set so far, or NULL. */
const char *req_response_header(const struct req *r, const char *name);
/* Sets an application/json response; takes ownership of the malloc'd body. */
void req_set_json(struct req *r, int status, char *body, size_t len);
/* The content type of server-rendered pages; the server adds the page security headers
 * (runtime/html.h) to every response of this type. */
#define REQ_HTML "text/html; charset=utf-8"
/* Sets a text/html response with a copy of document. 0 / -1. */
int req_set_html(struct req *r, int status, const char *document);

/* Sets a response of another media type (content_type static, e.g. media_content_type())
 * with a copy of body[0..len). 0 / -1. */
int req_set_body(struct req *r, int status, const char *content_type, const char *body,
                 size_t len);

/* Records an RFC 9457 problem response (application/problem+json) with `code` and a
 * printf-style detail; the body is built when the response is sent. Handlers return 0 after
 * calling it. Validation errors collected in r->verr are included as `errors[]`. */
void req_problem(struct req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds to the problem just recorded one member its operation documents beside `errors`
 * (name, and its value as JSON text, copied): a journal entry's `imbalances`. */
void req_problem_member(struct req *r, const char *name, const char *json);
/* Takes back the problem recorded (and the violations collected): for work that runs for no
 * client (a worker's step) and goes on after a refusal it has logged. */
void req_problem_clear(struct req *r);
/* Problem with the collected r->verr as errors[] (status 422 unless given otherwise). */
void req_problem_validation(struct req *r, int status, const char *detail);

/* Optimistic concurrency: a resource's ETag is "v<version>" (result lives in r->arena);
 * If-Match (already checked against the IfMatch pattern) matches when it names exactly that
 * version, or is "*" (RFC 9110 §13.1.1: the resource exists, which the caller has found). */
char *req_etag(struct req *r, int64_t version);
bool req_if_match(const char *if_match, int64_t version);
/* 412 precondition_failed for an If-Match naming another version. */
void req_precondition_failed(struct req *r, const char *if_match, int64_t version);

#endif
