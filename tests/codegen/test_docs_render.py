"""Tests of codegen/docs.py, the API reference page (GET /docs) rendered at generation time:
everything from the spec escaped, planned operations marked, every operation, schema, scope
and role present with its anchor, every in-page link resolving, no script and no external
asset, the CSP hash and ETag matching the bytes, determinism. The page of the small spec is
also golden (tests/codegen/small/expected/docs_html.c, test_codegen.py).
    /usr/bin/python3 -m pytest -q tests/codegen/test_docs_render.py
"""
import base64
import copy
import hashlib
import html.parser
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'codegen'))
import docs  # noqa: E402
import spec  # noqa: E402

SMALL = os.path.join(REPO, 'tests', 'codegen', 'small', 'openapi.yaml')
REAL = os.path.join(REPO, 'openapi', 'openapi.yaml')
EVIL = '<script>alert("x&y")</script>'


VOID = {'meta', 'br', 'hr', 'img', 'input', 'link', 'wbr', 'col', 'area', 'base', 'embed',
        'source', 'track'}


class Page(html.parser.HTMLParser):
    """Every tag with its attributes, the ids, the hrefs, the text of <style>; every element
    closed, in order (mismatches in `unbalanced`)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.ids, self.hrefs, self.style, self._in_style = [], [], [], '', False
        self.open, self.unbalanced = [], []
        self.feed(text)
        self.unbalanced += self.open

    def handle_endtag(self, tag):
        self._in_style = False
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.unbalanced.append((tag, self.getpos(), self.open[-3:]))

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append(tag)
        a = dict(attrs)
        self.tags.append((tag, a))
        if 'id' in a:
            self.ids.append(a['id'])
        if 'href' in a:
            self.hrefs.append(a['href'])
        self._in_style = tag == 'style'

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def bundled(path):
    return spec.load_bundle(path).bundled


def op_ids(doc):
    return [o['operationId'] for item in doc['paths'].values() for m, o in item.items()
            if m in docs.METHODS]


def check_page(text, doc):
    p = Page(text)
    assert p.unbalanced == []
    assert len(p.ids) == len(set(p.ids)), 'duplicate ids'
    ids = set(p.ids)
    for href in p.hrefs:   # navigation only, inside the page
        assert href.startswith('#') and href[1:] in ids, href
    for tag, a in p.tags:
        assert tag not in ('script', 'link', 'img', 'iframe', 'object', 'embed', 'base',
                           'form', 'svg'), tag
        assert 'src' not in a and 'srcset' not in a, (tag, a)
        assert not any(k.startswith('on') for k in a), (tag, a)
        assert 'style' not in a, (tag, a)   # inline style attributes would need unsafe-inline
    for oid in op_ids(doc):
        assert 'op-' + oid in ids and '#op-' + oid in p.hrefs, oid
    for name in doc['components'].get('schemas', {}):
        assert 'schema-' + name in ids, name
    for name in doc.get('x-scopes', {}):
        assert 'scope-' + name in ids, name
    for key in doc.get('x-roles', {}):
        assert 'role-' + key in ids, key
    for t in doc.get('tags', []):
        assert 'tag-' + t['name'] in ids, t['name']
    return p


def test_small_spec_page_has_every_operation_schema_scope_role_and_only_internal_links():
    doc = bundled(SMALL)
    page = docs.build(doc)
    check_page(page['html'], doc)


def test_real_spec_page_has_every_operation_and_stays_compact():
    doc = bundled(REAL)
    page = docs.build(doc)
    check_page(page['html'], doc)
    size = len(page['html'].encode('utf-8'))
    # Smaller than the JSON it is rendered from (shared responses are linked, not repeated).
    assert size < len(spec.bundled_json(spec.load_bundle(REAL)).encode('utf-8')), size


def test_planned_operations_are_marked_and_built_ones_are_not():
    doc = bundled(SMALL)
    text = docs.build(doc)['html']
    planned = {o['operationId'] for item in doc['paths'].values() for m, o in item.items()
               if m in docs.METHODS and o.get('x-status') == 'planned'}
    assert planned, 'the small spec has a planned operation'
    for oid in op_ids(doc):
        article = re.search(r'<article class="op( planned)?" id="op-%s">(.*?)</article>'
                            % re.escape(oid), text, re.S)
        assert article, oid
        marked = '<span class="b pl">planned, answers 501</span></h3>' in article.group(2)
        assert marked == (oid in planned) == bool(article.group(1)), oid
        toc = re.search(r'<a href="#op-%s"( class="pl")?>' % re.escape(oid), text)
        assert toc and bool(toc.group(1)) == (oid in planned), oid


def poisoned(doc):
    """doc with hostile text in every kind of place the page shows."""
    d = copy.deepcopy(doc)
    d['info']['title'] = EVIL
    d['info']['description'] = EVIL + '\n\n- `' + EVIL + '` and **' + EVIL + '**'
    d['tags'][0]['description'] = EVIL
    d['x-scopes'][next(iter(d['x-scopes']))] = EVIL
    first_role = next(iter(d['x-roles']))
    d['x-roles'][first_role]['description'] = EVIL
    d['x-roles'][first_role]['name'] = EVIL
    for item in d['paths'].values():
        for m, o in item.items():
            if m not in docs.METHODS:
                continue
            o['summary'] = EVIL
            o['description'] = EVIL
            for r in o['responses'].values():
                if '$ref' not in r:
                    r['description'] = EVIL
                    for mt in (r.get('content') or {}).values():
                        mt['example'] = {'note': EVIL}
    for s in d['components']['schemas'].values():
        s['description'] = EVIL
        for p in (s.get('properties') or {}).values():
            if isinstance(p, dict):
                p['description'] = EVIL
                if p.get('type') == 'string' and 'enum' not in p:
                    p['pattern'] = '^"<x>"$'
                    p['default'] = EVIL
                if 'enum' in p:
                    p['enum'] = p['enum'] + [EVIL]
    # a hostile schema name and property name: they become ids, hrefs and text
    d['components']['schemas']['X"><script>'] = {
        'type': 'object', 'description': EVIL,
        'properties': {'<b>"\'': {'type': 'string', 'description': EVIL, 'example': EVIL}}}
    return d


def test_everything_from_the_spec_is_escaped():
    doc = poisoned(bundled(SMALL))
    text = docs.build(doc)['html']
    assert '<script' not in text.lower()
    assert '<b>"\'' not in text
    assert 'id="schema-X&#34;&gt;&lt;script&gt;"' in text
    assert '&lt;script&gt;alert' in text
    p = Page(text)
    # what the parser reads back is the original text: escaped, not mangled
    texts = []

    class T(html.parser.HTMLParser):
        def handle_data(self, data):
            texts.append(data)
    T(convert_charrefs=True).feed(text)
    assert sum(EVIL in t for t in texts) > 10
    assert not [t for t, a in p.tags if t == 'script']


def test_markdown_subset():
    assert docs.md('a `<b>` **c** d') == '<p>a <code>&lt;b&gt;</code> <strong>c</strong> d</p>'
    assert docs.md('one\ntwo\n\n- x\n- `y`') == \
        '<p>one two</p><ul><li>x</li><li><code>y</code></li></ul>'
    assert docs.md('[link](https://evil.example) <a href=x>') == \
        '<p>[link](https://evil.example) &lt;a href=x&gt;</p>'
    assert docs.md(None) == ''
    # shared parameters show their first sentence beside the link to the full text
    assert docs.first_sentence('Use `a. b` (e.g. c. d). Then more.') == 'Use `a. b` (e.g. c. d).'


def test_constraints_are_spelled_out():
    s = {'type': 'string', 'minLength': 1, 'maxLength': 40, 'pattern': '^ben_[0-9a-z]{26}$',
         'readOnly': True}
    line = str(docs.type_line(s))
    assert 'length 1–40' in line and '<code>^ben_[0-9a-z]{26}$</code>' in line
    assert 'read-only' in str(docs.flags(s))
    i = {'type': 'integer', 'format': 'int64', 'minimum': 1, 'maximum': 100, 'default': 20}
    assert str(docs.type_line(i)) == \
        'integer <span class="f">(int64)</span> · ≥ 1, ≤ 100 · default <code>20</code>'
    e = {'type': ['string', 'null'], 'enum': ['a', 'b', None]}
    assert str(docs.type_line(e)) == \
        'string | null · one of <code>a</code>, <code>b</code>, <code>null</code>'
    a = {'type': 'array', 'maxItems': 5, 'uniqueItems': True,
         'items': {'$ref': '#/components/schemas/Thing'}}
    assert str(docs.type_line(a)) == \
        'array of <a href="#schema-Thing">Thing</a> · ≤ 5 items · unique items'
    w = {'type': 'object', 'additionalProperties': False, 'required': ['p'],
         'properties': {'p': {'type': 'string', 'writeOnly': True, 'maxLength': 9}}}
    body = str(docs.schema_body(w))
    assert 'write-only' in body and 'required' in body and 'length ≤ 9' in body
    assert 'no other properties' in str(docs.type_line(w))


def test_csp_hash_and_etag_match_the_bytes_and_output_is_deterministic():
    doc = bundled(SMALL)
    a, b = docs.build(doc), docs.build(copy.deepcopy(doc))
    assert a == b
    style = Page(a['html']).style
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert a['csp'].startswith("default-src 'none'; style-src 'sha256-%s';" % digest)
    assert 'script' not in a['csp'] and 'unsafe' not in a['csp']
    assert a['etag'] == '"%s"' % hashlib.sha256(a['html'].encode()).hexdigest()[:32]
    assert style == docs.stylesheet()


def test_shapes_the_new_apis_bring_render():
    """What the other APIs of the contract add (array query parameters, non-JSON bodies and
    answers, arrays of arrays, exact decimals) renders without a special case."""
    d = copy.deepcopy(bundled(SMALL))
    op = d['paths']['/things']['get']
    op['parameters'].append({'name': 'status', 'in': 'query', 'explode': False,
                             'schema': {'type': 'array', 'maxItems': 5,
                                        'items': {'type': 'string', 'enum': ['a', 'b']}}})
    op['responses']['200']['content']['text/csv'] = {
        'schema': {'type': 'string', 'maxLength': 100}, 'example': 'a,b\n1,"<2>"\n'}
    post = d['paths']['/things']['post']
    post['requestBody']['content']['application/xml'] = {
        'schema': {'type': 'string', 'maxLength': 1000}, 'example': '<Document/>'}
    d['components']['schemas']['Grid'] = {
        'type': 'object', 'properties': {'cells': {
            'type': 'array', 'maxItems': 10, 'items': {
                'type': 'array', 'maxItems': 5, 'items': {'type': ['string', 'null'],
                                                         'maxLength': 9}}}}}
    page = docs.build(d)
    text = page['html']
    check_page(text, d)
    assert 'query<br><span class="c">comma-separated</span>' in text
    assert 'array of string · ≤ 5 items · each item: one of <code>a</code>, <code>b</code>' \
        in text
    assert '<code>text/csv</code> string' in text
    assert '<pre>a,b\n1,"&lt;2&gt;"\n</pre>' in text
    assert '<pre>&lt;Document/&gt;</pre>' in text
    assert 'array of array of string | null · ≤ 10 items · each item: ≤ 5 items, ' \
        'each item: length ≤ 9' in text
