"""GET /docs, the API reference page rendered from the spec at generation time: its security
headers (a CSP allowing no script and only its own stylesheet by hash), every operation of the
served OpenAPI document present with its anchor, planned ones marked, nothing loaded from
anywhere, HEAD, and the ETag / If-None-Match 304. The browser side (no request leaves the
page, no CSP violation, the contents links work) is test_docs_browser.py."""

import base64
import hashlib
import html.parser
import json
import re

DOCS = "/docs"


class Page(html.parser.HTMLParser):
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.ids, self.style, self._style = [], set(), "", False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        self._style = tag == "style"

    def handle_endtag(self, tag):
        self._style = False

    def handle_data(self, data):
        if self._style:
            self.style += data


def operations(doc):
    for item in doc["paths"].values():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield op


def test_docs_is_a_strict_self_contained_page(server):
    with server.client() as c:
        r = c.get(DOCS)
    assert r.status == 200
    assert r.header("Content-Type") == "text/html; charset=utf-8"
    assert r.header("X-Content-Type-Options") == "nosniff"
    assert r.header("X-Frame-Options") == "DENY"
    assert r.header("Referrer-Policy") == "no-referrer"
    assert r.header("Cache-Control") == "private, max-age=3600"
    assert len(r.header_all("Content-Security-Policy")) == 1
    assert len(r.header_all("Cache-Control")) == 1
    page = Page(r.text)
    digest = base64.b64encode(hashlib.sha256(page.style.encode()).digest()).decode()
    assert r.header("Content-Security-Policy") == (
        "default-src 'none'; style-src 'sha256-%s'; img-src 'none'; form-action 'none'; "
        "frame-ancestors 'none'; base-uri 'none'" % digest)
    etag = r.header("ETag")
    assert etag == '"%s"' % hashlib.sha256(r.body).hexdigest()[:32]
    # nothing to load: no script, no asset element, no src anywhere, every href in the page
    for tag, a in page.tags:
        assert tag not in ("script", "link", "img", "iframe", "object", "embed", "base",
                           "form"), tag
        assert not set(a) & {"src", "srcset", "style", "action"}, (tag, a)
        if "href" in a:
            assert a["href"].startswith("#") and a["href"][1:] in page.ids, a["href"]
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", r.text, re.I)


def test_every_operation_of_the_served_document_is_on_the_page_and_planned_ones_marked(server):
    with server.client() as c:
        doc = c.get("/v1/openapi.json").json()
        text = c.get(DOCS).text
    ids = Page(text).ids
    ops = list(operations(doc))
    for op in ops:
        oid = op["operationId"]
        assert "op-" + oid in ids and 'href="#op-%s"' % oid in text, oid
        article = re.search(r'<article class="op( planned)?" id="op-%s">(.*?)</article>'
                            % re.escape(oid), text, re.S)
        planned = op.get("x-status") == "planned"
        assert bool(article.group(1)) == planned, oid
        badge = '<span class="b pl">planned, answers 501</span></h3>'
        assert (badge in article.group(2)) == planned, oid
    for tag in doc["tags"]:
        assert "tag-" + tag["name"] in ids
    for scope in doc["x-scopes"]:
        assert "scope-" + scope in ids
    for role in doc["x-roles"]:
        assert "role-" + role in ids
    for name in doc["components"]["schemas"]:
        assert "schema-" + name in ids


def test_head_sends_the_same_head_without_the_body(server):
    with server.client() as c:
        get = c.get(DOCS)
        head = c.request("HEAD", DOCS)
    assert head.status == 200 and head.body == b""
    assert int(head.header("Content-Length")) == len(get.body)
    for h in ("Content-Type", "ETag", "Cache-Control", "Content-Security-Policy",
              "X-Content-Type-Options"):
        assert head.header(h) == get.header(h), h


def test_if_none_match_answers_304_without_a_body(server):
    with server.client() as c:
        etag = c.get(DOCS).header("ETag")
        for value in (etag, "W/" + etag, '"other", ' + etag, "*"):
            r = c.get(DOCS, headers={"If-None-Match": value})
            assert r.status == 304 and r.body == b"", value
            assert r.header("ETag") == etag and r.header("Cache-Control") == "private, max-age=3600"
            assert r.header("Content-Type") is None
        r = c.get(DOCS, headers={"If-None-Match": '"%s"' % ("0" * 32)})
        assert r.status == 200 and r.header("ETag") == etag and len(r.body) > 1000


def test_docs_lives_outside_v1_and_api_answers_stay_no_store(server):
    with server.client() as c:
        v1 = c.get("/v1/docs")
        health = c.get("/healthz")
    assert v1.status == 404
    assert health.header("Cache-Control") == "no-store"


def test_the_served_page_matches_the_served_document(server):
    """The page is rendered from the same bundled document the server serves: its title and
    version, and the operation count it states."""
    with server.client() as c:
        doc = c.get("/v1/openapi.json").json()
        text = c.get(DOCS).text
    assert "<title>%s %s: API reference</title>" % (doc["info"]["title"],
                                                     doc["info"]["version"]) in text
    assert "%d operations in" % len(list(operations(doc))) in text
    json.dumps(doc)  # the document itself is valid JSON (parsed above)
