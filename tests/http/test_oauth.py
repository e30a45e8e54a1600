"""OAuth 2.0 authorization code + PKCE (RFC 6749, RFC 7636, RFC 8414, RFC 9700): client registration, the sign-in
and consent pages, the token endpoint's RFC 6749 errors, PKCE, code replay and expiry, exact
redirect URIs, scopes, refresh binding and rotation, grants, disabling a client, the metadata
document, and what an application's token may not do."""

import base64
import shutil
import subprocess
import time
import urllib.parse
import uuid

import pytest

from helpers import (assert_json, assert_oauth_error, assert_problem, assert_safe_page,
                     assert_validation, jwt_parts)
from oauth_flow import (APP_URI, AUTHORIZE, CLIENTS, COOKIE, GRANTS, REFRESH, TOKEN, Browser,
                        Workspace, authorize_path, challenge_of, consent, exchange, form, pkce,
                        query_of, sign_in, tokens_for)
from conftest import USER_PASSWORD


@pytest.fixture(scope="module")
def ws(server):
    return Workspace(server)


@pytest.fixture(scope="module")
def app(ws):
    return ws.register()


@pytest.fixture(scope="module")
def treasurer(ws):
    return ws.member("treasurer")


# ---- metadata (B.5) --------------------------------------------------------------------------

def test_metadata_names_this_issuer_and_only_s256(server):
    r = server.client().get("/.well-known/oauth-authorization-server", token=False)
    m = assert_json(r, 200)
    assert m["issuer"] == server.issuer
    assert m["authorization_endpoint"] == server.issuer + AUTHORIZE
    assert m["token_endpoint"] == server.issuer + TOKEN
    assert m["code_challenge_methods_supported"] == ["S256"]
    assert m["response_types_supported"] == ["code"]
    assert set(m["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert "payments:read" in m["scopes_supported"]
    assert "workspace:admin" not in m["scopes_supported"]
    assert m["authorization_response_iss_parameter_supported"] is True


# ---- clients ---------------------------------------------------------------------------------

def test_registering_a_confidential_client_shows_its_secret_once(ws):
    app = ws.register("confidential", uris=["https://a.example/cb", "http://127.0.0.1/cb"])
    assert app.secret and app.secret.startswith("cs_")
    got = assert_json(ws.owner.get(CLIENTS + "/" + app.id), 200)
    assert "client_secret" not in got and got["type"] == "confidential"
    assert got["redirect_uris"] == ["https://a.example/cb", "http://127.0.0.1/cb"]
    listed = assert_json(ws.owner.get(CLIENTS + "?limit=100"), 200)["data"]
    assert app.id in [c["id"] for c in listed]
    assert all("client_secret" not in c for c in listed)


@pytest.mark.parametrize("uri", ["http://app.example/cb", "https://app.example/cb#frag",
                                 "https://user@app.example/cb", "ftp://app.example/cb",
                                 "https:///cb", "http://localhost/cb", "https://a b.example/",
                                 "http://127.0.0.1:/cb"])
def test_unsafe_redirect_uris_are_refused(ws, uri):
    r = ws.owner.post(CLIENTS, json={"name": "x", "type": "public", "redirect_uris": [uri],
                                     "scopes": ["payments:read"]})
    assert_validation(r, {"/redirect_uris/0": "invalid_redirect_uri"})


def test_scopes_must_exist_and_admin_and_signing_cannot_be_delegated(ws):
    r = ws.owner.post(CLIENTS, json={"name": "x", "type": "public", "redirect_uris": [APP_URI],
                                     "scopes": ["payments:read", "nope:read",
                                                "workspace:admin", "transfers:sign"]})
    assert_validation(r, {"/scopes/1": "unknown_scope", "/scopes/2": "scope_not_allowed",
                          "/scopes/3": "scope_not_allowed"})


def test_metadata_offers_no_withheld_scope(server):
    meta = server.client().get("/.well-known/oauth-authorization-server").json()
    assert "payments:read" in meta["scopes_supported"]
    assert "workspace:admin" not in meta["scopes_supported"]
    assert "transfers:sign" not in meta["scopes_supported"]


def test_only_administrators_manage_clients(server, ws, app):
    viewer = server.client(token=ws.token(ws.member("viewer")))
    assert_problem(viewer.get(CLIENTS), 403, "insufficient_scope")
    assert_problem(viewer.post(CLIENTS, json={"name": "x", "type": "public",
                                              "redirect_uris": [APP_URI],
                                              "scopes": ["payments:read"]}),
                   403, "insufficient_scope")
    _, _, other = server.new_workspace()
    body = assert_problem(other.get(CLIENTS + "/" + app.id), 404, "not_found")
    # x-table title: the detail names it as people write it, not as the object constant
    assert body["detail"] == "No OAuth client %s in this workspace." % app.id, body


# ---- the pages -------------------------------------------------------------------------------

def test_the_sign_in_page_is_safe_and_sets_a_host_cookie(server, app):
    _, challenge = pkce()
    b = Browser(server)
    r = b.get(authorize_path(app, challenge))
    assert r.status == 200
    assert_safe_page(r)
    assert 'id="sign-in-form"' in r.text and 'id="email"' in r.text and 'id="password"' in r.text
    cookie = r.header("Set-Cookie")
    assert cookie.startswith(COOKIE + "=")
    for attr in ("Path=/", "Secure", "HttpOnly", "SameSite=Lax"):
        assert attr in cookie
    assert "Domain" not in cookie
    assert app.body["name"] in r.text
    h = Browser.hidden(r)
    # nothing stored before signing in: the request travels sealed in the form
    assert h["request_id"].startswith("v1.") and len(h["csrf"]) == 43


def test_full_flow_gives_a_token_that_works_like_a_login_token(server, ws, app, treasurer):
    verifier, challenge = pkce()
    b = Browser(server)
    page = b.get(authorize_path(app, challenge, state="xyz 1/2"))
    r = sign_in(b, page, treasurer)
    assert r.status == 303 and r.header("Location").startswith(AUTHORIZE + "?")
    page = b.get(r.header("Location"))
    assert_safe_page(page)
    assert 'id="approve"' in page.text and 'id="deny"' in page.text
    assert "View payments and beneficiaries." in page.text
    assert "form-action 'self' https://app.example" in page.header("Content-Security-Policy")
    h = Browser.hidden(page)
    r = b.post(AUTHORIZE + "/decision", request_id=h["request_id"], csrf=h["csrf"],
               decision="approve")
    assert r.status == 302
    loc = r.header("Location")
    assert loc.startswith(APP_URI + "?")
    q = query_of(loc)
    assert q["state"] == "xyz 1/2" and q["iss"] == server.issuer and len(q["code"]) == 43
    t = exchange(server.client(), app, q["code"], verifier)
    tok = assert_json(t, 200)
    assert t.header("Cache-Control") == "no-store" and t.header("Pragma") == "no-cache"
    assert tok["token_type"] == "Bearer" and tok["refresh_token"]
    assert tok["scope"] == "payments:read payments:write"
    claims = jwt_parts(tok["access_token"])[1]
    assert claims["client_id"] == app.id and claims["wid"] == ws.wid
    c = server.client(token=tok["access_token"])
    assert assert_json(c.get("/v1/payments"), 200)["data"] is not None
    # An application's token cannot manage the user's own account.
    for path in ("/v1/accounts/sessions", "/v1/accounts/mfa", GRANTS):
        assert_problem(c.get(path), 403, "insufficient_scope")


def test_the_rfc_7636_vector_verifies(server, app, treasurer):
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    assert challenge_of(verifier) == challenge
    r = consent(server, app, treasurer, challenge)
    assert_json(exchange(server.client(), app, query_of(r.header("Location"))["code"],
                         verifier), 200)


def test_deny_redirects_with_access_denied_and_the_state(server, app, treasurer):
    _, challenge = pkce()
    r = consent(server, app, treasurer, challenge, decision="deny", state="s-42")
    q = query_of(r.header("Location"))
    assert q["error"] == "access_denied" and q["state"] == "s-42" and "code" not in q
    assert q["iss"] == server.issuer


def test_a_signed_in_browser_goes_straight_to_consent(server, app, treasurer):
    _, challenge = pkce()
    b = Browser(server)
    consent(server, app, treasurer, challenge, browser=b)
    again = b.get(authorize_path(app, pkce()[1]))
    assert 'id="consent-form"' in again.text and 'id="sign-in-form"' not in again.text


def test_wrong_credentials_show_the_page_again_and_reveal_nothing(server, app, treasurer):
    _, challenge = pkce()
    b = Browser(server)
    page = b.get(authorize_path(app, challenge))
    wrong = sign_in(b, page, treasurer, password="not-the-password-123")
    unknown = sign_in(b, page, "nobody-%s@example.com" % uuid.uuid4().hex[:6])
    for r in (wrong, unknown):
        assert r.status == 400 and 'id="sign-in-form"' in r.text
        assert "The email or password is incorrect." in r.text
    assert wrong.text.replace(treasurer, "") .count("incorrect") == \
        unknown.text.count("incorrect")


def test_forms_need_the_cookie_and_the_csrf_token(server, app, treasurer):
    _, challenge = pkce()
    b = Browser(server)
    page = b.get(authorize_path(app, challenge))
    h = Browser.hidden(page)
    r = b.post(AUTHORIZE + "/sign-in", request_id=h["request_id"], csrf="x" * 43,
               email=treasurer, password=USER_PASSWORD)
    assert r.status == 400 and 'id="error"' in r.text and "CSRF" in r.text
    stranger = Browser(server)
    r = stranger.post(AUTHORIZE + "/sign-in", request_id=h["request_id"], csrf=h["csrf"],
                      email=treasurer, password=USER_PASSWORD)
    assert r.status == 400 and 'id="error"' in r.text
    # another browser's request id is not this browser's
    other = Browser(server)
    other_page = other.get(authorize_path(app, challenge))
    r = b.post(AUTHORIZE + "/sign-in", request_id=Browser.hidden(other_page)["request_id"],
               csrf=h["csrf"], email=treasurer, password=USER_PASSWORD)
    assert r.status == 400 and "expired" in r.text


def test_a_decision_is_taken_once(server, app, treasurer):
    _, challenge = pkce()
    b = Browser(server)
    r = consent(server, app, treasurer, challenge, browser=b)
    assert r.status == 302
    page = b.get(authorize_path(app, challenge))
    h = Browser.hidden(page)
    assert b.post(AUTHORIZE + "/decision", request_id=h["request_id"], csrf=h["csrf"],
                  decision="approve").status == 302
    r = b.post(AUTHORIZE + "/decision", request_id=h["request_id"], csrf=h["csrf"],
               decision="approve")
    assert r.status == 400 and r.header("Location") is None


# ---- bad clients and redirect URIs never redirect (B.2) ---------------------------------------

@pytest.mark.parametrize("change", [
    lambda u: u + "/", lambda u: u + "?x=1", lambda u: u.replace("app.example", "APP.example"),
    lambda u: u.replace("app.example", "app.example:8443"), lambda u: u.replace("https", "http"),
])
def test_a_redirect_uri_not_registered_exactly_gets_an_error_page(server, app, change):
    b = Browser(server)
    r = b.get(authorize_path(app, pkce()[1], redirect_uri=change(APP_URI)))
    assert r.status == 400 and r.header("Location") is None
    assert_safe_page(r)
    assert 'id="error"' in r.text and 'data-code="invalid_redirect_uri"' in r.text


def test_an_unknown_client_gets_an_error_page(server, app):
    for cid in ("cli_" + "0" * 26, "not-a-client", ""):
        path = authorize_path(app, pkce()[1], client_id=cid)
        r = Browser(server).get(path if cid else path.replace("client_id=&", ""))
        assert r.status == 400 and r.header("Location") is None
        assert 'data-code="unknown_client"' in r.text


def test_loopback_redirects_may_use_any_port(server, ws, treasurer):
    native = ws.register(uris=["http://127.0.0.1/callback"], scopes=["payments:read"])
    verifier, challenge = pkce()
    r = consent(server, native, treasurer, challenge,
                redirect_uri="http://127.0.0.1:51234/callback")
    assert r.header("Location").startswith("http://127.0.0.1:51234/callback?code=")
    q = query_of(r.header("Location"))
    assert_json(exchange(server.client(), native, q["code"], verifier,
                         redirect_uri="http://127.0.0.1:51234/callback"), 200)


@pytest.mark.parametrize("params,error", [
    ({"response_type": "token"}, "unsupported_response_type"),
    ({"challenge": None}, "invalid_request"),
    ({"method": "plain"}, "invalid_request"),
    ({"method": None}, "invalid_request"),
    ({"challenge": "short"}, "invalid_request"),
    ({"scope": "payments:read ledger:write"}, "invalid_scope"),
])
def test_request_errors_go_back_to_a_trusted_redirect_uri(server, app, params, error):
    p = dict(params)
    challenge = p.pop("challenge", pkce()[1])
    r = Browser(server).get(authorize_path(app, challenge, state="keep-me", **p))
    assert r.status == 302
    q = query_of(r.header("Location"))
    assert q["error"] == error and q["state"] == "keep-me" and q["iss"] == server.issuer


# ---- the token endpoint (B.1, B.2) -----------------------------------------------------------

def code_and_verifier(server, app, email, **authz):
    verifier, challenge = pkce()
    r = consent(server, app, email, challenge, **authz)
    return query_of(r.header("Location"))["code"], verifier


def test_a_wrong_verifier_is_invalid_grant_and_spends_the_code(server, app, treasurer):
    code, verifier = code_and_verifier(server, app, treasurer)
    assert_oauth_error(exchange(server.client(), app, code, pkce()[0]), 400, "invalid_grant")
    assert_oauth_error(exchange(server.client(), app, code, verifier), 400, "invalid_grant")


@pytest.mark.parametrize("verifier", ["a" * 42, "a" * 129, "a" * 42 + "+", "a" * 42 + "/",
                                      "a" * 42 + "="])
def test_a_malformed_verifier_is_invalid_request(server, app, treasurer, verifier):
    code, _ = code_and_verifier(server, app, treasurer)
    assert_oauth_error(exchange(server.client(), app, code, verifier), 400, "invalid_request")


def test_verifiers_of_43_and_128_characters_work(server, app, treasurer):
    for n in (43, 128):
        verifier = ("A1-._~" * 30)[:n]
        r = consent(server, app, treasurer, challenge_of(verifier))
        code = query_of(r.header("Location"))["code"]
        assert_json(exchange(server.client(), app, code, verifier), 200)


def test_a_replayed_code_is_refused_and_revokes_its_tokens(server, app, treasurer):
    code, verifier = code_and_verifier(server, app, treasurer)
    tok = assert_json(exchange(server.client(), app, code, verifier), 200)
    c = server.client(token=tok["access_token"])
    assert c.get("/v1/payments").status == 200
    assert_oauth_error(exchange(server.client(), app, code, verifier), 400, "invalid_grant")
    assert_problem(c.get("/v1/payments"), 401, "invalid_token")
    r = server.client().post(TOKEN, token=False, content_type="application/x-www-form-urlencoded",
                             body=form(grant_type="refresh_token",
                                       refresh_token=tok["refresh_token"], client_id=app.id))
    assert_oauth_error(r, 400, "invalid_grant")


def test_a_code_expires_after_a_minute(make_server):
    s = make_server()  # its own clock: moving a shared server's clock back upsets its quotas
    ws = Workspace(s)
    app = ws.register()
    code, verifier = code_and_verifier(s, app, ws.member("treasurer"))
    s.move_clock(61)
    assert_oauth_error(exchange(s.client(), app, code, verifier), 400, "invalid_grant")


def test_a_code_is_bound_to_its_client_and_redirect_uri(server, ws, app, treasurer):
    other = ws.register()
    code, verifier = code_and_verifier(server, app, treasurer)
    assert_oauth_error(exchange(server.client(), other, code, verifier), 400, "invalid_grant")
    assert_oauth_error(exchange(server.client(), app, code, verifier, redirect_uri=APP_URI + "/"),
                  400, "invalid_grant")
    assert_json(exchange(server.client(), app, code, verifier), 200)  # still unused


@pytest.mark.parametrize("fields,error", [
    ({"grant_type": "password", "username": None}, "unsupported_grant_type"),
    ({"grant_type": None}, "invalid_request"),
    ({"code_verifier": None}, "invalid_request"),
    ({"redirect_uri": None}, "invalid_request"),
    ({"code": None}, "invalid_request"),
])
def test_malformed_token_requests_use_rfc_6749_errors(server, app, fields, error):
    base = dict(grant_type="authorization_code", code="c" * 43, client_id=app.id,
                redirect_uri=APP_URI, code_verifier=pkce()[0])
    base.update(fields)
    r = server.client().post(TOKEN, body=form(**base), token=False,
                             content_type="application/x-www-form-urlencoded")
    assert_oauth_error(r, 400, error)


def test_a_json_token_request_works_too(server, app, treasurer):
    code, verifier = code_and_verifier(server, app, treasurer)
    r = server.client().post(TOKEN, token=False, json={
        "grant_type": "authorization_code", "code": code, "client_id": app.id,
        "redirect_uri": APP_URI, "code_verifier": verifier})
    assert_json(r, 200)


# ---- confidential clients --------------------------------------------------------------------

def test_confidential_clients_authenticate(server, ws, treasurer):
    app = ws.register("confidential")
    code, verifier = code_and_verifier(server, app, treasurer)
    assert_oauth_error(exchange(server.client(), app, code, verifier), 401, "invalid_client")
    basic = "Basic " + base64.b64encode(("%s:%s" % (app.id, "cs_wrong")).encode()).decode()
    r = server.client().post(TOKEN, token=False, headers={"Authorization": basic},
                             content_type="application/x-www-form-urlencoded",
                             body=form(grant_type="authorization_code", code=code,
                                       redirect_uri=APP_URI, code_verifier=verifier))
    assert_oauth_error(r, 401, "invalid_client")
    assert r.header("WWW-Authenticate") == 'Basic realm="treasury"'
    good = "Basic " + base64.b64encode(("%s:%s" % (
        urllib.parse.quote(app.id, safe=""), urllib.parse.quote(app.secret, safe=""))
        ).encode()).decode()
    r = server.client().post(TOKEN, token=False, headers={"Authorization": good},
                             content_type="application/x-www-form-urlencoded",
                             body=form(grant_type="authorization_code", code=code,
                                       redirect_uri=APP_URI, code_verifier=verifier))
    assert_json(r, 200)
    code, verifier = code_and_verifier(server, app, treasurer)
    assert_json(exchange(server.client(), app, code, verifier, client_secret=app.secret), 200)


def test_a_public_client_sending_a_secret_is_refused(server, app, treasurer):
    code, verifier = code_and_verifier(server, app, treasurer)
    assert_oauth_error(exchange(server.client(), app, code, verifier, client_secret="cs_x"), 401,
                  "invalid_client")


# ---- scopes and refresh (B.6) ----------------------------------------------------------------

def test_scopes_are_requested_and_client_and_role(server, ws, app):
    viewer = ws.member("viewer")  # payments:read only among the app's scopes
    tok = tokens_for(server, ws, app, viewer)
    assert tok["scope"] == "payments:read"
    narrowed = tokens_for(server, ws, app, ws.member("treasurer"), scope="payments:read")
    assert narrowed["scope"] == "payments:read"


def test_refresh_rotates_and_is_bound_to_the_client(server, ws, app, treasurer):
    tok = tokens_for(server, ws, app, treasurer)

    def refresh(rt, **extra):
        return server.client().post(TOKEN, token=False,
                                    content_type="application/x-www-form-urlencoded",
                                    body=form(grant_type="refresh_token", refresh_token=rt,
                                              **extra))

    assert_oauth_error(refresh(tok["refresh_token"], client_id=ws.register().id), 400,
                  "invalid_grant")
    assert_oauth_error(refresh(tok["refresh_token"], client_id=app.id,
                          scope="payments:read ledger:read"), 400, "invalid_scope")
    r = server.client().post(REFRESH, token=False, json={"refresh_token": tok["refresh_token"]})
    assert_oauth_error(r, 400, "invalid_grant")  # a login's endpoint without the client
    new = assert_json(refresh(tok["refresh_token"], client_id=app.id, scope="payments:read"),
                      200)
    assert new["refresh_token"] != tok["refresh_token"] and new["scope"] == "payments:read"
    assert jwt_parts(new["access_token"])[1]["client_id"] == app.id
    via_refresh_endpoint = server.client().post(
        REFRESH, token=False, json={"refresh_token": new["refresh_token"], "client_id": app.id})
    newest = assert_json(via_refresh_endpoint, 200)
    # The used token again: the whole family ends.
    assert_oauth_error(refresh(new["refresh_token"], client_id=app.id), 400, "invalid_grant")
    assert_oauth_error(refresh(newest["refresh_token"], client_id=app.id), 400, "invalid_grant")
    assert_problem(server.client(token=newest["access_token"]).get("/v1/payments"), 401,
                   "invalid_token")


def test_a_login_refresh_token_is_not_an_applications(server, ws, app):
    login = server.login(ws.owner_email, USER_PASSWORD, workspace_id=ws.wid)
    r = server.client().post(TOKEN, token=False, content_type="application/x-www-form-urlencoded",
                             body=form(grant_type="refresh_token",
                                       refresh_token=login["refresh_token"], client_id=app.id))
    assert_oauth_error(r, 400, "invalid_grant")


# ---- grants ----------------------------------------------------------------------------------

def test_users_see_and_revoke_their_grants(server, ws, treasurer):
    app = ws.register(name="Forecast Pro")
    tok = tokens_for(server, ws, app, treasurer)
    me = server.client(token=ws.token(treasurer))
    grants = assert_json(me.get(GRANTS), 200)["data"]
    mine = [g for g in grants if g["client_id"] == app.id]
    assert len(mine) == 1 and mine[0]["client_name"] == "Forecast Pro"
    assert mine[0]["scopes"] == ["payments:read", "payments:write"]
    owner_view = assert_json(ws.owner.get(GRANTS), 200)["data"]
    assert app.id not in [g["client_id"] for g in owner_view]
    assert_problem(ws.owner.delete(GRANTS + "/" + mine[0]["id"]), 404, "not_found")
    assert me.delete(GRANTS + "/" + mine[0]["id"]).status == 204
    assert_problem(server.client(token=tok["access_token"]).get("/v1/payments"), 401,
                   "invalid_token")
    r = server.client().post(TOKEN, token=False, content_type="application/x-www-form-urlencoded",
                             body=form(grant_type="refresh_token",
                                       refresh_token=tok["refresh_token"], client_id=app.id))
    assert_oauth_error(r, 400, "invalid_grant")
    assert_problem(me.delete(GRANTS + "/" + mine[0]["id"]), 404, "not_found")


def test_disabling_a_client_ends_its_tokens_and_authorizations(server, ws, treasurer):
    app = ws.register()
    tok = tokens_for(server, ws, app, treasurer)
    code, verifier = code_and_verifier(server, app, treasurer)
    r = ws.owner.patch(CLIENTS + "/" + app.id, json={"status": "disabled"},
                       headers={"If-Match": '"v1"'})
    assert assert_json(r, 200)["status"] == "disabled"
    assert_problem(server.client(token=tok["access_token"]).get("/v1/payments"), 401,
                   "invalid_token")
    assert_oauth_error(exchange(server.client(), app, code, verifier), 401, "invalid_client")
    page = Browser(server).get(authorize_path(app, pkce()[1]))
    assert page.status == 400 and 'data-code="unknown_client"' in page.text
    assert_problem(ws.owner.patch(CLIENTS + "/" + app.id, json={"status": "active"},
                                  headers={"If-Match": '"v1"'}), 412, "precondition_failed")


def test_a_user_outside_the_clients_workspace_cannot_consent(server, app):
    _, _, _ = server.new_workspace()
    outsider = "out-%s@example.com" % uuid.uuid4().hex[:8]
    wid = server.create_workspace("other-" + outsider[4:12], outsider, password=USER_PASSWORD)
    assert wid
    b = Browser(server)
    page = b.get(authorize_path(app, pkce()[1]))
    r = sign_in(b, page, outsider)
    assert r.status == 303
    again = b.get(r.header("Location"))
    assert 'id="sign-in-form"' in again.text and "not a member" in again.text


# ---- MFA on the sign-in page ----------------------------------------------------------------

@pytest.mark.skipif(shutil.which("oathtool") is None, reason="oathtool is not installed")
def test_an_mfa_account_enters_its_code_before_consenting(make_server):
    server = make_server()
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("treasurer")
    me = server.client(token=ws.token(email))
    reauth = {"current_password": USER_PASSWORD}
    enrolled = assert_json(me.post("/v1/accounts/mfa/enroll", json=reauth), 201)

    def code(at):
        return subprocess.run(["oathtool", "--totp", "-b", enrolled["secret"], "-N", "@%d" % at],
                              capture_output=True, text=True, check=True).stdout.strip()

    assert_json(me.post("/v1/accounts/mfa/confirm", json={"code": code(time.time())}), 200)
    b = Browser(server)
    page = b.get(authorize_path(app, pkce()[1]))
    r = sign_in(b, page, email)
    assert r.status == 200 and 'id="otp"' in r.text and 'id="verify"' in r.text
    h = Browser.hidden(r)
    wrong = b.post(AUTHORIZE + "/verify", request_id=h["request_id"], csrf=h["csrf"],
                   otp="000000" if code(time.time() + 30) != "000000" else "111111")
    assert wrong.status == 400 and "wrong" in wrong.text
    server.move_clock(31)  # the enrolment code's step is used; take the next one
    right = b.post(AUTHORIZE + "/verify", request_id=h["request_id"], csrf=h["csrf"],
                   otp=code(time.time() + 31))
    assert right.status == 303 and right.header("Set-Cookie").startswith(COOKIE + "=")
    assert 'id="consent-form"' in b.get(right.header("Location")).text


# ---- the built-in callback page --------------------------------------------------------------

def test_the_callback_page_shows_the_code_escaped(server):
    r = server.client().get("/v1/auth/oauth/callback?" + form(code="<b>abc</b>", state="s&1"),
                            token=False)
    assert r.status == 200
    assert_safe_page(r)
    assert "&lt;b&gt;abc&lt;/b&gt;" in r.text and "<b>abc" not in r.text
    assert "s&amp;1" in r.text
    r = server.client().get("/v1/auth/oauth/callback?error=access_denied", token=False)
    assert 'id="error"' in r.text and "access_denied" in r.text
