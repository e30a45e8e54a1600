"""Sessions: refresh-token rotation with reuse detection (RFC 9700 §4.14.2), scope narrowing
(RFC 6749 §6), logout, listing and revoking one's own sessions, and revocation that takes
effect on the very next request, survives a restart and needs no scope."""

import contextlib
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_oauth_error, assert_problem, jwt_parts, open_db

REFRESH = "/v1/accounts/auth/oauth/refresh"
SESSIONS = "/v1/accounts/sessions"
PATH = "/v1/beneficiaries"


def refresh(server, token, **extra):
    with server.client() as c:
        return c.post(REFRESH, json={"refresh_token": token, **extra})


def works(server, access):
    with server.client(token=access) as c:
        return c.get(PATH).status == 200


def assert_revoked(server, access):
    with server.client(token=access) as c:
        r = c.get(PATH)
    assert_problem(r, 401, "invalid_token")
    assert "revoked" in r.json()["detail"]


def test_refresh_returns_a_new_pair_of_the_same_session(server):
    first = server.login()
    r = refresh(server, first["refresh_token"], grant_type="refresh_token")
    second = assert_json(r, 200)
    assert r.header("Cache-Control") == "no-store"
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert second["expires_in"] == 86400 and second["token_type"] == "Bearer"
    assert second["workspace_id"] == first["workspace_id"]
    assert second["scope"] == first["scope"]
    a, b = jwt_parts(first["access_token"])[1], jwt_parts(second["access_token"])[1]
    assert a["sid"] == b["sid"] and a["jti"] != b["jti"] and a["sub"] == b["sub"]
    assert works(server, second["access_token"])
    assert works(server, first["access_token"])  # earlier access tokens live until exp
    # the new refresh token rotates again
    assert assert_json(refresh(server, second["refresh_token"]), 200)["refresh_token"] not in (
        first["refresh_token"], second["refresh_token"])


def test_reusing_a_refresh_token_revokes_the_whole_family(server):
    first = server.login()
    second = refresh(server, first["refresh_token"]).json()
    third = refresh(server, second["refresh_token"]).json()
    other = server.login()  # another session of the same user is not touched

    r = refresh(server, first["refresh_token"])  # the thief (or the victim) replays it
    assert_oauth_error(r, 400, "invalid_grant")
    assert "revoked" in r.json()["error_description"]
    assert_oauth_error(refresh(server, third["refresh_token"]), 400, "invalid_grant")
    for access in (first["access_token"], second["access_token"], third["access_token"]):
        assert_revoked(server, access)
    assert works(server, other["access_token"])
    assert assert_json(refresh(server, other["refresh_token"]), 200)


def test_unknown_or_malformed_refresh_tokens_are_refused(server):
    assert_oauth_error(refresh(server, "A" * 43), 400, "invalid_grant")
    with server.client() as c:
        r = c.post(REFRESH, json={"refresh_token": "has.dots"})
        assert "/refresh_token: " in assert_oauth_error(r, 422, "invalid_request")[
            "error_description"]
        r = c.post(REFRESH, json={"refresh_token": "x", "grant_type": "password"})
        assert "/grant_type: " in assert_oauth_error(r, 422, "invalid_request")[
            "error_description"]
        r = c.post(REFRESH, json={})
        assert assert_oauth_error(r, 422, "invalid_request")["error_description"] == \
            "The request body has 1 invalid field. /refresh_token: is required (required)"


def test_a_refresh_may_narrow_the_scope_but_never_widen_it(server):
    wid = server.login()["workspace_id"]
    first = server.login()
    r = refresh(server, first["refresh_token"], scope="payments:read")
    narrow = assert_json(r, 200)
    assert narrow["scope"] == "payments:read"
    with server.client(token=narrow["access_token"]) as c:
        assert c.get(PATH).status == 200
        assert_problem(c.post(PATH, json={}), 403, "insufficient_scope")
    # the session keeps what it was granted: the next refresh without scope gets it all back
    full = assert_json(refresh(server, narrow["refresh_token"]), 200)
    assert full["scope"] == first["scope"]
    # a viewer's session cannot be widened to writes
    server.create_user(wid, "scoped-viewer@example.com", "viewer")
    viewer = server.login("scoped-viewer@example.com", USER_PASSWORD)
    r = refresh(server, viewer["refresh_token"], scope="payments:read payments:write")
    assert_oauth_error(r, 400, "invalid_scope")
    assert "payments:write" in r.json()["error_description"]
    # the refused request did not use the token up
    assert assert_json(refresh(server, viewer["refresh_token"]), 200)


def test_logout_ends_the_session_at_once(server):
    mine, other = server.login(), server.login()
    with server.client(token=mine["access_token"]) as c:
        r = c.post("/v1/api/logout")
        assert r.status == 204 and r.body == b""
        assert_problem(c.post("/v1/api/logout"), 401, "invalid_token")  # already ended
    assert_revoked(server, mine["access_token"])
    assert_oauth_error(refresh(server, mine["refresh_token"]), 400, "invalid_grant")
    assert works(server, other["access_token"])


def test_logout_needs_no_scope_but_a_token(server, forger):
    wid = server.login()["workspace_id"]
    server.create_user(wid, "logout-viewer@example.com", "viewer")
    viewer = server.login("logout-viewer@example.com", USER_PASSWORD)
    with server.client(token=viewer["access_token"]) as c:
        assert c.post("/v1/api/logout").status == 204
    with server.client() as c:
        r = c.post("/v1/api/logout", token=False)
        assert_problem(r, 401, "unauthorized")
        assert_problem(c.post("/v1/api/logout", token="garbage"), 401, "invalid_token")


def test_sessions_list_marks_the_current_one_and_revoke_ends_another(server):
    email = "sessions-%s@example.com" % uuid.uuid4().hex[:8]
    wid = server.login()["workspace_id"]
    server.create_user(wid, email, "viewer")
    a = server.login(email, USER_PASSWORD)
    b = server.login(email, USER_PASSWORD)
    sid_a, sid_b = jwt_parts(a["access_token"])[1]["sid"], jwt_parts(b["access_token"])[1]["sid"]
    with server.client(token=a["access_token"]) as c:
        page = assert_json(c.get(SESSIONS), 200)
        got = {s["id"]: s for s in page["data"]}
        assert set(got) == {sid_a, sid_b}, page
        assert got[sid_a]["current"] is True and got[sid_b]["current"] is False
        for s in page["data"]:
            assert s["object"] == "session" and s["workspace_id"] == wid
            assert s["expires_at"] > s["created_at"]
        assert [s["id"] for s in page["data"]] == sorted(got, key=lambda i: (
            got[i]["created_at"], i), reverse=True)
        r = c.delete(SESSIONS + "/" + sid_b)
        assert r.status == 204
        assert_revoked(server, b["access_token"])
        assert_problem(c.delete(SESSIONS + "/" + sid_b), 404, "not_found")
        assert [s["id"] for s in c.get(SESSIONS).json()["data"]] == [sid_a]
    # the admin's sessions are not the viewer's to see or end
    with server.client(token=server.token) as admin:
        admin_sid = jwt_parts(server.token)[1]["sid"]
        ids = [s["id"] for s in admin.get(SESSIONS + "?limit=100").json()["data"]]
        assert sid_a not in ids and admin_sid in ids
    with server.client(token=a["access_token"]) as c:
        assert_problem(c.delete(SESSIONS + "/" + admin_sid), 404, "not_found")
        assert_problem(c.delete(SESSIONS + "/ben_" + "0" * 26), 404, "not_found")
    assert works(server, server.token)


def test_an_expired_session_is_not_listed(server):
    """Live sessions only: one past its expires_at is left out (as a revoked one is)."""
    email = "expired-%s@example.com" % uuid.uuid4().hex[:8]
    wid = server.login()["workspace_id"]
    server.create_user(wid, email, "viewer")
    a = server.login(email, USER_PASSWORD)
    b = server.login(email, USER_PASSWORD)
    sid_a, sid_b = jwt_parts(a["access_token"])[1]["sid"], jwt_parts(b["access_token"])[1]["sid"]
    with contextlib.closing(open_db(server)) as db:
        db.execute("UPDATE sessions SET expires_at = ? WHERE id = ?",
                   ("2001-01-01T00:00:00.000Z", sid_b))
        db.commit()
    with server.client(token=a["access_token"]) as c:
        assert [s["id"] for s in assert_json(c.get(SESSIONS), 200)["data"]] == [sid_a]


def test_sessions_are_paged_with_cursors(server):
    email = "paged-%s@example.com" % uuid.uuid4().hex[:8]
    wid = server.login()["workspace_id"]
    server.create_user(wid, email, "viewer")
    tokens = [server.login(email, USER_PASSWORD) for _ in range(5)]
    seen = []
    with server.client(token=tokens[0]["access_token"]) as c:
        url = SESSIONS + "?limit=2"
        while True:
            page = assert_json(c.get(url), 200)
            seen += [s["id"] for s in page["data"]]
            if not page["has_more"]:
                assert page["next_cursor"] is None
                break
            url = SESSIONS + "?limit=2&cursor=" + page["next_cursor"]
        assert len(seen) == 5 == len(set(seen))
        first_page = c.get(SESSIONS + "?limit=2").json()
    with server.client(token=server.token) as admin:  # another user's cursor is refused
        r = admin.get(SESSIONS + "?limit=2&cursor=" + first_page["next_cursor"])
        assert_problem(r, 400, "invalid_cursor")


def test_revocation_survives_a_restart(make_server):
    s = make_server()
    gone, kept = s.login(), s.login()
    with s.client(token=gone["access_token"]) as c:
        assert c.post("/v1/api/logout").status == 204
    s.restart()
    assert_revoked(s, gone["access_token"])
    assert works(s, kept["access_token"])
    assert_oauth_error(refresh(s, gone["refresh_token"]), 400, "invalid_grant")


def test_refresh_of_an_expired_session_is_refused(make_server):
    s = make_server()
    pair = s.login()
    s.move_clock(30 * 86400 + 60)  # past the session's 30-day life
    assert_oauth_error(refresh(s, pair["refresh_token"]), 400, "invalid_grant")
    s.move_clock(0)


@pytest.fixture(scope="module")
def forger(server):
    from helpers import Forger, signing_key
    return Forger(server.token, signing_key(server.data_dir))


def test_refresh_accepts_the_form_body_oauth_clients_send(server):
    pair = server.login()
    body = "grant_type=refresh_token&refresh_token=" + pair["refresh_token"]
    with server.client() as c:
        r = c.post(REFRESH, body=body,
                   headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
        new = assert_json(r, 200)
        assert jwt_parts(new["access_token"])[1]["sid"] == \
            jwt_parts(pair["access_token"])[1]["sid"]
        # the form goes through the same schema as JSON: grant_type must be refresh_token
        r = c.post(REFRESH, body="grant_type=password&refresh_token=" + new["refresh_token"],
                   content_type="application/x-www-form-urlencoded")
        body = assert_oauth_error(r, 422, "invalid_request")
        assert body["error_description"].startswith(
            "The request body has 1 invalid field. /grant_type: "), body  # and no other
        for bad in ("refresh_token=%zz", "refresh_token=a&refresh_token=b", "=x"):
            r = c.post(REFRESH, body=bad, content_type="application/x-www-form-urlencoded")
            assert_oauth_error(r, 400, "invalid_request")
        r = c.post(REFRESH, body="refresh_token=x", content_type="text/plain")
        assert_oauth_error(r, 415, "invalid_request")
        assert "x-www-form-urlencoded" in r.json()["error_description"]


def test_other_operations_still_refuse_form_bodies(server):
    with server.client(token=server.token) as c:
        r = c.post(PATH, body="name=x", content_type="application/x-www-form-urlencoded")
        assert_problem(r, 415, "unsupported_media_type")
    with server.client() as c:
        r = c.post("/v1/api/login", body="email=a%40b.c&password=x",
                   content_type="application/x-www-form-urlencoded")
        assert_problem(r, 415, "unsupported_media_type")
