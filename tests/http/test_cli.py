"""The binary's command line: --help/--version, flag and environment errors, refusals to start,
first-start bootstrap (keys, certificate, owner, generated password), clean stop, and the
operator subcommands."""

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import ssl
import stat
import subprocess
import threading
import time
import uuid

import pytest

from client import Client
from conftest import (ADMIN_EMAIL, ADMIN_PASSWORD, ENGINE, USER_PASSWORD, base_env, free_ports,
                      run_cli, sqlite_only)
import helpers
from helpers import WSP_ID, assert_json, assert_problem, signing_key

FLAGS = ("--data-dir", "--listen", "--https-port", "--http-port", "--threads", "--tls-cert",
         "--tls-key", "--log-format", "--max-connections", "--max-connections-per-address",
         "--head-timeout-ms", "--idle-timeout-ms", "--body-timeout-ms", "--body-min-rate",
         "--trusted-proxy", "--help", "--version")
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")
# A flag as a word: "--max-connections" is not found inside "--max-connections-per-address".
FLAG = re.compile(r"--[a-z][a-z0-9-]*[a-z0-9](?![a-z0-9-])")


def start_and_expect_failure(make_server, timeout=15, **kw):
    """Starts a server that must refuse to start; returns (exit code, stderr)."""
    s = make_server(wait=False, **kw)
    s.start(wait=False)
    try:
        rc = s.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()
        pytest.fail("server started although it should have refused; stderr:\n" + s.log_text())
    return rc, s.log_text()


# ---- flags ---------------------------------------------------------------------------------

def test_help_exits_zero_and_lists_every_flag(server_bin):
    r = run_cli(["--help"])
    assert r.returncode == 0, r
    printed = set(FLAG.findall(r.stdout))
    for f in FLAGS:
        assert f in printed, "--help does not mention %s:\n%s" % (f, r.stdout)
    assert "TREASURY_DATA_DIR" in r.stdout and "TREASURY_HTTPS_PORT" in r.stdout


def test_every_flag_help_prints_is_in_the_readme(server_bin):
    r = run_cli(["--help"])
    assert r.returncode == 0, r
    # The flags' own lines (two spaces, the flag), not flags named in another's help text.
    printed = {m.group(1) for m in re.finditer(r"^  (--[a-z0-9-]+)", r.stdout, re.M)}
    assert set(FLAGS) <= printed, sorted(set(FLAGS) - printed)
    with open(README, encoding="utf-8") as f:
        documented = set(FLAG.findall(f.read()))
    missing = sorted(printed - documented)
    assert not missing, "README.md does not mention %s" % ", ".join(missing)


def test_version_prints_a_version_and_exits_zero(server_bin):
    r = run_cli(["--version"])
    assert r.returncode == 0, r
    assert re.search(r"\b\d+\.\d+\.\d+\b", r.stdout), r.stdout


@pytest.mark.parametrize("args, mention", [
    (["--no-such-flag"], "no-such-flag"),
    (["--log-format", "xml"], "log-format"),
    (["--https-port", "70000"], "https-port"),
    (["--threads", "many"], "threads"),
    (["--https-port"], "https-port"),
    (["stray-argument"], "stray-argument"),
])
def test_bad_flag_exits_2_with_a_message_naming_it(server_bin, args, mention, tmp_path):
    r = run_cli(["--data-dir", tmp_path / "d"] + args)
    assert r.returncode == 2, r
    assert mention in r.stderr, r.stderr
    assert not (tmp_path / "d").exists(), "a bad flag must not touch the data directory"


def test_bad_environment_value_exits_2_naming_the_variable(server_bin, tmp_path):
    env = base_env(TREASURY_HTTPS_PORT="not-a-port", TREASURY_DATA_DIR=str(tmp_path / "d"))
    r = run_cli([], env=env)
    assert r.returncode == 2, r
    assert "TREASURY_HTTPS_PORT" in r.stderr, r.stderr


# ---- refusals to start ---------------------------------------------------------------------

def test_https_port_in_use_refuses_to_start_naming_the_port(make_server):
    port = free_ports(1)[0]
    blocker = socket.socket()
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    blocker.bind(("127.0.0.1", port))
    blocker.listen(1)
    try:
        rc, err = start_and_expect_failure(make_server, https_port=port)
    finally:
        blocker.close()
    assert rc != 0
    assert str(port) in err, err
    assert "listening on" not in err


def test_http_port_in_use_refuses_to_start_naming_the_port(make_server):
    port = free_ports(1)[0]
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", port))
    blocker.listen(1)
    try:
        rc, err = start_and_expect_failure(make_server, http_port=port)
    finally:
        blocker.close()
    assert rc != 0
    assert str(port) in err, err


def test_unreadable_tls_cert_refuses_to_start(make_server, tmp_path):
    missing = tmp_path / "no-such-dir" / "server.crt"
    rc, err = start_and_expect_failure(
        make_server, extra_args=["--tls-cert", str(missing), "--tls-key", str(tmp_path / "k.pem")])
    assert rc != 0
    assert str(missing) in err, err


def test_garbage_tls_cert_refuses_to_start(make_server, tmp_path):
    cert = tmp_path / "garbage.crt"
    key = tmp_path / "garbage.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    key.write_text("nope\n")
    os.chmod(key, 0o600)
    rc, err = start_and_expect_failure(
        make_server, extra_args=["--tls-cert", str(cert), "--tls-key", str(key)])
    assert rc != 0
    assert str(cert) in err or str(key) in err, err


@sqlite_only("the database file's place")
def test_database_that_cannot_be_opened_refuses_to_start(make_server, tmp_path):
    data = tmp_path / "data"
    (data / "treasury.db").mkdir(parents=True)  # a directory where the database file goes
    os.chmod(data, 0o700)
    rc, err = start_and_expect_failure(make_server, data_dir=data)
    assert rc != 0
    assert "database" in err.lower(), err


postgresql_only = pytest.mark.skipif(ENGINE != "postgresql", reason="PostgreSQL only")


@postgresql_only
def test_a_postgresql_database_that_cannot_be_reached_refuses_to_start(make_server):
    from conftest import pg_cluster
    url = pg_cluster().url("no_such_database")
    rc, err = start_and_expect_failure(make_server, extra_args=["--database", url])
    assert rc != 0
    assert "no_such_database" in err and "listening on" not in err, err


@postgresql_only
def test_a_postgresql_database_not_in_bytewise_order_refuses_to_start(make_server):
    """Pages are ordered by ids and timestamps compared as bytes: a database whose collation
    follows a language's rules would order them otherwise, so the server will not use it."""
    from conftest import pg_cluster
    cluster = pg_cluster()
    name = "t_collation_" + uuid.uuid4().hex[:8]
    with cluster.admin().cursor() as cur:
        cur.execute("CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8' "
                    "LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'" % name)
    try:
        rc, err = start_and_expect_failure(make_server,
                                           extra_args=["--database", cluster.url(name)])
        assert rc != 0
        assert "collation" in err and "listening on" not in err, err
    finally:
        cluster.drop_database(name)


def test_data_dir_that_is_a_file_refuses_to_start(make_server, tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    rc, err = start_and_expect_failure(make_server, data_dir=f)
    assert rc != 0
    assert str(f) in err, err


@pytest.mark.parametrize("mode", [0o755, 0o705, 0o770])
def test_a_data_dir_open_to_others_or_group_writable_refuses_to_start(make_server, tmp_path,
                                                                     mode):
    data = tmp_path / "shared"
    data.mkdir()
    os.chmod(data, mode)
    rc, err = start_and_expect_failure(make_server, data_dir=data)
    assert rc != 0
    assert "chmod 700 %s" % data in err, err
    assert not (data / "treasury.db").exists()
    r = run_cli(["--data-dir", str(data), "admin", "list-workspaces"])
    assert r.returncode != 0 and "chmod 700" in r.stderr, r


def test_a_data_dir_a_backup_group_may_read_is_accepted(make_server, tmp_path):
    data = tmp_path / "backup-readable"
    data.mkdir()
    os.chmod(data, 0o750)
    s = make_server(data_dir=data)
    assert s.running and s.admin_client().get("/v1/payments").status == 200
    # accepted, as PostgreSQL accepts its data directory so, but not silently: the group sees
    # the files' names, and reads only the public certificate
    assert "%s is readable by its group (mode 0750)" % data in s.log_text(), s.log_text()
    assert "chmod 700 %s" % data in s.log_text()
    assert [p.name for p in data.iterdir()
            if stat.S_IMODE(p.stat().st_mode) & 0o077 and p.name != "tls.crt"] == []
    # an operator command says it once
    assert s.admin("list-workspaces").stderr.count("readable by its group") == 1


def test_every_file_is_private_whatever_the_umask(make_server):
    """The database, its WAL and SHM, the keys: 0600 even when the server is started with a
    permissive umask (022 here, as pytest runs)."""
    old = os.umask(0o022)
    try:
        s = make_server()
    finally:
        os.umask(old)
    s.admin_client().post("/v1/beneficiaries", json=helpers.beneficiary(external_id=None))
    names = ["jwt-signing.key", "tls.key"]
    if ENGINE == "sqlite":
        names += ["treasury.db", "treasury.db-wal", "treasury.db-shm"]
    for name in names:
        path = s.data_dir / name
        assert path.exists(), name
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, (name, oct(path.stat().st_mode))
    assert stat.S_IMODE(s.data_dir.stat().st_mode) == 0o700


@sqlite_only("the database file's permissions")
def test_database_files_left_readable_by_an_older_version_are_made_private(make_server):
    s = make_server()
    s.stop()
    db = s.data_dir / "treasury.db"
    os.chmod(db, 0o644)
    s.start()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert "made it private" in s.log_text(since_start=True)


# ---- first start ---------------------------------------------------------------------------

def test_first_start_creates_signing_key_0600_with_32_random_bytes(make_server):
    s = make_server()
    path = s.data_dir / "jwt-signing.key"
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode == 0o600, oct(mode)
    key = signing_key(s.data_dir)
    assert len(key) == 32 and len(set(key)) > 8
    assert (s.data_dir / "treasury.db").is_file() == (ENGINE == "sqlite")


def test_first_start_creates_a_self_signed_cert_with_a_private_key_only_the_owner_reads(make_server):
    s = make_server()
    assert (s.data_dir / "tls.crt").is_file()
    key_mode = stat.S_IMODE((s.data_dir / "tls.key").stat().st_mode)
    assert key_mode & 0o077 == 0, "tls.key is readable by others: %o" % key_mode


def test_first_start_logs_the_certificate_fingerprint(make_server):
    s = make_server()
    der = ssl.PEM_cert_to_DER_cert((s.data_dir / "tls.crt").read_text())
    fp = hashlib.sha256(der).hexdigest()
    printed = s.log_text() + s.stdout_text()
    assert fp in re.sub(r"[^0-9a-f]", "", printed.lower()), \
        "SHA-256 fingerprint %s not printed:\n%s" % (fp, printed)


def test_certificate_is_valid_for_localhost_as_well_as_127_0_0_1(make_server):
    s = make_server()
    with Client("127.0.0.1", s.https_port, cafile=s.ca, server_hostname="localhost") as c:
        assert c.get("/healthz").status == 200
    with Client("127.0.0.1", s.https_port, cafile=s.ca) as c:
        assert c.get("/healthz").status == 200


def test_certificate_is_not_valid_for_another_name(make_server):
    s = make_server()
    with Client("127.0.0.1", s.https_port, cafile=s.ca, server_hostname="example.com") as c:
        with pytest.raises(ssl.SSLCertVerificationError):
            c.get("/healthz")


def test_first_start_without_admin_password_prints_a_generated_one_once(make_server):
    s = make_server(admin_password=None)
    out = s.stdout_text()
    m = re.search(r"password for %s: (\S+)" % re.escape(ADMIN_EMAIL), out)
    assert m, "no generated password on stdout:\n%s" % out
    generated = m.group(1)
    assert len(generated) >= 12
    assert generated not in s.log_text(), "the generated password reached the log"
    tok = s.login(ADMIN_EMAIL, generated)
    assert WSP_ID.match(tok["workspace_id"])
    s.restart()
    assert generated not in s.stdout_text(since_start=True)
    assert "password" not in s.stdout_text(since_start=True).lower()
    assert s.login(ADMIN_EMAIL, generated)["workspace_id"] == tok["workspace_id"]


def test_admin_email_comes_from_the_environment(make_server):
    s = make_server(admin_email="ops@treasury.example")
    assert s.login("ops@treasury.example", ADMIN_PASSWORD)["access_token"]
    r = s.login_response(ADMIN_EMAIL, ADMIN_PASSWORD)
    assert_problem(r, 401, "invalid_credentials")


def test_environment_variables_configure_the_server(make_server, tmp_path):
    # TREASURY_DATABASE: the PostgreSQL URL (conftest sets it), or on SQLite a file outside the
    # data directory. Ignored, the server would open <data-dir>/treasury.db and serve as well.
    elsewhere = tmp_path / "from-env.db"
    extra = {"TREASURY_DATABASE": str(elsewhere)} if ENGINE == "sqlite" else {}
    s = make_server(use_env=True, log_format="text", extra_env=extra)
    with s.client() as c:
        assert assert_json(c.get("/healthz"), 200) == {"status": "ok", "database": "ok"}
    with s.plain_client() as c:
        assert_problem(c.get("/healthz"), 400, "use_https")
    # --log-format text via TREASURY_LOG_FORMAT: the ready line is not JSON.
    line = next(l for l in s.log_text().splitlines() if "listening on https://" in l)
    with pytest.raises(ValueError):
        json.loads(line)
    assert not (s.data_dir / "treasury.db").exists()
    ben = helpers.create_beneficiary(s.client(token=s.token), name="Stored where told")
    if ENGINE == "sqlite":
        db = sqlite3.connect(str(elsewhere))
    else:
        db = helpers.open_db(s)
    try:
        assert db.execute("SELECT name FROM beneficiaries WHERE id = ?",
                          (ben["id"],)).fetchone() == ("Stored where told",)
    finally:
        db.close()


@sqlite_only("a database file outside the data directory")
def test_database_flag_puts_the_sqlite_file_where_it_says(make_server, tmp_path):
    elsewhere = tmp_path / "elsewhere.db"
    s = make_server(extra_args=["--database", str(elsewhere)])
    ben = helpers.create_beneficiary(s.client(token=s.token), name="Stored elsewhere")
    assert elsewhere.is_file() and stat.S_IMODE(elsewhere.stat().st_mode) & 0o077 == 0
    assert not (s.data_dir / "treasury.db").exists()
    db = sqlite3.connect(str(elsewhere))
    try:
        assert db.execute("SELECT name FROM beneficiaries WHERE id = ?",
                          (ben["id"],)).fetchone() == ("Stored elsewhere",)
    finally:
        db.close()
    s.restart()  # and finds it there again
    with s.client(token=s.token) as c:
        assert_json(c.get("/v1/beneficiaries/" + ben["id"]), 200)


def test_flag_wins_over_environment(make_server, tmp_path):
    s = make_server(wait=False, extra_env={"TREASURY_HTTPS_PORT": "1"})
    s.start()  # --https-port is on the command line, so port 1 (privileged) is never tried
    with s.client() as c:
        assert c.get("/healthz").status == 200


def test_http_port_zero_disables_the_plain_listener(make_server):
    s = make_server(http_port=0)
    with s.client() as c:
        assert c.get("/healthz").status == 200
    assert "plain HTTP" not in next(l for l in s.log_text().splitlines()
                                    if "listening on https://" in l)


def test_json_log_lines_are_each_one_json_object(make_server):
    s = make_server()
    with s.client() as c:
        c.get("/healthz")
    recs = s.log_records()
    assert recs and all(isinstance(r, dict) for r in recs)
    assert any("listening on https://127.0.0.1:%d" % s.https_port in r.get("msg", "") for r in recs)


# ---- stopping ------------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_exits_zero(make_server, sig):
    s = make_server()
    with s.client() as c:
        assert c.get("/healthz").status == 200
    assert s.stop(sig) == 0
    assert s.sanitizer_report() == []


def test_in_flight_keepalive_connection_does_not_block_shutdown(make_server):
    s = make_server()
    c = s.client()
    assert c.get("/healthz").status == 200  # idle keep-alive connection stays open
    t0 = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - t0 < 15


def test_logins_still_queued_past_the_drain_timeout_are_refused_and_the_server_stops(
        make_server):
    """A login hashes a password on one of two offload threads, so a burst of them queues.
    Stopped meanwhile, the server lets them run for the drain timeout, then answers the ones
    still queued 503 without running them, lets the running ones end and exits 0. (It used to
    stop libmicrohttpd with their connections still suspended, which aborts the process.)"""
    s = make_server(extra_args=["--drain-timeout-ms", "1000", "--auth-rate-limit", "100000"],
                    extra_env={"TREASURY_SCRYPT_LOG2N": "13"})  # ~0.1 s a hash, not ~1 ms
    helpers.EXPECTED_SERVER_ERRORS.add(503)
    try:
        answers = []

        def login():
            answers.append(s.login_response())

        burst = [threading.Thread(target=login) for _ in range(100)]  # about 5 s of hashing
        for t in burst:
            t.start()
        time.sleep(1.0)  # all of them sent; a fifth or so answered
        t0 = time.monotonic()
        assert s.stop() == 0
        assert time.monotonic() - t0 < 5  # twice the drain timeout, and then some
        for t in burst:
            t.join(10)
        statuses = sorted(r.status for r in answers)
        assert len(statuses) == 100 and set(statuses) == {200, 503}, statuses
        for r in answers:
            if r.status == 503:
                assert_problem(r, 503, "unavailable")
            else:
                assert assert_json(r, 200)["access_token"]
        assert "queued request(s) answered 503 unrun" in s.log_text()
        assert s.sanitizer_report() == []
    finally:
        helpers.EXPECTED_SERVER_ERRORS.discard(503)


# ---- operator subcommands ------------------------------------------------------------------

def test_admin_create_workspace_then_list_workspaces_shows_it(make_server):
    s = make_server()
    wid = s.create_workspace("Second Ltd", "second@example.com", password=USER_PASSWORD)
    assert WSP_ID.match(wid)
    r = s.admin("list-workspaces")
    assert wid in r.stdout and "Second Ltd" in r.stdout
    first = s.login()["workspace_id"]
    assert first in r.stdout
    js = json.loads(s.admin("list-workspaces", "--json").stdout)
    assert {w["id"] for w in js} == {first, wid}
    tok = s.login("second@example.com", USER_PASSWORD)
    assert tok["workspace_id"] == wid


def test_admin_create_workspace_generates_and_prints_a_password_when_none_is_given(server):
    s = server
    r = s.admin("create-workspace", "--name", "Gen", "--owner-email", "gen@example.com",
                TREASURY_ADMIN_PASSWORD=None)
    m = re.search(r"password for gen@example\.com: (\S+)", r.stdout)
    assert m, r.stdout
    assert s.login("gen@example.com", m.group(1))["access_token"]


def test_admin_create_user_viewer_gets_only_read_scopes(server):
    s = server
    wid = s.login()["workspace_id"]
    s.create_user(wid, "viewer@example.com", "viewer")
    tok = s.login("viewer@example.com", USER_PASSWORD)
    scopes = tok["scope"].split()
    assert scopes and all(x.endswith(":read") for x in scopes), scopes
    assert "payments:read" in scopes and "payments:write" not in scopes


def test_operator_provisioning_is_audited(server):
    """create-workspace and create-user added accounts and memberships with no audit record
    (only invite-user wrote one): each now writes what it created in the workspace's chain, by
    the actor `operator`, never a password."""
    s = server
    tag = uuid.uuid4().hex[:8]
    owner, member = "owner-%s@example.com" % tag, "approver-%s@example.com" % tag
    wid = s.create_workspace("Audited " + tag, owner, password=USER_PASSWORD)
    r = s.admin("create-user", "--workspace", wid, "--email", member, "--role", "approver",
                TREASURY_USER_PASSWORD=None)
    generated = re.search(r"password for \S+: (\S+)", r.stdout).group(1)
    # an existing account is only invited (nothing else is created for it), and a refused
    # command records nothing
    other = s.create_workspace("Invites " + tag, member)
    assert s.admin("create-user", "--workspace", wid, "--email", member, "--role", "viewer",
                   check=False).returncode == 1
    db = helpers.open_db(s)
    with contextlib.closing(db):
        ids = dict(db.execute("SELECT email_norm, id FROM users WHERE email_norm IN (?, ?)",
                              (owner, member)).fetchall())
        rows = {w: db.execute("SELECT seq, actor_id, action, resource_type, resource_id, "
                              "before_status, after_status, detail, request_id, prev_hash, hash "
                              "FROM audit_events WHERE workspace_id = ? ORDER BY seq",
                              (w,)).fetchall() for w in (wid, other)}
    owner_id, member_id = ids[owner], ids[member]
    assert [row[1:7] for row in rows[wid]] == [
        ("operator", "workspace.created", "workspace", wid, None, None),
        ("operator", "user.created", "user", owner_id, None, "active"),
        ("operator", "member.created", "member", owner_id, None, "active"),
        ("operator", "user.created", "user", member_id, None, "active"),
        ("operator", "member.created", "member", member_id, None, "active"),
    ]
    details = [row[7] for row in rows[wid]]
    assert "Audited " + tag in details[0] and "create-workspace" in details[0]
    assert owner in details[1] and "TREASURY_ADMIN_PASSWORD" in details[1]
    assert "role owner" in details[2] and "create-workspace" in details[2]
    assert member in details[3] and "generated" in details[3]
    assert "role approver" in details[4] and "create-user" in details[4]
    assert not [d for d in details if USER_PASSWORD in d or generated in d]
    # one request id per command; the chain is unbroken
    assert len({row[8] for row in rows[wid][:3]}) == 1 and rows[wid][3][8] == rows[wid][4][8]
    assert rows[wid][0][8] != rows[wid][3][8]
    assert [row[0] for row in rows[wid]] == [1, 2, 3, 4, 5]
    assert all(cur[9] == prev[10] for prev, cur in zip(rows[wid], rows[wid][1:]))
    inv = s.owner_invitation
    assert [row[1:5] for row in rows[other]] == [
        ("operator", "workspace.created", "workspace", other),
        ("operator", "user.invited", "invitation", inv)]
    assert rows[other][0][8] == rows[other][1][8], "the invitation is the command's own record"


@pytest.mark.parametrize("args", [
    ["create-user", "--workspace", "WSP", "--email", "x@example.com", "--role", "superuser"],
    ["create-user", "--workspace", "not-a-workspace", "--email", "x@example.com", "--role", "viewer"],
    ["create-user", "--workspace", "WSP", "--email", "not-an-email", "--role", "viewer"],
    ["create-workspace", "--name", "No owner"],
    ["no-such-command"],
])
def test_admin_subcommand_usage_errors_exit_2(server, args):
    s = server
    wid = s.login()["workspace_id"]
    r = s.admin(*[wid if a == "WSP" else a for a in args], check=False)
    assert r.returncode == 2, r
    assert r.stderr.strip(), "usage error without a message"


def test_admin_create_user_in_unknown_workspace_fails(server):
    s = server
    r = s.admin("create-user", "--workspace", "wsp_" + "0" * 26, "--email", "x@example.com",
                "--role", "viewer", check=False)
    assert r.returncode == 1, r
    assert "wsp_" + "0" * 26 in r.stderr


@pytest.mark.parametrize("args", [
    ["admin", "--help"], ["admin"], ["admin", "creat-workspace"],
    ["admin", "create-workspace", "--help"], ["admin", "create-workspace", "--name", "x"],
    ["admin", "list-workspaces"], ["admin", "set-rate-limit", "--workspace", "wsp_x",
                                   "--per-minute", "5"],
])
@sqlite_only("the default database file under the default data directory")
def test_admin_never_creates_a_data_directory_by_the_way(tmp_path, args):
    # Help, a typo, a usage error, or a command that only reads or changes what exists:
    # nothing appears in the working directory (the default --data-dir is ./var).
    r = run_cli(args, cwd=str(tmp_path))
    assert r.returncode in (0, 1, 2), r
    assert list(tmp_path.iterdir()) == [], (r.stdout, r.stderr)
    if args[1:] in (["list-workspaces"], ["set-rate-limit", "--workspace", "wsp_x",
                                           "--per-minute", "5"]):
        assert r.returncode == 1 and "no database at ./var/treasury.db" in r.stderr, r.stderr


@sqlite_only("the database file the subcommand creates")
def test_admin_create_workspace_may_create_the_first_database(tmp_path):
    r = run_cli(["--data-dir", tmp_path / "fresh", "admin", "create-workspace", "--name", "First",
                 "--owner-email", "first@example.com"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "fresh" / "treasury.db").is_file()


def test_the_open_file_limit_is_raised_to_the_hard_one(tmp_path):
    # --max-connections 1024, lingering sockets and the database need more than a soft limit
    # of 1024 descriptors; started under a soft limit of 256, the server raises it.
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard <= 256:
        pytest.skip("the hard open-file limit is %d" % hard)
    from conftest import Server
    s = Server(tmp_path / "srv")
    env = s.env()
    s.root.mkdir(parents=True, exist_ok=True)
    with open(s.log_path, "ab") as err:
        s.proc = subprocess.Popen(
            s.argv(), env=env, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
            cwd=str(s.root),
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)))
    try:
        s.wait_ready()
        with open("/proc/%d/limits" % s.proc.pid) as f:
            line = next(l for l in f if l.startswith("Max open files"))
        assert int(line.split()[3]) == hard, line
    finally:
        assert s.stop() == 0
