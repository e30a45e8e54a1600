"""Fixtures for the HTTP tests: a live treasury-server on 127.0.0.1 with a fresh data directory.

`server` (one per test module) and `make_server` (a factory, servers stopped after the test)
start build/treasury-server (or $TREASURY_SERVER_BIN) on free ports, wait for its
"listening on https://" line, and at teardown stop it with SIGTERM and require exit code 0 and
a log free of sanitizer reports.

The storage engine is chosen by TREASURY_TEST_ENGINE: `sqlite` (the default: each server's
database is <data-dir>/treasury.db, as a server started without --database has it) or
`postgresql`: one throwaway cluster for the whole session (tests/pg/cluster.py, started on first
use, stopped at the end), and each data directory a fresh database of its own in it, passed with
--database (a server restarted on the same data directory finds the same database). Tests that
are about SQLite itself are marked with sqlite_only(reason)."""

import email
import email.policy
import json
import os
import re
import signal
import socket
import struct
import subprocess
import time
import sys
import uuid
from pathlib import Path

import pytest

from client import Client
from helpers import check_every_response
from spec_ops import tally_lines

Client.response_hook = staticmethod(check_every_response)

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TREASURY_SERVER_BIN") or REPO / "build" / "treasury-server").resolve()
ADMIN_EMAIL = "admin@example.com"
# Distinctive so the access-log test can grep for it.
ADMIN_PASSWORD = "Adm1n-pw-7c41e2d9-not-in-logs"
USER_PASSWORD = "Us3r-pw-5b90aa13-not-in-logs"
READY_TIMEOUT = 15.0
STOP_TIMEOUT = 20.0
ENGINE = os.environ.get("TREASURY_TEST_ENGINE") or "sqlite"
if ENGINE not in ("sqlite", "postgresql"):
    raise pytest.UsageError("TREASURY_TEST_ENGINE=%r: sqlite or postgresql" % ENGINE)
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:", "ThreadSanitizer", "RESPONSE SCHEMA VIOLATION")


def sqlite_only(reason):
    """Marks a test that is about the SQLite engine itself (its file, WAL, VFS, group commit):
    skipped when the suite runs on PostgreSQL."""
    return pytest.mark.skipif(ENGINE != "sqlite", reason="SQLite only: " + reason)


# ---- PostgreSQL (TREASURY_TEST_ENGINE=postgresql) -----------------------------------------
_cluster = None
_databases = {}  # data directory -> the database made for it


def pg_cluster():
    """The session's cluster, started on first use."""
    global _cluster
    if _cluster is None:
        sys.path.insert(0, str(REPO / "tests" / "pg"))
        from cluster import Cluster
        c = Cluster()
        try:
            c.start()
        except RuntimeError as e:
            pytest.exit("cannot start the test PostgreSQL cluster: %s" % e, returncode=3)
        _cluster = c
    return _cluster


def database_for(data_dir):
    """The PostgreSQL database of a data directory (created, C collation, on first use)."""
    key = str(Path(data_dir).resolve())
    if key not in _databases:
        _databases[key] = pg_cluster().create_database()
    return _databases[key]


def drop_database_of(data_dir):
    """Drops a data directory's database (its servers stopped), if it has one."""
    name = _databases.pop(str(Path(data_dir).resolve()), None)
    if name is not None and _cluster is not None:
        _cluster.drop_database(name)


@pytest.fixture(scope="session", autouse=True)
def pg_cluster_stopped_at_the_end():
    """Stops the cluster when the session ends (atexit does it too, after a Ctrl-C)."""
    yield
    global _cluster
    if _cluster is not None:
        _cluster.stop()
        _cluster = None
        _databases.clear()


def binary_path():
    return BIN


def require_binary():
    if not BIN.is_file() or not os.access(BIN, os.X_OK):
        pytest.fail("%s does not exist or is not executable: build it with `make` "
                    "(or point TREASURY_SERVER_BIN at a binary)" % BIN, pytrace=False)
    return BIN


def free_ports(n):
    """n distinct ports free right now on 127.0.0.1 (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def base_env(**extra):
    """The caller's environment without any TREASURY_* setting, plus cheap scrypt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREASURY_")}
    env["TREASURY_SCRYPT_LOG2N"] = "10"
    # Suites log in far more often than the default 30 per minute per address allows; the
    # auth policy's own tests set a small quota explicitly.
    env["TREASURY_AUTH_RATE_LIMIT"] = "100000"
    # The sandbox FX market ticks rates in the background (on by default): off, so that rates
    # are only what a test pushes; tests of the market turn it on (--fx-market-interval-ms).
    env["TREASURY_FX_MARKET_INTERVAL_MS"] = "0"
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def run_cli(args, env=None, timeout=30, **kw):
    """Runs the binary to completion (subcommands, --help, start-up failures)."""
    return subprocess.run([str(require_binary())] + [str(a) for a in args],
                          env=env if env is not None else base_env(), capture_output=True,
                          text=True, timeout=timeout, **kw)


def token_in(text):
    """The invitation token in an invitation e-mail's text."""
    m = re.search(r'"invitation_token": "([A-Za-z0-9_-]+)"', text)
    assert m, "no invitation token in %r" % text
    return m.group(1)


class Server:
    """One server process. Attributes: https_port, http_port, base (https://127.0.0.1:PORT),
    data_dir, log_path (stderr), stdout_path, admin_email, admin_password."""

    def __init__(self, root, admin_password=ADMIN_PASSWORD, admin_email=None, https_port=None,
                 http_port=None, log_format="json", threads=2, extra_args=(), extra_env=None,
                 use_env=False, data_dir=None):
        self.root = Path(root)
        self.data_dir = Path(data_dir) if data_dir else self.root / "data"
        ports = free_ports(2)
        self.https_port = https_port or ports[0]
        self.http_port = ports[1] if http_port is None else http_port
        self.log_path = self.root / "server.stderr.log"
        self.stdout_path = self.root / "server.stdout.log"
        self.admin_email = admin_email or ADMIN_EMAIL
        self.admin_password = admin_password
        self.log_format = log_format
        self.threads = threads
        self.extra_args = list(extra_args)
        self.extra_env = dict(extra_env or {})
        self.use_env = use_env
        self.proc = None
        self.exit_codes = []
        self._log_offset = 0
        self._stdout_offset = 0
        self._clients = []
        self._token = None
        self.owner_invitation = None  # the last create_workspace's, for an existing account

    # ---- process ------------------------------------------------------------------------
    @property
    def base(self):
        return "https://127.0.0.1:%d" % self.https_port

    @property
    def issuer(self):
        return self.base

    @property
    def ca(self):
        return str(self.data_dir / "tls.crt")

    @property
    def database(self):
        """PostgreSQL: the name of this data directory's database (None on SQLite)."""
        return database_for(self.data_dir) if ENGINE == "postgresql" else None

    @property
    def database_url(self):
        """PostgreSQL: the --database URL the server is started with (None on SQLite)."""
        return pg_cluster().url(self.database) if ENGINE == "postgresql" else None

    def database_args(self):
        return ["--database", self.database_url] if ENGINE == "postgresql" else []

    def env(self, **extra):
        e = base_env(TREASURY_ADMIN_PASSWORD=self.admin_password)
        if self.admin_email != ADMIN_EMAIL:
            e["TREASURY_ADMIN_EMAIL"] = self.admin_email
        e.update({k: str(v) for k, v in self.extra_env.items()})
        for k, v in extra.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
        return e

    def argv(self):
        settings = [("data-dir", self.data_dir), ("listen", "127.0.0.1"),
                    ("https-port", self.https_port), ("http-port", self.http_port),
                    ("threads", self.threads), ("log-format", self.log_format)]
        if self.use_env:
            return [str(require_binary())] + self.extra_args
        args = [str(require_binary())]
        for k, v in settings:
            args += ["--" + k, str(v)]
        return args + self.database_args() + self.extra_args

    def start(self, wait=True):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        env = self.env()
        if self.use_env:
            env.update(TREASURY_DATA_DIR=str(self.data_dir), TREASURY_LISTEN="127.0.0.1",
                       TREASURY_HTTPS_PORT=str(self.https_port),
                       TREASURY_HTTP_PORT=str(self.http_port),
                       TREASURY_THREADS=str(self.threads),
                       TREASURY_LOG_FORMAT=self.log_format)
            if ENGINE == "postgresql":
                env["TREASURY_DATABASE"] = self.database_url
        self.root.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._stdout_offset = self.stdout_path.stat().st_size if self.stdout_path.exists() else 0
        with open(self.log_path, "ab") as err, open(self.stdout_path, "ab") as out:
            self.proc = subprocess.Popen(self.argv(), env=env, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, cwd=str(self.root))
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=READY_TIMEOUT):
        want = "listening on https://127.0.0.1:%d" % self.https_port
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if want in self.log_text(since_start=True):
                return
            rc = self.proc.poll()
            if rc is not None:
                raise AssertionError("server exited with %d before it was ready; stderr:\n%s" %
                                     (rc, self.log_text(since_start=True)[-4000:]))
            time.sleep(0.02)
        self.proc.kill()
        self.proc.wait()
        raise AssertionError("no %r line within %.0f s; stderr:\n%s" %
                             (want, timeout, self.log_text(since_start=True)[-4000:]))

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Stops the server with sig and returns its exit code (kills it after timeout)."""
        for c in self._clients:
            c.close()
        self._clients = []
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_codes.append("killed")
                raise AssertionError("server did not stop within %.0f s of %s" %
                                     (timeout, signal.Signals(sig).name))
        rc = self.proc.returncode
        self.exit_codes.append(rc)
        return rc

    def restart(self):
        rc = self.stop()
        assert rc == 0, "exit code %r on SIGTERM" % rc
        self._token = None
        return self.start()

    # ---- output -------------------------------------------------------------------------
    def log_text(self, since_start=False):
        if not self.log_path.exists():
            return ""
        data = self.log_path.read_bytes()
        if since_start:
            data = data[self._log_offset:]
        return data.decode("utf-8", "replace")

    def stdout_text(self, since_start=False):
        if not self.stdout_path.exists():
            return ""
        data = self.stdout_path.read_bytes()
        if since_start:
            data = data[self._stdout_offset:]
        return data.decode("utf-8", "replace")

    def log_records(self):
        """Every stderr line parsed as JSON (a line that is not JSON fails the test). A last
        line without its newline is still being written (the server writes on while the test
        reads): it is left for the next read."""
        out = []
        text = self.log_text()
        if not text.endswith("\n"):
            text = text[:text.rfind("\n") + 1]
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                raise AssertionError("stderr line is not JSON: %r" % line)
        return out

    def access_records(self, request_id=None, wait_for=1, timeout=3.0):
        """Access-log records (msg == "access"), optionally for one request id. Waits briefly
        for them: the line is written when the response has been sent."""
        deadline = time.monotonic() + timeout
        while True:
            recs = [r for r in self.log_records()
                    if isinstance(r, dict) and r.get("msg") == "access"
                    and (request_id is None or r.get("request_id") == request_id)]
            if len(recs) >= wait_for or time.monotonic() > deadline:
                return recs
            time.sleep(0.05)

    def sanitizer_report(self):
        text = self.log_text()
        return [m for m in SANITIZER_MARKS if m in text]

    # ---- HTTP ---------------------------------------------------------------------------
    def client(self, token=None, **kw):
        c = Client("127.0.0.1", self.https_port, cafile=self.ca, token=token, **kw)
        self._clients.append(c)
        return c

    def plain_client(self):
        c = Client("127.0.0.1", self.http_port, tls=False)
        self._clients.append(c)
        return c

    def login_response(self, email=None, password=None, **extra):
        body = {"email": email or self.admin_email,
                "password": self.admin_password if password is None else password}
        body.update(extra)
        with Client("127.0.0.1", self.https_port, cafile=self.ca) as c:
            return c.post("/v1/api/login", json=body)

    def login(self, email=None, password=None, **extra):
        r = self.login_response(email, password, **extra)
        assert r.status == 200, "login failed: %r" % r
        return r.json()

    @property
    def token(self):
        """The bootstrap owner's access token (cached)."""
        if self._token is None:
            self._token = self.login()["access_token"]
        return self._token

    def admin_client(self):
        return self.client(token=self.token)

    # ---- test clock ----------------------------------------------------------------------
    def move_clock(self, seconds):
        """Moves the server's clock (test builds: -DTREASURY_TEST_CLOCK) to `seconds` from real
        time; takes effect on the server's very next reading. Skips on a release build."""
        path = self.data_dir / "test-clock-offset"
        if not path.exists():
            pytest.skip("the server binary has no test clock (a release build)")
        with open(path, "r+b") as f:
            f.write(struct.pack("<q", int(seconds)))

    # ---- e-mail (the spool: runtime/mail.c without --smtp-url) ------------------------------
    def mailbox(self):
        """Every message the server delivered to its spool (<data-dir>/mail/<id>.eml), oldest
        first, parsed (email.message.EmailMessage)."""
        spool = self.data_dir / "mail"
        out = []
        for path in sorted(spool.glob("*.eml")) if spool.is_dir() else []:
            with open(path, "rb") as f:
                out.append(email.message_from_binary_file(f, policy=email.policy.default))
        return out

    def invitation_email(self, invitation_id, timeout=10.0):
        """The spooled e-mail of invitation invitation_id (waits for its delivery)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [m for m in self.mailbox() if invitation_id in m.get_content()]
            if found:
                assert len(found) == 1, "%d e-mails for %s" % (len(found), invitation_id)
                return found[0]
            if time.monotonic() > deadline:
                raise AssertionError("no e-mail for %s in %s within %.0f s" %
                                     (invitation_id, self.data_dir / "mail", timeout))
            time.sleep(0.05)

    def invitation_token(self, invitation_id, timeout=10.0):
        """The one-time token the invitation's e-mail carries."""
        return token_in(self.invitation_email(invitation_id, timeout).get_content())

    def accept_invitation(self, invitation_id, access_token):
        """The signed-in account (access_token) accepts the e-mailed invitation; the
        membership."""
        with self.client(token=access_token) as c:
            r = c.post("/v1/accounts/invitations/accept",
                       json={"invitation_token": self.invitation_token(invitation_id)})
        assert r.status == 201, "accepting %s failed: %r" % (invitation_id, r)
        return r.json()

    def join(self, inviter, email, role, access_token):
        """An existing account joins a workspace the only way there is: inviter (a client of
        one of its admins) invites email, the account (signed in: access_token) accepts the
        e-mailed token. The membership."""
        r = inviter.post("/v1/admin/users/invite", json={"email": email, "role": role})
        assert r.status == 201, "inviting %s failed: %r" % (email, r)
        return self.accept_invitation(r.json()["id"], access_token)

    # ---- operator subcommands -----------------------------------------------------------
    def admin(self, *args, check=True, **env):
        """Runs `treasury-server --data-dir D admin ARGS...` with this server's environment."""
        r = run_cli(["--data-dir", self.data_dir] + self.database_args() + ["admin"] + list(args),
                    env=self.env(**env))
        if check:
            assert r.returncode == 0, "admin %s failed (%d): %s%s" % (
                " ".join(map(str, args)), r.returncode, r.stdout, r.stderr)
        return r

    def create_workspace(self, name, owner_email, password=ADMIN_PASSWORD):
        """The new workspace's id. An owner_email that already has an account is only invited
        (see owner_invitation)."""
        r = self.admin("create-workspace", "--name", name, "--owner-email", owner_email,
                       TREASURY_ADMIN_PASSWORD=password)
        m = re.search(r"\bwsp_[0-9a-z]{26}\b", r.stdout)
        assert m, "no workspace id in create-workspace output: %r" % r.stdout
        inv = re.search(r"\binv_[0-9a-z]{26}\b", r.stdout)
        self.owner_invitation = inv.group(0) if inv else None
        return m.group(0)

    def create_user(self, workspace_id, email, role, password=USER_PASSWORD):
        return self.admin("create-user", "--workspace", workspace_id, "--email", email,
                          "--role", role, TREASURY_USER_PASSWORD=password)

    def new_workspace(self, name=None):
        """A fresh workspace with its own owner; returns (workspace_id, owner token, client)."""
        tag = uuid.uuid4().hex[:10]
        email = "owner-%s@example.com" % tag
        wid = self.create_workspace(name or "ws-" + tag, email, password=USER_PASSWORD)
        tok = self.login(email, USER_PASSWORD, workspace_id=wid)
        assert tok["workspace_id"] == wid
        return wid, tok["access_token"], self.client(token=tok["access_token"])


class Servers:
    """Starts servers and, at close, stops every one still running, requiring exit 0."""

    def __init__(self, tmp_path_factory):
        self.tmp = tmp_path_factory
        self.started = []

    def __call__(self, **kw):
        require_binary()
        s = Server(self.tmp.mktemp("srv"), **kw)
        self.started.append(s)
        return s.start()

    def close(self):
        problems = []
        for s in self.started:
            try:
                if s.running:
                    rc = s.stop()
                    if rc != 0:
                        problems.append("server on %d exited with %r on SIGTERM; stderr tail:\n%s"
                                        % (s.https_port, rc, s.log_text()[-2000:]))
            except AssertionError as e:
                problems.append(str(e))
            marks = s.sanitizer_report()
            if marks:
                problems.append("sanitizer report in %s: %s\n%s" %
                                (s.log_path, marks, s.log_text()[-4000:]))
        if ENGINE == "postgresql":  # every server of this set stopped: their databases go
            for s in self.started:
                if not s.running:
                    drop_database_of(s.data_dir)
        self.started = []
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def pytest_terminal_summary(terminalreporter):
    """The suites by kind (test_by_kind_*.py) say how many operations each covered and which it
    skipped, and why (tests/run-all.sh shows these lines in `make test`)."""
    lines = tally_lines()
    if lines:
        terminalreporter.section("operations covered by the suites by kind")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def server_bin():
    return require_binary()


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """One server per test module, shared by its tests."""
    servers = Servers(tmp_path_factory)
    s = servers()
    yield s
    servers.close()


@pytest.fixture
def make_server(tmp_path_factory, server_bin):
    """Factory: make_server(**Server kwargs) starts a server (wait=False: just build it)."""
    servers = Servers(tmp_path_factory)

    def make(wait=True, **kw):
        s = Server(tmp_path_factory.mktemp("srv"), **kw)
        servers.started.append(s)
        if wait:
            s.start()
        return s

    yield make
    servers.close()
