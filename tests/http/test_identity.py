"""Identities no other workspace can claim (issue 18, item 5): the inviting admin never sees an
invitation token (it is e-mailed: the spool, or an SMTP relay started here with aiosmtpd), the
operator CLI never attaches an existing account, an existing account (MFA included) joins only
by proving itself as a login would (accepting after signing in, or its password and second
factor with the e-mailed token), nothing about a user's other workspaces is visible, and the
mail outbox sends nothing for a rolled-back transaction and retries a failing relay."""

import contextlib
import shutil
import threading
import time
import uuid

import pytest

import helpers
from conftest import USER_PASSWORD, free_ports, token_in
from helpers import drop_trigger, fail_trigger, open_db
from helpers import assert_json, assert_problem, assert_validation, jwt_parts

INVITE = "/v1/admin/users/invite"
SIGNUP = "/v1/api/complete-signup"
ACCEPT = "/v1/accounts/invitations/accept"
MFA = "/v1/accounts/mfa"
MEMBERS = "/v1/workspace/members"
PASSPHRASE = "an attacker's chosen passphrase 9"


def address(tag="cfo"):
    return "%s-%s@victim.example" % (tag, uuid.uuid4().hex[:8])


def db_rows(server, sql, params=()):
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute(sql, params).fetchall()


def invite(c, email, role="treasurer"):
    return assert_json(c.post(INVITE, json={"email": email, "role": role}), 201)


def signup(server, token, password=PASSPHRASE, **second_factor):
    with server.client() as anon:
        return anon.post(SIGNUP, json=dict({"invitation_token": token, "name": "Someone",
                                            "password": password}, **second_factor))


def jwt_sub(token):
    return jwt_parts(token)[1]["sub"]


# ---- (a) the inviter never sees the token ---------------------------------------------------

def test_the_inviting_admin_never_sees_the_token(server):
    wid, _, c = server.new_workspace()
    email = address()
    r = c.post(INVITE, json={"email": email, "role": "treasurer"})
    inv = assert_json(r, 201)
    assert "invitation_token" not in inv
    assert set(inv) == {"id", "object", "email", "role", "status", "invited_by", "created_at",
                        "expires_at"}
    token = server.invitation_token(inv["id"])  # the invitee's mailbox has it
    assert token not in r.body.decode()
    assert token not in c.get("/v1/admin/users?limit=100").body.decode()
    assert token not in c.get("/v1/workspace/members?limit=100").body.decode()
    # the audit trail records the invitation, not its token
    audit = db_rows(server, "SELECT action, actor_id, resource_id, detail FROM audit_events "
                            "WHERE workspace_id = ?", (wid,))
    invited = [a for a in audit if a[0] == "user.invited"]
    assert [(a[1].startswith("usr_"), a[2]) for a in invited] == [(True, inv["id"])]
    assert all(token not in " ".join(str(x) for x in a) for a in audit)
    # the outbox forgot the message's body (the token) once it was delivered
    rows = db_rows(server, "SELECT m.status, m.body FROM mail_outbox m JOIN invitations i "
                           "ON i.mail_id = m.id WHERE i.id = ?", (inv["id"],))
    assert rows == [("sent", None)]
    assert token not in server.log_text()
    # the invitee signs up with it; that is audited in the workspace too
    assert signup(server, token).status == 200
    actions = [a[0] for a in db_rows(server, "SELECT action FROM audit_events WHERE "
                                             "workspace_id = ? ORDER BY seq", (wid,))]
    assert actions[-3:] == ["user.invited", "invitation.accepted", "member.created"]


def test_the_spooled_message_is_a_private_rfc_5322_file(server):
    _, _, c = server.new_workspace("Zürich Treasury")
    email = address("spool")
    inv = invite(c, email, role="viewer")
    msg = server.invitation_email(inv["id"])
    assert msg["To"] == email and "@" in msg["From"] and msg["Message-ID"]
    assert msg["Date"] and msg["Subject"]
    assert msg.get_content_type() == "text/plain"
    body = msg.get_content()
    assert "Zürich Treasury" in body and "viewer" in body and "/v1/api/complete-signup" in body
    spool = server.data_dir / "mail"
    files = [p for p in spool.iterdir() if inv["id"] in p.read_text(encoding="utf-8")]
    assert len(files) == 1 and files[0].suffix == ".eml"
    assert files[0].stat().st_mode & 0o777 == 0o600
    assert spool.stat().st_mode & 0o077 == 0
    assert not [p for p in spool.iterdir() if p.name.endswith(".tmp")]
    assert b"\r\n" in files[0].read_bytes()


# ---- (b) the operator CLI never attaches an existing account --------------------------------

def test_cli_create_user_refuses_an_account_another_workspace_registered(server):
    # workspace B's owner invites the victim's address and (holding the token, the old attack)
    # registers it with a password of their choosing
    _, _, b = server.new_workspace("B")
    victim = address()
    inv = invite(b, victim)
    assert signup(server, server.invitation_token(inv["id"])).status == 200
    # workspace A's operator then provisions the victim as treasurer
    wid_a, _, a = server.new_workspace("A")
    r = server.admin("create-user", "--workspace", wid_a, "--email", victim, "--role",
                     "treasurer", check=False, TREASURY_USER_PASSWORD=USER_PASSWORD)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "already has an account" in r.stderr and "invite-user" in r.stderr
    assert "password" not in r.stdout
    assert_problem(server.login_response(victim, PASSPHRASE, workspace_id=wid_a), 422,
                   "workspace_not_available")
    assert victim not in [u["email"] for u in a.get("/v1/admin/users?limit=100").json()["data"]]


def test_cli_create_workspace_and_invite_user_only_invite_an_existing_account(server):
    _, _, b = server.new_workspace("B")
    victim = address()
    assert signup(server, server.invitation_token(invite(b, victim)["id"])).status == 200
    wid = server.create_workspace("Victim's employer", victim)
    inv_id = server.owner_invitation
    assert inv_id, "create-workspace did not invite the existing account"
    assert_problem(server.login_response(victim, PASSPHRASE, workspace_id=wid), 422,
                   "workspace_not_available")
    # the e-mailed owner invitation is not usable without the account's own password
    token = server.invitation_token(inv_id)
    assert_problem(signup(server, token, password="the operator's guess 42"), 401,
                   "invalid_credentials")
    joined = server.accept_invitation(inv_id, server.login(victim, PASSPHRASE)["access_token"])
    assert joined["workspace_id"] == wid and joined["role"] == "owner"
    assert server.login(victim, PASSPHRASE, workspace_id=wid)["workspace_id"] == wid
    # invite-user: the token goes to the mailbox, never to the operator's terminal
    other = address("ops")
    r = server.admin("invite-user", "--workspace", wid, "--email", other, "--role", "viewer")
    inv2 = r.stdout.split("invitation ")[1].split()[0]
    token2 = server.invitation_token(inv2)
    assert token2 not in r.stdout + r.stderr
    pair = assert_json(signup(server, token2), 200)
    assert pair["workspace_id"] == wid


# ---- (c) an existing account joins only by proving itself (second factor included) ---------

def oathtool_code(secret, at):
    import subprocess
    return subprocess.run(["oathtool", "--totp", "-b", secret, "-N", "@%d" % at],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.skipif(shutil.which("oathtool") is None, reason="oathtool is not installed")
def test_an_mfa_account_accepts_only_with_its_second_factor(server):
    wid_a, _, _ = server.new_workspace("Home")
    email = address("mfa")
    server.create_user(wid_a, email, "viewer")
    with server.client(token=server.login(email, USER_PASSWORD)["access_token"]) as me:
        e = assert_json(me.post(MFA + "/enroll", json={"current_password": USER_PASSWORD}),
                        201)
        code = oathtool_code(e["secret"], int(time.time()))
        recovery = assert_json(me.post(MFA + "/confirm", json={"code": code}), 200)[
            "recovery_codes"]
    wid_b, _, b = server.new_workspace("Inviting")
    inv = invite(b, email, role="approver")
    token = server.invitation_token(inv["id"])
    # the password alone gets nothing: not through the signup...
    r = signup(server, token, password=USER_PASSWORD)
    assert_problem(r, 401, "mfa_required")
    assert b"access_token" not in r.body
    # (a wrong password says nothing of the second factor; a wrong code is the login's answer)
    assert_problem(signup(server, token, password="not it", recovery_code=recovery[0]), 401,
                   "invalid_credentials")
    assert_problem(signup(server, token, password=USER_PASSWORD,
                          recovery_code="aaaa-aaaa-aaaa"), 401, "invalid_otp")
    # ...nor through a login, which wants the second factor
    assert_problem(server.login_response(email, USER_PASSWORD), 401, "mfa_required")
    # someone else, signed in, cannot use the token: answered like an unknown one
    _, other_tok, other = server.new_workspace("Nosy")
    r = other.post(ACCEPT, json={"invitation_token": token})
    assert_validation(r, {"/invitation_token": "invalid_invitation"}, code="invalid_invitation")
    unknown = other.post(ACCEPT, json={"invitation_token": "A" * 43})
    assert r.json()["detail"] == unknown.json()["detail"]
    # the password with the second factor, and the e-mailed token: signed in and accepted
    pair = assert_json(signup(server, token, password=USER_PASSWORD,
                              recovery_code=recovery[0]), 200)
    assert pair["workspace_id"] == wid_b and "payments:write" in pair["scope"]
    user_id = jwt_sub(pair["access_token"])
    assert_problem(signup(server, token, password=USER_PASSWORD, recovery_code=recovery[1]),
                   410, "invitation_used")
    actions = db_rows(server, "SELECT action, actor_id FROM audit_events WHERE workspace_id = ? "
                              "ORDER BY seq", (wid_b,))
    assert [a for a, _ in actions][-2:] == ["invitation.accepted", "member.created"]
    assert {actor for _, actor in actions[-2:]} == {user_id}
    # signed in with the second factor, the invitee accepts another invitation
    wid_c, _, c = server.new_workspace("Third")
    token_c = server.invitation_token(invite(c, email, role="viewer")["id"])
    tok = server.login(email, USER_PASSWORD, recovery_code=recovery[1])["access_token"]
    with server.client(token=tok) as me:
        joined = assert_json(me.post(ACCEPT, json={"invitation_token": token_c}), 201)
        assert joined == {"object": "membership", "workspace_id": wid_c,
                          "workspace_name": "Third", "role": "viewer",
                          "joined_at": joined["joined_at"]}
        assert_problem(me.post(ACCEPT, json={"invitation_token": token_c}), 410,
                       "invitation_used")
    pair = server.login(email, USER_PASSWORD, workspace_id=wid_b, recovery_code=recovery[2])
    assert pair["workspace_id"] == wid_b and "payments:write" in pair["scope"]
    # every workspace stays reachable
    for wid, code in ((wid_a, recovery[3]), (wid_c, recovery[4])):
        assert server.login(email, USER_PASSWORD, workspace_id=wid,
                            recovery_code=code)["workspace_id"] == wid


def test_a_user_removed_from_their_only_workspace_can_join_another(server):
    """Removed from their only workspace, a user could never join one again: a login had no
    workspace to open (so no token to accept with) and the signup answered account_exists."""
    wid_a, _, a = server.new_workspace("Former employer")
    email = address("leaver")
    server.create_user(wid_a, email, "treasurer")
    user_id = jwt_sub(server.login(email, USER_PASSWORD)["access_token"])
    assert a.delete(MEMBERS + "/" + user_id).status == 204
    assert_problem(server.login_response(email, USER_PASSWORD), 422, "workspace_not_available")
    name_before = db_rows(server, "SELECT name, password_hash FROM users WHERE id = ?",
                          (user_id,))
    wid_b, _, b = server.new_workspace("New employer")
    inv = invite(b, email, role="viewer")
    assert "If you cannot sign in" in server.invitation_email(inv["id"]).get_content()
    token = server.invitation_token(inv["id"])
    # without the account's password: a wrong login's answer, whatever the password
    for password in ("not their password at all", "short"):
        r = signup(server, token, password=password)
        assert_problem(r, 401, "invalid_credentials")
        assert b"access_token" not in r.body
    # the mailbox (token) and the account (password) proven: signed in to B and joined
    pair = assert_json(signup(server, token, password=USER_PASSWORD), 200)
    assert pair["workspace_id"] == wid_b and jwt_sub(pair["access_token"]) == user_id
    assert pair["scope"] and all(x.endswith(":read") for x in pair["scope"].split())
    with server.client(token=pair["access_token"]) as me:
        assert me.get("/v1/payments").status == 200
    assert_problem(signup(server, token, password=USER_PASSWORD), 410, "invitation_used")
    # the account is the same: name and password untouched, and it now logs in to B
    assert db_rows(server, "SELECT name, password_hash FROM users WHERE id = ?",
                   (user_id,)) == name_before
    assert server.login(email, USER_PASSWORD)["workspace_id"] == wid_b
    assert_problem(server.login_response(email, USER_PASSWORD, workspace_id=wid_a), 422,
                   "workspace_not_available")
    actions = db_rows(server, "SELECT action, actor_id, resource_id FROM audit_events WHERE "
                              "workspace_id = ? ORDER BY seq", (wid_b,))
    assert actions[-2:] == [("invitation.accepted", user_id, inv["id"]),
                            ("member.created", user_id, user_id)]
    # the membership's records name it alike in both workspaces, whoever wrote them (the
    # operator's create-user, the removal, the acceptance)
    records = db_rows(server, "SELECT workspace_id, actor_id, action, resource_type FROM "
                              "audit_events WHERE resource_id = ? AND action LIKE 'member.%' "
                              "ORDER BY workspace_id, seq", (user_id,))
    assert sorted(records) == sorted([(wid_a, "operator", "member.created", "member"),
                                      (wid_a, jwt_sub(a.token), "member.removed", "member"),
                                      (wid_b, user_id, "member.created", "member")])


def test_signing_up_with_an_existing_accounts_password_counts_as_a_login(make_server):
    """Wrong passwords sent with an invitation token count exactly like failed logins: the
    same back-off, the same 429, the same way out (waiting, or a known device)."""
    s = make_server()
    email = address("guessed")
    s.create_user(s.login()["workspace_id"], email, "viewer")
    device = s.login(email, USER_PASSWORD)["device_token"]
    wid, _, c = s.new_workspace("Inviting")
    token = s.invitation_token(invite(c, email, role="viewer")["id"])
    statuses = [signup(s, token, password="guess %d" % i).status for i in range(5)]
    statuses += [s.login_response(email, "guess %d" % i).status for i in range(5, 10)]
    assert statuses == [401] * 10
    # held back, at the signup and at the login alike, the right password included
    held = signup(s, token, password=USER_PASSWORD)
    assert_problem(held, 429, "rate_limited")
    assert held.header("RateLimit-Policy") == '"login_failures";q=10;w=900'
    assert b"access_token" not in held.body
    assert_problem(s.login_response(email, USER_PASSWORD), 429, "rate_limited")
    assert s.login(email, USER_PASSWORD, device_token=device)["access_token"]  # known device
    s.move_clock(int(held.header("Retry-After")))
    pair = assert_json(signup(s, token, password=USER_PASSWORD), 200)
    assert pair["workspace_id"] == wid


def test_accepting_needs_a_first_party_user_token(server):
    wid, _, c = server.new_workspace()
    inv = invite(c, address())
    token = server.invitation_token(inv["id"])
    with server.client() as anon:
        r = anon.post(ACCEPT, json={"invitation_token": token})
        assert r.status == 401
    # an OAuth application's token, even its user's own: not first-party
    from oauth_flow import Workspace, tokens_for
    ws = Workspace(server)
    app = ws.register(scopes=("payments:read",))
    member = ws.member("viewer")
    app_token = tokens_for(server, ws, app, member)["access_token"]
    with server.client(token=app_token) as via_app:
        assert_problem(via_app.post(ACCEPT, json={"invitation_token": token}), 403,
                       "insufficient_scope")
    # a service account is not a user
    sa = assert_json(ws.owner.post("/v1/admin/service-accounts",
                                   json={"name": "bot", "role": "viewer"}), 201)
    bot = assert_json(ws.owner.post("/v1/admin/service-accounts/%s/tokens" % sa["id"],
                                    json={"scopes": ["payments:read"]}), 201)["access_token"]
    with server.client(token=bot) as robot:
        assert_problem(robot.post(ACCEPT, json={"invitation_token": token}), 409, "not_a_user")
    # the invitation is still usable by its invitee
    assert signup(server, token).status == 200


# ---- (d) nothing about another workspace is visible -----------------------------------------

def test_last_login_is_per_workspace(server):
    wid_a, _, a = server.new_workspace("A")
    email = address("both")
    server.create_user(wid_a, email, "viewer")
    wid_b, _, b = server.new_workspace("B")

    def listed(client):
        users = assert_json(client.get("/v1/admin/users?limit=100"), 200)["data"]
        return next(u for u in users if u["email"] == email)

    assert "last_login_at" not in listed(a)  # never logged in
    tok = server.login(email, USER_PASSWORD)["access_token"]  # to A, the only workspace
    seen_by_a = listed(a)["last_login_at"]
    server.join(b, email, "viewer", tok)
    assert "last_login_at" not in listed(b)  # a member of B, never logged in there
    time.sleep(0.01)
    for _ in range(2):
        server.login(email, USER_PASSWORD, workspace_id=wid_b)
    in_b = listed(b)["last_login_at"]
    assert in_b > seen_by_a
    assert listed(a)["last_login_at"] == seen_by_a  # A does not learn about B's logins
    assert set(listed(a)) <= {"id", "object", "email", "name", "status", "role", "joined_at",
                              "last_login_at"}
    assert set(listed(a)) == set(listed(b))
    assert listed(a)["role"] == "viewer"


# ---- (e) delivery through an SMTP relay -------------------------------------------------------

class Sink:
    """An aiosmtpd handler keeping what it received."""

    def __init__(self):
        self.received = []
        self.ready = threading.Event()

    async def handle_DATA(self, server, session, envelope):
        self.received.append(envelope)
        self.ready.set()
        return "250 OK"


@contextlib.contextmanager
def smtp_relay(port):
    aiosmtpd = pytest.importorskip("aiosmtpd.controller")
    sink = Sink()
    ctrl = aiosmtpd.Controller(sink, hostname="127.0.0.1", port=port, ready_timeout=10)
    ctrl.start()
    try:
        yield sink
    finally:
        ctrl.stop()


def wait_for(sink, n=1, timeout=15.0):
    deadline = time.monotonic() + timeout
    while len(sink.received) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(sink.received) >= n, "the relay got %d message(s)" % len(sink.received)
    return sink.received[n - 1]


def relay_server(make_server, port):
    return make_server(extra_args=["--smtp-url", "smtp://127.0.0.1:%d" % port,
                                   "--mail-from", "treasury@bank.example"])


def test_invitations_go_through_the_smtp_relay(make_server):
    port = free_ports(1)[0]
    with smtp_relay(port) as sink:
        s = relay_server(make_server, port)
        with s.client(token=s.token) as c:
            email = address("relay")
            inv = invite(c, email, role="viewer")
            env = wait_for(sink)
        assert env.mail_from == "treasury@bank.example" and env.rcpt_tos == [email]
        text = env.content.decode("utf-8")
        assert inv["id"] in text and "Subject: " in text
        assert assert_json(signup(s, token_in(text)), 200)["scope"]
        assert not (s.data_dir / "mail").exists() or not list((s.data_dir / "mail").iterdir())
        assert db_rows(s, "SELECT status, body, attempts FROM mail_outbox") == [("sent", None, 1)]


def test_a_failing_relay_is_retried_until_it_takes_the_message(make_server):
    port = free_ports(1)[0]  # nothing listens there yet
    s = relay_server(make_server, port)
    with s.client(token=s.token) as c:
        email = address("retry")
        inv = invite(c, email)
    row = helpers.committed_row(s, "SELECT attempts, last_error FROM mail_outbox "
                                   "WHERE status = 'queued' AND attempts >= 1")
    assert row and row[1], "no failed attempt recorded"
    with smtp_relay(port) as sink:
        env = wait_for(sink, timeout=20)
    text = env.content.decode("utf-8")
    assert inv["id"] in text and env.rcpt_tos == [email]
    status, body, attempts = db_rows(s, "SELECT status, body, attempts FROM mail_outbox")[0]
    assert status == "sent" and body is None and attempts >= 2
    assert "not delivered (attempt 1), retrying" in s.log_text()
    assert signup(s, token_in(text)).status == 200


@pytest.mark.parametrize("args, why", [
    (["--smtp-url", "smtp://user:secret@127.0.0.1:25", "--mail-from", "t@bank.example"],
     "must not carry credentials"),
    (["--smtp-url", "http://127.0.0.1:25", "--mail-from", "t@bank.example"],
     "smtp:// or smtps://"),
    (["--smtp-url", "smtps://relay.bank.example"], "needs --mail-from"),
    (["--mail-from", "not an address"], "not an e-mail address"),
])
def test_bad_mail_settings_stop_the_start(make_server, args, why):
    s = make_server(wait=False, extra_args=args)
    s.start(wait=False)
    assert s.proc.wait(timeout=20) == 1
    assert why in s.log_text()
    assert "secret" not in s.log_text()


# ---- (f) a rolled-back invitation sends nothing ----------------------------------------------

@pytest.fixture
def injected_faults():
    helpers.EXPECTED_SERVER_ERRORS.add(500)
    yield
    helpers.EXPECTED_SERVER_ERRORS.discard(500)


def test_a_rolled_back_invitation_sends_nothing(make_server, injected_faults):
    s = make_server()
    c = s.client(token=s.token)
    db = open_db(s)
    with contextlib.closing(db):
        # the invitation's last write fails: its transaction (with the queued e-mail) rolls back
        fail_trigger(db, "fail_invite", "audit_events", when="NEW.action = 'user.invited'",
                     message="injected")
        lost = address("rollback")
        assert c.post(INVITE, json={"email": lost, "role": "viewer"}).status == 500
        drop_trigger(db, "fail_invite", "audit_events")
    kept = address("kept")
    inv = invite(c, kept)
    s.invitation_email(inv["id"])  # delivered, so the job ran after the failed one
    time.sleep(1.5)  # one more delivery round
    assert [m["To"] for m in s.mailbox()] == [kept]
    assert db_rows(s, "SELECT count(*) FROM mail_outbox WHERE recipient = ?", (lost,)) == [(0,)]
    assert db_rows(s, "SELECT count(*) FROM invitations WHERE email = ?", (lost,)) == [(0,)]
