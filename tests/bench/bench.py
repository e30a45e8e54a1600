"""`make bench`: throughput of the release build over HTTPS on loopback, measured with wrk.

Starts build/treasury-server pinned to CPU 0 (taskset) with a fresh data directory and a rate
limit high enough not to interfere, creates its data through the API, then runs wrk pinned to
CPU 1 for a fixed time per scenario. Every scenario runs right after the in-process baseline
`GET /healthz` over the same TLS (interleaved), and is quoted against that adjacent baseline,
so the ratios compare like with like on whatever machine runs this. The whole set runs three
times (this kind of machine varies by 30 % from minute to minute) and the medians are shown.
Per scenario: requests per second, p50/p99 latency, server CPU time per request (from
/proc/<pid>/stat), bytes written to storage per request (/proc/<pid>/io write_bytes: WAL
frames, checkpoints), the CPU split by thread (request threads, group-commit writer, syncer,
checkpointer, offload pool), then the server's peak RSS. One scenario reads while 16 more
connections POST (a second wrk): reads then wait for the durability of what they could have
seen.
The floor runs beside it on the same core, in the same rounds: tests/bench/bare_mhd.c, bare
libmicrohttpd with the server's daemon settings, answering GETs with a constant and POSTs with
one SQLite INSERT of the body (synchronous=FULL: an fsync per request; NORMAL: none). The
server's req/s are then also quoted against it. Never asserts timings; it prints a table.
Then the PostgreSQL rows: the same binary with --database on a throwaway local cluster
(tests/pg/cluster.py), GET one payment, POST (16 and 64 connections) and approve, with the CPU
per request of the server and of PostgreSQL's processes.
The conversions row: POST /v1/conversions/quote (a quote priced from a live rate pushed at
setup), quoted against /healthz like every row.
The ledger rows: POST /v1/ledger/journals (a two-line entry posted at once; quoted also against
POST /v1/payments), and GET /v1/ledger/trial-balance of a workspace of 100 accounts with 10,000
and with 1,000,000 posted lines, seeded through SQL into the server's database (ledger_seed):
the checkpoints make it O(accounts), so the 1M row should be within 1.5x of the 10k one.
The rates row: GET /v1/rates?limit=20, a page of the current live rates of 20 pushed pairs
(the sandbox market off, so that its ticks write nothing beside the scenarios).
Bounded: about four minutes (the baselines run 2 s, the scenarios 3 s).

    BENCH_DURATION=5s BENCH_CONNECTIONS=16 BENCH_ROUNDS=5 make bench
    BENCH_ONLY=POST BENCH_PERF=/tmp/prof make bench   # some scenarios, round 1 under perf
    BENCH_ONLY=ledger,"POST /v1/payments" make bench  # parts of names, comma-separated
    BENCH_PG=0 make bench  # without the PostgreSQL rows (they follow the SQLite ones)
    make bench-idle        # memory per idle keep-alive TLS connection at 1,000 connections
"""

import json
import os
import re
import resource
import shutil
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "http"))

from client import Client  # noqa: E402
from conftest import free_ports  # noqa: E402

BIN = Path(os.environ.get("TREASURY_SERVER_BIN") or REPO / "build" / "treasury-server").resolve()
BARE = REPO / "build" / "bench" / "bare_mhd"
DURATION = os.environ.get("BENCH_DURATION", "3s")
# Baselines (the /healthz run before each scenario, the floor's rows) run shorter: they are
# many, and tens of thousands of requests all the same. Keeps the whole run within 3 minutes.
BASELINE_DURATION = os.environ.get("BENCH_BASELINE_DURATION", "2s")
CONNECTIONS = os.environ.get("BENCH_CONNECTIONS", "16")
PASSWORD = "bench-password-0123456789"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PIN = shutil.which("taskset") and os.cpu_count() and os.cpu_count() >= 2

BENEFICIARY = {
    "name": "ACME GmbH", "account_holder_name": "ACME GmbH",
    "account_identification": {"scheme": "IBAN", "identification": "DE89370400440532013000"},
    "bank": {"bic": "COBADEFFXXX", "country": "DE"}, "currency": "EUR", "country": "DE",
}
PAYMENT = {"amount": 125000, "currency": "EUR", "type": "sepa",
           "originating_account": "acc-operating-eur", "remittance_information": "Invoice 7"}
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
# Pending payments for the approve scenario, each approved once: a third per round, enough for
# 9k approvals/s over 3 s (past its end the script wraps around, and the repeats get 409s: a
# run at 6.3k/s wrapped 56,000).
APPROVALS = 16 * 5000

# Reads while writes run: a read's answer waits until what it could have seen is durable.
GET_WHILE_POSTING = "GET /v1/payments/{id}, POSTs"
# The floor (tests/bench/bare_mhd.c): bare libmicrohttpd with the server's settings. Its POST
# INSERTs the body, one transaction per request: FULL syncs each one, NORMAL none.
BARE_GET = "bare MHD: GET"
BARE_FULL = "bare MHD: POST, FULL -c64"
BARE_NORMAL = "bare MHD: POST, NORMAL -c64"
BARE_ROWS = (BARE_GET, BARE_FULL, BARE_NORMAL)

# The ledger rows. Posting a two-line journal (Cash EUR debit, Capital EUR credit, post: true)
# in the payments' workspace; the trial balance of a workspace of LEDGER_ACCOUNTS accounts
# whose books hold 10,000 and 1,000,000 posted lines, seeded through SQL (ledger_seed).
POST_JOURNAL = "POST /v1/ledger/journals"
POST_PAYMENT = "POST /v1/payments"
TB_10K = "GET /v1/ledger/trial-balance 10k"
TB_1M = "GET /v1/ledger/trial-balance 1M"
GET_RATES = "GET /v1/rates?limit=20"
LEDGER_ACCOUNTS = 100
LEDGER_DAYS = 365

# wrk scripts. A unique X-Request-ID per request (idempotency is then exercised, never replayed).
UNIQUE_ID = r'''
math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1000000))
local counter = 0
local function request_id()
  counter = counter + 1
  local h = string.format("%08x", counter)
  return string.format("%s-0000-4000-8000-%012x", h, (math.random(0, 2^31) * 4096 + counter) % 2^48)
end
'''


def lua_post(path, body):
    path.write_text(UNIQUE_ID + '''
wrk.method = "POST"
wrk.body = %s
wrk.headers["Content-Type"] = "application/json"
request = function()
  wrk.headers["X-Request-ID"] = request_id()
  return wrk.format()
end
''' % json.dumps(json.dumps(body)))
    return path


def lua_approve(path, ids):
    """PUT .../approve on a different pending payment each time (threads: 1)."""
    path.write_text(UNIQUE_ID + '''
local ids = {%s}
local i = 0
wrk.method = "PUT"
request = function()
  i = i + 1
  wrk.headers["X-Request-ID"] = request_id()
  return wrk.format(nil, "/v1/payments/" .. ids[((i - 1) %% #ids) + 1] .. "/approve")
end
''' % ",".join('"%s"' % x for x in ids))
    return path


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


# Threads by role, from their names (prctl in runtime/; libmicrohttpd names its own "MHD-...").
THREAD_ROLES = (("requests", "MHD"), ("writer", "tr-writer"), ("syncer", "tr-syncer"),
                ("checkpoint", "tr-checkpoint"), ("offload", "tr-offload"))


def role_ticks(pid):
    """CPU ticks of the process's threads summed by role (THREAD_ROLES, the rest "other");
    threads that ended are not counted."""
    ticks = dict.fromkeys([role for role, _ in THREAD_ROLES] + ["other"], 0)
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, task)) as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue  # ended meanwhile
        comm, fields = head.split("(", 1)[1], tail.split()
        role = next((r for r, prefix in THREAD_ROLES if comm.startswith(prefix)), "other")
        ticks[role] += int(fields[11]) + int(fields[12])
    return ticks


def disk_bytes(pid):
    """Bytes the server sent to storage (/proc/<pid>/io write_bytes: WAL, checkpoints)."""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def settle(pid, limit_s=15):
    """Waits until the server is idle (under 5 % of a core over 0.2 s), at most limit_s: the
    requests still queued when wrk stops (logins hash for a long time) would otherwise run
    into the next measurement."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = cpu_ticks(pid)
        time.sleep(0.2)
        if (cpu_ticks(pid) - before) / CLK_TCK < 0.01:
            return


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def wrk_args(url, token=None, script=None, connections=None, duration=None):
    args = (["taskset", "-c", "1"] if PIN else []) + [
        "wrk", "-t", "1", "-c", connections or CONNECTIONS, "-d", duration or DURATION,
        "--latency"]
    if token:
        args += ["-H", "Authorization: Bearer " + token]
    if script:
        args += ["-s", str(script)]
    return args + [url]


def wrk(url, token=None, script=None, connections=None, duration=None):
    out = subprocess.run(wrk_args(url, token, script, connections, duration),
                         capture_output=True, text=True, timeout=120).stdout
    return wrk_parse(out)


def wrk_background(url, token, script):
    """wrk started alongside a measurement, for a second longer so that it covers all of it."""
    m = re.fullmatch(r"(\d+)([sm]?)", DURATION)
    seconds = int(m.group(1)) * (60 if m.group(2) == "m" else 1) + 1 if m else None
    return subprocess.Popen(wrk_args(url, token, script, None, seconds and "%ds" % seconds),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def wrk_parse(out):
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rps, total, p50, p99, int(non2xx.group(1)) if non2xx else 0


def start_server(root, extra=(), prefix=(), timeout=20):
    """The server on free ports; prefix runs it under another program (valgrind in
    tests/bench/instructions.py), which starts slower: timeout is the seconds it may take."""
    https_port, http_port = free_ports(2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREASURY_")}
    env.update(TREASURY_ADMIN_PASSWORD=PASSWORD)
    log = open(root / "server.log", "wb")
    args = (["taskset", "-c", "0"] if PIN else []) + list(prefix) + [
        str(BIN), "--data-dir", str(root / "data"), "--https-port", str(https_port),
        "--http-port", str(http_port), "--rate-limit", "100000000", "--auth-rate-limit",
        "100000000", "--log-format", "text"] + list(extra)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + timeout
    while b"listening on https://" not in (root / "server.log").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit("server did not start:\n" + (root / "server.log").read_text())
        time.sleep(0.05)
    return proc, https_port, env, log


def start_bare(root):
    """tests/bench/bare_mhd (the floor: bare libmicrohttpd, same settings) on CPU 0, beside the
    server; None when it was not built (make bench builds it)."""
    if not BARE.exists():
        return None, None
    port = free_ports(1)[0]
    (root / "bare").mkdir()
    data = root / "data"
    proc = subprocess.Popen((["taskset", "-c", "0"] if PIN else []) + [
        str(BARE), str(port), str(data / "tls.crt"), str(data / "tls.key"), str(root / "bare")],
        stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "listening":
        proc.kill()
        sys.exit("bare_mhd did not start")
    return proc, port


def stop_server(proc, log, root):
    proc.send_signal(15)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed"
    log.close()
    if rc != 0:
        print("server exit code %r; log in %s" % (rc, root / "server.log"))
    else:
        shutil.rmtree(root, ignore_errors=True)


def setup(proc, port, env, root, db_args=(), approvals=APPROVALS):
    ca = str(root / "data" / "tls.crt")
    with Client("127.0.0.1", port, cafile=ca) as c:
        tok = c.post("/v1/api/login", json={"email": "admin@example.com",
                                            "password": PASSWORD}).json()["access_token"]
    with Client("127.0.0.1", port, cafile=ca, token=tok) as c:
        ben = c.post("/v1/beneficiaries", json=BENEFICIARY).json()["id"]
        wid = c.get("/v1/workspace").json()["id"]
        c.put("/v1/payments/approval-policy", json={"tiers": [
            {"currency": "EUR", "min_amount": 1000000, "approvals_required": 1}]})
    # Someone else approves the beneficiary and the payments (four eyes).
    subprocess.run([str(BIN), "--data-dir", str(root / "data")] + list(db_args) + [
                    "admin", "create-user",
                    "--workspace", wid, "--email", "approver@example.com", "--role", "approver"],
                   env={**env, "TREASURY_USER_PASSWORD": PASSWORD}, check=True,
                   capture_output=True, timeout=120)
    with Client("127.0.0.1", port, cafile=ca) as c:
        approver = c.post("/v1/api/login", json={"email": "approver@example.com",
                                                 "password": PASSWORD}).json()["access_token"]
    with Client("127.0.0.1", port, cafile=ca, token=approver) as c:
        c.put("/v1/beneficiaries/%s/approve" % ben)
    payment = dict(PAYMENT, beneficiary_id=ben)
    pending = dict(payment, amount=2000000)  # above the tier: waits for an approval
    with Client("127.0.0.1", port, cafile=ca, token=tok) as c:
        pay_id = c.post("/v1/payments", json=payment).json()["id"]
        for _ in range(30):
            c.post("/v1/payments", json=payment)

    def make_pending(n):
        with Client("127.0.0.1", port, cafile=ca, token=tok) as c:
            return [c.post("/v1/payments", json=pending).json()["id"] for _ in range(n)]
    with ThreadPoolExecutor(max_workers=16) as ex:
        singles = [i for part in ex.map(make_pending, [approvals // 16] * 16) for i in part]
    return tok, approver, pay_id, payment, singles


def ledger_seed(db, wid, lines, accounts=LEDGER_ACCOUNTS, days=LEDGER_DAYS):
    """Books of `lines` posted lines in workspace wid, written straight into the SQLite
    database the server runs on (a second connection: WAL lets it write beside the server),
    as the posting engine would have left them: `accounts` EUR accounts, lines/2 posted
    two-line entries spread over `days` days of 2024 (journal_entries with their lines as
    JSON, one ledger_postings row per line), the accounts' posted sums and lock_version, and
    the balance checkpoints (ledger_balance_days: cumulative sums per account per day it
    moved). Entry k debits account k % accounts and credits another. One transaction of
    INSERT ... SELECT over a counter: 1M lines in seconds, where the API would take minutes."""
    tag = os.urandom(8).hex()[:14]  # ids: prefix + 26 of [0-9a-z], unique per workspace
    now = "2024-12-31T12:00:00.000Z"
    entries = lines // 2
    db.execute("PRAGMA synchronous=OFF")  # this connection's commit only: a bench's data
    # the indexes of a million rows built in memory, not through a 2 MiB page cache
    db.execute("PRAGMA cache_size=-524288")
    db.execute("PRAGMA temp_store=MEMORY")
    with db:
        db.execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
            "INSERT INTO ledger_accounts (id, workspace_id, code, name, classification, "
            "normal_balance, currency, currency_exponent, status, version, created_at, "
            "updated_at) SELECT printf('lac_%s%012d', ?, i), ?, printf('%04d', 1000 + i), "
            "printf('Account %d', i), CASE WHEN i % 2 = 0 THEN 'asset' ELSE 'liability' END, "
            "CASE WHEN i % 2 = 0 THEN 'debit' ELSE 'credit' END, 'EUR', 2, 'active', 1, ?, ? "
            "FROM n", (accounts, tag, wid, now, now))
        # entry k: debit account k % A, credit (k + 1 + (k / A) % (A - 1)) % A (never the
        # same), amount 100 + k % 1000, dated 2024-01-01 + k % days
        db.execute(
            "CREATE TEMP TABLE seed AS WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL "
            "SELECT k + 1 FROM n WHERE k + 1 < ?1) SELECT k, "
            "printf('jrn_%s%012d', ?2, k) AS id, "
            "printf('lac_%s%012d', ?2, k % ?3) AS dr, "
            "printf('lac_%s%012d', ?2, (k + 1 + (k / ?3) % (?3 - 1)) % ?3) AS cr, "
            "100 + k % 1000 AS amount, date('2024-01-01', printf('+%d days', k % ?4)) AS day "
            "FROM n", (entries, tag, accounts, days))
        db.execute(
            "INSERT INTO journal_entries (id, workspace_id, description, effective_date, status, "
            "lines, source, created_by, posted_at, posted_by, draft_version, version, "
            "created_at, updated_at) SELECT id, ?1, 'Bench entry', day, 'posted', "
            "printf('[{\"ledger_account_id\":\"%s\",\"direction\":\"debit\",\"amount\":%d,"
            "\"currency\":\"EUR\"},{\"ledger_account_id\":\"%s\",\"direction\":\"credit\","
            "\"amount\":%d,\"currency\":\"EUR\"}]', dr, amount, cr, amount), 'manual', "
            "'usr_00000000000000000000000000', ?2, 'usr_00000000000000000000000000', 0, 1, "
            "?2, ?2 FROM seed", (wid, now))
        db.execute(
            "INSERT INTO ledger_postings (journal_entry_id, line, workspace_id, "
            "ledger_account_id, direction, amount, currency, effective_date, posted_at) "
            "SELECT id, 0, ?1, dr, 'debit', amount, 'EUR', day, ?2 FROM seed UNION ALL "
            "SELECT id, 1, ?1, cr, 'credit', amount, 'EUR', day, ?2 FROM seed "
            "ORDER BY 1, 2", (wid, now))  # in primary-key order
        # each account's moves per day, summed once for the checkpoints and the accounts
        db.execute(
            "CREATE TEMP TABLE moves AS SELECT acc, day, SUM(d) AS d, SUM(c) AS c, "
            "COUNT(*) AS n FROM (SELECT dr AS acc, day, amount AS d, 0 AS c FROM seed "
            "UNION ALL SELECT cr, day, 0, amount FROM seed) GROUP BY acc, day", ())
        db.execute(
            "INSERT INTO ledger_balance_days (ledger_account_id, day, workspace_id, "
            "posted_debits, posted_credits) SELECT acc, day, ?1, "
            "SUM(d) OVER (PARTITION BY acc ORDER BY day), "
            "SUM(c) OVER (PARTITION BY acc ORDER BY day) FROM moves ORDER BY acc, day", (wid,))
        db.execute(
            "UPDATE ledger_accounts SET posted_debits = s.d, posted_credits = s.c, "
            "lock_version = s.n FROM (SELECT acc, SUM(d) AS d, SUM(c) AS c, SUM(n) AS n "
            "FROM moves GROUP BY acc) AS s WHERE ledger_accounts.id = s.acc", ())
        db.execute("DROP TABLE moves")
        db.execute("DROP TABLE seed")


def rates_setup(port, root, tok):
    """The rates row's data: the current live rates of 20 pairs pushed in the payments'
    workspace (the sandbox market is off: its ticks would write beside every scenario)."""
    codes = ["EUR", "GBP", "USD", "JPY", "CHF"]
    pairs = [a + b for a in codes for b in codes if a != b]
    now = time.time()
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 5))
    rates = [{"pair": p, "bid": "1.0841500000", "ask": "1.0843500000", "as_of": at,
              "source": "provider:bench"} for p in pairs]
    with Client("127.0.0.1", port, cafile=str(root / "data" / "tls.crt"), token=tok) as c:
        r = c.post("/v1/rates", json={"rates": rates})
        if r.status != 200:
            print("POST /v1/rates answered %d: the rates row lists nothing" % r.status)


def ledger_setup(proc, port, env, root, tok):
    """The ledger's scenarios' data: two accounts in the payments' workspace for the journal
    posting row (through the API: until POST /v1/ledger/accounts is built they are made up
    ids, and the row answers 501s), and two workspaces of LEDGER_ACCOUNTS accounts seeded with
    10k and 1M posted lines (ledger_seed). Returns (journal body, {row: owner token})."""
    ca = str(root / "data" / "tls.crt")
    ids = []
    with Client("127.0.0.1", port, cafile=ca, token=tok) as c:
        for code, name, cls in (("1010", "Bench cash EUR", "asset"),
                                ("3010", "Bench capital EUR", "equity")):
            r = c.post("/v1/ledger/accounts", json={"code": code, "name": name,
                                                    "classification": cls, "currency": "EUR"})
            ids.append(r.json()["id"] if r.status == 201 else
                       "lac_0000000000000000000000000%d" % len(ids))
            if r.status != 201:
                print("POST /v1/ledger/accounts answered %d: the journal row will fail" % r.status)
    journal = {"description": "Bench journal", "effective_date": time.strftime("%Y-%m-%d",
                                                                                time.gmtime()),
               "post": True, "lines": [
                   {"ledger_account_id": ids[0], "direction": "debit", "amount": 1250,
                    "currency": "EUR"},
                   {"ledger_account_id": ids[1], "direction": "credit", "amount": 1250,
                    "currency": "EUR"}]}
    tokens = {}
    db = sqlite3.connect(str(root / "data" / "treasury.db"), timeout=60)
    try:
        for name, lines in ((TB_10K, 10000), (TB_1M, 1000000)):
            email = "ledger-%d@example.com" % lines
            out = subprocess.run(
                [str(BIN), "--data-dir", str(root / "data"), "admin", "create-workspace",
                 "--name", "Ledger %d" % lines, "--owner-email", email],
                env={**env, "TREASURY_ADMIN_PASSWORD": PASSWORD}, check=True,
                capture_output=True, text=True, timeout=120).stdout
            wid = re.search(r"\bwsp_[0-9a-z]{26}\b", out).group(0)
            t = time.monotonic()
            ledger_seed(db, wid, lines)
            print("seeded %d posted lines in %.1f s" % (lines, time.monotonic() - t))
            with Client("127.0.0.1", port, cafile=ca) as c:
                tokens[name] = c.post("/v1/api/login", json={
                    "email": email, "password": PASSWORD,
                    "workspace_id": wid}).json()["access_token"]
    finally:
        db.close()
    return journal, tokens


# The conversions row: a quote priced from a live rate pushed at setup (the market is off).
POST_QUOTE = "POST /v1/conversions/quote"


def conversions_setup(port, root, tok):
    """A live EURUSD rate in the payments' workspace (through the API), and the quote body."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    with Client("127.0.0.1", port, cafile=str(root / "data" / "tls.crt"), token=tok) as c:
        r = c.post("/v1/rates", json={"rates": [{"pair": "EURUSD", "bid": "1.0841500000",
                                                 "ask": "1.0843500000", "as_of": now,
                                                 "source": "manual"}]})
        if r.status != 200:
            print("POST /v1/rates answered %d: the quote row will fail" % r.status)
    return {"sell_currency": "EUR", "buy_currency": "USD", "fixed_side": "sell",
            "sell_amount": 100000}


def selected(only, name):
    """BENCH_ONLY: comma-separated parts of the scenarios' names to run (all when unset)."""
    return not only or any(part and part in name for part in only.split(","))


def print_ledger(results):
    """The journal posting row against the payment POST (same connections, same round), and
    the trial balance on 1M posted lines against 10k (the checkpoints keep it O(accounts):
    the target is within 1.5x); medians of the rounds' ratios."""
    lines = []
    if results.get(POST_JOURNAL) and results.get(POST_PAYMENT):
        ratio = median(j[0] / p[0] for j, p in zip(results[POST_JOURNAL], results[POST_PAYMENT]))
        bad = sum(j[6] for j in results[POST_JOURNAL])
        lines.append("  %-30s %5.2fx the req/s of %s%s" % (
            POST_JOURNAL, ratio, POST_PAYMENT,
            " (%d non-2xx: is journal posting built?)" % bad if bad else ""))
    if results.get(TB_10K) and results.get(TB_1M):
        ratio = median(a[0] / b[0] for a, b in zip(results[TB_10K], results[TB_1M]))
        lines.append("  %-30s %5.2fx slower than on 10k lines (target <= 1.5x)" % (TB_1M, ratio))
    if lines:
        print("ledger:")
        print("\n".join(lines))


def print_roles(roles):
    """Where each scenario's CPU went: us per request by thread role, medians."""
    names = [role for role, _ in THREAD_ROLES] + ["other"]
    print("CPU us per request by thread (requests: libmicrohttpd's threads, which run the reads):")
    print("%-30s" % "" + "".join("%11s" % n for n in names))
    for name, rows in roles.items():
        if rows:
            print("%-30s" % name + "".join("%11.1f" % median(r[n] for r in rows) for n in names))


def print_against_bare(results):
    """The server's req/s over the floor's (bare libmicrohttpd, same settings), each round's
    pair measured seconds apart (the floor's row runs right after the scenario); medians."""
    pairs = [("GET /healthz", "GET /v1/payments/{id}", 1, BARE_GET),
             ("GET /v1/payments/{id}", "GET /v1/payments/{id}", 0, BARE_GET),
             ("POST /v1/payments -c64", "POST /v1/payments -c64", 0, BARE_FULL),
             ("POST /v1/payments -c64", "POST /v1/payments -c64", 0, BARE_NORMAL)]
    lines = []
    for label, ours, col, floor in pairs:
        if results.get(ours) and results.get(floor):
            ratio = median(o[col] / f[0] for o, f in zip(results[ours], results[floor]))
            lines.append("  %-24s %5.2fx the req/s of %s" % (label, ratio, floor))
    if lines:
        print("against bare libmicrohttpd (tests/bench/bare_mhd.c: no routing, auth, JSON or "
              "log; POST is one INSERT of the body):")
        print("\n".join(lines))


def main():
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: make test-deps")
    root = Path(tempfile.mkdtemp(prefix="treasury-bench-"))
    # The settlement worker would move bench payments along; an hour between looks keeps the
    # figures about the requests.
    t0 = time.monotonic()
    proc, port, env, log = start_server(root, ["--settlement-interval-ms", "3600000",
                                               "--fx-market-interval-ms", "0"])
    bare = None
    try:
        bare, bare_port = start_bare(root)
        if not bare:
            print("no floor rows: %s is not built (make bench builds it)" % BARE)
        tok, approver, pay_id, payment, singles = setup(proc, port, env, root)
        journal, tb_tokens = ledger_setup(proc, port, env, root, tok)
        rates_setup(port, root, tok)
        quote = conversions_setup(port, root, tok)
        # Setup wrote tens of thousands of rows: let the WAL be copied back now rather than
        # under the first scenarios (the server has one core; its checkpointer shares it).
        db = sqlite3.connect(str(root / "data" / "treasury.db"), timeout=60)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        base = "https://127.0.0.1:%d" % port
        slices = [singles[i::ROUNDS] for i in range(ROUNDS)]  # approvals: new ids each round
        # (name, URL, token, wrk script per round, connections); BARE_ rows go to bare_mhd.
        scenarios = [
            ("GET /v1/payments/{id}", base + "/v1/payments/" + pay_id, tok, None, None),
            ("GET /v1/payments/{id} -c64", base + "/v1/payments/" + pay_id, tok, None, "64"),
            ("GET /v1/payments?limit=20", base + "/v1/payments?limit=20", tok, None, None),
            (GET_WHILE_POSTING, base + "/v1/payments/" + pay_id, tok, None, None),
            ("POST /v1/payments", base + "/v1/payments", tok,
             [lua_post(root / "payment.lua", payment)] * ROUNDS, None),
            ("POST /v1/payments -c64", base + "/v1/payments", tok,
             [lua_post(root / "payment64.lua", payment)] * ROUNDS, "64"),
            ("PUT /v1/payments/{id}/approve", base + "/v1/payments", approver,
             [lua_approve(root / ("approve%d.lua" % i), ids) for i, ids in enumerate(slices)],
             None),
            (POST_JOURNAL, base + "/v1/ledger/journals", tok,
             [lua_post(root / "journal.lua", journal)] * ROUNDS, None),
            (POST_QUOTE, base + "/v1/conversions/quote", tok,
             [lua_post(root / "quote.lua", quote)] * ROUNDS, None),
            (TB_10K, base + "/v1/ledger/trial-balance", tb_tokens[TB_10K], None, None),
            (TB_1M, base + "/v1/ledger/trial-balance", tb_tokens[TB_1M], None, None),
            (GET_RATES, base + "/v1/rates?limit=20", tok, None, None),
            ("POST /v1/api/login (scrypt)", base + "/v1/api/login", None,
             [lua_post(root / "login.lua", {"email": "admin@example.com",
                                            "password": PASSWORD})] * ROUNDS, None),
        ]
        if bare:  # each right after the scenario it is the floor of, and its /healthz
            bare_base = "https://127.0.0.1:%d" % bare_port
            bare_post = [lua_post(root / "bare.lua", payment)] * ROUNDS
            def after(name, rows):
                i = [n for n, *_ in scenarios].index(name) + 1
                scenarios[i:i] = rows
            after("GET /v1/payments/{id}", [(BARE_GET, bare_base + "/", None, None, None)])
            after("POST /v1/payments -c64",
                  [(BARE_FULL, bare_base + "/full", None, bare_post, "64"),
                   (BARE_NORMAL, bare_base + "/normal", None, bare_post, "64")])
        # The writes that GET_WHILE_POSTING's reads run beside, on as many connections.
        background = {GET_WHILE_POSTING: (base + "/v1/payments", tok,
                                          lua_post(root / "payment_bg.lua", payment))}
        background_rps = {name: [] for name in background}
        only = os.environ.get("BENCH_ONLY")
        perf_dir = os.environ.get("BENCH_PERF")
        scenarios = [sc for sc in scenarios if selected(only, sc[0])]
        print("wrk -t1 -c%s -d%s, %d interleaved rounds (medians shown), server %s on CPU 0, "
              "wrk on CPU 1%s" % (CONNECTIONS, DURATION, ROUNDS, BIN,
                                  "" if PIN else " (not pinned: one CPU)"))
        results = {name: [] for name, *_ in scenarios}
        roles = {name: [] for name, *_ in scenarios}  # CPU us per request by thread role
        for rnd in range(ROUNDS):
            hz = None
            for i, (name, url, token, scripts, conns) in enumerate(scenarios):
                settle(proc.pid)
                # The floor's rows share the /healthz run of the scenario just before them.
                if name not in BARE_ROWS:
                    hz = wrk(base + "/healthz", connections=conns, duration=BASELINE_DURATION)
                target = bare if name in BARE_ROWS else proc
                perf = None
                if perf_dir and rnd == 0:
                    os.makedirs(perf_dir, exist_ok=True)
                    args = os.environ.get("BENCH_PERF_ARGS", "-g").split()
                    perf = subprocess.Popen(
                        ["perf", "record", "-q"] + args +
                        ["-p", str(target.pid), "-o", os.path.join(perf_dir, "%d.data" % i)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                before, disk_before = cpu_ticks(target.pid), disk_bytes(target.pid)
                roles_before = role_ticks(target.pid)
                writer = wrk_background(*background[name]) if name in background else None
                if writer:
                    time.sleep(0.5)  # the writes are under way before the reads start
                rps, total, p50, p99, non2xx = wrk(
                    url, token, scripts[rnd] if scripts else None, conns,
                    BASELINE_DURATION if name in BARE_ROWS else None)
                if writer:
                    # CPU and disk below are then per request of either kind.
                    w_rps, w_total, _, _, w_non2xx = wrk_parse(writer.communicate(timeout=120)[0])
                    background_rps[name].append(w_rps)
                    total += w_total
                    non2xx += w_non2xx
                if perf:
                    perf.send_signal(2)
                    perf.wait(timeout=60)
                cpu_us = (cpu_ticks(target.pid) - before) * 1e6 / CLK_TCK / max(total, 1)
                roles[name].append({role: (t - roles_before[role]) * 1e6 / CLK_TCK / max(total, 1)
                                    for role, t in role_ticks(target.pid).items()})
                disk_kib = (disk_bytes(target.pid) - disk_before) / 1024.0 / max(total, 1)
                results[name].append((rps, hz[0] if hz else None, rps / hz[0] if hz else None,
                                      p50, p99, cpu_us, non2xx, disk_kib))
        print("%-30s %9s %9s %7s %9s %9s %9s %8s %7s" % (
            "scenario", "req/s", "healthz", "ratio", "p50", "p99", "CPU us/rq", "disk KiB",
            "non-2xx"))
        for name, rows in results.items():
            if any(r[1] is None for r in rows):  # a floor's row run without its scenario
                mid = sorted(rows, key=lambda row: row[0])[len(rows) // 2]  # median req/s round
                print("%-30s %9.0f %9s %7s %9s %9s %9.1f %8.1f %7d" % (
                    name, median(r[0] for r in rows), "-", "-", mid[3], mid[4],
                    median(r[5] for r in rows), median(r[7] for r in rows),
                    sum(r[6] for r in rows)))
                continue
            mid = sorted(rows, key=lambda row: row[2])[len(rows) // 2]  # the median-ratio round
            print("%-30s %9.0f %9.0f %6.2fx %9s %9s %9.1f %8.1f %7d" % (
                name, median(r[0] for r in rows), median(r[1] for r in rows),
                median(r[2] for r in rows), mid[3], mid[4], median(r[5] for r in rows),
                median(r[7] for r in rows), sum(r[6] for r in rows)))
        print_roles(roles)
        print_against_bare(results)
        print_ledger(results)
        for name, rows in background_rps.items():
            if rows:
                print("%s: the POSTs beside the reads ran at %.0f req/s (%s connections); CPU "
                      "and disk are per request of either kind"
                      % (name, median(rows), CONNECTIONS))
        print("server peak RSS (VmHWM): %d MiB" % (status_kib(proc.pid, "VmHWM") // 1024))
        print("ratio: the scenario's req/s over GET /healthz's in the run just before it (the "
              "floor's rows: before the scenario they follow); p50/p99 from the median-ratio "
              "round; %.0f s in all" % (time.monotonic() - t0))
    finally:
        if bare:
            bare.kill()
            bare.wait()
        stop_server(proc, log, root)
    if os.environ.get("BENCH_PG", "1") != "0":
        postgresql_rows()


def pg_ticks(postmaster):
    """CPU ticks of a PostgreSQL cluster: the postmaster and its children (the backends of the
    server's connections, which stay open, the WAL writer, the checkpointer)."""
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == postmaster or int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total


def settle_pg(postmaster, limit_s=15):
    """Waits until the cluster's processes are idle (autovacuum, checkpoints), at most limit_s."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = pg_ticks(postmaster)
        time.sleep(0.3)
        if pg_ticks(postmaster) - before <= 2:
            return


# The PostgreSQL rows: the same binary with --database on a throwaway cluster on this machine
# (tests/pg/cluster.py: fsync and synchronous_commit on), its processes not pinned. Fewer
# pending payments: approvals run slower there.
PG_APPROVALS = 16 * 1500


def postgresql_rows():
    """GET one payment, POST and approve on the PostgreSQL engine, each quoted against the
    /healthz run just before it, ROUNDS interleaved rounds, medians; CPU per request of the
    server and of PostgreSQL's processes."""
    sys.path.insert(0, str(REPO / "tests" / "pg"))
    from cluster import Cluster
    try:
        cluster = Cluster().start()
    except (RuntimeError, OSError) as e:
        print("no PostgreSQL rows: cannot start a cluster (%s)" % e)
        return
    root = Path(tempfile.mkdtemp(prefix="treasury-bench-pg-"))
    proc = log = None
    try:
        dbname = cluster.create_database()
        db_args = ["--database", cluster.url(dbname)]
        proc, port, env, log = start_server(
            root, ["--settlement-interval-ms", "3600000"] + db_args)
        with open(os.path.join(cluster.data_dir, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        tok, approver, pay_id, payment, singles = setup(proc, port, env, root, db_args,
                                                        PG_APPROVALS)
        # Setup wrote tens of thousands of rows: their autovacuum and analyze run now, not in
        # the measurements (whose CPU would count them).
        conn = cluster.connect(dbname)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
        conn.close()
        base = "https://127.0.0.1:%d" % port
        slices = [singles[i::ROUNDS] for i in range(ROUNDS)]
        scenarios = [
            ("PG: GET /v1/payments/{id}", base + "/v1/payments/" + pay_id, tok, None, None),
            ("PG: POST /v1/payments", base + "/v1/payments", tok,
             [lua_post(root / "payment.lua", payment)] * ROUNDS, None),
            ("PG: POST /v1/payments -c64", base + "/v1/payments", tok,
             [lua_post(root / "payment64.lua", payment)] * ROUNDS, "64"),
            ("PG: PUT /v1/payments/{id}/approve", base + "/v1/payments", approver,
             [lua_approve(root / ("approve%d.lua" % i), ids) for i, ids in enumerate(slices)],
             None),
        ]
        only = os.environ.get("BENCH_ONLY")
        scenarios = [sc for sc in scenarios if selected(only, sc[0])]
        results = {name: [] for name, *_ in scenarios}
        for rnd in range(ROUNDS):
            for name, url, token, scripts, conns in scenarios:
                settle(proc.pid)
                settle_pg(postmaster)
                hz = wrk(base + "/healthz", connections=conns, duration=BASELINE_DURATION)
                before, pg_before = cpu_ticks(proc.pid), pg_ticks(postmaster)
                rps, total, p50, p99, non2xx = wrk(url, token, scripts[rnd] if scripts else None,
                                                   conns)
                n = max(total, 1)
                cpu_us = (cpu_ticks(proc.pid) - before) * 1e6 / CLK_TCK / n
                pg_us = (pg_ticks(postmaster) - pg_before) * 1e6 / CLK_TCK / n
                results[name].append((rps, hz[0], rps / hz[0], p50, p99, cpu_us, pg_us, non2xx))
        print()
        print("PostgreSQL engine (same binary, --database on a local cluster, not pinned):")
        print("%-34s %9s %9s %7s %9s %9s %9s %9s %7s" % (
            "scenario", "req/s", "healthz", "ratio", "p50", "p99", "CPU us/rq", "PG us/rq",
            "non-2xx"))
        for name, rows in results.items():
            mid = sorted(rows, key=lambda row: row[2])[len(rows) // 2]
            print("%-34s %9.0f %9.0f %6.2fx %9s %9s %9.1f %9.1f %7d" % (
                name, median(r[0] for r in rows), median(r[1] for r in rows),
                median(r[2] for r in rows), mid[3], mid[4], median(r[5] for r in rows),
                median(r[6] for r in rows), sum(r[7] for r in rows)))
    finally:
        if proc:
            stop_server(proc, log, root)
        cluster.stop()


def idle():
    """Memory per idle keep-alive TLS connection at 1,000 connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    root = Path(tempfile.mkdtemp(prefix="treasury-bench-idle-"))
    proc, port, env, log = start_server(root, ["--max-connections", "2000",
                                               "--max-connections-per-address", "2000"])
    socks = []
    try:
        ctx = ssl.create_default_context(cafile=str(root / "data" / "tls.crt"))
        with Client("127.0.0.1", port, cafile=str(root / "data" / "tls.crt")) as c:
            c.get("/healthz")
        time.sleep(0.5)
        before = status_kib(proc.pid, "VmRSS")
        for _ in range(1000):
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.recv(4096)
            socks.append(s)
        time.sleep(0.5)
        after = status_kib(proc.pid, "VmRSS")
        print("1000 idle keep-alive TLS connections: RSS %d -> %d KiB, %.1f KiB each" % (
            before, after, (after - before) / 1000.0))
    finally:
        for s in socks:
            s.close()
        stop_server(proc, log, root)


if __name__ == "__main__":
    idle() if sys.argv[1:] == ["idle"] else main()
