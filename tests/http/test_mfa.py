"""TOTP multi-factor authentication (RFC 6238): enrol, confirm, log in with a code, codes
accepted once, recovery codes, disabling; the codes come from oathtool (Debian's oath-toolkit),
not from our own implementation, at the server's (test) clock."""

import concurrent.futures
import contextlib
import re
import shutil
import subprocess
import time
import urllib.parse
import uuid

import pytest

from conftest import ENGINE, USER_PASSWORD
from helpers import open_db
from helpers import assert_json, assert_problem, assert_validation

MFA = "/v1/accounts/mfa"
REAUTH = {"current_password": USER_PASSWORD}  # re-authentication (issue 18)

pytestmark = pytest.mark.skipif(shutil.which("oathtool") is None,
                                reason="oathtool is not installed (make test-deps installs it)")


def oathtool(secret, at):
    """The TOTP code of secret at Unix time at, computed by oathtool."""
    out = subprocess.run(["oathtool", "--totp", "-b", secret, "-N", "@%d" % at],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(r"[0-9]{6}", out), out
    return out


class Clock:
    """The server's clock in tests: real time plus the offset this test moved it by."""

    def __init__(self, server):
        self.server, self.offset = server, 0

    def now(self):
        return int(time.time()) + self.offset

    def step(self, steps=1):
        """Moves the server to the start of a later 30 s step (past any code used so far)."""
        target = (self.now() // 30 + steps) * 30 + 1
        self.offset = target - int(time.time())
        self.server.move_clock(self.offset)


@pytest.fixture
def user(make_server):
    """A fresh server and a user on it: (server, email, client, clock)."""
    s = make_server()
    wid = s.login()["workspace_id"]
    email = "mfa-%s@example.com" % uuid.uuid4().hex[:8]
    s.create_user(wid, email, "viewer")
    tok = s.login(email, USER_PASSWORD)["access_token"]
    return s, email, s.client(token=tok), Clock(s)


def enrol_and_confirm(c, clock):
    e = assert_json(c.post(MFA + "/enroll", json=REAUTH), 201)
    code = oathtool(e["secret"], clock.now())
    confirmed = assert_json(c.post(MFA + "/confirm", json={"code": code}), 200)
    return e["secret"], confirmed["recovery_codes"]


def test_enrolment_gives_a_secret_and_an_otpauth_uri(user):
    s, email, c, _ = user
    assert assert_json(c.get(MFA), 200) == {"status": "none", "recovery_codes_left": 0}
    r = c.post(MFA + "/enroll", json=REAUTH)
    e = assert_json(r, 201)
    assert r.header("Cache-Control") == "no-store"
    assert e["status"] == "pending" and re.fullmatch(r"[A-Z2-7]{32}", e["secret"])
    uri = urllib.parse.urlparse(e["otpauth_uri"])
    q = urllib.parse.parse_qs(uri.query)
    assert uri.scheme == "otpauth" and uri.netloc == "totp"
    assert urllib.parse.unquote(uri.path) == "/treasury:" + email
    assert q == {"secret": [e["secret"]], "issuer": ["treasury"], "algorithm": ["SHA1"],
                 "digits": ["6"], "period": ["30"]}
    assert c.get(MFA).json()["status"] == "pending"
    # pending: login does not ask for a code yet
    assert s.login(email, USER_PASSWORD)["access_token"]
    # the secret is sealed at rest
    db = open_db(s)
    stored = db.execute("SELECT mfa_secret FROM users WHERE email_norm = ?",
                        (email,)).fetchone()[0]
    db.close()
    assert stored.startswith("v1.") and e["secret"] not in stored


def test_confirm_needs_a_right_code_and_gives_ten_recovery_codes(user):
    _, _, c, clock = user
    e = assert_json(c.post(MFA + "/enroll", json=REAUTH), 201)
    wrong = "%06d" % ((int(oathtool(e["secret"], clock.now())) + 1) % 1000000)
    assert_validation(c.post(MFA + "/confirm", json={"code": wrong}),
                      {"/code": "invalid_code"},
                      code="invalid_code")
    r = c.post(MFA + "/confirm", json={"code": oathtool(e["secret"], clock.now())})
    body = assert_json(r, 200)
    assert body["status"] == "enabled" and len(set(body["recovery_codes"])) == 10
    assert c.get(MFA).json() == {"status": "enabled", "recovery_codes_left": 10}
    assert_problem(c.post(MFA + "/enroll", json=REAUTH), 409, "mfa_already_enabled")
    assert_problem(c.post(MFA + "/confirm", json={"code": "123456"}), 409,
                   "mfa_not_pending")


def test_login_requires_the_code_once_mfa_is_on(user):
    s, email, c, clock = user
    secret, _ = enrol_and_confirm(c, clock)
    assert_problem(s.login_response(email, USER_PASSWORD), 401, "mfa_required")
    # the wrong password still answers like any wrong password, code or not
    assert_problem(s.login_response(email, "wrong " + USER_PASSWORD), 401, "invalid_credentials")
    clock.step()  # the code used to confirm is spent; a new step has a new code
    code = oathtool(secret, clock.now())
    bad = "%06d" % ((int(code) + 7) % 1000000)
    assert_problem(s.login_response(email, USER_PASSWORD, otp=bad), 401, "invalid_otp")
    assert s.login(email, USER_PASSWORD, otp=code)["access_token"]
    # a code is accepted once
    assert_problem(s.login_response(email, USER_PASSWORD, otp=code), 401, "invalid_otp")
    clock.step()
    assert s.login(email, USER_PASSWORD, otp=oathtool(secret, clock.now()))["access_token"]


def test_an_mfa_login_leaves_the_users_table_alone_and_a_code_works_once(user):
    """The users table is watched by the privilege cache (handlers/privileges.c): recording
    the accepted TOTP step there emptied the whole cache at every MFA login. The step is kept
    apart, as atomically: one code, sent by several logins at once, lets exactly one in."""
    s, email, c, clock = user
    secret, _ = enrol_and_confirm(c, clock)
    db = open_db(s)
    with contextlib.closing(db):
        db.execute("CREATE TABLE probe_user_writes (id TEXT)")
        if ENGINE == "postgresql":
            db.execute("CREATE FUNCTION probe_users_fn() RETURNS trigger LANGUAGE plpgsql AS "
                       "$f$BEGIN INSERT INTO probe_user_writes VALUES (NEW.id); RETURN NEW; "
                       "END$f$")
            db.execute("CREATE TRIGGER probe_users AFTER UPDATE ON users FOR EACH ROW "
                       "EXECUTE FUNCTION probe_users_fn()")
        else:
            db.execute("CREATE TRIGGER probe_users AFTER UPDATE ON users "
                       "BEGIN INSERT INTO probe_user_writes VALUES (NEW.id); END")
        db.commit()
        clock.step()
        code = oathtool(secret, clock.now())
        assert s.login(email, USER_PASSWORD, otp=code)["access_token"]
        assert_problem(s.login_response(email, USER_PASSWORD, otp=code), 401, "invalid_otp")
        clock.step()
        code = oathtool(secret, clock.now())
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            answers = list(ex.map(lambda _: s.login_response(email, USER_PASSWORD, otp=code),
                                  range(4)))
        assert sorted(a.status for a in answers) == [200, 401, 401, 401], answers
        assert [a.json()["code"] for a in answers if a.status == 401] == ["invalid_otp"] * 3
        assert db.execute("SELECT count(*) FROM probe_user_writes").fetchone() == (0,)
        db.execute("DROP TRIGGER probe_users" + (" ON users" if ENGINE == "postgresql" else ""))
        db.commit()
    # the code of a step before the last one used is refused too (steps only move forward)
    assert_problem(s.login_response(email, USER_PASSWORD, otp=oathtool(secret,
                                                                      clock.now() - 30)),
                   401, "invalid_otp")


def test_one_step_of_drift_is_accepted_and_two_are_not(user):
    s, email, c, clock = user
    secret, _ = enrol_and_confirm(c, clock)
    clock.step(3)
    now = clock.now()
    assert_problem(s.login_response(email, USER_PASSWORD, otp=oathtool(secret, now - 60)),
                   401, "invalid_otp")
    assert s.login(email, USER_PASSWORD, otp=oathtool(secret, now - 30))["access_token"]


def test_recovery_codes_work_once_each(user):
    s, email, c, clock = user
    _, codes = enrol_and_confirm(c, clock)
    assert s.login(email, USER_PASSWORD, recovery_code=codes[0])["access_token"]
    assert_problem(s.login_response(email, USER_PASSWORD, recovery_code=codes[0]), 401,
                   "invalid_otp")
    assert c.get(MFA).json()["recovery_codes_left"] == 9


def test_disable_with_a_code_or_a_recovery_code(user):
    s, email, c, clock = user
    secret, codes = enrol_and_confirm(c, clock)
    assert_validation(c.post(MFA + "/disable",
                             json={"recovery_code": "aaaa-aaaa-aaaa", **REAUTH}),
                      {"/recovery_code": "invalid_code"}, code="invalid_code")
    assert_validation(c.post(MFA + "/disable", json=REAUTH), {"": "min_properties"})
    off = assert_json(c.post(MFA + "/disable", json={"recovery_code": codes[3], **REAUTH}), 200)
    assert off == {"status": "none", "recovery_codes_left": 0}
    assert s.login(email, USER_PASSWORD)["access_token"]  # no code needed any more
    assert_problem(c.post(MFA + "/disable", json={"code": "123456", **REAUTH}), 409,
                   "mfa_not_enabled")
    # and on again with a new secret, off with a TOTP code
    clock.step()
    secret2, _ = enrol_and_confirm(c, clock)
    assert secret2 != secret
    clock.step()
    off = c.post(MFA + "/disable", json={"code": oathtool(secret2, clock.now()), **REAUTH})
    assert assert_json(off, 200)["status"] == "none"


def test_wrong_codes_are_rate_limited(user):
    _, _, c, clock = user
    secret, _ = enrol_and_confirm(c, clock)
    clock.step()
    right = oathtool(secret, clock.now())
    wrong = "%06d" % ((int(right) + 1) % 1000000)
    for _ in range(5):
        assert c.post(MFA + "/disable", json={"code": wrong, **REAUTH}).status == 422
    r = c.post(MFA + "/disable", json={"code": right, **REAUTH})
    assert_problem(r, 429, "rate_limited")
    assert r.header("Retry-After")


def test_service_accounts_have_no_mfa(server):
    with server.client(token=server.token) as c:
        sa = assert_json(c.post("/v1/admin/service-accounts",
                                json={"name": "bot", "role": "viewer"}), 201)
        tok = assert_json(c.post("/v1/admin/service-accounts/%s/tokens" % sa["id"],
                                 json={"scopes": ["payments:read"]}), 201)["access_token"]
    with server.client(token=tok) as m:
        assert_problem(m.get(MFA), 409, "not_a_user")
        assert_problem(m.post(MFA + "/enroll", json=REAUTH), 409, "not_a_user")
