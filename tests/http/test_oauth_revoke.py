"""Token revocation (RFC 7009, POST /v1/accounts/auth/oauth/revoke): either token of an
application ends its whole session at once; unknown, expired and already revoked tokens answer
200; another client's token is refused; the client authenticates as at the token endpoint;
form and JSON bodies; the metadata advertises the endpoint."""

import base64
import time
import urllib.parse

import pytest

from conftest import USER_PASSWORD
from helpers import (Forger, assert_json, assert_oauth_error, assert_problem, committed_row,
                     jwt_parts, signing_key)
from oauth_flow import GRANTS, REFRESH, TOKEN, Workspace, form, tokens_for

REVOKE = "/v1/accounts/auth/oauth/revoke"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture(scope="module")
def ws(server):
    return Workspace(server)


@pytest.fixture(scope="module")
def app(ws):
    return ws.register()


@pytest.fixture(scope="module")
def treasurer(ws):
    return ws.member("treasurer")


def revoke(server, headers=None, **fields):
    """A form revocation request (RFC 7009 §2.1)."""
    return server.client().post(REVOKE, body=form(**fields), token=False, content_type=FORM,
                                headers=headers)


def revoked(r):
    """200 with nothing in the body, not cacheable (RFC 7009 §2.2, RFC 6749 §5.1)."""
    assert r.status == 200, r
    assert r.body == b"" and r.header("Content-Type") is None, r
    assert r.header("Cache-Control") == "no-store" and r.header("Pragma") == "no-cache", r
    return True


def api_refuses(server, access):
    r = server.client(token=access).get("/v1/payments")
    assert_problem(r, 401, "invalid_token")
    assert "revoked" in r.json()["detail"]
    return True


def api_accepts(server, access):
    return assert_json(server.client(token=access).get("/v1/payments"), 200) is not None


def refresh(server, app, refresh_token, secret=None):
    return server.client().post(TOKEN, token=False, content_type=FORM, body=form(
        grant_type="refresh_token", refresh_token=refresh_token, client_id=app.id,
        client_secret=secret))


def basic(client_id, secret):
    raw = "%s:%s" % (urllib.parse.quote(client_id, safe=""), urllib.parse.quote(secret, safe=""))
    return {"Authorization": "Basic " + base64.b64encode(raw.encode()).decode()}


def test_the_metadata_advertises_the_endpoint(server):
    m = assert_json(server.client().get("/.well-known/oauth-authorization-server", token=False),
                    200)
    assert m["revocation_endpoint"] == server.issuer + REVOKE
    assert m["revocation_endpoint_auth_methods_supported"] == \
        m["token_endpoint_auth_methods_supported"] == \
        ["none", "client_secret_basic", "client_secret_post"]


def test_revoking_a_refresh_token_ends_every_token_of_its_session(server, ws, app, treasurer):
    first = tokens_for(server, ws, app, treasurer)
    second = assert_json(refresh(server, app, first["refresh_token"]), 200)  # same session
    other = tokens_for(server, ws, app, treasurer)  # another session of the same app and user
    sid = jwt_parts(second["access_token"])[1]["sid"]
    assert api_accepts(server, first["access_token"]) and api_accepts(server, second["access_token"])

    assert revoked(revoke(server, token=second["refresh_token"], client_id=app.id))
    assert api_refuses(server, first["access_token"])
    assert api_refuses(server, second["access_token"])
    assert_oauth_error(refresh(server, app, second["refresh_token"]), 400, "invalid_grant")
    assert_oauth_error(refresh(server, app, first["refresh_token"]), 400, "invalid_grant")
    # only that session: the app's other session and the user's grant stay
    assert api_accepts(server, other["access_token"])
    assert_json(refresh(server, app, other["refresh_token"]), 200)
    grants = assert_json(server.client(token=ws.token(treasurer)).get(GRANTS), 200)["data"]
    assert app.id in [g["client_id"] for g in grants]
    # recorded on the session, as logout and refresh-token reuse are
    assert committed_row(server, "SELECT revoked_reason FROM sessions WHERE id = ?",
                         (sid,)) == ("token_revocation",)


def test_revoking_an_access_token_ends_its_session_at_once(server, ws, app, treasurer):
    tok = tokens_for(server, ws, app, treasurer)
    r = server.client().post(REVOKE, token=False, json={
        "token": tok["access_token"], "token_type_hint": "access_token", "client_id": app.id})
    assert revoked(r)
    assert api_refuses(server, tok["access_token"])
    assert_oauth_error(refresh(server, app, tok["refresh_token"]), 400, "invalid_grant")


@pytest.mark.parametrize("which,hint", [("refresh_token", "access_token"),
                                        ("access_token", "refresh_token"),
                                        ("refresh_token", "id_token"),
                                        ("access_token", "")])
def test_the_hint_only_says_where_to_look_first(server, ws, app, treasurer, which, hint):
    tok = tokens_for(server, ws, app, treasurer)
    assert revoked(revoke(server, token=tok[which], token_type_hint=hint, client_id=app.id))
    assert api_refuses(server, tok["access_token"])


def test_an_unknown_expired_or_revoked_token_answers_200_and_changes_nothing(server, ws, app,
                                                                             treasurer):
    tok = tokens_for(server, ws, app, treasurer)
    forged = Forger(tok["access_token"], signing_key(server.data_dir))
    now = int(time.time())
    expired = forged.make(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    for token in ("A" * 43, "not.a.jwt", expired, forged.make(key=b"k" * 32), "x" * 8192):
        assert revoked(revoke(server, token=token, client_id=app.id))
    assert api_accepts(server, tok["access_token"])  # the expired token's session goes on
    assert revoked(revoke(server, token=tok["refresh_token"], client_id=app.id))
    assert revoked(revoke(server, token=tok["refresh_token"], client_id=app.id))  # again
    assert revoked(revoke(server, token=tok["access_token"], client_id=app.id))


def test_another_clients_token_is_refused_and_nothing_is_revoked(server, ws, app, treasurer):
    mine = tokens_for(server, ws, app, treasurer)
    intruder = ws.register()
    login = server.login(ws.owner_email, USER_PASSWORD, workspace_id=ws.wid)
    for token in (mine["refresh_token"], mine["access_token"], login["refresh_token"],
                  login["access_token"]):
        body = assert_oauth_error(revoke(server, token=token, client_id=intruder.id), 400,
                                  "invalid_grant")
        assert "not issued to this client" in body["error_description"]
    assert api_accepts(server, mine["access_token"])
    assert api_accepts(server, login["access_token"])
    assert_json(refresh(server, app, mine["refresh_token"]), 200)
    assert "asked to revoke a token of %s; refused" % app.id in server.log_text()


def test_confidential_clients_authenticate_as_at_the_token_endpoint(server, ws, treasurer):
    conf = ws.register("confidential")
    tok = tokens_for(server, ws, conf, treasurer)
    refused = [
        (revoke(server, token=tok["refresh_token"], client_id=conf.id), None),
        (revoke(server, token=tok["refresh_token"], client_id=conf.id, client_secret="cs_x"),
         None),
        (revoke(server, headers=basic(conf.id, "cs_wrong"), token=tok["refresh_token"]),
         'Basic realm="treasury"'),
        (revoke(server, headers={"Authorization": "Basic !!!"}, token=tok["refresh_token"]),
         'Basic realm="treasury"'),
        (revoke(server, token=tok["refresh_token"], client_id="cli_" + "0" * 26), None),
    ]
    for r, challenge in refused:
        assert_oauth_error(r, 401, "invalid_client")
        assert r.header("WWW-Authenticate") == challenge, r
    assert api_accepts(server, tok["access_token"])  # nothing was revoked
    assert revoked(revoke(server, headers=basic(conf.id, conf.secret), token=tok["refresh_token"]))
    assert api_refuses(server, tok["access_token"])
    again = tokens_for(server, ws, conf, treasurer)
    assert revoked(revoke(server, token=again["access_token"], client_id=conf.id,
                          client_secret=conf.secret))
    assert api_refuses(server, again["access_token"])


def test_a_public_client_sending_a_secret_is_refused(server, ws, app, treasurer):
    tok = tokens_for(server, ws, app, treasurer)
    assert_oauth_error(revoke(server, token=tok["refresh_token"], client_id=app.id,
                              client_secret="cs_x"), 401, "invalid_client")
    assert api_accepts(server, tok["access_token"])


@pytest.mark.parametrize("fields,why", [
    ({"client_id": None}, "Name the client"),
    ({"token": None}, "token is required"),
    ({"token": ""}, "token is required"),
])
def test_a_request_without_client_or_token_is_invalid_request(server, ws, app, treasurer,
                                                              fields, why):
    tok = tokens_for(server, ws, app, treasurer)
    base = {"token": tok["refresh_token"], "client_id": app.id}
    base.update(fields)
    if base["token"] == "":
        r = server.client().post(REVOKE, token=False, content_type=FORM,
                                 body="token=&client_id=" + app.id)
    else:
        r = revoke(server, **base)
    assert why in assert_oauth_error(r, 400, "invalid_request")["error_description"]
    assert api_accepts(server, tok["access_token"])


def test_a_revoked_refresh_token_cannot_be_used_at_the_refresh_endpoint_either(server, ws, app,
                                                                               treasurer):
    tok = tokens_for(server, ws, app, treasurer)
    assert revoked(server.client().post(REVOKE, token=False, json={
        "token": tok["refresh_token"], "client_id": app.id}))
    r = server.client().post(REFRESH, token=False, json={"refresh_token": tok["refresh_token"],
                                                         "client_id": app.id})
    assert_oauth_error(r, 400, "invalid_grant")


def test_revocation_survives_a_restart(make_server):
    s = make_server()
    ws = Workspace(s)
    app = ws.register()
    tok = tokens_for(s, ws, app, ws.member("viewer"))
    assert revoked(revoke(s, token=tok["refresh_token"], client_id=app.id))
    s.restart()
    assert api_refuses(s, tok["access_token"])
