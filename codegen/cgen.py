"""C statements for the model built by spec.py: validator, decoder and encoder bodies, struct
member declarations and dispatcher bodies, as lists of lines. The templates print them inside
the file skeletons; every decision about what the code does is made in spec.py."""
from spec import c_string as lit
from spec import ctype, comment_text


class W:
    """Indented line writer."""

    def __init__(self, ind=1):
        self.lines = []
        self.ind = ind

    def __call__(self, s=''):
        if s.startswith('#'):
            self.lines.append(s)
        else:
            self.lines.append(('    ' * self.ind + s) if s else '')

    def open(self, head):
        self(head + ' {')
        self.ind += 1

    def close(self, tail=''):
        self.ind -= 1
        self('}' + tail)

    def switch(self, expr):
        self(expr + ' {')

    def end_switch(self):
        self('}')

    def mid(self, s):
        self.ind -= 1
        self('} ' + s + ' {')
        self.ind += 1


def add_err(w, l, base, token, code, detail, token_expr=None):
    """verr_add() call; detail is a fixed text, passed through "%s". token is a JSON name
    (printed as a literal); token_expr a C expression."""
    tok = token_expr or (lit(token) if token is not None else 'NULL')
    w('verr_add(%s, %s, %s, %s, "%%s", %s);' % (l, base, tok, lit(code), lit(detail)))


# ---- struct members ------------------------------------------------------------------------

def member_decls(f):
    """Declarations of one Field inside a struct: value, count, is_null, has_."""
    n = f.node
    c = ' /* %s */' % f.comment if f.comment else ''
    out = []
    if n.kind == 'array':
        out.append('%s*%s;%s' % (ctype(n.items, 'elem'), f.cname, c))
        out.append('size_t %s_count;' % f.cname)
    elif n.kind == 'map':
        out.append('struct %s_entry *%s;%s' % (n.cname, f.cname, c))
        out.append('size_t %s_count;' % f.cname)
    else:
        out.append('%s%s;%s' % (ctype(n, 'field'), f.cname, c))
    if f.nullable:
        out.append('bool %s_is_null;' % f.cname)
    if f.optional:
        out.append('bool has_%s;' % f.cname)
    return out


def struct_decls(node):
    if node.kind == 'oneof':
        out = ['enum %s_kind kind; /* which member below is set */' % node.cname]
        for v in node.variants:
            out.append('struct %s *%s; /* %s: %s = "%s" */'
                       % (v.node.cname, v.cname, v.const, node.disc_prop, v.key))
        return out
    out = []
    for f in node.fields:
        out.extend(member_decls(f))
    if node.addl is not None and node.addl is not False:
        out.append('struct %s_entry *additional; /* properties not listed above */'
                   % node.cname)
        out.append('size_t additional_count;')
    if getattr(node, 'cached', False):
        out.append('const char *json_text; /* x-table cache: its JSON (runtime/rep_cache.h) */')
        out.append('size_t json_len;')
    return out


def array_struct_decls(node):
    """struct <name> members of an array stored by value (an array item or a map value)."""
    return ['%s*items;' % ctype(node.items, 'elem'), 'size_t count;']


def loop_var(expr):
    """A loop variable not used by the loops around expr: j, j1, j2 ..."""
    depth = expr.count('[j')
    return 'j' if depth == 0 else 'j%d' % depth


def entry_decls(node):
    """struct <name>_entry members for a map node or an object with additionalProperties."""
    value = node.value if node.kind == 'map' else node.addl
    return ['const char *key;', '%svalue;' % ctype(value, 'entry')]


# ---- validators ----------------------------------------------------------------------------

def validate_call(node, v, ptr, l='l', mode='mode'):
    return 'validate_%s(%s, %s, %s, %s);' % (node.cname, v, ptr, mode, l)


def validate_body(n):
    w = W()
    uses_mode = n.kind in ('object', 'array', 'map', 'oneof')
    if not uses_mode:
        w('(void)mode;')
    if n.nullable:
        w('if (v->type == JSON_NULL)')
        w('    return;')
    if n.json_type_test:
        w.open('if (!%s)' % n.json_type_test)
        add_err(w, 'l', 'ptr', None, 'type', n.type_detail)
        w('return;')
        w.close()
    getattr(globals()['_V'], n.kind)(w, n)
    return w.lines


class _V:
    @staticmethod
    def _string_checks(w, n):
        for c in n.checks:
            op = c['op']
            if op == 'length':
                w('size_t len = json_utf8_codepoints(v->s, v->len);')
                if c['min'] is not None:
                    w('if (len < %d)' % c['min'])
                    w.ind += 1
                    add_err(w, 'l', 'ptr', None, 'min_length',
                            'must be at least %d character%s long' % (c['min'], '' if c['min'] == 1 else 's'))
                    w.ind -= 1
                if c['max'] is not None:
                    w('if (len > %d)' % c['max'])
                    w.ind += 1
                    add_err(w, 'l', 'ptr', None, 'max_length',
                            'must be at most %d character%s long' % (c['max'], '' if c['max'] == 1 else 's'))
                    w.ind -= 1
            elif op == 'pattern':
                w('if (!pattern_match(%d, v->s)) /* %s */' % (c['index'],
                                                               comment_text(c['source'])))
                w.ind += 1
                add_err(w, 'l', 'ptr', None, 'pattern', c['detail'])
                w.ind -= 1
            elif op == 'format':
                w('if (!%s(v->s))' % c['func'])
                w.ind += 1
                add_err(w, 'l', 'ptr', None, 'format', c['detail'])
                w.ind -= 1
            elif op == 'decimal':
                w('struct decimal dec;')
                w.open('if (decimal_parse(v->s, %d, %d, %s, &dec) != 0)'
                       % (c['precision'], c['scale'], 'true' if c['negative'] else 'false'))
                add_err(w, 'l', 'ptr', None, 'format', c['detail'])
                if c['bounds']:
                    w.mid('else')
                for b in c['bounds']:
                    w('if (decimal_cmp(dec, (struct decimal){ %s, %d }) %s 0)'
                      % (b['units'], b['scale'], b['cmp']))
                    w.ind += 1
                    add_err(w, 'l', 'ptr', None, b['code'], b['detail'])
                    w.ind -= 1
                w.close()
            elif op == 'const_string':
                w('if (strcmp(v->s, %s) != 0)' % lit(c['value']))
                w.ind += 1
                add_err(w, 'l', 'ptr', None, 'const', c['detail'])
                w.ind -= 1
            elif op == 'enum_string':
                w('if (%s_parse(v->s) == 0)' % n.cname)
                w.ind += 1
                add_err(w, 'l', 'ptr', None, 'enum', c['detail'])
                w.ind -= 1
            else:
                raise AssertionError(op)

    string = _string_checks
    enum = _string_checks

    @staticmethod
    def integer(w, n):
        lo = [c for c in n.checks if c['op'] == 'int_min' and c['code'] == 'minimum']
        hi = [c for c in n.checks if c['op'] == 'int_max' and c['code'] == 'maximum']
        w('int64_t n = 0;')
        w('switch (json_number_to_int64(v, &n)) {')
        w('case JSON_INT_OK:')
        w('    break;')
        w('case JSON_INT_NOT_INTEGER:')
        w.ind += 1
        add_err(w, 'l', 'ptr', None, 'type', 'must be an integer')
        w('return;')
        w.ind -= 1
        w('default:')
        w.ind += 1
        w('if (v->s[0] == \'-\')')
        w.ind += 1
        add_err(w, 'l', 'ptr', None, 'minimum',
                lo[0]['detail'] if lo else 'is below the 64-bit integer range')
        w.ind -= 1
        w('else')
        w.ind += 1
        add_err(w, 'l', 'ptr', None, 'maximum',
                hi[0]['detail'] if hi else 'is above the 64-bit integer range')
        w.ind -= 1
        w('return;')
        w.ind -= 1
        w('}')
        for c in n.checks:
            op = c['op']
            if op == 'int_min':
                w('if (n %s %s)' % ('<=' if c['excl'] else '<', c['value']))
            elif op == 'int_max':
                w('if (n %s %s)' % ('>=' if c['excl'] else '>', c['value']))
            elif op == 'multiple_of':
                w('if (n %% %s != 0)' % c['value'])
            elif op == 'enum_int':
                w('if (%s)' % ' && '.join('n != %s' % x for x in c['values']))
            else:
                raise AssertionError(op)
            code = c.get('code') or {'multiple_of': 'multiple_of', 'enum_int': 'enum'}[op]
            w.ind += 1
            add_err(w, 'l', 'ptr', None, code, c['detail'])
            w.ind -= 1

    @staticmethod
    def number(w, n):
        w('double d = json_number_to_double(v);')
        w.open('if (d != d || d > DBL_MAX || d < -DBL_MAX)')
        add_err(w, 'l', 'ptr', None, 'type', 'must be a finite number')
        w('return;')
        w.close()
        for c in n.checks:
            if c['op'] == 'num_min':
                w('if (d %s %s)' % ('<=' if c['excl'] else '<', c['value']))
            else:
                w('if (d %s %s)' % ('>=' if c['excl'] else '>', c['value']))
            w.ind += 1
            add_err(w, 'l', 'ptr', None, c['code'], c['detail'])
            w.ind -= 1

    @staticmethod
    def boolean(w, n):
        for c in n.checks:
            w('if (v->type != %s)' % ('JSON_TRUE' if c['value'] else 'JSON_FALSE'))
            w.ind += 1
            add_err(w, 'l', 'ptr', None, 'const', c['detail'])
            w.ind -= 1

    @staticmethod
    def _count_checks(w, n):
        for c in n.checks:
            op = c['op']
            if op in ('min_items', 'min_props'):
                w('if (v->count < %d)' % c['value'])
            elif op in ('max_items', 'max_props'):
                w('if (v->count > %d)' % c['value'])
            elif op == 'unique_items':
                w('if (!schemas_items_unique(v))')
            else:
                raise AssertionError(op)
            code = {'min_items': 'min_items', 'max_items': 'max_items',
                    'min_props': 'min_properties', 'max_props': 'max_properties',
                    'unique_items': 'unique_items'}[op]
            w.ind += 1
            add_err(w, 'l', 'ptr', None, code, c['detail'])
            w.ind -= 1

    @staticmethod
    def array(w, n):
        _V._count_checks(w, n)
        if not n.items.trivial:
            w('for (size_t i = 0; i < v->count; i++)')
            w('    ' + validate_call(n.items, 'v->items[i]', 'verr_index(l->arena, ptr, i)'))
        else:
            w('(void)mode;')

    @staticmethod
    def map(w, n):
        _V._count_checks(w, n)
        if not n.value.trivial:
            w('for (size_t i = 0; i < v->count; i++)')
            w('    ' + validate_call(n.value, 'v->members[i].value',
                                     'verr_child(l->arena, ptr, v->members[i].key)'))
        else:
            w('(void)mode;')

    @staticmethod
    def any(w, n):
        _V._count_checks(w, n)
        if n.addl is False:
            w('for (size_t i = 0; i < v->count; i++)')
            w.ind += 1
            add_err(w, 'l', 'ptr', None, 'additional_property',
                    'is not a property of this object', token_expr='v->members[i].key')
            w.ind -= 1

    @staticmethod
    def object(w, n):
        req = [f for f in n.fields if f.required]
        idx = {f.json_name: i for i, f in enumerate(req)}
        if req:
            w('bool seen[%d] = { false };' % len(req))
        _V._count_checks(w, n)
        w.open('for (size_t i = 0; i < v->count; i++)')
        w('const struct json_member *m = &v->members[i];')
        first = True
        for f in n.fields:
            cond = 'strcmp(m->key, %s) == 0' % lit(f.json_name)
            if first:
                w.open('if (%s)' % cond)
                first = False
            else:
                w.mid('else if (%s)' % cond)
            if f.json_name in idx:
                w('seen[%d] = true;' % idx[f.json_name])
            if f.read_only or f.write_only:
                mode = 'VALIDATE_REQUEST' if f.read_only else 'VALIDATE_RESPONSE'
                code = 'read_only' if f.read_only else 'write_only'
                detail = 'is read-only' if f.read_only else 'is write-only and never returned'
                w.open('if (mode == %s)' % mode)
                add_err(w, 'l', 'ptr', None, code, detail, token_expr='m->key')
                w('continue;')
                w.close()
            if not f.node.trivial:
                w(validate_call(f.node, 'm->value', 'verr_child(l->arena, ptr, m->key)'))
        if n.addl is False:
            w.mid('else')
            add_err(w, 'l', 'ptr', None, 'additional_property',
                    'is not a property of this object', token_expr='m->key')
        elif n.addl is not None and not n.addl.trivial:
            w.mid('else')
            w(validate_call(n.addl, 'm->value', 'verr_child(l->arena, ptr, m->key)'))
        w.close()
        w.close()
        for f in req:
            cond = '!seen[%d]' % idx[f.json_name]
            if f.read_only:
                cond += ' && mode == VALIDATE_RESPONSE'
            elif f.write_only:
                cond += ' && mode == VALIDATE_REQUEST'
            w('if (%s)' % cond)
            w.ind += 1
            add_err(w, 'l', 'ptr', f.json_name, 'required', 'is required')
            w.ind -= 1

    @staticmethod
    def oneof(w, n):
        w('const struct json_value *d = json_get(v, %s);' % lit(n.disc_prop))
        w.open('if (!d)')
        add_err(w, 'l', 'ptr', n.disc_prop, 'required', 'is required')
        w('return;')
        w.close()
        first = True
        for v in n.variants:
            cond = 'd->type == JSON_STRING && strcmp(d->s, %s) == 0' % lit(v.key)
            w(('if (%s)' if first else 'else if (%s)') % cond)
            w('    ' + validate_call(v.node, 'v', 'ptr'))
            first = False
        w('else')
        w.ind += 1
        add_err(w, 'l', 'ptr', n.disc_prop, 'one_of',
                'must be one of: ' + ', '.join(v.key for v in n.variants))
        w.ind -= 1


# ---- decoders ------------------------------------------------------------------------------

def member(ptr, name):
    """ptr->name, written pv.name when ptr is (&pv)."""
    if ptr.startswith('(&') and ptr.endswith(')'):
        return '%s.%s' % (ptr[2:-1], name)
    return '%s->%s' % (ptr, name)


def decode_value(w, n, role, dst, src):
    """dst = the value of the JSON value *src (src is a pointer expression)."""
    k = n.kind
    if src.startswith('&'):
        src = '(' + src + ')'
    if k == 'string':
        w('%s = %s;' % (dst, member(src, 's')))
    elif k == 'integer':
        w('(void)json_number_to_int64(%s, &%s);' % (src[1:-1] if src.startswith('(&') and
                                                     src.endswith(')') else src, dst))
    elif k == 'number':
        w('%s = json_number_to_double(%s);' % (dst, src))
    elif k == 'boolean':
        w('%s = %s == JSON_TRUE;' % (dst, member(src, 'type')))
    elif k == 'enum':
        w('%s = %s_parse(%s);' % (dst, n.cname, member(src, 's')))
    elif k == 'any':
        w('%s = %s;' % (dst, src))
    elif k in ('object', 'oneof'):
        if role == 'elem':
            w('if (decode_%s(a, %s, &%s) != 0)' % (n.cname, src, dst))
            w('    return -1;')
        else:
            w('%s = arena_alloc(a, sizeof *%s);' % (dst, dst))
            w('if (decode_%s(a, %s, %s) != 0)' % (n.cname, src, dst))
            w('    return -1;')
    elif k == 'array':
        j = loop_var(dst)
        w('if (%s->type != JSON_ARRAY)' % src)
        w('    return -1;')
        if role in ('elem', 'entry'):
            count, dst = dst + '.count', dst + '.items'
        else:
            count = dst + '_count'
        w('%s = %s->count;' % (count, src))
        w('%s = arena_alloc(a, (%s->count + 1) * sizeof *%s);' % (dst, src, dst))
        w.open('for (size_t %s = 0; %s < %s->count; %s++)' % (j, j, src, j))
        decode_value(w, n.items, 'elem', '%s[%s]' % (dst, j), '%s->items[%s]' % (src, j))
        w.close()
    elif k == 'map':
        w('if (%s->type != JSON_OBJECT)' % src)
        w('    return -1;')
        w('%s_count = %s->count;' % (dst, src))
        w('%s = arena_alloc(a, (%s->count + 1) * sizeof *%s);' % (dst, src, dst))
        w.open('for (size_t j = 0; j < %s->count; j++)' % src)
        w('%s[j].key = %s->members[j].key;' % (dst, src))
        decode_value(w, n.value, 'entry', '%s[j].value' % dst, '%s->members[j].value' % src)
        w.close()
    else:
        raise AssertionError(k)


def decode_field(w, f, out, src):
    if f.optional:
        w('%shas_%s = true;' % (out, f.cname))
    if f.nullable:
        w('if (%s->type == JSON_NULL)' % src)
        w('    %s%s_is_null = true;' % (out, f.cname))
        w.open('else')
        decode_value(w, f.node, 'field', out + f.cname, src)
        w.close()
    else:
        decode_value(w, f.node, 'field', out + f.cname, src)


def apply_defaults(w, fields, out):
    for f in fields:
        if f.default is not None and f.optional:
            w.open('if (!%shas_%s)' % (out, f.cname))
            w('%s%s = %s;' % (out, f.cname, f.default))
            w('%shas_%s = true;' % (out, f.cname))
            w.close()


def decode_body(n):
    w = W()
    if n.kind == 'oneof':
        w('const struct json_value *d = json_get(v, %s);' % lit(n.disc_prop))
        w('if (!d || d->type != JSON_STRING)')
        w('    return -1;')
        for v in n.variants:
            w.open('if (strcmp(d->s, %s) == 0)' % lit(v.key))
            w('out->kind = %s;' % v.const)
            w('out->%s = arena_alloc(a, sizeof *out->%s);' % (v.cname, v.cname))
            w('return decode_%s(a, v, out->%s);' % (v.node.cname, v.cname))
            w.close()
        w('return -1;')
        return w.lines
    addl = n.addl if n.addl is not None and n.addl is not False else None
    w('(void)a;')
    w('if (v->type != JSON_OBJECT)')
    w('    return -1;')
    if addl:
        w('out->additional = arena_alloc(a, (v->count + 1) * sizeof *out->additional);')
    w.open('for (size_t i = 0; i < v->count; i++)')
    w('const struct json_member *m = &v->members[i];')
    first = True
    for f in n.fields:
        cond = 'strcmp(m->key, %s) == 0' % lit(f.json_name)
        if first:
            w.open('if (%s)' % cond)
            first = False
        else:
            w.mid('else if (%s)' % cond)
        decode_field(w, f, 'out->', 'm->value')
    if addl:
        w.mid('else')
        w('out->additional[out->additional_count].key = m->key;')
        decode_value(w, addl, 'entry', 'out->additional[out->additional_count].value',
                     'm->value')
        w('out->additional_count++;')
    w.close()
    w.close()
    apply_defaults(w, n.fields, 'out->')
    w('return 0;')
    return w.lines


# ---- encoders ------------------------------------------------------------------------------

def encode_value(w, n, role, src):
    k = n.kind
    if k == 'string':
        w('jsonw_string(w, %s);' % src)
    elif k == 'integer':
        w('jsonw_int(w, %s);' % src)
    elif k == 'number':
        w('jsonw_double(w, %s);' % src)
    elif k == 'boolean':
        w('jsonw_bool(w, %s);' % src)
    elif k == 'enum':
        w('%s_json(w, %s);' % (n.cname, src))
    elif k == 'any':
        w('if (%s)' % src)
        w('    jsonw_value(w, %s);' % src)
        w('else')
        w('    jsonw_null(w);')
    elif k in ('object', 'oneof'):
        if role == 'elem':
            w('encode_%s(w, &%s);' % (n.cname, src))
        else:
            w('if (%s)' % src)
            w('    encode_%s(w, %s);' % (n.cname, src))
            w('else')
            w('    jsonw_null(w);')
    elif k == 'array':
        j = loop_var(src)
        if role in ('elem', 'entry'):
            count, src = src + '.count', src + '.items'
        else:
            count = src + '_count'
        w('jsonw_array_begin(w);')
        w.open('for (size_t %s = 0; %s < %s; %s++)' % (j, j, count, j))
        encode_value(w, n.items, 'elem', '%s[%s]' % (src, j))
        w.close()
        w('jsonw_array_end(w);')
    elif k == 'map':
        w('jsonw_object_begin(w);')
        w.open('for (size_t j = 0; j < %s_count; j++)' % src)
        w('jsonw_key(w, %s[j].key);' % src)
        encode_value(w, n.value, 'entry', '%s[j].value' % src)
        w.close()
        w('jsonw_object_end(w);')
    else:
        raise AssertionError(k)


def encode_field(w, f, src):
    if f.nullable:
        w('if (%s_is_null)' % src)
        w('    jsonw_null(w);')
        w.open('else')
        encode_value(w, f.node, 'field', src)
        w.close()
    else:
        encode_value(w, f.node, 'field', src)


def raw_key(name):
    """A member's key as JSON text (quoted, with its colon) when that is the name's bytes
    between quotes, which is the case for the spec's plain names; None for any other."""
    if all(0x20 <= ord(c) < 0x7f and c not in '"\\' for c in name):
        return '"%s":' % name
    return None


def key_call(name):
    """The call writing a member's key: jsonw_raw_key with its JSON text (raw_key), else
    jsonw_key (escaping at run time)."""
    raw = raw_key(name)
    if raw:
        return 'jsonw_raw_key(w, %s, %d);' % (lit(raw), len(raw))
    return 'jsonw_key(w, %s);' % lit(name)


def encode_body(n):
    w = W()
    if n.kind == 'oneof':
        w.switch('switch (in->kind)')
        for v in n.variants:
            w('case %s:' % v.const)
            w.ind += 1
            w.open('if (in->%s)' % v.cname)
            w('encode_%s(w, in->%s);' % (v.node.cname, v.cname))
            w('return;')
            w.close()
            w('break;')
            w.ind -= 1
        w('default:')
        w('    break;')
        w.end_switch()
        w('jsonw_null(w);')
        return w.lines
    if all(f.write_only for f in n.fields) and (n.addl is None or n.addl is False):
        w('(void)in; /* every property is writeOnly: never sent */')
    if getattr(n, 'cached', False):
        w.open('if (in->json_text)')
        w('jsonw_raw_value(w, in->json_text, in->json_len);')
        w('return;')
        w.close()
    w('jsonw_object_begin(w);')
    for f in n.fields:
        if f.write_only:
            continue
        src = 'in->' + f.cname
        if f.required:
            if raw_key(f.json_name) and f.node.kind == 'string' and not f.nullable:
                raw = raw_key(f.json_name)
                w('jsonw_raw_key_string(w, %s, %d, %s);' % (lit(raw), len(raw), src))
                continue
            w(key_call(f.json_name))
            encode_field(w, f, src)
            continue
        conds = ['in->has_%s' % f.cname]
        if f.nullable:
            conds.append('%s_is_null' % src)
        if f.is_pointer:
            conds.append('%s != NULL' % src)
        w.open('if (%s)' % ' || '.join(conds))
        w(key_call(f.json_name))
        encode_field(w, f, src)
        w.close()
    if n.addl is not None and n.addl is not False:
        w.open('for (size_t i = 0; i < in->additional_count; i++)')
        w('jsonw_key(w, in->additional[i].key);')
        encode_value(w, n.addl, 'entry', 'in->additional[i].value')
        w.close()
    w('jsonw_object_end(w);')
    return w.lines


# ---- operations ----------------------------------------------------------------------------

def request_decls(op):
    out = []
    for p in op.params:
        out.extend(member_decls(p))
    if op.negotiated:
        out.append('enum media accept; /* the representation the dispatcher chose from Accept: '
                   '%s */' % ', '.join(c for _, c in op.produces))
    if op.raw_body:
        out.append('const char *body; /* %s */' % op.body.comment)
        out.append('size_t body_len;')
        out.append('enum media body_media; /* its Content-Type: %s */'
                   % ', '.join(c for _, c, _ in op.raw_body))
    elif op.body:
        out.append('%sbody; /* %s */' % (ctype(op.body.node, 'field'), op.body.comment))
    if not out:
        out.append('int unused; /* this operation takes no parameters and no body */')
    return out


def response_decls(op):
    ok = [str(r.status) for r in op.responses if r.kind != 'problem']
    probs = [str(s) for s in op.problem_statuses]
    out = ['int status; /* %s; problems (%s) via req_problem() */'
           % (', '.join(ok), ', '.join(probs) or 'none')]
    for r in op.json_responses:
        out.append('%s%s; /* %s */' % (ctype(r.field.node, 'field'), r.field.cname,
                                         r.field.comment))
    for r in op.html_responses:
        out.append('const char *%s; /* %s */' % (r.field.cname, r.field.comment))
    for r in op.raw_responses:
        raw = [m for m, c, _ in r.media if c != 'MEDIA_JSON']
        out.append('const char *%s; /* status %d as %s (in->accept): the bytes, copied */'
                   % (r.raw_field, r.status, ' or '.join(raw)))
        out.append('size_t %s_len;' % r.raw_field)
    for h in op.headers:
        if h.kind == 'integer':
            out.append('int64_t %s; /* %s */' % (h.cname, h.comment))
            out.append('bool has_%s;' % h.cname)
        else:
            out.append('const char *%s; /* %s; NULL = not sent */' % (h.cname, h.comment))
    return out


def status_cond(var, statuses):
    return ' || '.join('%s == %d' % (var, s) for s in sorted(statuses))


def absent_body(w, op):
    """Opens `if (no body) {...} else {`: 422 when the body is required, else nothing to do;
    the caller writes what a present body gets and closes the block."""
    w.open('if (!r->body || r->body_len == 0)')
    if op.body_required:
        add_err(w, '&r->verr', '""', None, 'required', 'a request body is required')
        w('req_problem_validation(r, 422, "The request body is missing.");')
        w('return 0;')
    else:
        w('/* optional body absent: in.body stays NULL */')
    w.mid('else')


def raw_body(w, op):
    """A non-JSON body: Content-Type (415), UTF-8 and the media type's schema (422), then the
    bytes as they came."""
    names = [m for m, _, _ in op.raw_body]
    absent_body(w, op)
    w('in.body_media = media_request_type(req_header(r, "Content-Type"), %s, &why);'
      % op.raw_body_mask)
    w.open('if (in.body_media == MEDIA_NONE)')
    w('req_problem(r, 415, "unsupported_media_type", "Send the request body as Content-Type: '
      '%s (%%s).", why);' % ' or '.join(names))
    w('return 0;')
    w.close()
    w.open('if (!json_utf8_valid(r->body, r->body_len) || memchr(r->body, 0, r->body_len))')
    add_err(w, '&r->verr', '""', None, 'type', 'must be valid UTF-8 text without NUL bytes')
    w.mid('else')
    w('struct json_value sv = { .type = JSON_STRING, .s = r->body, .len = r->body_len };')
    w()
    if len(op.raw_body) == 1:
        w(validate_call(op.raw_body[0][2], '&sv', '""', l='&r->verr', mode='VALIDATE_REQUEST'))
    else:
        for i, (media, c, node) in enumerate(op.raw_body):
            head = 'if (in.body_media == %s)' % c
            if i == 0:
                w(head)
            elif i < len(op.raw_body) - 1:
                w('else ' + head)
            else:
                w('else')
            w('    ' + validate_call(node, '&sv', '""', l='&r->verr', mode='VALIDATE_REQUEST'))
    w.close()
    w.open('if (r->verr.count > 0)')
    w('req_problem_validation(r, 422, arena_printf(&r->arena, "The request body has %d '
      'violation%s.",')
    w('                                           r->verr.count, r->verr.count == 1 ? "" : '
      '"s"));')
    w('return 0;')
    w.close()
    w('in.body = r->body;')
    w('in.body_len = r->body_len;')
    w.close()


def raw_answer(w, op, r):
    """The chosen non-JSON representation of a negotiated status: the handler's bytes."""
    fld = 'out.' + r.raw_field
    w.open('if (!%s)' % fld)
    w('log_error("%%s answered %d as %%s without %s", %s, media_name(in.accept));'
      % (r.status, r.raw_field, lit(op.operation_id)))
    w('return -1;')
    w.close()
    w('if (req_set_body(r, %d, media_content_type(in.accept), %s, %s_len) != 0)'
      % (r.status, fld, fld))
    w('    return -1;')


def dispatch_body(op):
    w = W()
    if op.planned:
        w('req_problem(r, 501, "not_implemented", "%%s is planned and not built yet.", %s);'
          % lit('%s %s (%s)' % (op.method, op.full_path, op.operation_id)))
        w('return 0;')
        return w.lines
    h = op.handler
    w('struct %s_request in;' % h)
    w('struct %s_response out;' % h)
    if op.params:
        w('struct json_value pv;')
    if any(not p.collect for p in op.params):
        w('const char *text;')
    if op.negotiated:
        w('static const enum media offered[] = { %s };' % ', '.join(c for _, c in op.produces))
    if op.raw_body:
        w('const char *why = NULL;')
    elif op.body:
        w('struct json_value *doc = NULL;')
        w('struct json_error jerr;')
    w()
    w('memset(&in, 0, sizeof in);')
    w('memset(&out, 0, sizeof out);')
    if op.negotiated:
        n = len(op.produces)
        w('in.accept = media_negotiate(req_header(r, "Accept"), offered, %d);' % n)
        w.open('if (in.accept == MEDIA_NONE)')
        w('req_problem(r, 406, "not_acceptable", "None of the media types this operation answers '
          '(%s) is acceptable to the Accept header.",')
        w('            media_list(&r->arena, offered, %d));' % n)
        w('return 0;')
        w.close()
    for p in op.params:
        ptr = lit(p.pointer)
        if p.collect:
            array_param(w, p, ptr)
            continue
        w('text = %s(r, %s);' % (p.getter, lit(p.json_name)))
        w.open('if (!text)')
        if p.required:
            add_err(w, '&r->verr', ptr, None, 'required', 'is required')
        elif p.default is not None:
            w('in.%s = %s;' % (p.cname, p.default))
            w('in.has_%s = true;' % p.cname)
        else:
            w('/* absent: has_%s stays false */' % p.cname)
        if p.where == 'query':
            w.mid('else if (req_query_values(r, %s, NULL, 0) > 1)' % lit(p.json_name))
            add_err(w, '&r->verr', ptr, None, 'type', 'must be given once')
        w.mid('else if (schemas_param_value(&pv, text, SCHEMAS_PARAM_%s) != 0)' % p.param_type)
        add_err(w, '&r->verr', ptr, None, 'type', p.node.type_detail if p.param_type != 'STRING'
                else 'must be valid UTF-8 text')
        w.mid('else')
        if not p.node.trivial:
            w(validate_call(p.node, '&pv', ptr, l='&r->verr', mode='VALIDATE_REQUEST'))
        decode_value(w, p.node, 'field', 'in.' + p.cname, '&pv')
        if p.optional:
            w('in.has_%s = true;' % p.cname)
        w.close()
    if op.params:
        w.open('if (r->verr.count > 0)')
        w('req_problem(r, 400, "invalid_request", "The request has %d invalid parameter%s.",')
        w('            r->verr.count, r->verr.count == 1 ? "" : "s");')
        w('r->with_errors = true;')
        w('return 0;')
        w.close()
    if op.raw_body:
        raw_body(w, op)
    elif op.body:
        b = op.body.node
        absent_body(w, op)
        w.open('if (json_parse(&r->arena, r->body, r->body_len, &doc, &jerr) != 0)')
        w('req_problem(r, 400, "malformed_json", "The request body is not valid JSON: %s at '
          'byte %zu.",')
        w('            jerr.msg, jerr.offset);')
        w('return 0;')
        w.close()
        if not b.trivial:
            w(validate_call(b, 'doc', '""', l='&r->verr', mode='VALIDATE_REQUEST'))
        w.open('if (r->verr.count > 0)')
        w('req_problem_validation(r, 422, arena_printf(&r->arena, "The request body has %d%s '
          'invalid field%s.",')
        w('                                           r->verr.count, r->verr.truncated ? "+" '
          ': "",')
        w('                                           r->verr.count == 1 ? "" : "s"));')
        w('return 0;')
        w.close()
        if b.kind == 'any':
            w('in.body = doc;')
        else:
            w('in.body = arena_alloc(&r->arena, sizeof *in.body);')
            w('if (decode_%s(&r->arena, doc, in.body) != 0)' % b.cname)
            w('    return -1;')
        w.close()
    if_match_block(w, op)
    audit_fields_block(w, op)
    w()
    if op.event is not None and op.event.saved:
        w('r->saved.wanted = true; /* the 204\'s event: what the handler saves (x-event) */')
    w('r->handler_ran = true; /* from here on, the answer is the operation\'s own */')
    w('if (%s(r, &in, &out) != 0)' % h)
    w('    return -1;')
    w.open('if (r->status == 0)')
    w.switch('switch (out.status)')
    for r in op.responses:
        if r.kind == 'problem':
            continue
        w('case %d:' % r.status)
        w.ind += 1
        if r.kind == 'empty':
            w('req_set_json(r, %d, NULL, 0);' % r.status)
        elif r.kind == 'raw':
            raw_answer(w, op, r)
        elif r.kind == 'html':
            fld = 'out.' + r.field.cname
            w.open('if (!%s)' % fld)
            w('log_error("%%s answered %d without %s", %s);' % (r.status, r.field.cname,
                                                              lit(op.operation_id)))
            w('return -1;')
            w.close()
            w('if (req_set_html(r, %d, %s) != 0)' % (r.status, fld))
            w('    return -1;')
        else:
            fld = 'out.' + r.field.cname
            if r.media:
                w.open('if (in.accept != MEDIA_JSON)')
                raw_answer(w, op, r)
                w('break;')
                w.close()
            w.open('if (!%s)' % fld)
            w('log_error("%%s answered %d without %s", %s);' % (r.status, r.field.cname,
                                                              lit(op.operation_id)))
            w('return -1;')
            w.close()
            w('{')
            w.ind += 1
            w('struct jsonw jw;')
            w('size_t len = 0;')
            w('char *buf;')
            w()
            w('jsonw_init(&jw);')
            if r.field.node.kind == 'any':
                w('jsonw_value(&jw, %s);' % fld)
            else:
                w('encode_%s(&jw, %s);' % (r.field.node.cname, fld))
            w('buf = jsonw_take(&jw, &len);')
            w('jsonw_release(&jw);')
            w('req_set_json(r, %d, buf, len);' % r.status)
            w.close()
        w('break;')
        w.ind -= 1
    w('default:')
    w.ind += 1
    w('log_error("%%s answered status %%d, which is not a documented success status", %s,'
      % lit(op.operation_id))
    w('          out.status);')
    w('return -1;')
    w.ind -= 1
    w.end_switch()
    for hd in op.headers:
        cond = status_cond('r->status', hd.statuses)
        etag_of_version(w, op, hd)
        if hd.kind == 'integer':
            w.open('if (out.has_%s && (%s))' % (hd.cname, cond))
            w('char hb[24];')
            w()
            w('snprintf(hb, sizeof hb, "%%lld", (long long)out.%s);' % hd.cname)
            w('req_set_header(r, %s, hb);' % lit(hd.json_name))
            w.close()
        else:
            w('if (out.%s && (%s))' % (hd.cname, cond))
            w('    req_set_header(r, %s, out.%s);' % (lit(hd.json_name), hd.cname))
    w.close()
    declared_block(w, op)
    w('#ifdef TREASURY_CHECK_RESPONSES')
    w('check_%s(r);' % h)
    w('#endif')
    w('return 0;')
    return w.lines


def _by_status(op, expr_of):
    """A C expression choosing expr_of(resp) by r->status over the JSON successes."""
    bodies = [r for r in op.responses if 200 <= r.status < 300 and r.kind == 'json']
    expr = expr_of(bodies[-1])
    for r in reversed(bodies[:-1]):
        expr = 'r->status == %d ? %s : %s' % (r.status, expr_of(r), expr)
    return expr


def _member_text(r, name):
    f = next(f for f in r.field.node.fields if f.json_name == name)
    v = 'out.%s->%s' % (r.field.cname, f.cname)
    return '%s_str(%s)' % (f.node.cname, v) if f.kind == 'enum' else v


def etag_of_version(w, op, hd):
    """An ETag the handler left unset is the answer's version (`"v<version>"`, req_etag) where
    its JSON body has a required integer `version`: a resource's ETag always comes from it."""
    if hd.json_name.lower() != 'etag' or hd.kind == 'integer':
        return
    for r in op.responses:
        if r.status not in hd.statuses or r.kind != 'json':
            continue
        v = next((f for f in r.field.node.fields if f.json_name == 'version'), None) \
            if r.field.node.kind == 'object' else None
        if v is None or v.kind != 'integer' or not v.required:
            continue
        w('if (!out.%s && r->status == %d)' % (hd.cname, r.status))
        w('    out.%s = req_etag(r, out.%s->%s);' % (hd.cname, r.field.cname, v.cname))


def audit_fields_block(w, op):
    """Before the handler: the request members x-audit copies into the record's detail
    (writeOnly members and secrets as "[redacted]"), for audit_change() and the dispatcher."""
    a = op.audit
    if a is None or a.none is not None or not a.fields:
        return
    w('if (doc) {')
    w.ind += 1
    w('struct jsonw aw;')
    w('const struct json_value *av;')
    w('char *fields;')
    w()
    w('jsonw_init(&aw);')
    w('jsonw_object_begin(&aw);')
    for name, redact in a.fields:
        w.open('if ((av = json_get(doc, %s)) != NULL)' % lit(name))
        w('jsonw_key(&aw, %s);' % lit(name))
        if redact:
            w('jsonw_string(&aw, "[redacted]"); /* writeOnly, or a secret inside */')
        else:
            w('jsonw_value(&aw, av);')
        w.close()
    w('jsonw_object_end(&aw);')
    w('fields = jsonw_take(&aw, NULL);')
    w('jsonw_release(&aw);')
    w('r->audit.fields = arena_strdup(&r->arena, fields);')
    w('free(fields);')
    w.ind -= 1
    w('}')


def declared_block(w, op):
    """After a success: the declared audit record (x-audit) unless the handler reported it
    (audit_change), and the declared event (x-event), in the operation's transaction
    (codegen/declared.py). An x-own-transaction handler reports its record itself, in its own
    transaction: the dispatcher checks that it did."""
    a, e = op.audit, op.event
    if a is None or (a.none is not None and e is None):
        return
    w.open('if (r->status >= 200 && r->status < 300 && !r->problem)')
    if a.none is None and op.own_transaction:
        w.open('if (!r->audit.written)')
        w('log_error("%%s answered %%d without reporting its declared audit record", %s,'
          % lit(op.operation_id))
        w('          r->status);')
        w('return -1;')
        w.close()
    elif a.none is None:
        if a.id_from == 'path':
            ident = 'in.%s' % a.id_name.cname
        elif a.id_from == 'principal':
            ident = 'r->principal.%s' % a.id_name
        elif a.id_from == 'response':
            ident = _by_status(op, lambda r: 'out.%s->%s' % (
                r.field.cname, next(f.cname for f in r.field.node.fields
                                    if f.json_name == a.id_name)))
        else:
            ident = 'NULL /* the handler reports it */'
        after = _by_status(op, lambda r: _member_text(r, a.status_field)) \
            if a.status_field else 'NULL'
        w.open('if (!r->audit.written)')
        w('const char *after = %s;' % after)
        w()
        w('if (audit_declared_write(r, %s, after) != 0)' % ident)
        w('    return -1;')
        w.close()
    if e is not None:
        if len(e.by_status) == 1 and e.by_status[0][0] is None:
            etype = lit(e.by_status[0][1])
        else:
            etype = lit(e.by_status[-1][1])
            for st, t in reversed(e.by_status[:-1]):
                etype = 'r->status == %d ? %s : %s' % (st, lit(t), etype)
        if e.saved:
            w('if (resource_saved_event(r, %s, %s) != 0)' % (etype, lit(a.resource)))
            w('    return -1;')
            w.close()
            return
        eid = _by_status(op, lambda r: 'out.%s->id' % r.field.cname)
        ever = _by_status(op, lambda r: 'out.%s->version' % r.field.cname) \
            if e.version else '0'
        w('if (outbox_add(r, %s, %s, %s, %s, r->resp_body) != 0)'
          % (etype, lit(a.resource), eid, ever))
        w('    return -1;')
    w.close()


def if_match_block(w, op):
    """x-if-match: required -- a change without If-Match is refused before the handler."""
    if not op.if_match_required:
        return
    w('text = req_header(r, "If-Match");')
    w.open('if (!text || strcmp(text, "*") == 0)')
    w('req_problem(r, 428, "precondition_required", "%s",')
    w('            "Send If-Match with the ETag of the version you read (GET it first; * names '
      'none), so that this change cannot overwrite one made since.");')
    w('return 0;')
    w.close()


def array_param(w, p, ptr):
    """An array query parameter: its values (repeated keys, or one comma-separated value)
    as a JSON array of the item type, validated with pointers /query/<name>/<index>."""
    w('{')
    w.ind += 1
    w('struct arena *a = &r->arena;')
    w('const char *qv[%d];' % p.collect)
    w('size_t qn = req_query_values(r, %s, qv, %d);' % (lit(p.json_name), p.collect))
    w()
    w.open('if (qn == 0)')
    if p.required:
        add_err(w, '&r->verr', ptr, None, 'required', 'is required')
    else:
        w('/* absent: has_%s stays false */' % p.cname)
    if not p.explode:
        w.mid('else if (qn > 1)')
        add_err(w, '&r->verr', ptr, None, 'type',
                'must be given once, its values separated by commas')
    w.mid('else')
    if not p.explode:
        w('qn = schemas_param_split(a, qv[0], qv, %d);' % p.collect)
    w('if (schemas_param_array(a, &pv, qv, qn < %d ? qn : %d, SCHEMAS_PARAM_%s, %s,'
      % (p.collect, p.collect, p.param_type, ptr))
    w('                        %s, &r->verr) == 0) {' % lit(p.type_detail))
    w.ind += 1
    w(validate_call(p.node, '&pv', ptr, l='&r->verr', mode='VALIDATE_REQUEST'))
    decode_value(w, p.node, 'field', 'in.' + p.cname, '&pv')
    if p.optional:
        w('in.has_%s = true;' % p.cname)
    w.close()
    w.close()
    w.close()


def check_json_answer(w, r):
    """Test builds: the answer parses as JSON and fits status r's schema."""
    w('if (json_parse(&r->arena, r->resp_body ? r->resp_body : "", r->resp_len, &doc, '
      '&jerr) != 0)')
    w('    verr_add(&l, "", NULL, "malformed_json", "%s at byte %zu", jerr.msg, '
      'jerr.offset);')
    if not r.field.node.trivial:
        w('else')
        w('    ' + validate_call(r.field.node, 'doc', '""', l='&l',
                                 mode='VALIDATE_RESPONSE'))


def check_media(w, r):
    """Test builds: a negotiated status is sent as one of its declared media types, and its
    body fits that type's schema."""
    w.switch('switch (media_of(r->content_type))')
    for media, c, node in r.media:
        w('case %s:' % c)
        w.ind += 1
        if c == 'MEDIA_JSON':
            check_json_answer(w, r)
        elif node is None:   # application/pdf: bytes that start as a PDF does, bounded
            w('if (!r->resp_body || r->resp_len < 5 || memcmp(r->resp_body, "%PDF-", 5) != 0)')
            w.ind += 1
            add_err(w, '&l', '""', None, 'type', 'must be a PDF document (%PDF-)')
            w.ind -= 1
            if r.binary_max is not None:
                w('else if (r->resp_len > %d)' % r.binary_max)
                w.ind += 1
                add_err(w, '&l', '""', None, 'max_length', 'must be at most %d bytes'
                        % r.binary_max)
                w.ind -= 1
        else:
            w.open('if (!r->resp_body || !json_utf8_valid(r->resp_body, r->resp_len))')
            add_err(w, '&l', '""', None, 'type', 'must be valid UTF-8 text (%s)' % media)
            w.mid('else')
            w('struct json_value sv = { .type = JSON_STRING, .s = r->resp_body, '
              '.len = r->resp_len };')
            w()
            w(validate_call(node, '&sv', '""', l='&l', mode='VALIDATE_RESPONSE'))
            w.close()
        w('break;')
        w.ind -= 1
    w('default:')
    w('    verr_add(&l, "", NULL, "type", "status %%d is sent as %%s, not as %s", r->status,'
      % ' or '.join(m for m, _, _ in r.media))
    w('             r->content_type ? r->content_type : "nothing");')
    w('    break;')
    w.end_switch()


def check_body(op):
    """Test builds: the response just built (or set by the handler) against the spec."""
    w = W()
    w('struct verr_list l;')
    if op.json_responses:
        w('struct json_value *doc = NULL;')
        w('struct json_error jerr;')
    elif any(r.oauth for r in op.responses):
        w('struct json_value *doc = NULL;')
    if any(h for h in op.headers):
        w('struct json_value hv;')
        w('const char *hval;')
    w()
    w('verr_init(&l, &r->arena);')
    w.switch('switch (r->status)')
    for r in op.responses:
        w('case %d:' % r.status)
        w.ind += 1
        if r.kind == 'problem' and r.oauth:
            # Rendered by the runtime from the problem: render it the same way (oauth_error_doc
            # in the template) and check it against the documented error schema.
            w('if (!r->problem)')
            w.ind += 1
            add_err(w, '&l', '""', None, 'type', 'status %d is documented as an RFC 6749 error '
                                                 '(a problem the runtime renders)' % r.status)
            w.ind -= 1
            w('else if ((doc = oauth_error_doc(r, &l)) != NULL)')
            w('    ' + validate_call(r.node, 'doc', '""', l='&l', mode='VALIDATE_RESPONSE'))
            w('break;')
            w.ind -= 1
            continue
        if r.kind == 'problem':
            w('if (!r->problem)')
            w.ind += 1
            add_err(w, '&l', '""', None, 'type', 'status %d is documented as a problem document'
                    % r.status)
            w.ind -= 1
            w('break;')
            w.ind -= 1
            continue
        if r.kind == 'html' and r.status >= 400:
            w('if (r->problem)')
            w('    break; /* rendered as an HTML error page by the runtime */')
        else:
            w.open('if (r->problem)')
            add_err(w, '&l', '""', None, 'type', 'status %d is documented without a problem '
                                                 'document' % r.status)
            w('break;')
            w.close()
        if r.media:
            check_media(w, r)
        elif r.kind == 'empty':
            w('if (r->resp_len > 0)')
            w.ind += 1
            add_err(w, '&l', '""', None, 'type', 'status %d has no body' % r.status)
            w.ind -= 1
        elif r.kind == 'html':
            w('if (!r->resp_body || r->resp_len < 15 || memcmp(r->resp_body, "<!DOCTYPE html>", '
              '15) != 0)')
            w.ind += 1
            add_err(w, '&l', '""', None, 'type', 'status %d is an HTML document' % r.status)
            w.ind -= 1
        else:
            check_json_answer(w, r)
        for hd in op.headers:
            if r.status not in hd.statuses:
                continue
            ptr = lit('/header/' + hd.json_name)
            w('hval = resp_header(r, %s);' % lit(hd.json_name))
            if r.status in hd.required_statuses:
                w('if (!hval)')
                w.ind += 1
                add_err(w, '&l', ptr, None, 'required', 'is required')
                w.ind -= 1
                w('else if (schemas_param_value(&hv, hval, SCHEMAS_PARAM_%s) != 0)'
                  % ('INTEGER' if hd.kind == 'integer' else 'STRING'))
            else:
                w('if (hval && schemas_param_value(&hv, hval, SCHEMAS_PARAM_%s) != 0)'
                  % ('INTEGER' if hd.kind == 'integer' else 'STRING'))
            w.ind += 1
            add_err(w, '&l', ptr, None, 'type', hd.node.type_detail)
            w.ind -= 1
            if not hd.node.trivial:
                w('else if (hval)')
                w('    ' + validate_call(hd.node, '&hv', ptr, l='&l', mode='VALIDATE_RESPONSE'))
        w('break;')
        w.ind -= 1
    w('default:')
    w('    verr_add(&l, "", NULL, "status", "status %d is not documented", r->status);')
    w('    break;')
    w.end_switch()
    w('if (l.count == 0)')
    w('    return;')
    w('for (int i = 0; i < l.count; i++)')
    w('    fprintf(stderr, "RESPONSE SCHEMA VIOLATION op=%s status=%d pointer=%s code=%s '
      'detail=%s\\n",')
    w('            %s, r->status, l.items[i].pointer, l.items[i].code, l.items[i].detail);'
      % lit(op.operation_id))
    w('req_problem(r, 500, "response_schema_violation", "The response of %s does not match '
      'the API description.",')
    w('            %s);' % lit(op.operation_id))
    return w.lines
