"""Group commit (issue 8): writes from many connections are committed together, one
transaction and one fsync per batch, each request in a savepoint of its own.

- A statement that fails inside a batch (a trigger injected into the live database makes
  SQLite refuse some inserts) fails only its own request with a 500; the others in the same
  batch are committed with everything they wrote, the failed ones left nothing behind.
- Several requests in one batch see each other's writes: the same external_id sent 12 times at
  once is created once, the other requests get 409.
- The writer really batches: while another connection holds the database's write lock the
  requests queue, and the server's shutdown line reports a batch of more than one.
Losing nothing acknowledged under kill -9 is tests/http/test_crash_safety.py's job (every write
there goes through the group commit).
"""

import re
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

import helpers
from payments_team import Team

PAY = "/v1/payments"


def db_path(server):
    return str(server.data_dir / "treasury.db")


def post_all(team, ben, bodies):
    """Sends every body at once, one connection each; returns the responses in order."""
    def one(body):
        with team.server.client(token=team.owner.token) as c:
            return c.post(PAY, json=body, headers={"X-Request-ID": str(uuid.uuid4())})
    with ThreadPoolExecutor(max_workers=len(bodies)) as ex:
        return list(ex.map(one, bodies))


def body(ben, **over):
    return {"amount": 1000, "currency": "EUR", "type": "sepa",
            "originating_account": "acc-operating", "beneficiary_id": ben["id"], **over}


def batches_line(server):
    m = re.findall(r"group commit: (\d+) write request\(s\) in (\d+) transaction\(s\), "
                   r"largest (\d+)", server.log_text())
    assert m, server.log_text()[-2000:]
    return tuple(int(x) for x in m[-1])


def held_write_lock(server, seconds):
    """Holds SQLite's write lock from another connection for a while (in a thread)."""
    ready = threading.Event()

    def hold():
        db = sqlite3.connect(db_path(server), timeout=10, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        ready.set()
        time.sleep(seconds)
        db.execute("ROLLBACK")
        db.close()
    t = threading.Thread(target=hold)
    t.start()
    ready.wait(10)
    return t


@pytest.fixture
def injected_faults():
    helpers.EXPECTED_SERVER_ERRORS.add(500)
    yield
    helpers.EXPECTED_SERVER_ERRORS.discard(500)


def test_a_failing_statement_fails_only_its_own_request(make_server, injected_faults):
    s = make_server()
    team = Team(s)
    ben = team.beneficiary()
    db = sqlite3.connect(db_path(s), timeout=10)
    db.execute("CREATE TRIGGER inject_failure BEFORE INSERT ON payments "
               "WHEN NEW.remittance_information LIKE 'FAIL-%' "
               "BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
    db.commit()
    bodies = [body(ben, remittance_information=("FAIL-%d" if i % 4 == 1 else "ok-%d") % i)
              for i in range(24)]
    holder = held_write_lock(s, 1.0)  # the requests pile up into one batch behind it
    responses = post_all(team, ben, bodies)
    holder.join()
    created = []
    for b, r in zip(bodies, responses):
        if b["remittance_information"].startswith("FAIL-"):
            assert r.status == 500, r.text
            assert r.headers["Content-Type"].startswith("application/problem+json")
            assert r.json()["code"] == "internal_error"
            assert "Location" not in r.headers
        else:
            assert r.status == 201, r.text
            created.append(r.json()["id"])
    assert len(created) == 18
    # What was acknowledged is stored with its event; what failed left nothing.
    rows = dict(db.execute("SELECT remittance_information, id FROM payments "
                           "WHERE remittance_information LIKE 'ok-%' "
                           "OR remittance_information LIKE 'FAIL-%'").fetchall())
    assert sorted(rows.values()) == sorted(created)
    assert not [k for k in rows if k.startswith("FAIL-")]
    for pid in created:
        n = db.execute("SELECT count(*) FROM events WHERE resource_id = ? AND "
                       "type = 'payment.created'", (pid,)).fetchone()[0]
        assert n == 1
        assert team.owner.get(PAY + "/" + pid).status == 200
    # A failed request was not stored as an idempotent answer: the same key, once the fault
    # is gone, runs again and succeeds.
    db.execute("DROP TRIGGER inject_failure")
    db.commit()
    db.close()
    key = str(uuid.uuid4())
    with s.client(token=team.owner.token) as c:
        db = sqlite3.connect(db_path(s), timeout=10)
        db.execute("CREATE TRIGGER inject_failure BEFORE INSERT ON payments "
                   "BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
        db.commit()
        r1 = c.post(PAY, json=body(ben, remittance_information="retry"),
                    headers={"Idempotency-Key": key})
        db.execute("DROP TRIGGER inject_failure")
        db.commit()
        db.close()
        r2 = c.post(PAY, json=body(ben, remittance_information="retry"),
                    headers={"Idempotency-Key": key})
    assert r1.status == 500
    assert r2.status == 201 and "Idempotent-Replayed" not in r2.headers
    s.stop()
    items, transactions, largest = batches_line(s)
    assert largest > 1, (items, transactions, largest)
    assert transactions < items


def test_requests_in_one_batch_see_each_others_writes(make_server):
    s = make_server()
    team = Team(s)
    ben = team.beneficiary()
    ext = "inv-" + uuid.uuid4().hex[:12]
    holder = held_write_lock(s, 0.8)
    responses = post_all(team, ben, [body(ben, external_id=ext)] * 12)
    holder.join()
    codes = sorted(r.status for r in responses)
    assert codes == [201] + [409] * 11, responses
    listed = team.owner.get(PAY + "?limit=100").json()["data"]
    assert len([p for p in listed if p.get("external_id") == ext]) == 1

