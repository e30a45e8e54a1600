"""The workspace API: GET /v1/workspace (settings, the quota that applies) and PUT
/v1/workspace/settings (token lifetime 900..86400, version/ETag/If-Match), and new tokens
following the lifetime, checked with the test clock rather than by sleeping."""

from conftest import USER_PASSWORD
from helpers import ETAG, assert_json, assert_problem, assert_validation, jwt_parts

WS = "/v1/workspace"
SETTINGS = "/v1/workspace/settings"


def test_get_shows_settings_the_quota_and_an_etag(make_server):
    s = make_server(extra_args=["--rate-limit", "1234"])
    wid = s.login()["workspace_id"]
    with s.client(token=s.token) as c:
        r = c.get(WS)
        w = assert_json(r, 200)
        assert w["id"] == wid and w["object"] == "workspace" and w["name"]
        assert w["settings"] == {"token_lifetime_seconds": 86400}
        assert w["rate_limit"] == {"requests_per_minute": 1234, "source": "default"}
        assert w["version"] == 1 and ETAG.match(r.header("ETag"))
        s.admin("set-rate-limit", "--workspace", wid, "--per-minute", "5000")
        assert c.get(WS).json()["rate_limit"] == {"requests_per_minute": 5000,
                                                  "source": "workspace"}


def test_a_15_minute_workspace_issues_tokens_that_stop_after_exp(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        r = c.put(SETTINGS, json={"token_lifetime_seconds": 900}, headers={"If-Match": '"v1"'})
        w = assert_json(r, 200)
        assert w["settings"]["token_lifetime_seconds"] == 900 and w["version"] == 2
        assert r.header("ETag") == '"v2"'
    pair = s.login()
    assert pair["expires_in"] == 900
    claims = jwt_parts(pair["access_token"])[1]
    assert claims["exp"] - claims["iat"] == 900
    with s.client(token=pair["access_token"]) as c:
        assert c.get("/v1/beneficiaries").status == 200
        s.move_clock(900 + 31)  # beyond exp and the 30 s leeway
        r = c.get("/v1/beneficiaries")
        assert_problem(r, 401, "invalid_token")
        assert "expired" in r.json()["detail"]
    # a refresh issues tokens with the workspace's lifetime too, counted from the new now
    again = assert_json(s.client().post("/v1/accounts/auth/oauth/refresh",
                                        json={"refresh_token": pair["refresh_token"]}), 200)
    assert again["expires_in"] == 900
    with s.client(token=again["access_token"]) as c:
        assert c.get("/v1/beneficiaries").status == 200
    s.move_clock(0)


def test_lifetime_outside_900_to_86400_is_422_and_changes_nothing(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        for bad in (899, 86401, 0, -1, "900", None):
            r = c.put(SETTINGS, json={"token_lifetime_seconds": bad})
            assert_validation(r, {"/token_lifetime_seconds": None})
        body = assert_problem(c.put(SETTINGS, json={}), 422, "validation_failed")
        assert [e["code"] for e in body["errors"]] == ["required"]
        r = c.put(SETTINGS, json={"token_lifetime_seconds": 900, "rate_limit": 99})
        assert_validation(r, {"/rate_limit": "additional_property"})
        assert c.get(WS).json()["version"] == 1
    assert s.login()["expires_in"] == 86400


def test_stale_if_match_is_412(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        assert c.put(SETTINGS, json={"token_lifetime_seconds": 3600}).status == 200
        r = c.put(SETTINGS, json={"token_lifetime_seconds": 900}, headers={"If-Match": '"v1"'})
        assert_problem(r, 412, "precondition_failed")
        assert c.get(WS).json()["settings"]["token_lifetime_seconds"] == 3600


def test_a_viewer_reads_but_cannot_change_settings(make_server):
    s = make_server()
    wid = s.login()["workspace_id"]
    s.create_user(wid, "ws-viewer@example.com", "viewer")
    viewer = s.login("ws-viewer@example.com", USER_PASSWORD)["access_token"]
    with s.client(token=viewer) as c:
        assert_json(c.get(WS), 200)
        r = c.put(SETTINGS, json={"token_lifetime_seconds": 900})
        assert_problem(r, 403, "insufficient_scope")
        assert 'scope="workspace:admin"' in r.header("WWW-Authenticate")


def test_each_token_sees_its_own_workspace(make_server):
    s = make_server()
    wid, _, other = s.new_workspace()
    assert other.get(WS).json()["id"] == wid
    with s.client(token=s.token) as c:
        assert c.get(WS).json()["id"] != wid
