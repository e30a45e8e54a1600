"""Maker-checker that cannot be sidestepped (issue 18, attacks 1 to 4), one test per attack:
whoever created or changed what approvals are given for never approves it; any such change
voids the approvals collected; the beneficiary is checked again when a payment is approved and
when it is sent; a change of who or where the payee is needs approving again; the tiers apply
to one person's total to one beneficiary within the velocity window; and a service account is
the user who created it."""

import contextlib
import datetime
import json
import sqlite3

import pytest

from conftest import Servers
from helpers import assert_json, assert_problem, jwt_parts
from payments_team import BEN, PAY, POLICY, Team, events, wait_status

SA = "/v1/admin/service-accounts"
IBAN_GB = {"scheme": "IBAN", "identification": "GB82WEST12345698765432"}


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """The worker looks once at start-up and then sleeps for an hour: approved payments stay
    approved while a test works with them (the settlement test starts its own server)."""
    servers = Servers(tmp_path_factory)
    yield servers(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 3600000})
    servers.close()


@pytest.fixture
def team(server):
    return Team(server)


def user_id(client):
    return jwt_parts(client.token)[1]["sub"]


def etag(client, pay_id):
    return client.get(PAY + "/" + pay_id).header("ETag")


def patch(client, pay_id, **fields):
    return client.patch(PAY + "/" + pay_id, json=fields,
                        headers={"If-Match": etag(client, pay_id)})


def audit(server, resource_id):
    db = sqlite3.connect(str(server.data_dir / "treasury.db"), timeout=10)
    with contextlib.closing(db):
        return db.execute("SELECT actor_id, action, before_status, after_status, detail FROM "
                          "audit_events WHERE resource_id = ? ORDER BY seq",
                          (resource_id,)).fetchall()


def service_account(team, role="approver", scopes=("payments:read", "payments:write")):
    """A service account the owner (an administrator) creates, and a client with its token."""
    sa = assert_json(team.owner.post(SA, json={"name": "bot", "role": role}), 201)
    tok = assert_json(team.owner.post(SA + "/" + sa["id"] + "/tokens",
                                      json={"scopes": list(scopes)}), 201)
    return sa, team.server.client(token=tok["access_token"])


# ---- attack 1 ------------------------------------------------------------------------------

def test_four_eyes_bypass_by_editing(server, team):
    """An approver raised a treasurer's pending 500 EUR payment to 99,999 and approved it
    alone. Now the change makes them a maker, who can neither approve nor deny it."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    ben = team.beneficiary()
    p = assert_json(team.pay(ben, 500), 201)
    editor, other = team.approvers[0], team.approvers[1]
    changed = assert_json(patch(editor, p["id"], amount=99999), 200)
    assert changed["status"] == "pending_approval" and changed["approval"]["received"] == 0
    r = editor.put(PAY + "/" + p["id"] + "/approve")
    assert_problem(r, 403, "maker_cannot_approve")
    assert "amount" in r.json()["detail"]
    assert changed["makers"] == [
        {"user_id": user_id(team.owner), "action": "created", "at": p["created_at"]},
        {"user_id": user_id(editor), "action": "changed", "fields": ["amount"],
         "at": changed["updated_at"]}]
    assert_problem(editor.put(PAY + "/" + p["id"] + "/deny", json={"reason": "mine"}), 403,
                   "maker_cannot_approve")
    after = assert_json(team.owner.get(PAY + "/" + p["id"]), 200)
    assert after["status"] == "pending_approval" and after["version"] == changed["version"]
    assert after["approval"]["approvers"] == [] and after["makers"] == changed["makers"]
    # The same holds when the editor approved before editing: their approval is voided.
    q = assert_json(team.pay(ben, 700), 201)
    assert_json(editor.put(PAY + "/" + q["id"] + "/approve"), 200)
    back = assert_json(patch(editor, q["id"], amount=99999), 200)
    assert back["status"] == "pending_approval" and back["approval"]["approvers"] == []
    assert_problem(editor.put(PAY + "/" + q["id"] + "/approve"), 403, "maker_cannot_approve")
    # Someone who made nothing approves; the change is in the audit with its values.
    assert assert_json(other.put(PAY + "/" + p["id"] + "/approve"), 200)["status"] == "approved"
    rows = audit(server, p["id"])
    change = [row for row in rows if row[1] == "payment.updated"]
    assert len(change) == 1 and change[0][0] == user_id(editor)
    detail = json.loads(change[0][4])
    assert detail["maker"] == user_id(editor)
    assert detail["changed"] == {"amount": {"before": 500, "after": 99999}}
    assert detail["approval_round"] == 2 and detail["approvals_required"] == 1
    # Listed payments show the same makers as their own GET.
    listed = assert_json(team.owner.get(PAY + "?limit=100&beneficiary_id=" + ben["id"]), 200)
    for item in listed["data"]:
        assert item == assert_json(team.owner.get(PAY + "/" + item["id"]), 200)


# ---- attack 2 ------------------------------------------------------------------------------

def test_beneficiary_approval_is_not_rechecked_at_payment_approval(team):
    """A beneficiary's IBAN, currency and country changed (back to pending approval), or the
    beneficiary archived: the EUR payments to it could still be approved."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    ben = team.beneficiary()
    moved = assert_json(team.pay(ben, 500), 201)
    r = team.owner.patch(BEN + "/" + ben["id"], json={
        "account_identification": IBAN_GB, "currency": "GBP", "country": "GB"})
    assert assert_json(r, 200)["approval_status"] == "pending_approval"
    url = PAY + "/" + moved["id"] + "/approve"
    r = team.approvers[0].put(url)
    assert_problem(r, 422, "beneficiary_not_approved")
    assert ben["id"] in r.json()["detail"]
    # approved again, but now in GBP: the EUR payment no longer fits it
    assert_json(team.approvers[1].put(BEN + "/" + ben["id"] + "/approve"), 200)
    assert_problem(team.approvers[0].put(url), 422, "beneficiary_mismatch")
    still = assert_json(team.owner.get(PAY + "/" + moved["id"]), 200)
    assert still["status"] == "pending_approval" and still["approval"]["approvers"] == []
    assert still["version"] == moved["version"]
    assert events(team.owner, moved["id"]) == ["payment.created"]
    # an archived beneficiary
    gone = team.beneficiary()
    p = assert_json(team.pay(gone, 500), 201)
    assert team.owner.delete(BEN + "/" + gone["id"]).status == 204
    assert_problem(team.approvers[0].put(PAY + "/" + p["id"] + "/approve"), 422,
                   "beneficiary_archived")
    assert assert_json(team.owner.get(PAY + "/" + p["id"]), 200)["status"] == "pending_approval"


def test_beneficiary_names_change_after_approval_without_re_approval(server, team):
    """The name and the account-holder name changed after approval and the beneficiary stayed
    approved. Now either sends it back to pending_approval, the changer cannot approve it,
    and neither can anyone else who changed it in the same round."""
    ben = team.beneficiary()
    for change, country in (({"name": "Mallory Ltd"}, "AT"),
                            ({"account_holder_name": "Mallory Ltd"}, "FR")):
        got = assert_json(team.approvers[0].patch(BEN + "/" + ben["id"], json=change), 200)
        assert got["approval_status"] == "pending_approval", change
        assert got["verification_status"] == "unverified"
        assert_problem(team.approvers[0].put(BEN + "/" + ben["id"] + "/approve"), 403,
                       "self_approval")
        # a second maker of the same round: the first one still cannot approve it
        assert_json(team.approvers[1].patch(BEN + "/" + ben["id"], json={"country": country}),
                    200)
        assert_problem(team.approvers[0].put(BEN + "/" + ben["id"] + "/approve"), 403,
                       "maker_cannot_approve")
        assert_problem(team.approvers[0].put(BEN + "/" + ben["id"] + "/deny",
                                             json={"reason": "x"}), 403, "maker_cannot_approve")
        assert_json(team.approvers[2].put(BEN + "/" + ben["id"] + "/approve"), 200)
    # email and metadata are not the payee's identity: still approved
    got = assert_json(team.approvers[0].patch(BEN + "/" + ben["id"], json={
        "email": "ap@example.com", "metadata": {"k": "v"}}), 200)
    assert got["approval_status"] == "approved"
    rows = [r for r in audit(server, ben["id"]) if r[1] == "beneficiary.updated"]
    first = json.loads(rows[0][4])
    assert rows[0][0] == user_id(team.approvers[0]) and rows[0][2:4] == ("approved",
                                                                          "pending_approval")
    assert first["changed"] == {"name": {"before": ben["name"], "after": "Mallory Ltd"}}


def test_beneficiary_approval_is_not_rechecked_at_settlement(make_server):
    """An approved payment waiting for its date was sent although its beneficiary's details
    had changed (or it was archived) meanwhile. Now the worker fails it instead of sending
    it, naming the cause, with its event and audit record."""
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 20,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 50})
    t = Team(s)
    t.policy([])
    tomorrow = (datetime.datetime.now(datetime.timezone.utc).date() +
                datetime.timedelta(days=1)).isoformat()
    changed, archived, fine = t.beneficiary(), t.beneficiary(), t.beneficiary()
    pays = {name: assert_json(t.pay(b, 900, effective_date=tomorrow), 201)
            for name, b in (("changed", changed), ("archived", archived), ("fine", fine))}
    for p in pays.values():
        wait_status(t.owner, PAY + "/" + p["id"], {"scheduled"})
    assert_json(t.owner.patch(BEN + "/" + changed["id"], json={
        "account_identification": IBAN_GB, "currency": "GBP", "country": "GB"}), 200)
    assert t.owner.delete(BEN + "/" + archived["id"]).status == 204
    s.move_clock(86400)  # the date arrives (and the owner's token expires with the day)
    client = t.reconnect()
    final = {"completed", "failed", "returned"}
    done = {k: wait_status(client, PAY + "/" + p["id"], final) for k, p in pays.items()}
    assert done["fine"]["status"] == "completed"
    for name, code in (("changed", "beneficiary_not_approved"),
                       ("archived", "beneficiary_archived")):
        d = done[name]
        assert d["status"] == "failed" and d["iso20022_status"] == "RJCT", d
        assert d["failure_reason"].startswith(code + ":"), d["failure_reason"]
        assert "rail_reference" not in d and "failure_code" not in d
        assert events(client, d["id"]) == ["payment.created", "payment.approved",
                                           "payment.scheduled", "payment.failed"]
        last = audit(s, d["id"])[-1]
        assert last[:4] == ("system", "payment.failed", "scheduled", "failed")
        assert last[4].startswith(code)


# ---- attack 3 ------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [
    ("originating_account", "acc-elsewhere"), ("type", "wire"), ("priority", "high"),
    ("remittance_information", "Other invoice"), ("effective_date", None)])
def test_an_approved_payment_can_be_re_pointed(team, field, value):
    """originating_account, type, priority and the remittance text of an approved payment
    changed without approving again. Now any approval-relevant change voids the approvals
    and the policy runs again."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    p = assert_json(team.pay(team.beneficiary(), 500, remittance_information="INV-1"), 201)
    approved = assert_json(team.approvers[0].put(PAY + "/" + p["id"] + "/approve"), 200)
    assert approved["status"] == "approved"
    if value is None:
        value = (datetime.datetime.now(datetime.timezone.utc).date() +
                 datetime.timedelta(days=3)).isoformat()
    redo = assert_json(patch(team.owner, p["id"], **{field: value}), 200)
    assert redo[field] == value
    assert redo["status"] == "pending_approval", field
    assert redo["approval"] == {"required": 1, "received": 0, "approvers": []}
    maker = [m for m in redo["makers"] if m["action"] == "changed"]
    assert maker == [{"user_id": user_id(team.owner), "action": "changed", "fields": [field],
                      "at": maker[0]["at"]}]
    again = assert_json(team.approvers[0].put(PAY + "/" + p["id"] + "/approve"), 200)
    assert again["status"] == "approved" and again[field] == value


def test_splitting_a_payment_below_a_tier_avoids_the_approvals(team):
    """Several payments below a tier passed without approval. The velocity rule applies the
    tiers to one person's total to one beneficiary in the window, on create and on change."""
    team.policy([{"currency": "EUR", "min_amount": 100000, "approvals_required": 1}])
    ben = team.beneficiary()
    assert assert_json(team.pay(ben, 60000), 201)["status"] == "approved"
    split = assert_json(team.pay(ben, 40000), 201)
    assert split["status"] == "pending_approval" and split["approval"]["required"] == 1
    policy = assert_json(team.owner.get(POLICY), 200)
    assert policy["velocity_window_hours"] == 24  # the default
    # someone else's payments, another beneficiary or another currency count separately
    assert assert_json(team.pay(ben, 60000, client=team.approvers[0]), 201)["status"] == \
        "approved"
    assert assert_json(team.pay(team.beneficiary(), 60000), 201)["status"] == "approved"
    # ended payments do not count: cancelled, the split one no longer adds up
    assert_json(team.owner.post(PAY + "/" + split["id"] + "/cancel"), 200)
    small = assert_json(team.pay(ben, 30000), 201)
    assert small["status"] == "approved"
    # raising it by a change reaches the tier too
    raised = assert_json(patch(team.owner, small["id"], amount=45000), 200)
    assert raised["status"] == "pending_approval"
    # ... also when someone else changes it: the creator's total counts
    other = team.beneficiary()
    assert assert_json(team.pay(other, 60000), 201)["status"] == "approved"
    low = assert_json(team.pay(other, 10), 201)
    assert low["status"] == "approved"
    assert assert_json(patch(team.approvers[0], low["id"], amount=50000), 200)["status"] == \
        "pending_approval"
    # a batch counts with the maker's other payments to each of its beneficiaries
    third = team.beneficiary()
    assert assert_json(team.pay(third, 60000), 201)["status"] == "approved"
    item = {"amount": 50000, "currency": "EUR", "type": "sepa", "originating_account": "acc",
            "beneficiary_id": third["id"]}
    batch = assert_json(team.owner.post(PAY + "/batches", json={"items": [item]}), 201)
    assert batch["status"] == "pending_approval" and batch["approval"]["required"] == 1
    fourth = dict(item, beneficiary_id=team.beneficiary()["id"])
    batch = assert_json(team.owner.post(PAY + "/batches", json={"items": [fourth]}), 201)
    assert batch["status"] == "approved"
    # the window is configurable; 0 turns the rule off
    got = assert_json(team.owner.put(POLICY, json={"tiers": policy["tiers"],
                                                   "velocity_window_hours": 0}), 200)
    assert got["velocity_window_hours"] == 0
    assert assert_json(team.pay(ben, 60000), 201)["status"] == "approved"
    assert_problem(team.owner.put(POLICY, json={"tiers": policy["tiers"],
                                                "velocity_window_hours": 721}), 422,
                   "validation_failed")


def test_the_velocity_window_is_by_created_at(make_server):
    s = make_server()
    t = Team(s)
    t.owner.put(POLICY, json={"tiers": [{"currency": "EUR", "min_amount": 100000,
                                         "approvals_required": 1}],
                              "velocity_window_hours": 2})
    ben = t.beneficiary()
    assert assert_json(t.pay(ben, 60000), 201)["status"] == "approved"
    assert assert_json(t.pay(ben, 60000), 201)["status"] == "pending_approval"
    s.move_clock(2 * 3600 + 5)  # both are older than the window now
    owner = t.reconnect()
    assert assert_json(t.pay(ben, 60000, client=owner), 201)["status"] == "approved"


def test_a_policy_change_is_audited_before_and_after(server, team):
    team.policy([])
    team.owner.put(POLICY, json={"tiers": [{"currency": "EUR", "min_amount": 5,
                                            "approvals_required": 2}],
                                 "velocity_window_hours": 12})
    rows = [r for r in audit(server, team.wid) if r[1] == "payments.approval_policy.updated"]
    assert json.loads(rows[-1][2]) == {"tiers": [], "velocity_window_hours": 24}
    assert json.loads(rows[-1][3]) == {"tiers": [{"currency": "EUR", "min_amount": 5,
                                                  "approvals_required": 2}],
                                       "velocity_window_hours": 12}


# ---- attack 4 ------------------------------------------------------------------------------

def test_an_admin_approves_their_own_payment_through_their_service_account(team):
    """The owner created a service account and approved their own payment with it. A service
    account is the user who created it: it cannot approve what they made, they cannot approve
    what it made, and the two decide once between them."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    sa, bot = service_account(team)
    ben = team.beneficiary()
    mine = assert_json(team.pay(ben, 500), 201)
    r = bot.put(PAY + "/" + mine["id"] + "/approve")
    assert_problem(r, 403, "self_approval")
    assert_problem(bot.put(PAY + "/" + mine["id"] + "/deny", json={"reason": "x"}), 403,
                   "self_approval")
    # the other way round: the service account's payment is the owner's
    its = assert_json(team.pay(ben, 500, client=bot), 201)
    assert its["created_by"] == sa["id"]
    assert its["makers"] == [{"user_id": user_id(team.owner), "via": sa["id"],
                              "action": "created", "at": its["created_at"]}]
    assert_problem(team.owner.put(PAY + "/" + its["id"] + "/approve"), 403, "self_approval")
    # a change through the service account makes the owner a maker
    theirs = assert_json(team.pay(ben, 500, client=team.approvers[0]), 201)
    changed = assert_json(patch(bot, theirs["id"], amount=900), 200)
    assert changed["makers"][1]["user_id"] == user_id(team.owner)
    assert changed["makers"][1]["via"] == sa["id"]
    assert_problem(team.owner.put(PAY + "/" + theirs["id"] + "/approve"), 403,
                   "maker_cannot_approve")
    # one person decides once, directly or through their service account
    other = assert_json(team.pay(ben, 500, client=team.approvers[1]), 201)
    assert_json(team.owner.put(PAY + "/" + other["id"] + "/approve"), 200)
    assert_problem(bot.put(PAY + "/" + other["id"] + "/approve"), 409, "already_approved")
    # batches, and beneficiaries, follow the same rule
    batch = assert_json(team.owner.post(PAY + "/batches", json={"items": [{
        "amount": 500, "currency": "EUR", "type": "sepa", "originating_account": "acc",
        "beneficiary_id": ben["id"]}]}), 201)
    assert_problem(bot.put(PAY + "/batches/" + batch["id"] + "/approve"), 403, "self_approval")
    fresh = assert_json(bot.post(BEN, json={
        "name": "Bot payee", "account_holder_name": "Bot payee", "currency": "EUR",
        "country": "DE", "account_identification": {
            "scheme": "IBAN", "identification": "DE89370400440532013000"}}), 201)
    assert_problem(team.owner.put(BEN + "/" + fresh["id"] + "/approve"), 403, "self_approval")
    assert_json(team.approvers[0].put(BEN + "/" + fresh["id"] + "/approve"), 200)
