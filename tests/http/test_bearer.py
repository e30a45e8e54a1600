"""The bearer check (RFC 6750, RFC 8725, RFC 9068) with the libjwt 1.10.2 traps (README,
Dependencies): tokens forged with PyJWT and by hand, using the data-dir key where the point is a
correctly signed token with one bad property. Every refusal is 401 + error="invalid_token";
no token is 401 without an error code; a valid token lacking the scope is 403."""

import json
import os
import socket
import threading
import time

import jwt
import pytest

from conftest import USER_PASSWORD
from helpers import Forger, assert_json, assert_problem, b64url, beneficiary, signing_key

PATH = "/v1/beneficiaries"


@pytest.fixture(scope="module")
def forger(server):
    return Forger(server.token, signing_key(server.data_dir))


@pytest.fixture(scope="module")
def viewer_token(server):
    wid = server.login()["workspace_id"]
    server.create_user(wid, "viewer-bearer@example.com", "viewer")
    return server.login("viewer-bearer@example.com", USER_PASSWORD)["access_token"]


def get_with(server, auth_header):
    with server.client() as c:
        return c.get(PATH, headers={"Authorization": auth_header} if auth_header is not None
                     else None, token=False)


def assert_invalid_token(r):
    assert_problem(r, 401, "invalid_token")
    www = r.header("WWW-Authenticate") or ""
    assert www.startswith("Bearer "), www
    assert 'error="invalid_token"' in www, www
    assert www.count("realm=") <= 1
    assert b'"data"' not in r.body


def refused(server, token):
    assert_invalid_token(get_with(server, "Bearer " + token))


# ---- harness sanity: a forged token with nothing wrong is accepted -------------------------

def test_forged_token_with_correct_claims_is_accepted(server, forger):
    r = get_with(server, "Bearer " + forger.make())
    assert_json(r, 200)


def test_real_login_token_is_accepted(server):
    assert_json(get_with(server, "Bearer " + server.token), 200)


def test_bearer_scheme_is_case_insensitive(server):
    assert get_with(server, "bearer " + server.token).status == 200


# ---- missing credentials -------------------------------------------------------------------

def test_no_authorization_header_is_401_with_bare_bearer_challenge(server):
    r = get_with(server, None)
    assert_problem(r, 401, "unauthorized")
    www = r.header("WWW-Authenticate")
    assert www is not None and www.startswith("Bearer"), www
    assert 'realm="treasury"' in www, www
    assert "error=" not in www, www


def test_empty_authorization_header_is_401(server):
    r = get_with(server, "")
    assert_problem(r, 401)
    assert (r.header("WWW-Authenticate") or "").startswith("Bearer")


# ---- malformed and wrongly signed tokens ---------------------------------------------------

def test_alg_none_token_is_refused_with_invalid_token(server, forger):
    refused(server, jwt.encode(forger.claims_now(), None, algorithm="none",
                               headers={"typ": "at+jwt", "kid": forger.header["kid"]}))


def test_alg_none_with_a_valid_hs256_signature_attached_is_refused(server, forger):
    good = forger.make()
    h = b64url(json.dumps({"alg": "none", "typ": "at+jwt", "kid": forger.header["kid"]}).encode())
    _, p, s = good.split(".")
    refused(server, "%s.%s.%s" % (h, p, s))


def test_token_signed_with_another_key_is_refused_with_invalid_token(server, forger):
    refused(server, forger.make(key=os.urandom(32)))


def test_token_signed_with_the_hex_text_instead_of_the_key_bytes_is_refused(server, forger):
    hex_text = (server.data_dir / "jwt-signing.key").read_text().strip().encode()
    refused(server, forger.make(key=hex_text))


def test_hs512_token_with_the_right_key_is_refused_with_invalid_token(server, forger):
    refused(server, forger.make(alg="HS512"))


def test_hs384_token_with_the_right_key_is_refused(server, forger):
    refused(server, forger.make(alg="HS384"))


def test_rs256_header_on_an_hs256_signature_is_refused(server, forger):
    h = {"alg": "RS256", "typ": "at+jwt", "kid": forger.header["kid"]}
    refused(server, forger.raw(h, json.dumps(forger.claims_now()).encode()))


def test_signature_stripped_is_refused(server, forger):
    h, p, _ = forger.make().split(".")
    refused(server, "%s.%s." % (h, p))


def test_truncated_token_is_refused_with_invalid_token(server):
    refused(server, server.token[:-6])


def test_token_with_a_flipped_payload_bit_is_refused(server):
    h, p, s = server.token.split(".")
    p = p[:10] + ("A" if p[10] != "A" else "B") + p[11:]
    refused(server, "%s.%s.%s" % (h, p, s))


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "...", "e30.e30.", "e30.e30.e30",
                                     "%%%.%%%.%%%", "ey" * 100])
def test_garbage_token_is_refused_with_invalid_token(server, garbage):
    refused(server, garbage)


def test_four_part_token_is_refused(server):
    refused(server, server.token + ".AAAA")


def test_basic_scheme_is_refused_with_invalid_token(server):
    r = get_with(server, "Basic YWRtaW5AZXhhbXBsZS5jb206eA==")
    assert_invalid_token(r)


def test_token_without_scheme_is_refused(server):
    assert_invalid_token(get_with(server, server.token))


def test_huge_token_is_refused_with_invalid_token(server, forger):
    refused(server, forger.make(pad="x" * 9000))


def test_non_utf8_payload_is_refused_even_when_correctly_signed(server, forger):
    payload = json.dumps(forger.claims_now()).encode().replace(b'"sid"', b'"s\xffid"')
    refused(server, forger.raw(dict(forger.header), payload))


def test_payload_that_is_not_json_is_refused_even_when_correctly_signed(server, forger):
    refused(server, forger.raw(dict(forger.header), b"not json"))


# ---- correctly signed tokens with bad claims or header -------------------------------------

def test_expired_token_is_refused_with_invalid_token(server, forger):
    now = int(time.time())
    refused(server, forger.make(iat=now - 7200, exp=now - 3600))


def test_token_expired_beyond_small_leeway_is_refused(server, forger):
    now = int(time.time())
    refused(server, forger.make(iat=now - 7200, exp=now - 120))


def test_not_yet_valid_token_is_refused_with_invalid_token(server, forger):
    refused(server, forger.make(nbf=int(time.time()) + 3600))


def test_token_issued_in_the_future_is_refused(server, forger):
    now = int(time.time())
    refused(server, forger.make(iat=now + 3600, exp=now + 7200))


def test_wrong_issuer_is_refused_with_invalid_token(server, forger):
    refused(server, forger.make(iss="https://evil.example"))


def test_issuer_of_another_port_is_refused(server, forger):
    refused(server, forger.make(iss="https://127.0.0.1:%d" % (server.https_port + 1)))


def test_wrong_audience_is_refused_with_invalid_token(server, forger):
    refused(server, forger.make(aud="some-other-api"))


def test_audience_list_without_us_is_refused(server, forger):
    refused(server, forger.make(aud=["some-other-api", "yet-another"]))


@pytest.mark.parametrize("claim", ["iss", "aud", "exp", "iat", "sub", "wid", "jti", "sid", "scope",
                                   "client_id"])
def test_token_missing_a_required_claim_is_refused(server, forger, claim):
    tok = forger.make(**{claim: None})
    assert claim not in jwt.decode(tok, options={"verify_signature": False})
    refused(server, tok)


@pytest.mark.parametrize("claim, value", [("exp", "tomorrow"), ("iat", "now"), ("sub", 42),
                                          ("wid", None), ("scope", ["payments:read"])])
def test_token_with_a_mistyped_claim_is_refused(server, forger, claim, value):
    if value is None:
        value = ["wsp_x"]
    refused(server, forger.make(**{claim: value}))


@pytest.mark.parametrize("typ", ["JWT", "jwt", "at+JWT+x", "", None])
def test_wrong_typ_is_refused_with_invalid_token(server, forger, typ):
    if typ is None:
        refused(server, forger.raw({"alg": "HS256", "kid": forger.header["kid"]},
                                   json.dumps(forger.claims_now()).encode()))
    else:
        refused(server, forger.raw({"alg": "HS256", "typ": typ, "kid": forger.header["kid"]},
                                   json.dumps(forger.claims_now()).encode()))


def test_jku_header_is_never_fetched(server, forger):
    """RFC 8725 §3.10 / OWASP API7: a jku pointing at us must not make the server connect."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4)
    lsock.settimeout(0.2)
    port = lsock.getsockname()[1]
    hits = []

    def watch():
        end = time.monotonic() + 2
        while time.monotonic() < end:
            try:
                conn, _ = lsock.accept()
                hits.append(1)
                conn.close()
            except OSError:
                pass

    t = threading.Thread(target=watch)
    t.start()
    try:
        tok = forger.make(key=os.urandom(32),
                          header={"jku": "https://127.0.0.1:%d/jwks.json" % port,
                                  "x5u": "https://127.0.0.1:%d/cert.pem" % port})
        refused(server, tok)
    finally:
        t.join()
        lsock.close()
    assert hits == [], "the server connected to the jku/x5u address"


def test_refused_tokens_grant_no_write(server, forger):
    with server.client() as c:
        r = c.post(PATH, json=beneficiary(name="forged-write", external_id=None),
                   token=forger.make(key=os.urandom(32)))
    assert_invalid_token(r)
    with server.client(token=server.token) as c:
        names = [b["name"] for b in c.get(PATH + "?limit=100").json()["data"]]
    assert "forged-write" not in names


# ---- scopes --------------------------------------------------------------------------------

def test_viewer_can_read(server, viewer_token):
    with server.client(token=viewer_token) as c:
        assert_json(c.get(PATH), 200)


def test_viewer_token_on_create_is_403_insufficient_scope(server, viewer_token):
    with server.client(token=viewer_token) as c:
        r = c.post(PATH, json=beneficiary(name="viewer-write", external_id=None))
    assert_problem(r, 403, "insufficient_scope")
    www = r.header("WWW-Authenticate") or ""
    assert www.startswith("Bearer "), www
    assert 'error="insufficient_scope"' in www, www
    assert 'scope="payments:write"' in www, www
    with server.client(token=server.token) as c:
        names = [b["name"] for b in c.get(PATH + "?limit=100").json()["data"]]
    assert "viewer-write" not in names


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_viewer_cannot_change_or_archive(server, viewer_token, method):
    with server.client(token=server.token) as owner:
        ben = owner.post(PATH, json=beneficiary(external_id=None)).json()
    with server.client(token=viewer_token) as c:
        r = c.request(method, PATH + "/" + ben["id"],
                      json={"name": "hijacked"} if method == "PATCH" else None)
    assert_problem(r, 403, "insufficient_scope")
    with server.client(token=server.token) as owner:
        after = owner.get(PATH + "/" + ben["id"]).json()
        assert after == ben
        owner.delete(PATH + "/" + ben["id"])


def test_forged_token_with_read_scope_only_cannot_write(server, forger):
    with server.client() as c:
        r = c.post(PATH, json=beneficiary(), token=forger.make(scope="payments:read"))
    assert_problem(r, 403, "insufficient_scope")


def test_token_with_empty_scope_cannot_read(server, forger):
    with server.client() as c:
        r = c.get(PATH, token=forger.make(scope=""))
    assert_problem(r, 403, "insufficient_scope")
    assert 'scope="payments:read"' in (r.header("WWW-Authenticate") or "")


def test_unknown_scopes_grant_nothing(server, forger):
    with server.client() as c:
        r = c.get(PATH, token=forger.make(scope="payments:*  admin root payments:readx"))
    assert_problem(r, 403, "insufficient_scope")


def test_workspace_admin_scope_implies_payments_write(server, forger):
    with server.client() as c:
        r = c.post(PATH, json=beneficiary(external_id=None, name="admin-scope"),
                   token=forger.make(scope="workspace:admin"))
        assert r.status == 201, r
        c.delete(PATH + "/" + r.json()["id"], token=server.token)
