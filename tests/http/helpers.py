"""Shared checks and builders for the HTTP tests: RFC 9457 problem checks, rate-limit header
checks, beneficiary bodies, JWT forging with the data-dir signing key, and a look into the live
database (open_db: SQLite's file or the server's PostgreSQL database, whichever it runs on)."""

import base64
import contextlib
import json
import re
import sqlite3
import time
import uuid
from pathlib import Path

import jwt  # PyJWT, Debian's python3-jwt

BEN_ID = re.compile(r"^ben_[0-9a-z]{26}$")
WSP_ID = re.compile(r"^wsp_[0-9a-z]{26}$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ETAG = re.compile(r'^"v([1-9][0-9]*)"$')
INTEGER = re.compile(r"^-?[0-9]+$")

# The spec (common.yaml BadRequest; listBeneficiaries documents 400 but no 422) answers an
# invalid query parameter with 400 `invalid_request` carrying errors[] with /query/<name>.
QUERY_PARAM_STATUS = 400
QUERY_PARAM_CODE = "invalid_request"

# Text that must never reach a client: internals, SQL, stack traces, source locations.
LEAK_PATTERNS = [re.compile(p, re.I) for p in (
    r"sqlite", r"\.c:\d+", r"traceback", r"stack trace", r"\bselect\b.+\bfrom\b",
    r"insert into", r"segmentation", r"/tmp/", r"/work/", r"/home/",
    # a C assert's message; not the ledger's declared title "Balance assertion failed"
    r"(?<!balance )assert(ion)? fail",
)]

UNKNOWN_BEN = "ben_" + "0" * 26


class PgCursor:
    """A psycopg2 cursor answering like sqlite3's: rows as tuples, bytea as bytes."""

    def __init__(self, cur):
        self.cur = cur

    @staticmethod
    def _row(row):
        if row is None:
            return None
        return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)

    def fetchone(self):
        return self._row(self.cur.fetchone()) if self.cur.description else None

    def fetchall(self):
        return [self._row(r) for r in self.cur.fetchall()] if self.cur.description else []

    def __iter__(self):
        return iter(self.fetchall())

    @property
    def rowcount(self):
        return self.cur.rowcount


class PgDb:
    """A connection to a server's PostgreSQL database with the part of sqlite3's interface the
    tests use: execute(sql, params) with `?` placeholders, commit(), close(), `with db:`. Each
    statement commits on its own (autocommit): a test's look never holds a snapshot or a lock
    while the server works."""

    def __init__(self, server):
        from conftest import pg_cluster
        self.conn = pg_cluster().connect(server.database)
        self.conn.autocommit = True

    def execute(self, sql, params=()):
        cur = self.conn.cursor()
        if params:
            cur.execute(sql.replace("%", "%%").replace("?", "%s"), tuple(params))
        else:
            cur.execute(sql)
        return PgCursor(cur)

    def commit(self):
        pass

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def open_db(server, timeout=10, readonly=False):
    """A connection to the server's live database: sqlite3's on its file (read-only if asked),
    or, on PostgreSQL, a PgDb to its database. SQL in the portable subset works on both."""
    from conftest import ENGINE
    if ENGINE == "postgresql":
        return PgDb(server)
    path = server.data_dir / "treasury.db"
    if readonly:
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=timeout)
    return sqlite3.connect(str(path), timeout=timeout)


REPO = Path(__file__).resolve().parents[2]
MIGRATION = re.compile(r"^\d{4}_[a-z0-9_]+?(?:\.(sqlite|pg))?\.sql$")
CREATE_TABLE = re.compile(r"^\s*CREATE TABLE (?:IF NOT EXISTS )?([A-Za-z_][A-Za-z0-9_]*)",
                          re.M | re.I)


def migration_tables(engine=None):
    """Every table the schema holds, read from the migrations the server runs on engine (the
    runtime's, runtime/sql/, then each API's, handlers/sql/<api>/ in handlers/sql/ORDER's
    order: codegen/embed_sql.py's rules), so a new table is checked without a test change."""
    from conftest import ENGINE
    dialect = {"sqlite": "sqlite", "postgresql": "pg"}[engine or ENGINE]
    order = [line.strip() for line in (REPO / "handlers" / "sql" / "ORDER").read_text()
             .splitlines() if line.strip() and not line.startswith("#")]
    folders = [REPO / "runtime" / "sql"] + [REPO / "handlers" / "sql" / api for api in order]
    tables = []
    for folder in folders:
        for path in sorted(folder.iterdir()):
            m = MIGRATION.match(path.name)
            if m and m.group(1) in (None, dialect):
                tables += [t.lower() for t in CREATE_TABLE.findall(path.read_text())]
    assert tables, "no CREATE TABLE in the migrations"
    return tables


# Tables that change whatever a request does: the rate limiter's shared buckets, which it
# writes on its own schedule (runtime/ratelimit.c leases), counting refused requests too.
BOOKKEEPING_TABLES = ("ratelimit_state",)


def table_counts(server, exclude=BOOKKEEPING_TABLES):
    """{table: row count} of every table of the schema (migration_tables) but exclude: what
    "changes nothing" compares before and after a refused request."""
    db = open_db(server, readonly=True)
    with contextlib.closing(db):
        return {t: db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
                for t in migration_tables() if t not in exclude}


def fail_trigger(db, name, table, when=None, event="INSERT", message="injected failure"):
    """Injects a fault: every `event` on table (where `when`, an SQL condition on NEW, holds)
    fails. SQLite: a trigger that raises; PostgreSQL: a trigger function that raises."""
    from conftest import ENGINE
    if ENGINE == "postgresql":
        db.execute("CREATE FUNCTION %s_fn() RETURNS trigger LANGUAGE plpgsql AS "
                   "$f$BEGIN RAISE EXCEPTION '%s'; END$f$" % (name, message))
        db.execute("CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW %sEXECUTE FUNCTION %s_fn()" %
                   (name, event, table, "WHEN (%s) " % when if when else "", name))
    else:
        db.execute("CREATE TRIGGER %s BEFORE %s ON %s %sBEGIN SELECT RAISE(ABORT, '%s'); END" %
                   (name, event, table, "WHEN %s " % when if when else "", message))
    db.commit()


def drop_trigger(db, name, table):
    """Removes a fail_trigger."""
    from conftest import ENGINE
    if ENGINE == "postgresql":
        db.execute("DROP TRIGGER %s ON %s" % (name, table))
        db.execute("DROP FUNCTION %s_fn()" % name)
    else:
        db.execute("DROP TRIGGER %s" % name)
    db.commit()


def committed_row(server, sql, params=(), timeout=10):
    """The first row sql finds in the server's live database, polled until a commit makes one
    appear (another connection sees commits that are not yet durable); None at the timeout."""
    db = open_db(server, timeout=timeout)
    with contextlib.closing(db):
        deadline = time.time() + timeout
        while True:
            row = db.execute(sql, params).fetchone()
            if row is not None or time.time() >= deadline:
                return row
            time.sleep(0.02)


def audit_of(server, resource_id):
    """The audit records of resource_id, oldest first: (actor_id, action, before_status,
    after_status, detail)."""
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute("SELECT actor_id, action, before_status, after_status, detail "
                          "FROM audit_events WHERE resource_id = ? ORDER BY seq",
                          (resource_id,)).fetchall()


def no_recent_reads():
    """Waits out runtime/group_commit.c's READS_WINDOW_MS (100 ms): while reads arrive the writer
    syncs each commit inside it, so a test of the deferred fsync (the syncer's, which the test
    hooks hold or fail) lets the reads of its set-up age first."""
    time.sleep(0.3)


def media_type(resp):
    ct = resp.header("Content-Type") or ""
    return ct.split(";")[0].strip().lower()


def assert_rate_limit_headers(resp):
    """X-RateLimit-Limit/-Remaining/-Reset present as integers (values: the rate-limit issue)."""
    for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
        v = resp.header(name)
        assert v is not None, "%s missing on %d response: %r" % (name, resp.status, resp)
        assert INTEGER.match(v.strip()), "%s is not an integer: %r" % (name, v)


def assert_no_leak(resp):
    text = resp.body.decode("utf-8", "replace")
    for p in LEAK_PATTERNS:
        assert not p.search(text), "response body leaks internals (%s): %s" % (p.pattern, text)


def assert_safe_page(resp):
    """A server-rendered page: a whole document, no script, and the page security headers."""
    assert media_type(resp) == "text/html", resp
    assert resp.header("Content-Type").lower().endswith("charset=utf-8"), resp
    assert resp.body.startswith(b"<!DOCTYPE html>"), resp
    assert b"<script" not in resp.body.lower(), resp
    csp = resp.header("Content-Security-Policy") or ""
    for directive in ("default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'",
                      "form-action 'self'"):
        assert directive in csp, "CSP lacks %s: %r" % (directive, csp)
    assert resp.header("X-Frame-Options") == "DENY", resp
    assert resp.header("Referrer-Policy") == "no-referrer", resp
    assert resp.header("Cache-Control") == "no-store", resp


# Set (by a test that injects a fault into the database) to the set of 5xx statuses it
# provokes on purpose; those are then checked like 4xx instead of failing the test.
EXPECTED_SERVER_ERRORS = set()


def assert_headers_once(resp):
    """Every response header field appears once (RFC 9110 §5.3 allows repeating only fields
    whose value is a list; the server sends none twice)."""
    names = [k.lower() for k in resp.headers.keys()]
    repeated = sorted({n for n in names if names.count(n) > 1})
    assert not repeated, "header field(s) %s sent more than once: %r" % (repeated, resp.headers)


def is_planned_answer(resp):
    """A 501 `not_implemented` problem: what an operation the spec marks `x-status: planned`
    answers by design, not a server failure (checked as a problem document below)."""
    if resp.status != 501 or media_type(resp) != "application/problem+json":
        return False
    try:
        return resp.json().get("code") == "not_implemented"
    except (ValueError, AttributeError):
        return False


def check_every_response(resp):
    """Installed as Client.response_hook: no 5xx ever (unless a test injected the fault), and
    every 4xx is a problem document whose status equals the HTTP status, or, from the sign-in
    and consent pages, a safe HTML page saying what went wrong, or, from the OAuth token,
    refresh and revocation endpoints, an RFC 6749 error."""
    assert resp.status < 500 or resp.status in EXPECTED_SERVER_ERRORS or \
        is_planned_answer(resp), "server error: %r" % resp
    assert_headers_once(resp)
    if resp.method == "HEAD":
        assert resp.body == b"", "a body in answer to HEAD: %r" % resp
        return
    if resp.status >= 400 and media_type(resp) == "text/html":
        assert_safe_page(resp)
        assert_no_leak(resp)
        return
    if resp.status >= 400 and (resp.method, resp.path) in OAUTH_ERROR_OPERATIONS:
        check_oauth_error(resp)  # RFC 6749 §5.2, not a problem document
        return
    if resp.status >= 400:
        assert media_type(resp) == "application/problem+json", \
            "error not served as problem+json: %r" % resp
        try:
            body = resp.json()
        except ValueError:
            raise AssertionError("problem body is not JSON: %r" % resp)
        assert isinstance(body, dict) and body.get("status") == resp.status, \
            "problem status %r != HTTP %d" % (body.get("status") if isinstance(body, dict)
                                             else body, resp.status)
        assert_no_leak(resp)


# The operations marked x-oauth-errors: their errors are RFC 6749 §5.2 JSON objects.
OAUTH_ERROR_OPERATIONS = {("POST", "/v1/accounts/auth/oauth/token"),
                          ("POST", "/v1/accounts/auth/oauth/refresh"),
                          ("POST", "/v1/accounts/auth/oauth/revoke")}
OAUTH_ERRORS = {"invalid_request", "invalid_client", "invalid_grant", "unsupported_grant_type",
                "invalid_scope", "server_error", "temporarily_unavailable"}
OAUTH_DESCRIPTION = re.compile(r'^[ !#-\[\]-~]{1,1024}$')  # RFC 6749 §5.2's characters


def check_oauth_error(resp):
    """The shape of an RFC 6749 §5.2 error answer; returns the parsed body."""
    assert media_type(resp) == "application/json", "OAuth error served as %r: %r" % (
        resp.header("Content-Type"), resp)
    assert resp.header("Cache-Control") == "no-store", resp
    assert resp.header("Pragma") == "no-cache", resp
    try:
        body = resp.json()
    except ValueError:
        raise AssertionError("OAuth error body is not JSON: %r" % resp)
    assert isinstance(body, dict) and set(body) == {"error", "error_description"}, \
        "OAuth error body is not exactly {error, error_description}: %r" % resp
    assert body["error"] in OAUTH_ERRORS, "not an RFC 6749 error code: %r" % resp
    assert isinstance(body["error_description"], str) and \
        OAUTH_DESCRIPTION.match(body["error_description"]), \
        "error_description outside RFC 6749 §5.2's characters: %r" % resp
    assert_no_leak(resp)
    return body


def assert_oauth_error(resp, status, error):
    """An RFC 6749 §5.2 error answer with this status and error code, carrying the runtime's
    headers; returns the parsed body."""
    assert resp.status == status, "expected %d, got %r" % (status, resp)
    body = check_oauth_error(resp)
    assert body["error"] == error, "expected error %r, got %r" % (error, body)
    assert resp.header("X-Request-ID"), resp
    assert_rate_limit_headers(resp)
    return body


def assert_problem(resp, status, code=None, instance=None):
    """Checks an RFC 9457 problem response and returns the parsed body."""
    assert resp.status == status, "expected %d, got %r" % (status, resp)
    assert media_type(resp) == "application/problem+json", \
        "problem served as %r: %r" % (resp.header("Content-Type"), resp)
    try:
        body = resp.json()
    except ValueError:
        raise AssertionError("problem body is not JSON: %r" % resp)
    assert isinstance(body, dict), body
    for k in ("type", "title", "status", "detail", "instance", "code", "request_id"):
        assert k in body, "problem lacks %r: %r" % (k, body)
    for k in ("type", "title", "detail", "instance", "code", "request_id"):
        assert isinstance(body[k], str), "%s is not a string: %r" % (k, body)
    assert body["status"] == resp.status and type(body["status"]) is int, body
    assert body["title"], body
    assert re.match(r"^[a-z][a-z0-9_]*$", body["code"]), body
    if code is not None:
        assert body["code"] == code, "expected code %r, got %r" % (code, body)
    assert body["request_id"] == resp.header("X-Request-ID"), \
        "request_id %r != X-Request-ID %r" % (body["request_id"], resp.header("X-Request-ID"))
    if instance is not None:
        assert body["instance"] == instance, body
    if "errors" in body:
        assert isinstance(body["errors"], list)
        for e in body["errors"]:
            assert set(("pointer", "code", "detail")) <= set(e), e
            assert e["pointer"] == "" or e["pointer"].startswith("/"), e
    assert_no_leak(resp)
    assert_rate_limit_headers(resp)
    return body


def assert_validation(resp, expected, status=422, code="validation_failed", exact=True):
    """expected: {pointer: violation code or None (any code) or a tuple of acceptable codes}.
    With exact, errors[] holds those pointers and nothing else."""
    body = assert_problem(resp, status, code)
    errs = body.get("errors")
    assert isinstance(errs, list) and errs, "no errors[] in %r" % body
    got = {}
    for e in errs:
        got.setdefault(e["pointer"], []).append(e["code"])
    for ptr, want in expected.items():
        assert ptr in got, "no error at %r; errors: %r" % (ptr, errs)
        if want is not None:
            wants = want if isinstance(want, tuple) else (want,)
            assert any(c in wants for c in got[ptr]), \
                "error at %r has code %r, expected %r" % (ptr, got[ptr], wants)
    if exact:
        assert set(got) == set(expected), "errors at %r, expected exactly %r: %r" % (
            sorted(got), sorted(expected), errs)
    return body


def assert_json(resp, status):
    assert resp.status == status, "expected %d, got %r" % (status, resp)
    assert media_type(resp) == "application/json", resp
    assert_rate_limit_headers(resp)
    return resp.json()


def new_request_id():
    return str(uuid.uuid4())


# ---- beneficiaries -----------------------------------------------------------------------

def beneficiary(**over):
    """A valid create body (German IBAN, valid BIC); keyword arguments replace fields, a value
    of None removes the field."""
    body = {
        "name": "ACME GmbH",
        "account_holder_name": "ACME GmbH",
        "account_identification": {"scheme": "IBAN", "identification": "DE89370400440532013000"},
        "bank": {"bic": "COBADEFFXXX", "name": "Commerzbank", "country": "DE"},
        "currency": "EUR",
        "country": "DE",
        "email": "payables@acme.example",
        "metadata": {"erp_vendor_id": "V-10042"},
    }
    for k, v in over.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return body


def create_beneficiary(client, **over):
    r = client.post("/v1/beneficiaries", json=beneficiary(**over))
    assert r.status == 201, "create failed: %r" % r
    return r.json()


# ---- tokens ------------------------------------------------------------------------------

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def jwt_parts(token):
    """(header dict, payload dict) of a JWT, unverified."""
    h, p, _ = token.split(".")
    return json.loads(b64url_decode(h)), json.loads(b64url_decode(p))


def signing_key(data_dir):
    """The HMAC key: the 32 raw bytes that jwt-signing.key holds as 64 hex characters."""
    text = (Path(data_dir) / "jwt-signing.key").read_text().strip()
    assert re.fullmatch(r"[0-9a-fA-F]{64}", text), "jwt-signing.key is not 64 hex chars"
    return bytes.fromhex(text)


class Forger:
    """Builds tokens like the server's, from a real login token, with one thing changed."""

    def __init__(self, real_token, key):
        self.header, self.claims = jwt_parts(real_token)
        self.key = key

    def claims_now(self, **over):
        now = int(time.time())
        c = dict(self.claims)
        c.update(iat=now, exp=now + 3600, jti=str(uuid.uuid4()))
        for k, v in over.items():
            if v is None:
                c.pop(k, None)
            else:
                c[k] = v
        return c

    def make(self, key=None, alg="HS256", header=None, **claims):
        h = {"typ": self.header.get("typ"), "kid": self.header.get("kid")}
        h.update(header or {})
        h = {k: v for k, v in h.items() if v is not None}
        return jwt.encode(self.claims_now(**claims), self.key if key is None else key,
                          algorithm=alg, headers=h)

    def raw(self, header, payload_bytes, key=None, alg_sign="HS256"):
        """Hand-made token: any header, any payload bytes, HMAC-SHA256 (or no) signature."""
        import hashlib
        import hmac
        signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(payload_bytes))
        if alg_sign is None:
            return signing_input + "."
        digest = {"HS256": hashlib.sha256, "HS512": hashlib.sha512}[alg_sign]
        sig = hmac.new(self.key if key is None else key, signing_input.encode(), digest).digest()
        return signing_input + "." + b64url(sig)

