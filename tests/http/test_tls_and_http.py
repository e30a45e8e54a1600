"""Transport: HTTPS only (plain HTTP answers 400 use_https on any path), certificate checks,
TLS versions, keep-alive, HSTS, and the public meta endpoints."""

import json
import socket
import ssl

import pytest

from conftest import REPO
from helpers import assert_json, assert_problem, assert_rate_limit_headers


@pytest.mark.parametrize("method, path", [
    ("GET", "/"),
    ("GET", "/healthz"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/v1/beneficiaries"),
    ("POST", "/v1/api/login"),
    ("DELETE", "/v1/no/such/path"),
])
def test_plain_http_answers_400_use_https_on_any_path(server, method, path):
    with server.plain_client() as c:
        body = b'{"email":"admin@example.com","password":"x"}' if method == "POST" else None
        hdrs = {"Content-Type": "application/json"} if body else None
        r = c.request(method, path, body=body, headers=hdrs)
    p = assert_problem(r, 400, "use_https")
    assert "https" in p["detail"].lower()


def test_plain_http_login_does_not_issue_tokens(server):
    with server.plain_client() as c:
        r = c.post("/v1/api/login", json={"email": server.admin_email,
                                          "password": server.admin_password})
    assert r.status == 400
    assert b"access_token" not in r.body


def test_tls_handshake_with_plain_http_client_on_https_port_fails_cleanly(server):
    # A plain-HTTP request sent to the TLS port gets no HTTP answer (no 200, no data leak).
    s = socket.create_connection(("127.0.0.1", server.https_port), timeout=5)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            data = s.recv(4096)
        except (ConnectionResetError, socket.timeout):
            data = b""
    finally:
        s.close()
    assert b"HTTP/1.1 200" not in data and b'"status"' not in data
    with server.client() as c:  # and the server is still fine
        assert c.get("/healthz").status == 200


def test_untrusted_ca_is_rejected_by_client(server, tmp_path):
    # Sanity check of the test client: without the server's cert as CA, verification fails.
    ctx = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(raw, server_hostname="127.0.0.1")


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_1_2_and_1_3_are_served(server, version):
    ctx = ssl.create_default_context(cafile=server.ca)
    ctx.minimum_version = version
    ctx.maximum_version = version
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2",
                                     ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]


def test_keep_alive_reuses_one_connection(server):
    with server.client() as c:
        assert c.get("/healthz").status == 200
        sock = c._conn.sock
        for _ in range(5):
            assert c.get("/healthz").status == 200
        assert c._conn is not None and c._conn.sock is sock


def test_https_responses_carry_hsts_and_no_store(server):
    with server.client() as c:
        r = c.get("/healthz")
    assert "max-age=" in (r.header("Strict-Transport-Security") or "")
    assert r.header("Cache-Control") == "no-store"


def test_healthz_reports_ok_without_a_token(server):
    with server.client() as c:
        r = c.get("/healthz")
    assert assert_json(r, 200) == {"status": "ok", "database": "ok"}
    assert r.header("X-Request-ID")


def test_healthz_lives_outside_v1(server):
    with server.client() as c:
        assert_problem(c.get("/v1/healthz"), 404, "not_found")


def test_openapi_json_is_public_and_is_the_bundled_3_1_document(server):
    with server.client() as c:
        r = c.get("/v1/openapi.json")
    doc = assert_json(r, 200)
    assert doc["openapi"] == "3.1.0"
    assert doc["servers"] == [{"url": "/v1"}] or doc["servers"][0]["url"] == "/v1"
    for p in ("/beneficiaries", "/beneficiaries/{id}", "/api/login", "/openapi.json", "/healthz"):
        assert p in doc["paths"], p
    assert "bearerAuth" in doc["components"]["securitySchemes"]
    refs = list(all_refs(doc))
    assert all(r.startswith("#/") for r in refs), [r for r in refs if not r.startswith("#/")]
    bundled = REPO / "generated" / "openapi.json"
    if bundled.exists():
        assert json.loads(bundled.read_text()) == doc


def all_refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from all_refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from all_refs(v)


def test_head_or_unknown_method_on_public_path_is_405_with_allow(server):
    with server.client() as c:
        r = c.request("POST", "/healthz", body=b"{}", headers={"Content-Type": "application/json"})
    assert_problem(r, 405, "method_not_allowed")
    assert "GET" in [m.strip() for m in r.header("Allow", "").split(",")]


def test_rate_limit_headers_on_public_responses(server):
    with server.client() as c:
        for path in ("/healthz", "/v1/openapi.json"):
            assert_rate_limit_headers(c.get(path))
