"""Batches of payments: all-or-nothing creation with per-item pointers, the
approval policy on each currency's total, decisions on the batch for every item (four eyes,
once each, role limits, one approval event however approvers race), items that cannot be
decided alone, cancellation, workspace isolation, and the group status as items settle."""

import contextlib
import uuid

import pytest

from conftest import Servers
from helpers import open_db
from helpers import assert_json, assert_problem, assert_validation
from payments_team import PAY, Team, events, race, wait_status

BATCHES = PAY + "/batches"


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """The settlement worker sleeps an hour between looks here, so approved items stay put."""
    servers = Servers(tmp_path_factory)
    yield servers(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 3600000})
    servers.close()


@pytest.fixture(scope="module")
def team(server):
    t = Team(server)
    t.eur = t.beneficiary()
    t.gbp = t.beneficiary("GBP")
    return t


def item(ben, amount=1000, **over):
    return {"amount": amount, "currency": ben["currency"], "type": "sepa",
            "originating_account": "acc-operating", "beneficiary_id": ben["id"], **over}


def payment_count(server, wid):
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute("SELECT count(*) FROM payments WHERE workspace_id = ?",
                          (wid,)).fetchone()[0]


def test_a_batch_orders_every_item_at_once_in_the_given_order(team):
    team.policy([])
    body = {"external_id": "run-" + uuid.uuid4().hex[:8], "metadata": {"run": "march"},
            "items": [item(team.eur, 700, external_id="A-" + uuid.uuid4().hex[:8]),
                      item(team.gbp, 50), item(team.eur, 300)]}
    r = team.owner.post(BATCHES, json=body)
    b = assert_json(r, 201)
    assert r.header("Location") == BATCHES + "/" + b["id"] and r.header("ETag") == '"v1"'
    assert b["object"] == "payment_batch" and b["status"] == "approved"
    assert b["item_count"] == 3 and b["external_id"] == body["external_id"]
    assert b["totals"] == [{"currency": "EUR", "amount": 1000, "count": 2},
                           {"currency": "GBP", "amount": 50, "count": 1}]
    assert b["counts_by_status"] == {"approved": 3}
    assert [(i["amount"], i["currency"], i["status"]) for i in b["items"]] == [
        (700, "EUR", "approved"), (50, "GBP", "approved"), (300, "EUR", "approved")]
    assert b["items"][0]["external_id"] == body["items"][0]["external_id"]
    assert b["approval"] == {"required": 0, "received": 0, "approvers": []}
    assert assert_json(team.owner.get(BATCHES + "/" + b["id"]), 200) == b
    for it in b["items"]:
        p = assert_json(team.owner.get(PAY + "/" + it["payment_id"]), 200)
        assert p["batch_id"] == b["id"] and p["status"] == "approved"
        assert events(team.owner, p["id"]) == ["payment.created", "payment.approved"]
    listed = assert_json(team.owner.get(PAY + "?batch_id=" + b["id"]), 200)["data"]
    assert sorted(p["id"] for p in listed) == sorted(i["payment_id"] for i in b["items"])


def test_items_are_checked_one_by_one_and_nothing_is_created_on_error(server, team):
    before = payment_count(server, team.wid)
    archived = team.beneficiary()
    team.owner.delete("/v1/beneficiaries/" + archived["id"])
    r = team.owner.post(BATCHES, json={"items": [
        item(team.eur), item(team.eur, -5), item(team.eur, beneficiary_id="ben_" + "0" * 26),
        item(team.eur, currency="GBP"), item(archived), item(team.eur, effective_date="2020-01-01"),
        item(team.eur, amount=1, bogus=True)]})
    assert_validation(r, {"/items/1/amount": "minimum",
                          "/items/6/bogus": "additional_property"}, exact=False)
    r = team.owner.post(BATCHES, json={"items": [
        item(team.eur), item(team.eur, beneficiary_id="ben_" + "0" * 26),
        item(team.eur, currency="GBP"), item(archived),
        item(team.eur, effective_date="2020-01-01")]})
    assert_validation(r, {"/items/1/beneficiary_id": "beneficiary_not_found",
                          "/items/2/currency": "currency_mismatch",
                          "/items/3/beneficiary_id": "beneficiary_archived",
                          "/items/4/effective_date": "effective_date_in_past"})
    assert payment_count(server, team.wid) == before


def test_a_batch_holds_one_to_a_thousand_items(server, team):
    team.policy([])
    assert_validation(team.owner.post(BATCHES, json={"items": []}), {"/items": "min_items"})
    too_many = {"items": [item(team.eur, 1)] * 1001}
    assert_validation(team.owner.post(BATCHES, json=too_many), {"/items": "max_items"})
    assert_validation(team.owner.post(BATCHES, json={}), {"/items": "required"}, exact=False)
    before = payment_count(server, team.wid)
    full = assert_json(team.owner.post(BATCHES, json={"items": [
        item(team.eur, 1 + i % 7) for i in range(1000)]}), 201)
    assert full["item_count"] == 1000 and len(full["items"]) == 1000
    assert full["totals"] == [{"currency": "EUR", "amount": sum(1 + i % 7 for i in range(1000)),
                               "count": 1000}]
    assert payment_count(server, team.wid) == before + 1000


def test_external_ids_are_unique_within_the_batch_and_the_workspace(team):
    team.policy([])
    used = "X-" + uuid.uuid4().hex[:8]
    assert_json(team.pay(team.eur, external_id=used), 201)
    twice = "T-" + uuid.uuid4().hex[:8]
    r = team.owner.post(BATCHES, json={"items": [
        item(team.eur, external_id=twice), item(team.eur, external_id=twice),
        item(team.eur, external_id=used)]})
    assert_validation(r, {"/items/1/external_id": "duplicate_external_id",
                          "/items/2/external_id": "duplicate_external_id"})
    batch_ext = "B-" + uuid.uuid4().hex[:8]
    assert_json(team.owner.post(BATCHES, json={"external_id": batch_ext,
                                               "items": [item(team.eur)]}), 201)
    assert_problem(team.owner.post(BATCHES, json={"external_id": batch_ext,
                                                  "items": [item(team.eur)]}),
                   409, "duplicate_external_id")


def test_a_currency_total_past_the_safe_integer_range_is_refused(team):
    team.policy([])
    r = team.owner.post(BATCHES, json={"items": [item(team.eur, 9007199254740991),
                                                 item(team.gbp, 9007199254740991),
                                                 item(team.eur, 1)]})
    assert_validation(r, {"/items": "total_too_large"})
    ok = assert_json(team.owner.post(BATCHES, json={"items": [
        item(team.eur, 9007199254740990), item(team.eur, 1)]}), 201)
    assert ok["totals"][0]["amount"] == 9007199254740991


def test_the_policy_applies_to_each_currency_total(team):
    team.policy([{"currency": "EUR", "min_amount": 1000, "approvals_required": 1},
                 {"currency": "GBP", "min_amount": 100, "approvals_required": 2}])
    # Each item is under the EUR tier; their total is not.
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur, 600),
                                                             item(team.eur, 600)]}), 201)
    assert b["status"] == "pending_approval" and b["approval"]["required"] == 1
    assert b["counts_by_status"] == {"pending_approval": 2}
    p = assert_json(team.owner.get(PAY + "/" + b["items"][0]["payment_id"]), 200)
    assert p["status"] == "pending_approval" and p["approval"]["required"] == 1
    both = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur, 600),
                                                                item(team.gbp, 100)]}), 201)
    assert both["approval"]["required"] == 2  # the largest any currency asks
    # under the tier, to a beneficiary the owner has not paid today (the velocity rule counts
    # the owner's earlier payments to team.eur: test_maker_checker.py)
    under = assert_json(team.owner.post(BATCHES, json={"items": [item(team.beneficiary(),
                                                                      999)]}), 201)
    assert under["status"] == "approved"


def test_approvals_are_decided_on_the_batch_for_every_item(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur, 10),
                                                             item(team.eur, 20)]}), 201)
    url = BATCHES + "/" + b["id"]
    assert_problem(team.owner.put(url + "/approve"), 403, "self_approval")
    tags = {it["payment_id"]: team.owner.get(PAY + "/" + it["payment_id"]).header("ETag")
            for it in b["items"]}
    one = assert_json(team.approvers[0].put(url + "/approve"), 200)
    assert one["status"] == "pending_approval" and one["approval"]["received"] == 1
    assert one["version"] == 2
    # each item now shows the first decision: a new version of it, so its ETag moved too
    for pid, tag in tags.items():
        r = team.owner.get(PAY + "/" + pid)
        p = assert_json(r, 200)
        assert p["approval"]["received"] == 1 and r.header("ETag") != tag, (pid, tag)
    assert_problem(team.approvers[0].put(url + "/approve"), 409, "already_approved")
    two = assert_json(team.approvers[1].put(url + "/approve"), 200)
    assert two["status"] == "approved" and two["counts_by_status"] == {"approved": 2}
    assert [a["decision"] for a in two["approval"]["approvers"]] == ["approved", "approved"]
    assert_problem(team.approvers[2].put(url + "/approve"), 409, "invalid_transition")
    for it in two["items"]:
        p = assert_json(team.owner.get(PAY + "/" + it["payment_id"]), 200)
        assert p["status"] == "approved" and p["approval"]["received"] == 2
        assert events(team.owner, p["id"]) == ["payment.created", "payment.approved"]
    # the list shows each item's decisions as its own GET does (the batch's decisions are
    # noted on its payments for the list)
    listed = assert_json(team.owner.get(PAY + "?batch_id=" + b["id"]), 200)["data"]
    assert len(listed) == 2
    for p in listed:
        assert p == assert_json(team.owner.get(PAY + "/" + p["id"]), 200)
        assert [a["decision"] for a in p["approval"]["approvers"]] == ["approved", "approved"]


def test_items_cannot_be_decided_changed_or_cancelled_alone(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)]}), 201)
    pid = b["items"][0]["payment_id"]
    assert_problem(team.approvers[0].put(PAY + "/" + pid + "/approve"), 409, "part_of_batch")
    assert_problem(team.approvers[0].put(PAY + "/" + pid + "/deny", json={"reason": "x"}), 409,
                   "part_of_batch")
    assert_problem(team.owner.post(PAY + "/" + pid + "/cancel"), 409, "part_of_batch")
    assert_problem(team.owner.patch(PAY + "/" + pid, json={"amount": 5},
                                    headers={"If-Match": '"v1"'}), 409, "part_of_batch")
    assert assert_json(team.owner.get(PAY + "/" + pid), 200)["version"] == 1


def test_two_approvers_racing_on_the_last_approval_approve_each_item_once(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    for _ in range(3):
        b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)] * 3}), 201)
        url = BATCHES + "/" + b["id"] + "/approve"
        assert team.approvers[0].put(url).status == 200
        results = race(team.approvers[1:], "put", url)
        assert sorted(r.status for r in results) == [200, 409], [r.status for r in results]
        for it in b["items"]:
            assert events(team.owner, it["payment_id"]).count("payment.approved") == 1


def test_a_role_limit_applies_to_the_batch_total(team):
    team.owner.put("/v1/admin/roles/batch_capped", json={
        "name": "Batch capped", "scopes": ["payments:read", "payments:write"],
        "approval_limits": [{"currency": "EUR", "amount": 1000}]})
    capped = team.member("batch_capped")
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    small = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur, 500)] * 2}), 201)
    big = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur, 600)] * 2}), 201)
    assert assert_json(capped.put(BATCHES + "/" + small["id"] + "/approve"), 200)["status"] == \
        "approved"
    r = capped.put(BATCHES + "/" + big["id"] + "/approve")
    assert_problem(r, 403, "approval_limit_exceeded")
    assert "1200" in r.json()["detail"]


def test_one_denial_ends_the_batch_and_every_item(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)] * 2}), 201)
    url = BATCHES + "/" + b["id"]
    assert_validation(team.approvers[0].put(url + "/deny", json={}), {"/reason": "required"})
    d = assert_json(team.approvers[0].put(url + "/deny", json={"reason": "Entered twice"}), 200)
    assert d["status"] == "denied" and d["counts_by_status"] == {"denied": 2}
    assert d["approval"]["approvers"][0]["reason"] == "Entered twice"
    assert_problem(team.approvers[1].put(url + "/approve"), 409, "invalid_transition")
    assert_problem(team.owner.post(url + "/cancel"), 409, "invalid_transition")
    for it in d["items"]:
        assert events(team.owner, it["payment_id"])[-1] == "payment.denied"


def test_cancel_by_the_creator_or_an_admin_only_and_once(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)] * 2}), 201)
    url = BATCHES + "/" + b["id"] + "/cancel"
    assert_problem(team.approvers[0].post(url), 403, "not_creator")
    c = assert_json(team.owner.post(url), 200)
    assert c["status"] == "cancelled" and c["counts_by_status"] == {"cancelled": 2}
    assert_problem(team.owner.post(url), 409, "invalid_transition")
    for it in c["items"]:
        p = assert_json(team.owner.get(PAY + "/" + it["payment_id"]), 200)
        assert p["status"] == "cancelled"
    team.policy([])
    approved = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)]}), 201)
    assert assert_json(team.owner.post(BATCHES + "/" + approved["id"] + "/cancel"),
                       200)["status"] == "cancelled"


def test_another_workspaces_batch_is_invisible(server, team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)]}), 201)
    _, _, other = server.new_workspace()
    url = BATCHES + "/" + b["id"]
    assert_problem(other.get(url), 404, "not_found")
    assert_problem(other.put(url + "/approve"), 404, "not_found")
    assert_problem(other.put(url + "/deny", json={"reason": "x"}), 404, "not_found")
    assert_problem(other.post(url + "/cancel"), 404, "not_found")
    assert_problem(other.get(BATCHES + "/pbt_" + "0" * 26), 404, "not_found")
    assert_validation(team.owner.get(BATCHES + "/not-an-id"), {"/path/id": "pattern"}, status=400,
                      code="invalid_request")
    assert assert_json(other.get(PAY + "?batch_id=" + b["id"]), 200)["data"] == []
    assert_validation(other.post(BATCHES, json={"items": [item(team.eur)]}),
                      {"/items/0/beneficiary_id": "beneficiary_not_found"})


def test_viewers_read_batches_but_cannot_order_or_decide(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    viewer = team.member("viewer")
    b = assert_json(team.owner.post(BATCHES, json={"items": [item(team.eur)]}), 201)
    assert assert_json(viewer.get(BATCHES + "/" + b["id"]), 200)["id"] == b["id"]
    assert_problem(viewer.post(BATCHES, json={"items": [item(team.eur)]}), 403,
                   "insufficient_scope")
    assert_problem(viewer.put(BATCHES + "/" + b["id"] + "/approve"), 403, "insufficient_scope")


def test_a_repeated_create_with_the_same_key_is_replayed(server, team):
    team.policy([])
    key = str(uuid.uuid4())
    body = {"items": [item(team.eur, 42)]}
    before = payment_count(server, team.wid)
    first = team.owner.post(BATCHES, json=body, headers={"Idempotency-Key": key})
    again = team.owner.post(BATCHES, json=body, headers={"Idempotency-Key": key})
    assert assert_json(again, 201)["id"] == assert_json(first, 201)["id"]
    assert again.header("Idempotent-Replayed") == "true"
    assert payment_count(server, team.wid) == before + 1


# ---- group status as the items settle ---------------------------------------------------------

def test_the_group_status_follows_the_items(make_server):
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 20,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 150})
    t = Team(s)
    t.policy([])
    ben = t.beneficiary()
    fail = item(ben, remittance_information="SANDBOX-FAIL-AC01")
    cases = [([item(ben), item(ben)], "completed", {"completed": 2}),
             ([item(ben), fail], "partially_completed", {"completed": 1, "failed": 1}),
             ([fail, fail], "failed", {"failed": 2})]
    made = [(assert_json(t.owner.post(BATCHES, json={"items": items}), 201), want, counts)
            for items, want, counts in cases]
    for b, want, counts in made:
        done = wait_status(t.owner, BATCHES + "/" + b["id"],
                           {"completed", "partially_completed", "failed"})
        assert done["status"] == want and done["counts_by_status"] == counts
        assert_problem(t.owner.post(BATCHES + "/" + b["id"] + "/cancel"), 409,
                       "invalid_transition")
    failed_item = made[1][0]["items"][1]["payment_id"]
    assert assert_json(t.owner.get(BATCHES + "/" + made[1][0]["id"]), 200)["items"][1] == {
        "payment_id": failed_item, "status": "failed", "amount": 1000, "currency": "EUR",
        "beneficiary_id": ben["id"], "failure_code": "AC01"}
