"""The settlement worker and the sandbox rail: approved payments move through
processing -> sent -> completed without a client, fail or come back on the documented sandbox
test values, wait in scheduled until their effective date, cannot be changed or cancelled from
processing on, race a cancel cleanly, and resume exactly once after a crash."""

import contextlib
import datetime
import re
import signal
import threading
import time

import pytest

from conftest import Servers, sqlite_only
from helpers import open_db
from helpers import assert_json, assert_problem, audit_of, committed_row, no_recent_reads
from payments_team import PAY, Team, events, wait_status

FAST = {"TREASURY_SETTLEMENT_INTERVAL_MS": 20, "TREASURY_SANDBOX_RAIL_DELAY_MS": 150}
FINAL = {"completed", "failed", "returned", "cancelled", "denied"}
HAPPY = ["payment.created", "payment.approved", "payment.processing", "payment.sent",
         "payment.completed"]


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    servers = Servers(tmp_path_factory)
    yield servers(extra_env=FAST)
    servers.close()


@pytest.fixture(scope="module")
def team(server):
    t = Team(server)
    t.policy([])
    t.ben = t.beneficiary()
    return t


def wait_for(client, pay_id, statuses):
    return wait_status(client, PAY + "/" + pay_id, statuses)


def test_an_approved_payment_settles_without_a_client(server, team):
    p = assert_json(team.pay(team.ben, 4200, remittance_information="Invoice 7"), 201)
    assert p["status"] == "approved" and p["iso20022_status"] == "ACTC"
    done = wait_for(team.owner, p["id"], FINAL)
    assert done["status"] == "completed" and done["iso20022_status"] == "ACSC"
    assert done["rail_reference"] == "SBX-" + p["id"][4:]
    assert done["version"] == p["version"] + 3  # processing, sent, completed
    assert "failure_code" not in done and "failure_reason" not in done
    assert events(team.owner, p["id"]) == HAPPY
    timeline = assert_json(team.owner.get(PAY + "/%s/events" % p["id"]), 200)["data"]
    assert [e["data"]["object"]["status"] for e in timeline[2:]] == ["processing", "sent",
                                                                      "completed"]
    rows = audit_of(server, p["id"])
    assert [r[:4] for r in rows[2:]] == [
        ("system", "payment.processing", "approved", "processing"),
        ("system", "payment.sent", "processing", "sent"),
        ("system", "payment.completed", "sent", "completed")]
    assert "SBX-" in rows[2][4]


@pytest.mark.parametrize("text,code,words", [
    ("SANDBOX-FAIL", "AC04", "closed account number"),
    ("pay run 12 SANDBOX-FAIL-AM04", "AM04", "insufficient funds"),
    ("SANDBOX-FAIL-ZZ99", "AC04", "closed account number"),
])
def test_sandbox_fail_values_fail_the_payment_while_processing(team, text, code, words):
    p = assert_json(team.pay(team.ben, remittance_information=text), 201)
    done = wait_for(team.owner, p["id"], FINAL)
    assert done["status"] == "failed" and done["iso20022_status"] == "RJCT"
    assert done["failure_code"] == code and words in done["failure_reason"]
    assert events(team.owner, p["id"]) == ["payment.created", "payment.approved",
                                           "payment.processing", "payment.failed"]


def test_sandbox_return_value_returns_a_completed_payment(team):
    p = assert_json(team.pay(team.ben, remittance_information="SANDBOX-RETURN-MD07"), 201)
    done = wait_for(team.owner, p["id"], {"returned"})
    assert done["failure_code"] == "MD07" and "deceased" in done["failure_reason"]
    assert "iso20022_status" not in done
    assert events(team.owner, p["id"]) == HAPPY + ["payment.returned"]


def test_a_payment_waiting_for_approval_is_not_settled(team):
    team.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    try:
        p = assert_json(team.pay(team.ben, 777), 201)
        time.sleep(0.5)  # many worker rounds
        assert assert_json(team.owner.get(PAY + "/" + p["id"]), 200)["status"] == \
            "pending_approval"
        assert_json(team.approvers[0].put(PAY + "/" + p["id"] + "/approve"), 200)
        assert wait_for(team.owner, p["id"], FINAL)["status"] == "completed"
    finally:
        team.policy([])


def test_from_processing_on_nothing_can_change_or_cancel_it(make_server):
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 20,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 600000})
    t = Team(s)
    p = assert_json(t.pay(t.beneficiary()), 201)
    cur = wait_for(t.owner, p["id"], {"processing"})
    etag = '"v%d"' % cur["version"]
    assert_problem(t.owner.patch(PAY + "/" + p["id"], json={"amount": 5},
                                 headers={"If-Match": etag}), 409, "payment_not_editable")
    r = t.owner.post(PAY + "/" + p["id"] + "/cancel")
    assert_problem(r, 409, "invalid_transition")
    assert "processing" in r.json()["detail"]
    assert_problem(t.approvers[1].put(PAY + "/" + p["id"] + "/approve"), 409,
                   "invalid_transition")
    assert assert_json(t.owner.get(PAY + "/" + p["id"]), 200)["version"] == cur["version"]


def test_a_future_payment_waits_in_scheduled_until_its_date(make_server):
    s = make_server(extra_env=FAST)
    t = Team(s)
    t.policy([])
    ben = t.beneficiary()
    tomorrow = (datetime.datetime.now(datetime.timezone.utc).date() +
                datetime.timedelta(days=1)).isoformat()
    p = assert_json(t.pay(ben, effective_date=tomorrow), 201)
    later = assert_json(t.pay(ben, effective_date=tomorrow), 201)
    sched = wait_for(t.owner, p["id"], {"scheduled"})
    assert sched["iso20022_status"] == "ACTC" and "rail_reference" not in sched
    time.sleep(0.3)
    assert assert_json(t.owner.get(PAY + "/" + p["id"]), 200)["status"] == "scheduled"
    # Scheduled payments can still be cancelled and changed.
    wait_for(t.owner, later["id"], {"scheduled"})
    assert_json(t.owner.post(PAY + "/" + later["id"] + "/cancel"), 200)
    s.move_clock(86400)  # the owner's token expires with the day: log in again
    client = t.reconnect()
    done = wait_for(client, p["id"], FINAL)
    assert done["status"] == "completed"
    assert events(client, p["id"]) == ["payment.created", "payment.approved",
                                       "payment.scheduled", "payment.processing",
                                       "payment.sent", "payment.completed"]
    assert events(client, later["id"])[-1] == "payment.cancelled"
    assert assert_json(client.get(PAY + "/" + later["id"]), 200)["status"] == "cancelled"


def test_a_cancel_racing_the_worker_wins_or_loses_cleanly(team):
    outcomes = set()
    for _ in range(12):
        p = assert_json(team.pay(team.ben, 10), 201)
        r = team.owner.post(PAY + "/" + p["id"] + "/cancel")
        done = wait_for(team.owner, p["id"], FINAL)
        kinds = events(team.owner, p["id"])
        if r.status == 200:
            assert done["status"] == "cancelled"
            assert kinds == ["payment.created", "payment.approved", "payment.cancelled"]
        else:
            assert_problem(r, 409, "invalid_transition")
            assert done["status"] == "completed" and kinds == HAPPY
        outcomes.add(r.status)
    assert 200 in outcomes  # a cancel right after creation normally wins


def test_a_crash_loses_or_repeats_no_step(make_server):
    """SIGKILL the server three times while payments are in flight; after the last restart
    every payment completes with each event exactly once and the audit chain intact."""
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 10,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 1000})
    t = Team(s)
    t.policy([])
    ben = t.beneficiary()
    ids = [assert_json(t.pay(ben, 100 + i), 201)["id"] for i in range(12)]
    for delay in (0.05, 0.6, 0.6):
        time.sleep(delay)
        assert s.stop(sig=signal.SIGKILL) == -signal.SIGKILL
        s.start()
    owner = t.reconnect()
    for pid in ids:
        assert wait_for(owner, pid, FINAL)["status"] == "completed"
        assert events(owner, pid) == HAPPY
    # The last run finished what the killed ones left in flight.
    assert "settlement: " in s.log_text(since_start=True)
    db = open_db(s)
    with contextlib.closing(db):
        rows = db.execute("SELECT seq, prev_hash, hash FROM audit_events WHERE workspace_id = ? "
                          "ORDER BY seq", (t.wid,)).fetchall()
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    assert all(cur[1] == prev[2] for prev, cur in zip(rows, rows[1:]))


@sqlite_only("a round's steps share the group-commit writer's transactions")
def test_a_round_is_committed_by_the_writer_and_a_failed_step_stays_due(make_server):
    """The worker hands a round's steps to the group-commit writer, so they share its
    transactions: ten payments found due at start-up are not ten commits. A step whose event
    cannot be written (a trigger injected into the database) has its own writes undone - the
    payment is still approved, with no processing event - while the others of its batch
    commit; once the fault is gone the next round moves it on, each event exactly once."""
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 3600000,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 3600000})
    t = Team(s)
    t.policy([])
    ben = t.beneficiary()
    ids = [assert_json(t.pay(ben, 100 + i), 201)["id"] for i in range(10)]
    # The worker looked once, at start-up, before these existed: all ten wait, approved.
    assert all(assert_json(t.owner.get(PAY + "/" + i), 200)["status"] == "approved"
               for i in ids)
    s.stop()
    bad = ids[3]
    db = open_db(s)
    with contextlib.closing(db):
        # After the payment row was updated: the unguarded batch must be run again, this
        # step in a savepoint of its own.
        db.execute("CREATE TRIGGER inject_failure BEFORE INSERT ON events WHEN "
                   "NEW.resource_id = '%s' AND NEW.type = 'payment.processing' "
                   "BEGIN SELECT RAISE(ABORT, 'injected failure'); END" % bad)
        db.commit()
    s.extra_env["TREASURY_SETTLEMENT_INTERVAL_MS"] = 100
    s.start()
    owner = t.reconnect()
    for i in ids:
        if i != bad:
            assert wait_for(owner, i, {"processing"})["status"] == "processing"
    deadline = time.monotonic() + 10
    while "the step of %s failed; it stays due" % bad not in s.log_text(since_start=True):
        assert time.monotonic() < deadline, s.log_text(since_start=True)[-2000:]
        time.sleep(0.05)
    assert assert_json(owner.get(PAY + "/" + bad), 200)["status"] == "approved"
    assert events(owner, bad) == ["payment.created", "payment.approved"]
    db = open_db(s)
    with contextlib.closing(db):
        db.execute("DROP TRIGGER inject_failure")
        db.commit()
    assert wait_for(owner, bad, {"processing"})["status"] == "processing"
    for i in ids:
        assert events(owner, i) == ["payment.created", "payment.approved",
                                    "payment.processing"]
        assert [r[1] for r in audit_of(s, i)].count("payment.processing") == 1
    s.stop()
    m = re.findall(r"group commit: (\d+) write request\(s\) in (\d+) transaction\(s\), "
                   r"largest (\d+), (\d+) run again in savepoints", s.log_text())
    writes, transactions, largest, reruns = (int(x) for x in m[-1])
    assert writes >= 11 and largest > 1, m[-1]  # ten steps (and the retry) in shared batches
    assert reruns >= 1, m[-1]


def test_every_illegal_transition_names_the_state(make_server):
    """Holds payments in every state past approval (the rail steps once an hour; the test
    clock moves the hour on) and tries each action the state machine forbids there."""
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 20,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 3600000})
    t = Team(s)
    ben = t.beneficiary()
    far = (datetime.datetime.now(datetime.timezone.utc).date() +
           datetime.timedelta(days=3)).isoformat()
    made = {}

    def pay(name, **over):
        made[name] = assert_json(t.pay(ben, **over), 201)["id"]

    def step(hours, want):
        if hours:
            s.move_clock(3700 * hours)
        for name, status in want.items():
            wait_for(t.owner, made[name], {status})

    t.policy([])
    pay("returned", remittance_information="SANDBOX-RETURN")
    pay("failed", remittance_information="SANDBOX-FAIL")
    pay("scheduled", effective_date=far)
    step(0, {"returned": "processing", "failed": "processing", "scheduled": "scheduled"})
    step(1, {"returned": "sent", "failed": "failed"})
    pay("completed")
    step(0, {"completed": "processing"})
    step(2, {"returned": "completed", "completed": "sent"})
    pay("sent")
    step(0, {"sent": "processing"})
    step(3, {"returned": "returned", "completed": "completed", "sent": "sent"})
    pay("processing")
    t.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    pay("pending_approval")
    pay("denied")
    assert_json(t.approvers[0].put(PAY + "/" + made["denied"] + "/deny",
                                   json={"reason": "no"}), 200)
    pay("cancelled")
    assert_json(t.owner.post(PAY + "/" + made["cancelled"] + "/cancel"), 200)
    step(0, {"processing": "processing", "scheduled": "scheduled"})

    never_editable = {"processing", "sent", "completed", "failed", "returned", "denied",
                      "cancelled"}
    for state, pid in made.items():
        cur = assert_json(t.owner.get(PAY + "/" + pid), 200)
        assert cur["status"] == state
        url = PAY + "/" + pid
        tries = []
        if state != "pending_approval":
            tries += [t.approvers[1].put(url + "/approve"),
                      t.approvers[1].put(url + "/deny", json={"reason": "late"})]
        if state in never_editable:
            tries.append(t.owner.post(url + "/cancel"))
        for r in tries:
            assert_problem(r, 409, "invalid_transition")
            assert "is %s;" % state in r.json()["detail"]
        if state in never_editable:
            r = t.owner.patch(url, json={"amount": 5}, headers={"If-Match": '"v%d"' %
                                                                cur["version"]})
            assert_problem(r, 409, "payment_not_editable")
            assert state in r.json()["detail"]
        assert assert_json(t.owner.get(url), 200)["version"] == cur["version"]


@sqlite_only("the held fsync is the group commit's test hook; on PostgreSQL a commit returns "
             "once durable")
def test_a_rail_is_told_of_a_payment_only_once_its_approval_is_durable(make_server, tmp_path):
    """The writer commits before the fsync (runtime/group_commit.h): while the test build's hook
    holds the fsync, an auto-approved payment is committed and due, but the worker must not
    hand it to the rail - a crash could still take the approval back."""
    hold = tmp_path / "hold-sync"
    server = make_server(extra_env={**FAST, "TREASURY_TEST_HOLD_SYNC": str(hold)})
    team = Team(server)
    team.policy([])
    ben = team.beneficiary()
    no_recent_reads()
    hold.touch()
    answer = {}

    def pay():
        with server.client(token=team.owner.token) as c:
            answer["post"] = team.pay(ben, client=c, external_id="held-approval")

    t = threading.Thread(target=pay)
    t.start()
    row = committed_row(server, "SELECT id, status FROM payments "
                                "WHERE external_id = 'held-approval'")
    assert row and row[1] == "approved", row
    time.sleep(1.0)  # 50 settlement rounds, several rail steps
    assert committed_row(server, "SELECT status, rail_reference FROM payments WHERE id = ?",
                         (row[0],)) == ("approved", None)
    assert answer == {}
    hold.unlink()
    t.join(10)
    p = assert_json(answer["post"], 201)
    assert wait_for(team.owner, p["id"], FINAL)["status"] == "completed"


# ---- the ledger's record of settled payments (handlers/ledger_settings.c) -------------------
# Each settled, failed and returned sandbox payment leaves exactly the expected entries
# (GET /v1/ledger/journals?source=payment&source_id=...).
SETTINGS = "/v1/ledger/settings"
JOURNALS = "/v1/ledger/journals"
LEDGER_ACCOUNTS = "/v1/ledger/accounts"


def utc_today():
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def entries_of(client, pay_id):
    url = JOURNALS + "?source=payment&source_id=%s&limit=100" % pay_id
    return assert_json(client.get(url), 200)["data"]


def posted(client, account_id):
    """(debits, credits, amount) of an account's posted balance."""
    b = assert_json(client.get(LEDGER_ACCOUNTS + "/" + account_id), 200)["balances"]["posted"]
    return b["debits"], b["credits"], b["amount"]


def mapped(client):
    """{originating account or currency: ledger account id} of the settings."""
    pp = assert_json(client.get(SETTINGS), 200)["payment_posting"]
    out = {m["originating_account"]: m["ledger_account_id"] for m in pp["cash_accounts"]}
    out.update({m["currency"]: m["ledger_account_id"] for m in pp["payee_clearing_accounts"]})
    return out


def lines_of(entry):
    return sorted((ln["ledger_account_id"], ln["direction"], ln["amount"], ln["currency"])
                  for ln in entry["lines"])


def test_a_settled_payment_posts_once_creating_the_default_accounts(server):
    t = Team(server)
    t.policy([])
    ben = t.beneficiary()
    assert assert_json(t.owner.get(SETTINGS), 200)["version"] == 1
    p = assert_json(t.pay(ben, 4321), 201)
    assert wait_for(t.owner, p["id"], FINAL)["status"] == "completed"
    s = assert_json(t.owner.get(SETTINGS), 200)
    assert s["version"] == 2 and s["payment_posting"]["enabled"] is True
    ids = mapped(t.owner)
    assert set(ids) == {"acc-operating", "EUR"}
    cash = assert_json(t.owner.get(LEDGER_ACCOUNTS + "/" + ids["acc-operating"]), 200)
    clearing = assert_json(t.owner.get(LEDGER_ACCOUNTS + "/" + ids["EUR"]), 200)
    assert (cash["code"], cash["name"], cash["classification"], cash["currency"]) == \
        ("1000", "Cash at bank: acc-operating", "asset", "EUR")
    assert (clearing["code"], clearing["name"], clearing["classification"],
            clearing["currency"]) == ("2100-EUR", "Payee clearing EUR", "liability", "EUR")
    [e] = entries_of(t.owner, p["id"])
    assert e["status"] == "posted" and e["source"] == "payment" and e["source_id"] == p["id"]
    assert e["effective_date"] == utc_today() and p["id"] in e["description"]
    assert lines_of(e) == sorted([(ids["EUR"], "debit", 4321, "EUR"),
                                  (ids["acc-operating"], "credit", 4321, "EUR")])
    assert posted(t.owner, ids["acc-operating"]) == (0, 4321, -4321)
    assert posted(t.owner, ids["EUR"]) == (4321, 0, -4321)

    # a second payment: the same accounts, no new default, the balances moved by its amount
    q = assert_json(t.pay(ben, 1000), 201)
    assert wait_for(t.owner, q["id"], FINAL)["status"] == "completed"
    assert assert_json(t.owner.get(SETTINGS), 200)["version"] == 2
    assert len(entries_of(t.owner, q["id"])) == 1
    assert posted(t.owner, ids["acc-operating"]) == (0, 5321, -5321)
    assert posted(t.owner, ids["EUR"]) == (5321, 0, -5321)
    chart = assert_json(t.owner.get(LEDGER_ACCOUNTS + "?limit=100"), 200)["data"]
    assert sorted(a["code"] for a in chart) == ["1000", "2100-EUR"]


def test_a_refused_posting_leaves_nothing_behind_and_the_payment_still_settles(server):
    """Once a workspace has periods, only an open one takes entries: a payment settling on a
    day no period covers completes, and the posting's part is undone whole - no entry, and
    neither the default accounts nor the settings made for it."""
    t = Team(server)
    t.policy([])
    assert_json(t.owner.post("/v1/ledger/periods", json={
        "name": "far", "fiscal_year": 2999, "start_date": "2999-01-01",
        "end_date": "2999-12-31"}), 201)
    p = assert_json(t.pay(t.beneficiary(), 777), 201)
    assert wait_for(t.owner, p["id"], FINAL)["status"] == "completed"
    assert entries_of(t.owner, p["id"]) == []
    assert assert_json(t.owner.get(SETTINGS), 200)["version"] == 1
    assert assert_json(t.owner.get(LEDGER_ACCOUNTS + "?limit=100"), 200)["data"] == []
    assert "period_closed" in server.log_text()


def test_a_failed_payment_posts_nothing(server):
    t = Team(server)
    t.policy([])
    p = assert_json(t.pay(t.beneficiary(), remittance_information="SANDBOX-FAIL"), 201)
    assert wait_for(t.owner, p["id"], FINAL)["status"] == "failed"
    assert entries_of(t.owner, p["id"]) == []
    assert assert_json(t.owner.get(SETTINGS), 200)["version"] == 1  # no default was needed


def test_a_returned_payment_reverses_its_settlement(server):
    t = Team(server)
    t.policy([])
    p = assert_json(t.pay(t.beneficiary(), 2500, remittance_information="SANDBOX-RETURN-MD07"),
                    201)
    assert wait_for(t.owner, p["id"], {"returned"})["status"] == "returned"
    ids = mapped(t.owner)
    [e] = [x for x in entries_of(t.owner, p["id"]) if not x.get("reverses_entry_id")]
    assert e.get("reversed_by_entry_id"), e
    rev = assert_json(t.owner.get(JOURNALS + "/" + e["reversed_by_entry_id"]), 200)
    assert rev["status"] == "posted" and rev["reverses_entry_id"] == e["id"]
    assert rev["effective_date"] == utc_today()
    flip = {"debit": "credit", "credit": "debit"}
    assert lines_of(rev) == sorted((a, flip[d], n, c) for a, d, n, c in lines_of(e))
    assert posted(t.owner, ids["acc-operating"]) == (2500, 2500, 0)
    assert posted(t.owner, ids["EUR"]) == (2500, 2500, 0)


def test_settings_a_client_wrote_rule_the_postings(server):
    t = Team(server)
    t.policy([])
    ben = t.beneficiary()
    # disabled: nothing posts, and no default account is made
    r = t.owner.put(SETTINGS, json={"payment_posting": {
        "enabled": False, "cash_accounts": [], "payee_clearing_accounts": []}},
        headers={"If-Match": '"v1"'})
    assert_json(r, 200)
    p = assert_json(t.pay(ben, 700), 201)
    assert wait_for(t.owner, p["id"], FINAL)["status"] == "completed"
    assert entries_of(t.owner, p["id"]) == []
    assert assert_json(t.owner.get(LEDGER_ACCOUNTS + "?limit=100"), 200)["data"] == []
    # enabled without mappings: still nothing (the client's settings rule, no defaults)
    assert_json(t.owner.put(SETTINGS, json={"payment_posting": {
        "enabled": True, "cash_accounts": [], "payee_clearing_accounts": []}},
        headers={"If-Match": r.header("ETag")}), 200)
    q = assert_json(t.pay(ben, 800), 201)
    assert wait_for(t.owner, q["id"], FINAL)["status"] == "completed"
    assert entries_of(t.owner, q["id"]) == []
    assert assert_json(t.owner.get(SETTINGS), 200)["version"] == 3
    assert assert_json(t.owner.get(LEDGER_ACCOUNTS + "?limit=100"), 200)["data"] == []
