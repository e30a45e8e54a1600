"""The PostgreSQL engine's own unit tests (tests/unit/test_storage_pg.c) need a database: when
the suite runs on PostgreSQL, this gives them a fresh one in the session's cluster and runs the
binary built beside the server under test (build/check/tests/, build/san/tests/). Then what the
runtime does with the engine: a connection the database ended is replaced, and a transaction
that failed on a conflict with a concurrent one is run again (runtime/pipeline.c)."""

import os
import subprocess
import uuid

import pytest

import helpers
from conftest import ENGINE, binary_path, pg_cluster
from helpers import assert_json, assert_problem, beneficiary, open_db

pytestmark = pytest.mark.skipif(ENGINE != "postgresql",
                                reason="PostgreSQL only: the engine's unit tests")


def test_the_postgresql_engine_unit_tests_pass():
    binary = binary_path().parent / "tests" / "test_storage_pg"
    if not binary.is_file():
        pytest.fail("%s is not built: make unit (with the same CHECK=1 / SAN=1)" % binary,
                    pytrace=False)
    cluster = pg_cluster()
    name = cluster.create_database()
    try:
        env = dict(os.environ, TREASURY_TEST_PG_URL=cluster.url(name))
        r = subprocess.run([str(binary)], env=env, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-4000:]
        assert "0 failed" in out and " 0 passed" not in out, out[-4000:]
    finally:
        cluster.drop_database(name)


def test_connections_the_database_ended_are_replaced(make_server):
    """A PostgreSQL restart or failover ends every connection: each thread of the server opens
    a new one (its settings applied, its statements prepared again) instead of failing from then
    on. Only a request that met the break itself may be answered 503."""
    s = make_server()
    c = s.client(token=s.token)
    assert c.get("/v1/payments").status == 200
    admin = pg_cluster().admin()
    with admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()", (s.database,))
        assert cur.rowcount >= 1
    helpers.EXPECTED_SERVER_ERRORS.add(503)
    try:
        check_after_the_break(c)
    finally:
        helpers.EXPECTED_SERVER_ERRORS.discard(503)


def check_after_the_break(c):
    statuses = []
    for _ in range(12):  # every thread's connection broke: each may meet it once
        statuses.append(c.get("/v1/payments").status)
    assert set(statuses) <= {200, 503}, statuses
    assert statuses[-4:] == [200] * 4, statuses
    # writes too, on the write threads' new connections
    for _ in range(20):
        r = c.post("/v1/beneficiaries", json={
            "name": "After the break", "account_holder_name": "After the break",
            "account_identification": {"scheme": "IBAN",
                                       "identification": "DE89370400440532013000"},
            "bank": {"bic": "COBADEFFXXX", "country": "DE"}, "currency": "EUR",
            "country": "DE"})
        assert r.status in (201, 503), r
    assert r.status == 201, r


# ---- serialization failures are run again by the runtime -----------------------------------

def fail_with_conflicts(db, n):
    """The next n beneficiary inserts fail as a conflict with a concurrent transaction does
    (SQLSTATE 40001, serialization_failure). The attempts are counted by a sequence, which a
    rollback does not take back."""
    db.execute("DROP TRIGGER IF EXISTS conflict_probe ON beneficiaries")
    db.execute("DROP FUNCTION IF EXISTS conflict_probe_fn()")
    db.execute("DROP SEQUENCE IF EXISTS conflict_attempts")
    db.execute("CREATE SEQUENCE conflict_attempts")
    db.execute("CREATE FUNCTION conflict_probe_fn() RETURNS trigger LANGUAGE plpgsql AS $f$ "
               "BEGIN IF nextval('conflict_attempts') <= %d THEN RAISE EXCEPTION "
               "'injected conflict' USING ERRCODE = 'serialization_failure'; END IF; "
               "RETURN NEW; END $f$" % n)
    db.execute("CREATE TRIGGER conflict_probe BEFORE INSERT ON beneficiaries FOR EACH ROW "
               "EXECUTE FUNCTION conflict_probe_fn()")


def attempts(db):
    return db.execute("SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
                      "FROM conflict_attempts").fetchone()[0]


def stored(db, name):
    return db.execute("SELECT count(*) FROM beneficiaries WHERE name = ?", (name,)).fetchone()[0]


def test_a_serialization_failure_is_run_again_by_the_runtime(make_server):
    """The handler meets the failure, the runtime rolls back and runs the request again from
    the start (up to 8 runs): two conflicts cost two reruns and store one row; a conflict on
    every run ends in 503 unavailable with Retry-After and nothing stored, not even the
    idempotency record, so that the client's retry with the same key runs the operation."""
    s = make_server()
    c = s.client(token=s.token)
    db = open_db(s)
    try:
        fail_with_conflicts(db, 2)
        r = c.post("/v1/beneficiaries", json=beneficiary(name="Conflicted twice"))
        assert_json(r, 201)
        assert r.header("Idempotent-Replayed") is None
        assert attempts(db) == 3
        assert stored(db, "Conflicted twice") == 1
        log = s.log_text()
        assert "met a concurrent transaction; run 2 of 8" in log
        assert "met a concurrent transaction; run 3 of 8" in log
        assert "run 4 of 8" not in log

        fail_with_conflicts(db, 100)
        key = str(uuid.uuid4())
        body = beneficiary(name="Conflicted always")
        helpers.EXPECTED_SERVER_ERRORS.add(503)
        try:
            r = c.post("/v1/beneficiaries", json=body, headers={"Idempotency-Key": key})
        finally:
            helpers.EXPECTED_SERVER_ERRORS.discard(503)
        assert_problem(r, 503, "unavailable")
        assert r.header("Retry-After") == "1"
        assert attempts(db) == 8
        assert stored(db, "Conflicted always") == 0
        db.execute("DROP TRIGGER conflict_probe ON beneficiaries")
        r = c.post("/v1/beneficiaries", json=body, headers={"Idempotency-Key": key})
        assert_json(r, 201)
        assert r.header("Idempotent-Replayed") is None  # run, not a replay of the 503
        assert stored(db, "Conflicted always") == 1
    finally:
        db.close()
