"""The structured access log: one JSON line per request on stderr with method, route template,
status, duration, request id and workspace; never a password or a token."""

import pytest

from client import Client
from conftest import ADMIN_PASSWORD
from helpers import Forger, beneficiary, new_request_id, signing_key

PATH = "/v1/beneficiaries"


@pytest.fixture(scope="module")
def traffic(server):
    """A login plus a mix of requests, each with a known request id; returns what was sent."""
    sent = {}
    with Client("127.0.0.1", server.https_port, cafile=server.ca) as c:
        rid = new_request_id()
        r = c.post("/v1/api/login", json={"email": server.admin_email, "password": ADMIN_PASSWORD},
                   headers={"X-Request-ID": rid})
        assert r.status == 200
        login = r.json()
        sent["login"] = (rid, "POST", "/v1/api/login", 200)

        bad_rid = new_request_id()
        r = c.post("/v1/api/login", json={"email": server.admin_email,
                                          "password": "Wr0ng-pw-3e8a-not-in-logs"},
                   headers={"X-Request-ID": bad_rid})
        assert r.status == 401
        sent["bad_login"] = (bad_rid, "POST", "/v1/api/login", 401)

        c.token = login["access_token"]
        rid = new_request_id()
        r = c.post(PATH, json=beneficiary(), headers={"X-Request-ID": rid})
        assert r.status == 201
        ben = r.json()
        sent["create"] = (rid, "POST", PATH, 201)

        rid = new_request_id()
        assert c.get(PATH + "/" + ben["id"], headers={"X-Request-ID": rid}).status == 200
        sent["get"] = (rid, "GET", PATH + "/{id}", 200)

        rid = new_request_id()
        assert c.get(PATH + "?limit=5", headers={"X-Request-ID": rid}).status == 200
        sent["list"] = (rid, "GET", PATH, 200)

        rid = new_request_id()
        assert c.delete(PATH + "/" + ben["id"], headers={"X-Request-ID": rid}).status == 204
        sent["delete"] = (rid, "DELETE", PATH + "/{id}", 204)

        rid = new_request_id()
        assert c.get("/v1/nowhere", headers={"X-Request-ID": rid}).status == 404
        sent["404"] = (rid, "GET", None, 404)

        forged = Forger(login["access_token"], b"k" * 32).make()  # wrong key
        rid = new_request_id()
        assert c.get(PATH, token=forged, headers={"X-Request-ID": rid}).status == 401
        sent["401"] = (rid, "GET", PATH, 401)

        rid = new_request_id()
        assert c.get("/healthz", headers={"X-Request-ID": rid}).status == 200
        sent["health"] = (rid, "GET", "/healthz", 200)
    return {"sent": sent, "login": login, "ben": ben, "forged": forged}


def test_each_request_has_exactly_one_access_line(server, traffic):
    for name, (rid, method, route, status) in traffic["sent"].items():
        recs = server.access_records(rid)
        assert len(recs) == 1, "%s: %d access lines for %s" % (name, len(recs), rid)


@pytest.mark.parametrize("name", ["login", "bad_login", "create", "get", "list", "delete",
                                  "404", "401", "health"])
def test_access_line_has_method_route_status_duration_and_request_id(server, traffic, name):
    rid, method, route, status = traffic["sent"][name]
    (rec,) = server.access_records(rid)
    assert rec["method"] == method
    assert rec["status"] == status
    if route is not None:
        assert rec["route"] == route, rec
    assert isinstance(rec["ms"], (int, float)) and 0 <= rec["ms"] < 60000, rec
    assert rec["request_id"] == rid
    assert "workspace" in rec


@pytest.mark.parametrize("name", ["create", "get", "list", "delete"])
def test_access_line_names_the_workspace_of_authenticated_requests(server, traffic, name):
    rid = traffic["sent"][name][0]
    (rec,) = server.access_records(rid)
    assert rec["workspace"] == traffic["login"]["workspace_id"]


@pytest.mark.parametrize("name", ["login", "bad_login", "401", "health"])
def test_access_line_of_unauthenticated_requests_has_no_workspace(server, traffic, name):
    rid = traffic["sent"][name][0]
    (rec,) = server.access_records(rid)
    assert not rec["workspace"], rec


def test_route_is_the_template_not_the_concrete_path(server, traffic):
    (rec,) = server.access_records(traffic["sent"]["get"][0])
    assert traffic["ben"]["id"] not in rec["route"]


def test_log_contains_no_password_or_token(server, traffic):
    server.access_records(traffic["sent"]["health"][0])  # wait until the last line is written
    text = server.log_text()
    secrets = {
        "admin password": ADMIN_PASSWORD,
        "wrong password": "Wr0ng-pw-3e8a-not-in-logs",
        "access token": traffic["login"]["access_token"],
        "access token signature": traffic["login"]["access_token"].split(".")[2],
        "access token payload": traffic["login"]["access_token"].split(".")[1],
        "refresh token": traffic["login"]["refresh_token"],
        "refused token": traffic["forged"],
        "refused token signature": traffic["forged"].split(".")[2],
        "signing key": (server.data_dir / "jwt-signing.key").read_text().strip(),
        "signing key bytes": signing_key(server.data_dir).hex().upper(),
    }
    for what, value in secrets.items():
        assert value not in text, "the %s appears in the log" % what


def test_every_stderr_line_is_json(server, traffic):
    server.access_records(traffic["sent"]["health"][0])
    recs = server.log_records()  # raises on a non-JSON line
    assert len([r for r in recs if r.get("msg") == "access"]) >= len(traffic["sent"])
    for r in recs:
        assert isinstance(r, dict) and "level" in r and "ts" in r, r


def test_generated_request_id_is_logged(server):
    with server.client() as c:
        r = c.get("/healthz")
    rid = r.header("X-Request-ID")
    (rec,) = server.access_records(rid)
    assert rec["status"] == 200
