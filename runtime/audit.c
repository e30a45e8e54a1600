/* Hash-chained audit records. The canonical form of a record is a JSON object with its
 * members in a fixed (sorted) order, so the hash does not depend on how it was stored. */
#include "runtime/audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/storage.h"

#define GENESIS "0000000000000000000000000000000000000000000000000000000000000000"

struct record {
    const char *workspace_id, *id, *occurred_at, *actor_id, *action, *resource_type,
        *resource_id, *before, *after, *detail, *request_id;
    int64_t seq;
};

/* SHA-256 hex of prev_hash followed by the canonical JSON of rec. 0 / -1. */
static int chain_hash(const char *prev_hash, const struct record *rec, char out[65])
{
    struct jsonw w;
    size_t len = 0;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "action");
    jsonw_string(&w, rec->action);
    jsonw_key(&w, "actor_id");
    jsonw_string(&w, rec->actor_id);
    jsonw_key(&w, "after_status");
    jsonw_string(&w, rec->after);
    jsonw_key(&w, "before_status");
    jsonw_string(&w, rec->before);
    jsonw_key(&w, "detail");
    jsonw_string(&w, rec->detail);
    jsonw_key(&w, "id");
    jsonw_string(&w, rec->id);
    jsonw_key(&w, "occurred_at");
    jsonw_string(&w, rec->occurred_at);
    jsonw_key(&w, "request_id");
    jsonw_string(&w, rec->request_id);
    jsonw_key(&w, "resource_id");
    jsonw_string(&w, rec->resource_id);
    jsonw_key(&w, "resource_type");
    jsonw_string(&w, rec->resource_type);
    jsonw_key(&w, "seq");
    jsonw_int(&w, rec->seq);
    jsonw_key(&w, "workspace_id");
    jsonw_string(&w, rec->workspace_id);
    jsonw_object_end(&w);
    char *canon = jsonw_take(&w, &len);
    jsonw_release(&w);
    if (!canon)
        return -1;
    size_t plen = strlen(prev_hash);
    char *buf = malloc(plen + len);
    int rc = -1;
    if (buf) {
        memcpy(buf, prev_hash, plen);
        memcpy(buf + plen, canon, len);
        rc = digest_sha256_hex(buf, plen + len, out);
        free(buf);
    }
    free(canon);
    return rc;
}

int audit_record(struct req *r, const char *action, const char *resource_type,
                 const char *resource_id, const char *before, const char *after,
                 const char *detail)
{
    char now[40], prev[65] = GENESIS, hash[65];
    struct record rec;
    format_now_rfc3339(now, sizeof now);
    rec.workspace_id = r->principal.workspace_id;
    rec.id = id_new(&r->arena, "aud");
    rec.occurred_at = now;
    rec.actor_id = r->principal.user_id;
    rec.action = action;
    rec.resource_type = resource_type;
    rec.resource_id = resource_id;
    rec.before = before;
    rec.after = after;
    rec.detail = detail;
    rec.request_id = r->request_id;
    rec.seq = 1;

    struct db_stmt *st = storage_prepare("SELECT seq, hash FROM audit_events WHERE workspace_id = ? "
                                       "ORDER BY seq DESC LIMIT 1");
    if (!st)
        return -1;
    db_bind_text(st, 1, rec.workspace_id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        rec.seq = db_column_int64(st, 0) + 1;
        snprintf(prev, sizeof prev, "%s", db_column_text(st, 1));
    }
    db_reset(st);
    if ((rc != DB_ROW && rc != DB_DONE) || chain_hash(prev, &rec, hash) != 0)
        return -1;
    st = storage_prepare(
        "INSERT INTO audit_events (workspace_id, seq, id, occurred_at, actor_id, action, "
        "resource_type, resource_id, before_status, after_status, detail, request_id, prev_hash, "
        "hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -1;
    const char *text[] = {rec.workspace_id, NULL,   rec.id,          now,  rec.actor_id,
                          action,           resource_type, resource_id, before, after,
                          detail,           rec.request_id, prev,        hash};
    for (int i = 0; i < 14; i++) {
        if (i == 1)
            db_bind_int64(st, 2, rec.seq);
        else if (text[i])
            db_bind_text(st, i + 1, text[i]);
        else
            db_bind_null(st, i + 1);
    }
    rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("audit: writing %s failed: %s", action, storage_errmsg());
        return -1;
    }
    return 0;
}

/* The declared action for r's answer: the one declared for its status, or the first. */
static const char *declared_action(const struct req *r, const struct op_audit *a)
{
    if (a->action_statuses)
        for (size_t i = 0; a->actions[i]; i++)
            if (a->action_statuses[i] == r->status)
                return a->actions[i];
    return a->actions[0];
}

static bool declares(const struct op_audit *a, const char *action)
{
    for (size_t i = 0; a->actions[i]; i++)
        if (strcmp(a->actions[i], action) == 0)
            return true;
    return false;
}

/* The record's detail: the request members the declaration copies (r->audit.fields, as
 * {"request": ...}) beside what the handler said (its JSON object's members, or its plain text
 * as "reason"). */
static const char *declared_detail(struct req *r, const char *note)
{
    const char *fields = r->audit.fields;
    if (!fields)
        return note;
    if (!note)
        return arena_printf(&r->arena, "{\"request\":%s}", fields);
    struct json_value *parsed = NULL;
    struct json_error jerr;
    if (note[0] == '{' && json_parse(&r->arena, note, strlen(note), &parsed, &jerr) == 0 &&
        parsed->type == JSON_OBJECT) {
        /* a detail the handler built as an object: its members go beside "request" (any
         * other text, such as a reason a person typed, is quoted below) */
        return arena_printf(&r->arena, "{\"request\":%s%s%s", fields, parsed->count ? "," : "",
                            strchr(note, '{') + 1);
    }
    struct jsonw w;
    jsonw_init(&w);
    jsonw_string(&w, note);
    char *quoted = jsonw_take(&w, NULL);
    jsonw_release(&w);
    const char *out = arena_printf(&r->arena, "{\"request\":%s,\"reason\":%s}", fields, quoted);
    free(quoted);
    return out;
}

int audit_change(struct req *r, const char *action, const char *resource_type,
                 const char *resource_id, const char *before, const char *after,
                 const char *detail)
{
    const struct op_audit *a = r->op ? r->op->audit : NULL;
    if (!a || r->audit.written || strcmp(a->resource_type, resource_type) != 0 ||
        !declares(a, action))
        return audit_record(r, action, resource_type, resource_id, before, after, detail);
    int rc = audit_record(r, action, resource_type, resource_id, before, after,
                          declared_detail(r, detail));
    r->audit.written = rc == 0;
    return rc;
}

int audit_declared_write(struct req *r, const char *resource_id, const char *after)
{
    const struct op_audit *a = r->op ? r->op->audit : NULL;
    if (!a || !resource_id || !r->principal.workspace_id || !r->principal.user_id) {
        log_error("audit: %s has no declared record to write, or no resource id, workspace or "
                  "actor for it", r->op ? r->op->operation_id : "?");
        return -1;
    }
    int rc = audit_record(r, declared_action(r, a), a->resource_type, resource_id, NULL, after,
                          declared_detail(r, NULL));
    r->audit.written = rc == 0;
    return rc;
}

static const char *col(struct db_stmt *st, int i)
{
    return db_column_text(st, i);
}

int audit_verify(const char *workspace_id, int64_t *broken)
{
    char prev[65] = GENESIS, hash[65];
    int64_t expect = 1;
    *broken = 0;
    struct db_stmt *st = storage_prepare(
        "SELECT seq, id, occurred_at, actor_id, action, resource_type, resource_id, "
        "before_status, after_status, detail, request_id, prev_hash, hash FROM audit_events "
        "WHERE workspace_id = ? ORDER BY seq");
    if (!st)
        return -1;
    db_bind_text(st, 1, workspace_id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        struct record rec = {workspace_id, col(st, 1), col(st, 2),  col(st, 3),
                             col(st, 4),   col(st, 5), col(st, 6),  col(st, 7),
                             col(st, 8),   col(st, 9), col(st, 10), db_column_int64(st, 0)};
        if (rec.seq != expect || !col(st, 11) || strcmp(col(st, 11), prev) != 0 ||
            chain_hash(prev, &rec, hash) != 0 || !col(st, 12) || strcmp(col(st, 12), hash) != 0) {
            *broken = rec.seq;
            break;
        }
        snprintf(prev, sizeof prev, "%s", hash);
        expect++;
    }
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : -1;
}
