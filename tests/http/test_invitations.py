"""Provisioning: invitations (one-time token e-mailed to the invitee, stored hashed, 7 days,
superseded by a newer one), completing a signup (password policy; an existing account proves
itself as a login would, or signs in and accepts), and the admin's user list and everyone's
member list. The tokens
are read from the server's mail spool (conftest Server.invitation_token)."""

import contextlib
import uuid

import pytest

from conftest import ADMIN_PASSWORD, USER_PASSWORD
from helpers import open_db, table_counts
from helpers import assert_json, assert_problem, assert_validation

INVITE = "/v1/admin/users/invite"
SIGNUP = "/v1/api/complete-signup"
ACCEPT = "/v1/accounts/invitations/accept"
GOOD_PASSWORD = "a long and unusual passphrase 7"


@pytest.fixture(scope="module")
def ws(server):
    wid, _, c = server.new_workspace()
    return wid, c


def email():
    return "invitee-%s@example.com" % uuid.uuid4().hex[:8]


def invite(c, address, role="treasurer"):
    r = c.post(INVITE, json={"email": address, "role": role})
    return assert_json(r, 201), r


def signup(server, token, password=GOOD_PASSWORD, name="Sam Rivera"):
    with server.client() as anon:
        return anon.post(SIGNUP, json={"invitation_token": token, "name": name,
                                       "password": password})


def test_invite_e_mails_the_token_and_signup_logs_in(server, ws):
    wid, c = ws
    address = email()
    inv, r = invite(c, address.upper())
    assert r.header("Cache-Control") == "no-store"
    assert inv["id"].startswith("inv_") and inv["status"] == "pending"
    assert inv["role"] == "treasurer" and inv["expires_at"] > inv["created_at"]
    assert "invitation_token" not in inv
    message = server.invitation_email(inv["id"])
    assert message["To"] == address.upper()
    token = server.invitation_token(inv["id"])
    assert token not in r.body.decode()
    db = open_db(server)
    with contextlib.closing(db):
        stored = [row[0] for row in db.execute("SELECT token_hash FROM invitations")]
    assert token not in stored and all(len(h) == 64 for h in stored)
    pair = assert_json(signup(server, token), 200)
    assert pair["workspace_id"] == wid and "payments:write" in pair["scope"]
    with server.client(token=pair["access_token"]) as m:
        assert m.get("/v1/beneficiaries").status == 200
    # the new user logs in with the chosen password, email compared case-insensitively
    assert server.login(address, GOOD_PASSWORD, workspace_id=wid)["workspace_id"] == wid
    users = c.get("/v1/admin/users?limit=100").json()["data"]
    me = next(u for u in users if u["email"].lower() == address.lower())
    assert me["role"] == "treasurer" and me["status"] == "active" and me["name"] == "Sam Rivera"


def test_an_invitation_token_is_single_use(server, ws):
    _, c = ws
    inv, _ = invite(c, email())
    token = server.invitation_token(inv["id"])
    assert signup(server, token).status == 200
    r = signup(server, token)
    assert_problem(r, 410, "invitation_used")
    assert b"access_token" not in r.body


def test_a_newer_invitation_supersedes_the_pending_one(server, ws):
    _, c = ws
    address = email()
    old, _ = invite(c, address, role="viewer")
    new, _ = invite(c, address, role="approver")
    assert_problem(signup(server, server.invitation_token(old["id"])), 410, "invitation_used")
    pair = assert_json(signup(server, server.invitation_token(new["id"])), 200)
    assert "payments:write" in pair["scope"]  # the approver role of the newer invitation


def test_an_expired_invitation_is_410(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        inv, _ = invite(c, email())
    s.move_clock(7 * 86400 - 60)
    with s.client(token=s.login()["access_token"]) as c:  # a minute before expiry
        late, _ = invite(c, email())
    s.move_clock(7 * 86400 + 1)
    assert_problem(signup(s, s.invitation_token(inv["id"])), 410, "invitation_expired")
    assert signup(s, s.invitation_token(late["id"])).status == 200


def test_unknown_tokens_are_422(server):
    r = signup(server, "A" * 43)
    assert_validation(r, {"/invitation_token": "invalid_invitation"}, code="invalid_invitation")


@pytest.mark.parametrize("password", ["short", "Password1234", "aaaaaaaaaaaaaaaa", "EMAIL"])
def test_weak_passwords_are_refused_and_the_invitation_kept(server, ws, password):
    _, c = ws
    address = email()
    inv, _ = invite(c, address)
    pw = address if password == "EMAIL" else password
    token = server.invitation_token(inv["id"])
    r = signup(server, token, password=pw)
    assert_validation(r, {"/password": "weak_password"}, code="weak_password")
    assert signup(server, token).status == 200  # still usable


def test_an_existing_account_needs_its_password_to_sign_up_or_accepts_after_signing_in(
        server, ws):
    wid, c = ws
    # the module server's owner has an account (another workspace): invite them here
    inv, _ = invite(c, server.admin_email, role="viewer")
    token = server.invitation_token(inv["id"])
    assert "already have an account" in server.invitation_email(inv["id"]).get_content()
    r = signup(server, token, password="not their password at all")
    assert_problem(r, 401, "invalid_credentials")  # a wrong login's answer; nothing changed
    assert b"access_token" not in r.body
    with server.client(token=server.login()["access_token"]) as me:
        joined = assert_json(me.post(ACCEPT, json={"invitation_token": token}), 201)
    assert joined["workspace_id"] == wid and joined["role"] == "viewer"
    pair = server.login(workspace_id=wid)
    assert all(x.endswith(":read") for x in pair["scope"].split())
    assert server.login()["workspace_id"] != wid  # password unchanged, first workspace default
    assert_problem(signup(server, token, password=ADMIN_PASSWORD), 410, "invitation_used")


def test_a_pending_invitation_that_was_never_e_mailed_is_refused(server):
    """Before invitations were e-mailed, their token went back to the inviter: such a pending
    invitation (no mail_id; the upgrade supersedes them) is refused whoever presents it."""
    _, _, c = server.new_workspace()
    fresh, _ = invite(c, email())
    existing, _ = invite(c, server.admin_email, role="viewer")
    tokens = [server.invitation_token(i["id"]) for i in (fresh, existing)]
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("UPDATE invitations SET mail_id = NULL WHERE id IN (?, ?)",
                   (fresh["id"], existing["id"]))
        db.commit()
    assert_problem(signup(server, tokens[0]), 410, "invitation_used")
    with server.client(token=server.login()["access_token"]) as me:
        assert_problem(me.post(ACCEPT, json={"invitation_token": tokens[1]}), 410,
                       "invitation_used")
    assert_problem(signup(server, tokens[1], password=ADMIN_PASSWORD), 410, "invitation_used")
    assert [m["email"] for m in c.get("/v1/workspace/members?limit=100").json()["data"]
            if m["email"] in (fresh["email"], server.admin_email)] == []


def test_inviting_a_member_is_409_and_unknown_roles_422(server, ws):
    wid, c = ws
    owner_email = next(u["email"] for u in c.get("/v1/admin/users").json()["data"])
    assert_problem(c.post(INVITE, json={"email": owner_email, "role": "viewer"}), 409,
                   "already_member")
    r = c.post(INVITE, json={"email": email(), "role": "emperor"})
    assert_validation(r, {"/role": "unknown_role"})
    r = c.post(INVITE, json={"email": "not-an-email", "role": "viewer"})
    assert_validation(r, {"/email": "format"})


def test_only_workspace_admins_invite_or_list_users(server, ws):
    wid, _ = ws
    address = "inv-viewer-%s@example.com" % uuid.uuid4().hex[:6]
    server.create_user(wid, address, "viewer")
    tok = server.login(address, USER_PASSWORD, workspace_id=wid)["access_token"]
    with server.client(token=tok) as m:
        members = assert_json(m.get("/v1/workspace/members?limit=100"), 200)["data"]
        assert address in [x["email"] for x in members]  # a viewer sees the members...
        assert_problem(m.get("/v1/admin/users"), 403, "insufficient_scope")  # ...not accounts
        assert_problem(m.post(INVITE, json={"email": email(), "role": "viewer"}), 403,
                       "insufficient_scope")


def test_members_list_is_paged_and_scoped_to_the_workspace(server):
    wid, _, c = server.new_workspace()
    for _ in range(4):
        inv, _ = invite(c, email(), role="viewer")
        assert signup(server, server.invitation_token(inv["id"])).status == 200
    seen, url = [], "/v1/workspace/members?limit=2"
    while True:
        page = assert_json(c.get(url), 200)
        seen += page["data"]
        if not page["has_more"]:
            break
        url = "/v1/workspace/members?limit=2&cursor=" + page["next_cursor"]
    assert len(seen) == 5 and len({m["user_id"] for m in seen}) == 5
    assert all(m["object"] == "member" for m in seen)
    joined = [m["joined_at"] for m in seen]
    assert joined == sorted(joined, reverse=True)
    assert server.admin_email not in [m["email"] for m in seen]


def test_a_workspace_requiring_mfa_takes_no_existing_account_without_it(server):
    """Signing up with an existing account is answered as its login: 403
    workspace_requires_mfa, nothing accepted (the invitation is still usable once the
    requirement is lifted); a new account joins and gets its first session, to enrol in."""
    wid, _, c = server.new_workspace()
    etag = c.get("/v1/workspace").header("ETag")
    assert_json(c.patch("/v1/workspace", json={"treasury": {"require_mfa": True}},
                        headers={"If-Match": etag}), 200)
    inv, _ = invite(c, server.admin_email, role="viewer")
    token = server.invitation_token(inv["id"])
    before = table_counts(server)
    r = signup(server, token, password=ADMIN_PASSWORD)
    assert_problem(r, 403, "workspace_requires_mfa")
    assert b"access_token" not in r.body and table_counts(server) == before
    fresh, _ = invite(c, email())
    assert assert_json(signup(server, server.invitation_token(fresh["id"])),
                       200)["workspace_id"] == wid
    etag = c.get("/v1/workspace").header("ETag")
    assert_json(c.patch("/v1/workspace", json={"treasury": {"require_mfa": None}},
                        headers={"If-Match": etag}), 200)
    assert assert_json(signup(server, token, password=ADMIN_PASSWORD), 200)["workspace_id"] == wid


def test_accepting_signed_in_into_a_workspace_requiring_mfa_needs_it_too(server):
    """Accepting signed in let an account without MFA join a workspace that requires it (the
    signup with the same account was refused): both answer 403 workspace_requires_mfa now,
    and accept nothing; the invitation is still usable once the requirement is lifted."""
    home, _, _ = server.new_workspace()
    address = email()
    server.create_user(home, address, "viewer")
    me = server.client(token=server.login(address, USER_PASSWORD,
                                          workspace_id=home)["access_token"])
    wid, _, c = server.new_workspace()
    etag = c.get("/v1/workspace").header("ETag")
    assert_json(c.patch("/v1/workspace", json={"treasury": {"require_mfa": True}},
                        headers={"If-Match": etag}), 200)
    inv, _ = invite(c, address, role="viewer")
    token = server.invitation_token(inv["id"])
    before = table_counts(server)
    assert_problem(me.post(ACCEPT, json={"invitation_token": token}), 403,
                   "workspace_requires_mfa")
    assert table_counts(server) == before
    assert address not in [m["email"] for m in
                           assert_json(c.get("/v1/workspace/members?limit=100"), 200)["data"]]
    etag = c.get("/v1/workspace").header("ETag")
    assert_json(c.patch("/v1/workspace", json={"treasury": {"require_mfa": None}},
                        headers={"If-Match": etag}), 200)
    joined = assert_json(me.post(ACCEPT, json={"invitation_token": token}), 201)
    assert joined["workspace_id"] == wid and joined["role"] == "viewer"
