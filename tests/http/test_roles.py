"""Roles grant scopes: the built-in roles of the spec's x-roles, and a workspace's own roles
(PUT /v1/admin/roles/{id}); a login token carries exactly its role's scopes, a refresh never
widens a session, and a member of a narrow role gets 403 outside it."""

import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_problem, assert_validation, beneficiary

ROLES = "/v1/admin/roles"
BUILTIN = ["owner", "admin", "treasurer", "approver", "accountant", "auditor", "viewer"]


@pytest.fixture(scope="module")
def ws(server):
    """A workspace of its own: (workspace id, owner client)."""
    wid, _, c = server.new_workspace()
    return wid, c


def member(server, wid, role):
    email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
    server.create_user(wid, email, role)
    return email, server.login(email, USER_PASSWORD, workspace_id=wid)


def test_built_in_roles_are_listed_first_and_marked_system(ws):
    _, c = ws
    data = assert_json(c.get(ROLES), 200)["data"]
    assert [r["key"] for r in data[:len(BUILTIN)]] == BUILTIN
    for r in data[:len(BUILTIN)]:
        assert r["system"] is True and r["object"] == "role" and r["name"] and r["scopes"]
        assert "version" not in r and "created_at" not in r
    viewer = next(r for r in data if r["key"] == "viewer")
    assert all(s.endswith(":read") for s in viewer["scopes"]) and "payments:read" in viewer["scopes"]
    assert next(r for r in data if r["key"] == "owner")["scopes"] == ["workspace:admin"]


def test_put_creates_then_replaces_a_custom_role(ws):
    _, c = ws
    r = c.put(ROLES + "/fx_desk", json={"name": "FX desk", "description": "FX",
                                         "scopes": ["rates:read", "conversions:read"]})
    role = assert_json(r, 201)
    assert r.header("ETag") == '"v1"'
    assert role["key"] == "fx_desk" and role["system"] is False and role["version"] == 1
    assert role["scopes"] == ["conversions:read", "rates:read"]  # catalogue order
    r = c.put(ROLES + "/fx_desk", json={"name": "FX desk", "scopes": ["rates:read"]},
              headers={"If-Match": '"v1"'})
    role = assert_json(r, 200)
    assert role["version"] == 2 and role["scopes"] == ["rates:read"] and "description" not in role
    assert r.header("ETag") == '"v2"'
    listed = [x for x in c.get(ROLES).json()["data"] if x["key"] == "fx_desk"]
    assert listed == [role]


def test_built_in_roles_cannot_be_changed(ws):
    _, c = ws
    for key in ("viewer", "owner"):
        r = c.put(ROLES + "/" + key, json={"name": "x", "scopes": ["rates:read"]})
        assert_problem(r, 409, "role_is_builtin")


def test_unknown_scopes_are_refused_at_their_index(ws):
    _, c = ws
    r = c.put(ROLES + "/typo_role", json={"name": "Typo",
                                           "scopes": ["rates:read", "rates:fly", "nope:never"]})
    assert_validation(r, {"/scopes/1": "unknown_scope", "/scopes/2": "unknown_scope"})
    assert all(x["key"] != "typo_role" for x in c.get(ROLES).json()["data"])


@pytest.mark.parametrize("key", ["Upper", "1abc", "a", "has-dash", "x" * 41])
def test_bad_role_keys_are_400(ws, key):
    _, c = ws
    r = c.put(ROLES + "/" + key, json={"name": "x", "scopes": ["rates:read"]})
    assert_validation(r, {"/path/id": None}, status=400, code="invalid_request")


def test_if_match_must_name_the_current_version(ws):
    _, c = ws
    assert c.put(ROLES + "/versioned", json={"name": "v", "scopes": ["rates:read"]}).status == 201
    assert c.put(ROLES + "/versioned", json={"name": "v2", "scopes": ["rates:read"]}).status == 200
    r = c.put(ROLES + "/versioned", json={"name": "lost", "scopes": ["rates:read"]},
              headers={"If-Match": '"v1"'})
    assert_problem(r, 412, "precondition_failed")
    r = c.put(ROLES + "/not_there", json={"name": "x", "scopes": ["rates:read"]},
              headers={"If-Match": '"v1"'})
    assert_problem(r, 412, "precondition_failed")
    assert all(x["key"] != "not_there" for x in c.get(ROLES).json()["data"])


def test_a_custom_role_member_gets_exactly_its_scopes(server, ws):
    wid, c = ws
    assert c.put(ROLES + "/rates_only", json={"name": "Rates", "scopes": ["rates:read"]}) \
        .status == 201
    _, tok = member(server, wid, "rates_only")
    assert tok["scope"] == "rates:read"
    with server.client(token=tok["access_token"]) as m:
        r = m.get("/v1/beneficiaries")
        assert_problem(r, 403, "insufficient_scope")
        assert 'scope="payments:read"' in r.header("WWW-Authenticate")
        assert_problem(m.get(ROLES), 403, "insufficient_scope")


def test_a_refresh_follows_a_narrowed_role_but_never_widens_the_session(server, ws):
    wid, c = ws
    c.put(ROLES + "/shifting", json={"name": "S", "scopes": ["rates:read", "payments:read"]})
    _, tok = member(server, wid, "shifting")
    assert tok["scope"] == "payments:read rates:read"
    refresh = "/v1/accounts/auth/oauth/refresh"
    c.put(ROLES + "/shifting", json={"name": "S", "scopes": ["rates:read"]})
    with server.client() as anon:
        narrowed = assert_json(anon.post(refresh, json={"refresh_token": tok["refresh_token"]}),
                               200)
        assert narrowed["scope"] == "rates:read"
        c.put(ROLES + "/shifting", json={"name": "S", "scopes": ["rates:read", "payments:read",
                                                                 "payments:write"]})
        again = assert_json(anon.post(refresh, json={"refresh_token": narrowed["refresh_token"]}),
                            200)
        assert again["scope"] == "payments:read rates:read"  # the login's grant, not more


@pytest.mark.parametrize("role, can_create", [("treasurer", True), ("approver", True),
                                              ("accountant", False), ("auditor", False),
                                              ("viewer", False), ("admin", True)])
def test_built_in_roles_grant_what_they_say(server, ws, role, can_create):
    wid, _ = ws
    _, tok = member(server, wid, role)
    with server.client(token=tok["access_token"]) as m:
        assert m.get("/v1/beneficiaries").status == 200
        r = m.post("/v1/beneficiaries", json=beneficiary(external_id=None))
        assert r.status == (201 if can_create else 403), r


def test_custom_roles_belong_to_their_workspace(server, ws):
    _, c = ws
    c.put(ROLES + "/mine_only", json={"name": "Mine", "scopes": ["rates:read"]})
    other_wid, _, other = server.new_workspace()
    assert all(x["key"] != "mine_only" for x in other.get(ROLES).json()["data"])
    r = server.admin("create-user", "--workspace", other_wid, "--email", "x-%s@example.com" %
                     uuid.uuid4().hex[:6], "--role", "mine_only", check=False)
    assert r.returncode == 2 and "neither a built-in role" in r.stderr


def test_a_workspace_has_at_most_100_roles_of_its_own(server):
    _, _, c = server.new_workspace()
    for i in range(100):
        assert c.put(ROLES + "/r%03d" % i, json={"name": "r", "scopes": ["rates:read"]}) \
            .status == 201
    assert_problem(c.put(ROLES + "/r100", json={"name": "r", "scopes": ["rates:read"]}), 422,
                   "role_limit_reached")
    assert c.put(ROLES + "/r000", json={"name": "still", "scopes": ["rates:read"]}).status == 200
    assert len(c.get(ROLES).json()["data"]) == len(BUILTIN) + 100
