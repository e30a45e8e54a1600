"""PATCH /v1/workspace (updateWorkspace): the profile and the treasury settings as a JSON merge
patch under a required If-Match, the service-wide unique slug, the IANA time zone check, the
audit record naming the changed members, and the settings that act elsewhere: require_mfa
(login, refresh) and idempotency_retention_hours (how long a replay is kept). The FX settings
act on quotes (the conversions API's tests)."""

import json
import shutil
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import (assert_json, assert_oauth_error, assert_problem, assert_validation, audit_of, beneficiary,
                     open_db)

WS = "/v1/workspace"
DEFAULTS = {"fx_quote_ttl_seconds": 30, "fx_spread_bps": 0, "transfer_signatures_required": 2,
            "transfer_authorisation_hours": 72, "require_mfa": False,
            "idempotency_retention_hours": 24}


def patch(c, body, version):
    return c.patch(WS, json=body, headers={"If-Match": '"v%d"' % version})


def test_a_new_workspace_shows_the_treasury_defaults_and_no_profile(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        w = assert_json(c.get(WS), 200)
    assert w["treasury"] == DEFAULTS
    for m in ("slug", "base_currency", "timezone", "fiscal_year_start_month"):
        assert m not in w


def test_a_patch_changes_what_it_names_and_keeps_the_rest(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        name = c.get(WS).json()["name"]
        r = patch(c, {"slug": "acme-treasury", "base_currency": "EUR",
                      "timezone": "Europe/Berlin", "fiscal_year_start_month": 4,
                      "treasury": {"fx_quote_ttl_seconds": 60, "fx_spread_bps": 25}}, 1)
        w = assert_json(r, 200)
        assert r.header("ETag") == '"v2"' and w["version"] == 2
        assert (w["slug"], w["base_currency"], w["timezone"], w["fiscal_year_start_month"]) == \
            ("acme-treasury", "EUR", "Europe/Berlin", 4)
        assert w["name"] == name
        assert w["treasury"] == dict(DEFAULTS, fx_quote_ttl_seconds=60, fx_spread_bps=25)
        assert w["settings"] == {"token_lifetime_seconds": 86400}
        assert c.get(WS).json() == w
        # a second patch: members left out stay, null resets a setting to its default
        w = assert_json(patch(c, {"name": "Acme Group", "treasury": {
            "fx_spread_bps": None, "transfer_signatures_required": 3}}, 2), 200)
        assert w["name"] == "Acme Group" and w["slug"] == "acme-treasury"
        assert w["timezone"] == "Europe/Berlin" and w["version"] == 3
        assert w["treasury"] == dict(DEFAULTS, fx_quote_ttl_seconds=60,
                                     transfer_signatures_required=3)
    # reset to the default is stored as unset (NULL), never as the default's value
    db = open_db(s)
    row = db.execute("SELECT treasury_fx_spread_bps, treasury_fx_quote_ttl_seconds FROM "
                     "workspaces WHERE id = ?", (w["id"],)).fetchone()
    db.close()
    assert tuple(row) == (None, 60)


def test_the_operators_rate_limit_survives_a_profile_change(make_server):
    s = make_server()
    wid = s.login()["workspace_id"]
    with s.client(token=s.token) as c:
        c.get(WS)
        s.admin("set-rate-limit", "--workspace", wid, "--per-minute", "5000")
        w = assert_json(patch(c, {"slug": "keeps-quota"}, 1), 200)
        assert w["rate_limit"] == {"requests_per_minute": 5000, "source": "workspace"}
        assert c.get(WS).json()["rate_limit"]["requests_per_minute"] == 5000


def test_if_match_is_required_and_a_stale_one_is_412(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        assert_problem(c.patch(WS, json={"slug": "no-if-match"}), 428, "precondition_required")
        assert assert_json(patch(c, {"slug": "first-one"}, 1), 200)["version"] == 2
        assert_problem(patch(c, {"slug": "second-one"}, 1), 412, "precondition_failed")
        w = c.get(WS).json()
        assert w["slug"] == "first-one" and w["version"] == 2


def test_a_slug_another_workspace_has_is_409_and_changes_nothing(make_server):
    s = make_server()
    _, _, other = s.new_workspace()
    with other:
        assert assert_json(patch(other, {"slug": "taken-slug"}, 1), 200)["slug"] == "taken-slug"
    with s.client(token=s.token) as c:
        r = patch(c, {"slug": "taken-slug", "timezone": "UTC"}, 1)
        body = assert_problem(r, 409, "slug_taken")
        assert "wsp_" not in body["detail"]  # never says by whom
        w = c.get(WS).json()
        assert w["version"] == 1 and "slug" not in w and "timezone" not in w
        # its own slug again is no conflict
        assert assert_json(patch(c, {"slug": "mine-slug"}, 1), 200)["version"] == 2
        assert assert_json(patch(c, {"slug": "mine-slug"}, 2), 200)["slug"] == "mine-slug"


def test_a_time_zone_outside_the_database_is_422_unknown_timezone(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        for bad in ("Mars/Olympus_Mons", "Europe/Berlinn", "posix/Europe/Berlin", "Europe",
                    "Factory"):
            r = patch(c, {"timezone": bad, "slug": "tz-test"}, 1)
            assert_validation(r, {"/timezone": "unknown_timezone"}, code="unknown_timezone")
        # the schema's pattern keeps paths out before the database is asked
        assert_validation(patch(c, {"timezone": "../etc/passwd"}, 1), {"/timezone": "pattern"})
        assert c.get(WS).json()["version"] == 1
        for good in ("UTC", "America/Argentina/Buenos_Aires", "Asia/Tokyo"):
            w = assert_json(patch(c, {"timezone": good}, c.get(WS).json()["version"]), 200)
            assert w["timezone"] == good


def test_the_schema_refuses_bad_patches_and_nothing_changes(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        cases = [
            ({}, {"": "min_properties"}),
            ({"treasury": {}}, {"/treasury": "min_properties"}),
            ({"treasury": {"fx_quote_ttl_seconds": 4}}, {"/treasury/fx_quote_ttl_seconds": "minimum"}),
            ({"treasury": {"fx_spread_bps": 1001}}, {"/treasury/fx_spread_bps": "maximum"}),
            ({"treasury": {"transfer_signatures_required": 1}},
             {"/treasury/transfer_signatures_required": "minimum"}),
            ({"treasury": {"idempotency_retention_hours": 721}},
             {"/treasury/idempotency_retention_hours": "maximum"}),
            ({"treasury": {"require_mfa": "yes"}}, {"/treasury/require_mfa": "type"}),
            ({"treasury": {"unknown": 1}}, {"/treasury/unknown": "additional_property"}),
            ({"fiscal_year_start_month": 13}, {"/fiscal_year_start_month": "maximum"}),
            ({"slug": "Ab"}, {"/slug": None}),
            ({"base_currency": "eur"}, {"/base_currency": None}),
            ({"slug": None}, {"/slug": "type"}),
            ({"rate_limit": 5}, {"/rate_limit": "additional_property"}),
        ]
        for body, where in cases:
            assert_validation(patch(c, body, 1), where, exact=False)
        assert c.get(WS).json()["version"] == 1


def test_a_viewer_cannot_change_the_profile(make_server):
    s = make_server()
    wid = s.login()["workspace_id"]
    s.create_user(wid, "wsp-viewer@example.com", "viewer")
    viewer = s.login("wsp-viewer@example.com", USER_PASSWORD)["access_token"]
    with s.client(token=viewer) as c:
        assert_problem(patch(c, {"slug": "viewer-slug"}, 1), 403, "insufficient_scope")
    with s.client(token=s.token) as c:
        assert "slug" not in c.get(WS).json()


def test_the_audit_record_names_the_changed_members(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        w = assert_json(patch(c, {"timezone": "UTC", "treasury": {"fx_spread_bps": 10}}, 1), 200)
        # the same timezone again and a reset of an unset setting change nothing of theirs
        assert_json(patch(c, {"timezone": "UTC", "fiscal_year_start_month": 7,
                              "treasury": {"fx_spread_bps": None, "require_mfa": None}}, 2), 200)
    records = [r for r in audit_of(s, w["id"]) if r[1] == "workspace.updated"]
    assert len(records) == 2
    first, second = (json.loads(r[4]) for r in records)
    assert first["changed"] == ["timezone", "treasury.fx_spread_bps"]
    assert first["request"]["treasury"] == {"fx_spread_bps": 10}
    assert second["changed"] == ["fiscal_year_start_month", "treasury.fx_spread_bps"]


# ---- require_mfa ---------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("oathtool") is None, reason="oathtool is not installed")
def test_require_mfa_refuses_logins_and_refreshes_of_members_without_it(make_server):
    from test_mfa import Clock, enrol_and_confirm, oathtool
    s = make_server()
    wid = s.login()["workspace_id"]
    s.create_user(wid, "no-mfa@example.com", "viewer")
    s.create_user(wid, "with-mfa@example.com", "viewer")
    pair = s.login("no-mfa@example.com", USER_PASSWORD)
    clock = Clock(s)
    with s.client(token=s.login("with-mfa@example.com", USER_PASSWORD)["access_token"]) as c:
        secret, _ = enrol_and_confirm(c, clock)
    owner = s.token
    with s.client(token=owner) as c:
        assert_json(patch(c, {"treasury": {"require_mfa": True}}, 1), 200)
    # a member without MFA: the right password is refused, a wrong one is still 401
    body = assert_problem(s.login_response("no-mfa@example.com", USER_PASSWORD), 403,
                          "workspace_requires_mfa")
    assert "access_token" not in body
    assert_problem(s.login_response("no-mfa@example.com", "wrong-password-123"), 401,
                   "invalid_credentials")
    # nor can a session opened before be refreshed; its access token still works meanwhile
    r = s.client().post("/v1/accounts/auth/oauth/refresh",
                        json={"refresh_token": pair["refresh_token"]})
    assert_oauth_error(r, 400, "invalid_grant")
    assert "multi-factor" in r.json()["error_description"]
    with s.client(token=pair["access_token"]) as c:
        assert c.get(WS).status == 200
    # a member with MFA logs in with the code
    clock.step()
    ok = s.login("with-mfa@example.com", USER_PASSWORD,
                 otp=oathtool(secret, clock.now()))
    assert ok["workspace_id"] == wid
    # the owner (no MFA either) turns it off with the token it has: logins work again
    with s.client(token=owner) as c:
        assert_json(patch(c, {"treasury": {"require_mfa": None}}, 2), 200)
    assert s.login("no-mfa@example.com", USER_PASSWORD)["workspace_id"] == wid
    s.move_clock(0)


def test_require_mfa_of_one_workspace_leaves_the_others_alone(make_server):
    s = make_server()
    wid, _, other = s.new_workspace()
    with other:
        assert_json(patch(other, {"treasury": {"require_mfa": True}}, 1), 200)
    # the bootstrap owner's own workspace does not require it
    assert s.login()["workspace_id"] != wid


# ---- idempotency_retention_hours ------------------------------------------------------------

def _expiry_hours(s, key):
    db = open_db(s)
    row = db.execute("SELECT created_at, expires_at FROM idempotency_keys WHERE key = ?",
                     (key,)).fetchone()
    db.close()
    from datetime import datetime
    created, expires = (datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ") for v in row)
    return (expires - created).total_seconds() / 3600


def test_idempotency_records_are_kept_the_workspaces_retention(make_server):
    s = make_server()
    _, _, other = s.new_workspace()  # keeps the default
    with s.client(token=s.token) as c:
        assert_json(patch(c, {"treasury": {"idempotency_retention_hours": 72}}, 1), 200)
        key = str(uuid.uuid4())
        body = beneficiary(name="Kept Long GmbH")
        first = assert_json(c.post("/v1/beneficiaries", json=body,
                                   headers={"Idempotency-Key": key}), 201)
    assert _expiry_hours(s, key) == 72
    with other:
        short = str(uuid.uuid4())
        assert_json(other.post("/v1/beneficiaries", json=beneficiary(),
                               headers={"Idempotency-Key": short}), 201)
    assert _expiry_hours(s, short) == 24
    # 48 hours later the retry still replays the first answer (a default workspace's would not)
    s.move_clock(48 * 3600)
    try:
        with s.client(token=s.login()["access_token"]) as c:
            r = c.post("/v1/beneficiaries", json=body, headers={"Idempotency-Key": key})
            assert assert_json(r, 201)["id"] == first["id"]
            assert r.header("Idempotent-Replayed") == "true"
    finally:
        s.move_clock(0)
