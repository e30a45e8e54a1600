"""Crash safety (issue 7): the server is killed with SIGKILL twenty times at random moments
under a mixed write load (beneficiaries and their approval, payments, approvals, cancels) and
the settlement worker. After every restart: SQLite's integrity check passes (on SQLite), every
write that was acknowledged (2xx) is there, and nothing is half-applied: each payment's latest event
shows the status the payment has, every payment has exactly one payment.created, event
numbers are unique and the audit hash chain is unbroken."""

import contextlib
import json
import random
import signal
import sqlite3
import threading
import time
import uuid

import pytest

from conftest import ENGINE, USER_PASSWORD
from helpers import beneficiary, open_db

PAY = "/v1/payments"
BEN = "/v1/beneficiaries"
CYCLES = 20


class Load:
    """Worker threads issuing writes; what the server acknowledged is recorded."""

    def __init__(self, server, owner_tok, approver_toks, ben_id):
        self.server, self.owner_tok, self.approver_toks = server, owner_tok, approver_toks
        self.ben_id = ben_id
        self.lock = threading.Lock()
        self.payments = {}    # id -> set of acknowledged facts
        self.beneficiaries = set()
        self.stop = threading.Event()

    def note(self, kind, key, fact=None):
        with self.lock:
            if kind == "payment":
                self.payments.setdefault(key, set())
                if fact:
                    self.payments[key].add(fact)
            else:
                self.beneficiaries.add(key)

    def work(self, seed):
        rnd = random.Random(seed)
        owner = self.server.client(token=self.owner_tok)
        approvers = [self.server.client(token=t) for t in self.approver_toks]
        try:
            while not self.stop.is_set():
                choice = rnd.random()
                rid = {"X-Request-ID": str(uuid.uuid4())}
                if choice < 0.45:
                    amount = rnd.choice([100, 9000])  # 9000 needs one approval
                    r = owner.post(PAY, json={"amount": amount, "currency": "EUR",
                                              "type": "sepa", "originating_account": "acc-1",
                                              "beneficiary_id": self.ben_id,
                                              "remittance_information": "crash test"},
                                   headers=rid)
                    if r.status == 201:
                        self.note("payment", r.json()["id"])
                elif choice < 0.75:
                    with self.lock:
                        pending = list(self.payments)
                    if pending:
                        pid = rnd.choice(pending)
                        who = rnd.randrange(len(approvers))
                        r = approvers[who].put(PAY + "/" + pid + "/approve", headers=rid)
                        if r.status == 200:
                            self.note("payment", pid, "approved_by:%d" % who)
                elif choice < 0.85:
                    with self.lock:
                        pending = list(self.payments)
                    if pending:
                        pid = rnd.choice(pending)
                        r = owner.post(PAY + "/" + pid + "/cancel", headers=rid)
                        if r.status == 200:
                            self.note("payment", pid, "cancelled")
                else:
                    r = owner.post(BEN, json=beneficiary(external_id=None), headers=rid)
                    if r.status == 201:
                        self.note("beneficiary", r.json()["id"])
        except Exception:
            pass  # the server died under us: that request was never acknowledged
        finally:
            for c in [owner] + approvers:
                c.close()


def check_database(server, wid):
    if ENGINE == "postgresql":
        db, begin = open_db(server), "BEGIN ISOLATION LEVEL REPEATABLE READ"
    else:
        db = sqlite3.connect("file:%s?mode=ro" % (server.data_dir / "treasury.db"), uri=True,
                             timeout=30, isolation_level=None)
        begin = "BEGIN"
    with contextlib.closing(db):
        # One read transaction: one snapshot, while the server (its settlement worker) writes.
        db.execute(begin)
        if ENGINE == "sqlite":  # the file itself (PostgreSQL's crash recovery is its own)
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        seqs = [r[0] for r in db.execute("SELECT seq FROM events ORDER BY seq")]
        assert len(seqs) == len(set(seqs))
        created = dict(db.execute("SELECT resource_id, count(*) FROM events WHERE type = "
                                  "'payment.created' GROUP BY resource_id"))
        rows = db.execute("SELECT id, status, version FROM payments WHERE workspace_id = ?",
                          (wid,)).fetchall()
        for pid, status, version in rows:
            assert created.get(pid) == 1, "payment %s has %r payment.created" % (pid,
                                                                                created.get(pid))
            last = db.execute("SELECT data FROM events WHERE resource_id = ? ORDER BY seq DESC "
                              "LIMIT 1", (pid,)).fetchone()
            obj = json.loads(last[0])["object"]
            assert (obj["status"], obj["version"]) == (status, version), \
                "payment %s is %s v%d but its last event says %s v%d" % (
                    pid, status, version, obj["status"], obj["version"])
        chain = db.execute("SELECT seq, prev_hash, hash FROM audit_events WHERE workspace_id = ? "
                           "ORDER BY seq", (wid,)).fetchall()
        assert [c[0] for c in chain] == list(range(1, len(chain) + 1))
        assert all(cur[1] == prev[2] for prev, cur in zip(chain, chain[1:]))
        return len(rows)


def check_acknowledged(server, load, owner_tok):
    c = server.client(token=owner_tok)
    with load.lock:
        payments = {k: set(v) for k, v in load.payments.items()}
        bens = set(load.beneficiaries)
    for bid in bens:
        assert c.get(BEN + "/" + bid).status == 200, "acknowledged beneficiary %s lost" % bid
    for pid, facts in payments.items():
        r = c.get(PAY + "/" + pid)
        assert r.status == 200, "acknowledged payment %s lost" % pid
        p = r.json()
        if "cancelled" in facts:
            assert p["status"] == "cancelled", "acknowledged cancel of %s lost" % pid
        deciders = {a["user_id"] for a in p["approval"]["approvers"]}
        for fact in facts:
            if fact.startswith("approved_by:"):
                assert deciders, "acknowledged approval of %s lost" % pid
    c.close()
    return len(payments), len(bens)


def test_sigkill_under_write_load_loses_and_half_applies_nothing(make_server):
    s = make_server(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 20,
                               "TREASURY_SANDBOX_RAIL_DELAY_MS": 200,
                               "TREASURY_RATE_LIMIT": 100000000})
    owner_email = "owner-%s@example.com" % uuid.uuid4().hex[:8]
    wid = s.create_workspace("crash", owner_email, password=USER_PASSWORD)
    emails = []
    for i in range(2):
        emails.append("approver%d-%s@example.com" % (i, uuid.uuid4().hex[:6]))
        s.create_user(wid, emails[-1], "approver")
    tok = lambda e: s.login(e, USER_PASSWORD, workspace_id=wid)["access_token"]  # noqa: E731
    owner_tok, approver_toks = tok(owner_email), [tok(e) for e in emails]
    owner = s.client(token=owner_tok)
    r = owner.put(PAY + "/approval-policy",
                  json={"tiers": [{"currency": "EUR", "min_amount": 5000,
                                   "approvals_required": 1}]})
    assert r.status == 200
    ben = owner.post(BEN, json=beneficiary(external_id=None)).json()
    assert s.client(token=approver_toks[0]).put(BEN + "/" + ben["id"] + "/approve").status == 200

    load = Load(s, owner_tok, approver_toks, ben["id"])
    rnd = random.Random(2026)
    for cycle in range(CYCLES):
        load.stop.clear()
        workers = [threading.Thread(target=load.work, args=(cycle * 10 + i,), daemon=True)
                   for i in range(3)]
        for w in workers:
            w.start()
        time.sleep(rnd.uniform(0.2, 0.8))
        assert s.stop(sig=signal.SIGKILL) == -signal.SIGKILL
        load.stop.set()
        for w in workers:
            w.join(timeout=30)
        s.start()
        check_database(s, wid)
        check_acknowledged(s, load, owner_tok)
    rows = check_database(s, wid)
    acked, bens = check_acknowledged(s, load, owner_tok)
    assert acked > 20 and bens > 0, "the load barely ran: %d payments" % acked
    print("%d kill -9 cycles: %d acknowledged payments (%d rows), %d beneficiaries, none lost"
          % (CYCLES, acked, rows, bens))
