"""Trade flows (handlers/payments_funding.c): a payment funded by an FX conversion
(funding_conversion_id). The funding rules on create and change (a conversion of the workspace,
not cancelled, buying the payment's currency, covering it with the other payments still to be
paid it funds: 422 at /funding_conversion_id), a funded payment waiting in pending_approval
until its conversion settled (409 funding_conversion_not_settled), and the hold a cancelled
conversion puts on its payments (hold_reason, 409 payment_on_hold, lifted by a change of
funding). Every refusal changes nothing."""

import contextlib
import datetime
import time

import pytest

from helpers import assert_json, assert_problem, audit_of, open_db
from payments_team import PAY, Team, events

CNV = "/v1/conversions"
MISSING = "cnv_" + "0" * 26
FINAL_CHECK = {"status", "version", "approval", "hold_reason", "funding_conversion_id"}


def snapshot(c, pid):
    p = assert_json(c.get(PAY + "/" + pid), 200)
    return {k: p.get(k) for k in FINAL_CHECK}


def funding_error(r, code):
    body = assert_problem(r, 422)
    assert [(e["pointer"], e["code"]) for e in body["errors"]] == \
        [("/funding_conversion_id", code)], body
    return body


# ---- what runs without conversions -----------------------------------------------------------

def test_an_unknown_conversion_is_422_conversion_not_found_and_nothing_is_made(make_server):
    team = Team(make_server())
    ben = team.beneficiary()
    before = assert_json(team.owner.get(PAY), 200)["data"]
    funding_error(team.pay(ben, funding_conversion_id=MISSING), "conversion_not_found")
    assert assert_json(team.owner.get(PAY), 200)["data"] == before
    # nor can a payment be changed to name one
    p = assert_json(team.pay(ben), 201)
    r = team.owner.patch(PAY + "/" + p["id"], json={"funding_conversion_id": MISSING},
                         headers={"If-Match": '"v1"'})
    funding_error(r, "conversion_not_found")
    assert snapshot(team.owner, p["id"])["version"] == 1


def test_a_batch_item_cannot_name_a_funding_conversion(make_server):
    team = Team(make_server())
    ben = team.beneficiary()
    item = {"amount": 100, "currency": "EUR", "type": "sepa", "originating_account": "acc-op",
            "beneficiary_id": ben["id"]}
    r = team.owner.post(PAY + "/batches", json={"items": [
        item, dict(item, funding_conversion_id=MISSING)]})
    body = assert_problem(r, 422)
    assert ("/items/1/funding_conversion_id", "funding_not_in_batch") in \
        [(e["pointer"], e["code"]) for e in body["errors"]]


# ---- with conversions ------------------------------------------------------------------------

def now_stamp():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def conversion(c, buy_amount, buy="GBP", sell="EUR"):
    """An executed conversion buying buy_amount of buy (minor units) for sell."""
    q = assert_json(c.post(CNV + "/quote", json={
        "sell_currency": sell, "buy_currency": buy, "fixed_side": "buy",
        "buy_amount": buy_amount}), 201)
    terms = {k: q[k] for k in ("sell_currency", "buy_currency", "sell_amount", "buy_amount",
                               "value_date")}
    return assert_json(c.post(CNV + "/execute", json=dict(terms, quote_id=q["id"])), 201)


def ledger_account(c, code, currency, classification="asset"):
    for a in assert_json(c.get("/v1/ledger/accounts?limit=100"), 200)["data"]:
        if a["code"] == code:
            return a["id"]
    return assert_json(c.post("/v1/ledger/accounts", json={
        "code": code, "name": code, "classification": classification,
        "currency": currency}), 201)["id"]


def fund_fx_cash(c, currency, amount, day):
    cash = ledger_account(c, "FXC-" + currency, currency)
    equity = ledger_account(c, "EQ-" + currency, currency, "equity")
    assert_json(c.post("/v1/ledger/journals", json={
        "description": "FX funding", "effective_date": day, "post": True, "lines": [
            {"ledger_account_id": cash, "direction": "debit", "amount": amount,
             "currency": currency},
            {"ledger_account_id": equity, "direction": "credit", "amount": amount,
             "currency": currency}]}), 201)


@pytest.fixture
def fx(make_server):
    """A team whose workspace has a live EURGBP rate; its server settles every 50 ms."""
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 50})
    team = Team(s)
    assert_json(team.owner.post("/v1/rates", json={"rates": [{
        "pair": "EURGBP", "bid": "0.85", "ask": "0.85", "mid": "0.85", "as_of": now_stamp(),
        "source": "manual"}]}), 200)
    return team


def test_the_funding_rules_on_create_and_change(fx):
    team = fx
    ben = team.beneficiary("GBP")
    eur_ben = team.beneficiary("EUR")
    x = conversion(team.owner, 100000)
    # another currency than the conversion buys
    funding_error(team.pay(eur_ben, 100, funding_conversion_id=x["id"]),
                  "funding_currency_mismatch")
    # covering: 60000 + 40000 fit, one more minor unit does not
    a = assert_json(team.pay(ben, 60000, funding_conversion_id=x["id"]), 201)
    assert a["funding_conversion_id"] == x["id"] and "hold_reason" not in a
    funding_error(team.pay(ben, 40001, funding_conversion_id=x["id"]), "funding_insufficient")
    b = assert_json(team.pay(ben, 40000, funding_conversion_id=x["id"]), 201)
    # raising one of them beyond the rest is refused the same way, and changes nothing
    r = team.owner.patch(PAY + "/" + b["id"], json={"amount": 40001},
                         headers={"If-Match": '"v1"'})
    funding_error(r, "funding_insufficient")
    assert snapshot(team.owner, b["id"])["version"] == 1
    # a cancelled payment funds nothing any more: its share is free again
    assert_json(team.owner.post(PAY + "/%s/cancel" % a["id"]), 200)
    assert_json(team.pay(ben, 60000, funding_conversion_id=x["id"]), 201)
    # a cancelled conversion funds nothing
    y = conversion(team.owner, 5000)
    assert_json(team.owner.post(CNV + "/%s/cancel" % y["id"]), 200)
    funding_error(team.pay(ben, 100, funding_conversion_id=y["id"]),
                  "funding_conversion_cancelled")


def test_a_funded_payment_waits_for_its_conversion_to_settle(fx):
    team = fx
    ben = team.beneficiary("GBP")
    x = conversion(team.owner, 100000)
    # no policy tier asks for approvals, yet a funded payment waits for one
    p = assert_json(team.pay(ben, 100000, funding_conversion_id=x["id"]), 201)
    assert p["status"] == "pending_approval" and p["approval"]["required"] == 1
    body = assert_problem(team.approvers[1].put(PAY + "/%s/approve" % p["id"]), 409,
                          "funding_conversion_not_settled")
    assert x["id"] in body["detail"]
    assert snapshot(team.owner, p["id"])["version"] == 1
    # another workspace's conversion is no conversion here
    _, _, other = team.server.new_workspace()
    with other:
        body = assert_problem(other.post(PAY, json={
            "amount": 1, "currency": "GBP", "type": "sepa", "originating_account": "acc",
            "beneficiary_id": ben["id"], "funding_conversion_id": x["id"]}), 422)
        assert ("/funding_conversion_id", "conversion_not_found") in \
            [(e["pointer"], e["code"]) for e in body["errors"]]
    # settle it: the sell currency's FX cash is there, the clock past the value date's cut-off
    fund_fx_cash(team.owner, "EUR", x["sell_amount"], datetime.date.today().isoformat())
    cutoff = datetime.datetime.fromisoformat(x["value_date"] + "T12:00:01+00:00")
    ahead = int((cutoff - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 2
    team.server.move_clock(ahead)
    try:
        owner = team.reconnect()
        end = time.monotonic() + 15
        while assert_json(owner.get(CNV + "/" + x["id"]), 200)["status"] != "settled":
            assert time.monotonic() < end, "the conversion did not settle"
            time.sleep(0.05)
        approver = team.member("approver")
        ok = assert_json(approver.put(PAY + "/%s/approve" % p["id"]), 200)
        assert ok["status"] in ("approved", "scheduled", "processing", "sent", "completed")
    finally:
        team.server.move_clock(0)


def test_cancelling_the_conversion_holds_its_payments_until_their_funding_changes(fx):
    team = fx
    ben = team.beneficiary("GBP")
    x = conversion(team.owner, 100000)
    p = assert_json(team.pay(ben, 70000, funding_conversion_id=x["id"]), 201)
    q = assert_json(team.pay(ben, 30000, funding_conversion_id=x["id"]), 201)
    assert_json(team.owner.post(PAY + "/%s/cancel" % q["id"]), 200)  # final: not held
    assert_json(team.owner.post(CNV + "/%s/cancel" % x["id"]), 200)
    held = assert_json(team.owner.get(PAY + "/" + p["id"]), 200)
    assert held["status"] == "pending_approval" and held["version"] == 2
    assert held["hold_reason"].startswith("funding_conversion_cancelled") and \
        x["id"] in held["hold_reason"]
    assert "hold_reason" not in assert_json(team.owner.get(PAY + "/" + q["id"]), 200)
    assert events(team.owner, p["id"])[-1] == "payment.updated"
    assert [a[0] for a in audit_of(team.server, p["id"])][-1] == "system"
    # on hold: neither approved nor changed without a new funding
    before = snapshot(team.owner, p["id"])
    assert_problem(team.approvers[1].put(PAY + "/%s/approve" % p["id"]), 409,
                   "payment_on_hold")
    assert snapshot(team.owner, p["id"]) == before
    # pointing it at another conversion lifts the hold (and it waits for that one)
    y = conversion(team.owner, 70000)
    r = team.owner.patch(PAY + "/" + p["id"], json={"funding_conversion_id": y["id"]},
                         headers={"If-Match": '"v2"'})
    moved = assert_json(r, 200)
    assert "hold_reason" not in moved and moved["funding_conversion_id"] == y["id"]
    assert moved["status"] == "pending_approval"
    assert_problem(team.approvers[1].put(PAY + "/%s/approve" % p["id"]), 409,
                   "funding_conversion_not_settled")
    # removing the funding altogether: the policy alone decides (no tier: approved)
    r = team.owner.patch(PAY + "/" + p["id"], json={"funding_conversion_id": None},
                         headers={"If-Match": '"v%d"' % moved["version"]})
    free = assert_json(r, 200)
    assert "funding_conversion_id" not in free and free["status"] == "approved"
    assert [m for m in free["makers"] if "funding_conversion_id" in m.get("fields", [])]



def test_cancelling_a_conversion_holds_every_payment_it_funds_however_many(fx):
    """The hold goes through the funded payments a round at a time (500): 501 are all held."""
    team = fx
    ben = team.beneficiary("GBP")
    x = conversion(team.owner, 100000)
    ids = [assert_json(team.pay(ben, 1, funding_conversion_id=x["id"]), 201)["id"]
           for _ in range(501)]
    assert_json(team.owner.post(CNV + "/%s/cancel" % x["id"]), 200)
    db = open_db(team.server)
    with contextlib.closing(db):
        held = db.execute("SELECT count(*) FROM payments WHERE funding_conversion_id = ? AND "
                          "hold_reason IS NOT NULL", (x["id"],)).fetchone()[0]
    assert held == 501
    assert snapshot(team.owner, ids[-1])["hold_reason"].startswith("funding_conversion_cancelled")
