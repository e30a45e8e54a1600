"""Payments: creation against approved
beneficiaries, the approval policy, approvals (no self-approval, once per user, role limits,
exactly one payment.approved however approvers race), denial, cancellation, changes with
If-Match that re-run the rules, filters and pagination, the event history and the audit chain,
and workspace isolation."""

import contextlib
import uuid

import pytest

from conftest import Servers
from helpers import open_db
from helpers import ETAG, assert_json, assert_problem, assert_validation, create_beneficiary
from payments_team import BEN, PAY, POLICY, Team, events, race


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """This module's server: its settlement worker looks once, at start-up, then sleeps for an
    hour, so an approved payment stays approved while a test works with it
    (test_settlement.py drives the worker)."""
    servers = Servers(tmp_path_factory)
    yield servers(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 3600000})
    servers.close()


@pytest.fixture(scope="module")
def team(server):
    return Team(server)


# ---- beneficiaries must be approved by someone else first -------------------------------

def test_beneficiary_approval_is_four_eyes(team):
    ben = create_beneficiary(team.owner, external_id=None)
    assert ben["approval_status"] == "pending_approval"
    assert_problem(team.owner.put(BEN + "/" + ben["id"] + "/approve"), 403, "self_approval")
    r = team.approvers[0].put(BEN + "/" + ben["id"] + "/approve")
    got = assert_json(r, 200)
    assert got["approval_status"] == "approved" and got["version"] == ben["version"] + 1
    assert r.header("ETag") == '"v%d"' % got["version"]
    assert_problem(team.approvers[1].put(BEN + "/" + ben["id"] + "/approve"), 409,
                   "invalid_transition")
    # whoever changes where money goes cannot approve the new details either
    changed = assert_json(team.approvers[1].patch(BEN + "/" + ben["id"], json={
        "account_identification": {"scheme": "IBAN", "identification": "GB82WEST12345698765432"}}),
        200)
    assert changed["approval_status"] == "pending_approval"
    assert_problem(team.approvers[1].put(BEN + "/" + ben["id"] + "/approve"), 403, "self_approval")
    assert team.owner.put(BEN + "/" + ben["id"] + "/approve").status == 200


def test_beneficiary_deny_and_archived_edges(team):
    ben = create_beneficiary(team.owner, external_id=None)
    r = team.approvers[0].put(BEN + "/" + ben["id"] + "/deny", json={"reason": "no match"})
    assert assert_json(r, 200)["approval_status"] == "denied"
    assert_problem(team.approvers[0].put(BEN + "/" + ben["id"] + "/deny", json={}), 422,
                   "validation_failed")
    gone = create_beneficiary(team.owner, external_id=None)
    assert team.owner.delete(BEN + "/" + gone["id"]).status == 204
    assert_problem(team.approvers[0].put(BEN + "/" + gone["id"] + "/approve"), 409,
                   "beneficiary_archived")


# ---- create ----------------------------------------------------------------------------------

def test_a_payment_without_a_policy_tier_is_approved_at_once(team):
    ben = team.beneficiary()
    r = team.pay(ben, 1234, remittance_information="INV-1", external_id="PO-" + uuid.uuid4().hex[:8])
    p = assert_json(r, 201)
    assert p["id"].startswith("pay_") and p["object"] == "payment"
    assert p["status"] == "approved" and p["iso20022_status"] == "ACTC"
    assert p["approval"] == {"required": 0, "received": 0, "approvers": []}
    assert p["amount"] == 1234 and p["currency"] == "EUR" and p["priority"] == "normal"
    assert p["created_by"].startswith("usr_") and p["version"] == 1 and p["metadata"] == {}
    assert len(p["effective_date"]) == 10
    assert r.header("Location") == PAY + "/" + p["id"] and r.header("ETag") == '"v1"'
    assert assert_json(team.owner.get(PAY + "/" + p["id"]), 200) == p
    assert events(team.owner, p["id"]) == ["payment.created", "payment.approved"]


@pytest.mark.parametrize("case", ["unknown", "pending", "denied", "archived", "currency",
                                  "past", "conversion"])
def test_payment_rules_answer_422_at_their_pointer(team, case):
    ben = team.beneficiary()
    body = {}
    if case == "unknown":
        expect = {"/beneficiary_id": "beneficiary_not_found"}
        ben = {**ben, "id": "ben_" + "0" * 26}
    elif case in ("pending", "denied", "archived"):
        ben = create_beneficiary(team.owner, external_id=None)
        if case == "denied":
            team.approvers[0].put(BEN + "/" + ben["id"] + "/deny", json={"reason": "x"})
        if case == "archived":
            team.owner.delete(BEN + "/" + ben["id"])
        expect = {"/beneficiary_id": "beneficiary_archived" if case == "archived"
                  else "beneficiary_not_approved"}
    elif case == "currency":
        body = {"currency": "GBP"}
        expect = {"/currency": "currency_mismatch"}
    elif case == "past":
        body = {"effective_date": "2020-01-02"}
        expect = {"/effective_date": "effective_date_in_past"}
    else:
        body = {"funding_conversion_id": "cnv_" + "1" * 26}
        expect = {"/funding_conversion_id": "conversion_not_found"}
    before = len(team.owner.get(PAY + "?limit=100").json()["data"])
    assert_validation(team.pay(ben, **body), expect)
    assert len(team.owner.get(PAY + "?limit=100").json()["data"]) == before


@pytest.mark.parametrize("amount, code", [(0, "minimum"), (-5, "minimum"),
                                          (9007199254740992, "maximum"), (1.5, "type"),
                                          ("100", "type")])
def test_amounts_are_positive_integer_minor_units_up_to_2_53(team, amount, code):
    assert_validation(team.pay(team.beneficiary(), amount), {"/amount": code})


def test_the_largest_safe_amount_is_exact(team):
    p = assert_json(team.pay(team.beneficiary(), 9007199254740991), 201)
    assert p["amount"] == 9007199254740991


def test_external_id_is_unique_per_workspace(team):
    ben, ext = team.beneficiary(), "PO-" + uuid.uuid4().hex[:8]
    assert team.pay(ben, external_id=ext).status == 201
    assert_problem(team.pay(ben, external_id=ext), 409, "duplicate_external_id")


# ---- approval policy and approvals -----------------------------------------------------------

def test_policy_tiers_decide_how_many_approvals(team):
    got = team.policy([{"currency": "EUR", "min_amount": 100000, "approvals_required": 1},
                       {"currency": "EUR", "min_amount": 10000000, "approvals_required": 2}])
    assert len(got["tiers"]) == 2 and got["version"] >= 1
    assert assert_json(team.approvers[0].get(POLICY), 200) == got  # payments:read may see it
    assert_problem(team.approvers[0].put(POLICY, json={"tiers": []}), 403, "insufficient_scope")
    ben = team.beneficiary()
    assert assert_json(team.pay(ben, 99999), 201)["status"] == "approved"
    one = assert_json(team.pay(ben, 100000), 201)
    assert one["status"] == "pending_approval" and one["approval"]["required"] == 1
    assert one.get("iso20022_status") is None
    two = assert_json(team.pay(ben, 10000000), 201)
    assert two["approval"]["required"] == 2
    gbp = team.beneficiary("GBP")
    assert assert_json(team.pay(gbp, 10000000), 201)["status"] == "approved"  # no GBP tier
    r = team.owner.put(POLICY, json={"tiers": [
        {"currency": "EUR", "min_amount": 1, "approvals_required": 1},
        {"currency": "EUR", "min_amount": 1, "approvals_required": 2}]})
    assert_validation(r, {"/tiers/1": "duplicate_tier"})


def test_a_policy_never_set_is_version_1_and_its_first_setting_version_2(server):
    """One row per workspace (x-table singleton), written only when first set: the default
    answers version 1 with ETag "v1"; a setting under If-Match "v1" makes version 2; the stale
    "v1" then gets 412 and changes nothing."""
    fresh = Team(server)
    r = fresh.owner.get(POLICY)
    got = assert_json(r, 200)
    assert (got["version"], got["tiers"], got["velocity_window_hours"]) == (1, [], 24)
    assert r.header("ETag") == '"v1"'
    tiers = [{"currency": "EUR", "min_amount": 500, "approvals_required": 1}]
    r = fresh.owner.put(POLICY, json={"tiers": tiers, "velocity_window_hours": 6},
                        headers={"If-Match": '"v1"'})
    got = assert_json(r, 200)
    assert (got["version"], got["tiers"], got["velocity_window_hours"]) == (2, tiers, 6)
    assert r.header("ETag") == '"v2"'
    assert_problem(fresh.owner.put(POLICY, json={"tiers": []}, headers={"If-Match": '"v1"'}),
                   412, "precondition_failed")
    assert assert_json(fresh.owner.get(POLICY), 200) == got
    # another workspace still has the default
    assert assert_json(Team(server).owner.get(POLICY), 200)["version"] == 1


def test_a_policy_change_affects_only_new_payments(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    ben = team.beneficiary()
    old = assert_json(team.pay(ben, 500), 201)
    team.policy([])
    assert assert_json(team.pay(ben, 500), 201)["status"] == "approved"
    a = assert_json(team.approvers[0].put(PAY + "/" + old["id"] + "/approve"), 200)
    assert a["status"] == "pending_approval" and a["approval"]["required"] == 2
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 3}])
    b = assert_json(team.approvers[1].put(PAY + "/" + old["id"] + "/approve"), 200)
    assert b["status"] == "approved" and b["approval"]["required"] == 2


def test_approvals_need_other_people_once_each(team):
    team.policy([{"currency": "EUR", "min_amount": 1000, "approvals_required": 2}])
    ben = team.beneficiary()
    p = assert_json(team.pay(ben, 5000), 201)
    url = PAY + "/" + p["id"] + "/approve"
    assert_problem(team.owner.put(url), 403, "self_approval")
    a1 = assert_json(team.approvers[0].put(url), 200)
    assert a1["status"] == "pending_approval" and a1["approval"]["received"] == 1
    assert a1["approval"]["approvers"][0]["decision"] == "approved"
    assert_problem(team.approvers[0].put(url), 409, "already_approved")
    a2 = assert_json(team.approvers[1].put(url), 200)
    assert a2["status"] == "approved" and a2["approval"]["received"] == 2
    assert a2["version"] == p["version"] + 2
    assert_problem(team.approvers[2].put(url), 409, "invalid_transition")
    assert events(team.owner, p["id"]) == ["payment.created", "payment.approved"]


def test_two_approvers_racing_on_the_last_approval_make_one_approved_event(server, team):
    team.policy([{"currency": "EUR", "min_amount": 1000, "approvals_required": 2}])
    for _ in range(3):
        p = assert_json(team.pay(team.beneficiary(), 7000), 201)
        url = PAY + "/" + p["id"] + "/approve"
        assert team.approvers[0].put(url).status == 200
        results = race(team.approvers[1:], "put", url)
        assert sorted(r.status for r in results) == [200, 409], [r.status for r in results]
        assert events(team.owner, p["id"]).count("payment.approved") == 1


def test_a_role_approval_limit_caps_what_its_members_approve(server, team):
    team.owner.put("/v1/admin/roles/capped_approver", json={
        "name": "Capped", "scopes": ["payments:read", "payments:write"],
        "approval_limits": [{"currency": "EUR", "amount": 5000}]})
    capped = team.member("capped_approver")
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1},
                 {"currency": "GBP", "min_amount": 1, "approvals_required": 1}])
    small = assert_json(team.pay(team.beneficiary(), 5000), 201)
    big = assert_json(team.pay(team.beneficiary(), 5001), 201)
    gbp = assert_json(team.pay(team.beneficiary("GBP"), 10), 201)
    assert assert_json(capped.put(PAY + "/" + small["id"] + "/approve"), 200)["status"] == \
        "approved"
    assert_problem(capped.put(PAY + "/" + big["id"] + "/approve"), 403, "approval_limit_exceeded")
    assert_problem(capped.put(PAY + "/" + gbp["id"] + "/approve"), 403, "approval_limit_exceeded")
    r = team.owner.put("/v1/admin/roles/dup_limits", json={
        "name": "Dup", "scopes": ["payments:read"], "approval_limits": [
            {"currency": "EUR", "amount": 1}, {"currency": "EUR", "amount": 2}]})
    assert_validation(r, {"/approval_limits/1": "duplicate_currency"})


def test_a_single_denial_ends_the_payment(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    p = assert_json(team.pay(team.beneficiary(), 300), 201)
    assert_problem(team.owner.put(PAY + "/" + p["id"] + "/deny", json={"reason": "mine"}), 403,
                   "self_approval")
    team.approvers[0].put(PAY + "/" + p["id"] + "/approve")
    d = assert_json(team.approvers[1].put(PAY + "/" + p["id"] + "/deny",
                                          json={"reason": "Duplicate of PO-1"}), 200)
    assert d["status"] == "denied"
    assert [a["decision"] for a in d["approval"]["approvers"]] == ["approved", "denied"]
    assert d["approval"]["approvers"][1]["reason"] == "Duplicate of PO-1"
    assert_problem(team.approvers[2].put(PAY + "/" + p["id"] + "/approve"), 409,
                   "invalid_transition")
    assert_problem(team.owner.post(PAY + "/" + p["id"] + "/cancel"), 409, "invalid_transition")
    assert events(team.owner, p["id"])[-1] == "payment.denied"


# ---- cancel and change -----------------------------------------------------------------------

def test_cancel_by_the_creator_or_an_admin_only_and_once(team):
    team.policy([])
    ben = team.beneficiary()
    p = assert_json(team.pay(ben), 201)
    assert_problem(team.approvers[0].post(PAY + "/" + p["id"] + "/cancel"), 403, "not_creator")
    c = assert_json(team.owner.post(PAY + "/" + p["id"] + "/cancel"), 200)
    assert c["status"] == "cancelled" and c["iso20022_status"] == "CANC"
    assert_problem(team.owner.post(PAY + "/" + p["id"] + "/cancel"), 409, "invalid_transition")
    theirs = assert_json(team.pay(ben, client=team.approvers[0]), 201)
    assert team.owner.post(PAY + "/" + theirs["id"] + "/cancel").status == 200  # admin
    assert events(team.owner, p["id"]) == ["payment.created", "payment.approved",
                                           "payment.cancelled"]


def test_changes_need_if_match_and_rerun_the_rules(team):
    team.policy([{"currency": "EUR", "min_amount": 1000, "approvals_required": 1}])
    p = assert_json(team.pay(team.beneficiary(), 5000), 201)
    url = PAY + "/" + p["id"]
    assert_problem(team.owner.patch(url, json={"remittance_information": "x"}), 428,
                   "precondition_required")
    a = assert_json(team.approvers[0].put(url + "/approve"), 200)
    assert a["status"] == "approved"
    assert_problem(team.owner.patch(url, json={"remittance_information": "x"},
                                    headers={"If-Match": '"v1"'}), 412, "precondition_failed")
    # a change to what was not approved (metadata, external_id) keeps the approvals
    r = team.owner.patch(url, json={"external_id": "PO-" + uuid.uuid4().hex[:8],
                                    "metadata": {"k": "v"}}, headers={"If-Match": '"v2"'})
    kept = assert_json(r, 200)
    assert kept["status"] == "approved" and kept["approval"]["received"] == 1
    assert kept["metadata"] == {"k": "v"} and r.header("ETag") == '"v3"'
    # new remittance text clears them and runs the policy again
    redo = assert_json(team.owner.patch(url, json={"remittance_information": "INV-9"},
                                        headers={"If-Match": '"v3"'}), 200)
    assert redo["status"] == "pending_approval" and redo["remittance_information"] == "INV-9"
    assert redo["approval"] == {"required": 1, "received": 0, "approvers": []}
    # the approver who approved the old text may approve the new one
    assert assert_json(team.approvers[0].put(url + "/approve"), 200)["status"] == "approved"
    # below every tier again: straight back to approved
    low = assert_json(team.owner.patch(url, json={"amount": 10, "remittance_information": None},
                                       headers={"If-Match": '"v5"'}), 200)
    assert low["status"] == "approved" and "remittance_information" not in low
    team.owner.post(url + "/cancel")
    r = team.owner.patch(url, json={"amount": 20}, headers={"If-Match": '"v7"'})
    assert_problem(r, 409, "payment_not_editable")
    assert "cancelled" in r.json()["detail"]


def test_a_change_must_still_follow_the_rules(team):
    team.policy([])
    p = assert_json(team.pay(team.beneficiary()), 201)
    pending = create_beneficiary(team.owner, external_id=None)
    r = team.owner.patch(PAY + "/" + p["id"], json={"beneficiary_id": pending["id"]},
                         headers={"If-Match": '"v1"'})
    assert_validation(r, {"/beneficiary_id": "beneficiary_not_approved"})
    assert team.owner.get(PAY + "/" + p["id"]).json()["beneficiary_id"] == p["beneficiary_id"]


# ---- reading ---------------------------------------------------------------------------------

def test_filters_combine_and_pages_walk_every_match(server):
    t = Team(server)
    eur, gbp = t.beneficiary(), t.beneficiary("GBP")
    made = [assert_json(t.pay(eur, 100 * (i + 1)), 201) for i in range(7)]
    made += [assert_json(t.pay(gbp, 5000), 201) for _ in range(3)]
    assert_json(t.owner.post(PAY + "/" + made[0]["id"] + "/cancel"), 200)

    def walk(query):
        seen, url = [], PAY + "?limit=3" + query
        while True:
            page = assert_json(t.owner.get(url), 200)
            seen += page["data"]
            if not page["has_more"]:
                return seen
            url = PAY + "?limit=3" + query + "&cursor=" + page["next_cursor"]

    assert len(walk("")) == 10
    assert {p["currency"] for p in walk("&currency=GBP")} == {"GBP"}
    mid = walk("&currency=EUR&amount_gte=300&amount_lt=600")
    assert sorted(p["amount"] for p in mid) == [300, 400, 500]
    # newest first; payments made in the same millisecond follow their ids
    assert mid == sorted(mid, key=lambda p: (p["created_at"], p["id"]), reverse=True)
    assert [p["id"] for p in walk("&status=cancelled")] == [made[0]["id"]]
    assert len(walk("&beneficiary_id=" + gbp["id"])) == 3
    first = made[0]["created_at"]
    # the same instant written with an offset selects the same payments
    local = first[:11] + "%02d" % ((int(first[11:13]) + 2) % 24) + first[13:23] + "%2B02:00"
    if int(first[11:13]) + 2 < 24:
        assert len(walk("&created_gte=" + local)) == 10
    day = made[0]["effective_date"]
    assert len(walk("&effective_date_gte=" + day)) == 10
    assert walk("&effective_date_lt=" + day) == []
    page = t.owner.get(PAY + "?limit=3&currency=EUR").json()
    assert_problem(t.owner.get(PAY + "?limit=3&currency=GBP&cursor=" + page["next_cursor"]), 400,
                   "invalid_cursor")
    assert_validation(t.owner.get(PAY + "?status=lost&amount_gte=0"),
                      {"/query/status/0": "enum", "/query/amount_gte": "minimum"}, status=400,
                      code="invalid_request")


def test_the_event_history_is_oldest_first_with_the_payment_after_each_change(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    rid = str(uuid.uuid4())
    p = assert_json(team.owner.post(PAY, json={
        "amount": 10, "currency": "EUR", "type": "sepa", "originating_account": "acc",
        "beneficiary_id": team.beneficiary()["id"]}, headers={"X-Request-ID": rid}), 201)
    team.approvers[0].put(PAY + "/" + p["id"] + "/approve")
    data = assert_json(team.owner.get(PAY + "/" + p["id"] + "/events?limit=1"), 200)
    assert data["has_more"] is True
    first = data["data"][0]
    assert first["type"] == "payment.created" and first["object"] == "event"
    assert first["data"]["object"]["status"] == "pending_approval"
    assert first["request"]["id"] == rid and first["request"]["idempotency_key"] == rid
    nxt = assert_json(team.owner.get(PAY + "/" + p["id"] + "/events?limit=1&cursor=" +
                                     data["next_cursor"]), 200)
    assert nxt["data"][0]["type"] == "payment.approved"
    assert nxt["data"][0]["data"]["object"]["status"] == "approved"
    assert nxt["has_more"] is False


def test_every_change_is_audited_in_an_unbroken_chain(server, team):
    team.policy([])
    p = assert_json(team.pay(team.beneficiary()), 201)
    team.owner.post(PAY + "/" + p["id"] + "/cancel")
    db = open_db(server)
    with contextlib.closing(db):
        rows = db.execute("SELECT seq, action, resource_id, before_status, after_status, "
                          "prev_hash, hash FROM audit_events WHERE workspace_id = ? ORDER BY seq",
                          (team.wid,)).fetchall()
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    for prev, cur in zip(rows, rows[1:]):
        assert cur[5] == prev[6], "broken chain at seq %d" % cur[0]
    mine = [r[1:5] for r in rows if r[2] == p["id"]]
    assert mine == [("payment.created", p["id"], None, "approved"),
                    ("payment.approved", p["id"], "approved", "approved"),
                    ("payment.cancelled", p["id"], "approved", "cancelled")]


def test_another_workspaces_payment_is_invisible(server, team):
    team.policy([])
    p = assert_json(team.pay(team.beneficiary()), 201)
    _, _, other = server.new_workspace()
    for method, path in (("get", ""), ("put", "/approve"), ("post", "/cancel"),
                         ("get", "/events")):
        assert_problem(getattr(other, method)(PAY + "/" + p["id"] + path), 404, "not_found")
    r = other.put(PAY + "/" + p["id"] + "/deny", json={"reason": "x"})
    assert_problem(r, 404, "not_found")
    r = other.patch(PAY + "/" + p["id"], json={"amount": 5}, headers={"If-Match": '"v1"'})
    assert_problem(r, 404, "not_found")
    assert p["id"] not in [x["id"] for x in other.get(PAY + "?limit=100").json()["data"]]
    assert_validation(other.post(PAY, json={
        "amount": 1, "currency": "EUR", "type": "sepa", "originating_account": "a",
        "beneficiary_id": p["beneficiary_id"]}), {"/beneficiary_id": "beneficiary_not_found"})


def test_viewers_read_payments_but_cannot_move_money(team):
    viewer = team.member("viewer")
    p = assert_json(team.pay(team.beneficiary()), 201)
    assert assert_json(viewer.get(PAY + "/" + p["id"]), 200)["id"] == p["id"]
    assert_problem(team.pay(team.beneficiary(), client=viewer), 403, "insufficient_scope")
    assert_problem(viewer.put(PAY + "/" + p["id"] + "/approve"), 403, "insufficient_scope")
    assert ETAG.match(viewer.get(PAY + "/" + p["id"]).header("ETag"))


def test_a_list_shows_each_payment_as_it_is_now_page_after_page(team):
    """Lists keep each payment's JSON by (id, version) (x-table cache): a page read again after
    changes (an edit, an approval, a new payment among kept ones) shows every payment exactly
    as its own GET does, in order, however often the same page was read before."""
    team.policy([{"currency": "EUR", "min_amount": 1000, "approvals_required": 2}])
    ben = team.beneficiary()
    ids = [assert_json(team.pay(ben, 5000 + i), 201)["id"] for i in range(4)]
    url = PAY + "?limit=3&beneficiary_id=" + ben["id"]

    def same_as_gets():
        first = assert_json(team.owner.get(url), 200)
        rest = assert_json(team.owner.get(url + "&cursor=" + first["next_cursor"]), 200)
        listed = first["data"] + rest["data"]
        for p in listed:
            assert p == assert_json(team.owner.get(PAY + "/" + p["id"]), 200), p["id"]
        # newest first by (created_at, id): payments made in one millisecond go by id
        keys = [(p["created_at"], p["id"]) for p in listed]
        assert keys == sorted(keys, reverse=True), keys
        return sorted(p["id"] for p in listed)

    assert same_as_gets() == sorted(ids)
    assert same_as_gets() == sorted(ids)  # every row kept now
    cur = team.owner.get(PAY + "/" + ids[0])
    assert_json(team.owner.patch(PAY + "/" + ids[0], json={"amount": 7777},
                                 headers={"If-Match": cur.header("ETag")}), 200)
    assert_json(team.approvers[0].put(PAY + "/" + ids[1] + "/approve"), 200)
    ids.append(assert_json(team.pay(ben, 6000), 201)["id"])
    assert same_as_gets() == sorted(ids)
    listed = assert_json(team.owner.get(PAY + "?limit=10&beneficiary_id=" + ben["id"]), 200)
    by_id = {p["id"]: p for p in listed["data"]}
    assert by_id[ids[0]]["amount"] == 7777
    assert by_id[ids[1]]["approval"]["received"] == 1


def test_a_listed_payment_shows_the_same_decisions_as_its_own_get(team):
    """The list reads the decisions of a whole page in one query: each item must still show
    exactly its own current round, as GET /payments/{id} does."""
    team.policy([{"currency": "EUR", "min_amount": 1000, "approvals_required": 2}])
    ben = team.beneficiary()
    ids = [assert_json(team.pay(ben, 5000 + i), 201)["id"] for i in range(5)]
    a0, a1 = team.approvers[0], team.approvers[1]
    assert_json(a0.put(PAY + "/" + ids[1] + "/approve"), 200)
    assert_json(a0.put(PAY + "/" + ids[2] + "/approve"), 200)
    assert_json(a1.put(PAY + "/" + ids[2] + "/approve"), 200)
    assert_json(a1.put(PAY + "/" + ids[3] + "/approve"), 200)
    cur = team.owner.get(PAY + "/" + ids[3])
    assert_json(team.owner.patch(PAY + "/" + ids[3], json={"amount": 7777},
                                 headers={"If-Match": cur.header("ETag")}), 200)
    assert_json(a0.put(PAY + "/" + ids[4] + "/deny", json={"reason": "not ours"}), 200)
    listed = assert_json(team.owner.get(PAY + "?limit=100&beneficiary_id=" + ben["id"]), 200)
    by_id = {p["id"]: p for p in listed["data"]}
    assert sorted(by_id) == sorted(ids)
    for pid in ids:
        assert by_id[pid] == assert_json(team.owner.get(PAY + "/" + pid), 200), pid
    assert len(by_id[ids[1]]["approval"]["approvers"]) == 1
    assert by_id[ids[2]]["approval"]["received"] == 2
    assert by_id[ids[3]]["approval"]["approvers"] == []  # the change started a new round
    assert by_id[ids[4]]["approval"]["approvers"][0]["decision"] == "denied"
