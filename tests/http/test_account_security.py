"""Account-security controls (issue 18): failed logins hold back guessers without locking the
owner out (known devices, second factors, progressive back-off, per-address limits), member
removal, password change, signing out everywhere, re-authentication for MFA changes, and
anonymous authorization requests that leave nothing behind."""

import re
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import open_db
from helpers import assert_json, assert_problem, committed_row, jwt_parts
from oauth_flow import (AUTHORIZE, COOKIE, Browser, Workspace, authorize_path, consent, exchange,
                        pkce, query_of, sign_in)

LOGIN = "/v1/api/login"
MFA = "/v1/accounts/mfa"
DEVICE_COOKIE = "__Host-device"
HAS_OATHTOOL = shutil.which("oathtool") is not None


def jwt_sub(token):
    return jwt_parts(token)[1]["sub"]


def new_user(server, role="viewer"):
    wid = server.login()["workspace_id"]
    email = "sec-%s@example.com" % uuid.uuid4().hex[:10]
    server.create_user(wid, email, role)
    return wid, email


def fail_logins(server, email, n, **extra):
    """n wrong-password logins; their statuses."""
    return [server.login_response(email, "wrong password %d" % i, **extra).status
            for i in range(n)]


def oathtool(secret, at):
    out = subprocess.run(["oathtool", "--totp", "-b", secret, "-N", "@%d" % at],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(r"[0-9]{6}", out), out
    return out


def enrol_mfa(client, password=USER_PASSWORD):
    """Turns MFA on for the client's user; the TOTP secret."""
    e = assert_json(client.post(MFA + "/enroll", json={"current_password": password}), 201)
    code = oathtool(e["secret"], int(time.time()))
    assert_json(client.post(MFA + "/confirm", json={"code": code}), 200)
    return e["secret"]


# ---- 1. failed logins: back-off without a denial of service --------------------------------

def test_failed_logins_do_not_lock_out_a_known_device(server):
    """Ten wrong passwords from anyone used to lock the account for everyone: the right
    password from the owner's known device must still log in."""
    _, email = new_user(server)
    first = server.login(email, USER_PASSWORD)
    device = first["device_token"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", device), first
    assert fail_logins(server, email, 10) == [401] * 10  # an outsider, no device token
    held = server.login_response(email, USER_PASSWORD)  # an unknown client is held back
    assert_problem(held, 429, "rate_limited")
    assert held.header("RateLimit-Policy") == '"login_failures";q=10;w=900'
    assert 1 <= int(held.header("Retry-After")) <= 2
    assert b"access_token" not in held.body
    ok = server.login(email, USER_PASSWORD, device_token=device)  # the owner's device
    assert ok["access_token"] and ok["device_token"] == device
    # the owner's success forgot nothing of the outsider's count: unknown clients still wait
    assert_problem(server.login_response(email, USER_PASSWORD), 429, "rate_limited")
    # another account's device token is no key to this one
    _, other = new_user(server)
    foreign = server.login(other, USER_PASSWORD)["device_token"]
    assert_problem(server.login_response(email, USER_PASSWORD, device_token=foreign), 429,
                   "rate_limited")


def test_failures_from_a_known_device_count_against_that_device_only(server):
    _, email = new_user(server)
    device = server.login(email, USER_PASSWORD)["device_token"]
    assert fail_logins(server, email, 10, device_token=device) == [401] * 10
    assert_problem(server.login_response(email, USER_PASSWORD, device_token=device), 429,
                   "rate_limited")
    # other clients of the account are not held back by that device's failures
    assert server.login(email, USER_PASSWORD)["access_token"]


def test_the_back_off_doubles_with_each_failure_and_is_capped(make_server):
    s = make_server()
    _, email = new_user(s)
    assert fail_logins(s, email, 10) == [401] * 10
    offset, waits = 0, []
    for _ in range(14):
        r = s.login_response(email, "still wrong")
        assert_problem(r, 429, "rate_limited")  # held back: refused before any check
        wait = int(r.header("Retry-After"))
        waits.append(wait)
        offset += wait
        s.move_clock(offset)
        assert_problem(s.login_response(email, "still wrong"), 401, "invalid_credentials")
    assert waits[:10] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], waits
    assert waits[10:] == [900] * 4, waits
    # the right password from an unknown client after the wait: in, and the count forgotten
    r = s.login_response(email, USER_PASSWORD)
    wait = int(r.header("Retry-After"))
    s.move_clock(offset + wait)
    assert s.login(email, USER_PASSWORD)["access_token"]
    assert fail_logins(s, email, 10) == [401] * 10


def test_unknown_emails_are_held_back_exactly_like_real_ones(server):
    email = "nobody-%s@example.com" % uuid.uuid4().hex[:10]
    assert fail_logins(server, email, 11) == [401] * 10 + [429]


@pytest.mark.skipif(not HAS_OATHTOOL, reason="oathtool is not installed")
def test_failed_logins_do_not_lock_out_the_owner_with_a_second_factor(make_server):
    s = make_server()
    _, email = new_user(s)
    with s.client(token=s.login(email, USER_PASSWORD)["access_token"]) as c:
        secret = enrol_mfa(c)
    s.move_clock(31)  # a new 30 s step: the confirming code is spent
    assert fail_logins(s, email, 10) == [401] * 10
    code = oathtool(secret, int(time.time()) + 31)
    bad = "%06d" % ((int(code) + 1) % 1000000)
    # held back: anything but the right password with the right code is the same 429
    for pw, otp in ((USER_PASSWORD, None), ("wrong", code), (USER_PASSWORD, bad)):
        extra = {"otp": otp} if otp else {}
        r = s.login_response(email, pw, **extra)
        assert_problem(r, 429, "rate_limited")
    assert s.login(email, USER_PASSWORD, otp=code)["access_token"]


def test_failed_logins_are_limited_per_client_address(make_server):
    s = make_server()
    _, email = new_user(s)
    device = s.login(email, USER_PASSWORD)["device_token"]
    statuses = [s.login_response("spray-%d-%s@example.com" % (i, uuid.uuid4().hex[:6]),
                                 "Summer2024!").status for i in range(100)]
    assert statuses == [401] * 100
    r = s.login_response("spray-last@example.com", "Summer2024!")
    assert_problem(r, 429, "rate_limited")
    assert r.header("RateLimit-Policy") == '"login_address_failures";q=100;w=3600'
    assert_problem(s.login_response(email, USER_PASSWORD), 429, "rate_limited")
    # a known device's logins are not held back by its address's failures
    assert s.login(email, USER_PASSWORD, device_token=device)["access_token"]


class DeviceBrowser(Browser):
    """A browser that also keeps the device cookie."""

    def __init__(self, server, device=None):
        super().__init__(server)
        self.device = device

    def _headers(self, extra=None):
        h = super()._headers(extra)
        if self.device:
            h["Cookie"] = "; ".join(filter(None, [h.get("Cookie"),
                                                  "%s=%s" % (DEVICE_COOKIE, self.device)]))
        return h

    def _keep(self, r):
        for sc in r.header_all("Set-Cookie"):
            name, _, rest = sc.partition("=")
            if name == DEVICE_COOKIE:
                self.device = rest.split(";")[0]
                assert "SameSite=Strict" in sc and "HttpOnly" in sc and "Secure" in sc, sc
        return super()._keep(r)


def test_failed_sign_ins_do_not_lock_out_a_known_browser(server):
    """The OAuth sign-in page had the same lock: the browser the owner signed in with before
    (its device cookie) still signs in after an outsider's ten failures."""
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("viewer")
    _, challenge = pkce()
    owner = DeviceBrowser(server)
    page = owner.get(authorize_path(app, challenge))
    r = sign_in(owner, page, email)
    assert r.status == 303, r
    consent = owner.get(r.header("Location"))
    assert consent.status == 200 and 'id="consent-form"' in consent.text, consent
    assert owner.device, "no device cookie after signing in"
    for i in range(10):
        b = Browser(server)
        r = sign_in(b, b.get(authorize_path(app, challenge)), email, "wrong %d" % i)
        assert r.status == 400, r
    stranger = Browser(server)
    r = sign_in(stranger, stranger.get(authorize_path(app, challenge)), email)
    assert r.status == 429, r
    # the owner's browser, signed out (a new browser session) but with its device cookie
    again = DeviceBrowser(server, device=owner.device)
    r = sign_in(again, again.get(authorize_path(app, challenge)), email)
    assert r.status == 303, r
    # and the API login of the same account is held back for unknown clients too
    assert_problem(server.login_response(email, USER_PASSWORD), 429, "rate_limited")


# ---- 4. removing a member ---------------------------------------------------------------------

MEMBERS = "/v1/workspace/members"


def member_ids(client):
    return {m["user_id"] for m in assert_json(client.get(MEMBERS + "?limit=100"), 200)["data"]}


def test_a_member_can_be_removed_and_their_tokens_stop_at_once(server):
    """There was no way to remove a member: their tokens kept working."""
    wid, owner_token, owner = server.new_workspace()
    email = "leaver-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid, email, "admin")
    pair = server.login(email, USER_PASSWORD, workspace_id=wid)
    user_id = jwt_sub(pair["access_token"])
    leaver = server.client(token=pair["access_token"])
    # a service-account token the leaver minted (they saw its text)
    sa = assert_json(leaver.post("/v1/admin/service-accounts",
                                 json={"name": "bot", "role": "viewer"}), 201)
    bot = assert_json(leaver.post("/v1/admin/service-accounts/%s/tokens" % sa["id"],
                                  json={"scopes": ["payments:read"]}), 201)["access_token"]
    assert server.client(token=bot).get("/v1/payments").status == 200
    # a service account the owner created, with a token the owner minted
    kept = assert_json(owner.post("/v1/admin/service-accounts",
                                  json={"name": "kept", "role": "viewer"}), 201)
    kept_token = assert_json(owner.post("/v1/admin/service-accounts/%s/tokens" % kept["id"],
                                        json={"scopes": ["payments:read"]}), 201)["access_token"]
    # and a token the leaver minted on that account of the owner's (they hold its text too)
    minted = assert_json(leaver.post("/v1/admin/service-accounts/%s/tokens" % kept["id"],
                                     json={"scopes": ["payments:read"]}), 201)
    assert server.client(token=minted["access_token"]).get("/v1/payments").status == 200
    assert user_id in member_ids(owner)

    r = owner.delete(MEMBERS + "/" + user_id)
    assert r.status == 204, r
    assert_problem(leaver.get("/v1/payments"), 401)  # the very next request
    assert_problem(server.client(token=bot).get("/v1/payments"), 401)
    refresh = server.client().post("/v1/accounts/auth/oauth/refresh",
                                   json={"refresh_token": pair["refresh_token"]})
    assert refresh.status == 400 and refresh.json()["error"] == "invalid_grant", refresh
    assert user_id not in member_ids(owner)
    assert_problem(server.login_response(email, USER_PASSWORD, workspace_id=wid), 422,
                   "workspace_not_available")
    # the service accounts the leaver created are disabled (they acted for the leaver); the
    # remaining admins re-create what they need. One the owner created stays.
    assert assert_json(owner.get("/v1/admin/service-accounts/%s" % sa["id"]), 200)["status"] \
        == "disabled"
    assert_problem(owner.post("/v1/admin/service-accounts/%s/tokens" % sa["id"],
                              json={"scopes": ["payments:read"]}), 409,
                   "service_account_disabled")
    assert assert_json(owner.get("/v1/admin/service-accounts/%s" % kept["id"]), 200)["status"] \
        == "active"
    assert server.client(token=kept_token).get("/v1/payments").status == 200
    # the leaver's token on it is revoked, the account and the owner's token stay
    assert_problem(server.client(token=minted["access_token"]).get("/v1/payments"), 401)
    tokens = assert_json(owner.get("/v1/admin/service-accounts/%s/tokens" % kept["id"]),
                         200)["data"]
    assert {t["id"]: t["status"] for t in tokens}[minted["id"]] == "revoked"
    assert sorted(t["status"] for t in tokens) == ["active", "revoked"]
    row = committed_row(server, "SELECT actor_id, before_status, after_status, detail FROM "
                        "audit_events WHERE workspace_id = ? AND action = "
                        "'service_account.disabled' AND resource_id = ?", (wid, sa["id"]))
    assert row == (jwt_sub(owner_token), "active", "disabled", "creator removed"), row
    row = committed_row(server, "SELECT actor_id, before_status, after_status, detail FROM "
                        "audit_events WHERE workspace_id = ? AND action = 'member.removed' "
                        "AND resource_id = ?", (wid, user_id))
    assert row and row[1:3] == ("active", "removed") and "admin" in row[3], row
    assert row[0] == jwt_sub(owner_token)
    assert_problem(owner.delete(MEMBERS + "/" + user_id), 404, "not_found")


def test_removing_yourself_or_the_last_admin_is_refused(server):
    wid, owner_token, owner = server.new_workspace()
    owner_id = jwt_sub(owner_token)
    assert_problem(owner.delete(MEMBERS + "/" + owner_id), 409, "cannot_remove_self")
    email = "second-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid, email, "owner")
    second = server.client(token=server.login(email, USER_PASSWORD,
                                              workspace_id=wid)["access_token"])
    viewer_email = "viewer-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid, viewer_email, "viewer")
    viewer_id = jwt_sub(server.login(viewer_email, USER_PASSWORD,
                                     workspace_id=wid)["access_token"])
    assert second.delete(MEMBERS + "/" + owner_id).status == 204  # another admin remains
    other_id = viewer_id[:-1] + ("1" if viewer_id.endswith("0") else "0")  # someone else's
    assert_problem(second.delete(MEMBERS + "/" + other_id), 404, "not_found")
    # the second owner is now the last admin: a viewer cannot do it, and neither can anyone
    viewer = server.client(token=server.login(viewer_email, USER_PASSWORD,
                                              workspace_id=wid)["access_token"])
    assert_problem(viewer.delete(MEMBERS + "/" + owner_id), 403)
    sa = assert_json(second.post("/v1/admin/service-accounts",
                                 json={"name": "admin bot", "role": "admin"}), 201)
    bot_token = assert_json(second.post("/v1/admin/service-accounts/%s/tokens" % sa["id"],
                                        json={"scopes": ["workspace:admin"]}), 201)
    with server.client(token=bot_token["access_token"]) as bot:
        assert_problem(bot.delete(MEMBERS + "/" + jwt_sub(second.token)), 409, "last_admin")


# ---- 5. changing the password -----------------------------------------------------------------

PASSWORD = "/v1/accounts/password"
NEW_PASSWORD = "An0ther-long-passphrase-%s" % uuid.uuid4().hex[:6]


def test_a_user_can_change_their_password_and_other_sessions_end(server):
    """There was no way to change a password (nor to cut off a thief's sessions by doing so)."""
    wid, email = new_user(server)
    second_wid = server.create_workspace("Second " + email, email, password=USER_PASSWORD)
    here = server.login(email, USER_PASSWORD, workspace_id=wid)
    server.accept_invitation(server.owner_invitation, here["access_token"])
    laptop = server.login(email, USER_PASSWORD, workspace_id=wid)
    elsewhere = server.login(email, USER_PASSWORD, workspace_id=second_wid)
    c = server.client(token=here["access_token"])
    r = c.post(PASSWORD, json={"current_password": "not it", "new_password": NEW_PASSWORD})
    body = assert_problem(r, 403, "reauthentication_failed")
    assert [e["pointer"] for e in body["errors"]] == ["/current_password"]
    r = c.post(PASSWORD, json={"current_password": USER_PASSWORD, "new_password": "short"})
    assert_problem(r, 422, "weak_password")
    r = c.post(PASSWORD, json={"current_password": USER_PASSWORD,
                               "new_password": USER_PASSWORD})
    assert_problem(r, 422, "weak_password")
    assert server.client(token=laptop["access_token"]).get("/v1/workspace").status == 200

    r = c.post(PASSWORD, json={"current_password": USER_PASSWORD, "new_password": NEW_PASSWORD})
    assert r.status == 204, r
    for other in (laptop, elsewhere):
        assert_problem(server.client(token=other["access_token"]).get("/v1/workspace"), 401)
        refresh = server.client().post("/v1/accounts/auth/oauth/refresh",
                                       json={"refresh_token": other["refresh_token"]})
        assert refresh.status == 400, refresh
    assert c.get("/v1/workspace").status == 200  # the session that changed it stays
    assert_problem(server.login_response(email, USER_PASSWORD), 401, "invalid_credentials")
    assert server.login(email, NEW_PASSWORD)["access_token"]
    row = committed_row(server, "SELECT detail FROM audit_events WHERE workspace_id = ? AND "
                        "action = 'user.password_changed' AND resource_id = ?",
                        (wid, jwt_sub(here["access_token"])))
    assert row and row[0].startswith("2 other session"), row


def test_wrong_current_passwords_are_rate_limited(server):
    _, email = new_user(server)
    c = server.client(token=server.login(email, USER_PASSWORD)["access_token"])
    for i in range(5):
        r = c.post(PASSWORD, json={"current_password": "wrong %d" % i,
                                   "new_password": NEW_PASSWORD})
        assert_problem(r, 403, "reauthentication_failed")
    r = c.post(PASSWORD, json={"current_password": USER_PASSWORD, "new_password": NEW_PASSWORD})
    assert_problem(r, 429, "rate_limited")
    assert r.header("Retry-After")


# ---- 6. signing out everywhere ----------------------------------------------------------------

def test_sign_out_everywhere_ends_every_session_of_the_user(server):
    """There was no way to sign out everywhere: only one session at a time, per workspace."""
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("treasurer")
    other_wid = server.create_workspace("Other " + email, email, password=USER_PASSWORD)
    mine = server.login(email, USER_PASSWORD, workspace_id=ws.wid)
    server.accept_invitation(server.owner_invitation, mine["access_token"])
    phone = server.login(email, USER_PASSWORD, workspace_id=ws.wid)
    other = server.login(email, USER_PASSWORD, workspace_id=other_wid)
    from oauth_flow import tokens_for
    oauth = tokens_for(server, ws, app, email)
    colleague = server.login(ws.owner_email, USER_PASSWORD, workspace_id=ws.wid)
    tokens = [mine, phone, other]
    for t in tokens + [oauth]:
        assert server.client(token=t["access_token"]).get("/v1/payments").status == 200
    c = server.client(token=mine["access_token"])
    r = c.post("/v1/accounts/sessions/revoke-all")
    assert r.status == 204, r
    for t in tokens + [oauth]:
        assert_problem(server.client(token=t["access_token"]).get("/v1/payments"), 401)
    refresh = server.client().post("/v1/accounts/auth/oauth/refresh",
                                   json={"refresh_token": phone["refresh_token"]})
    assert refresh.status == 400 and refresh.json()["error"] == "invalid_grant", refresh
    # other users are untouched
    assert server.client(token=colleague["access_token"]).get("/v1/payments").status == 200
    row = committed_row(server, "SELECT detail FROM audit_events WHERE workspace_id = ? AND "
                        "action = 'user.sessions_revoked'", (ws.wid,))
    assert row and row[0].startswith("4 session"), row
    assert server.login(email, USER_PASSWORD)["access_token"]  # logging in again works


def test_signing_out_everywhere_or_a_new_password_voids_unredeemed_authorization_codes(server):
    """An authorization code issued before the user signed out everywhere (or changed their
    password) could still be exchanged for a fresh session within its 60 s."""
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("treasurer")
    me = server.client(token=server.login(email, USER_PASSWORD)["access_token"])
    for end in ("revoke-all", "password"):
        verifier, challenge = pkce()
        code = query_of(consent(server, app, email, challenge).header("Location"))["code"]
        if end == "revoke-all":
            assert me.post("/v1/accounts/sessions/revoke-all").status == 204
            me = server.client(token=server.login(email, USER_PASSWORD)["access_token"])
            # a code issued afterwards is exchanged as ever
            later_verifier, later = pkce()
            later_code = query_of(consent(server, app, email, later).header("Location"))["code"]
            assert_json(exchange(server.client(), app, later_code, later_verifier), 200)
        else:
            r = me.post(PASSWORD, json={"current_password": USER_PASSWORD,
                                        "new_password": NEW_PASSWORD})
            assert r.status == 204, r
        r = exchange(server.client(), app, code, verifier)
        assert r.status == 400 and r.json()["error"] == "invalid_grant", (end, r)


# ---- 3. re-authentication for MFA changes ----------------------------------------------------

@pytest.mark.skipif(not HAS_OATHTOOL, reason="oathtool is not installed")
def test_mfa_changes_need_the_current_password(make_server):
    """A stolen access token alone could enrol its own authenticator (or turn MFA off)."""
    s = make_server()
    wid, email = new_user(s)
    c = s.client(token=s.login(email, USER_PASSWORD)["access_token"])
    assert_problem(c.post(MFA + "/enroll", json={}), 422, "validation_failed")
    r = c.post(MFA + "/enroll", json={"current_password": "guess"})
    assert_problem(r, 403, "reauthentication_failed")
    assert assert_json(c.get(MFA), 200)["status"] == "none"
    e = assert_json(c.post(MFA + "/enroll", json={"current_password": USER_PASSWORD}), 201)
    code = oathtool(e["secret"], int(time.time()))
    assert_json(c.post(MFA + "/confirm", json={"code": code}), 200)
    s.move_clock(31)
    code = oathtool(e["secret"], int(time.time()) + 31)
    assert_problem(c.post(MFA + "/disable", json={"code": code, "current_password": "guess"}),
                   403, "reauthentication_failed")
    assert assert_json(c.get(MFA), 200)["status"] == "enabled"
    # wrong passwords are limited: 5 in all (two spent above), then 429
    for _ in range(3):
        assert c.post(MFA + "/disable", json={"code": code, "current_password": "x"}).status \
            == 403
    r = c.post(MFA + "/disable", json={"code": code, "current_password": USER_PASSWORD})
    assert_problem(r, 429, "rate_limited")
    actions = [row[0] for row in open_db(s).execute(
        "SELECT action FROM audit_events WHERE workspace_id = ? AND action LIKE 'user.mfa%' "
        "ORDER BY seq", (wid,))]
    assert actions == ["user.mfa_enrolment_started", "user.mfa_enabled"], actions


# ---- 2. anonymous authorization requests store nothing ----------------------------------------

def oauth_rows(server):
    db = open_db(server)
    try:
        return [db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
                for t in ("oauth_browser_sessions", "oauth_requests")]
    finally:
        db.close()


def test_anonymous_authorization_requests_do_not_grow_the_database(server):
    """Each anonymous GET /authorize stored a browser session (12 h) and a request row."""
    ws = Workspace(server)
    app = ws.register()
    email = ws.member("viewer")
    _, challenge = pkce()
    before = oauth_rows(server)
    pages = []
    for _ in range(25):
        b = Browser(server)
        page = b.get(authorize_path(app, challenge))
        assert page.status == 200 and 'id="sign-in-form"' in page.text, page
        pages.append((b, page))
    wrong = sign_in(pages[0][0], pages[0][1], email, "wrong password")
    assert wrong.status == 400, wrong
    assert oauth_rows(server) == before  # nothing stored, not even for a wrong password
    # the sealed request still works: sign in from one of those pages, consent, get a code
    b, page = pages[-1]
    r = sign_in(b, page, email)
    assert r.status == 303, r
    consent = b.get(r.header("Location"))
    assert 'id="consent-form"' in consent.text, consent
    h = Browser.hidden(consent)
    r = b.post(AUTHORIZE + "/decision", request_id=h["request_id"], csrf=h["csrf"],
               decision="approve")
    assert r.status == 302 and "code=" in r.header("Location"), r
    # a sealed request is bound to its browser and cannot be altered
    other, other_page = pages[1]
    h = Browser.hidden(pages[2][1])
    r = other.post(AUTHORIZE + "/sign-in", request_id=h["request_id"],
                   csrf=Browser.hidden(other_page)["csrf"], email=email, password=USER_PASSWORD)
    assert r.status == 400 and "expired" in r.text, r
    tampered = h["request_id"][:-4] + ("AAAA" if not h["request_id"].endswith("AAAA") else "BBBB")
    r = pages[2][0].post(AUTHORIZE + "/sign-in", request_id=tampered, csrf=h["csrf"],
                         email=email, password=USER_PASSWORD)
    assert r.status == 400 and "expired" in r.text, r
    # and it expires after 10 minutes
    b, page = pages[3]
    server.move_clock(601)
    try:
        r = sign_in(b, page, email)
        assert r.status == 400 and "expired" in r.text, r
    finally:
        server.move_clock(0)
