"""Maker-checker that cannot be sidestepped (issue 18, attacks 1 to 4), one test per attack:
whoever created or changed what approvals are given for never approves it; any such change
voids the approvals collected; the beneficiary is checked again when a payment is approved and
when it is sent; a change of who or where the payee is needs approving again; the tiers apply
to one person's total to one beneficiary within the velocity window; a service account decides
nothing, and what it makes is made by the person who minted its token."""

import contextlib
import datetime
import json

import pytest

from conftest import Servers
from helpers import open_db
from helpers import assert_json, assert_problem, create_beneficiary, jwt_parts
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
    db = open_db(server)
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


def test_a_page_shows_each_payments_decisions_and_makers(team):
    """The list asks for decisions and makers only for the payments that have some (a flag per
    row): a page mixing payments with a decision, with a maker who changed them, with a
    decision voided by a change, and with neither, shows each as its own GET does."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    ben = team.beneficiary()
    plain, decided, changed, voided = (assert_json(team.pay(ben, 100 + i), 201)
                                       for i in range(4))
    editor = team.approvers[0]
    assert_json(team.approvers[1].put(PAY + "/" + decided["id"] + "/approve"), 200)
    assert_json(patch(editor, changed["id"], amount=4242), 200)
    assert_json(team.approvers[2].put(PAY + "/" + voided["id"] + "/approve"), 200)
    assert_json(patch(editor, voided["id"], amount=4343), 200)
    listed = assert_json(team.owner.get(PAY + "?limit=100&beneficiary_id=" + ben["id"]), 200)
    by_id = {item["id"]: item for item in listed["data"]}
    assert len(by_id) == 4
    for item in listed["data"]:
        assert item == assert_json(team.owner.get(PAY + "/" + item["id"]), 200)
    assert [a["user_id"] for a in by_id[decided["id"]]["approval"]["approvers"]] == [
        user_id(team.approvers[1])]
    for p in (plain, changed, voided):
        assert by_id[p["id"]]["approval"]["approvers"] == []
    for p, makers in ((plain, 1), (decided, 1), (changed, 2), (voided, 2)):
        assert len(by_id[p["id"]]["makers"]) == makers
    assert by_id[changed["id"]]["makers"][1]["user_id"] == user_id(editor)


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


def test_the_velocity_total_counts_past_a_page_of_payments(team):
    """The total is read in pages (16, then 256 rows): many small payments still add up, and
    the payment that crosses the tier after more than a page of them needs approval."""
    team.policy([{"currency": "EUR", "min_amount": 10000, "approvals_required": 1}])
    ben = team.beneficiary()
    for _ in range(19):
        assert assert_json(team.pay(ben, 500), 201)["status"] == "approved"
    # 19 x 500 = 9,500: the 20th reaches the tier only with every one of them counted
    assert assert_json(team.pay(ben, 500), 201)["status"] == "pending_approval"


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

def assert_change_makes_owner_maker(team, sa, bot, ben):
    """An approver's payment changed through bot (a token of service account sa the owner
    minted) has the owner as a maker, via sa: the owner can no longer approve it."""
    theirs = assert_json(team.pay(ben, 500, client=team.approvers[0]), 201)
    changed = assert_json(patch(bot, theirs["id"], amount=900), 200)
    assert changed["makers"][1]["user_id"] == user_id(team.owner)
    assert changed["makers"][1]["via"] == sa["id"]
    assert_problem(team.owner.put(PAY + "/" + theirs["id"] + "/approve"), 403,
                   "maker_cannot_approve")


def test_an_admin_approves_their_own_payment_through_their_service_account(team):
    """The owner created a service account and approved their own payment with it. A service
    account decides nothing (a decision is a person's), and what it makes is made by the
    person who minted its token: they cannot approve it."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    sa, bot = service_account(team)
    ben = team.beneficiary()
    mine = assert_json(team.pay(ben, 500), 201)
    assert_problem(bot.put(PAY + "/" + mine["id"] + "/approve"), 403,
                   "approver_must_be_a_person")
    assert_problem(bot.put(PAY + "/" + mine["id"] + "/deny", json={"reason": "x"}), 403,
                   "approver_must_be_a_person")
    # the other way round: the service account's payment is the owner's
    its = assert_json(team.pay(ben, 500, client=bot), 201)
    assert its["created_by"] == sa["id"]
    assert its["makers"] == [{"user_id": user_id(team.owner), "via": sa["id"],
                              "action": "created", "at": its["created_at"]}]
    assert_problem(team.owner.put(PAY + "/" + its["id"] + "/approve"), 403, "self_approval")
    # a change through the service account makes the owner a maker
    assert_change_makes_owner_maker(team, sa, bot, ben)
    # batches, and beneficiaries, follow the same rules
    batch = assert_json(bot.post(PAY + "/batches", json={"items": [{
        "amount": 500, "currency": "EUR", "type": "sepa", "originating_account": "acc",
        "beneficiary_id": ben["id"]}]}), 201)
    assert_problem(team.owner.put(PAY + "/batches/" + batch["id"] + "/approve"), 403,
                   "self_approval")
    assert_problem(bot.put(PAY + "/batches/" + batch["id"] + "/approve"), 403,
                   "approver_must_be_a_person")
    fresh = assert_json(bot.post(BEN, json={
        "name": "Bot payee", "account_holder_name": "Bot payee", "currency": "EUR",
        "country": "DE", "account_identification": {
            "scheme": "IBAN", "identification": "DE89370400440532013000"}}), 201)
    assert_problem(team.owner.put(BEN + "/" + fresh["id"] + "/approve"), 403, "self_approval")
    assert_problem(bot.put(BEN + "/" + fresh["id"] + "/approve"), 403,
                   "approver_must_be_a_person")
    assert_json(team.approvers[0].put(BEN + "/" + fresh["id"] + "/approve"), 200)


# ---- review of attack 4: who acts through a service account -------------------------------

IBAN_DE2 = {"scheme": "IBAN", "identification": "DE02120300000000202051"}


def minted(team, creator, minter, role="approver", scopes=("payments:read", "payments:write")):
    """A service account creator makes, a token for it minter issues, and a client with it."""
    sa = assert_json(creator.post(SA, json={"name": "bot", "role": role}), 201)
    tok = assert_json(minter.post(SA + "/" + sa["id"] + "/tokens",
                                  json={"scopes": list(scopes)}), 201)
    return sa, team.server.client(token=tok["access_token"])


def batch_of(client, ben, amount=500, **over):
    item = {"amount": amount, "currency": "EUR", "type": "sepa",
            "originating_account": "acc-operating", "beneficiary_id": ben["id"], **over}
    return assert_json(client.post(PAY + "/batches", json={"items": [item]}), 201)


def test_an_admin_approves_their_own_payment_through_another_admins_service_account(team):
    """A second admin created a service account; the owner minted a token for it and approved
    their own payment with it alone (the account counted as the second admin). Now a service
    account decides nothing, and what a token makes is made by whoever minted that token:
    the maker rule and the velocity rule see the owner."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    admin2 = team.member("admin")
    sa, bot = minted(team, creator=admin2, minter=team.owner)
    ben = team.beneficiary()
    mine = assert_json(team.pay(ben, 500), 201)
    r = bot.put(PAY + "/" + mine["id"] + "/approve")
    assert_problem(r, 403, "approver_must_be_a_person")
    still = assert_json(team.owner.get(PAY + "/" + mine["id"]), 200)
    assert still["status"] == "pending_approval" and still["approval"]["approvers"] == []
    assert still["version"] == mine["version"]
    # what the token makes, the owner made (not the account's creator)
    its = assert_json(team.pay(ben, 500, client=bot), 201)
    assert its["created_by"] == sa["id"]
    assert its["makers"] == [{"user_id": user_id(team.owner), "via": sa["id"],
                              "action": "created", "at": its["created_at"]}]
    assert_problem(team.owner.put(PAY + "/" + its["id"] + "/approve"), 403, "self_approval")
    assert assert_json(admin2.put(PAY + "/" + its["id"] + "/approve"), 200)["status"] == \
        "approved"
    # a change through the token makes the owner a maker
    assert_change_makes_owner_maker(team, sa, bot, ben)
    # beneficiary details entered through the token are the owner's
    fresh = assert_json(bot.post(BEN, json={
        "name": "Bot payee", "account_holder_name": "Bot payee", "currency": "EUR",
        "country": "DE", "account_identification": IBAN_DE2}), 201)
    assert_problem(team.owner.put(BEN + "/" + fresh["id"] + "/approve"), 403, "self_approval")
    assert_problem(bot.put(BEN + "/" + fresh["id"] + "/approve"), 403,
                   "approver_must_be_a_person")
    # batches: no decision through a service account either, and the token's batch is the
    # owner's
    batch = batch_of(team.owner, ben)
    assert_problem(bot.put(PAY + "/batches/" + batch["id"] + "/approve"), 403,
                   "approver_must_be_a_person")
    made = batch_of(bot, ben)
    assert_problem(team.owner.put(PAY + "/batches/" + made["id"] + "/approve"), 403,
                   "self_approval")
    assert assert_json(admin2.put(PAY + "/batches/" + made["id"] + "/approve"), 200)[
        "status"] == "approved"
    # the velocity rule adds up the owner's payments, the token's included
    team.policy([{"currency": "EUR", "min_amount": 100000, "approvals_required": 1}])
    other = team.beneficiary()
    assert assert_json(team.pay(other, 60000), 201)["status"] == "approved"
    split = assert_json(team.pay(other, 60000, client=bot), 201)
    assert split["status"] == "pending_approval" and split["approval"]["required"] == 1


def test_a_service_account_denies_what_no_person_decided(team):
    """A service account's denial ended a payment, a batch or a beneficiary's approval with no
    person deciding. Now denying, like approving, is a person's decision."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    admin2 = team.member("admin")
    _, bot = minted(team, creator=admin2, minter=admin2)
    ben = team.beneficiary()
    p = assert_json(team.pay(ben, 500), 201)
    r = bot.put(PAY + "/" + p["id"] + "/deny", json={"reason": "no"})
    body = assert_problem(r, 403, "approver_must_be_a_person")
    assert "person" in body["detail"]
    assert assert_json(team.owner.get(PAY + "/" + p["id"]), 200)["status"] == "pending_approval"
    batch = batch_of(team.owner, ben)
    assert_problem(bot.put(PAY + "/batches/" + batch["id"] + "/deny", json={"reason": "no"}),
                   403, "approver_must_be_a_person")
    assert assert_json(team.owner.get(PAY + "/batches/" + batch["id"]), 200)["status"] == \
        "pending_approval"
    fresh = create_beneficiary(team.owner, external_id=None,
                               account_identification=IBAN_DE2)
    assert_problem(bot.put(BEN + "/" + fresh["id"] + "/deny", json={"reason": "no"}), 403,
                   "approver_must_be_a_person")
    assert assert_json(team.owner.get(BEN + "/" + fresh["id"]), 200)["approval_status"] == \
        "pending_approval"
    # a person still decides
    assert assert_json(admin2.put(PAY + "/" + p["id"] + "/deny", json={"reason": "no"}),
                       200)["status"] == "denied"


def test_a_chain_of_service_accounts_is_not_a_person_of_its_own(team):
    """Nine service accounts, each created by the one before, ended at a service account that
    counted as a person of its own. Now only people create service accounts and issue their
    tokens, so no new chain starts."""
    sa, bot = minted(team, team.owner, team.owner, role="admin", scopes=("workspace:admin",))
    r = bot.post(SA, json={"name": "next", "role": "approver"})
    body = assert_problem(r, 403, "service_account_cannot_delegate")
    assert sa["id"] in body["detail"]
    other = assert_json(team.owner.post(SA, json={"name": "other", "role": "approver"}), 201)
    for target in (sa["id"], other["id"]):
        assert_problem(bot.post(SA + "/" + target + "/tokens",
                                json={"scopes": ["payments:read"]}), 403,
                       "service_account_cannot_delegate")
        assert len(assert_json(team.owner.get(SA + "/" + target + "/tokens"), 200)["data"]) == \
            (1 if target == sa["id"] else 0)
    names = [x["name"] for x in assert_json(team.owner.get(SA + "?limit=100"), 200)["data"]]
    assert "next" not in names


def test_a_stored_chain_that_ends_at_no_person_fails_closed(server, team):
    """Rows written before that rule may still hold a chain (a token minted by a service
    account created by a service account ...). One that does not end at a person refuses to
    act instead of counting as a person of its own."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    a, bot = minted(team, team.owner, team.owner)
    b = assert_json(team.owner.post(SA, json={"name": "b", "role": "approver"}), 201)
    tok = jwt_parts(bot.token)[1]["jti"]
    db = open_db(server)
    with contextlib.closing(db), db:
        db.execute("UPDATE service_accounts SET created_by = ? WHERE id = ?", (b["id"], a["id"]))
        db.execute("UPDATE service_accounts SET created_by = ? WHERE id = ?", (a["id"], b["id"]))
        db.execute("UPDATE service_account_tokens SET created_by = ? WHERE id = ?",
                   (a["id"], tok))
    ben = team.beneficiary()
    before = assert_json(team.owner.get(PAY + "?limit=100"), 200)["data"]
    assert_problem(team.pay(ben, 500, client=bot), 403, "acting_person_unknown")
    assert assert_json(team.owner.get(PAY + "?limit=100"), 200)["data"] == before


# ---- review of attack 2: approvals are given for the beneficiary as it was ------------------

def test_approvals_given_before_a_beneficiary_change_do_not_count_after_it(server, team):
    """One approval of two was given; the beneficiary's IBAN changed and someone approved the
    new details; the second approval then approved the payment to the new IBAN. Now the
    approvals collected for the old details are voided (409 beneficiary_changed, the payment
    back to pending_approval, event and audit kept) and everyone approves again."""
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 2}])
    ben = team.beneficiary()
    p = assert_json(team.pay(ben, 500), 201)
    url = PAY + "/" + p["id"] + "/approve"
    assert assert_json(team.approvers[0].put(url), 200)["approval"]["received"] == 1
    assert_json(team.owner.patch(BEN + "/" + ben["id"],
                                 json={"account_identification": IBAN_DE2}), 200)
    assert_json(team.approvers[1].put(BEN + "/" + ben["id"] + "/approve"), 200)
    r = team.approvers[2].put(url)
    body = assert_problem(r, 409, "beneficiary_changed")
    assert ben["id"] in body["detail"]
    after = assert_json(team.owner.get(PAY + "/" + p["id"]), 200)
    assert after["status"] == "pending_approval"
    assert after["approval"] == {"required": 2, "received": 0, "approvers": []}
    assert after["version"] > p["version"]
    assert events(team.owner, p["id"]) == ["payment.created", "payment.updated"]
    voided = [row for row in audit(server, p["id"]) if row[1] == "payment.updated"]
    assert len(voided) == 1 and "beneficiary_changed" in voided[0][4]
    # the approvals start over, for the new details
    assert assert_json(team.approvers[0].put(url), 200)["approval"]["received"] == 1
    assert assert_json(team.approvers[2].put(url), 200)["status"] == "approved"
    # a batch the same
    other = team.beneficiary()
    batch = batch_of(team.owner, other)
    burl = PAY + "/batches/" + batch["id"] + "/approve"
    assert assert_json(team.approvers[0].put(burl), 200)["approval"]["received"] == 1
    assert_json(team.owner.patch(BEN + "/" + other["id"],
                                 json={"account_identification": IBAN_DE2}), 200)
    assert_json(team.approvers[1].put(BEN + "/" + other["id"] + "/approve"), 200)
    assert_problem(team.approvers[2].put(burl), 409, "beneficiary_changed")
    got = assert_json(team.owner.get(PAY + "/batches/" + batch["id"]), 200)
    assert got["status"] == "pending_approval"
    assert got["approval"] == {"required": 2, "received": 0, "approvers": []}
    item = assert_json(team.owner.get(PAY + "/" + got["items"][0]["payment_id"]), 200)
    assert item["approval"]["approvers"] == []
    assert assert_json(team.approvers[0].put(burl), 200)["approval"]["received"] == 1
    assert assert_json(team.approvers[2].put(burl), 200)["status"] == "approved"


def test_an_approved_payment_follows_its_beneficiarys_new_bank_details(make_server):
    """A payment approved for a later date was sent to the beneficiary's new IBAN once someone
    had approved the new details, although its approvers approved the old ones. Now the worker
    fails it (failure_reason beneficiary_changed), a batch item too; others go out."""
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 20,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 50})
    t = Team(s)
    t.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    tomorrow = (datetime.datetime.now(datetime.timezone.utc).date() +
                datetime.timedelta(days=1)).isoformat()
    moved, fine = t.beneficiary(), t.beneficiary()
    pays = {name: assert_json(t.pay(b, 900, effective_date=tomorrow), 201)
            for name, b in (("moved", moved), ("fine", fine))}
    for p in pays.values():
        assert_json(t.approvers[0].put(PAY + "/" + p["id"] + "/approve"), 200)
    batch = batch_of(t.owner, moved, effective_date=tomorrow)
    assert_json(t.approvers[0].put(PAY + "/batches/" + batch["id"] + "/approve"), 200)
    pays["item"] = {"id": batch["items"][0]["payment_id"]}
    for p in pays.values():
        wait_status(t.owner, PAY + "/" + p["id"], {"scheduled"})
    assert_json(t.owner.patch(BEN + "/" + moved["id"],
                              json={"account_identification": IBAN_DE2}), 200)
    assert_json(t.approvers[1].put(BEN + "/" + moved["id"] + "/approve"), 200)
    s.move_clock(86400)
    client = t.reconnect()
    final = {"completed", "failed", "returned"}
    done = {k: wait_status(client, PAY + "/" + p["id"], final) for k, p in pays.items()}
    assert done["fine"]["status"] == "completed"
    for name in ("moved", "item"):
        d = done[name]
        assert d["status"] == "failed" and "rail_reference" not in d, d
        assert d["failure_reason"].startswith("beneficiary_changed:"), d["failure_reason"]
        last = audit(s, d["id"])[-1]
        assert last[:4] == ("system", "payment.failed", "scheduled", "failed")
