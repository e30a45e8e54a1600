"""HEAD on every GET operation (uptime monitors probe with it), OPTIONS on every path (RFC 9110
§9.3.7; CORS preflights are in test_cors.py), the Allow header, and If-Match: *."""

import pytest

from helpers import assert_json, assert_problem, create_beneficiary

PATH = "/v1/beneficiaries"
# The head fields that describe the message or this exchange rather than the resource.
PER_EXCHANGE = {"date", "x-request-id", "ratelimit", "x-ratelimit-remaining",
                "x-ratelimit-reset"}


def same_head(get, head):
    g = {k.lower(): v for k, v in get.headers.items() if k.lower() not in PER_EXCHANGE}
    h = {k.lower(): v for k, v in head.headers.items() if k.lower() not in PER_EXCHANGE}
    assert g == h, "HEAD %r != GET %r" % (h, g)


def test_head_on_healthz_is_gets_head_without_the_body(server):
    with server.client() as c:
        get = c.get("/healthz")
        head = c.request("HEAD", "/healthz")
    assert get.status == head.status == 200
    assert head.body == b""
    assert int(head.header("Content-Length")) == len(get.body)
    same_head(get, head)


def test_head_on_an_authenticated_get_checks_the_token_and_sends_no_body(server):
    with server.client(token=server.token) as c:
        ben = create_beneficiary(c)
        get = c.get(PATH + "/" + ben["id"])
        head = c.request("HEAD", PATH + "/" + ben["id"])
        listed = c.request("HEAD", PATH + "?limit=1")
        missing = c.request("HEAD", PATH + "/ben_01jq57rhym4n0qhqtvs6hcx1jr")
    assert head.status == 200 and head.body == b"" and head.header("ETag") == '"v1"'
    same_head(get, head)
    assert listed.status == 200 and listed.body == b""
    assert missing.status == 404 and missing.body == b""
    with server.client() as anon:
        r = anon.request("HEAD", PATH)
    assert r.status == 401 and r.body == b"" and r.header("WWW-Authenticate")


def test_options_answers_what_the_path_allows(server):
    with server.client() as c:
        r = c.request("OPTIONS", PATH)
        item = c.request("OPTIONS", PATH + "/ben_x")
        health = c.request("OPTIONS", "/healthz")
        nowhere = c.request("OPTIONS", "/v1/nowhere")
    assert r.status == 204 and r.body == b""
    assert r.header("Allow") == "GET, POST, HEAD, OPTIONS"
    assert set(item.header("Allow").split(", ")) == {"GET", "PATCH", "DELETE", "HEAD", "OPTIONS"}
    assert health.header("Allow") == "GET, HEAD, OPTIONS"
    assert_problem(nowhere, 404, "not_found")


def test_a_method_not_allowed_lists_head_and_options(server):
    with server.client() as c:
        r = c.request("PUT", "/healthz")
    assert_problem(r, 405, "method_not_allowed")
    assert r.header("Allow") == "GET, HEAD, OPTIONS"


def test_if_match_star_matches_any_current_version(server):
    with server.client(token=server.token) as c:
        ben = create_beneficiary(c)
        r = c.patch(PATH + "/" + ben["id"], json={"name": "Star GmbH"}, headers={"If-Match": "*"})
        assert_json(r, 200)
        assert r.header("ETag") == '"v2"'
        r = c.patch(PATH + "/" + ben["id"], json={"name": "Again"}, headers={"If-Match": "*"})
        assert r.header("ETag") == '"v3"'
        missing = c.patch(PATH + "/ben_01jq57rhym4n0qhqtvs6hcx1jr", json={"name": "x"},
                          headers={"If-Match": "*"})
        assert_problem(missing, 404)
        for bad in ("**", '"v1", *', "W/*"):
            assert_problem(c.patch(PATH + "/" + ben["id"], json={"name": "x"},
                                   headers={"If-Match": bad}), 400, "invalid_request")


def test_head_sends_no_body_on_the_wire(server):
    # http.client never reads a body after HEAD, so look at the bytes: a HEAD then a GET on one
    # connection must come back as two heads with exactly one body between them.
    import socket
    import ssl
    ctx = ssl.create_default_context(cafile=server.ca)
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", server.https_port), timeout=5),
                        server_hostname="127.0.0.1")
    s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    first, rest = data.split(b"\r\n\r\n", 1)
    assert first.startswith(b"HTTP/1.1 200") and b"Content-Length: 31" in first, first
    assert rest.startswith(b"HTTP/1.1 200"), rest[:80]
    assert rest.endswith(b'{"status":"ok","database":"ok"}'), rest[-80:]
