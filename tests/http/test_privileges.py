"""Privileges are current on every request: the scopes a request may use are its token's
intersected with what the principal's role, membership, service account and OAuth client allow
now. A role narrowed (or replaced by unrelated scopes), a client narrowed or disabled: the very
next request with an old token sees it (runtime/privileges.h), and a refresh never hands the old
privileges back."""

import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_problem, audit_of, beneficiary
from oauth_flow import CLIENTS, TOKEN, Workspace, form, tokens_for

ROLES = "/v1/admin/roles"
SA = "/v1/admin/service-accounts"


@pytest.fixture(scope="module")
def ws(server):
    return Workspace(server)


ROLE_KEYS = set()  # the keys put_role has created


def put_role(owner, key, scopes):
    """Creates (201) or, the second time for a key, replaces (200) the role key."""
    r = owner.put(ROLES + "/" + key, json={"name": key, "scopes": scopes})
    assert r.status == (200 if key in ROLE_KEYS else 201), r
    ROLE_KEYS.add(key)
    return r


def writes(client):
    """Status of one write the payments:write scope allows."""
    return client.post("/v1/beneficiaries", json=beneficiary(external_id=None)).status


def test_a_service_account_token_loses_a_narrowed_roles_scopes_at_once(server, ws):
    key = "sync_" + uuid.uuid4().hex[:6]
    put_role(ws.owner, key, ["payments:read", "payments:write"])
    sa = assert_json(ws.owner.post(SA, json={"name": "erp", "role": key}), 201)
    tok = assert_json(ws.owner.post(SA + "/" + sa["id"] + "/tokens",
                                    json={"scopes": ["payments:read", "payments:write"]}), 201)
    m = server.client(token=tok["access_token"])
    assert writes(m) == 201
    put_role(ws.owner, key, ["payments:read"])  # read-only now
    r = m.post("/v1/beneficiaries", json=beneficiary(external_id=None))
    assert_problem(r, 403, "insufficient_scope")
    assert m.get("/v1/beneficiaries").status == 200
    # Widened again: the token's own scopes come back, never more than it was issued.
    put_role(ws.owner, key, ["payments:read", "payments:write", "workspace:admin"])
    assert writes(m) == 201
    assert_problem(m.get(ROLES), 403, "insufficient_scope")


def test_a_user_token_follows_its_role_within_its_lifetime(server, ws):
    key = "desk_" + uuid.uuid4().hex[:6]
    put_role(ws.owner, key, ["payments:read", "payments:write"])
    email = "desk-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(ws.wid, email, key)
    tok = server.login(email, USER_PASSWORD, workspace_id=ws.wid)
    m = server.client(token=tok["access_token"])
    assert writes(m) == 201
    put_role(ws.owner, key, ["payments:read"])
    assert_problem(m.post("/v1/beneficiaries", json=beneficiary(external_id=None)), 403,
                   "insufficient_scope")
    # A refresh gives the narrowed scopes too.
    r = server.client().post("/v1/accounts/auth/oauth/refresh", token=False,
                             json={"refresh_token": tok["refresh_token"]})
    assert assert_json(r, 200)["scope"] == "payments:read"


def test_a_custom_role_narrowed_to_unrelated_scopes_stops_its_holders_at_once(server, ws):
    """A user's token whose custom role is replaced (PUT) by one granting only unrelated scopes
    loses what it had: the very next request is refused."""
    key = "swap_" + uuid.uuid4().hex[:6]
    put_role(ws.owner, key, ["payments:read"])
    email = "swap-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(ws.wid, email, key)
    m = server.client(token=server.login(email, USER_PASSWORD, workspace_id=ws.wid)
                      ["access_token"])
    assert m.get("/v1/payments").status == 200
    put_role(ws.owner, key, ["rates:read"])
    assert_problem(m.get("/v1/payments"), 403, "insufficient_scope")


def test_a_narrowed_oauth_client_narrows_its_tokens_and_refreshes_at_once(server, ws):
    app = ws.register(scopes=("payments:read", "payments:write"))
    tok = tokens_for(server, ws, app, ws.member("treasurer"))
    assert tok["scope"] == "payments:read payments:write"
    m = server.client(token=tok["access_token"])
    assert writes(m) == 201
    current = assert_json(ws.owner.get(CLIENTS + "/" + app.id), 200)
    r = ws.owner.patch(CLIENTS + "/" + app.id, json={"scopes": ["payments:read"]},
                       headers={"If-Match": '"v%d"' % current["version"]})
    assert assert_json(r, 200)["scopes"] == ["payments:read"]
    assert_problem(m.post("/v1/beneficiaries", json=beneficiary(external_id=None)), 403,
                   "insufficient_scope")
    assert m.get("/v1/payments").status == 200
    r = server.client().post(TOKEN, token=False, content_type="application/x-www-form-urlencoded",
                             body=form(grant_type="refresh_token",
                                       refresh_token=tok["refresh_token"], client_id=app.id))
    refreshed = assert_json(r, 200)
    assert refreshed["scope"] == "payments:read"
    assert_problem(server.client(token=refreshed["access_token"])
                   .post("/v1/beneficiaries", json=beneficiary(external_id=None)), 403,
                   "insufficient_scope")


def test_a_service_account_of_a_role_turned_admin_free_loses_admin_at_once(server, ws):
    """workspace:admin expands to every scope: taking it away takes them all."""
    key = "ops_" + uuid.uuid4().hex[:6]
    put_role(ws.owner, key, ["workspace:admin"])
    sa = assert_json(ws.owner.post(SA, json={"name": "ops", "role": key}), 201)
    tok = assert_json(ws.owner.post(SA + "/" + sa["id"] + "/tokens",
                                    json={"scopes": ["workspace:admin"]}), 201)
    m = server.client(token=tok["access_token"])
    assert m.get(ROLES).status == 200
    put_role(ws.owner, key, ["rates:read"])
    assert_problem(m.get(ROLES), 403, "insufficient_scope")
    assert_problem(m.get("/v1/payments"), 403, "insufficient_scope")


def test_the_privilege_check_holds_across_many_requests_and_principals(server, ws):
    """The cache answers per (workspace, principal, client): one principal's change does not
    leak into another's cached answer."""
    a, b = ("pa_" + uuid.uuid4().hex[:6]), ("pb_" + uuid.uuid4().hex[:6])
    put_role(ws.owner, a, ["payments:read", "payments:write"])
    put_role(ws.owner, b, ["payments:read", "payments:write"])
    clients = {}
    for key in (a, b):
        email = "%s@example.com" % key
        server.create_user(ws.wid, email, key)
        clients[key] = server.client(token=server.login(email, USER_PASSWORD,
                                                        workspace_id=ws.wid)["access_token"])
    for _ in range(5):
        assert clients[a].get("/v1/payments").status == 200
        assert clients[b].get("/v1/payments").status == 200
    put_role(ws.owner, a, ["rates:read"])
    assert_problem(clients[a].get("/v1/payments"), 403, "insufficient_scope")
    assert clients[b].get("/v1/payments").status == 200
    assert writes(clients[b]) == 201


def test_every_privilege_change_writes_an_audit_record(server, ws):
    """Roles, service accounts and their tokens, OAuth clients and grants: who changed which
    privilege, with the scopes before and after."""
    key = "aud_" + uuid.uuid4().hex[:6]
    put_role(ws.owner, key, ["payments:read", "payments:write"])
    put_role(ws.owner, key, ["payments:read"])
    rows = audit_of(server, key)
    assert [r[1] for r in rows] == ["role.created", "role.updated"]
    assert rows[1][4] == "scopes: [payments:read payments:write] -> [payments:read]"
    assert len({r[0] for r in rows}) == 1 and rows[0][0].startswith("usr_")

    sa = assert_json(ws.owner.post(SA, json={"name": "audited", "role": key}), 201)
    tok = assert_json(ws.owner.post(SA + "/" + sa["id"] + "/tokens",
                                    json={"scopes": ["payments:read"]}), 201)
    assert ws.owner.delete(SA + "/" + sa["id"] + "/tokens/" + tok["id"]).status == 204
    assert ws.owner.post(SA + "/" + sa["id"] + "/disable").status == 200
    assert [r[1:4] for r in audit_of(server, sa["id"])] == [
        ("service_account.created", None, "active"),
        ("service_account.disabled", "active", "disabled")]
    assert [r[1:4] for r in audit_of(server, tok["id"])] == [
        ("service_account_token.issued", None, "active"),
        ("service_account_token.revoked", "active", "revoked")]

    app = ws.register(scopes=("payments:read", "payments:write"))
    r = ws.owner.patch(CLIENTS + "/" + app.id, json={"scopes": ["payments:read"],
                                                     "status": "disabled"},
                       headers={"If-Match": '"v1"'})
    assert_json(r, 200)
    rows = audit_of(server, app.id)
    assert [r[1:4] for r in rows] == [("oauth_client.created", None, "active"),
                                      ("oauth_client.updated", "active", "disabled")]
    assert rows[1][4].startswith("scopes: [payments:read payments:write] -> [payments:read]")
