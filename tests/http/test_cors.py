"""CORS for browser apps (runtime/cors.c; each OAuth client's allowed_origins): preflights
answered for registered origins only, answers to an app's token readable by its own origins
only, the token endpoint and the metadata readable by any registered origin, never a wildcard
and never credentials."""

import uuid

import pytest

from helpers import assert_json, assert_problem, assert_validation
from oauth_flow import CLIENTS, REFRESH, TOKEN, Workspace, exchange, pkce, tokens_for

APP = "https://cash.app.example"
OTHER = "https://other.app.example"
STRANGER = "https://stranger.example"
META = "/.well-known/oauth-authorization-server"
REVOKE = "/v1/accounts/auth/oauth/revoke"


@pytest.fixture(scope="module")
def ws(server):
    return Workspace(server)


@pytest.fixture(scope="module")
def app(ws):
    return ws.register(origins=[APP, "http://localhost:5173"])


@pytest.fixture(scope="module")
def other(ws):
    return ws.register(origins=[OTHER])


def preflight(server, path, origin, method="GET", headers="authorization"):
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    with server.client() as c:
        return c.request("OPTIONS", path, headers=h)


def assert_no_cors(r):
    assert r.header("Access-Control-Allow-Origin") is None, r.headers
    assert r.header("Access-Control-Allow-Credentials") is None, r.headers


def test_a_registered_origin_is_answered_a_preflight(server, app):
    r = preflight(server, "/v1/payments", APP, "POST",
                  "authorization, content-type, idempotency-key, x-request-id")
    assert r.status == 204 and r.body == b""
    assert r.header("Access-Control-Allow-Origin") == APP
    assert r.header("Access-Control-Allow-Methods") == "GET, POST, HEAD, OPTIONS"
    allowed = {h.strip().lower() for h in r.header("Access-Control-Allow-Headers").split(",")}
    assert allowed == {"authorization", "content-type", "x-request-id", "idempotency-key",
                       "if-match"}
    assert int(r.header("Access-Control-Max-Age")) > 0
    assert "Origin" in r.header("Vary")
    assert r.header("Access-Control-Allow-Credentials") is None  # bearer tokens, no cookies
    dev = preflight(server, "/v1/payments/pay_x", "http://localhost:5173", "PATCH",
                    "authorization, content-type, if-match")
    assert dev.status == 204 and dev.header("Access-Control-Allow-Origin") == \
        "http://localhost:5173"


@pytest.mark.parametrize("path,method,headers,methods", [
    (TOKEN, "POST", "content-type", "POST, OPTIONS"),
    (REFRESH, "POST", "content-type", "POST, OPTIONS"),
    (REVOKE, "POST", "content-type", "POST, OPTIONS"),
    (META, "GET", None, "GET, HEAD, OPTIONS"),
], ids=["token", "refresh", "revoke", "metadata"])
def test_the_oauth_endpoints_and_the_metadata_are_answered_a_preflight(server, app, path, method,
                                                                       headers, methods):
    # A browser asks first whenever a request is not "simple" (a JSON body, an X-Request-ID).
    r = preflight(server, path, APP, method, headers)
    assert r.status == 204 and r.body == b"", (r.status, r.body)
    assert r.header("Access-Control-Allow-Origin") == APP
    assert r.header("Access-Control-Allow-Methods") == methods
    assert r.header("Access-Control-Allow-Credentials") is None


@pytest.mark.parametrize("origin,method,headers", [
    (STRANGER, "GET", "authorization"),           # not registered
    ("null", "GET", "authorization"),             # an opaque origin
    (APP + "/", "GET", "authorization"),          # not an origin as sent
    (APP, "DELETE", "authorization"),             # not a method of /v1/payments
    (APP, "GET", "authorization, x-evil"),        # a header not allowed
])
def test_a_preflight_is_refused_otherwise(server, app, origin, method, headers):
    r = preflight(server, "/v1/payments", origin, method, headers)
    assert_problem(r, 403, "origin_not_allowed")
    assert_no_cors(r)


def test_an_apps_token_is_readable_by_its_own_origins_only(server, ws, app, other):
    email = ws.member("treasurer")
    tok = tokens_for(server, ws, app, email)["access_token"]
    with server.client(token=tok) as c:
        own = c.get("/v1/payments", headers={"Origin": APP})
        foreign = c.get("/v1/payments", headers={"Origin": OTHER})
        stranger = c.get("/v1/payments", headers={"Origin": STRANGER})
        none = c.get("/v1/payments")
    assert own.status == 200 and own.header("Access-Control-Allow-Origin") == APP
    exposed = {h.strip() for h in own.header("Access-Control-Expose-Headers").split(",")}
    assert {"ETag", "Location", "X-Request-ID", "RateLimit", "X-RateLimit-Remaining",
            "Retry-After", "Link"} <= exposed
    assert own.header("Vary") == "Origin, Accept"  # GET /v1/payments also answers text/csv
    assert_no_cors(foreign)  # registered, but by another app
    assert_no_cors(stranger)
    assert_no_cors(none)
    # the answer depends on Origin even without one
    assert none.header("Vary") == "Origin, Accept"


def test_a_first_party_token_gets_no_cors(server, ws, app):
    with server.client(token=ws.owner_token) as c:
        r = c.get("/v1/payments", headers={"Origin": APP})
    assert r.status == 200
    assert_no_cors(r)


def test_a_refused_code_exchange_is_readable_by_the_app(server, app):
    # The browser app reads the RFC 6749 error, not an opaque network failure.
    verifier, _ = pkce()
    with server.client() as c:
        r = exchange(c, app, "not-a-code", verifier)
        seen = c.post(TOKEN, body="grant_type=authorization_code&code=not-a-code&client_id=%s"
                                  "&redirect_uri=%s&code_verifier=%s"
                                  % (app.id, app.redirect_uri, verifier),
                      token=False, content_type="application/x-www-form-urlencoded",
                      headers={"Origin": APP})
        stranger = c.post(TOKEN, body="grant_type=authorization_code&code=x", token=False,
                          content_type="application/x-www-form-urlencoded",
                          headers={"Origin": STRANGER})
    assert r.status == 400 and r.json()["error"] == "invalid_grant"
    assert_no_cors(r)  # no Origin: no CORS headers
    assert seen.status == 400 and seen.json()["error"] == "invalid_grant"
    assert seen.header("Access-Control-Allow-Origin") == APP
    assert_no_cors(stranger)


def test_a_login_is_not_readable_by_an_apps_origin(server, app):
    # First-party tokens are not for a third-party page, whoever registered its origin.
    with server.client() as c:
        r = c.post("/v1/api/login", json={"email": server.admin_email,
                                          "password": server.admin_password},
                   headers={"Origin": APP})
    assert r.status == 200
    assert_no_cors(r)


def test_the_metadata_and_a_401_are_readable_by_registered_origins(server, app):
    with server.client() as c:
        meta = c.get(META, headers={"Origin": APP})
        unregistered = c.get(META, headers={"Origin": STRANGER})
        expired = c.get("/v1/payments", headers={"Origin": APP}, token="not-a-token")
    assert meta.status == 200 and meta.header("Access-Control-Allow-Origin") == APP
    assert_no_cors(unregistered)
    assert expired.status == 401 and expired.header("Access-Control-Allow-Origin") == APP
    # The app must be able to read why: a browser hides any header not exposed.
    assert 'error="invalid_token"' in expired.header("WWW-Authenticate")
    exposed = {h.strip() for h in expired.header("Access-Control-Expose-Headers").split(",")}
    assert "WWW-Authenticate" in exposed, exposed


def test_origins_are_validated_changed_and_end_with_the_client(server, ws):
    def register(origins):
        return ws.owner.post(CLIENTS, json={"name": "Bad", "type": "public",
                                            "redirect_uris": ["https://app.example/cb"],
                                            "scopes": ["payments:read"],
                                            "allowed_origins": origins})

    # Not origins at all: refused by the schema's pattern.
    shapes = ["https://app.example/", "ftp://app.example", "https://user@app.example",
              "https://app.example?x"]
    assert_validation(register(shapes), {"/allowed_origins/%d" % i: "pattern"
                                         for i in range(len(shapes))})
    # Origins a browser never sends in this form, or that a page must not be trusted from.
    bad = ["https://App.example", "https://app.example:443", "http://app.example",
           "https://app.example:0", "https://app.example:99999", "https://-app.example",
           "https://[::1"]
    assert_validation(register(bad), {"/allowed_origins/%d" % i: "invalid_origin"
                                      for i in range(len(bad))})
    origin = "https://%s.example" % uuid.uuid4().hex[:8]
    client = ws.register(origins=[origin])
    assert client.body["allowed_origins"] == [origin]
    assert preflight(server, "/v1/payments", origin).status == 204
    moved = "https://moved-%s.example:8443" % uuid.uuid4().hex[:6]
    r = ws.owner.patch(CLIENTS + "/" + client.id, json={"allowed_origins": [moved]})
    assert assert_json(r, 200)["allowed_origins"] == [moved]
    assert assert_json(ws.owner.get(CLIENTS + "/" + client.id), 200)["allowed_origins"] == [moved]
    assert preflight(server, "/v1/payments", origin).status == 403
    assert preflight(server, "/v1/payments", moved).status == 204
    r = ws.owner.patch(CLIENTS + "/" + client.id, json={"status": "disabled"})
    assert_json(r, 200)
    assert preflight(server, "/v1/payments", moved).status == 403
    plain = ws.register()  # no origins: a server-side client
    assert plain.body["allowed_origins"] == []
