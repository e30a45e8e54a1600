"""POST /v1/api/login: the token pair, the access token's JWT header and claims, the opaque
refresh token, identical refusals for unknown email and wrong password, and workspace choice."""

import re
import threading
import time

import jwt
import pytest

from conftest import ADMIN_PASSWORD, USER_PASSWORD
from helpers import WSP_ID, assert_json, assert_problem, jwt_parts, signing_key


@pytest.fixture(scope="module")
def login(server):
    with server.client() as c:
        r = c.post("/v1/api/login", json={"email": server.admin_email,
                                         "password": server.admin_password})
    return r


def test_login_returns_the_token_pair(login):
    body = assert_json(login, 200)
    assert set(("access_token", "refresh_token", "expires_in", "token_type", "scope",
                "workspace_id")) <= set(body)
    assert body["expires_in"] == 86400 and type(body["expires_in"]) is int
    assert body["token_type"] == "Bearer"
    assert WSP_ID.match(body["workspace_id"])


def test_login_response_is_not_cacheable(login):
    assert login.header("Cache-Control") == "no-store"


def test_owner_token_carries_every_payments_scope(login):
    scopes = login.json()["scope"].split()
    assert "payments:read" in scopes and "payments:write" in scopes
    assert len(scopes) == len(set(scopes))


def test_access_token_header_is_at_jwt_hs256_with_kid(login):
    header, _ = jwt_parts(login.json()["access_token"])
    assert header["typ"] == "at+jwt"
    assert header["alg"] == "HS256"
    assert isinstance(header.get("kid"), str) and header["kid"]


def test_access_token_claims(server, login):
    body = login.json()
    _, claims = jwt_parts(body["access_token"])
    for k in ("iss", "aud", "sub", "wid", "scope", "sid", "jti", "client_id", "iat", "exp"):
        assert k in claims, "claim %s missing: %r" % (k, claims)
    assert claims["iss"] == "https://127.0.0.1:%d" % server.https_port
    assert claims["aud"] and isinstance(claims["aud"], (str, list))
    assert re.match(r"^usr_[0-9a-z]{26}$", claims["sub"]), claims["sub"]
    assert claims["wid"] == body["workspace_id"]
    assert claims["scope"] == body["scope"]
    assert claims["sid"] and claims["jti"]
    assert abs(claims["iat"] - time.time()) < 120
    assert claims["exp"] - claims["iat"] == 86400


def test_access_token_is_signed_with_the_data_dir_key(server, login):
    tok = login.json()["access_token"]
    _, claims = jwt_parts(tok)
    aud = claims["aud"] if isinstance(claims["aud"], str) else claims["aud"][0]
    decoded = jwt.decode(tok, signing_key(server.data_dir), algorithms=["HS256"], audience=aud,
                         issuer=claims["iss"])
    assert decoded["sub"] == claims["sub"]
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(tok, b"\0" * 32, algorithms=["HS256"], audience=aud)


def test_refresh_token_is_opaque_not_a_jwt(login):
    rt = login.json()["refresh_token"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{32,256}", rt), rt
    assert "." not in rt


def test_each_login_issues_new_tokens(server):
    a, b = server.login(), server.login()
    assert a["access_token"] != b["access_token"]
    assert a["refresh_token"] != b["refresh_token"]
    assert jwt_parts(a["access_token"])[1]["jti"] != jwt_parts(b["access_token"])[1]["jti"]


def test_login_token_authorises_a_read(server, login):
    with server.client(token=login.json()["access_token"]) as c:
        assert c.get("/v1/beneficiaries").status == 200


def test_email_is_compared_case_insensitively(server):
    assert server.login(server.admin_email.upper(), ADMIN_PASSWORD)["access_token"]


def test_wrong_password_and_unknown_email_get_the_identical_401(server):
    wrong = server.login_response(server.admin_email, ADMIN_PASSWORD + "x")
    unknown = server.login_response("nobody-here@example.com", ADMIN_PASSWORD)
    a = assert_problem(wrong, 401, "invalid_credentials")
    b = assert_problem(unknown, 401, "invalid_credentials")
    for k in ("type", "title", "detail", "code", "status", "instance"):
        assert a[k] == b[k], "%s differs: %r vs %r" % (k, a[k], b[k])
    assert set(a) == set(b)
    assert wrong.header("WWW-Authenticate") == unknown.header("WWW-Authenticate")
    for r in (wrong, unknown):
        assert b"access_token" not in r.body and b"refresh_token" not in r.body


def test_password_is_case_sensitive(server):
    assert_problem(server.login_response(server.admin_email, ADMIN_PASSWORD.upper()), 401,
                   "invalid_credentials")


@pytest.mark.parametrize("body, pointers", [
    ({"email": "admin@example.com"}, {"/password": "required"}),
    ({"password": "x"}, {"/email": "required"}),
    ({}, {"/email": "required", "/password": "required"}),
    ({"email": "not-an-email", "password": "x"}, {"/email": "format"}),
    ({"email": "admin@example.com", "password": ""}, {"/password": "min_length"}),
    ({"email": "admin@example.com", "password": 12345}, {"/password": "type"}),
    ({"email": "admin@example.com", "password": "x", "remember_me": True},
     {"/remember_me": "additional_property"}),
    ({"email": "admin@example.com", "password": "x", "otp": "12ab"}, {"/otp": "pattern"}),
    ({"email": "admin@example.com", "password": "x", "workspace_id": "acme"},
     {"/workspace_id": "pattern"}),
], ids=["no-password", "no-email", "empty", "bad-email", "empty-password", "number-password",
        "unknown-field", "bad-otp", "bad-workspace-id"])
def test_login_body_schema_violations_are_422(server, body, pointers):
    with server.client() as c:
        r = c.post("/v1/api/login", json=body)
    got = assert_problem(r, 422, "validation_failed")
    errs = {e["pointer"]: e["code"] for e in got["errors"]}
    for ptr, code in pointers.items():
        # A missing member may be reported at its own pointer or at the object ("").
        if code == "required" and ptr not in errs:
            assert any(e["pointer"] == "" and e["code"] == "required" and ptr[1:] in e["detail"]
                       for e in got["errors"]), got
        else:
            assert errs.get(ptr) == code, got


def test_otp_for_an_account_without_mfa_is_422_mfa_not_enrolled(server):
    r = server.login_response(otp="123456")
    assert_problem(r, 422, "mfa_not_enrolled")
    assert b"access_token" not in r.body


def test_otp_with_wrong_password_is_the_plain_401(server):
    r = server.login_response(password=ADMIN_PASSWORD + "x", otp="123456")
    assert_problem(r, 401, "invalid_credentials")


def test_login_chooses_the_requested_workspace_and_defaults_to_the_oldest(server):
    first = server.login()["workspace_id"]
    second = server.create_workspace("Second", server.admin_email)  # existing user invited
    assert second != first
    server.accept_invitation(server.owner_invitation, server.token)  # ...and joins
    assert server.login()["workspace_id"] == first
    tok = server.login(workspace_id=second)
    assert tok["workspace_id"] == second
    assert jwt_parts(tok["access_token"])[1]["wid"] == second
    assert server.login(workspace_id=first)["workspace_id"] == first


def test_login_to_a_workspace_the_user_is_not_in_is_422(server):
    other = server.create_workspace("Not mine", "someone-else@example.com", password=USER_PASSWORD)
    r = server.login_response(workspace_id=other)
    assert_problem(r, 422, "workspace_not_available")
    r = server.login_response(workspace_id="wsp_" + "0" * 26)
    assert_problem(r, 422, "workspace_not_available")


def test_workspace_choice_with_a_wrong_password_is_the_plain_401(server):
    other = server.create_workspace("Other", "someone-third@example.com", password=USER_PASSWORD)
    r = server.login_response(password="wrong", workspace_id=other)
    assert_problem(r, 401, "invalid_credentials")


def test_a_login_hashing_its_password_does_not_hold_up_other_requests(make_server):
    """With one request thread, a login (scrypt: tens of ms of CPU) is hashed on the offload
    pool, so a request sent while it hashes is answered first. Hashed on the request thread, it
    would wait for the login (and so would every connection that thread serves)."""
    s = make_server(threads=1, extra_env={"TREASURY_SCRYPT_LOG2N": "14"})  # the real cost
    order, lock = [], threading.Lock()

    def login():
        r = s.login_response()
        with lock:
            order.append(("login", r.status))

    def healthz():
        time.sleep(0.02)  # the login is hashing by now
        with s.client() as c:
            r = c.get("/healthz")
        with lock:
            order.append(("healthz", r.status))

    threads = [threading.Thread(target=login), threading.Thread(target=healthz)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert order == [("healthz", 200), ("login", 200)]
