"""The served document (generated/openapi.json, GET /v1/openapi.json): the bundled sources plus
what client tools need that the sources leave to the runtime, derived from the model so it
cannot drift (codegen/README.md, "The served document"):

- the oauth2 alternative: every operation an OAuth application's token may call (protected,
  not `x-first-party`, no withheld scope) lists `[{bearerAuth: [s]}, {oauth2: [s]}]`; the
  oauth2 scheme's flow scopes are filled in from the root `x-scopes` minus its
  `x-withheld-scopes`;
- the request headers the runtime reads: the header parameter component named `X-Request-ID`
  on every operation, the one named `Idempotency-Key` on every authenticated `x-idempotent`
  operation (their typed requests do not change: the runtime handles both);
- the truth about what is built: a generated paragraph at the end of `info.description`, and a
  note on each `x-status: planned` operation;
- only the components something references (shared ones no API uses yet are left out).

The sources' model (spec.Model) is built before this and does not see any of it."""
import copy
import json

from spec import Loc, SpecError, ptr_escape

HTTP_METHODS = ('get', 'put', 'post', 'delete', 'patch')


def _fail(loc, msg):
    raise SpecError(['%s: %s' % (loc, msg)])


def _oauth2_scheme(bundle, doc, model):
    """-> (name, scheme, withheld scope names) of the one oauth2 scheme, or (None, None, ())."""
    schemes = doc['components'].get('securitySchemes', {})
    found = [n for n, s in schemes.items() if isinstance(s, dict) and s.get('type') == 'oauth2']
    if not found:
        return None, None, ()
    loc = bundle.loc_of(bundle.bundled['components'].get('securitySchemes')) or \
        Loc(bundle.root_rel, '/components/securitySchemes')
    if len(found) > 1:
        _fail(loc, 'at most one oauth2 security scheme (found %s)' % ', '.join(found))
    name = found[0]
    s = schemes[name]
    loc = loc / name
    withheld = s.get('x-withheld-scopes', [])
    if not isinstance(withheld, list) or not all(isinstance(x, str) for x in withheld):
        _fail(loc / 'x-withheld-scopes', 'x-withheld-scopes must be a list of scope names')
    for i, sc in enumerate(withheld):
        if sc not in model.scope_by_name:
            _fail(loc / 'x-withheld-scopes' / i, 'scope %s is not declared in the root x-scopes'
                  % sc)
    flows = s.get('flows')
    if not isinstance(flows, dict) or set(flows) != {'authorizationCode'}:
        _fail(loc / 'flows', 'the oauth2 scheme has exactly the authorizationCode flow')
    flow = flows['authorizationCode']
    for k in ('authorizationUrl', 'tokenUrl'):
        if not isinstance(flow.get(k), str) or not flow[k]:
            _fail(loc / 'flows' / 'authorizationCode', '%s is required' % k)
    if flow.get('scopes') != {}:
        _fail(loc / 'flows' / 'authorizationCode' / 'scopes',
              'write scopes: {} (filled in from the root x-scopes in the served document)')
    return name, s, set(withheld)


def _runtime_param(doc, header):
    """-> '#/components/parameters/<name>' of the header parameter component for header."""
    hits = [n for n, p in doc['components'].get('parameters', {}).items()
            if isinstance(p, dict) and p.get('in') == 'header' and
            str(p.get('name', '')).lower() == header.lower()]
    if len(hits) > 1:
        raise SpecError(['components/parameters: %s is declared by %s; keep one'
                         % (header, ', '.join(hits))])
    return '#/components/parameters/' + ptr_escape(hits[0]) if hits else None


def _insert_before(d, key, value, before):
    """d with key: value inserted before the first key of `before` present (else at the end)."""
    out = {}
    done = False
    for k, v in d.items():
        if not done and k in before:
            out[key] = value
            done = True
        out[k] = v
    if not done:
        out[key] = value
    return out


def _add_paragraph(text, para):
    text = (text or '').rstrip()
    return text + '\n\n' + para if text else para


def _status_paragraph(doc, model):
    tags = [t['name'] for t in doc.get('tags', []) if isinstance(t, dict) and 'name' in t]
    built, planned = {}, {}
    for op in model.ops:
        (planned if op.planned else built).setdefault(op.tag, []).append(op)
        if op.tag not in tags:
            tags.append(op.tag)
    lines = []
    for t in tags:
        b, p = len(built.get(t, [])), len(planned.get(t, []))
        if b and not p:
            what = 'built (%d operation%s)' % (b, '' if b == 1 else 's')
        elif b and p:
            what = '%d operation%s built, %d planned' % (b, '' if b == 1 else 's', p)
        elif p:
            what = 'planned (%d operation%s described, none built yet)' % (p, '' if p == 1 else 's')
        else:
            what = 'no operation described yet'
        lines.append('- `%s`: %s' % (t, what))
    return ('**What is built.** Generated from this document: an operation marked `x-status: '
            'planned` is part of the contract but not built yet, and answers 501 '
            '`not_implemented` naming the operation.\n\n' + '\n'.join(lines))


def _prune(doc):
    """Drops components nothing outside `components` reaches (security schemes stay)."""
    comps = doc['components']
    seen = set()
    todo = []

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and v.startswith('#/components/'):
            parts = v[len('#/components/'):].split('/', 1)
            if len(parts) == 2:
                key = (parts[0], parts[1].replace('~1', '/').replace('~0', '~'))
                if key not in seen:
                    seen.add(key)
                    todo.append(key)

    walk({k: v for k, v in doc.items() if k != 'components'})
    while todo:
        sec, name = todo.pop()
        walk(comps.get(sec, {}).get(name))
    for sec in list(comps):
        if sec == 'securitySchemes':
            continue
        kept = {n: v for n, v in comps[sec].items() if (sec, n) in seen}
        if kept:
            comps[sec] = kept
        else:
            del comps[sec]


def served_document(bundle, model):
    doc = copy.deepcopy(bundle.bundled)
    # Storage mappings (x-table, x-merge-into: codegen/rows.py) are the server's business, not
    # the client's: tables and columns stay out of the served document.
    for s in (doc.get('components') or {}).get('schemas', {}).values():
        if isinstance(s, dict):
            for k in ('x-table', 'x-merge-into'):
                s.pop(k, None)
    oauth_name, oauth, withheld = _oauth2_scheme(bundle, doc, model)
    if oauth:
        oauth['flows']['authorizationCode']['scopes'] = {
            s['name']: doc['x-scopes'][s['name']] for s in model.scopes
            if s['name'] not in withheld}
        # x-scopes order (the catalogue's), not the sorted bit order
        order = list(doc['x-scopes'])
        sc = oauth['flows']['authorizationCode']['scopes']
        oauth['flows']['authorizationCode']['scopes'] = {k: sc[k] for k in order if k in sc}
    rid = _runtime_param(doc, 'X-Request-ID')
    idem = _runtime_param(doc, 'Idempotency-Key')
    for op in model.ops:
        item = doc['paths'][op.path]
        o = item[op.method.lower()]
        sec = o['security']
        names = {s['name'] for s in op.scopes}
        eligible = oauth and not op.is_public and not op.first_party and not (names & withheld)
        if len(sec) == 2 and not eligible:
            why = 'an x-first-party operation' if op.first_party else \
                'an operation needing %s (x-withheld-scopes)' % ', '.join(sorted(names & withheld))
            _fail(op.loc / 'security' / 1, 'no oauth2 alternative on %s' % why)
        if eligible and len(sec) == 1:
            o['security'] = [sec[0], {oauth_name: list(next(iter(sec[0].values())))}]
        refs = [rid] if rid else []
        if idem and op.idempotent and not op.is_public:
            refs.append(idem)
        if refs:
            params = list(o.get('parameters') or []) + [{'$ref': r} for r in refs]
            if 'parameters' in o:
                o['parameters'] = params
            else:
                o = _insert_before(o, 'parameters', params, ('requestBody', 'responses'))
        if op.planned:
            o['description'] = _add_paragraph(
                o.get('description'), '**Planned** (`x-status: planned`): not built yet; '
                'answers 501 `not_implemented` until it is.')
        item[op.method.lower()] = o
    info = doc.get('info')
    if isinstance(info, dict):
        info['description'] = _add_paragraph(info.get('description'),
                                              _status_paragraph(doc, model))
    _prune(doc)
    return doc


def as_json(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False) + '\n'


def served_json(bundle, model):
    return as_json(served_document(bundle, model))
