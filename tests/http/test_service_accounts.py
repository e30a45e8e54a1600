"""Service accounts (admin): create with a role, issue non-expiring tokens with an explicit
subset of the role's scopes, list and revoke them (refused on the very next request), disable
the account (every token refused), and the 403/422/404 edges."""

import uuid

import pytest

from helpers import assert_json, assert_problem, assert_validation, beneficiary, jwt_parts

SA = "/v1/admin/service-accounts"


@pytest.fixture(scope="module")
def ws(server):
    wid, _, c = server.new_workspace()
    return wid, c


def create_account(c, role="treasurer", **extra):
    r = c.post(SA, json={"name": "sync-" + uuid.uuid4().hex[:6], "role": role, **extra})
    return assert_json(r, 201), r


def issue(c, sa_id, scopes, **extra):
    return c.post(SA + "/" + sa_id + "/tokens", json={"scopes": scopes, **extra})


def test_create_get_and_list_a_service_account(ws):
    wid, c = ws
    sa, r = create_account(c, description="ERP export")
    assert sa["id"].startswith("sa_") and sa["object"] == "service_account"
    assert sa["workspace_id"] == wid and sa["status"] == "active" and sa["version"] == 1
    assert sa["role"] == "treasurer" and sa["description"] == "ERP export"
    assert r.header("Location") == SA + "/" + sa["id"] and r.header("ETag") == '"v1"'
    assert assert_json(c.get(SA + "/" + sa["id"]), 200) == sa
    assert sa["id"] in [x["id"] for x in c.get(SA + "?limit=100").json()["data"]]


def test_unknown_role_is_422_at_role(ws):
    _, c = ws
    assert_validation(c.post(SA, json={"name": "x", "role": "wizard"}), {"/role": "unknown_role"})


def test_a_token_carries_exactly_its_scopes_and_never_expires(server, ws):
    _, c = ws
    sa, _ = create_account(c)
    r = issue(c, sa["id"], ["rates:read", "payments:read"], name="production")
    tok = assert_json(r, 201)
    assert r.header("Cache-Control") == "no-store"
    assert tok["scope"] == "payments:read rates:read" and tok["token_type"] == "Bearer"
    assert tok["status"] == "active" and tok["name"] == "production"
    assert "expires_in" not in tok
    claims = jwt_parts(tok["access_token"])[1]
    assert "exp" not in claims and claims["sub"] == sa["id"] and claims["jti"] == tok["id"]
    with server.client(token=tok["access_token"]) as m:
        assert m.get("/v1/beneficiaries").status == 200
        assert_problem(m.post("/v1/beneficiaries", json=beneficiary(external_id=None)), 403,
                       "insufficient_scope")
    listed = c.get(SA + "/" + sa["id"] + "/tokens").json()["data"]
    assert [t["id"] for t in listed] == [tok["id"]] and "access_token" not in listed[0]


def test_a_rates_read_only_token_gets_403_on_payments(server, ws):
    _, c = ws
    sa, _ = create_account(c)
    tok = assert_json(issue(c, sa["id"], ["rates:read"]), 201)
    with server.client(token=tok["access_token"]) as m:
        r = m.get("/v1/beneficiaries")
        assert_problem(r, 403, "insufficient_scope")
        assert 'scope="payments:read"' in r.header("WWW-Authenticate")


def test_scopes_beyond_the_role_or_unknown_are_422(ws):
    _, c = ws
    sa, _ = create_account(c, role="viewer")
    r = issue(c, sa["id"], ["payments:read", "payments:write", "made:up"])
    assert_validation(r, {"/scopes/1": "scope_not_allowed", "/scopes/2": "unknown_scope"})
    assert c.get(SA + "/" + sa["id"] + "/tokens").json()["data"] == []
    assert_validation(issue(c, sa["id"], []), {"/scopes": "min_items"})


def test_revoked_token_is_refused_on_its_very_next_request(server, ws):
    _, c = ws
    sa, _ = create_account(c)
    keep = assert_json(issue(c, sa["id"], ["payments:read"]), 201)
    gone = assert_json(issue(c, sa["id"], ["payments:read"]), 201)
    with server.client(token=gone["access_token"]) as m:
        assert m.get("/v1/beneficiaries").status == 200
        assert c.delete(SA + "/" + sa["id"] + "/tokens/" + gone["id"]).status == 204
        assert_problem(m.get("/v1/beneficiaries"), 401, "invalid_token")
    assert c.delete(SA + "/" + sa["id"] + "/tokens/" + gone["id"]).status == 204  # again
    with server.client(token=keep["access_token"]) as m:
        assert m.get("/v1/beneficiaries").status == 200
    statuses = {t["id"]: t["status"] for t in c.get(SA + "/" + sa["id"] + "/tokens").json()["data"]}
    assert statuses == {keep["id"]: "active", gone["id"]: "revoked"}


def test_disabling_the_account_refuses_every_token_and_issues_none(server, ws):
    _, c = ws
    sa, _ = create_account(c)
    toks = [assert_json(issue(c, sa["id"], ["payments:read"]), 201) for _ in range(2)]
    r = c.post(SA + "/" + sa["id"] + "/disable")
    off = assert_json(r, 200)
    assert off["status"] == "disabled" and off["version"] == 2 and off["disabled_at"]
    assert assert_json(c.post(SA + "/" + sa["id"] + "/disable"), 200)["version"] == 2
    for t in toks:
        with server.client(token=t["access_token"]) as m:
            assert_problem(m.get("/v1/beneficiaries"), 401, "invalid_token")
    assert_problem(issue(c, sa["id"], ["payments:read"]), 409, "service_account_disabled")
    assert {t["status"] for t in c.get(SA + "/" + sa["id"] + "/tokens").json()["data"]} == \
        {"revoked"}


def test_logout_with_a_service_token_revokes_that_token(server, ws):
    _, c = ws
    sa, _ = create_account(c)
    tok = assert_json(issue(c, sa["id"], ["payments:read"]), 201)
    with server.client(token=tok["access_token"]) as m:
        assert m.post("/v1/api/logout").status == 204
        assert_problem(m.get("/v1/beneficiaries"), 401, "invalid_token")


def test_revocations_survive_a_restart(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        sa, _ = create_account(c)
        revoked = assert_json(issue(c, sa["id"], ["payments:read"]), 201)
        kept = assert_json(issue(c, sa["id"], ["payments:read"]), 201)
        assert c.delete(SA + "/" + sa["id"] + "/tokens/" + revoked["id"]).status == 204
        other, _ = create_account(c)
        disabled_tok = assert_json(issue(c, other["id"], ["payments:read"]), 201)
        assert c.post(SA + "/" + other["id"] + "/disable").status == 200
    s.restart()
    s.move_clock(400 * 86400)  # a year on: service tokens still have no expiry
    for tok, status in ((revoked, 401), (kept, 200), (disabled_tok, 401)):
        with s.client(token=tok["access_token"]) as m:
            assert m.get("/v1/beneficiaries").status == status
    s.move_clock(0)


def test_service_accounts_are_workspace_admin_only_and_isolated(server, ws):
    _, c = ws
    sa, _ = create_account(c)
    _, _, other = server.new_workspace()
    assert_problem(other.get(SA + "/" + sa["id"]), 404, "not_found")
    assert_problem(issue(other, sa["id"], ["payments:read"]), 404, "not_found")
    assert_problem(other.post(SA + "/" + sa["id"] + "/disable"), 404, "not_found")
    assert sa["id"] not in [x["id"] for x in other.get(SA).json()["data"]]
    tok = assert_json(issue(c, sa["id"], ["payments:read"]), 201)
    assert_problem(other.delete(SA + "/" + sa["id"] + "/tokens/" + tok["id"]), 404, "not_found")
    # a service token without workspace:admin cannot manage service accounts
    with server.client(token=tok["access_token"]) as m:
        assert_problem(m.get(SA), 403, "insufficient_scope")
