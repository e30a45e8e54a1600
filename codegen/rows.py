"""Storage mappings from the spec: `x-table` on a component schema (the resource's row <-> struct
codec and its table descriptor for runtime/resource.h) and `x-merge-into` on an update schema
(the PATCH merge, RFC 7396). Checked against the schema and against the table as the
migrations create it (`<sql>/<api>/*.sql`, both dialects); emitted as generated/rows_<api>.h/.c.

    x-table:
      name: beneficiaries     # the table
      id-prefix: ben          # ids are id_new(prefix): a malformed id is simply not found
      workspace: workspace_id # the tenant column: every load, list and save is scoped by it
      version: version        # optional: the optimistic-concurrency column (ETag)
      sort: created_at        # list order (sort DESC, id DESC), the keyset cursor
      title: OAuth client     # optional: how a 404 names one ("No OAuth client cli_... in this
                              #   workspace."); else the `object` constant in words
      columns:                # only where the default does not fit
        account_identification: {flatten: ''}  # members (union: the discriminator too) as
        bank: {flatten: bank_}                 #   columns <prefix><member>
        metadata: json                         # JSON text in the column of its name
        scopes: words                          # strings, space-separated in one text column
        approval: computed                     # not stored: the handler fills it
        note: {column: remark}                 # a scalar in a column of another name
      hidden:                 # columns the API does not show, read and written with the row:
        approval_round: integer               #   members of struct <name>_row beside obj
        created_for: string?                  #   (`?`: NULL-able, has_<column> beside it)
      state: [status, approval_round]         # what resource_save_state() writes (a
                                              #   transition), with version and updated_at

    `owner: user_id` scopes every statement by the caller's user too (a session belongs to
    one): loads, saves and lists see only r->principal.user_id's rows.

    The workspace may be a hidden string column (`hidden: {workspace_id: string}`): the API
    does not show the tenant.

    x-table:                  # one row per workspace, keyed by it (a workspace's settings):
      name: approval_policies #   no id, no sort, no list; the workspace column is one no
      singleton: true         #   property maps. resource_load_singleton() answers the row, or
      workspace: workspace_id #   a fresh one at version 1 when none was ever written;
      version: version        #   resource_save_singleton() upserts it as the next version

    x-table:                  # a resource the client names (a role): keys_table()
      name: roles
      key: key                # the id is this property/column, the client's: no id-prefix
      workspace: workspace_id # here a hidden column (the schema shows no workspace)
      row-required: [version, created_at, updated_at]  # optional in the schema, in every row
      hidden: {workspace_id: string}

The default of a property is a column of its name: strings, integers, booleans and enums. A
`const` string (or one-value enum) is not stored: the reader sets it. Everything else must be
mapped (flatten: a simple object, or a oneOf whose variants have the same scalar members;
json: anything; words: an array of strings without spaces, kept as OAuth writes a scope,
space-separated in one text column: its items must declare a pattern that admits no space and
no empty text, and a handler's item with one is refused on write). A column is NOT NULL exactly when its property is
required (and, flattened, when the member is required in every variant too); a NOT NULL
column no property maps must have a DEFAULT."""
import os
import re

import cgen
from cgen import W
from spec import SpecError, c_string as lit, rel

XTABLE_KEYS = {'name', 'id-prefix', 'workspace', 'version', 'sort', 'columns', 'internal',
               'hidden', 'state', 'title', 'key', 'row-required', 'singleton', 'owner',
               'cache'}
HIDDEN_KINDS = ('integer', 'string', 'integer?', 'string?')
SCALARS = ('string', 'integer', 'boolean', 'enum')


def words_pattern_ok(p):
    """Whether the ECMA pattern p visibly admits no space and no empty text, so that a words
    item a request carries reads back as itself. Conservative: anchored at both ends with no
    top-level alternation, and nothing that can match a space (a space, `.`, a negated class,
    an escape other than \\d, \\w or an escaped punctuation character); what is left is
    printable ASCII other than the space, so no class range can reach it."""
    if not isinstance(p, str) or not p.startswith('^') or not p.endswith('$') or \
            re.search(p, '') is not None:
        return False
    rest = re.sub(r'\\[dw]|\\[\^$\\.*+?()\[\]{}|/:-]', '', p)
    if '\\' in rest or ' ' in rest or '.' in rest or '[^' in rest or \
            any(not ('!' <= ch <= '~') for ch in rest):
        return False
    depth, in_class = 0, False
    for ch in rest:
        if in_class:
            in_class = ch != ']'
        elif ch == '[':
            in_class = True
        elif ch in '()':
            depth += 1 if ch == '(' else -1
        elif ch == '|' and depth == 0:
            return False
    return True


# ---- the tables, as the migrations create them ---------------------------------------------

class Column:
    def __init__(self, name, not_null, default):
        self.name, self.not_null, self.default = name, not_null, default


def _statements(text):
    """The statements of a migration: comments dropped, split at the semicolons outside
    'quoted text'."""
    out, cur, quoted, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if not quoted and text.startswith('--', i):
            i = text.find('\n', i)
            i = len(text) if i < 0 else i
            continue
        if ch == "'":
            quoted = not quoted
        if ch == ';' and not quoted:
            out.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append(''.join(cur))
    return out


def _split_top(body):
    """Splits a CREATE TABLE body at the commas outside parentheses and quotes."""
    parts, depth, cur, quoted = [], 0, [], False
    for ch in body:
        if ch == "'":
            quoted = not quoted
        elif quoted:
            pass
        elif ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0 and not quoted:
            parts.append(''.join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if ''.join(cur).strip():
        parts.append(''.join(cur).strip())
    return parts


def _column(defn):
    words = defn.split()
    if not words or words[0].upper() in ('UNIQUE', 'PRIMARY', 'CHECK', 'FOREIGN', 'CONSTRAINT'):
        return None
    rest = ' '.join(words[1:]).upper()
    return Column(words[0].strip('"'), 'NOT NULL' in rest or 'PRIMARY KEY' in rest,
                  'DEFAULT' in rest)


def parse_ddl(text, tables):
    """Applies one migration's CREATE TABLE / ALTER TABLE ... ADD COLUMN / DROP TABLE to
    tables ({name: {column: Column}}, in creation order)."""
    for stmt in _statements(text):
        s = stmt.strip()
        m = re.match(r'CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*'
                     r'(?:WITHOUT\s+ROWID)?\s*$', s, re.S | re.I)
        if m:
            cols = {}
            for d in _split_top(m.group(2)):
                c = _column(d)
                if c:
                    cols[c.name] = c
            tables[m.group(1)] = cols
            continue
        m = re.match(r'ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(.*)$', s, re.S | re.I)
        if m and m.group(1) in tables:
            c = _column(m.group(2))
            if c:
                tables[m.group(1)][c.name] = c
            continue
        m = re.match(r'DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)\s*$', s, re.I)
        if m:
            tables.pop(m.group(1), None)


def load_tables(sql_dir):
    """{dialect: {table: {column: Column}}} over every API folder of sql_dir."""
    out = {'sqlite': {}, 'pg': {}}
    if not sql_dir or not os.path.isdir(sql_dir):
        return out
    for api in sorted(os.listdir(sql_dir)):
        d = os.path.join(sql_dir, api)
        if not os.path.isdir(d):
            continue
        for dialect in out:
            for name in sorted(os.listdir(d)):
                # NNNN_name.<dialect>.sql, or NNNN_name.sql, which every engine runs
                # (codegen/embed_sql.py)
                portable = name.endswith('.sql') and name.count('.') == 1
                if portable or name.endswith('.%s.sql' % dialect):
                    with open(os.path.join(d, name), encoding='utf-8') as f:
                        parse_ddl(f.read(), out[dialect])
    return out


# ---- the mapping -----------------------------------------------------------------------------

class Col:
    """One column: its name, how it is read and bound (kind: a scalar node kind, or json),
    and whether it is NOT NULL."""

    def __init__(self, name, node, not_null, loc, prop):
        self.name, self.node, self.not_null, self.loc = name, node, not_null, loc
        self.prop = prop   # the property (path) it holds, for messages


class Item:
    """How one property is stored: const, computed, scalar, json, flatten (object) or union
    (oneOf flattened); cols are its columns in order."""

    def __init__(self, how, field, cols=(), prefix=''):
        self.how, self.field, self.cols, self.prefix = how, field, list(cols), prefix
        self.const = None
        self.always = False   # x-table row-required: bound whatever has_<field> says


class Table:
    def __init__(self, node, loc, x):
        self.node, self.loc, self.x = node, loc, x
        self.name = x.get('name')
        self.items = []

    @property
    def cols(self):
        return [c for it in self.items for c in it.cols]

    def owner_col(self):
        return self.x.get('owner')


def const_of(node):
    """The C expression of a const string or a one-value enum, else None."""
    if node.kind == 'string':
        for ch in node.checks:
            if ch['op'] == 'const_string':
                return lit(ch['value'])
    if node.kind == 'enum' and len(node.enum_values) == 1:
        return node.enum_values[0][1]
    return None


class Rows:
    def __init__(self, model, sql_dir):
        self.m = model
        self.errors = []
        self.tables = []      # [Table]
        self.merges = []      # [(update node, resource node, loc)]
        self.ddl = load_tables(sql_dir)
        self.sql_dir = sql_dir
        schemas = model.doc['components'].get('schemas', {})
        for name, s in schemas.items():
            if not isinstance(s, dict):
                continue
            loc = model.loc(s)
            node = model.comp_nodes.get(name)
            if 'x-table' in s:
                self.table(node, s['x-table'], loc / 'x-table')
            if 'x-merge-into' in s:
                self.merge_into(node, s['x-merge-into'], loc / 'x-merge-into')
        if self.errors:
            raise SpecError(self.errors)
        names = {}
        for t in self.tables:
            if t.name in names:
                self.fail(t.loc / 'name', 'table %s is mapped twice (also %s)'
                          % (t.name, names[t.name]))
            names[t.name] = t.loc
        if self.errors:
            raise SpecError(self.errors)

    def fail(self, loc, msg):
        line = '%s: %s' % (loc, msg)
        if line not in self.errors:   # both dialects may say the same
            self.errors.append(line)

    # -- x-table ---------------------------------------------------------------------------
    def table(self, node, x, loc):
        if node.kind != 'object':
            return self.fail(loc, 'x-table is for object schemas with properties')
        if not isinstance(x, dict):
            return self.fail(loc, 'x-table must be a mapping')
        for k in x:
            if k not in XTABLE_KEYS:
                self.fail(loc / k, 'unknown x-table key %s' % k)
        singleton = x.get('singleton', False)
        if singleton not in (True, False):
            self.fail(loc / 'singleton', 'singleton is true or false')
        needed = ('name', 'workspace') if singleton else \
            ('name', 'key' if 'key' in x else 'id-prefix', 'workspace', 'sort')
        for k in needed:
            if not isinstance(x.get(k), str) or not re.match(r'^[a-z][a-z0-9_]*$', x[k]):
                self.fail(loc / k, 'x-table needs %s: a lower-case name' % k)
        if 'key' in x and 'id-prefix' in x:
            self.fail(loc / 'key', 'key (the client names the row) and id-prefix (the server '
                                   'makes its id) exclude each other')
        for k in ('id-prefix', 'key', 'sort', 'state') if singleton is True else ():
            if k in x:
                self.fail(loc / k, 'a singleton (one row per workspace, keyed by it) has no %s'
                          % k)
        if 'owner' in x and (not isinstance(x['owner'], str) or singleton is True or
                             not re.match(r'^[a-z][a-z0-9_]*$', x['owner'])):
            self.fail(loc / 'owner', 'owner names the column of the user a row belongs to (not '
                                     'of a singleton)')
        if 'title' in x and (not isinstance(x['title'], str) or not x['title'].strip()):
            self.fail(loc / 'title', 'title is how a 404 names one: a non-empty text')
        if 'version' in x and (not isinstance(x['version'], str)):
            self.fail(loc / 'version', 'version names a column')
        internal = x.get('internal', [])
        if not isinstance(internal, list) or not all(isinstance(c, str) for c in internal):
            self.fail(loc / 'internal', 'internal lists column names')
        cols = x.get('columns', {})
        if not isinstance(cols, dict):
            self.fail(loc / 'columns', 'columns must map property names to mappings')
            cols = {}
        if self.errors:
            return
        t = Table(node, loc, x)
        t.singleton = singleton is True
        fields = {f.json_name: f for f in node.fields}
        for pn in cols:
            if pn not in fields:
                self.fail(loc / 'columns' / pn, 'no property %s in the schema' % pn)
        for f in node.fields:
            it = self.item(f, cols.get(f.json_name), loc / 'columns' / f.json_name, loc)
            if it:
                t.items.append(it)
        t.id_col = x.get('key', 'id')
        self.row_required(t, x.get('row-required', []), loc / 'row-required')
        self.hidden_and_state(t, x, loc)
        roles = (('id', t.id_col, 'string'), ('workspace', x['workspace'], 'string'),
                 ('sort', x.get('sort'), 'string'), ('version', x.get('version'), 'integer'))
        if t.singleton:
            # the key is the workspace: a column the runtime binds, which no property maps
            roles = roles[3:]
            t.id_field = t.workspace_field = t.sort_field = None
            if x['workspace'] in {c.name for c in t.cols}:
                self.fail(loc / 'workspace', 'the workspace column %s of a singleton is its key, '
                                             'which no property maps' % x['workspace'])
        for role, prop, kind in roles:
            if prop is None:
                continue
            it = next((i for i in t.items if i.how == 'scalar' and i.cols[0].name == prop), None)
            setattr(t, role + '_field', it.field if it else None)
            if role == 'workspace' and not it and \
                    any(c.name == prop and c.node == 'string' and c.not_null for c in t.hidden):
                continue   # a hidden workspace column: the schema shows no workspace
            if not it or it.field.kind != kind or not (it.field.required or it.always):
                self.fail(loc / ({'id': 'key' if 'key' in x else 'id-prefix'}.get(role, role)),
                          'the %s column %s must hold a required %s property' % (role, prop, kind))
        for stamp in ('created_at', 'updated_at'):
            setattr(t, stamp, next((i.field for i in t.items if i.how == 'scalar' and
                                    i.cols[0].name == stamp and i.field.kind == 'string'), None))
        self.check_ddl(t)
        self.cache(t, x, loc)
        self.tables.append(t)

    def cache(self, t, x, loc):
        """x-table cache: true -- lists take the resource's JSON from runtime/rep_cache.h by
        (id, version). Only a versioned table whose ids the server makes; the struct gets
        json_text/json_len, which its encoder writes as they are (cgen.py)."""
        t.cache = x.get('cache', False)
        if t.cache not in (True, False):
            return self.fail(loc / 'cache', 'cache is true or false')
        if t.cache and (t.singleton or 'key' in x or not x.get('version') or t.owner_col()):
            return self.fail(loc / 'cache', 'cache needs a versioned table of server-made ids '
                                            'whose rows are the workspace\'s (not a singleton, '
                                            'a keyed or an owned table)')
        if not t.cache:
            return
        t.node.cached = True
        names = [c.name for c in t.cols] + [c.name for c in t.hidden]
        t.id_index = names.index(t.id_col)
        t.version_index = names.index(x['version'])
        t.sort_index = names.index(x['sort'])

    def row_required(self, t, names, loc):
        """row-required: [property]: optional scalar properties that every row has (a custom
        role's version and times; a built-in role, which has no row, has none): NOT NULL
        columns, always bound, always read present."""
        if not isinstance(names, list):
            return self.fail(loc, 'row-required lists property names')
        for name in names:
            it = next((i for i in t.items if i.field.json_name == name), None)
            if not it or it.how != 'scalar' or not it.field.optional:
                self.fail(loc, 'row-required names optional properties held in a column of '
                               'their own (%s is not one)' % name)
                continue
            it.always = True
            it.cols[0].not_null = True

    def hidden_and_state(self, t, x, loc):
        """hidden: {column: integer | string, `?` when NULL-able}: struct <name>_row members
        after obj; state: the columns a transition writes (resource_save_state)."""
        t.hidden, t.state = [], None
        hidden = x.get('hidden', {})
        if not isinstance(hidden, dict):
            return self.fail(loc / 'hidden', 'hidden maps column names to integer, string, '
                                             'integer? or string?')
        names = {c.name for c in t.cols}
        for col, kind in hidden.items():
            if kind not in HIDDEN_KINDS or not re.match(r'^[a-z][a-z0-9_]*$', str(col)):
                self.fail(loc / 'hidden' / str(col), 'a hidden column is integer, string, '
                                                     'integer? or string?')
            elif col in names:
                self.fail(loc / 'hidden' / col, 'column %s is mapped to a property and hidden'
                          % col)
            else:
                t.hidden.append(Col(col, kind.rstrip('?'), not kind.endswith('?'),
                                    loc / 'hidden' / col, 'hidden ' + col))
        state = x.get('state')
        if state is None:
            return
        every = [c.name for c in t.cols] + [c.name for c in t.hidden]
        if not isinstance(state, list) or not state or not x.get('version') or \
                any(c not in every or c in (t.id_col, x['workspace']) for c in state):
            return self.fail(loc / 'state', 'state lists mapped or hidden columns (not id or '
                                            'the workspace) of a versioned table')
        t.state = state

    def item(self, f, spec_, loc, tloc):
        n = f.node
        c = const_of(n)
        if spec_ is None and c is not None:
            it = Item('const', f)
            it.const = c
            return it
        if spec_ == 'computed':
            return Item('computed', f)
        if spec_ == 'json':
            return Item('json', f, [Col(f.json_name, n, f.required, loc, f.json_name)])
        if spec_ == 'words':
            if n.kind != 'array' or n.items.kind != 'string':
                self.fail(loc, 'words is for an array of strings (%s is %s)'
                          % (f.json_name, n.kind))
                return None
            pats = [c['source'] for c in n.items.checks if c.get('op') == 'pattern']
            if not pats or not any(words_pattern_ok(p) for p in pats):
                self.fail(loc, 'words: the items of %s need a pattern that admits no space and '
                               'no empty text (anchored ^...$, without \\s, ., [^ or a space), '
                               'else an item could read back as two or none' % f.json_name)
                return None
            return Item('words', f, [Col(f.json_name, n, f.required, loc, f.json_name)])
        if spec_ is None or (isinstance(spec_, dict) and set(spec_) == {'column'}):
            name = spec_['column'] if spec_ else f.json_name
            if n.kind not in SCALARS:
                what = {'object': 'an object', 'oneof': 'a oneOf union', 'array': 'an array',
                        'map': 'a map', 'any': 'free-form JSON',
                        'number': 'a number'}.get(n.kind, n.kind)
                self.fail(loc if spec_ else tloc / 'columns',
                          'property %s is %s: map it in x-table columns (%s)'
                          % (f.json_name, what, 'json; numbers have no exact column type'
                             if n.kind == 'number' else 'flatten: <prefix>, or json'))
                return None
            if f.optional and f.nullable:
                self.fail(loc, 'property %s is optional and nullable: one NULL column cannot '
                               'tell absent from null; store it as json' % f.json_name)
                return None
            return Item('scalar', f, [Col(name, n, f.required and not f.nullable, loc,
                                          f.json_name)])
        if isinstance(spec_, dict) and set(spec_) == {'flatten'} and isinstance(spec_['flatten'],
                                                                               str):
            p = spec_['flatten']
            if n.kind == 'object':
                cols = []
                for m in n.fields:
                    if m.kind not in SCALARS or m.nullable:
                        self.fail(loc / 'flatten', 'flatten of %s: member %s is not a plain '
                                                   'scalar; store %s as json'
                                  % (f.json_name, m.json_name, f.json_name))
                        return None
                    cols.append(Col(p + m.json_name, m.node, f.required and m.required, loc,
                                    '%s.%s' % (f.json_name, m.json_name)))
                return Item('flatten', f, cols, p)
            if n.kind == 'oneof':
                return self.union(f, p, loc)
            self.fail(loc / 'flatten', 'flatten of %s, which is not an object (%s): map it as a '
                                       'column or json' % (f.json_name, n.kind))
            return None
        self.fail(loc, 'a columns entry is json, words, computed, {flatten: <prefix>} or '
                       '{column: <name>}')
        return None

    def union(self, f, p, loc):
        n = f.node
        disc = n.disc_prop
        shapes = []
        for v in n.variants:
            shapes.append([(m.json_name, m.kind) for m in v.node.fields if m.json_name != disc])
        if any(s != shapes[0] for s in shapes) or \
                any(m.kind not in SCALARS or m.nullable for v in n.variants for m in v.node.fields):
            self.fail(loc / 'flatten', 'flatten of %s: its variants must have the same plain '
                                       'scalar members; store it as json' % f.json_name)
            return None
        v0 = n.variants[0].node
        cols = [Col(p + disc, None, f.required, loc, '%s.%s' % (f.json_name, disc))]
        for m in v0.fields:
            if m.json_name == disc:
                continue
            req = all(next(x for x in v.node.fields if x.json_name == m.json_name).required
                      for v in n.variants)
            cols.append(Col(p + m.json_name, m.node, f.required and req, loc,
                            '%s.%s' % (f.json_name, m.json_name)))
        return Item('union', f, cols, p)

    def check_ddl(self, t):
        for dialect, tables in sorted(self.ddl.items()):
            where = '%s/*/*.%s.sql' % (rel(self.sql_dir) if self.sql_dir else 'sql', dialect)
            ddl = tables.get(t.name)
            if ddl is None:
                self.fail(t.loc / 'name', 'table %s is not created by the migrations (%s)'
                          % (t.name, where))
                continue
            mapped = {t.x['workspace']} if t.singleton else set()
            for c in t.cols:
                mapped.add(c.name)
                d = ddl.get(c.name)
                if d is None:
                    self.fail(c.loc, '%s %s has no column: %s is missing from table %s (%s)'
                              % ('required property' if c.not_null else 'property', c.prop,
                                 c.name, t.name, where))
                elif d.not_null and not c.not_null:
                    self.fail(c.loc, 'column %s of table %s is NOT NULL, but property %s may be '
                                     'absent' % (c.name, t.name, c.prop))
                elif c.not_null and not d.not_null:
                    self.fail(c.loc, 'column %s of table %s may be NULL, but property %s is '
                                     'required: make it NOT NULL' % (c.name, t.name, c.prop))
            for c in t.hidden:
                mapped.add(c.name)
                d = ddl.get(c.name)
                if d is None:
                    self.fail(c.loc, 'hidden column %s is missing from table %s (%s)'
                              % (c.name, t.name, where))
                elif d.not_null != c.not_null:
                    self.fail(c.loc, 'hidden column %s of table %s is %s: declare it %s'
                              % (c.name, t.name, 'NOT NULL' if d.not_null else 'NULL-able',
                                 c.node if d.not_null else c.node + '?'))
            internal = t.x.get('internal', [])
            if t.x.get('owner') and t.x['owner'] not in ddl:
                self.fail(t.loc / 'owner', 'owner column %s is missing from table %s (%s)'
                          % (t.x['owner'], t.name, where))
            for name in internal:
                if name not in ddl:
                    self.fail(t.loc / 'internal', 'internal column %s is missing from table %s '
                                                  '(%s)' % (name, t.name, where))
                elif name in mapped:
                    self.fail(t.loc / 'internal', 'column %s is mapped to a property and '
                                                  'listed as internal' % name)
            for name, d in ddl.items():
                if name not in mapped and name not in internal and d.not_null and \
                        not d.default:
                    self.fail(t.loc, 'column %s of table %s is NOT NULL without a DEFAULT and no '
                                     'property maps to it: an insert would fail (a column the '
                                     'handler writes itself is listed in internal)'
                              % (name, t.name))
            # A NOT NULL internal column without a DEFAULT: rows are inserted by the handler's
            # own statement, which writes it.
            t.own_insert = any(ddl[n].not_null and not ddl[n].default
                               for n in internal if n in ddl)

    # -- x-merge-into --------------------------------------------------------------------------
    def merge_into(self, node, target, loc):
        if node.kind != 'object':
            return self.fail(loc, 'x-merge-into is for object schemas with properties')
        tnode = self.m.comp_nodes.get(target) if isinstance(target, str) else None
        if tnode is None or tnode.kind != 'object':
            return self.fail(loc, 'x-merge-into names the component schema (an object) the '
                                  'update applies to')
        tf = {f.json_name: f for f in tnode.fields}
        for f in node.fields:
            g = tf.get(f.json_name)
            floc = f.loc or loc
            if g is None:
                self.fail(floc, 'property %s of the update is not a property of %s'
                          % (f.json_name, target))
            elif g.read_only:
                self.fail(floc, 'property %s is readOnly in %s: an update cannot set it'
                          % (f.json_name, target))
            elif f.nullable and g.required:
                self.fail(floc, 'property %s may be null in the update, which removes it, but '
                                '%s requires it' % (f.json_name, target))
            elif not self.compatible(f.node, g.node):
                self.fail(floc, 'property %s of the update does not have the C type of %s.%s '
                                '(objects and maps: $ref the same component schema)'
                          % (f.json_name, target, f.json_name))
        self.merges.append((node, tnode, loc))

    def compatible(self, a, b):
        if a.kind == 'object' and b.kind == 'object' and a is not b:
            return self.nested_merge(a, b) is not None
        if a.kind != b.kind:
            return False
        if a.kind in ('enum', 'object', 'oneof'):
            return a.cname == b.cname
        if a.kind == 'array':
            return self.compatible(a.items, b.items) and a.items.kind in SCALARS + ('object',) \
                and (a.items.kind not in ('object',) or a.items is b.items)
        if a.kind == 'map':   # its entries are a struct of the map's own: one schema
            return a.cname == b.cname
        return True

    def nested_merge(self, a, b):
        """An update object nested in an update (its own schema marked x-merge-into b's
        component) merges member by member; any other object replaces."""
        s = self.m.doc['components'].get('schemas', {}).get(a.component or '', {})
        return a if isinstance(s, dict) and s.get('x-merge-into') == b.component else None


# ---- emission ------------------------------------------------------------------------------

def block(w):
    w('{')
    w.ind += 1


def _read_scalar(w, n, dst, col, f_required, f_optional, f_nullable, owner, has_name, where):
    """dst = column col (where: "table.column" for the log); has_name set for optional
    values."""
    k = n.kind
    if k == 'string':
        w('%s = db_column_dup(a, st, %s);' % (dst, col))
        if f_optional:
            w('%s = %s != NULL;' % (has_name, dst))
        elif f_nullable:
            w('%s_is_null = %s == NULL;' % (dst, dst))
        return
    if k == 'enum':
        block(w)
        w('const char *t = db_column_text(st, %s);' % col)
        if f_optional:
            w.open('if (t)')
        w('%s = %s_parse(t);' % (dst, n.cname))
        w('if (!%s)' % dst)
        w('    return resource_unknown(%s, st, %s);' % (lit(where), col))
        if f_optional:
            w('%s = true;' % has_name)
            w.close()
        w.close()
        return
    get = 'db_column_int64(st, %s)' % col
    if k == 'boolean':
        get += ' != 0'
    if f_optional:
        w.open('if (!db_column_is_null(st, %s))' % col)
        w('%s = %s;' % (dst, get))
        w('%s = true;' % has_name)
        w.close()
    else:
        w('%s = %s;' % (dst, get))


def _bind_scalar(w, n, src, param, present):
    """Binds src at param; present is a C condition (None: always)."""
    k = n.kind
    if k == 'string':
        v = src if present is None else '%s ? %s : NULL' % (present, src)
        w('db_bind_text(st, %s, %s);' % (param, v))
    elif k == 'enum':
        v = '%s_str(%s)' % (n.cname, src)
        w('db_bind_text(st, %s, %s);' % (param, v if present is None else
                                            '%s ? %s : NULL' % (present, v)))
    else:
        v = '(int64_t)(%s)' % src if k == 'boolean' else src
        if present is None:
            w('db_bind_int64(st, %s, %s);' % (param, v))
        else:
            w('if (%s)' % present)
            w('    db_bind_int64(st, %s, %s);' % (param, v))
            w('else')
            w('    db_bind_null(st, %s);' % param)


def _present(f, src):
    """C condition: the optional field f of *src is present, as the JSON encoder decides (a
    pointer when it is set: binding it as it is gives NULL otherwise); None: always."""
    if f.is_pointer and f.kind in ('string', 'object', 'oneof'):
        return None
    return '%s->has_%s' % (src, f.cname)


def read_body(t):
    w = W()

    def where(j):
        return '%s.%s' % (t.name, t.cols[j].name)
    w('memset(o, 0, sizeof *o);')
    i = 0
    for it in t.items:
        f = it.field
        dst = 'o->' + f.cname
        if it.how == 'const':
            w('%s = %s;' % (dst, it.const))
        elif it.how == 'scalar':
            _read_scalar(w, f.node, dst, 'c + %d' % i, f.required, f.optional, f.nullable, 'o',
                         'o->has_' + f.cname, where(i))
        elif it.how == 'json':
            block(w)
            w('const char *t = db_column_text(st, c + %d);' % i)
            if f.optional:
                w.open('if (t)')
            else:
                w('if (!t)')
                w('    return resource_unknown(%s, st, c + %d);' % (lit(where(i)), i))
            w('struct json_value *v = NULL;')
            w('struct json_error e;')
            w('if (json_parse(a, t, strlen(t), &v, &e) != 0)')
            w('    return resource_unknown(%s, st, c + %d);' % (lit(where(i)), i))
            if not f.node.trivial:
                # the decoders trust what they are given: a column altered outside the server
                # (or by an older one) is checked as an answer would be, never decoded blind
                w('struct verr_list l;')
                w()
                w('verr_init(&l, a);')
                w(cgen.validate_call(f.node, 'v', '""', l='&l', mode='VALIDATE_RESPONSE'))
                w('if (l.count > 0)')
                w('    return resource_unknown(%s, st, c + %d);' % (lit(where(i)), i))
            cgen.decode_value(w, f.node, 'field', dst, 'v')
            if f.optional:
                w('o->has_%s = true;' % f.cname)
                w.close()
            w.close()
        elif it.how == 'words':
            if f.optional:
                w('o->has_%s = !db_column_is_null(st, c + %d);' % (f.cname, i))
                w('if (o->has_%s &&' % f.cname)
                w('    resource_words_split(a, db_column_text(st, c + %d), &%s, &%s_count) != 0)'
                  % (i, dst, dst))
            else:
                w('if (resource_words_split(a, db_column_text(st, c + %d), &%s, &%s_count) != 0)'
                  % (i, dst, dst))
            w('    return resource_unknown(%s, st, c + %d);' % (lit(where(i)), i))
        elif it.how == 'flatten':
            n = f.node
            block(w)
            w('struct %s *k = arena_alloc(a, sizeof *k);' % n.cname)
            if f.optional:
                w('bool any = false;')
            for j, m in enumerate(n.fields):
                col = 'c + %d' % (i + j)
                if f.optional:
                    w('any |= !db_column_is_null(st, %s);' % col)
                _read_scalar(w, m.node, 'k->' + m.cname, col, m.required, m.optional, False, 'k',
                             'k->has_' + m.cname, where(i + j))
            if f.optional:
                w.open('if (any)')
                w('%s = k;' % dst)
                w('o->has_%s = true;' % f.cname)
                w.close()
            else:
                w('%s = k;' % dst)
            w.close()
        elif it.how == 'union':
            n = f.node
            block(w)
            w('const char *d = db_column_text(st, c + %d);' % i)
            w('struct %s *u = arena_alloc(a, sizeof *u);' % n.cname)
            first = True
            if f.optional:
                w.open('if (!d)')
                w('u = NULL;')
                first = False
            for v in n.variants:
                cond = 'if (strcmp(d, %s) == 0)' % lit(v.key)
                if first:
                    if not f.optional:
                        w('if (!d)')
                        w('    return resource_unknown(%s, st, c + %d);' % (lit(where(i)), i))
                    w.open(cond)
                    first = False
                else:
                    w.mid('else ' + cond)
                w('u->kind = %s;' % v.const)
                w('u->%s = arena_alloc(a, sizeof *u->%s);' % (v.cname, v.cname))
                j = 1
                for m in v.node.fields:
                    dv = 'u->%s->%s' % (v.cname, m.cname)
                    if m.json_name == n.disc_prop:
                        w('%s = %s;' % (dv, lit(v.key) if m.kind == 'string' else
                                        '%s_parse(%s)' % (m.node.cname, lit(v.key))))
                        continue
                    _read_scalar(w, m.node, dv, 'c + %d' % (i + j), m.required, m.optional,
                                 False, '', 'u->%s->has_%s' % (v.cname, m.cname), where(i + j))
                    j += 1
            w.mid('else')
            w('return resource_unknown(%s, st, c + %d);' % (lit(where(i)), i))
            w.close()
            w('%s = u;' % dst)
            if f.optional:
                w('o->has_%s = u != NULL;' % f.cname)
            w.close()
        i += len(it.cols)
    w('return 0;')
    return w.lines


def bind_body(t):
    w = W()
    w('int p = first;')
    w('(void)a;')
    i = 0
    for it in t.items:
        f = it.field
        src = 'o->' + f.cname
        present = _present(f, 'o') if f.optional and not it.always else None
        if it.how == 'json' and f.optional and f.is_pointer:
            present = '(o->has_%s || o->%s != NULL)' % (f.cname, f.cname)
        if it.how == 'scalar':
            if f.nullable and f.required:
                present = '!o->%s_is_null' % f.cname
            _bind_scalar(w, f.node, src, 'p + %d' % i, present)
        elif it.how == 'json':
            block(w)
            w('struct jsonw jw, *w = &jw;')
            w('jsonw_init(w);')
            cgen.encode_value(w, f.node, 'field', src)
            w('char *text = resource_json_text(a, w);')
            w('if (!text)')
            w('    return -1;')
            if present:
                w('db_bind_text(st, p + %d, %s ? text : NULL);' % (i, present))
            else:
                w('db_bind_text(st, p + %d, text);' % i)
            w.close()
        elif it.how == 'words':
            # an item with a space would read back as two: refused (the pattern keeps a
            # request from carrying one; this keeps a handler from storing one)
            if present is not None:
                w.open('if (%s)' % present)
            else:
                block(w)
            w('const char *text =')
            w('    resource_words_join(a, %s, %s, %s_count);'
              % (lit('%s.%s' % (t.name, t.cols[i].name)), src, src))
            w('if (!text)')
            w('    return -1;')
            w('db_bind_text(st, p + %d, text);' % i)
            if present is not None:
                w.mid('else')
                w('db_bind_null(st, p + %d);' % i)
            w.close()
        elif it.how == 'flatten':
            block(w)
            w('const struct %s *k = %s%s;' % (f.node.cname, src,
                                              '' if present is None else
                                              ' && %s ? %s : NULL' % (present, src)))
            for j, m in enumerate(f.node.fields):
                mp = _present(m, 'k') if m.optional else None
                mp = 'k' if mp is None else '(k && %s)' % mp
                _bind_scalar(w, m.node, 'k->' + m.cname, 'p + %d' % (i + j), mp)
            w.close()
        elif it.how == 'union':
            n = f.node
            block(w)
            w('const struct %s *u = %s%s;' % (n.cname, src,
                                              '' if present is None else
                                              ' && %s ? %s : NULL' % (present, src)))
            w('const char *d = NULL;')
            names = [m for m in n.variants[0].node.fields if m.json_name != n.disc_prop]
            for m in names:
                w('%s%s = %s;' % (cgen.ctype(m.node, 'field'), 'v_' + m.cname,
                                  'NULL' if m.node.kind == 'string' else '0'))
                if m.optional:
                    w('bool has_v_%s = false;' % m.cname)
            w.switch('switch (u ? u->kind : (enum %s_kind)0)' % n.cname)
            for v in n.variants:
                w('case %s:' % v.const)
                w.ind += 1
                w.open('if (u->%s)' % v.cname)
                w('d = %s;' % lit(v.key))
                for m in v.node.fields:
                    if m.json_name == n.disc_prop:
                        continue
                    w('v_%s = u->%s->%s;' % (m.cname, v.cname, m.cname))
                    if m.optional:
                        w('has_v_%s = %s;' % (m.cname, _present(m, 'u->' + v.cname) or
                                              'u->%s->%s != NULL' % (v.cname, m.cname)))
                w.close()
                w('break;')
                w.ind -= 1
            w('default:')
            w('    break;')
            w.end_switch()
            w('db_bind_text(st, p + %d, d);' % i)
            for j, m in enumerate(names):
                _bind_scalar(w, m.node, 'v_' + m.cname, 'p + %d' % (i + 1 + j),
                             'd' if m.required else '(d && has_v_%s)' % m.cname)
            w.close()
        i += len(it.cols)
    w('return 0;')
    return w.lines


def merge_body(rows, u, r):
    """RFC 7396 for the struct shapes: absent keeps, null removes (optional), a value replaces;
    a nested update object (x-merge-into its target) merges member by member."""
    w = W()
    w('(void)a;')
    tf = {f.json_name: f for f in r.fields}
    for f in u.fields:
        g = tf[f.json_name]
        src, dst = 'u->' + f.cname, 'o->' + g.cname
        if f.optional:
            w.open('if (u->has_%s)' % f.cname)
        if f.nullable:
            w.open('if (u->%s_is_null)' % f.cname)
            if g.nullable:
                w('%s_is_null = true;' % dst)
            if g.is_pointer:
                w('%s = NULL;' % dst)
            if g.kind in ('array', 'map'):
                w('%s_count = 0;' % dst)
            w('o->has_%s = false;' % g.cname)
            w.mid('else')
        nested = f.node.kind == 'object' and g.node.kind == 'object' and \
            f.node is not g.node
        if nested:
            w.open('if (!%s)' % dst)
            w('%s = arena_alloc(a, sizeof *%s);' % (dst, dst))
            w.close()
            w('merge_%s_into_%s(a, %s, %s);' % (f.node.cname, g.node.cname, src, dst))
        else:
            w('%s = %s;' % (dst, src))
            if f.kind in ('array', 'map'):
                w('%s_count = %s_count;' % (dst, src))
        if g.nullable:
            w('%s_is_null = false;' % dst)
        if g.optional:
            w('o->has_%s = true;' % g.cname)
        if f.nullable:
            w.close()
        if f.optional:
            w.close()
    return w.lines


def c_wrap(text, indent, width=96):
    """text as adjacent C string literals, broken after a space so that no line (after indent
    spaces) passes width."""
    parts, cur = [], ''
    for word in re.split(r'(?<= )', text):
        if cur and indent + len(lit(cur + word)) > width:
            parts.append(cur)
            cur = ''
        cur += word
    parts.append(cur)
    return ('\n' + ' ' * indent).join(lit(x) for x in parts)


def singleton_sql(t, names):
    """A singleton's texts: select by the workspace (?1); the upsert of every column (?1..?n)
    and the workspace (?n+1), `WHERE version = ?(n+2)` when versioned."""
    cols, ws = ', '.join(names), t.x['workspace']
    sel = 'SELECT %s FROM %s WHERE %s = ?1' % (cols, t.name, ws)
    ups = 'INSERT INTO %s (%s, %s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s' % (
        t.name, cols, ws, ', '.join('?%d' % (i + 1) for i in range(len(names) + 1)), ws,
        ', '.join('%s = ?%d' % (n, i + 1) for i, n in enumerate(names)))
    if t.x.get('version'):
        ups += ' WHERE %s.%s = ?%d' % (t.name, t.x['version'], len(names) + 2)
    t.state_sql = None
    return cols, sel, None, ups


def sql_texts(t):
    names = [c.name for c in t.cols] + [c.name for c in t.hidden]
    if t.singleton:
        return singleton_sql(t, names)
    cols = ', '.join(names)
    ws = t.x['workspace']
    ins = 'INSERT INTO %s (%s) VALUES (%s)' % (t.name, cols, ', '.join('?' * len(names)))
    key = t.id_col
    sel = 'SELECT %s FROM %s WHERE %s = ?1 AND %s = ?2' % (cols, t.name, key, ws)
    sets = ', '.join('%s = ?%d' % (n, i + 1) for i, n in enumerate(names)
                     if n not in (key, ws))
    where = '%s = ?%d' % (key, names.index(key) + 1)
    if ws != key:   # `workspace: id`: the row is the tenant itself (workspaces)
        where += ' AND %s = ?%d' % (ws, names.index(ws) + 1)
    if t.x.get('version'):
        where += ' AND %s = ?%d' % (t.x['version'], len(names) + 1)
    if t.x.get('owner'):   # the caller's user, after the columns and the old version
        where += ' AND %s = ?%d' % (t.x['owner'], len(names) + (2 if t.x.get('version') else 1))
        sel += ' AND %s = ?3' % t.x['owner']
    upd = 'UPDATE %s SET %s WHERE %s' % (t.name, sets, where)
    t.state_sql = None
    if t.state:
        stamps = [t.x['version']] + (['updated_at'] if t.updated_at else [])
        t.state_sql = 'UPDATE %s SET %s WHERE %s' % (
            t.name, ', '.join('%s = ?%d' % (n, names.index(n) + 1)
                              for n in t.state + [c for c in stamps if c not in t.state]), where)
    return cols, sel, ins, upd


def hidden_read(t):
    """The hidden columns into the row struct w, from column c + <property columns>."""
    w = W()
    for j, c in enumerate(t.hidden):
        col = 'c + %d' % (len(t.cols) + j)
        if c.node == 'string':
            w('w->%s = db_column_dup(a, st, %s);' % (c.name, col))
        elif c.not_null:
            w('w->%s = db_column_int64(st, %s);' % (c.name, col))
        else:
            w('w->has_%s = !db_column_is_null(st, %s);' % (c.name, col))
            w('w->%s = db_column_int64(st, %s);' % (c.name, col))
    return w.lines


def hidden_bind(t):
    w = W()
    for j, c in enumerate(t.hidden):
        p = 'first + %d' % (len(t.cols) + j)
        if c.node == 'string':
            w('db_bind_text(st, %s, w->%s);' % (p, c.name))
        elif c.not_null:
            w('db_bind_int64(st, %s, w->%s);' % (p, c.name))
        else:
            w('if (w->has_%s)' % c.name)
            w('    db_bind_int64(st, %s, w->%s);' % (p, c.name))
            w('else')
            w('    db_bind_null(st, %s);' % p)
    return w.lines


def object_name(t):
    """How a 404 names it: x-table title (where the name has capitals: "OAuth client"), else
    the `object` constant in words (service_account: "service account"), else the schema's
    name in words."""
    if 'title' in t.x:
        return lit(t.x['title'])
    for it in t.items:
        if it.how == 'const' and it.field.json_name == 'object' and it.const.startswith('"'):
            return it.const.replace('_', ' ')
    words = re.findall(r'[A-Z][a-z0-9]*|[a-z0-9]+', t.node.component)
    return lit(' '.join(x.lower() for x in words))


def groups(model, rows):
    """[(group, tables, merges)] for every schema group holding a mapping, in group order;
    tables carry what the templates print, merges are (update, resource, body lines)."""
    out = []
    for g, _, _ in model.groups:
        ts = [t for t in rows.tables if t.node.group == g]
        for t in ts:
            t.columns_text, sel, ins, t.update_sql = sql_texts(t)
            t.select_tail = sel[len('SELECT ') + len(t.columns_text):]
            t.insert_head = 'INSERT INTO %s (' % t.name
            t.insert_tail = ins[len(t.insert_head) + len(t.columns_text):] if ins else None
            t.object = object_name(t)
            t.read = read_body(t)
            t.bind = bind_body(t)
            t.hidden_read = hidden_read(t)
            t.hidden_bind = hidden_bind(t)
            # the struct the descriptor loads and saves: the schema's, or <name>_row around it
            t.row = t.node.cname + ('_row' if t.hidden else '')
            t.obj = 'obj.' if t.hidden else ''
            if not t.singleton:
                names = [c.name for c in t.cols] + [c.name for c in t.hidden]
                t.workspace_index = names.index(t.x['workspace'])
                t.workspace_member = t.obj + t.workspace_field.cname if t.workspace_field \
                    else t.x['workspace']   # a hidden column: a member of <name>_row
        ms = [(u, r, merge_body(rows, u, r)) for u, r, _ in rows.merges if u.group == g]
        if ts or ms:
            out.append((g, ts, ms))
    return out


def build(model, sql_dir):
    return Rows(model, sql_dir)
