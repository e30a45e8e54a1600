"""The PostgreSQL engine's own unit tests (tests/unit/test_storage_pg.c) need a database: when
the suite runs on PostgreSQL, this gives them a fresh one in the session's cluster and runs the
binary built beside the server under test (build/check/tests/, build/san/tests/)."""

import os
import subprocess

import pytest

import helpers
from conftest import ENGINE, binary_path, pg_cluster

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
