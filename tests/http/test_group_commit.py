"""Group commit (issue 8): writes from many connections are committed together, one
transaction and one fsync per batch; a batch runs again with each request in a savepoint of
its own when one request must have its writes undone.

- A statement that fails inside a batch (a trigger injected into the live database makes
  SQLite refuse some inserts) fails only its own request with a 500; the others in the same
  batch are committed with everything they wrote, the failed ones left nothing behind, both
  when the failure is the request's first write and when it comes after one.
- A request run twice that way has what it did outside the database undone before its second
  run: a wrong MFA code spends one attempt of the quota, not two.
- Several requests in one batch see each other's writes: the same external_id sent 12 times at
  once is created once, the other requests get 409.
- The writer really batches: while another connection holds the database's write lock the
  requests queue, and the server's shutdown line reports a batch of more than one.
- The writer does not wait for a batch's fsync (the syncer thread does it): while the test
  build's hook holds the syncer, a POST is committed - another connection sees the row - but
  not answered, and a GET of that payment is not answered either; both are once the fsync runs.
- An operation run on an offload thread (login: it hashes a password) waits the same way: with
  the syncer held after a POST's commit, a login commits its session but is not answered until
  the fsync runs.
- While reads arrive, the writer syncs each commit inside it instead: with the syncer held and
  another connection reading all along, POSTs are answered, and a GET of each too.
- A failed fsync (the test build's hook makes it fail with EIO) stops the server before the
  write is answered; it restarts on an intact database.
Losing nothing acknowledged under kill -9 is tests/http/test_crash_safety.py's job (every write
there goes through the group commit).
"""

import re
import shutil
import signal
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

import helpers
from payments_team import Team
from conftest import USER_PASSWORD, sqlite_only
from test_mfa import Clock, oathtool

pytestmark = sqlite_only("group commit is the SQLite engine's writer (PostgreSQL commits each "
                         "request's transaction on its own)")

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
    """(requests, transactions, largest batch, batches run again in savepoints)."""
    m = re.findall(r"group commit: (\d+) write request\(s\) in (\d+) transaction\(s\), "
                   r"largest (\d+), (\d+) run again in savepoints", server.log_text())
    assert m, server.log_text()[-2000:]
    return tuple(int(x) for x in m[-1])


def shutdown_count(server, what):
    """The count the group commit's shutdown line gives for what (a regex after the number)."""
    m = re.findall(r"(\d+) " + what, server.log_text())
    assert m, server.log_text()[-2000:]
    return int(m[-1])


def with_sync_hook(make_server, tmp_path, var):
    """A server whose syncer fsync the test build's hook var (TREASURY_TEST_HOLD_SYNC or
    _FAIL_SYNC) holds or fails while the returned flag file exists, with a team, no approval
    tiers and an approved beneficiary: (flag, server, team, ben)."""
    flag = tmp_path / "sync-hook"
    server = make_server(extra_env={var: str(flag)})
    team = Team(server)
    team.policy([])
    return flag, server, team, team.beneficiary()


def start_held_post(server, team, ben, external_id, answers):
    """POSTs a payment from a thread while the syncer is held; returns (thread, its id) once
    it is committed (and not answered: that waits for the fsync). The answer goes to
    answers["post"]."""
    def post():
        with server.client(token=team.owner.token) as c:
            answers["post"] = c.post(PAY, json=body(ben, external_id=external_id))
    thread = threading.Thread(target=post)
    thread.start()
    row = helpers.committed_row(server, "SELECT id FROM payments WHERE external_id = ?",
                                (external_id,))
    assert row, "the POST was never committed"
    return thread, row[0]


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


# Payments: the request's first write fails, so it wrote nothing and the batch goes on.
# Events: the payment row is written, then its event fails: the writer must roll the batch back
# and run it again, every request in a savepoint, so that only the failed ones are undone.
@pytest.mark.parametrize("table,field", [("payments", "NEW.remittance_information"),
                                         ("events", "NEW.data")])
def test_a_failing_statement_fails_only_its_own_request(make_server, injected_faults, table,
                                                        field):
    s = make_server()
    team = Team(s)
    ben = team.beneficiary()
    db = sqlite3.connect(db_path(s), timeout=10)
    db.execute("CREATE TRIGGER inject_failure BEFORE INSERT ON %s "
               "WHEN %s LIKE '%%FAIL-%%' "
               "BEGIN SELECT RAISE(ABORT, 'injected failure'); END" % (table, field))
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
    items, transactions, largest, reruns = batches_line(s)
    assert largest > 1, (items, transactions, largest)
    assert transactions < items
    if table == "events":
        assert reruns >= 1  # the batch with the failures ran again in savepoints


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



@pytest.mark.skipif(shutil.which("oathtool") is None, reason="oathtool is not installed")
def test_a_request_run_again_spends_its_mfa_attempt_once(make_server, injected_faults):
    s = make_server()
    team = Team(s)
    ben = team.beneficiary()
    viewer = team.member("viewer")
    clock = Clock(s)
    # Confirming an enrolment runs in the group commit (disabling MFA re-authenticates with
    # the password and runs in its own transaction, issue 18).
    secret = helpers.assert_json(viewer.post("/v1/accounts/mfa/enroll",
                                             json={"current_password": USER_PASSWORD}),
                                 201)["secret"]
    right = oathtool(secret, clock.now())
    wrong = "%06d" % ((int(right) + 1) % 1000000)
    db = sqlite3.connect(db_path(s), timeout=10)
    db.execute("CREATE TRIGGER inject_failure BEFORE INSERT ON events "
               "WHEN NEW.data LIKE '%FAIL-%' BEGIN SELECT RAISE(ABORT, 'injected'); END")
    db.commit()
    db.close()
    # One batch, in this order: a good write (the writer takes the first arrival alone), then
    # the wrong code, then a payment whose event fails after its row was written: the batch
    # runs again in savepoints, the wrong code's request included.
    payers = [team.login(team.owner_email) for _ in range(3)]  # a connection each
    holder = held_write_lock(s, 1.5)
    with ThreadPoolExecutor(max_workers=4) as ex:
        first = ex.submit(team.pay, ben, remittance_information="first", client=payers[0])
        time.sleep(0.2)
        second = ex.submit(team.pay, ben, remittance_information="second", client=payers[1])
        time.sleep(0.2)
        mfa = ex.submit(viewer.post, "/v1/accounts/mfa/confirm", json={"code": wrong})
        time.sleep(0.2)
        failing = ex.submit(team.pay, ben, remittance_information="FAIL-1", client=payers[2])
        results = [f.result() for f in (first, second, mfa, failing)]
    holder.join()
    assert [r.status for r in results] == [201, 201, 422, 500], [r.text for r in results]
    # Four more wrong codes make five: then even the right one is refused. Had the run thrown
    # away kept its attempt, the fourth would already be refused.
    for _ in range(4):
        assert viewer.post("/v1/accounts/mfa/confirm", json={"code": wrong}).status == 422
    r = viewer.post("/v1/accounts/mfa/confirm", json={"code": right})
    helpers.assert_problem(r, 429, "rate_limited")
    s.stop()
    assert batches_line(s)[3] >= 1  # the batch did run again


def test_a_write_and_a_read_of_it_are_answered_only_once_it_is_durable(make_server, tmp_path):
    hold, server, team, ben = with_sync_hook(make_server, tmp_path, "TREASURY_TEST_HOLD_SYNC")
    helpers.no_recent_reads()
    hold.touch()
    answers = {}

    def get(pay_id):
        with server.client(token=team.owner.token) as c:
            answers["get"] = c.get(PAY + "/" + pay_id)

    writer, pay_id = start_held_post(server, team, ben, "held-1", answers)
    reader = threading.Thread(target=get, args=(pay_id,))
    reader.start()
    writer.join(0.5)
    reader.join(0.5)
    assert answers == {}, "answered before the commit was durable"
    hold.unlink()
    writer.join(10)
    reader.join(10)
    created = helpers.assert_json(answers["post"], 201)
    assert created["id"] == pay_id
    assert helpers.assert_json(answers["get"], 200) == created
    server.stop()
    assert shutdown_count(server, r"fsync\(s\)") >= 1


def test_an_offloaded_login_is_answered_only_once_what_it_read_is_durable(make_server, tmp_path):
    hold, server, team, ben = with_sync_hook(make_server, tmp_path, "TREASURY_TEST_HOLD_SYNC")
    count = ("SELECT count(*) FROM sessions s JOIN users u ON u.id = s.user_id "
             "WHERE u.email_norm = ?")
    before = helpers.committed_row(server, count, (team.owner_email,))[0]
    helpers.no_recent_reads()
    hold.touch()
    answers = {}

    def login():
        answers["login"] = server.login_response(team.owner_email, USER_PASSWORD,
                                                 workspace_id=team.wid)

    try:
        writer, _ = start_held_post(server, team, ben, "held-login", answers)
        offloaded = threading.Thread(target=login)
        offloaded.start()
        # The login ran to its end (its session is committed): all that is left is the wait.
        assert helpers.committed_row(server, "SELECT 1 WHERE (%s) > ?" % count,
                                     (team.owner_email, before)), \
            "the login never committed its session"
        offloaded.join(0.5)
        writer.join(0.1)
        assert answers == {}, "answered before what it could have read was durable"
    finally:
        hold.unlink()  # stopped with a write held, the server would wait 2 drain timeouts
    writer.join(10)
    offloaded.join(10)
    helpers.assert_json(answers["post"], 201)
    assert helpers.assert_json(answers["login"], 200)["access_token"]


def test_writes_beside_reads_are_synced_in_their_commit_and_no_read_waits(make_server, tmp_path):
    hold, server, team, ben = with_sync_hook(make_server, tmp_path, "TREASURY_TEST_HOLD_SYNC")
    first = helpers.assert_json(team.pay(ben, external_id="before-hold"), 201)
    reading = threading.Event()
    reading.set()
    statuses = []

    def reader():  # a dashboard polling all along
        with server.client(token=team.owner.token) as c:
            while reading.is_set():
                statuses.append(c.get(PAY + "/" + first["id"]).status)
                time.sleep(0.01)

    t = threading.Thread(target=reader)
    t.start()
    try:
        time.sleep(0.1)
        hold.touch()  # the syncer's fsync would now hold every write it has to sync
        for i in range(3):
            got = {}

            def post(i=i, got=got):
                with server.client(token=team.owner.token) as c:
                    got["post"] = c.post(PAY, json=body(ben, external_id="beside-%d" % i))
                    if got["post"].status == 201:
                        got["get"] = c.get(PAY + "/" + got["post"].json()["id"])

            p = threading.Thread(target=post)
            p.start()
            p.join(10)
            assert "get" in got, "a write beside reads waited for the held fsync"
            created = helpers.assert_json(got["post"], 201)
            assert helpers.assert_json(got["get"], 200) == created
    finally:
        hold.unlink(missing_ok=True)
        reading.clear()
        t.join(10)
    assert statuses and set(statuses) == {200}, statuses
    server.stop()
    assert shutdown_count(server, "synced in their commit") >= 3


def test_a_failed_fsync_stops_the_server_before_the_write_is_answered(make_server, tmp_path):
    fail, server, team, ben = with_sync_hook(make_server, tmp_path, "TREASURY_TEST_FAIL_SYNC")
    helpers.no_recent_reads()
    fail.touch()
    status = None
    with server.client(token=team.owner.token) as c:
        try:
            status = c.post(PAY, json=body(ben, external_id="fsync-fails")).status
        except Exception:
            pass  # the server stopped under the request: it was never answered
    assert status is None, "answered %r although its fsync failed" % status
    server.proc.wait(timeout=30)
    assert server.proc.returncode == -signal.SIGABRT, server.proc.returncode
    assert "fsync of the WAL failed" in server.log_text()
    fail.unlink()
    server.start()
    db = sqlite3.connect(db_path(server), timeout=10)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    owner = team.reconnect()
    helpers.assert_json(owner.post(PAY, json=body(ben, external_id="after-restart")), 201)
