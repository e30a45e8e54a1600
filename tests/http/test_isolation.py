"""Workspace isolation (OWASP API1, BOLA): another workspace's beneficiary answers 404 on every
operation, never appears in lists, and is never changed; uniqueness is per workspace."""

import pytest

from helpers import assert_json, assert_problem, beneficiary, create_beneficiary

PATH = "/v1/beneficiaries"


@pytest.fixture(scope="module")
def a(server):
    """Workspace A (the bootstrap workspace) with one beneficiary."""
    c = server.admin_client()
    ben = create_beneficiary(c, name="A's payee", external_id="SHARED-1")
    return c, ben


@pytest.fixture(scope="module")
def b(server):
    """Workspace B, created with admin create-workspace, and its owner's client."""
    wid, _, c = server.new_workspace("Workspace B")
    return wid, c


def test_other_workspaces_beneficiary_is_404_on_get(a, b):
    _, ben = a
    _, cb = b
    body = assert_problem(cb.get(PATH + "/" + ben["id"]), 404, "not_found")
    assert "A's payee" not in str(body)


def test_other_workspaces_beneficiary_is_404_on_patch_and_unchanged(a, b):
    ca, ben = a
    _, cb = b
    assert_problem(cb.patch(PATH + "/" + ben["id"], json={"name": "stolen"}), 404, "not_found")
    assert_problem(cb.patch(PATH + "/" + ben["id"], json={"name": "stolen"},
                            headers={"If-Match": '"v1"'}), 404, "not_found")
    assert ca.get(PATH + "/" + ben["id"]).json() == ben


def test_other_workspaces_beneficiary_is_404_on_delete_and_stays_active(a, b):
    ca, ben = a
    _, cb = b
    assert_problem(cb.delete(PATH + "/" + ben["id"]), 404, "not_found")
    got = ca.get(PATH + "/" + ben["id"]).json()
    assert got["status"] == "active" and got["version"] == ben["version"]


def test_unknown_and_foreign_ids_get_the_same_404(a, b):
    _, ben = a
    _, cb = b
    foreign = assert_problem(cb.get(PATH + "/" + ben["id"]), 404)
    unknown = assert_problem(cb.get(PATH + "/ben_" + "0" * 26), 404)
    assert foreign["title"] == unknown["title"] and foreign["code"] == unknown["code"]
    assert foreign["type"] == unknown["type"]


def test_other_workspaces_beneficiaries_never_appear_in_lists(a, b):
    ca, ben = a
    wid_b, cb = b
    mine = create_beneficiary(cb, name="B's payee", external_id=None)
    for query in ("", "?limit=100", "?status=active", "?currency=EUR"):
        data = assert_json(cb.get(PATH + query), 200)["data"]
        ids = [x["id"] for x in data]
        assert ben["id"] not in ids
        assert all(x["workspace_id"] == wid_b for x in data)
    assert mine["id"] in [x["id"] for x in cb.get(PATH + "?limit=100").json()["data"]]
    assert mine["id"] not in [x["id"] for x in ca.get(PATH + "?limit=100").json()["data"]]
    assert_problem(ca.get(PATH + "/" + mine["id"]), 404, "not_found")


def test_created_beneficiary_belongs_to_the_tokens_workspace(b):
    wid_b, cb = b
    assert create_beneficiary(cb, external_id=None)["workspace_id"] == wid_b


def test_external_id_uniqueness_is_per_workspace(a, b):
    _, cb = b
    r = cb.post(PATH, json=beneficiary(external_id="SHARED-1"))
    assert r.status == 201, r


def test_member_of_both_workspaces_sees_only_the_tokens_workspace(server, a, b):
    _, ben = a
    wid_b, cb = b
    server.join(cb, server.admin_email, "owner", server.token)  # A's owner joins B
    tok_b = server.login(workspace_id=wid_b)["access_token"]
    with server.client(token=tok_b) as c:
        assert_problem(c.get(PATH + "/" + ben["id"]), 404, "not_found")
        assert ben["id"] not in [x["id"] for x in c.get(PATH + "?limit=100").json()["data"]]
    with server.client(token=server.login()["access_token"]) as c:
        assert c.get(PATH + "/" + ben["id"]).status == 200
