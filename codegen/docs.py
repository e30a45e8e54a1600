"""The HTML reference served at GET /docs, rendered at generation time from the bundled
document (the same dict as generated/openapi.json) by templates/docs.html.j2.

The page is one self-contained document: one inline stylesheet (its SHA-256 goes into the
Content-Security-Policy the handler sends), no script, no external asset, navigation by
anchors only. Everything taken from the spec is escaped (jinja2 autoescape; the helpers
below return Markup built from escaped parts only). Descriptions get a tiny, safe subset of
Markdown: paragraphs, `- ` lists, `code` and **bold**; nothing else is interpreted.

Anchors: tag-<tag>, op-<operationId>, schema-<Name>, response-<Name>, parameter-<Name>,
header-<Name>, scope-<scope>, role-<key>, plus overview, scopes, roles, schemas, responses,
parameters, headers."""
import base64
import hashlib
import json
import os
import re

import jinja2
from markupsafe import Markup, escape

from spec import first_sentence

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'templates')
METHODS = ('get', 'post', 'put', 'patch', 'delete')
# On every response (documented once, in the Headers section, not per response).
EVERY_RESPONSE_HEADERS = ('X-Request-ID', 'X-RateLimit-Limit', 'X-RateLimit-Remaining',
                          'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit')
PLANNED = 'planned, answers 501'
MAX_DEPTH = 8   # nested inline object tables

STYLESHEET_FILE = os.path.join(TEMPLATES, 'docs.css')


def stylesheet():
    """The page's only stylesheet, whitespace-compacted (one rule per line)."""
    with open(STYLESHEET_FILE, encoding='utf-8') as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    lines = [ln.strip() for ln in text.splitlines()]
    return '\n'.join(ln for ln in lines if ln) + '\n'


def sha256_b64(text):
    return base64.b64encode(hashlib.sha256(text.encode('utf-8')).digest()).decode('ascii')


def csp_for(css):
    """No script at all, exactly this stylesheet, nothing else loaded, posted or framed."""
    return ("default-src 'none'; style-src 'sha256-%s'; img-src 'none'; form-action 'none'; "
            "frame-ancestors 'none'; base-uri 'none'" % sha256_b64(css))


# ---- text ----------------------------------------------------------------------------------

def text(v):
    """v escaped for element content (not attributes): & < > only, so the quotes that fill
    JSON examples stay one byte. Markup."""
    v = '%s' % v
    return Markup(v.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;'))


_INLINE = re.compile(r'`([^`\n]+)`|\*\*([^*\n]+)\*\*')


def inline(s):
    """Escaped text with `code` and **bold**."""
    out, pos = [], 0
    for m in _INLINE.finditer(s):
        out.append(str(text(s[pos:m.start()])))
        if m.group(1) is not None:
            out.append('<code>%s</code>' % text(m.group(1)))
        else:
            out.append('<strong>%s</strong>' % text(m.group(2)))
        pos = m.end()
    out.append(str(text(s[pos:])))
    return ''.join(out)


def md(src):
    """Block Markdown subset: paragraphs separated by blank lines, lines starting with `- ` or
    `* ` as list items. Returns Markup."""
    if not isinstance(src, str) or not src.strip():
        return Markup('')
    blocks = re.split(r'\n[ \t]*\n', src.strip())
    out = []
    for b in blocks:
        lines = b.split('\n')
        if all(re.match(r'\s*[-*] ', ln) or (i and ln.startswith('  '))
               for i, ln in enumerate(lines)):
            items = []
            for ln in lines:
                if re.match(r'\s*[-*] ', ln):
                    items.append(re.sub(r'^\s*[-*] ', '', ln))
                else:
                    items[-1] += ' ' + ln.strip()
            out.append('<ul>%s</ul>' % ''.join('<li>%s</li>' % inline(i) for i in items))
        else:
            out.append('<p>%s</p>' % inline(' '.join(ln.strip() for ln in lines)))
    return Markup(''.join(out))


def code(v):
    return Markup('<code>%s</code>' % text(v))


def json_text(v):
    return json.dumps(v, ensure_ascii=False)


def example_text(v):
    """An example as shown in a <pre>: strings as they are (CSV, XML, MT940...), the rest as
    indented JSON."""
    if isinstance(v, str):
        return text(v)
    return text(json.dumps(v, indent=2, ensure_ascii=False))


# ---- schemas -------------------------------------------------------------------------------

def ref_name(ref):
    """'#/components/schemas/Payment' -> ('schemas', 'Payment'); other refs -> (None, ref)."""
    m = re.match(r'^#/components/([A-Za-z]+)/([^/]+)$', ref or '')
    if not m:
        return None, ref
    return m.group(1), m.group(2).replace('~1', '/').replace('~0', '~')


_ANCHOR_PREFIX = {'schemas': 'schema', 'responses': 'response', 'parameters': 'parameter',
                  'headers': 'header', 'requestBodies': 'request-body'}


def ref_link(ref):
    section, name = ref_name(ref)
    if section in _ANCHOR_PREFIX:
        return Markup('<a href="#%s-%s">%s</a>') % (_ANCHOR_PREFIX[section], name, name)
    return code(ref)


def type_of(s):
    """A short inline type: `string (date-time)`, `array of Payment`, `Money | null`..."""
    if not isinstance(s, dict):
        return Markup('any')
    if '$ref' in s:
        return ref_link(s['$ref'])
    if 'oneOf' in s:
        return Markup('one of ') + Markup(' | ').join(type_of(m) for m in s['oneOf'])
    if 'allOf' in s and 'type' not in s and 'properties' not in s:
        return Markup('all of ') + Markup(' + ').join(type_of(m) for m in s['allOf'])
    t = s.get('type')
    nullable = False
    if isinstance(t, list):
        rest = [x for x in t if x != 'null']
        nullable = len(rest) < len(t)
        t = rest[0] if len(rest) == 1 else '|'.join(rest)
    if t == 'array':
        base = Markup('array of ') + type_of(s.get('items'))
    elif t == 'object' and isinstance(s.get('additionalProperties'), dict) and \
            not s.get('properties'):
        base = Markup('map of string → ') + type_of(s['additionalProperties'])
    elif t:
        base = escape(t)
        if 'format' in s:
            base += Markup(' <span class="f">(%s)</span>') % s['format']
    elif 'enum' in s or 'const' in s:
        base = Markup('value')
    else:
        base = Markup('any')
    if nullable:
        base += Markup(' | null')
    return base


def _num(v):
    return json_text(v)


def constraints(s):
    """The constraints of one schema as short Markup items."""
    if not isinstance(s, dict):
        return []
    c = []
    lo, hi = s.get('minLength'), s.get('maxLength')
    if lo is not None or hi is not None:
        c.append(Markup('length %s') % (
            '%s–%s' % (lo, hi) if lo is not None and hi is not None else
            '≥ %s' % lo if lo is not None else '≤ %s' % hi))
    if 'pattern' in s:
        c.append(Markup('pattern ') + code(s['pattern']))
    bounds = []
    if 'minimum' in s:
        bounds.append('≥ ' + _num(s['minimum']))
    if 'exclusiveMinimum' in s:
        bounds.append('> ' + _num(s['exclusiveMinimum']))
    if 'maximum' in s:
        bounds.append('≤ ' + _num(s['maximum']))
    if 'exclusiveMaximum' in s:
        bounds.append('< ' + _num(s['exclusiveMaximum']))
    if bounds:
        c.append(escape(', '.join(bounds)))
    if 'multipleOf' in s:
        c.append(Markup('multiple of %s') % _num(s['multipleOf']))
    lo, hi = s.get('minItems'), s.get('maxItems')
    if lo is not None or hi is not None:
        c.append(Markup('%s items') % (
            '%s–%s' % (lo, hi) if lo is not None and hi is not None else
            '≥ %s' % lo if lo is not None else '≤ %s' % hi))
    if s.get('uniqueItems'):
        c.append(Markup('unique items'))
    lo, hi = s.get('minProperties'), s.get('maxProperties')
    if lo is not None or hi is not None:
        c.append(Markup('%s properties') % (
            '%s–%s' % (lo, hi) if lo is not None and hi is not None else
            '≥ %s' % lo if lo is not None else '≤ %s' % hi))
    if 'enum' in s:
        c.append(Markup('one of ') + Markup(', ').join(code(json_text(v) if not
                                                              isinstance(v, str) else v)
                                                         for v in s['enum']))
    if 'const' in s:
        v = s['const']
        c.append(Markup('always ') + code(v if isinstance(v, str) else json_text(v)))
    if 'default' in s:
        v = s['default']
        c.append(Markup('default ') + code(v if isinstance(v, str) else json_text(v)))
    if s.get('additionalProperties') is False and s.get('properties'):
        c.append(Markup('no other properties'))
    # what an inline item or map value must be (a $ref's constraints are on its own entry)
    for key, label in (('items', 'each item'), ('additionalProperties', 'each value')):
        sub = s.get(key)
        if isinstance(sub, dict) and '$ref' not in sub and (key == 'items' or
                                                            not s.get('properties')):
            inner = constraints(sub)
            if inner:
                c.append(Markup('%s: ' % label) + Markup(', ').join(inner))
    return c


def flags(s, required=False):
    """Badges: required, read-only, write-only, deprecated."""
    out = []
    if required:
        out.append(Markup('<span class="b req">required</span>'))
    if isinstance(s, dict):
        if s.get('readOnly'):
            out.append(Markup('<span class="b ro">read-only</span>'))
        if s.get('writeOnly'):
            out.append(Markup('<span class="b wo">write-only</span>'))
        if s.get('deprecated'):
            out.append(Markup('<span class="b dep">deprecated</span>'))
    return Markup(' ').join(out)


def type_line(s):
    """Type, then its constraints, as one line of Markup."""
    parts = [type_of(s)] + constraints(s)
    return Markup(' · ').join(parts)


def _object_members(s):
    """(properties, required, additionalProperties) of an object schema, allOf members merged
    when they are inline."""
    props, req = dict(s.get('properties') or {}), list(s.get('required') or [])
    for m in s.get('allOf') or []:
        if isinstance(m, dict) and '$ref' not in m:
            props.update(m.get('properties') or {})
            req += m.get('required') or []
    return props, req, s.get('additionalProperties')


def _nested(s):
    """The inline schema whose table belongs under a property (an object, or the items of an
    array of objects), or None."""
    if not isinstance(s, dict) or '$ref' in s:
        return None
    if s.get('properties') or s.get('oneOf') or \
            any(isinstance(m, dict) and '$ref' not in m for m in s.get('allOf') or []):
        return s
    if isinstance(s.get('items'), dict):
        return _nested(s['items'])
    if isinstance(s.get('additionalProperties'), dict) and not s.get('properties'):
        return _nested(s['additionalProperties'])
    return None


def schema_body(s, depth=0):
    """What a schema holds, beyond its type line: a property table, oneOf variants, allOf
    members. Markup, possibly empty."""
    if not isinstance(s, dict) or '$ref' in s or depth > MAX_DEPTH:
        return Markup('')
    out = []
    if s.get('oneOf'):
        d = s.get('discriminator') or {}
        if d.get('propertyName'):
            mapping = d.get('mapping') or {}
            out.append(Markup('<p class="t">Chosen by %s: %s</p>') % (
                code(d['propertyName']),
                Markup(', ').join(code(k) + Markup(' → ') + ref_link(v)
                                  for k, v in mapping.items())))
        for m in s['oneOf']:
            if isinstance(m, dict) and '$ref' not in m:
                out.append(schema_body(m, depth + 1))
    if s.get('allOf'):
        refs = [m['$ref'] for m in s['allOf'] if isinstance(m, dict) and '$ref' in m]
        if refs:
            out.append(Markup('<p class="t">Includes every property of %s.</p>')
                       % Markup(', ').join(ref_link(r) for r in refs))
    props, req, addl = _object_members(s)
    if props:
        rows = []
        for name, p in props.items():
            nested = _nested(p)
            desc = md(p.get('description')) if isinstance(p, dict) else Markup('')
            if nested is not None:
                desc += schema_body(nested, depth + 1)
            rows.append(Markup('<tr><td><code>%s</code> %s</td><td>%s</td><td>%s</td></tr>')
                        % (name, flags(p, name in req), type_line(p), desc))
        if isinstance(addl, dict):
            rows.append(Markup('<tr><td><i>other names</i></td><td>%s</td><td>%s</td></tr>')
                        % (type_line(addl), md(addl.get('description'))))
        out.append(Markup('<table class="p"><thead><tr><th>Property</th><th>Type</th>'
                          '<th>Description</th></tr></thead><tbody>%s</tbody></table>')
                   % Markup('').join(rows))
    elif not s.get('oneOf') and not s.get('allOf'):
        nested = _nested(s)
        if nested is not None and nested is not s:
            out.append(schema_body(nested, depth + 1))
    return Markup('').join(out)


# ---- operations ------------------------------------------------------------------------------

class Op:
    def __init__(self, method, path, full_path, o, path_params):
        self.method = method
        self.path = path
        self.full_path = full_path
        self.o = o
        self.id = o.get('operationId') or '%s %s' % (method.upper(), path)
        self.tag = (o.get('tags') or ['other'])[0]
        self.planned = o.get('x-status') == 'planned'
        # path-item parameters first, overridden by the operation's own (same name and in)
        params = {}
        for p in list(path_params or []) + list(o.get('parameters') or []):
            params[(p.get('name'), p.get('in')) if '$ref' not in p else p['$ref']] = p
        self.params = list(params.values())


def operations(doc):
    root_prefix = ((doc.get('servers') or [{}])[0].get('url') or '').rstrip('/')
    ops = []
    for path, item in (doc.get('paths') or {}).items():
        if not isinstance(item, dict):
            continue
        prefix = root_prefix
        if item.get('servers'):
            prefix = (item['servers'][0].get('url') or '').rstrip('/')
        for m in METHODS:
            if isinstance(item.get(m), dict):
                ops.append(Op(m, path, prefix + path, item[m], item.get('parameters')))
    return ops


def security_text(o):
    """-> (kind, scopes): kind public | any | scopes."""
    sec = o.get('security')
    if sec == [] or sec is None:
        return 'public', []
    scopes = []
    for req in sec:
        for v in req.values():
            scopes += v
    return ('scopes', scopes) if scopes else ('any', [])


def resolve(doc, node):
    """A response/parameter/header node with a $ref -> (component name or None, target)."""
    if isinstance(node, dict) and '$ref' in node:
        section, name = ref_name(node['$ref'])
        target = ((doc.get('components') or {}).get(section) or {}).get(name)
        if isinstance(target, dict):
            return name, target
    return None, node


def media_examples(mt):
    """[(label, text)] of a media type object's example/examples."""
    out = []
    if not isinstance(mt, dict):
        return out
    if 'example' in mt:
        out.append(('Example', example_text(mt['example'])))
    for k, ex in (mt.get('examples') or {}).items():
        if isinstance(ex, dict) and 'value' in ex:
            label = 'Example %s' % k
            if ex.get('summary'):
                label += ': %s' % ex['summary']
            out.append((label, example_text(ex['value'])))
    if not out and isinstance(mt.get('schema'), dict) and 'example' in mt['schema']:
        out.append(('Example', example_text(mt['schema']['example'])))
    return out


def status_class(status):
    return 's%s' % str(status)[:1]


def render(doc):
    """-> (html text, stylesheet text). Deterministic: source order everywhere."""
    css = stylesheet()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             undefined=jinja2.Undefined, trim_blocks=True,
                             lstrip_blocks=True, autoescape=True)
    ops = operations(doc)
    tags = list(doc.get('tags') or [])
    known = {t.get('name') for t in tags}
    for o in ops:   # a tag used but not declared still gets its section
        if o.tag not in known:
            tags.append({'name': o.tag})
            known.add(o.tag)
    by_tag = {t['name']: [o for o in ops if o.tag == t['name']] for t in tags}
    comps = doc.get('components') or {}
    env.globals.update(md=md, inline=lambda t: Markup(inline(t if isinstance(t, str) else '')),
                       type_of=type_of,
                       type_line=type_line, schema_body=schema_body, flags=flags,
                       security_text=security_text, resolve=lambda n: resolve(doc, n),
                       media_examples=media_examples, first_sentence=first_sentence,
                       status_class=status_class, ref_link=ref_link, example_text=example_text,
                       EVERY=EVERY_RESPONSE_HEADERS, PLANNED=PLANNED)
    html = env.get_template('docs.html.j2').render(
        doc=doc, info=doc.get('info') or {}, css=Markup(css), tags=tags, by_tag=by_tag,
        ops=ops, scopes=doc.get('x-scopes') or {}, roles=doc.get('x-roles') or {},
        schemas=comps.get('schemas') or {}, responses=comps.get('responses') or {},
        parameters=comps.get('parameters') or {}, headers=comps.get('headers') or {},
        planned_count=sum(1 for o in ops if o.planned))
    return html, css


def build(doc):
    """-> dict with html (text), css, csp, etag: what generate.py writes into docs_html.c."""
    html, css = render(doc)
    digest = hashlib.sha256(html.encode('utf-8')).hexdigest()
    return {'html': html, 'css': css, 'csp': csp_for(css), 'etag': '"%s"' % digest[:32]}
