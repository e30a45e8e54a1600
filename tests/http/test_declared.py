"""Behaviour the spec declares and the generated dispatcher performs (codegen/declared.py): the
audit record of a write (x-audit: action, resource, id, the response member recorded as its
status, the request members copied into its detail), the domain event of a change (x-event:
the response body as the event's object), a required If-Match (x-if-match: 428), and the
problem codes the served document lists (x-problem-codes). tests/http/test_by_kind_*.py run the
same over every operation; these pin the content on a few."""

import json

from helpers import (assert_json, assert_problem, audit_of, committed_row, create_beneficiary,
                     new_request_id)

SETTINGS = "/v1/workspace/settings"


def audit_by_request(server, request_id):
    return committed_row(server, "SELECT action, resource_type, resource_id, before_status, "
                                 "after_status, detail, actor_id FROM audit_events "
                                 "WHERE request_id = ?", (request_id,))


def test_a_write_no_handler_audits_gets_its_declared_record_with_the_request_members(server):
    wid = server.login()["workspace_id"]
    rid = new_request_id()
    with server.client(token=server.token) as c:
        cur = assert_json(c.get("/v1/workspace"), 200)["version"]
        r = c.put(SETTINGS, json={"token_lifetime_seconds": 3600},
                  headers={"If-Match": '"v%d"' % cur, "X-Request-ID": rid})
        assert_json(r, 200)
    action, rtype, rid_, before, after, detail, actor = audit_by_request(server, rid)
    assert (action, rtype, rid_) == ("workspace.settings_updated", "workspace", wid)
    assert before is None and after is None and actor.startswith("usr_")
    assert json.loads(detail) == {"request": {"token_lifetime_seconds": 3600}}


def test_a_refused_write_records_nothing(server):
    rid = new_request_id()
    with server.client(token=server.token) as c:
        r = c.put(SETTINGS, json={"token_lifetime_seconds": 5},
                  headers={"X-Request-ID": rid})
        assert_problem(r, 422, "validation_failed")
    db_row = committed_row(server, "SELECT count(*) FROM audit_events WHERE request_id = ?",
                           (rid,), timeout=0.2)
    assert db_row[0] == 0


def test_logout_is_recorded_against_the_session_it_ends(server):
    pair = server.login()
    rid = new_request_id()
    with server.client(token=pair["access_token"]) as c:
        assert c.post("/v1/api/logout", headers={"X-Request-ID": rid}).status == 204
    action, rtype, sid, *_ = audit_by_request(server, rid)
    assert (action, rtype) == ("session.ended", "session") and sid


def test_a_beneficiary_change_is_an_event_whose_object_is_the_answer(server):
    server.login()
    with server.client(token=server.token) as c:
        b = create_beneficiary(c)
        r = c.patch("/v1/beneficiaries/%s" % b["id"], json={"name": "Renamed Ltd"},
                    headers={"If-Match": '"v1"'})
        changed = assert_json(r, 200)
    rows = []
    for t in ("beneficiary.created", "beneficiary.updated"):
        rows.append(committed_row(server, "SELECT resource_type, resource_id, resource_version, "
                                          "data FROM events WHERE type = ? AND resource_id = ?",
                                  (t, b["id"])))
    (t1, id1, v1, d1), (t2, id2, v2, d2) = rows
    assert (t1, id1, v1) == ("beneficiary", b["id"], 1)
    assert json.loads(d1)["object"] == b
    assert (t2, id2, v2) == ("beneficiary", b["id"], 2)
    assert json.loads(d2)["object"] == changed
    # the audit record the handler reported is the declared one: one per request, its status
    rec = committed_row(server, "SELECT count(*), max(after_status) FROM audit_events WHERE "
                                "resource_id = ? AND action = 'beneficiary.updated'", (b["id"],))
    assert rec == (1, "pending_approval")


def test_a_change_that_requires_if_match_is_428_without_it_before_anything_is_read(server):
    server.login()
    with server.client(token=server.token) as c:
        # no such payment: the declared precondition is checked before the handler looks
        # (after the body: an invalid one is 422 first)
        r = c.patch("/v1/payments/pay_01jq6d4e5f6g7h8j9k0m1n2p3q", json={"external_id": "ext-1"})
        assert_problem(r, 428, "precondition_required")
        assert "If-Match" in r.json()["detail"]
        r = c.patch("/v1/payments/pay_01jq6d4e5f6g7h8j9k0m1n2p3q", json={"external_id": "ext-1"},
                    headers={"If-Match": '"v1"'})
        assert_problem(r, 404, "not_found")


def test_the_served_document_lists_every_problem_code_with_its_title(server):
    with server.client() as c:
        doc = assert_json(c.get("/v1/openapi.json"), 200)
    codes = doc["x-problem-codes"]
    assert codes["not_found"] == "Resource not found"
    assert codes["precondition_required"] == "Precondition required"
    with server.client(token=server.token) as c:
        r = c.get("/v1/beneficiaries/ben_01jq6d4e5f6g7h8j9k0m1n2p3q")
        body = assert_problem(r, 404, "not_found")
        assert body["title"] == codes["not_found"]


def test_an_applications_grant_is_recorded_as_the_users_consent_in_its_workspace(server):
    """The consent page has no token: its declared record (id: handler) is the handler's, in
    the application's workspace, by the user who approved."""
    from oauth_flow import Workspace, consent, pkce, query_of
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("treasurer")
    r = consent(server, app, email, pkce()[1])
    assert r.status == 302 and "code" in query_of(r.header("Location")), r
    row = committed_row(server, "SELECT a.actor_id, a.resource_id, a.after_status, a.detail "
                                "FROM audit_events a JOIN users u ON u.id = a.actor_id "
                                "WHERE a.workspace_id = ? AND a.action = 'oauth_grant.granted' "
                                "AND u.email_norm = ?", (ws.wid, email.lower()))
    assert row is not None, "no oauth_grant.granted record"
    actor, grant, after, detail = row
    assert grant.startswith("grt_") and after == "active"
    assert app.id in detail and "payments:read" in detail
    # the grant the record names is the one the user's grant list shows
    token = ws.token(email)
    with server.client(token=token) as c:
        grants = assert_json(c.get("/v1/accounts/oauth/grants"), 200)["data"]
    assert grant in [g["id"] for g in grants]


def test_a_widened_grants_record_says_what_was_consented_to_and_what_the_grant_holds(server):
    """A second consent for other scopes widens the one grant: its record names the scopes
    consented to this time and the union the grant holds afterwards."""
    from oauth_flow import Workspace, consent, pkce
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("treasurer")
    assert consent(server, app, email, pkce()[1], scope="payments:read").status == 302
    assert consent(server, app, email, pkce()[1], scope="payments:write").status == 302
    last = committed_row(server, "SELECT a.resource_id FROM audit_events a JOIN users u ON "
                                 "u.id = a.actor_id WHERE a.workspace_id = ? AND a.action = "
                                 "'oauth_grant.granted' AND u.email_norm = ? AND a.detail LIKE "
                                 "'%consented to [payments:write]%'", (ws.wid, email.lower()))
    assert last is not None, "no record of the second consent"
    rows = [(last[0], detail) for _, action, _, _, detail in audit_of(server, last[0])
            if action == "oauth_grant.granted"]
    assert len(rows) == 2 and rows[0][0] == rows[1][0], rows
    assert rows[0][1].endswith("consented to [payments:read]; the grant holds [payments:read]")
    assert rows[1][1].endswith("consented to [payments:write]; the grant holds "
                               "[payments:read payments:write]"), rows[1][1]
