/* Idempotency records in the idempotency_keys table, and the in-process claims that turn a
 * concurrent retry into 409 instead of a second execution. The record is written inside the
 * request's own transaction, so a crash leaves either the write and its record, or neither. */
#include "runtime/idempotency.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/media.h"
#include "runtime/storage.h"

#define CLAIM_BUCKETS 256
#define PROBLEM_TYPE "application/problem+json"

/* ---- in-process claims: a set of scope hashes --------------------------------------------- */

struct claim {
    unsigned char id[32];
    struct claim *next;
};

static idempotency_retention_fn *retention_source;

void idempotency_set_retention_source(idempotency_retention_fn *fn)
{
    retention_source = fn;
}

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct claim *claims[CLAIM_BUCKETS];

static bool claim(const unsigned char id[32])
{
    struct claim **b = &claims[id[0]];
    bool ok = true;
    pthread_mutex_lock(&claims_lock);
    for (struct claim *c = *b; c; c = c->next) {
        if (memcmp(c->id, id, 32) == 0) {
            ok = false;
            break;
        }
    }
    if (ok) {
        struct claim *c = malloc(sizeof *c);
        if (c) {
            memcpy(c->id, id, 32);
            c->next = *b;
            *b = c;
        } else {
            ok = false;
        }
    }
    pthread_mutex_unlock(&claims_lock);
    return ok;
}

static void unclaim(const unsigned char id[32])
{
    pthread_mutex_lock(&claims_lock);
    for (struct claim **p = &claims[id[0]]; *p; p = &(*p)->next) {
        if (memcmp((*p)->id, id, 32) == 0) {
            struct claim *dead = *p;
            *p = dead->next;
            free(dead);
            break;
        }
    }
    pthread_mutex_unlock(&claims_lock);
}

/* ---- fingerprints ------------------------------------------------------------------------- */

static const struct json_member *members_sorted(struct arena *a, const struct json_value *v)
{
    struct json_member *m = arena_alloc(a, (v->count ? v->count : 1) * sizeof *m);
    memcpy(m, v->members, v->count * sizeof *m);
    for (size_t i = 1; i < v->count; i++) { /* insertion sort: objects are small */
        struct json_member x = m[i];
        size_t j = i;
        while (j > 0 && strcmp(m[j - 1].key, x.key) > 0) {
            m[j] = m[j - 1];
            j--;
        }
        m[j] = x;
    }
    return m;
}

/* The canonical form: members sorted by key at every depth, no insignificant whitespace,
 * strings escaped one way, numbers as written (1 and 1.0 stay different requests). */
static void canonical(struct arena *a, struct jsonw *w, const struct json_value *v)
{
    if (v->type == JSON_ARRAY) {
        jsonw_array_begin(w);
        for (size_t i = 0; i < v->count; i++)
            canonical(a, w, v->items[i]);
        jsonw_array_end(w);
    } else if (v->type == JSON_OBJECT) {
        const struct json_member *m = members_sorted(a, v);
        jsonw_object_begin(w);
        for (size_t i = 0; i < v->count; i++) {
            jsonw_key(w, m[i].key);
            canonical(a, w, m[i].value);
        }
        jsonw_object_end(w);
    } else {
        jsonw_value(w, v);
    }
}

/* SHA-256 of the canonical body; of the raw bytes when it is not JSON (such a request is
 * refused before its handler runs, so it is never stored, but it must still not match).
 * An operation taking a non-JSON body (op->raw_body_media: XML, text, CSV) is fingerprinted
 * by the SHA-256 of its media type, a line feed and its bytes exactly as sent: there is no
 * canonical form to take, and the same bytes as another type are another request. */
static int fingerprint(struct req *r, char out[DIGEST_HEX_LEN + 1])
{
    struct json_value *v = NULL;
    struct json_error err;
    if (r->op && r->op->raw_body_media) {
        const char *why = NULL;
        enum media m = media_request_type(req_header(r, "Content-Type"), r->op->raw_body_media,
                                          &why);
        const char *type = m == MEDIA_NONE ? "?" : media_name(m);
        size_t tl = strlen(type);
        char *buf = arena_alloc(&r->arena, tl + 1 + r->body_len);
        memcpy(buf, type, tl);
        buf[tl] = '\n';
        if (r->body_len)
            memcpy(buf + tl + 1, r->body, r->body_len);
        return digest_sha256_hex(buf, tl + 1 + r->body_len, out);
    }
    if (r->body_len == 0 || json_parse(&r->arena, r->body, r->body_len, &v, &err) != 0) {
        char *raw = arena_alloc(&r->arena, r->body_len + 4);
        memcpy(raw, "raw:", 4);
        if (r->body_len)
            memcpy(raw + 4, r->body, r->body_len);
        return digest_sha256_hex(raw, r->body_len + 4, out);
    }
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    canonical(&r->arena, &w, v);
    char *text = jsonw_take(&w, &len);
    jsonw_release(&w);
    int rc = text ? digest_sha256_hex(text, len, out) : -1;
    free(text);
    return rc;
}

/* ---- the request's key -------------------------------------------------------------------- */

int idempotency_prepare(struct req *r)
{
    const char *name = "Idempotency-Key";
    const char *key = req_header(r, name);
    if (!key) {
        name = "X-Request-ID";
        key = req_header(r, name);
    }
    if (!key)
        return 0;
    if (!format_is_uuid(key) || strlen(key) != 36) {
        verr_add(&r->verr, "/header", name, "format", "%s",
                 "must be a UUID (8-4-4-4-12 hexadecimal digits)");
        req_problem(r, 400, "invalid_request",
                    "%s must be a UUID to make this request idempotent; send a new UUID for "
                    "each distinct request and the same one when retrying it.",
                    name);
        r->with_errors = true;
        return -1;
    }
    char *k = arena_strdup(&r->arena, key);
    for (char *p = k; *p; p++) /* one key however its hex digits are cased */
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    if (fingerprint(r, r->idem_fingerprint) != 0)
        return -1;
    char *scope = arena_printf(&r->arena, "%s\n%s\n%s\n%s\n%s", r->principal.workspace_id,
                               r->principal.user_id, r->method, r->path, k);
    if (digest_sha256(scope, strlen(scope), r->idem_claim) != 0)
        return -1;
    if (!claim(r->idem_claim)) {
        req_problem(r, 409, "idempotency_request_in_progress",
                    "A request with this %s is still being processed; retry it shortly.", name);
        req_set_header(r, "Retry-After", "1");
        return -1;
    }
    r->idem_claimed = true;
    r->idem_key = k;
    r->idem_header = name;
    return 0;
}

void idempotency_finish(struct req *r)
{
    if (r->idem_claimed) {
        unclaim(r->idem_claim);
        r->idem_claimed = false;
    }
}

static void bind_scope(struct db_stmt *st, const struct req *r)
{
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, r->principal.user_id);
    db_bind_text(st, 3, r->method);
    db_bind_text(st, 4, r->path);
    db_bind_text(st, 5, r->idem_key);
}

/* Stored headers are a JSON array of [name, value] pairs. */
static int replay_headers(struct req *r, const char *text)
{
    struct json_value *v = NULL;
    struct json_error err;
    if (json_parse(&r->arena, text, strlen(text), &v, &err) != 0 || v->type != JSON_ARRAY)
        return -1;
    for (size_t i = 0; i < v->count; i++) {
        const struct json_value *h = v->items[i];
        if (h->type != JSON_ARRAY || h->count != 2 || h->items[0]->type != JSON_STRING ||
            h->items[1]->type != JSON_STRING)
            return -1;
        req_set_header(r, h->items[0]->s, h->items[1]->s);
    }
    return 0;
}

static int replay_body(struct req *r, int status, const char *ctype, const char *body,
                       size_t len)
{
    char *copy = NULL;
    if (len > 0) {
        copy = malloc(len + 1);
        if (!copy)
            return -1;
        memcpy(copy, body, len);
        copy[len] = '\0';
    }
    req_set_json(r, status, copy, len);
    r->content_type = media_of(ctype) != MEDIA_NONE ? media_content_type(media_of(ctype)) : NULL;
    return 0;
}

/* A problem is stored as {code, detail, errors, member, member_json} and rendered again for this request, so its
 * request_id and instance are this request's, as for every problem. */
static int replay_problem(struct req *r, int status, const char *body, size_t len)
{
    struct json_value *v = NULL;
    struct json_error err;
    if (json_parse(&r->arena, body ? body : "", len, &v, &err) != 0 || v->type != JSON_OBJECT)
        return -1;
    const struct json_value *code = json_get(v, "code"), *detail = json_get(v, "detail"),
                            *errors = json_get(v, "errors");
    if (!code || code->type != JSON_STRING || !detail || detail->type != JSON_STRING ||
        (errors && errors->type != JSON_ARRAY))
        return -1;
    for (size_t i = 0; errors && i < errors->count; i++) {
        const struct json_value *e = errors->items[i], *p = json_get(e, "pointer"),
                                *c = json_get(e, "code"), *d = json_get(e, "detail");
        if (!p || !c || !d || p->type != JSON_STRING || c->type != JSON_STRING ||
            d->type != JSON_STRING)
            return -1;
        verr_add(&r->verr, p->s, NULL, c->s, "%s", d->s);
    }
    req_problem(r, status, code->s, "%s", detail->s);
    r->with_errors = errors != NULL;
    const struct json_value *m = json_get(v, "member"), *mj = json_get(v, "member_json");
    if (m && mj && m->type == JSON_STRING && mj->type == JSON_STRING)
        req_problem_member(r, m->s, mj->s);
    return 0;
}

int idempotency_lookup(struct req *r)
{
    char now[40];
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "SELECT fingerprint, status, content_type, headers, body FROM idempotency_keys "
        "WHERE workspace_id = ? AND user_id = ? AND method = ? AND path = ? AND key = ? "
        "AND expires_at > ?");
    if (!st)
        return -1;
    bind_scope(st, r);
    db_bind_text(st, 6, now);
    int rc = db_step(st), ret = 0;
    if (rc == DB_DONE)
        goto out;
    if (rc != DB_ROW) {
        log_error("idempotency: lookup failed: %s", storage_errmsg());
        ret = -1;
        goto out;
    }
    ret = 1;
    const char *fp = db_column_text(st, 0);
    if (!fp || strcmp(fp, r->idem_fingerprint) != 0) {
        req_problem(r, 422, "idempotency_key_reused",
                    "This %s was already used for a request with a different body; use a new "
                    "key for a new request.",
                    r->idem_header);
        goto out;
    }
    const char *ctype = db_column_text(st, 2);
    const char *headers = db_column_text(st, 3);
    size_t len = 0;
    const char *body = db_column_blob(st, 4, &len);
    int status = db_column_int(st, 1);
    if (r->op->no_replay && !(ctype && strcmp(ctype, PROBLEM_TYPE) == 0)) {
        /* The answer held a secret shown once (x-replay: false): only its headers were
         * kept. Running again would create a second resource; answering the first is not
         * possible. */
        if (replay_headers(r, headers ? headers : "[]") != 0) {
            log_error("idempotency: a stored record is unreadable");
            ret = -1;
            goto out;
        }
        const char *where = req_response_header(r, "Location");
        req_problem(r, 409, "idempotency_answer_not_kept",
                    "A request with this %s already succeeded (%d)%s%s. Its answer held a "
                    "secret that is shown only once, so it was not kept and cannot be "
                    "replayed; read the resource instead, and replace it if its secret was "
                    "lost.",
                    r->idem_header, status, where ? " and created " : "", where ? where : "");
        goto out;
    }
    if (replay_headers(r, headers ? headers : "[]") != 0 ||
        (ctype && strcmp(ctype, PROBLEM_TYPE) == 0
             ? replay_problem(r, status, body, len)
             : replay_body(r, status, ctype, body, len)) != 0) {
        log_error("idempotency: a stored record is unreadable");
        ret = -1;
        goto out;
    }
    req_set_header(r, "Idempotent-Replayed", "true");
    r->replayed = true;
out:
    db_reset(st);
    return ret;
}

int idempotency_store(struct req *r, int first_header)
{
    struct jsonw w;
    size_t len = 0;
    char now[40], expires[40];
    int ret = -1;

    jsonw_init(&w);
    jsonw_array_begin(&w);
    for (int i = first_header; i < r->n_resp_headers; i++) {
        jsonw_array_begin(&w);
        jsonw_string(&w, r->resp_headers[i].name);
        jsonw_string(&w, r->resp_headers[i].value);
        jsonw_array_end(&w);
    }
    jsonw_array_end(&w);
    char *headers = jsonw_take(&w, &len);
    jsonw_release(&w);
    char *problem = NULL;
    size_t problem_len = 0;
    if (r->problem) {
        jsonw_init(&w);
        jsonw_object_begin(&w);
        jsonw_key(&w, "code");
        jsonw_string(&w, r->problem_code);
        jsonw_key(&w, "detail");
        jsonw_string(&w, r->problem_detail ? r->problem_detail : "");
        if (r->with_errors) {
            jsonw_key(&w, "errors");
            jsonw_array_begin(&w);
            for (int i = 0; i < r->verr.count; i++) {
                jsonw_object_begin(&w);
                jsonw_key(&w, "pointer");
                jsonw_string(&w, r->verr.items[i].pointer);
                jsonw_key(&w, "code");
                jsonw_string(&w, r->verr.items[i].code);
                jsonw_key(&w, "detail");
                jsonw_string(&w, r->verr.items[i].detail);
                jsonw_object_end(&w);
            }
            jsonw_array_end(&w);
        }
        if (r->problem_member && r->problem_member_json) {
            jsonw_key(&w, "member");
            jsonw_string(&w, r->problem_member);
            jsonw_key(&w, "member_json");
            jsonw_string(&w, r->problem_member_json);
        }
        jsonw_object_end(&w);
        problem = jsonw_take(&w, &problem_len);
        jsonw_release(&w);
    }

    int64_t ms = clock_now_ms();
    int64_t keep_s = retention_source ? retention_source(r) : 0;
    if (keep_s <= 0)
        keep_s = IDEMPOTENCY_RETENTION_S;
    format_time_rfc3339(ms, now, sizeof now);
    format_time_rfc3339(ms + keep_s * 1000, expires, sizeof expires);
    /* A record that expired but was not purged yet gives way to the new one; a live one never
     * does (another instance's answer to the same key, stored meanwhile: nothing is stored
     * then, and the caller is told). */
    struct db_stmt *st = storage_prepare(
        "INSERT INTO idempotency_keys (workspace_id, user_id, method, path, key, fingerprint, "
        "status, content_type, headers, body, created_at, expires_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (workspace_id, user_id, method, path, key) DO UPDATE SET "
        "fingerprint = excluded.fingerprint, status = excluded.status, "
        "content_type = excluded.content_type, headers = excluded.headers, "
        "body = excluded.body, created_at = excluded.created_at, "
        "expires_at = excluded.expires_at "
        "WHERE idempotency_keys.expires_at <= excluded.created_at");
    if (!st || !headers || (r->problem && !problem))
        goto out;
    bind_scope(st, r);
    db_bind_text(st, 6, r->idem_fingerprint);
    db_bind_int64(st, 7, r->status);
    if (r->problem)
        db_bind_text(st, 8, PROBLEM_TYPE);
    else if (r->content_type && r->resp_len > 0)
        db_bind_text(st, 8, r->content_type);
    else
        db_bind_null(st, 8);
    db_bind_text(st, 9, headers);
    if (r->problem)
        db_bind_blob(st, 10, problem, problem_len);
    else if (r->op->no_replay) /* a secret shown once: never at rest (x-replay: false) */
        db_bind_blob(st, 10, "", 0);
    else
        db_bind_blob(st, 10, r->resp_body ? r->resp_body : "", r->resp_len);
    db_bind_text(st, 11, now);
    db_bind_text(st, 12, expires);
    int rc = db_step(st);
    if (rc == DB_DONE && storage_changes() == 1)
        ret = 0;
    else if (rc == DB_DONE)
        log_warn("idempotency: the key of request %s was answered meanwhile; not stored",
                 r->request_id);
    else
        log_error("idempotency: storing the record failed: %s", storage_errmsg());
    db_reset(st);
out:
    free(headers);
    free(problem);
    return ret;
}

int idempotency_purge(int64_t now_ms, int max_rows)
{
    char now[40];
    format_time_rfc3339(now_ms, now, sizeof now);
    if (storage_begin(true) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "DELETE FROM idempotency_keys WHERE (workspace_id, user_id, method, path, key) IN "
        "(SELECT workspace_id, user_id, method, path, key FROM idempotency_keys "
        "WHERE expires_at <= ? LIMIT ?)");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_text(st, 1, now);
    db_bind_int64(st, 2, max_rows);
    int rc = db_step(st);
    int n = storage_changes();
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("idempotency: purge failed: %s", storage_errmsg());
        storage_rollback();
        return -1;
    }
    return storage_commit() == 0 ? n : -1;
}
