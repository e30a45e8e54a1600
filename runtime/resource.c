/* Load, insert, save and list through a generated table descriptor (runtime/resource.h). */
#include "runtime/resource.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/outbox.h"
#include "runtime/rep_cache.h"

/* The members the descriptor locates by offset (memcpy: no aliasing or alignment
 * assumption beyond the struct's own). */
static const char *get_text(const void *obj, size_t off)
{
    const char *v;
    memcpy(&v, (const char *)obj + off, sizeof v);
    return v;
}

static void set_text(void *obj, size_t off, const char *v)
{
    memcpy((char *)obj + off, &v, sizeof v);
}

static int64_t get_int(const void *obj, size_t off)
{
    int64_t v;
    memcpy(&v, (const char *)obj + off, sizeof v);
    return v;
}

static void set_int(void *obj, size_t off, int64_t v)
{
    memcpy((char *)obj + off, &v, sizeof v);
}

static int failed(const struct resource_table *t, const char *what)
{
    log_error("%s: %s failed: %s", t->table, what, storage_errmsg());
    return -1;
}

/* Whether obj, size bytes, is a struct of t's rows (runtime/resource.h): false, logged, when
 * it is another (the caller's bug: loading it would write past its end). */
static bool sized(const struct resource_table *t, size_t size, const char *what)
{
    if (size == t->size)
        return true;
    log_error("%s: %s with a struct of %zu bytes, not the %zu of its rows", t->table, what, size,
              t->size);
    return false;
}

int resource_load_sized(struct req *r, const struct resource_table *t, const char *id, void *out,
                        size_t size)
{
    if (!sized(t, size, "load"))
        return RESOURCE_FAILED;
    if (!id || (!t->key_column && !id_valid(id, t->id_prefix)))
        return RESOURCE_MISSING;
    struct db_stmt *st = storage_prepare(t->select_sql);
    if (!st)
        return RESOURCE_FAILED;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, r->principal.workspace_id);
    if (t->owner)
        db_bind_text(st, 3, r->principal.user_id);
    int rc = db_step(st), ret;
    if (rc == DB_ROW)
        ret = t->read(&r->arena, st, 0, out) == 0 ? RESOURCE_FOUND : RESOURCE_FAILED;
    else if (rc == DB_DONE)
        ret = RESOURCE_MISSING;
    else
        ret = failed(t, "load");
    db_reset(st);
    return ret;
}

int resource_load_current_sized(struct req *r, const struct resource_table *t, const char *id,
                                const char *if_match, void *out, size_t size)
{
    switch (resource_load_sized(r, t, id, out, size)) {
    case RESOURCE_MISSING:
        req_problem(r, 404, "not_found", "No %s %s in this workspace.", t->object, id);
        return 0;
    case RESOURCE_FAILED:
        return -1;
    }
    if (if_match && t->versioned) {
        int64_t v = get_int(out, t->version_offset);
        if (!req_if_match(if_match, v)) {
            req_precondition_failed(r, if_match, v);
            return 0;
        }
    }
    return 1;
}

void resource_new_sized(struct req *r, const struct resource_table *t, void *obj, size_t size)
{
    if (!sized(t, size, "new")) {
        memset(obj, 0, size); /* the caller's next call with it is refused as well */
        return;
    }
    char now[40];
    format_now_rfc3339(now, sizeof now);
    const char *at = arena_strdup(&r->arena, now);
    memset(obj, 0, t->size);
    t->init(obj);
    if (!t->key_column)
        set_text(obj, t->id_offset, id_new(&r->arena, t->id_prefix));
    set_text(obj, t->workspace_offset, r->principal.workspace_id);
    if (t->versioned)
        set_int(obj, t->version_offset, 1);
    if (t->has_created_at)
        set_text(obj, t->created_at_offset, at);
    if (t->has_updated_at)
        set_text(obj, t->updated_at_offset, at);
}

/* The saved resource for a 204's declared event (r->saved), encoded now. */
static void note_saved(struct req *r, const struct resource_table *t, const void *obj)
{
    if (!r->saved.wanted || !t->encode)
        return;
    struct jsonw w;
    jsonw_init(&w);
    t->encode(&w, obj);
    r->saved.json = resource_json_text(&r->arena, &w);
    r->saved.id = arena_strdup(&r->arena, get_text(obj, t->id_offset));
    r->saved.version = t->versioned ? get_int(obj, t->version_offset) : 0;
}

int resource_insert_sized(struct req *r, const struct resource_table *t, const void *obj,
                          size_t size)
{
    if (!sized(t, size, "insert"))
        return -1;
    if (!t->insert_sql) {
        log_error("%s: rows are inserted by the handler's own statement", t->table);
        return -1;
    }
    struct db_stmt *st = storage_prepare(t->insert_sql);
    if (!st)
        return -1;
    int ret = -1;
    if (t->bind(&r->arena, st, 1, obj) == 0 &&
        db_bind_text(st, t->workspace_index + 1, r->principal.workspace_id) == 0) {
        int rc = db_step(st);
        if (rc == DB_DONE) {
            ret = 0;
            note_saved(r, t, obj);
        } else if (rc == DB_ERR_UNIQUE)
            ret = DB_ERR_UNIQUE;
        else
            failed(t, "insert");
    }
    db_reset(st);
    return ret;
}

/* The version the row id is stored at now: 1 with *v, 0 no such row, -1 failure. */
static int stored_version(struct req *r, const struct resource_table *t, const char *id, int64_t *v)
{
    /* Only a save that found its row changed gets here: rare, so the text is built. */
    const char *sql = arena_printf(
        &r->arena, "SELECT version FROM %s WHERE %s = ?1 AND %s = ?2%s%s%s", t->table,
        t->key_column ? t->key_column : "id", t->workspace, t->owner ? " AND " : "",
        t->owner ? t->owner : "", t->owner ? " = ?3" : "");
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, r->principal.workspace_id);
    if (t->owner)
        db_bind_text(st, 3, r->principal.user_id);
    int rc = db_step(st), ret = 0;
    if (rc == DB_ROW) {
        *v = db_column_int64(st, 0);
        ret = 1;
    } else if (rc != DB_DONE) {
        ret = failed(t, "version lookup");
    }
    db_reset(st);
    return ret;
}

/* obj as the next version of itself: version + 1 (versioned), updated_at = now. Returns the
 * version it had (0 when not versioned). */
static int64_t next_version(struct req *r, const struct resource_table *t, void *obj)
{
    int64_t old = 0;
    if (t->versioned) {
        old = get_int(obj, t->version_offset);
        set_int(obj, t->version_offset, old + 1);
    }
    if (t->has_updated_at) {
        char now[40];
        format_now_rfc3339(now, sizeof now);
        set_text(obj, t->updated_at_offset, arena_strdup(&r->arena, now));
    }
    return old;
}

static int save(struct req *r, const struct resource_table *t, void *obj, const char *sql)
{
    int64_t old = next_version(r, t, obj);
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    int ret = -1;
    if (t->bind(&r->arena, st, 1, obj) == 0 &&
        db_bind_text(st, t->workspace_index + 1, r->principal.workspace_id) == 0 &&
        (!t->versioned || db_bind_int64(st, t->column_count + 1, old) == 0) &&
        (!t->owner ||
         db_bind_text(st, t->column_count + 1 + t->versioned, r->principal.user_id) == 0)) {
        int rc = db_step(st);
        if (rc == DB_ERR_UNIQUE)
            ret = DB_ERR_UNIQUE; /* the caller's 409 (a name or external id taken) */
        else if (rc != DB_DONE)
            failed(t, "update");
        else if (storage_changes() == 1) {
            ret = 1;
            note_saved(r, t, obj);
        } else
            ret = 0;
    }
    db_reset(st);
    if (ret == DB_ERR_UNIQUE && t->versioned)
        set_int(obj, t->version_offset, old);
    if (ret != 0)
        return ret;
    /* No row at the old version: another writer's save came first, or the row is gone. */
    const char *id = get_text(obj, t->id_offset);
    int64_t now_at = 0;
    int found = t->versioned ? stored_version(r, t, id, &now_at) : 0;
    if (found < 0)
        return -1;
    if (found == 0) {
        log_error("%s: %s vanished while it was saved", t->table, id);
        return -1;
    }
    set_int(obj, t->version_offset, old);
    req_problem(r, 412, "precondition_failed",
                "%s %s changed meanwhile: it is at version \"v%lld\" now; load it again.",
                t->object, id, (long long)now_at);
    return 0;
}

int resource_save_sized(struct req *r, const struct resource_table *t, void *obj, size_t size)
{
    if (!sized(t, size, "save"))
        return -1;
    return save(r, t, obj, t->update_sql);
}

int resource_save_state_sized(struct req *r, const struct resource_table *t, void *obj,
                              size_t size)
{
    if (!sized(t, size, "save"))
        return -1;
    if (!t->state_sql) {
        log_error("%s: x-table lists no state columns", t->table);
        return -1;
    }
    return save(r, t, obj, t->state_sql);
}

/* ---- singletons ------------------------------------------------------------------------ */

int resource_load_singleton_sized(struct req *r, const struct resource_table *t,
                                  const char *if_match, void *out, bool *stored, size_t size)
{
    if (!sized(t, size, "load"))
        return -1;
    if (!t->singleton) {
        log_error("%s: not an x-table singleton", t->table);
        return -1;
    }
    struct db_stmt *st = storage_prepare(t->select_sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    int rc = db_step(st), ret = 1;
    if (rc == DB_ROW) {
        ret = t->read(&r->arena, st, 0, out) == 0 ? 1 : -1;
    } else if (rc == DB_DONE) { /* never written: a fresh one at version 1 */
        memset(out, 0, t->size);
        t->init(out);
        if (t->versioned)
            set_int(out, t->version_offset, 1);
    } else {
        ret = failed(t, "load");
    }
    db_reset(st);
    if (stored)
        *stored = rc == DB_ROW;
    if (ret == 1 && if_match && t->versioned) {
        int64_t v = get_int(out, t->version_offset);
        if (!req_if_match(if_match, v)) {
            req_precondition_failed(r, if_match, v);
            return 0;
        }
    }
    return ret;
}

int resource_save_singleton_sized(struct req *r, const struct resource_table *t, void *obj,
                                  size_t size)
{
    if (!sized(t, size, "save"))
        return -1;
    if (!t->singleton) {
        log_error("%s: not an x-table singleton", t->table);
        return -1;
    }
    int64_t old = next_version(r, t, obj);
    struct db_stmt *st = storage_prepare(t->update_sql);
    if (!st)
        return -1;
    int ret = -1;
    if (t->bind(&r->arena, st, 1, obj) == 0 &&
        db_bind_text(st, t->column_count + 1, r->principal.workspace_id) == 0 &&
        (!t->versioned || db_bind_int64(st, t->column_count + 2, old) == 0)) {
        int rc = db_step(st);
        if (rc != DB_DONE)
            failed(t, "upsert");
        else
            ret = storage_changes() == 1 ? 1 : 0;
    }
    db_reset(st);
    if (ret != 0)
        return ret;
    /* The row is at another version: another writer's save came first. */
    set_int(obj, t->version_offset, old);
    void *now_at = arena_alloc(&r->arena, t->size);
    if (resource_load_singleton_sized(r, t, NULL, now_at, NULL, t->size) != 1)
        return -1;
    req_problem(r, 412, "precondition_failed",
                "The %s changed meanwhile: it is at version \"v%lld\" now; load it again.",
                t->object, (long long)get_int(now_at, t->version_offset));
    return 0;
}

int resource_saved_event(struct req *r, const char *type, const char *resource_type)
{
    if (!r->saved.json)
        return 0; /* nothing changed (an archive of what was archived already) */
    return outbox_add(r, type, resource_type, r->saved.id, r->saved.version, r->saved.json);
}

/* ---- lists ---------------------------------------------------------------------------- */

/* A filter's text as the digest holds it: '%', '&', '=', '~' (an unset filter's mark) and '@'
 * (a moving filter's) percent-encoded, so that no two different filter sets spell the same
 * digest. */
static const char *digest_value(struct arena *a, const char *v)
{
    size_t extra = 0;
    for (const char *p = v; *p; p++)
        extra += *p == '%' || *p == '&' || *p == '=' || *p == '~' || *p == '@';
    if (!extra)
        return v;
    char *out = arena_alloc(a, strlen(v) + 2 * extra + 1), *o = out;
    for (const char *p = v; *p; p++) {
        if (*p == '%' || *p == '&' || *p == '=' || *p == '~' || *p == '@')
            o += sprintf(o, "%%%02X", (unsigned char)*p);
        else
            *o++ = *p;
    }
    *o = '\0';
    return out;
}

/* The filters' SQL and the cursor's filter digest, both over f[0..n) in their order. */
static const char *op_sql(enum resource_op op)
{
    switch (op) {
    case RESOURCE_EQ:
        return "=";
    case RESOURCE_LT:
        return "<";
    case RESOURCE_GE:
        return ">=";
    case RESOURCE_GT:
        return ">";
    case RESOURCE_LE:
        return "<=";
    case RESOURCE_IN:
    case RESOURCE_IS_NULL:
    case RESOURCE_IN_SELECT:
        break;
    }
    return NULL;
}

int resource_list(struct req *r, const struct resource_table *t, const struct resource_filter *f,
                  size_t n, int64_t limit, const char *cursor, struct resource_page *out)
{
    return resource_list_extra(r, t, f, n, limit, cursor, NULL, out);
}

/* A text built by appending, each piece formatted once where it goes (built as
 * arena_printf("%s...", text so far, piece), each piece copied the whole text again). In the
 * arena; s is a string (empty) from text_init on. */
struct text {
    struct arena *a;
    char *s;
    size_t len, cap;
};

static void text_init(struct text *b, struct arena *a, size_t cap)
{
    b->a = a;
    b->cap = cap;
    b->len = 0;
    b->s = arena_alloc(a, cap);
    b->s[0] = '\0';
}

/* Room for n more bytes and the NUL. */
static void text_room(struct text *b, size_t n)
{
    if (n < b->cap - b->len)
        return;
    size_t cap = 2 * b->cap > b->len + n + 1 ? 2 * b->cap : b->len + n + 1;
    char *s = arena_alloc(b->a, cap);
    memcpy(s, b->s, b->len + 1);
    b->s = s;
    b->cap = cap;
}

static void text_put(struct text *b, const char *piece)
{
    size_t n = strlen(piece);
    text_room(b, n);
    memcpy(b->s + b->len, piece, n + 1);
    b->len += n;
}

static void text_int(struct text *b, int64_t v)
{
    text_room(b, FORMAT_I64_MAX);
    b->len += format_i64(b->s + b->len, v);
}

__attribute__((format(printf, 2, 3))) static void text_add(struct text *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) { /* too long: a larger buffer, the piece again */
        text_room(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* A list's SQL is t's columns, x's expressions and one test per filter whatever its value (an
 * unset filter is bound NULL), so it depends only on the list's shape: t, x and each filter's
 * column, operator and type. It is built once per shape and kept for the process (building
 * it with printf each time was 6% of a page of payments). Entries are only ever appended;
 * readers scan the published ones without the lock. */
#define SHAPE_FILTERS_MAX 16
#define SHAPES_MAX 128
struct shape_filter {
    const char *column;
    enum resource_op op;
    bool integer;
};
/* What a list statement reads: whole rows; the id, version and sort key only (a cached
 * table's page, whose kept rows need no more); or whole rows by id (the rest of that page). */
enum list_kind { LIST_ROWS, LIST_KEYS, LIST_BY_ID };
struct list_shape {
    const struct resource_table *t;
    const struct resource_extra *x;
    enum list_kind kind;
    size_t n;
    struct shape_filter f[SHAPE_FILTERS_MAX];
    char *sql; /* malloc'd, kept */
};
static struct list_shape shapes[SHAPES_MAX];
static atomic_size_t n_shapes;
static pthread_mutex_t shapes_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_shape(const struct list_shape *s, const struct resource_table *t,
                       const struct resource_extra *x, enum list_kind kind,
                       const struct resource_filter *f, size_t n)
{
    if (s->t != t || s->x != x || s->kind != kind || s->n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s->f[i].op != f[i].op || s->f[i].integer != f[i].integer ||
            strcmp(s->f[i].column, f[i].column) != 0)
            return false;
    return true;
}

/* ?1 the workspace; filter i is ?(i + 2) (NULL when not set: one text per shape, so the
 * statement stays prepared); then the position and the limit. A parameter that may be NULL is
 * CAST where it is tested (PostgreSQL cannot infer the type of `? IS NULL`). */
/* The name of column i of t's columns (", "-separated), into the arena. */
static const char *column_name(struct arena *a, const struct resource_table *t, int i)
{
    const char *c = t->columns;
    for (; i > 0 && c; i--)
        c = strstr(c, ", ") ? strstr(c, ", ") + 2 : NULL;
    if (!c)
        return "id";
    const char *end = strstr(c, ", ");
    return arena_strndup(a, c, end ? (size_t)(end - c) : strlen(c));
}

static void build_sql(struct text *sql, struct arena *a, const struct resource_table *t,
                      const struct resource_extra *x, enum list_kind kind,
                      const struct resource_filter *f, size_t n)
{
    if (kind == LIST_BY_ID) {
        text_add(sql, "SELECT %s%s FROM %s WHERE id IN " DB_IN_LIST, t->columns,
                 x ? x->columns : "", t->table);
        return;
    }
    if (kind == LIST_KEYS)
        text_add(sql, "SELECT id, %s, %s FROM %s WHERE %s = ?1",
                 column_name(a, t, t->version_index), t->sort, t->table, t->workspace);
    else
        text_add(sql, "SELECT %s%s FROM %s WHERE %s = ?1", t->columns, x ? x->columns : "",
                 t->table, t->workspace);
    for (size_t i = 0; i < n; i++) {
        int p = (int)i + 2;
        if (f[i].op == RESOURCE_IN)
            /* the set ",a,b," holds ",<column>," when taking it out shortens it: an exact
             * substring test both engines have (no instr() in PostgreSQL) */
            text_add(sql,
                     " AND (CAST(?%d AS TEXT) IS NULL OR length(replace(?%d, ',' || %s || ',', "
                     "'')) < length(?%d))",
                     p, p, f[i].column, p);
        else if (f[i].op == RESOURCE_IS_NULL)
            text_add(sql, " AND (CAST(?%d AS BIGINT) IS NULL OR %s IS NULL)", p, f[i].column);
        else if (f[i].op == RESOURCE_IN_SELECT)
            text_add(sql, " AND (CAST(?%d AS %s) IS NULL OR %s ?%d))", p,
                     f[i].integer ? "BIGINT" : "TEXT", f[i].column, p);
        else
            text_add(sql, " AND (CAST(?%d AS %s) IS NULL OR %s %s ?%d)", p,
                     f[i].integer ? "BIGINT" : "TEXT", f[i].column, op_sql(f[i].op), p);
    }
    int k = (int)n + 2;
    if (t->owner) /* x-table owner: the caller's user, ?(k + 3) after the position and limit */
        text_add(sql, " AND %s = ?%d", t->owner, k + 3);
    const char *cmp = t->ascending ? ">" : "<", *dir = t->ascending ? "ASC" : "DESC";
    text_add(sql,
             " AND (CAST(?%d AS TEXT) IS NULL OR %s %s ?%d OR (%s = ?%d AND id %s ?%d)) "
             "ORDER BY %s %s, id %s LIMIT ?%d",
             k, t->sort, cmp, k, t->sort, k, cmp, k + 1, t->sort, dir, dir, k + 2);
}

/* The SQL of the list's shape: the kept one, else built (and kept while there is room). */
static const char *list_sql(struct req *r, const struct resource_table *t,
                            const struct resource_extra *x, enum list_kind kind,
                            const struct resource_filter *f, size_t n)
{
    if (kind == LIST_BY_ID)
        n = 0; /* the filters are the first statement's */
    size_t have = atomic_load_explicit(&n_shapes, memory_order_acquire);
    for (size_t i = 0; i < have; i++)
        if (same_shape(&shapes[i], t, x, kind, f, n))
            return shapes[i].sql;
    struct text sql;
    text_init(&sql, &r->arena, 1024 + strlen(t->columns) + (x ? strlen(x->columns) : 0));
    build_sql(&sql, &r->arena, t, x, kind, f, n);
    if (n > SHAPE_FILTERS_MAX)
        return sql.s;
    pthread_mutex_lock(&shapes_lock);
    const char *kept = NULL;
    have = atomic_load_explicit(&n_shapes, memory_order_relaxed);
    for (size_t i = 0; i < have && !kept; i++) /* another thread may have kept it meanwhile */
        if (same_shape(&shapes[i], t, x, kind, f, n))
            kept = shapes[i].sql;
    if (!kept && have < SHAPES_MAX && (shapes[have].sql = strdup(sql.s)) != NULL) {
        struct list_shape *s = &shapes[have];
        s->t = t;
        s->x = x;
        s->kind = kind;
        s->n = n;
        for (size_t i = 0; i < n; i++)
            s->f[i] = (struct shape_filter){f[i].column, f[i].op, f[i].integer};
        kept = s->sql;
        atomic_store_explicit(&n_shapes, have + 1, memory_order_release);
    }
    pthread_mutex_unlock(&shapes_lock);
    return kept ? kept : sql.s;
}

/* ---- kept representations (x-table cache, runtime/rep_cache.h) --------------------------- */

static const char *get_json(const struct resource_table *t, const void *item, size_t *len)
{
    memcpy(len, (const char *)item + t->json_offset + sizeof(const char *), sizeof *len);
    return get_text(item, t->json_offset);
}

static void set_json(const struct resource_table *t, void *item, const char *json, size_t len)
{
    set_text(item, t->json_offset, json);
    memcpy((char *)item + t->json_offset + sizeof(const char *), &len, sizeof len);
}

bool resource_item_kept(const struct resource_table *t, const void *item)
{
    size_t len;
    return t->cached && get_json(t, item, &len) != NULL;
}

void resource_page_remember(struct req *r, const struct resource_table *t, void *items,
                            size_t count, size_t item_size)
{
    if (!t->cached)
        return;
    for (size_t i = 0; i < count; i++) {
        void *item = (char *)items + i * item_size;
        size_t len;
        if (get_json(t, item, &len))
            continue;
        struct jsonw w;
        jsonw_init(&w);
        t->encode(&w, item);
        char *text = jsonw_take(&w, &len);
        rep_cache_put(t->table, r->principal.workspace_id, get_text(item, t->id_offset),
                      get_int(item, t->version_offset), text, len);
        set_json(t, item, arena_strndup(&r->arena, text, len), len);
        free(text);
    }
}

/* read_missing's rows: each into its place of the page. */
struct missing {
    struct req *r;
    page_row_fn *row;
    char *items;
    size_t size;
    const size_t *at;
};

static int missing_row(void *ctx, struct db_stmt *st, size_t i)
{
    const struct missing *m = ctx;
    return m->row(m->r, st, m->items + m->at[i] * m->size);
}

/* The rest of a cached table's page: the rows at[0..n) of items (ids[i] each) read whole, in
 * one statement by id (the ids come from the first statement, scoped by the workspace, in
 * the same snapshot). 0 / -1. */
static int read_missing(struct req *r, const struct resource_table *t,
                        const struct resource_extra *x, void *items, const char **ids,
                        const size_t *at, size_t n)
{
    struct missing m = {r, x ? x->row : t->page_row, items, x ? x->item_size : t->size, at};
    long found = storage_rows_by_id(list_sql(r, t, x, LIST_BY_ID, NULL, 0), ids, n,
                                    t->id_index, missing_row, &m, t->table);
    if (found < 0)
        return -1;
    if ((size_t)found != n) {
        log_error("%s: %zu of a page's %zu rows vanished between two reads", t->table,
                  n - (size_t)found, n);
        return -1;
    }
    return 0;
}

/* A cached table's page (x-table cache): the first statement reads the page's ids, versions
 * and sort keys only; each row whose representation is kept (runtime/rep_cache.h) takes it
 * from there, and only the others are read whole (read_missing). A page whose rows are all
 * kept reads none whole: a page of twenty payments then costs 1.8 single GETs of
 * instructions, where reading and encoding every row cost 3.1. 1 / -1. */
static int list_kept(struct req *r, const struct resource_table *t,
                     const struct resource_extra *x, struct page *pg, struct db_stmt *st,
                     struct resource_page *out)
{
    size_t size = x ? x->item_size : t->size, cap = (size_t)(pg->limit > 0 ? pg->limit : 1);
    memset(out, 0, sizeof *out);
    out->items = arena_alloc(&r->arena, cap * size);
    const char **ids = arena_alloc(&r->arena, cap * sizeof *ids);
    size_t *at = arena_alloc(&r->arena, cap * sizeof *at), missing = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if ((int64_t)pg->count == pg->limit) {
            pg->has_more = true;
            break;
        }
        void *item = (char *)out->items + pg->count * size;
        const char *id = db_column_text(st, 0);
        int64_t version = db_column_int64(st, 1);
        size_t len = 0;
        const char *json = rep_cache_get(&r->arena, t->table, r->principal.workspace_id, id,
                                         version, &len);
        if (json) {
            set_text(item, t->id_offset, arena_strdup(&r->arena, id));
            set_text(item, t->sort_offset, db_column_dup(&r->arena, st, 2));
            set_int(item, t->version_offset, version);
            set_json(t, item, json, len);
        } else {
            ids[missing] = arena_strdup(&r->arena, id ? id : "");
            at[missing++] = pg->count;
        }
        pg->count++;
    }
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return failed(t, "list");
    if (missing && read_missing(r, t, x, out->items, ids, at, missing) != 0)
        return -1;
    out->count = pg->count;
    out->has_more = pg->has_more;
    if (pg->count) {
        const char *last = (const char *)out->items + (pg->count - 1) * size;
        out->next_cursor = page_next(r, pg, get_text(last, t->sort_offset),
                                     get_text(last, t->id_offset));
    }
    return 1;
}

int resource_list_extra(struct req *r, const struct resource_table *t,
                        const struct resource_filter *f, size_t n, int64_t limit,
                        const char *cursor, const struct resource_extra *x,
                        struct resource_page *out)
{
    /* The digest names the table, the workspace and every filter's value, so a cursor serves
     * only the list it was issued for. An unset filter still takes its place ("~"). */
    struct text digest;
    text_init(&digest, &r->arena, 256);
    text_put(&digest, t->table);
    text_put(&digest, "&w=");
    text_put(&digest, r->principal.workspace_id);
    for (size_t i = 0; i < n; i++) {
        text_put(&digest, "&");
        text_put(&digest, f[i].column);
        text_int(&digest, (int)f[i].op);
        text_put(&digest, "=");
        if (f[i].moving) /* applied, but no part of the cursor: it changes between pages */
            text_put(&digest, "@");
        else if (!f[i].set)
            text_put(&digest, "~");
        else if (f[i].integer)
            text_int(&digest, f[i].number);
        else
            text_put(&digest, digest_value(&r->arena, f[i].text));
    }
    if (t->owner) { /* the caller's user's rows only */
        text_put(&digest, "&o=");
        text_put(&digest,
                 digest_value(&r->arena, r->principal.user_id ? r->principal.user_id : ""));
    }
    struct page pg;
    if (page_begin(r, &pg, digest.s, limit, cursor) != 0)
        return 0;
    bool kept = t->cached && !(x && x->uncached) && limit <= DB_IN_LIST_MAX;
    struct db_stmt *st = storage_prepare(list_sql(r, t, x, kept ? LIST_KEYS : LIST_ROWS, f, n));
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    for (size_t i = 0; i < n; i++) {
        int p = (int)i + 2;
        if (!f[i].set)
            db_bind_null(st, p);
        else if (f[i].integer)
            db_bind_int64(st, p, f[i].number);
        else
            db_bind_text(st, p, f[i].text);
    }
    int k = (int)n + 2;
    page_bind(&pg, st, k, k + 1, k + 2);
    if (t->owner)
        db_bind_text(st, k + 3, r->principal.user_id ? r->principal.user_id : "");
    if (kept ? list_kept(r, t, x, &pg, st, out) != 1
             : resource_page_fill(r, &pg, st, x ? x->item_size : t->size,
                                  x ? x->row : t->page_row, t->sort_offset, t->id_offset,
                                  out) != 0)
        return -1;
    if (!x) /* the rows are the whole items: keep what was encoded anew */
        resource_page_remember(r, t, out->items, out->count, t->size);
    return 1;
}

int resource_list_sql(struct req *r, const struct resource_sql_list *l, int64_t limit,
                      const char *cursor, struct resource_page *out)
{
    struct page pg;
    if (page_begin(r, &pg, l->digest, limit, cursor) != 0)
        return 0;
    struct db_stmt *st = storage_prepare(l->sql);
    if (!st)
        return -1;
    for (int i = 0; i < l->n_args; i++)
        db_bind_text(st, i + 1, l->args[i]);
    page_bind(&pg, st, l->n_args + 1, l->n_args + 2, l->n_args + 3);
    return resource_page_fill(r, &pg, st, l->item_size, l->row, l->key_offset, l->id_offset,
                              out) == 0
               ? 1
               : -1;
}

int resource_page_fill(struct req *r, struct page *pg, struct db_stmt *st, size_t item_size,
                       page_row_fn *row, size_t key_offset, size_t id_offset,
                       struct resource_page *out)
{
    memset(out, 0, sizeof *out);
    out->items = arena_alloc(&r->arena, (size_t)(pg->limit > 0 ? pg->limit : 1) * item_size);
    if (page_fill(r, pg, st, out->items, item_size, row) != 0)
        return -1;
    out->count = pg->count;
    out->has_more = pg->has_more;
    if (pg->count) {
        const char *last = (const char *)out->items + (pg->count - 1) * item_size;
        out->next_cursor = page_next(r, pg, get_text(last, key_offset), get_text(last, id_offset));
    }
    return 0;
}

int resource_list_every(struct req *r, const struct resource_table *t, size_t max,
                        struct resource_page *out)
{
    memset(out, 0, sizeof *out);
    if (t->owner) { /* its statement has no owner clause: it would list other users' rows */
        log_error("%s: an owned table is not listed whole", t->table);
        return -1;
    }
    const char *key = t->key_column ? t->key_column : "id";
    const char *sql = arena_printf(&r->arena, "SELECT %s FROM %s WHERE %s = ?1 ORDER BY %s LIMIT ?2",
                                   t->columns, t->table, t->workspace, key);
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_int64(st, 2, (int64_t)max + 1); /* one more tells has_more */
    out->items = arena_alloc(&r->arena, (max ? max : 1) * t->size);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (out->count == max) {
            out->has_more = true;
            continue;
        }
        if (t->read(&r->arena, st, 0, (char *)out->items + out->count * t->size) != 0) {
            db_reset(st);
            return -1;
        }
        out->count++;
    }
    db_reset(st);
    return rc == DB_DONE ? 0 : failed(t, "list");
}

void resource_page_objects(struct req *r, const struct resource_table *t, size_t obj_size,
                           struct resource_page *p)
{
    char *objs = arena_alloc(&r->arena, (p->count ? p->count : 1) * obj_size);
    for (size_t i = 0; i < p->count; i++)
        memcpy(objs + i * obj_size, (const char *)p->items + i * t->size, obj_size);
    p->items = objs;
}

/* ---- what the generated row codecs share ------------------------------------------------- */

int resource_unknown(const char *where, struct db_stmt *st, int col)
{
    const char *t = db_column_text(st, col);
    log_error("%s: column %d holds %s, which this server does not know", where, col,
              t ? t : "NULL");
    return -1;
}

char *resource_json_text(struct arena *a, struct jsonw *w)
{
    size_t len = 0;
    char *t = jsonw_take(w, &len), *copy = t ? arena_strndup(a, t, len) : NULL;
    free(t);
    jsonw_release(w);
    return copy;
}

int resource_words_split(struct arena *a, const char *text, const char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!text)
        return -1;
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ' ';
    const char **v = arena_alloc(a, cap * sizeof *v);
    while (*text) {
        size_t len = strcspn(text, " ");
        if (len)
            v[(*n)++] = arena_strndup(a, text, len);
        text += len;
        while (*text == ' ')
            text++;
    }
    *out = v;
    return 0;
}

const char *resource_words_join(struct arena *a, const char *where, const char *const *v,
                                size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++) {
        if (!v[i][0] || strchr(v[i], ' ')) {
            log_error("%s: item %zu (\"%s\") is empty or holds a space: it would not read back "
                      "as one item", where, i, v[i]);
            return NULL;
        }
        len += strlen(v[i]) + 1;
    }
    char *out = arena_alloc(a, len), *p = out;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(v[i]);
        if (i)
            *p++ = ' ';
        memcpy(p, v[i], k);
        p += k;
    }
    *p = '\0';
    return out;
}
