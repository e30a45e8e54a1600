/* An operation descriptor: what the generated route table tells the runtime about one
 * operation. The table itself is generated (generated/routes.c); the runtime knows no API. */
#ifndef RUNTIME_OP_H
#define RUNTIME_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req;

/* Where an audit record's resource id comes from (x-audit id). */
enum op_audit_id { OP_AUDIT_ID_PATH, OP_AUDIT_ID_RESPONSE, OP_AUDIT_ID_PRINCIPAL,
                   OP_AUDIT_ID_HANDLER };

/* x-audit: the record the dispatcher writes after every success of a write operation
 * (runtime/audit.h, audit_declared_write). */
struct op_audit {
    const char *resource_type;
    const char *const *actions;  /* NULL-terminated; [0] unless by status or the handler picks */
    const int *action_statuses;  /* parallel to actions when the action depends on the status,
                                    else NULL */
    enum op_audit_id id_from;
    const char *id_param;        /* the path parameter's name, or the principal's member
                                    (user_id, session_id) */
};

/* Generated glue: params -> typed request -> handler -> typed response -> JSON.
 * Returns 0 (response or problem recorded on r) or -1 (unexpected failure -> 500). */
typedef int op_dispatch_fn(struct req *r);

struct op {
    const char *operation_id;   /* "beneficiaries_create" style, from operationId */
    const char *method;         /* "GET", "POST", ... */
    const char *base;           /* server prefix: "/v1", or "" for path items overriding servers with "/" */
    const char *path;           /* template without the server prefix: "/beneficiaries/{id}" */
    const char *tag;
    bool is_public;             /* security: [] */
    uint64_t scopes;            /* all of these scope bits are required (generated/scopes.h) */
    const char *scopes_text;    /* space-separated, for WWW-Authenticate scope="..." */
    bool idempotent;            /* x-idempotent (default: true for POST/PUT/PATCH) */
    bool no_replay;             /* x-replay: false: a success's answer holds a secret shown
                                   once; its key is kept, its body is not (a retry: 409) */
    const char *rate_limit_class; /* x-rate-limit-class, default "default" */
    size_t max_body_bytes;      /* x-max-body-bytes, default 65536; 0 when no request body */
    bool planned;               /* x-status: planned -> answered 501 by the dispatcher */
    bool has_body;
    bool form_body;             /* also accepts application/x-www-form-urlencoded (string values) */
    unsigned raw_body_media;    /* a non-JSON body: the MEDIA_BIT()s of its types
                                   (runtime/media.h), checked by the dispatcher; 0 for JSON */
    bool body_required;
    bool page;                  /* answers text/html pages, its errors too (rendered by the
                                   runtime from the problem as an HTML error page) */
    bool negotiated;            /* its success offers several media types (Accept): every
                                   answer carries Vary: Accept */
    bool first_party;           /* x-first-party: refused to tokens of OAuth applications */
    bool oauth_errors;          /* x-oauth-errors: an RFC 6749 endpoint; its problems are sent
                                   as RFC 6749 §5.2 JSON (runtime/oauth_error.h), and every
                                   answer with Pragma: no-cache */
    bool own_transaction;       /* x-own-transaction: the handler begins and ends its own
                                   transactions; never group-committed (runtime/writer.h) */
    const struct op_audit *audit; /* x-audit; NULL for reads and writes declared none */
    bool if_match_required;     /* x-if-match: required (the dispatcher answers 428) */
    const int *statuses;        /* documented response statuses, 0-terminated */
    op_dispatch_fn *dispatch;
};

#define ROUTE_MAX_PARAMS 8

struct route_match {
    const struct op *op;
    int n_params;
    const char *names[ROUTE_MAX_PARAMS];  /* static, from the template */
    const char *values[ROUTE_MAX_PARAMS]; /* live in the request arena */
};

enum route_result { ROUTE_FOUND = 0, ROUTE_NOT_FOUND = 1, ROUTE_METHOD_NOT_ALLOWED = 2 };

struct arena;

/* The generated matcher's type (generated/routes.h: routes_match), handed to the server by
 * main.c so runtime/ never includes generated/. */
typedef enum route_result route_match_fn(struct arena *a, const char *method, const char *path,
                                         struct route_match *m, char *allow, size_t allow_len);

#endif
