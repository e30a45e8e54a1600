"""Storage mappings from the spec: `x-table` on a component schema (the resource's row <-> struct
codec and its table descriptor for runtime/resource.h) and `x-merge-into` on an update schema
(the PATCH merge, RFC 7396). Checked against the schema and against the table as the
migrations create it (`<sql>/<api>/*.sql`, both dialects: ddl.py); emitted as
generated/rows_<api>.h/.c (the C: rows_c.py).

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
import re

from ddl import load_tables
from rows_c import (bind_body, hidden_bind, hidden_read, merge_body, object_name, read_body,
                    sql_texts)
from spec import SpecError, c_string as lit, rel

XTABLE_KEYS = {'name', 'id-prefix', 'workspace', 'version', 'sort', 'columns', 'internal',
               'hidden', 'state', 'title', 'key', 'row-required', 'singleton', 'owner',
               'cache', 'maintained', 'order'}
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
        if 'order' in x and (x['order'] not in ('asc', 'desc') or singleton is True):
            self.fail(loc / 'order', 'order is asc or desc (a list\'s direction by (sort, id); '
                                     'desc when absent)')
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
        self.maintained(t, x, loc)
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

    def maintained(self, t, x, loc):
        """maintained: [column]: mapped or hidden columns that only the handler's own statements
        change (a ledger account's balances, moved by postings): read with the row and
        written by the insert, but left out of update_sql and state_sql, so a save of a row
        read before a posting never writes its stale figures back."""
        t.maintained = x.get('maintained', [])
        if 'maintained' not in x:
            return
        every = [c.name for c in t.cols] + [c.name for c in t.hidden]
        stamps = {t.id_col, x['workspace'], x.get('version'), 'updated_at'}
        if not isinstance(t.maintained, list) or t.singleton or \
                any(c not in every or c in stamps for c in t.maintained) or \
                any(c in (t.state or []) for c in t.maintained):
            self.fail(loc / 'maintained', 'maintained lists mapped or hidden columns (not id, the '
                                          'workspace, the version, updated_at or a state column) '
                                          'of a table that is not a singleton')
            t.maintained = []

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
