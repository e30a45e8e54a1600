/* A resource's rows, whatever the resource: load by id within the caller's workspace (404 for
 * anything else), insert, save as the next version under an optimistic-concurrency guard
 * (412), and list a page of them with declared filters and a signed cursor. Everything it
 * knows about a table comes from its descriptor, generated from the schema's x-table mapping
 * (codegen/rows.py, generated/rows_<api>.h): column list, SQL texts, and the functions that
 * turn a row into the schema's struct and back. It knows no API. */
#ifndef RUNTIME_RESOURCE_H
#define RUNTIME_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/arena.h"
#include "runtime/pagination.h"
#include "runtime/req.h"
#include "runtime/storage.h"

struct jsonw;

/* One table behind one schema (generated: `const struct resource_table rows_<schema>`). */
struct resource_table {
    const char *table;     /* "beneficiaries" */
    const char *object;    /* "beneficiary": how a 404 names it */
    const char *id_prefix; /* "ben": id_valid(id, prefix), else simply not found; NULL with
                            * key_column */
    const char *workspace; /* the tenant column every statement is scoped by */
    const char *sort;      /* list order: (sort DESC, id DESC), or ASC when ascending */
    bool ascending;        /* x-table order: asc (a chart of accounts by code) */
    const char *columns;   /* every mapped column, in read and bind order */
    int column_count;
    int workspace_index; /* the workspace column's place in columns, from 0 */
    /* "SELECT <columns> FROM t WHERE id = ?1 AND <workspace> = ?2" */
    const char *select_sql;
    /* "INSERT INTO t (<columns>) VALUES (?, ...)", the columns bound from ?1; NULL when the
     * table has NOT NULL columns only the handler writes (x-table internal): it inserts */
    const char *insert_sql;
    /* "UPDATE t SET ... WHERE id = ?I AND <workspace> = ?W [AND <version> = ?(count + 1)]":
     * every column but id and the workspace, bound as insert_sql's, then the old version. */
    const char *update_sql;
    /* update_sql for a transition: only the columns x-table lists under state, the version
     * and updated_at (same parameters); NULL when it lists none. */
    const char *state_sql;
    size_t size;      /* sizeof the struct (struct <schema>_row with hidden columns) */
    size_t id_offset; /* const char * members of the struct */
    size_t workspace_offset;
    size_t sort_offset;
    bool versioned; /* int64_t version at version_offset, the ETag */
    size_t version_offset;
    bool has_created_at; /* const char *created_at, set by resource_new */
    size_t created_at_offset;
    bool has_updated_at; /* const char *updated_at, set by resource_new and a save */
    size_t updated_at_offset;
    /* Sets the schema's constants (`object: beneficiary`), which have no column. */
    void (*init)(void *obj);
    /* The row's columns from first_col on into obj (strings copied into a); -1 for a value the
     * spec does not know (an enum or union value of a newer server, unreadable JSON), logged. */
    int (*read)(struct arena *a, struct db_stmt *st, int first_col, void *obj);
    /* obj's columns as parameters first_param.. (JSON text built in a). 0 / -1. */
    int (*bind)(struct arena *a, struct db_stmt *st, int first_param, const void *obj);
    page_row_fn *page_row; /* read, as a page's row function */
    /* x-table singleton: one row per workspace, keyed by it (no id, sort or list): select_sql
     * is "... WHERE <workspace> = ?1", update_sql the upsert of every column (?1..?count),
     * the workspace ?(count + 1) and, versioned, `WHERE version = ?(count + 2)`. Only
     * resource_load_singleton and resource_save_singleton take such a table. */
    bool singleton;
    /* x-table owner: the column of the user a row belongs to (a session), NULL when rows are
     * the workspace's. Then select_sql also has `AND <owner> = ?3`, update_sql and state_sql
     * `AND <owner> = ?(count + 1 + versioned)`, and a list `AND <owner> = ?`: bound to
     * r->principal.user_id, so no statement reaches another user's row. */
    const char *owner;

    /* obj (the struct read and bound) as the API shows it: the schema's JSON encoder. */
    void (*encode)(struct jsonw *w, const void *obj);
    /* x-table cache: the resource's JSON is a function of its id and version, so lists take
     * it from runtime/rep_cache.h when kept (a row is then read for its id, version and sort
     * key only) and keep what they encode. The columns' places in `columns`, and where the
     * struct holds the kept text: const char *json_text, then size_t json_len (the encoder
     * writes it as it is). */
    bool cached;
    int id_index, version_index, sort_index;
    size_t json_offset;
    /* x-table key: the client names the row (a role's key), in this column instead of id; ids
     * are neither made (resource_new leaves it to the caller) nor checked against a prefix.
     * Such rows are listed whole (resource_list_every), not paged. NULL: the column id. */
    const char *key_column;
};

enum { RESOURCE_FOUND = 1, RESOURCE_MISSING = 0, RESOURCE_FAILED = -1 };

/* Every function below that reads or writes a row struct takes it through a macro that passes
 * sizeof *(obj) along: a struct of another size than the table's (t->size: the schema's struct,
 * or struct <schema>_row when the table has hidden columns) is refused and logged (-1, or
 * nothing done by resource_new), never written past; a void pointer does not compile
 * (-Wpointer-arith). */

/* r's workspace's row id into out (t->size bytes, in r->arena): RESOURCE_FOUND,
 * RESOURCE_MISSING (unknown, another workspace's, or not an id of t at all: all the same) or
 * RESOURCE_FAILED (logged). Answers nothing: for callers that decide what a missing row means. */
int resource_load_sized(struct req *r, const struct resource_table *t, const char *id, void *out,
                        size_t size);
#define resource_load(r, t, id, out) resource_load_sized((r), (t), (id), (out), sizeof *(out))
/* The row an operation on id acts on: 1 go on with out; 0 answered - 404 not_found ("No
 * <object> <id> in this workspace.") or 412 precondition_failed when if_match (the request's
 * If-Match, NULL when it has none) names another version; -1 failure. */
int resource_load_current_sized(struct req *r, const struct resource_table *t, const char *id,
                                const char *if_match, void *out, size_t size);
#define resource_load_current(r, t, id, if_match, out)                                             \
    resource_load_current_sized((r), (t), (id), (if_match), (out), sizeof *(out))
/* Starts a new resource in obj (t->size bytes): zeroed, its constants, a new id of t's prefix,
 * r's workspace, version 1, created_at = updated_at = now. The caller fills the rest. Not for
 * a `workspace: id` table (the tenant's own row), whose id would be r's workspace. */
void resource_new_sized(struct req *r, const struct resource_table *t, void *obj, size_t size);
#define resource_new(r, t, obj) resource_new_sized((r), (t), (obj), sizeof *(obj))
/* Inserts obj as a new row (the caller has set id, version 1, times), in r's workspace
 * whatever obj says. 0 / -1;
 * DB_ERR_UNIQUE when a UNIQUE constraint refused it, for a caller that answers 409. */
int resource_insert_sized(struct req *r, const struct resource_table *t, const void *obj,
                          size_t size);
#define resource_insert(r, t, obj) resource_insert_sized((r), (t), (obj), sizeof *(obj))
/* Writes obj, changed from the stored row at its version, as the next version: updated_at
 * = now, version + 1, `WHERE version = old`, in r's workspace whatever obj says. 1 saved; 0
 * answered 412 precondition_failed when the row is at another version (another writer came first);
 * DB_ERR_UNIQUE (negative, so `<= 0` callers stop) when a UNIQUE constraint refused it, for a
 * caller that answers 409; -1 failure (no such row, or a database failure; logged). */
int resource_save_sized(struct req *r, const struct resource_table *t, void *obj, size_t size);
#define resource_save(r, t, obj) resource_save_sized((r), (t), (obj), sizeof *(obj))
/* resource_save for a transition: writes only t's state columns (x-table state), leaving
 * the indexed and referencing columns as they are. Same answers. */
int resource_save_state_sized(struct req *r, const struct resource_table *t, void *obj,
                              size_t size);
#define resource_save_state(r, t, obj) resource_save_state_sized((r), (t), (obj), sizeof *(obj))

/* ---- singletons (x-table singleton: one row per workspace) ----------------------------- */

/* r's workspace's row of singleton t into out (t->size bytes). When none was ever written,
 * out is a fresh one: zeroed, its constants, version 1 (the caller fills its defaults; the
 * first save makes version 2, so an If-Match read before it no longer matches). 1 go on (with
 * *stored whether a row exists; stored may be NULL); 0 answered 412 precondition_failed when
 * if_match (NULL: none) names another version; -1 failure (logged). */
int resource_load_singleton_sized(struct req *r, const struct resource_table *t,
                                  const char *if_match, void *out, bool *stored, size_t size);
#define resource_load_singleton(r, t, if_match, out, stored)                                       \
    resource_load_singleton_sized((r), (t), (if_match), (out), (stored), sizeof *(out))
/* Writes obj, loaded at its version, as r's workspace's row of singleton t at the next one
 * (inserted when none exists): updated_at = now, version + 1. 1 saved; 0 answered 412
 * precondition_failed when another writer came first; -1 failure (logged). */
int resource_save_singleton_sized(struct req *r, const struct resource_table *t, void *obj,
                                  size_t size);
#define resource_save_singleton(r, t, obj) resource_save_singleton_sized((r), (t), (obj), sizeof *(obj))

/* The declared event (x-event) of an operation that answers 204: event type about the
 * resource the handler last inserted or saved (r->saved), with the resource as it was saved as
 * the event's object; none when the handler saved nothing (nothing changed). In r's
 * transaction, from the generated dispatcher. 0 / -1. */
int resource_saved_event(struct req *r, const char *type, const char *resource_type);

/* ---- what the generated row codecs share (generated/rows_<api>.c) --------------------- */

/* A stored value this server cannot read (written by a newer one, or damaged): logs where
 * ("table.column"), the column's number and its text. Returns -1, what a row reader returns. */
int resource_unknown(const char *where, struct db_stmt *st, int col);
/* What w wrote, as text in a (NULL when out of memory); w is released either way. */
char *resource_json_text(struct arena *a, struct jsonw *w);
/* A `words` column ("a b c", as OAuth writes a scope list) into its strings in a; runs of
 * spaces separate, an empty text is none. 0, or -1 for NULL text (the caller decides whether
 * a NULL column is allowed). */
int resource_words_split(struct arena *a, const char *text, const char ***out, size_t *n);
/* v[0..n) as one words column: one space between them, in a. NULL (logged, naming where) when
 * an item is empty or holds a space, which would read back as other items: the spec's
 * pattern keeps a request from carrying one (codegen/rows.py checks it is declared). */
const char *resource_words_join(struct arena *a, const char *where, const char *const *v,
                                size_t n);

/* ---- lists ---------------------------------------------------------------------------- */

enum resource_op {
    RESOURCE_EQ, /* column = value */
    RESOURCE_IN, /* column in the set ",a,b," (as <enum>_set() writes it) */
    RESOURCE_LT, /* column < value */
    RESOURCE_GE, /* column >= value */
    RESOURCE_IS_NULL, /* column IS NULL (set: RESOURCE_NULL) */
    RESOURCE_GT, /* column > value */
    RESOURCE_LE, /* column <= value */
    RESOURCE_IN_SELECT, /* column is the start of a sub-select ending in a comparison, "id IN
                         * (SELECT entry_id FROM entry_accounts WHERE account_id =": the row
                         * is listed when the sub-select finds value (an index table its owner
                         * keeps: never a scan of a JSON column); it may name ?1, the
                         * list's workspace */
};

/* One declared filter of a list: not applied when `set` is false (an absent query
 * parameter). column is the handler's constant, never the client's text. */
struct resource_filter {
    const char *column;
    enum resource_op op;
    bool set;
    bool integer; /* compare as BIGINT `number`, else as TEXT `text` */
    const char *text;
    int64_t number;
    /* A value that moves from page to page (now: RESOURCE_MOVING): applied, but not in the
     * cursor's digest, so the next page's cursor still serves. */
    bool moving;
};
#define RESOURCE_TEXT(col, op_, v)                                                                 \
    ((struct resource_filter){.column = (col), .op = (op_), .set = (v) != NULL, .text = (v)})
#define RESOURCE_INT(col, op_, has, v)                                                             \
    ((struct resource_filter){                                                                     \
        .column = (col), .op = (op_), .set = (has), .integer = true, .number = (v)})

#define RESOURCE_NULL(col)                                                                         \
    ((struct resource_filter){                                                                     \
        .column = (col), .op = RESOURCE_IS_NULL, .set = true, .integer = true, .number = 1})
#define RESOURCE_MOVING(col, op_, v)                                                               \
    ((struct resource_filter){                                                                     \
        .column = (col), .op = (op_), .set = (v) != NULL, .text = (v), .moving = true})

/* A page as every list answers it. */
struct resource_page {
    void *items; /* count structs of the item size, in r->arena */
    size_t count;
    bool has_more;
    const char *next_cursor; /* NULL on the last page */
};
/* Fills a generated page struct (data, data_count, has_more, next_cursor,
 * next_cursor_is_null: every page schema has them) from a struct resource_page. */
#define RESOURCE_PAGE_SET(page, rp)                                                                \
    do {                                                                                           \
        (page)->data = (rp).items;                                                                 \
        (page)->data_count = (rp).count;                                                           \
        (page)->has_more = (rp).has_more;                                                          \
        (page)->next_cursor = (rp).next_cursor;                                                    \
        (page)->next_cursor_is_null = (rp).next_cursor == NULL;                                    \
    } while (0)

/* A page of r's workspace's rows of t matching every set filter (f[0..n)), newest first by
 * (sort, id), limit of them after cursor (NULL: the first page). The cursor is bound to the
 * table, the workspace and the filters' values. 1 filled; 0 answered 400 invalid_cursor;
 * -1 failure. */
int resource_list(struct req *r, const struct resource_table *t, const struct resource_filter *f,
                  size_t n, int64_t limit, const char *cursor, struct resource_page *out);
/* What a list may read beside each row: more select expressions, computed by the database in
 * the same statement (a flag from a correlated EXISTS that spares a follow-up query for the rows
 * without it). The page's items are then the caller's struct: t's struct first (offset 0, so
 * the cursor's sort key and id are where t says), then what the expressions are read into. */
struct resource_extra {
    /* ", expr, ..." appended to t's columns; portable SQL that may name t's table's columns
     * as <table>.<column>. They are the row's columns t->column_count on. */
    const char *columns;
    size_t item_size;  /* sizeof the caller's item */
    page_row_fn *row; /* reads a whole row: t->page_row(r, st, item), then the expressions */
    /* Never take kept representations (x-table cache), for a page answered otherwise (CSV). */
    bool uncached;
};

/* resource_list with x's expressions read into each item (x NULL: resource_list). */
int resource_list_extra(struct req *r, const struct resource_table *t,
                        const struct resource_filter *f, size_t n, int64_t limit,
                        const char *cursor, const struct resource_extra *x,
                        struct resource_page *out);
/* Every row of r's workspace in t, in key order (ascending), at most max of them: for a list
 * the API answers whole (a workspace's custom roles). out->has_more tells that more than max
 * exist; out->next_cursor stays NULL. 0 / -1. */
int resource_list_every(struct req *r, const struct resource_table *t, size_t max,
                        struct resource_page *out);
/* A page of t's rows that are struct <name>_row (x-table hidden: the API's struct first, as
 * obj) made a page of the API's structs, obj_size bytes each: what the page schema holds. */
void resource_page_objects(struct req *r, const struct resource_table *t, size_t obj_size,
                           struct resource_page *p);
/* A page's items of a cached table (x-table cache) whose JSON is not kept yet: each is
 * encoded once (t->encode), kept (runtime/rep_cache.h) and its text set in the item, so the
 * page's encoder copies it. resource_list does it itself; a list with extra expressions
 * (resource_list_extra) whose handler fills computed members calls it once they are filled.
 * Items are item_size bytes apart, the table's struct first. Only for a read: what a write
 * transaction encodes may yet roll back. */
void resource_page_remember(struct req *r, const struct resource_table *t, void *items,
                            size_t count, size_t item_size);
/* Whether item (the table's struct first) was taken from the kept representations: its
 * members are then only id, sort key and version (the rest is in its JSON text). */
bool resource_item_kept(const struct resource_table *t, const void *item);

/* A list with SQL of its own (a join: members with their users): its parameters are the
 * texts args[0..n_args) as ?1..?n (NULL binds NULL), then the position (?n+1 the sort key,
 * ?n+2 the id) and the limit (?n+3), as resource_list's are; it orders by (key DESC, id DESC).
 * digest names the list and every value its rows depend on (the args), so that a cursor
 * serves only the list it was issued for. */
struct resource_sql_list {
    const char *digest;
    const char *sql;
    const char *const *args;
    int n_args;
    size_t item_size;
    page_row_fn *row;
    size_t key_offset, id_offset; /* const char * members of the item: sort key and id */
};
/* A page of l after cursor (NULL: the first): 1 filled; 0 answered 400 invalid_cursor; -1
 * failure. */
int resource_list_sql(struct req *r, const struct resource_sql_list *l, int64_t limit,
                      const char *cursor, struct resource_page *out);
/* The tail of a list that is not one table's rows (a join): st is prepared and bound by the
 * caller, its position and limit bound with page_bind(pg, ...); steps it into pg->limit items
 * of item_size read by row, and makes the next cursor from the last item's sort key and id
 * (const char * members at key_offset and id_offset). 0 / -1. */
int resource_page_fill(struct req *r, struct page *pg, struct db_stmt *st, size_t item_size,
                       page_row_fn *row, size_t key_offset, size_t id_offset,
                       struct resource_page *out);

#endif
