"""A throwaway PostgreSQL cluster for the tests: initdb in a fresh temporary directory, started
with pg_ctl on a Unix socket only (no TCP port, so nothing else on the machine can reach it and
no port can clash), stopped and deleted at the end.

The HTTP tests start one per pytest session when TREASURY_TEST_ENGINE=postgresql
(tests/http/conftest.py) and give each server a fresh database in it. Run as a script it starts
one and waits, printing a URL, for trying the server on PostgreSQL by hand:

    /usr/bin/python3 tests/pg/cluster.py          # Ctrl-C stops and deletes it

Why it is set up the way it is:
- initdb and postgres refuse to run as root (a superuser-owned server could be made to run
  arbitrary code as root). Run as root (CI, a developer's container) the cluster's processes run
  as `nobody`, the unprivileged user every Debian system has, in a directory handed to it; run
  as anyone else they run as that user.
- The cluster's superuser is named after the user running the tests, so libpq's default user
  name is right and a URL needs only the database and the socket directory.
- --auth=trust on the local socket only: the socket's directory is the only way in.
- fsync=on and synchronous_commit=on, as in production: the durability tests kill servers and
  check that every acknowledged write is there.
- max_connections: a server opens one connection per thread that touches the database, on that
  thread's first use: its request threads (2 in the tests), its offload threads (32 on
  PostgreSQL, where every write runs on them), one per background job, the housekeeping thread
  and the main thread: about 40 at most. A test may run several servers at once (the scale-out
  test three, a restart test an old and a new one), and the tests' own looks add a few:
  MAX_CONNECTIONS leaves room for some twenty servers.
- The locale is C and the encoding UTF8: the server refuses a database whose collation is not
  bytewise (it orders pages by ids and timestamps compared as bytes), and every database the
  tests create is made from template0 with C collation, whatever the machine's locale is."""

import atexit
import getpass
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

START_TIMEOUT = 30  # seconds for pg_ctl start -w; a cluster that is not up by then is broken
MAX_CONNECTIONS = 1000
UNPRIVILEGED_USER = "nobody"


def bin_dir():
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and pg_ctl (Debian's layout:
    the server binaries are not on PATH)."""
    found = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        m = re.search(r"/postgresql/(\d+)(?:\.\d+)?/bin$", d)
        if m and all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl")):
            found.append((int(m.group(1)), d))
    if not found:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin: "
                           "install Debian's postgresql package (make test-deps does)")
    return max(found)[1]


class Cluster:
    """One cluster. start() brings it up (idempotent); stop() takes it down and deletes its
    files (idempotent, also run at exit). url(db) is a postgresql:// URL for the server."""

    def __init__(self):
        self.bin = bin_dir()
        self.root = None
        self.started = False
        self.superuser = getpass.getuser()
        if os.geteuid() == 0:
            pw = pwd.getpwnam(UNPRIVILEGED_USER)
            self.run_as = (pw.pw_uid, pw.pw_gid)
        else:
            self.run_as = None
        self._admin = None

    # ---- paths -------------------------------------------------------------------------
    @property
    def data_dir(self):
        return os.path.join(self.root, "data")

    @property
    def socket_dir(self):
        return os.path.join(self.root, "sock")

    @property
    def log_path(self):
        return os.path.join(self.root, "postgresql.log")

    def url(self, dbname):
        return "postgresql:///%s?host=%s" % (dbname, self.socket_dir)

    # ---- processes ---------------------------------------------------------------------
    def _run(self, args, timeout):
        """Runs a server binary as the cluster's user, from the cluster's directory (the user
        may not be allowed into the caller's). Returns the CompletedProcess."""
        kw = {}
        if self.run_as:
            kw = dict(user=self.run_as[0], group=self.run_as[1], extra_groups=[])
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        return subprocess.run([os.path.join(self.bin, args[0])] + list(args[1:]), cwd=self.root,
                              env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, **kw)

    def _log_tail(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def start(self):
        if self.started:
            return self
        self.root = tempfile.mkdtemp(prefix="treasury-pg-")
        atexit.register(self.stop)
        os.mkdir(self.socket_dir, 0o700)
        if self.run_as:
            for d in (self.root, self.socket_dir):
                os.chown(d, *self.run_as)
        r = self._run(["initdb", "-D", self.data_dir, "--username", self.superuser,
                       "--auth=trust", "--locale=C", "--encoding=UTF8", "--no-instructions"],
                      timeout=120)
        if r.returncode != 0:
            raise RuntimeError("initdb failed (%d):\n%s%s" % (r.returncode, r.stdout, r.stderr))
        opts = " ".join([
            "-c listen_addresses=''",
            "-c unix_socket_directories='%s'" % self.socket_dir,
            "-c fsync=on", "-c synchronous_commit=on", "-c full_page_writes=on",
            "-c max_connections=%d" % MAX_CONNECTIONS,
            "-c shared_buffers=32MB",
        ])
        try:
            r = self._run(["pg_ctl", "start", "-D", self.data_dir, "-l", self.log_path, "-w",
                           "-t", str(START_TIMEOUT), "-o", opts], timeout=START_TIMEOUT + 15)
        except subprocess.TimeoutExpired:
            self.started = True  # so that stop() kills what may have started
            self.stop()
            raise RuntimeError("PostgreSQL did not come up within %d s" % START_TIMEOUT)
        self.started = True
        if r.returncode != 0:
            log = self._log_tail()
            self.stop()
            raise RuntimeError("pg_ctl start failed (%d):\n%s%s\n--- server log:\n%s" %
                               (r.returncode, r.stdout, r.stderr, log))
        return self

    def stop(self):
        """Stops the cluster (fast shutdown: open connections are ended) and deletes it."""
        if not self.root:
            return
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:
                pass
            self._admin = None
        if self.started and os.path.isdir(self.data_dir):
            try:
                self._run(["pg_ctl", "stop", "-D", self.data_dir, "-m", "fast", "-w", "-t", "30"],
                          timeout=45)
            except subprocess.TimeoutExpired:
                pass
            self._kill_leftover()
        self.started = False
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def _kill_leftover(self):
        """The postmaster still running after pg_ctl stop (it did not answer): killed, so that
        no server outlives the tests."""
        try:
            with open(os.path.join(self.data_dir, "postmaster.pid")) as f:
                pid = int(f.readline())
        except (OSError, ValueError):
            return
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    # ---- databases ---------------------------------------------------------------------
    def admin(self):
        """An autocommit psycopg2 connection to the `postgres` database."""
        import psycopg2
        if self._admin is None or self._admin.closed:
            self._admin = psycopg2.connect(dbname="postgres", host=self.socket_dir,
                                           user=self.superuser)
            self._admin.autocommit = True
        return self._admin

    def create_database(self, name=None):
        """A new empty database with C collation; returns its name."""
        name = name or "t_" + uuid.uuid4().hex[:16]
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", name), name
        with self.admin().cursor() as cur:
            cur.execute("CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8' "
                        "LC_COLLATE 'C' LC_CTYPE 'C'" % name)
        return name

    def drop_database(self, name):
        """Drops a database, ending any connection still open to it."""
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", name), name
        with self.admin().cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)

    def connect(self, dbname, **kw):
        import psycopg2
        return psycopg2.connect(dbname=dbname, host=self.socket_dir, user=self.superuser, **kw)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped like Ctrl-C: cleaned up
    cluster = Cluster().start()
    name = cluster.create_database("treasury")
    print("PostgreSQL %s running from %s" % (cluster.bin, cluster.root))
    print("  server:  build/treasury-server --database '%s'" % cluster.url(name))
    print("  tests:   TREASURY_TEST_ENGINE=postgresql /usr/bin/python3 -m pytest tests/http")
    print("           (the tests start a cluster of their own)")
    print("  psql:    %s/psql -h %s %s" % (cluster.bin, cluster.socket_dir, name))
    print("Ctrl-C stops and deletes it.")
    sys.stdout.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
