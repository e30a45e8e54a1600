/* Unit tests for runtime/resource.c on SQLite, over a table of the test's own (the runtime
 * knows no API) with the descriptor codegen/rows.py would generate for it: loads are scoped
 * to the workspace (another's id, a malformed id: not found), If-Match and a save that lost
 * its race answer 412, a save bumps the version, and a list pages through the workspace's
 * matching rows only, its cursor bound to the filters it was issued for. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cursor.h"
#include "runtime/id.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/storage_sqlite.h"
#include "tests/unit/unit.h"

struct note {
    const char *id;
    const char *object; /* const "note": no column */
    const char *workspace_id;
    const char *body;
    const char *status;
    int64_t size;
    bool has_size;
    int64_t version;
    const char *created_at;
    const char *updated_at;
};

#define NOTE_COLUMNS "id, workspace_id, body, status, size, version, created_at, updated_at"

static int note_read(struct arena *a, struct db_stmt *st, int c, void *obj)
{
    struct note *o = obj;
    memset(o, 0, sizeof *o);
    o->id = db_column_dup(a, st, c);
    o->object = "note";
    o->workspace_id = db_column_dup(a, st, c + 1);
    o->body = db_column_dup(a, st, c + 2);
    o->status = db_column_dup(a, st, c + 3);
    if (!db_column_is_null(st, c + 4)) {
        o->size = db_column_int64(st, c + 4);
        o->has_size = true;
    }
    o->version = db_column_int64(st, c + 5);
    o->created_at = db_column_dup(a, st, c + 6);
    o->updated_at = db_column_dup(a, st, c + 7);
    return strcmp(o->status, "unknown") == 0 ? -1 : 0;
}

static int note_bind(struct arena *a, struct db_stmt *st, int p, const void *obj)
{
    const struct note *o = obj;
    (void)a;
    db_bind_text(st, p, o->id);
    db_bind_text(st, p + 1, o->workspace_id);
    db_bind_text(st, p + 2, o->body);
    db_bind_text(st, p + 3, o->status);
    if (o->has_size)
        db_bind_int64(st, p + 4, o->size);
    else
        db_bind_null(st, p + 4);
    db_bind_int64(st, p + 5, o->version);
    db_bind_text(st, p + 6, o->created_at);
    db_bind_text(st, p + 7, o->updated_at);
    return 0;
}

static void note_init(void *obj)
{
    ((struct note *)obj)->object = "note";
}

static int note_page_row(struct req *r, struct db_stmt *st, void *item)
{
    return note_read(&r->arena, st, 0, item);
}

static const struct resource_table notes = {
    .table = "notes",
    .object = "note",
    .id_prefix = "not",
    .workspace = "workspace_id",
    .sort = "created_at",
    .columns = NOTE_COLUMNS,
    .column_count = 8,
    .workspace_index = 1,
    .select_sql = "SELECT " NOTE_COLUMNS " FROM notes WHERE id = ?1 AND workspace_id = ?2",
    .insert_sql = "INSERT INTO notes (" NOTE_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    .update_sql = "UPDATE notes SET body = ?3, status = ?4, size = ?5, version = ?6, "
                  "created_at = ?7, updated_at = ?8 WHERE id = ?1 AND workspace_id = ?2 AND "
                  "version = ?9",
    .size = sizeof(struct note),
    .id_offset = offsetof(struct note, id),
    .workspace_offset = offsetof(struct note, workspace_id),
    .sort_offset = offsetof(struct note, created_at),
    .versioned = true,
    .version_offset = offsetof(struct note, version),
    .has_created_at = true,
    .created_at_offset = offsetof(struct note, created_at),
    .has_updated_at = true,
    .updated_at_offset = offsetof(struct note, updated_at),
    .init = note_init,
    .read = note_read,
    .bind = note_bind,
    .page_row = note_page_row,
};

static char dir[] = "/tmp/treasury-resource-XXXXXX", path[80];
static struct req req, other;

/* A second request, of another workspace, while the first one's arena still holds its rows. */
static struct req *other_req(const char *workspace)
{
    arena_release(&other.arena);
    memset(&other, 0, sizeof other);
    arena_init(&other.arena);
    other.principal.workspace_id = workspace;
    return &other;
}

static struct req *fresh_req(const char *workspace)
{
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
    arena_init(&req.arena);
    req.principal.workspace_id = workspace;
    return &req;
}

static void setup(void)
{
    char err[256];
    static const unsigned char secret[32] = {1, 2, 3};
    cursor_init(secret, sizeof secret);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.db", dir);
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(sqlite3_exec(storage_sqlite_db(),
                       "CREATE TABLE notes (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, "
                       "body TEXT NOT NULL, status TEXT NOT NULL, size INTEGER, "
                       "version INTEGER NOT NULL, created_at TEXT NOT NULL, "
                       "updated_at TEXT NOT NULL); "
                       "CREATE UNIQUE INDEX notes_taken ON notes (workspace_id, body) "
                       "WHERE body = 'taken'",
                       NULL, NULL, NULL) == DB_OK);
}

static void teardown(void)
{
    char f[100];
    const char *suffix[] = {"", "-wal", "-shm"};
    storage_close();
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
    arena_release(&req.arena);
    memset(&req, 0, sizeof req);
    arena_release(&other.arena);
    memset(&other, 0, sizeof other);
}

/* A note of r's workspace created at `at` (id: a new one when NULL). */
static const char *add_id(struct req *r, const char *id, const char *body, const char *status,
                          const char *at)
{
    struct note n;
    resource_new(r, &notes, &n);
    if (id)
        n.id = id;
    n.body = body;
    n.status = status;
    n.created_at = n.updated_at = at;
    CHECK(storage_begin(true) == 0);
    CHECK(resource_insert(r, &notes, &n) == 0);
    CHECK(storage_commit() == 0);
    return arena_strdup(&r->arena, n.id);
}

static const char *add(struct req *r, const char *body, const char *status, const char *at)
{
    return add_id(r, NULL, body, status, at);
}

static void test_new_sets_id_workspace_version_and_times(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    struct note n;
    resource_new(r, &notes, &n);
    CHECK(id_valid(n.id, "not"));
    CHECK_STR(n.object, "note");
    CHECK_STR(n.workspace_id, "wsp_1");
    CHECK(n.version == 1);
    CHECK(n.created_at && n.updated_at && strcmp(n.created_at, n.updated_at) == 0);
    CHECK(!n.body && !n.has_size);
    teardown();
}

static void test_load_finds_only_the_workspaces_own_row(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    const char *id = add(r, "hello", "open", "2026-01-01T00:00:00.000Z");
    struct note n;
    CHECK(storage_begin(false) == 0);
    CHECK(resource_load(r, &notes, id, &n) == RESOURCE_FOUND);
    CHECK_STR(n.body, "hello");
    CHECK_STR(n.object, "note");
    CHECK(!n.has_size);
    r = other_req("wsp_2");
    CHECK(resource_load(r, &notes, id, &n) == RESOURCE_MISSING);
    CHECK(resource_load(r, &notes, "ben_01jq57rhym4n0qhqtvs6hcx1jr", &n) == RESOURCE_MISSING);
    CHECK(resource_load(r, &notes, "not_x' OR 1=1 --", &n) == RESOURCE_MISSING);
    CHECK(resource_load(r, &notes, NULL, &n) == RESOURCE_MISSING);
    /* an operation on it answers the 404 itself */
    CHECK(resource_load_current(r, &notes, id, NULL, &n) == 0);
    CHECK(r->status == 404);
    CHECK_STR(r->problem_code, "not_found");
    char want[128];
    snprintf(want, sizeof want, "No note %s in this workspace.", id);
    CHECK_STR(r->problem_detail, want);
    storage_rollback();
    teardown();
}

/* A struct of another size than the table's rows (the schema's struct where the table keeps
 * hidden columns in struct <schema>_row) is refused: loading it would write past its end. */
static void test_a_struct_of_another_size_is_refused_not_written_past(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    const char *id = add(r, "hello", "open", "2026-01-01T00:00:00.000Z");
    struct {
        struct note n;
        char guard[8];
    } big;
    struct small {
        const char *id;
    } *small = arena_alloc(&r->arena, sizeof *small);
    memset(&big, 0x5a, sizeof big);
    CHECK(storage_begin(false) == 0);
    CHECK(resource_load(r, &notes, id, small) == RESOURCE_FAILED);
    CHECK(resource_load(r, &notes, id, &big) == RESOURCE_FAILED);
    CHECK(resource_load_current(r, &notes, id, NULL, small) == -1);
    CHECK(resource_save(r, &notes, small) == -1);
    CHECK(resource_insert(r, &notes, small) == -1);
    resource_new(r, &notes, small);
    CHECK(small->id == NULL); /* zeroed (its own size), no id: nothing past it touched */
    CHECK(big.guard[0] == 0x5a && big.guard[7] == 0x5a);
    struct note n;
    CHECK(resource_load(r, &notes, id, &n) == RESOURCE_FOUND); /* the right one still loads */
    storage_rollback();
    teardown();
}

static void test_load_current_checks_if_match(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    const char *id = add(r, "hello", "open", "2026-01-01T00:00:00.000Z");
    struct note n;
    CHECK(storage_begin(false) == 0);
    CHECK(resource_load_current(r, &notes, id, "\"v1\"", &n) == 1);
    CHECK(resource_load_current(r, &notes, id, "*", &n) == 1);
    CHECK(r->status == 0);
    CHECK(resource_load_current(r, &notes, id, "\"v2\"", &n) == 0);
    CHECK(r->status == 412);
    CHECK_STR(r->problem_code, "precondition_failed");
    storage_rollback();
    teardown();
}

static void test_save_bumps_the_version_and_guards_it(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    const char *id = add(r, "hello", "open", "2026-01-01T00:00:00.000Z");
    add(r, "taken", "open", "2026-01-01T00:00:01.000Z");
    struct note n, again;
    CHECK(storage_begin(true) == 0);
    CHECK(resource_load(r, &notes, id, &n) == RESOURCE_FOUND);
    n.body = "changed";
    n.size = 7;
    n.has_size = true;
    CHECK(resource_save(r, &notes, &n) == 1);
    CHECK(n.version == 2);
    CHECK(strcmp(n.updated_at, "2026-01-01T00:00:00.000Z") > 0);
    CHECK(resource_load(r, &notes, id, &again) == RESOURCE_FOUND);
    CHECK_STR(again.body, "changed");
    CHECK(again.version == 2 && again.has_size && again.size == 7);
    CHECK_STR(again.created_at, "2026-01-01T00:00:00.000Z");
    CHECK_STR(again.updated_at, n.updated_at);
    /* a save from the version before (another writer came first): 412, nothing written */
    again.version = 1;
    again.body = "stale";
    CHECK(resource_save(r, &notes, &again) == 0);
    CHECK(r->status == 412);
    CHECK_STR(r->problem_code, "precondition_failed");
    CHECK(again.version == 1);
    CHECK(resource_load(r, &notes, id, &again) == RESOURCE_FOUND);
    CHECK_STR(again.body, "changed");
    /* a UNIQUE refusal is DB_ERR_UNIQUE for the caller's 409, the version as it was */
    CHECK(resource_load(r, &notes, id, &n) == RESOURCE_FOUND);
    n.body = "taken";
    CHECK(resource_save(r, &notes, &n) == DB_ERR_UNIQUE);
    CHECK(n.version == 2 && r->status == 412); /* no new answer: still the stale save's */
    /* a row that is gone (or another workspace's) is a failure, not a 412 */
    r = other_req("wsp_2");
    n.version = 2;
    CHECK(resource_save(r, &notes, &n) == -1);
    CHECK(r->status == 0);
    CHECK(storage_commit() == 0);
    teardown();
}

static void test_a_row_the_reader_refuses_is_a_failure(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    const char *id = add(r, "hello", "unknown", "2026-01-01T00:00:00.000Z");
    struct note n;
    CHECK(storage_begin(false) == 0);
    CHECK(resource_load(r, &notes, id, &n) == RESOURCE_FAILED);
    CHECK(resource_load_current(r, &notes, id, NULL, &n) == -1);
    CHECK(r->status == 0);
    storage_rollback();
    teardown();
}

/* A words column: split at runs of spaces; joined with one space; an item that is empty or
 * holds a space (it would read back as other items) is refused. */
static void test_words_columns_round_trip_and_refuse_a_space(void)
{
    struct arena a;
    arena_init(&a);
    const char **v = NULL;
    size_t n = 9;
    CHECK(resource_words_split(&a, NULL, &v, &n) == -1);
    CHECK(v == NULL && n == 0);
    CHECK(resource_words_split(&a, "", &v, &n) == 0);
    CHECK(n == 0);
    CHECK(resource_words_split(&a, "  a:read  b:write ", &v, &n) == 0);
    CHECK(n == 2);
    CHECK_STR(v[0], "a:read");
    CHECK_STR(v[1], "b:write");
    CHECK_STR(resource_words_join(&a, "t.c", v, n), "a:read b:write");
    CHECK_STR(resource_words_join(&a, "t.c", v, 0), "");
    const char *spaced[] = {"a:read", "b c"}, *empty[] = {"a:read", ""};
    CHECK(resource_words_join(&a, "t.c", spaced, 2) == NULL);
    CHECK(resource_words_join(&a, "t.c", empty, 2) == NULL);
    arena_release(&a);
}

/* Lists wsp_1's notes with f from cursor: the bodies joined by ",", *next the cursor. */
static const char *list(struct req *r, const struct resource_filter *f, size_t n, int64_t limit,
                        const char *cursor, const char **next, int *answered)
{
    struct resource_page p;
    CHECK(storage_begin(false) == 0);
    int rc = resource_list(r, &notes, f, n, limit, cursor, &p);
    storage_rollback();
    *answered = rc;
    if (rc <= 0)
        return NULL;
    const char *out = "";
    for (size_t i = 0; i < p.count; i++)
        out = arena_printf(&r->arena, "%s%s%s", out, i ? "," : "",
                           ((const struct note *)p.items)[i].body);
    CHECK(p.has_more == (p.next_cursor != NULL));
    *next = p.next_cursor;
    return out;
}

static void test_list_pages_through_the_workspaces_matching_rows(void)
{
    setup();
    struct req *r = fresh_req("wsp_2");
    add(r, "other", "open", "2026-01-01T00:00:05.000Z");
    r = fresh_req("wsp_1");
    add(r, "a", "open", "2026-01-01T00:00:01.000Z");
    add(r, "b", "closed", "2026-01-01T00:00:02.000Z");
    add(r, "c", "open", "2026-01-01T00:00:03.000Z");
    /* d and e at the same time: the id breaks the tie (e's is the greater) */
    add_id(r, "not_00000000000000000000000001", "d", "held", "2026-01-01T00:00:04.000Z");
    add_id(r, "not_00000000000000000000000002", "e", "open", "2026-01-01T00:00:04.000Z");
    const char *next = NULL;
    int rc;
    /* no filter set: every row of the workspace, newest first, two at a time */
    const struct resource_filter none[] = {RESOURCE_TEXT("status", RESOURCE_IN, NULL)};
    const char *all = list(r, none, 1, 10, NULL, &next, &rc);
    CHECK(rc == 1 && next == NULL);
    CHECK_STR(all, "e,d,c,b,a");
    const char *seen = "", *page;
    const char *cursor = NULL;
    int pages = 0;
    do {
        page = list(r, none, 1, 2, cursor, &next, &rc);
        CHECK(rc == 1 && page);
        seen = arena_printf(&r->arena, "%s%s%s", seen, *seen ? "," : "", page ? page : "?");
        cursor = next;
        pages++;
    } while (cursor && pages < 10);
    CHECK(pages == 3);
    CHECK_STR(seen, all);
    /* IN over a set, and EQ */
    const struct resource_filter in[] = {RESOURCE_TEXT("status", RESOURCE_IN, ",closed,held,")};
    CHECK_STR(list(r, in, 1, 10, NULL, &next, &rc), "d,b");
    const struct resource_filter eq[] = {RESOURCE_TEXT("status", RESOURCE_EQ, "open"),
                                         RESOURCE_TEXT("body", RESOURCE_GE, "b")};
    const char *open = list(r, eq, 2, 10, NULL, &next, &rc);
    CHECK(open && strcmp(open, "e,c") == 0);
    const struct resource_filter lt[] = {
        RESOURCE_TEXT("created_at", RESOURCE_LT, "2026-01-01T00:00:03.000Z")};
    CHECK_STR(list(r, lt, 1, 10, NULL, &next, &rc), "b,a");
    /* the cursor serves only the filters it was issued for, in its workspace */
    const struct resource_filter open_only[] = {RESOURCE_TEXT("status", RESOURCE_IN, ",open,")};
    CHECK(list(r, open_only, 1, 1, NULL, &next, &rc) && next);
    const char *c1 = next;
    CHECK_STR(list(r, open_only, 1, 1, c1, &next, &rc), "c");
    CHECK(list(r, in, 1, 1, c1, &next, &rc) == NULL && rc == 0);
    CHECK(r->status == 400);
    CHECK_STR(r->problem_code, "invalid_cursor");
    r = other_req("wsp_1");
    CHECK(list(r, none, 1, 1, c1, &next, &rc) == NULL && rc == 0); /* unset is not "any" */
    r = other_req("wsp_2");
    CHECK(list(r, open_only, 1, 1, c1, &next, &rc) == NULL && rc == 0);
    CHECK(r->status == 400);
    CHECK_STR(list(r, open_only, 1, 10, NULL, &next, &rc), "other");
    teardown();
}

/* Filter texts cannot spell another filter set's digest: unescaped, (status "x&body0=b", body
 * unset) and (status "x", body "b&body0=~") would both read "status0=x&body0=b&body0=~", and a
 * cursor of the one would serve the other. */
static void test_a_filter_text_cannot_forge_another_filter_set(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    add(r, "b&body0=~", "x", "2026-01-01T00:00:01.000Z");
    add(r, "b&body0=~", "x", "2026-01-01T00:00:02.000Z");
    const char *next = NULL;
    int rc;
    const struct resource_filter b[] = {RESOURCE_TEXT("status", RESOURCE_EQ, "x"),
                                        RESOURCE_TEXT("body", RESOURCE_EQ, "b&body0=~")};
    const struct resource_filter a[] = {RESOURCE_TEXT("status", RESOURCE_EQ, "x&body0=b"),
                                        RESOURCE_TEXT("body", RESOURCE_EQ, NULL)};
    CHECK(list(r, b, 2, 1, NULL, &next, &rc) && next);
    const char *c1 = next;
    CHECK(list(r, b, 2, 1, c1, &next, &rc) != NULL && rc == 1); /* its own filters: served */
    r = other_req("wsp_1");
    CHECK(list(r, a, 2, 1, c1, &next, &rc) == NULL && rc == 0);
    CHECK_STR(r->problem_code, "invalid_cursor");
    /* a text filter "~" is not an unset one */
    const struct resource_filter unset[] = {RESOURCE_TEXT("status", RESOURCE_EQ, "x"),
                                            RESOURCE_TEXT("body", RESOURCE_EQ, NULL)};
    const struct resource_filter tilde[] = {RESOURCE_TEXT("status", RESOURCE_EQ, "x"),
                                            RESOURCE_TEXT("body", RESOURCE_EQ, "~")};
    r = other_req("wsp_1");
    CHECK(list(r, unset, 2, 1, NULL, &next, &rc) && next);
    char c2[512]; /* the next other_req frees the arena next lives in */
    snprintf(c2, sizeof c2, "%s", next ? next : "");
    r = other_req("wsp_1");
    CHECK(list(r, tilde, 2, 1, c2, &next, &rc) == NULL && rc == 0);
    CHECK_STR(r->problem_code, "invalid_cursor");
    /* nor is a text filter "@" a moving one (whose value the digest leaves out) */
    const struct resource_filter moving[] = {
        RESOURCE_TEXT("status", RESOURCE_EQ, "x"),
        RESOURCE_MOVING("body", RESOURCE_EQ, "b&body0=~")};
    const struct resource_filter at[] = {RESOURCE_TEXT("status", RESOURCE_EQ, "x"),
                                         RESOURCE_TEXT("body", RESOURCE_EQ, "@")};
    r = other_req("wsp_1");
    CHECK(list(r, moving, 2, 1, NULL, &next, &rc) && next);
    char c3[512];
    snprintf(c3, sizeof c3, "%s", next ? next : "");
    r = other_req("wsp_1");
    CHECK(list(r, at, 2, 1, c3, &next, &rc) == NULL && rc == 0);
    CHECK_STR(r->problem_code, "invalid_cursor");
    teardown();
}

static void test_integer_filters(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    struct note n;
    for (int i = 1; i <= 3; i++) {
        resource_new(r, &notes, &n);
        n.body = arena_printf(&r->arena, "n%d", i);
        n.status = "open";
        n.size = i * 10;
        n.has_size = true;
        n.created_at = arena_printf(&r->arena, "2026-01-01T00:00:0%d.000Z", i);
        CHECK(storage_begin(true) == 0);
        CHECK(resource_insert(r, &notes, &n) == 0);
        CHECK(storage_commit() == 0);
    }
    const char *next;
    int rc;
    const struct resource_filter f[] = {RESOURCE_INT("size", RESOURCE_GE, true, 20),
                                        RESOURCE_INT("size", RESOURCE_LT, true, 30)};
    CHECK_STR(list(r, f, 2, 10, NULL, &next, &rc), "n2");
    const struct resource_filter g[] = {RESOURCE_INT("size", RESOURCE_GE, false, 20)};
    CHECK_STR(list(r, g, 1, 10, NULL, &next, &rc), "n3,n2,n1");
    const struct resource_filter h[] = {RESOURCE_INT("size", RESOURCE_LE, true, 20)};
    CHECK_STR(list(r, h, 1, 10, NULL, &next, &rc), "n2,n1");
    /* a sub-select (an index table a handler keeps) finds the rows */
    const struct resource_filter k[] = {RESOURCE_INT(
        "size IN (SELECT v FROM (SELECT 10 AS v UNION SELECT 30 AS v) s WHERE v =",
        RESOURCE_IN_SELECT, true, 30)};
    CHECK_STR(list(r, k, 1, 10, NULL, &next, &rc), "n3");
    const struct resource_filter k2[] = {RESOURCE_INT(
        "size IN (SELECT v FROM (SELECT 10 AS v UNION SELECT 30 AS v) s WHERE v =",
        RESOURCE_IN_SELECT, true, 20)};
    CHECK_STR(list(r, k2, 1, 10, NULL, &next, &rc), "");
    teardown();
}

/* A table whose rows the client names (x-table key: a role's key), in key order. */
struct tag {
    const char *key;
    const char *workspace_id;
    const char *label;
    int64_t version;
    const char *created_at;
};

static int tag_read(struct arena *a, struct db_stmt *st, int c, void *obj)
{
    struct tag *o = obj;
    memset(o, 0, sizeof *o);
    o->key = db_column_dup(a, st, c);
    o->workspace_id = db_column_dup(a, st, c + 1);
    o->label = db_column_dup(a, st, c + 2);
    o->version = db_column_int64(st, c + 3);
    o->created_at = db_column_dup(a, st, c + 4);
    return 0;
}

static int tag_bind(struct arena *a, struct db_stmt *st, int p, const void *obj)
{
    const struct tag *o = obj;
    (void)a;
    db_bind_text(st, p, o->key);
    db_bind_text(st, p + 1, o->workspace_id);
    db_bind_text(st, p + 2, o->label);
    db_bind_int64(st, p + 3, o->version);
    db_bind_text(st, p + 4, o->created_at);
    return 0;
}

static void tag_init(void *obj)
{
    (void)obj;
}

#define TAG_COLUMNS "key, workspace_id, label, version, created_at"

static const struct resource_table tags = {
    .table = "tags",
    .object = "tag",
    .workspace = "workspace_id",
    .sort = "created_at",
    .columns = TAG_COLUMNS,
    .column_count = 5,
    .workspace_index = 1,
    .select_sql = "SELECT " TAG_COLUMNS " FROM tags WHERE key = ?1 AND workspace_id = ?2",
    .insert_sql = "INSERT INTO tags (" TAG_COLUMNS ") VALUES (?, ?, ?, ?, ?)",
    .update_sql = "UPDATE tags SET label = ?3, version = ?4, created_at = ?5 "
                  "WHERE key = ?1 AND workspace_id = ?2 AND version = ?6",
    .size = sizeof(struct tag),
    .id_offset = offsetof(struct tag, key),
    .workspace_offset = offsetof(struct tag, workspace_id),
    .sort_offset = offsetof(struct tag, created_at),
    .versioned = true,
    .version_offset = offsetof(struct tag, version),
    .has_created_at = true,
    .created_at_offset = offsetof(struct tag, created_at),
    .init = tag_init,
    .read = tag_read,
    .bind = tag_bind,
    .key_column = "key",
};

static void add_tag(struct req *r, const char *key, const char *label)
{
    struct tag t;
    resource_new(r, &tags, &t);
    CHECK(t.key == NULL); /* the client names it: nothing made up */
    t.key = key;
    t.label = label;
    CHECK(storage_begin(true) == 0);
    CHECK(resource_insert(r, &tags, &t) == 0);
    CHECK(storage_commit() == 0);
}

/* The listed keys of r's workspace, comma-separated, and has_more. */
static const char *every_tag(struct req *r, size_t max, bool *more)
{
    struct resource_page p;
    CHECK(storage_begin(false) == 0);
    CHECK(resource_list_every(r, &tags, max, &p) == 0);
    storage_rollback();
    CHECK(p.next_cursor == NULL);
    const char *out = "";
    for (size_t i = 0; i < p.count; i++)
        out = arena_printf(&r->arena, "%s%s%s", out, i ? "," : "",
                           ((const struct tag *)p.items)[i].key);
    *more = p.has_more;
    return out;
}

static void test_a_keyed_table_loads_saves_and_lists_by_the_clients_key(void)
{
    setup();
    CHECK(sqlite3_exec(storage_sqlite_db(),
                       "CREATE TABLE tags (workspace_id TEXT NOT NULL, key TEXT NOT NULL, "
                       "label TEXT NOT NULL, version INTEGER NOT NULL, created_at TEXT NOT NULL, "
                       "PRIMARY KEY (workspace_id, key))",
                       NULL, NULL, NULL) == DB_OK);
    struct req *r = fresh_req("wsp_1");
    add_tag(r, "fx_desk", "FX");
    add_tag(r, "audit", "Audit");
    add_tag(r, "zeta", "Z");
    add_tag(other_req("wsp_2"), "other", "theirs");
    struct tag t, stale;
    CHECK(storage_begin(true) == 0);
    CHECK(resource_load(r, &tags, "fx_desk", &t) == RESOURCE_FOUND); /* no prefix to match */
    CHECK_STR(t.label, "FX");
    CHECK(resource_load(r, &tags, "other", &t) == RESOURCE_MISSING);
    CHECK(resource_load(r, &tags, "fx_desk", &t) == RESOURCE_FOUND);
    stale = t;
    t.label = "FX desk";
    CHECK(resource_save(r, &tags, &t) == 1);
    CHECK(t.version == 2);
    stale.label = "lost update";
    CHECK(resource_save(r, &tags, &stale) == 0); /* the stored version found by its key */
    CHECK(r->status == 412);
    CHECK(strstr(r->problem_detail, "version \"v2\"") != NULL);
    CHECK(storage_commit() == 0);
    bool more;
    CHECK_STR(every_tag(r, 10, &more), "audit,fx_desk,zeta");
    CHECK(!more);
    CHECK_STR(every_tag(r, 2, &more), "audit,fx_desk");
    CHECK(more);
    CHECK_STR(every_tag(other_req("wsp_2"), 10, &more), "other");
    teardown();
}

static void test_null_greater_and_moving_filters(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    struct note n;
    for (int i = 1; i <= 4; i++) {
        resource_new(r, &notes, &n);
        n.body = arena_printf(&r->arena, "n%d", i);
        n.status = "open";
        n.size = i;
        n.has_size = i % 2 == 0; /* n1, n3: no size */
        n.created_at = arena_printf(&r->arena, "2026-01-01T00:00:0%d.000Z", i);
        CHECK(storage_begin(true) == 0);
        CHECK(resource_insert(r, &notes, &n) == 0);
        CHECK(storage_commit() == 0);
    }
    const char *next, *again;
    int rc;
    const struct resource_filter nul[] = {RESOURCE_NULL("size")};
    CHECK_STR(list(r, nul, 1, 10, NULL, &next, &rc), "n3,n1");
    const struct resource_filter gt[] = {
        RESOURCE_TEXT("created_at", RESOURCE_GT, "2026-01-01T00:00:02.000Z")};
    CHECK_STR(list(r, gt, 1, 10, NULL, &next, &rc), "n4,n3");
    /* a moving value (now) is applied on every page, and a new value keeps the cursor good */
    const struct resource_filter m1[] = {
        RESOURCE_MOVING("created_at", RESOURCE_GT, "2026-01-01T00:00:01.000Z")};
    CHECK_STR(list(r, m1, 1, 2, NULL, &next, &rc), "n4,n3");
    CHECK(next != NULL);
    const struct resource_filter m2[] = {
        RESOURCE_MOVING("created_at", RESOURCE_GT, "2026-01-01T00:00:02.000Z")};
    CHECK(list(r, m2, 1, 2, next, &again, &rc) != NULL && rc == 1);
    CHECK_STR(list(r, m1, 1, 2, next, &again, &rc), "n2");
    /* a fixed value is part of the cursor: another one is refused */
    CHECK_STR(list(r, gt, 1, 1, NULL, &next, &rc), "n4");
    const struct resource_filter gt2[] = {
        RESOURCE_TEXT("created_at", RESOURCE_GT, "2026-01-01T00:00:01.000Z")};
    CHECK(list(r, gt2, 1, 1, next, &again, &rc) == NULL && rc == 0);
    teardown();
}

/* notes as a table of rows each belonging to one user (x-table owner); the owner column is
 * status here, the caller's "user" its value. */
static const struct resource_table owned = {
    .table = "notes",
    .object = "note",
    .id_prefix = "not",
    .workspace = "workspace_id",
    .sort = "created_at",
    .owner = "status",
    .columns = NOTE_COLUMNS,
    .column_count = 8,
    .workspace_index = 1,
    .select_sql = "SELECT " NOTE_COLUMNS " FROM notes WHERE id = ?1 AND workspace_id = ?2 "
                  "AND status = ?3",
    .update_sql = "UPDATE notes SET body = ?3, status = ?4, size = ?5, version = ?6, "
                  "created_at = ?7, updated_at = ?8 WHERE id = ?1 AND workspace_id = ?2 AND "
                  "version = ?9 AND status = ?10",
    .size = sizeof(struct note),
    .id_offset = offsetof(struct note, id),
    .workspace_offset = offsetof(struct note, workspace_id),
    .sort_offset = offsetof(struct note, created_at),
    .versioned = true,
    .version_offset = offsetof(struct note, version),
    .has_created_at = true,
    .created_at_offset = offsetof(struct note, created_at),
    .has_updated_at = true,
    .updated_at_offset = offsetof(struct note, updated_at),
    .init = note_init,
    .read = note_read,
    .bind = note_bind,
    .page_row = note_page_row,
};

static void test_an_owned_table_reaches_only_the_callers_rows(void)
{
    setup();
    struct req *r = fresh_req("wsp_1");
    const char *mine = add(r, "mine", "alice", "2026-01-01T00:00:01.000Z");
    const char *theirs = add(r, "theirs", "bob", "2026-01-01T00:00:02.000Z");
    add(r, "mine too", "alice", "2026-01-01T00:00:00.000Z");
    r->principal.user_id = "alice";
    struct note n;
    struct resource_page p;
    CHECK(storage_begin(true) == 0);
    CHECK(resource_load(r, &owned, mine, &n) == RESOURCE_FOUND);
    CHECK(resource_load(r, &owned, theirs, &n) == RESOURCE_MISSING);
    CHECK(resource_list(r, &owned, NULL, 0, 10, NULL, &p) == 1);
    CHECK(p.count == 2);
    CHECK_STR(((struct note *)p.items)[0].body, "mine");
    CHECK_STR(((struct note *)p.items)[1].body, "mine too");
    /* bob's row, loaded as bob, cannot be saved by alice (not even a 412 saying it is
     * there) */
    r->principal.user_id = "bob";
    CHECK(resource_load(r, &owned, theirs, &n) == RESOURCE_FOUND);
    r->principal.user_id = "alice";
    n.body = "taken over";
    CHECK(resource_save(r, &owned, &n) == -1);
    CHECK(r->status == 0);
    r->principal.user_id = "bob";
    CHECK(resource_load(r, &owned, theirs, &n) == RESOURCE_FOUND);
    CHECK_STR(n.body, "theirs");
    /* a cursor is bound to its user */
    CHECK(resource_list(r, &owned, NULL, 0, 1, NULL, &p) == 1 && p.count == 1);
    CHECK(p.next_cursor == NULL);
    r->principal.user_id = "alice";
    CHECK(resource_list(r, &owned, NULL, 0, 1, NULL, &p) == 1 && p.next_cursor != NULL);
    const char *cursor = p.next_cursor;
    r->principal.user_id = "bob";
    CHECK(resource_list(r, &owned, NULL, 0, 1, cursor, &p) == 0);
    CHECK(r->status == 400);
    storage_rollback();
    teardown();
}

/* ---- a singleton (x-table singleton: one row per workspace, keyed by it) ---------------- */

struct pref {
    const char *body;
    int64_t version;
    const char *updated_at;
};

static int pref_read(struct arena *a, struct db_stmt *st, int c, void *obj)
{
    struct pref *o = obj;
    memset(o, 0, sizeof *o);
    o->body = db_column_dup(a, st, c);
    o->version = db_column_int64(st, c + 1);
    o->updated_at = db_column_dup(a, st, c + 2);
    return 0;
}

static int pref_bind(struct arena *a, struct db_stmt *st, int p, const void *obj)
{
    const struct pref *o = obj;
    (void)a;
    db_bind_text(st, p, o->body);
    db_bind_int64(st, p + 1, o->version);
    db_bind_text(st, p + 2, o->updated_at);
    return 0;
}

static void pref_init(void *obj)
{
    (void)obj;
}

static int pref_page_row(struct req *r, struct db_stmt *st, void *item)
{
    return pref_read(&r->arena, st, 0, item);
}

static const struct resource_table prefs = {
    .table = "prefs",
    .object = "preference",
    .singleton = true,
    .workspace = "workspace_id",
    .columns = "body, version, updated_at",
    .column_count = 3,
    .workspace_index = 3,
    .select_sql = "SELECT body, version, updated_at FROM prefs WHERE workspace_id = ?1",
    .update_sql = "INSERT INTO prefs (body, version, updated_at, workspace_id) VALUES (?1, ?2, "
                  "?3, ?4) ON CONFLICT (workspace_id) DO UPDATE SET body = ?1, version = ?2, "
                  "updated_at = ?3 WHERE prefs.version = ?5",
    .size = sizeof(struct pref),
    .versioned = true,
    .version_offset = offsetof(struct pref, version),
    .has_updated_at = true,
    .updated_at_offset = offsetof(struct pref, updated_at),
    .init = pref_init,
    .read = pref_read,
    .bind = pref_bind,
    .page_row = pref_page_row,
};

static void test_a_singleton_is_version_1_until_set_and_saves_guarded(void)
{
    setup();
    CHECK(sqlite3_exec(storage_sqlite_db(),
                       "CREATE TABLE prefs (workspace_id TEXT PRIMARY KEY, body TEXT NOT NULL, "
                       "version INTEGER NOT NULL, updated_at TEXT NOT NULL)",
                       NULL, NULL, NULL) == DB_OK);
    struct req *r = fresh_req("wsp_1");
    struct pref p, stale, again;
    bool stored = true;
    CHECK(storage_begin(true) == 0);
    /* never written: a fresh one at version 1 */
    CHECK(resource_load_singleton(r, &prefs, NULL, &p, &stored) == 1);
    CHECK(!stored && p.version == 1 && p.body == NULL);
    stale = p;
    /* the first save inserts it at version 2 */
    p.body = "first";
    CHECK(resource_save_singleton(r, &prefs, &p) == 1);
    CHECK(p.version == 2 && p.updated_at != NULL);
    CHECK(resource_load_singleton(r, &prefs, "\"v2\"", &again, &stored) == 1);
    CHECK(stored && again.version == 2);
    CHECK_STR(again.body, "first");
    /* If-Match read before it: 412 */
    CHECK(resource_load_singleton(r, &prefs, "\"v1\"", &again, NULL) == 0);
    CHECK(r->status == 412);
    /* a save from version 1 (another writer set it first): 412, nothing written */
    r = fresh_req("wsp_1");
    stale.body = "lost";
    CHECK(resource_save_singleton(r, &prefs, &stale) == 0);
    CHECK(r->status == 412 && stale.version == 1);
    CHECK_STR(r->problem_code, "precondition_failed");
    /* the next version from the stored one, updated in place */
    CHECK(resource_load_singleton(r, &prefs, NULL, &again, NULL) == 1);
    CHECK_STR(again.body, "first");
    again.body = "second";
    CHECK(resource_save_singleton(r, &prefs, &again) == 1 && again.version == 3);
    /* another workspace's is its own: still never set */
    r = other_req("wsp_2");
    CHECK(resource_load_singleton(r, &prefs, NULL, &p, &stored) == 1);
    CHECK(!stored && p.version == 1);
    /* a table that is not a singleton is refused */
    CHECK(resource_load_singleton(r, &notes, NULL, &p, NULL) == -1);
    CHECK(storage_commit() == 0);
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_new_sets_id_workspace_version_and_times),
        UNIT_TEST(test_load_finds_only_the_workspaces_own_row),
        UNIT_TEST(test_a_struct_of_another_size_is_refused_not_written_past),
        UNIT_TEST(test_load_current_checks_if_match),
        UNIT_TEST(test_save_bumps_the_version_and_guards_it),
        UNIT_TEST(test_a_row_the_reader_refuses_is_a_failure),
        UNIT_TEST(test_list_pages_through_the_workspaces_matching_rows),
        UNIT_TEST(test_a_filter_text_cannot_forge_another_filter_set),
        UNIT_TEST(test_integer_filters),
        UNIT_TEST(test_a_keyed_table_loads_saves_and_lists_by_the_clients_key),
        UNIT_TEST(test_null_greater_and_moving_filters),
        UNIT_TEST(test_an_owned_table_reaches_only_the_callers_rows),
        UNIT_TEST(test_a_singleton_is_version_1_until_set_and_saves_guarded),
        UNIT_TEST(test_words_columns_round_trip_and_refuse_a_space),
    };
    return unit_run("resource", tests, sizeof tests / sizeof tests[0]);
}
