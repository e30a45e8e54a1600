"""The C that codegen/rows.py's checked mappings become: each table's row reader and binder,
its hidden columns, its SQL texts (select, insert, update, state, singleton upsert), the PATCH
merges (RFC 7396) and the 404 name, as generated/rows_<api>.c prints them."""
import re

import cgen
from cgen import W
from spec import c_string as lit


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
    kept = getattr(t, 'maintained', [])   # the handler's own statements move them
    sets = ', '.join('%s = ?%d' % (n, i + 1) for i, n in enumerate(names)
                     if n not in (key, ws) and n not in kept)
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
