"""The OAuth endpoints answer every error as RFC 6749 §5.2 JSON (x-oauth-errors): the refusals
the endpoints choose and those the runtime makes before them (plain HTTP, malformed or too
large bodies, other media types, schema violations, quotas, failures, shutdown), each with its
own status and headers, an RFC 6749 `error`, `Cache-Control: no-store` and `Pragma: no-cache`.
Every other operation keeps problem documents."""

import base64
import signal
import threading

import pytest

import helpers
from conftest import sqlite_only
from helpers import drop_trigger, fail_trigger, open_db
from helpers import (assert_json, assert_oauth_error, assert_problem, check_oauth_error,
                     media_type)
from oauth_flow import REFRESH, TOKEN, Workspace, form, tokens_for

FORM = "application/x-www-form-urlencoded"
REVOKE = "/v1/accounts/auth/oauth/revoke"
ENDPOINTS = [TOKEN, REFRESH, REVOKE]
BODY_CAP = {TOKEN: 4096, REFRESH: 4096, REVOKE: 12288}  # x-max-body-bytes
TOKEN_FIELD = {TOKEN: ("refresh_token", 256), REFRESH: ("refresh_token", 256),
               REVOKE: ("token", 8192)}  # the token parameter and its maxLength


def post_form(client, path, **fields):
    return client.post(path, body=form(**fields), token=False, content_type=FORM)


@pytest.mark.parametrize("path", ENDPOINTS)
def test_plain_http_is_invalid_request(server, path):
    with server.plain_client() as c:
        r = c.post(path, body="grant_type=refresh_token&refresh_token=x", content_type=FORM)
    body = assert_oauth_error(r, 400, "invalid_request")
    assert "https" in body["error_description"].lower()


@pytest.mark.parametrize("path", ENDPOINTS)
def test_malformed_bodies_are_invalid_request_with_their_own_status(server, path):
    c = server.client()
    r = c.post(path, body='{"grant_type": "refresh_token",', token=False,
               content_type="application/json")
    assert "not valid JSON" in assert_oauth_error(r, 400, "invalid_request")["error_description"]
    r = c.post(path, body="grant_type=refresh_token&refresh_token=%zz", token=False,
               content_type=FORM)
    assert "form body is malformed" in \
        assert_oauth_error(r, 400, "invalid_request")["error_description"]
    r = c.post(path, body="refresh_token=x", token=False, content_type="text/plain")
    assert "application/x-www-form-urlencoded" in \
        assert_oauth_error(r, 415, "invalid_request")["error_description"]
    r = post_form(server.client(), path, refresh_token="x" * BODY_CAP[path])
    assert "exceeds %d bytes" % BODY_CAP[path] in \
        assert_oauth_error(r, 413, "invalid_request")["error_description"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_schema_violations_are_invalid_request_naming_each_one(server, path):
    name, longest = TOKEN_FIELD[path]
    r = post_form(server.client(), path, nonsense="1", **{name: "a" * (longest + 1)})
    body = assert_oauth_error(r, 422, "invalid_request")
    d = body["error_description"]
    assert d.startswith("The request body has 2 invalid fields. "), d
    assert ("/%s: " % name) in d and "/nonsense: " in d, d


def test_descriptions_keep_to_the_characters_rfc_6749_allows(server):
    # A parameter named with a quote, a backslash and a non-ASCII letter: named back in the
    # description with each replaced.
    r = server.client().post(TOKEN, body='{"gr\\"ant\\\\\u00e9": "x"}'.encode(), token=False,
                             content_type="application/json")
    d = assert_oauth_error(r, 422, "invalid_request")["error_description"]
    assert "/gr'ant/?: " in d, d


def test_failed_client_authentication_is_invalid_client(server):
    ws = Workspace(server)
    app = ws.register("confidential")
    tok = tokens_for(server, ws, app, ws.member("treasurer"))
    r = post_form(server.client(), REFRESH, refresh_token=tok["refresh_token"], client_id=app.id,
                  client_secret="cs_wrong")
    assert_oauth_error(r, 401, "invalid_client")
    assert r.header("WWW-Authenticate") is None  # no Basic was tried
    basic = "Basic " + base64.b64encode(("%s:cs_wrong" % app.id).encode()).decode()
    for path in ENDPOINTS:
        fields = {"token": tok["refresh_token"]} if path == REVOKE else \
            {"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}
        r = server.client().post(path, token=False, content_type=FORM,
                                 headers={"Authorization": basic}, body=form(**fields))
        assert_oauth_error(r, 401, "invalid_client")
        assert r.header("WWW-Authenticate") == 'Basic realm="treasury"'
    # none of it used the refresh token up
    assert_json(post_form(server.client(), REFRESH, refresh_token=tok["refresh_token"],
                          client_id=app.id, client_secret=app.secret), 200)


def test_a_spent_quota_is_temporarily_unavailable_with_retry_after(make_server):
    s = make_server(extra_env={"TREASURY_AUTH_RATE_LIMIT": "2"})  # token, refresh, revoke
    pair = s.login()  # the login spends one of the address's two
    assert_oauth_error(post_form(s.client(), TOKEN, grant_type="password"), 400,
                       "unsupported_grant_type")
    for path in ENDPOINTS:
        r = post_form(s.client(), path, grant_type="refresh_token",
                      refresh_token=pair["refresh_token"], client_id="cli_x")
        body = assert_oauth_error(r, 429, "temporarily_unavailable")
        assert "retry in" in body["error_description"]
        assert int(r.header("Retry-After")) > 0
        assert r.header("RateLimit-Policy") == '"auth";q=2;w=60'
    s.move_clock(61)  # the quota is back: the refused refresh used nothing up
    assert_json(post_form(s.client(), REFRESH, refresh_token=pair["refresh_token"]), 200)
    s.move_clock(0)


@pytest.fixture
def expected_server_errors():
    helpers.EXPECTED_SERVER_ERRORS.update((500, 503))
    yield
    helpers.EXPECTED_SERVER_ERRORS.difference_update((500, 503))


def test_a_failure_is_server_error_and_changes_nothing(make_server, expected_server_errors):
    s = make_server()
    pair = s.login()
    db = open_db(s)
    fail_trigger(db, "inject_failure", "refresh_tokens")
    r = post_form(s.client(), REFRESH, refresh_token=pair["refresh_token"])
    body = assert_oauth_error(r, 500, "server_error")
    assert body["error_description"] == \
        "The server failed to complete the request; nothing was changed."
    drop_trigger(db, "inject_failure", "refresh_tokens")
    db.close()
    assert_json(post_form(s.client(), REFRESH, refresh_token=pair["refresh_token"]), 200)


@sqlite_only("the held fsync is the group commit's test hook")
def test_shutting_down_is_temporarily_unavailable(make_server, tmp_path, expected_server_errors):
    """With a refresh held in its fsync, SIGTERM makes the server drain: a token request that
    arrives meanwhile is answered 503 temporarily_unavailable, the held one 200."""
    hold = tmp_path / "hold-sync"
    s = make_server(extra_env={"TREASURY_TEST_HOLD_SYNC": str(hold)})
    s.move_clock(0)  # skips on a release build, which has no test hooks
    held, later = s.login(), s.login()
    helpers.no_recent_reads()  # the writer defers the fsync to the held syncer only then
    hold.touch()
    answers = {}

    def refresh():
        answers["held"] = post_form(s.client(), REFRESH, refresh_token=held["refresh_token"])

    t = threading.Thread(target=refresh)
    try:
        t.start()
        assert helpers.committed_row(s, "SELECT 1 FROM refresh_tokens WHERE used_at IS NOT NULL"), \
            "the held refresh never committed"
        s.proc.send_signal(signal.SIGTERM)
        r = None
        for _ in range(100):
            r = post_form(s.client(), TOKEN, grant_type="refresh_token",
                          refresh_token=later["refresh_token"], client_id="cli_x")
            if r.status == 503:
                break
        assert r.status == 503, r
        body = check_oauth_error(r)
        assert body["error"] == "temporarily_unavailable" and \
            "shutting down" in body["error_description"]
        assert r.header("Connection") == "close"
    finally:
        hold.unlink()
    t.join(10)
    assert_json(answers["held"], 200)
    assert s.stop() == 0


def test_every_other_operation_keeps_problem_documents(server):
    r = server.login_response(server.admin_email, "wrong password 123")
    body = assert_problem(r, 401, "invalid_credentials")
    assert "error" not in body and "error_description" not in body
    assert r.header("Pragma") is None
    r = server.client().get(TOKEN, token=False)  # no such operation: the router answers
    assert_problem(r, 405, "method_not_allowed")
    with server.plain_client() as c:
        assert_problem(c.post("/v1/api/login", json={"email": "a@b.c", "password": "x"}), 400,
                       "use_https")
    assert media_type(server.client().get("/v1/beneficiaries", token=False)) == \
        "application/problem+json"


def test_a_successful_answer_also_says_no_cache(server):
    pair = server.login()
    r = post_form(server.client(), REFRESH, refresh_token=pair["refresh_token"])
    assert_json(r, 200)
    assert r.header("Cache-Control") == "no-store" and r.header("Pragma") == "no-cache"

