"""Array query parameters (codegen: `schema: {type: array, ...}` on a query parameter, form
style, exploded): `GET /v1/payments?status=approved&status=pending_approval` and the
beneficiaries' status filter. Each value is validated at its index (`/query/status/1`),
maxItems and uniqueItems hold, and a cursor stays bound to the set of statuses it was issued
for, whatever the order they are written in."""
import pytest

from conftest import Servers
from helpers import assert_json, assert_problem, assert_validation, create_beneficiary
from payments_team import BEN, PAY, Team


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """The settlement worker sleeps for an hour, so approved payments stay approved."""
    servers = Servers(tmp_path_factory)
    yield servers(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 3600000})
    servers.close()


@pytest.fixture(scope="module")
def made(server):
    """A workspace with 3 pending (EUR, one approval needed), 2 approved (GBP, none) and one
    cancelled payment."""
    t = Team(server)
    t.policy([{"currency": "EUR", "min_amount": 1, "approvals_required": 1}])
    eur, gbp = t.beneficiary(), t.beneficiary("GBP")
    pending = [assert_json(t.pay(eur, 100 * (i + 1)), 201) for i in range(3)]
    approved = [assert_json(t.pay(gbp, 5000), 201) for _ in range(2)]
    cancelled = assert_json(t.pay(gbp, 7000), 201)
    assert {p["status"] for p in pending} == {"pending_approval"}
    assert {p["status"] for p in approved} == {"approved"}
    assert_json(t.owner.post(PAY + "/" + cancelled["id"] + "/cancel"), 200)
    return t, pending, approved, cancelled


def walk(client, query, limit=2):
    seen, url = [], PAY + "?limit=%d%s" % (limit, query)
    while True:
        page = assert_json(client.get(url), 200)
        seen += page["data"]
        if not page["has_more"]:
            return seen
        url = PAY + "?limit=%d%s&cursor=%s" % (limit, query, page["next_cursor"])


def test_repeated_status_lists_payments_in_any_of_them(made):
    t, pending, approved, cancelled = made
    both = walk(t.owner, "&status=approved&status=pending_approval")
    assert {p["id"] for p in both} == {p["id"] for p in pending + approved}
    assert cancelled["id"] not in {p["id"] for p in both}
    assert {p["id"] for p in walk(t.owner, "&status=cancelled")} == {cancelled["id"]}
    assert {p["id"] for p in walk(t.owner, "&status=pending_approval")} == \
        {p["id"] for p in pending}
    assert len(walk(t.owner, "")) == 6


def test_the_order_of_the_values_does_not_matter(made):
    t = made[0]
    ab = walk(t.owner, "&status=approved&status=pending_approval")
    ba = walk(t.owner, "&status=pending_approval&status=approved")
    assert [p["id"] for p in ab] == [p["id"] for p in ba]


def test_a_cursor_is_bound_to_the_set_of_statuses(made):
    t = made[0]
    page = assert_json(t.owner.get(PAY + "?limit=1&status=approved&status=pending_approval"),
                       200)
    cursor = page["next_cursor"]
    # the same set in another order continues the walk
    r = t.owner.get(PAY + "?limit=1&status=pending_approval&status=approved&cursor=" + cursor)
    assert_json(r, 200)
    # a subset, a superset or no filter is another query: the cursor is refused
    for query in ("&status=approved", "&status=approved&status=pending_approval&status=sent",
                  ""):
        r = t.owner.get(PAY + "?limit=1" + query + "&cursor=" + cursor)
        assert_problem(r, 400, "invalid_cursor")


def test_each_value_is_validated_at_its_index(made):
    t = made[0]
    r = t.owner.get(PAY + "?status=approved&status=lost&status=sent&status=gone")
    body = assert_validation(r, {"/query/status/1": "enum", "/query/status/3": "enum"},
                             status=400, code="invalid_request")
    assert len(body["errors"]) == 2


def test_a_comma_separated_value_is_one_item_when_exploded(made):
    t = made[0]
    r = t.owner.get(PAY + "?status=approved,pending_approval")
    assert_validation(r, {"/query/status/0": "enum"}, status=400, code="invalid_request")
    r = t.owner.get(PAY + "?status=approved%2Cpending_approval")
    assert_validation(r, {"/query/status/0": "enum"}, status=400, code="invalid_request")


def test_a_value_twice_and_too_many_values_are_refused(made):
    t = made[0]
    r = t.owner.get(PAY + "?status=approved&status=approved")
    assert_validation(r, {"/query/status": "unique_items"}, status=400, code="invalid_request")
    statuses = ["pending_approval", "approved", "scheduled", "processing", "sent", "completed",
                "failed", "returned", "denied", "cancelled"]
    r = t.owner.get(PAY + "?" + "&".join("status=" + s for s in statuses))
    assert_json(r, 200)
    r = t.owner.get(PAY + "?" + "&".join("status=" + s for s in statuses + ["approved"] * 30))
    body = assert_validation(r, {"/query/status": None}, status=400, code="invalid_request",
                             exact=False)
    # both rules are broken, and both are reported at the array
    assert {e["code"] for e in body["errors"] if e["pointer"] == "/query/status"} == \
        {"max_items", "unique_items"}


def test_an_empty_value_is_an_invalid_item(made):
    t = made[0]
    for query in ("?status=", "?status", "?status=approved&status="):
        r = t.owner.get(PAY + query)
        body = assert_validation(r, {}, status=400, code="invalid_request", exact=False)
        assert [e["code"] for e in body["errors"]] == ["enum"], (query, body)


def test_beneficiaries_filter_on_several_statuses(server):
    t = Team(server)
    a = t.beneficiary()
    b = create_beneficiary(t.owner, external_id=None)
    assert t.owner.delete(BEN + "/" + b["id"]).status == 204
    mine = {a["id"], b["id"]}

    def ids(query):
        page = assert_json(t.owner.get(BEN + "?limit=100" + query), 200)
        return {x["id"] for x in page["data"]} & mine

    assert ids("&status=active&status=archived") == mine
    assert ids("&status=archived&status=active") == mine
    assert ids("&status=active") == {a["id"]}
    assert ids("&status=archived") == {b["id"]}
    r = t.owner.get(BEN + "?status=active&status=deleted")
    assert_validation(r, {"/query/status/1": "enum"}, status=400, code="invalid_request")
    r = t.owner.get(BEN + "?status=active&status=archived&status=active")
    body = assert_validation(r, {"/query/status": None}, status=400, code="invalid_request")
    assert sorted(e["code"] for e in body["errors"]) == ["max_items", "unique_items"]


def test_a_scalar_parameter_given_twice_is_refused(made):
    """Not the first or the last silently: which one the client meant is unknown."""
    t = made[0]
    r = t.owner.get(PAY + "?limit=1&limit=100")
    assert_validation(r, {"/query/limit": "type"}, status=400, code="invalid_request")
    r = t.owner.get(PAY + "?currency=EUR&currency=GBP&status=approved")
    assert_validation(r, {"/query/currency": "type"}, status=400, code="invalid_request")
