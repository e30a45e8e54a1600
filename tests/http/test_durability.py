"""Restart on the same data directory keeps every acknowledged write, the signing key (old
tokens stay valid), the certificate and the accounts; no second bootstrap happens."""

from helpers import assert_json, create_beneficiary

PATH = "/v1/beneficiaries"


def test_acknowledged_writes_survive_a_restart(make_server):
    s = make_server()
    token = s.token
    with s.client(token=token) as c:
        kept = create_beneficiary(c, external_id="DUR-1")
        changed = create_beneficiary(c, external_id=None)
        changed = c.patch(PATH + "/" + changed["id"], json={"name": "after patch"}).json()
        archived = create_beneficiary(c, external_id=None)
        assert c.delete(PATH + "/" + archived["id"]).status == 204
        archived = c.get(PATH + "/" + archived["id"]).json()
    key = (s.data_dir / "jwt-signing.key").read_bytes()
    cert = (s.data_dir / "tls.crt").read_bytes()

    assert s.stop() == 0
    s.start()

    assert (s.data_dir / "jwt-signing.key").read_bytes() == key
    assert (s.data_dir / "tls.crt").read_bytes() == cert
    with s.client(token=token) as c:  # the token from before the restart still works
        for ben in (kept, changed, archived):
            r = c.get(PATH + "/" + ben["id"])
            assert assert_json(r, 200) == ben
            assert r.header("ETag") == '"v%d"' % ben["version"]
        assert c.post(PATH, json={**{k: kept[k] for k in (
            "name", "account_holder_name", "account_identification", "currency", "country")},
            "external_id": "DUR-1"}).status == 409
    assert s.login()["workspace_id"] == kept["workspace_id"]


def test_restart_does_not_bootstrap_again(make_server):
    s = make_server()
    wid = s.login()["workspace_id"]
    s.restart()
    assert "bootstrap" not in s.stdout_text(since_start=True)
    out = s.admin("list-workspaces", "--json").stdout
    assert out.count("wsp_") == 1 and wid in out
    assert s.login()["workspace_id"] == wid


def test_restart_with_other_admin_password_does_not_change_the_owner(make_server):
    s = make_server()
    old = s.admin_password
    assert s.stop() == 0
    s.admin_password = "a-completely-different-password"
    s.start()
    r = s.login_response(password="a-completely-different-password")
    assert r.status == 401, r
    assert s.login(password=old)["access_token"]


def test_many_writes_then_sigterm_lose_nothing(make_server):
    s = make_server()
    with s.client(token=s.token) as c:
        ids = [create_beneficiary(c, name="d-%d" % i, external_id=None)["id"] for i in range(30)]
    s.restart()
    with s.client(token=s.token) as c:
        got = [b["id"] for b in c.get(PATH + "?limit=100").json()["data"]]
    assert sorted(got) == sorted(ids)
