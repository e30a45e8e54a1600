"""The storage seam (README "Storage: SQLite or PostgreSQL", "The portable SQL"): handlers and
the runtime outside the engines speak neither engine's API nor dialect, and the runtime names no
API's table. Checked on the source text, so that a slip fails here rather than only in the run
of the whole suite on the other engine:
- no `sqlite3` in handlers/; in runtime/ only in the SQLite engine (storage_sqlite.*,
  storage_vfs.*); the engines' interface (storage_engine.h) and libpq only in runtime/storage*;
- no SQLite-only construct (rowid, json_each, INSERT OR, PRAGMA, AUTOINCREMENT, date
  functions ...) in the SQL of handlers/, runtime/ outside the engines, generated/, and the
  migrations not marked .sqlite.sql;
- no table of an API's migrations (handlers/sql/) in the runtime's SQL or its migrations
  (runtime/sql/)."""
import glob
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')

# The SQLite engine's own files, the only ones that may speak SQLite.
SQLITE_ENGINE = re.compile(r'^runtime/storage_(sqlite|vfs)\.[ch]$')
# The engines and what sits beside them behind storage.h.
ENGINE_SIDE = re.compile(r'^runtime/storage[a-z_]*\.[ch]$')

# SQLite's dialect, none of it in the portable subset (README: The portable SQL).
SQLITE_ONLY = [
    (r'\browid\b', 'rowid'),
    (r'\boid\b', 'oid'),
    (r'\bINSERT\s+OR\b', 'INSERT OR ...'),
    (r'\bREPLACE\s+INTO\b', 'REPLACE INTO'),
    (r'\bPRAGMA\b', 'PRAGMA'),
    (r'\bAUTOINCREMENT\b', 'AUTOINCREMENT'),
    (r'\bBEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)\b', 'BEGIN IMMEDIATE/EXCLUSIVE/DEFERRED'),
    (r'\bjson_(each|tree|extract|set|insert|replace|patch|remove|valid|type|quote|'
     r'group_array|group_object)\s*\(', 'a JSON function'),
    (r'\b(datetime|date|time|julianday|strftime|unixepoch)\s*\(', 'a date function'),
    (r'\b(ifnull|group_concat|instr|printf|typeof|randomblob|last_insert_rowid|changes|'
     r'total_changes|glob)\s*\(', 'a SQLite function'),
    (r'\bGLOB\b', 'GLOB'),
    (r'\bCOLLATE\s+NOCASE\b', 'COLLATE NOCASE'),
    (r'\bsqlite_\w+', "a sqlite_ table"),
    (r'\bDELETE\s+FROM\b(?:(?!\bSELECT\b|;).)*\bLIMIT\b', 'DELETE ... LIMIT'),
]
# Both engines have these, but they differ or are unsafe: not in the subset either (a
# PostgreSQL-only migration, .pg.sql, may use PostgreSQL's JSON operators).
NOT_PORTABLE = [
    (r'->>?', 'a JSON operator'),
    (r'\bjson_array_length\s*\(', 'a JSON function'),
    (r'\bLIKE\b', 'LIKE (case-insensitive on SQLite only)'),
    (r'\bMAX\s*\([^()]*\)\s*\+\s*1\b', 'MAX(x) + 1'),
]
SQLITE_ONLY = [(re.compile(p, re.I | re.S), what) for p, what in SQLITE_ONLY]
NOT_PORTABLE = [(re.compile(p, re.I | re.S), what) for p, what in NOT_PORTABLE]
# Generated files that embed documents (the OpenAPI JSON, the reference HTML), not SQL.
DOCUMENTS = ('generated/openapi_json.c', 'generated/docs_html.c')
# A C string literal holding SQL: it has a keyword of it, in capitals as this code writes SQL.
SQL_WORD = re.compile(r'\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|PRAGMA|BEGIN|'
                      r'SAVEPOINT|VALUES|WHERE|FROM|SET)\b')
TABLE_REF = re.compile(r'\b(?:FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES|ON)\s+([a-z_][a-z0-9_]*)',
                       re.I)


def read(rel):
    with open(os.path.join(ROOT, rel), encoding='utf-8') as fh:
        return fh.read()


def files(pattern):
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))


def literals(text):
    """The string literals of C source text, adjacent ones joined (SQL is split over lines and
    around macros such as DB_IN_LIST, which end a literal), comments and character constants
    skipped."""
    out, cur, i, n = [], None, 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith('/*', i):
            i = text.find('*/', i + 2)
            i = n if i < 0 else i + 2
        elif text.startswith('//', i):
            i = text.find('\n', i)
            i = n if i < 0 else i
        elif ch == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == '\\' else 1
            i = j + 1
        elif ch == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == '\\' and j + 1 < n:
                    buf.append({'n': '\n', 't': '\t'}.get(text[j + 1], text[j + 1]))
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            cur = (cur or '') + ''.join(buf)
            i = j + 1
        elif ch.isspace():
            i += 1
        else:
            if cur is not None:
                out.append(cur)
                cur = None
            i += 1
    if cur is not None:
        out.append(cur)
    return out


def sql_literals(text):
    return [s for s in literals(text) if SQL_WORD.search(s)]


def sql_text(text):
    """A migration's SQL without its -- comments (they explain dialects by naming them)."""
    return re.sub(r'--[^\n]*', ' ', text)


def sqlite_only(sql, portable=True):
    """What of SQLite's dialect sql uses, by name; portable: SQL for both engines, which also
    keeps out what the engines both have but do differently."""
    rules = SQLITE_ONLY + (NOT_PORTABLE if portable else [])
    return sorted({what for pat, what in rules if pat.search(sql)})


def api_tables():
    found = set()
    for rel in files('handlers/sql/*/*.sql'):
        found.update(re.findall(r'CREATE TABLE (?:IF NOT EXISTS )?([a-z_][a-z0-9_]*)',
                                sql_text(read(rel)), re.I))
    return found


def api_tables_named(sql, tables):
    return sorted({t for t in TABLE_REF.findall(sql) if t.lower() in tables})


def c_sources():
    return files('handlers/*.[ch]') + files('runtime/*.[ch]') + [
        rel for rel in files('generated/*.[ch]') if rel not in DOCUMENTS]


# ---- the engines' APIs ---------------------------------------------------------------------

def test_no_sqlite_api_outside_the_sqlite_engine():
    found = [rel for rel in files('handlers/*.[ch]') + files('runtime/*.[ch]') +
             files('generated/*.[ch]')
             if not SQLITE_ENGINE.match(rel) and re.search(r'sqlite3', read(rel))]
    assert found == [], 'sqlite3 outside runtime/storage_sqlite.* and storage_vfs.*: %s' % found


def test_the_engines_interface_and_libpq_stay_behind_storage_h():
    found = [rel for rel in c_sources() if not ENGINE_SIDE.match(rel) and
             re.search(r'#\s*include\s*[<"](runtime/storage_engine\.h|libpq-fe\.h|'
                       r'runtime/storage_sqlite\.h|runtime/storage_vfs\.h)[>"]', read(rel))]
    assert found == [], found


# ---- the portable SQL ----------------------------------------------------------------------

def test_no_sqlite_only_sql_outside_the_sqlite_engine():
    bad = []
    for rel in c_sources():
        if ENGINE_SIDE.match(rel) and rel != 'runtime/storage_migrate.c':
            continue  # the engines translate the subset to their own dialect
        for sql in sql_literals(read(rel)):
            what = sqlite_only(sql)
            if what:
                bad.append('%s: %s in %r' % (rel, ', '.join(what), sql[:120]))
    assert bad == [], '\n'.join(bad)


def test_migrations_for_both_engines_use_no_sqlite_only_sql():
    rels = [rel for rel in files('handlers/sql/*/*.sql') + files('runtime/sql/*.sql')
            if not rel.endswith('.sqlite.sql')]
    assert len(rels) > 10, rels
    bad = []
    for rel in rels:
        what = sqlite_only(sql_text(read(rel)), portable=not rel.endswith('.pg.sql'))
        if what:
            bad.append('%s: %s' % (rel, ', '.join(what)))
    assert bad == [], '\n'.join(bad)


# ---- the runtime knows no API --------------------------------------------------------------

def test_the_runtime_names_no_api_table():
    tables = api_tables()
    assert {'payments', 'beneficiaries', 'fx_market_walks'} <= tables
    bad = []
    for rel in files('runtime/*.c') + files('runtime/*.h'):
        for sql in sql_literals(read(rel)):
            named = api_tables_named(sql, tables)
            if named:
                bad.append('%s: %s in %r' % (rel, named, sql[:120]))
    for rel in files('runtime/sql/*.sql'):
        named = api_tables_named(sql_text(read(rel)), tables)
        if named:
            bad.append('%s: %s' % (rel, named))
    assert bad == [], '\n'.join(bad)


# ---- the checks themselves -----------------------------------------------------------------

def test_literals_are_joined_across_lines_and_macros_and_comments_skipped():
    src = ('st = storage_prepare("SELECT id FROM t "\n   "WHERE a = ?" /* "FROM x" */\n'
           '   " AND b IN " DB_IN_LIST);\nc = \'"\'; log_info("plain %s", "x");')
    assert literals(src) == ['SELECT id FROM t WHERE a = ? AND b IN ', 'plain %s', 'x']
    assert sql_literals(src) == ['SELECT id FROM t WHERE a = ? AND b IN ']


def test_the_checks_see_sqlite_only_sql_and_api_tables():
    for sql in ['INSERT OR IGNORE INTO t (a) VALUES (?)', 'SELECT rowid FROM t',
                'SELECT value FROM json_each(?)', "SELECT json_extract(m, '$.a') FROM t",
                'PRAGMA user_version', 'CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT)',
                "SELECT datetime('now')", 'SELECT MAX(seq) + 1 FROM t',
                'DELETE FROM t WHERE a < ? LIMIT 10', 'SELECT a FROM t WHERE e LIKE ?',
                'SELECT ifnull(a, 0) FROM t', "SELECT m ->> 'a' FROM t"]:
        assert sqlite_only(sql), sql
    assert sqlite_only("SELECT l.value ->> 'a' FROM t, json_array_elements(t.j) l",
                       portable=False) == []
    assert sqlite_only("SELECT json_each(l.value) FROM t", portable=False) == ['a JSON function']
    for sql in ['SELECT id FROM t WHERE a = ? ORDER BY id LIMIT ?',
                'DELETE FROM t WHERE id IN (SELECT id FROM t WHERE a < ? LIMIT 10)',
                'INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO NOTHING RETURNING id',
                'SELECT COALESCE(MAX(seq), 0) FROM t', 'UPDATE t SET n = n + 1 WHERE id = ?']:
        assert not sqlite_only(sql), (sql, sqlite_only(sql))
    tables = {'payments', 'members'}
    assert api_tables_named('SELECT a FROM revocations r JOIN payments p ON p.id = r.id',
                            tables) == ['payments']
    assert api_tables_named('UPDATE members SET role = ?', tables) == ['members']
    assert api_tables_named('SELECT members FROM idempotency_keys', tables) == []
