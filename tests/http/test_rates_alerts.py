"""Rate alerts (handlers/rates_alerts.c): create with its defaults and 422 rules, the list
(newest first, status and pair filters, the cursor), changes (a changed condition forgets the
last evaluated rate, an absent member keeps its value), delete, pause and resume (re-arming a
triggered alert), lazy expiry under the test clock (reads show `expired`, writes refuse, a
resume stores it), the limit of 200 active or paused alerts, scopes and tenant isolation,
and that every refusal changes nothing.

Evaluation (rates_alerts_on_rate) is reached through pushRates (POST /v1/rates), built on
another branch: its condition logic is unit-tested (tests/unit/test_rates_alerts.c, also the
evaluation against the real schema); the end-to-end test here waits for pushRates."""

import contextlib
import datetime
import re
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_problem, assert_validation, audit_of, open_db, table_counts

PATH = "/v1/rates/alerts"
ALR_ID = r"^alr_[0-9a-z]{26}$"
UNKNOWN = "alr_" + "0" * 26


def ts(days=0, seconds=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days,
                                                                          seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def body(**over):
    b = {"pair": "EURUSD", "condition": {"field": "mid", "operator": "gt", "value": "1.0900"},
         "expires_at": ts(days=30)}
    for k, v in over.items():
        if v is None:
            b.pop(k, None)
        else:
            b[k] = v
    return b


def create(c, **over):
    return assert_json(c.post(PATH, json=body(**over)), 201)


def get(c, aid):
    return assert_json(c.get(PATH + "/" + aid), 200)


@pytest.fixture(scope="module")
def ws(server):
    wid, _, c = server.new_workspace()
    return wid, c


@pytest.fixture(scope="module")
def c(ws):
    return ws[1]


@contextlib.contextmanager
def unchanged(server, c, *ids):
    """The block's request is refused: no table's row count moves and the alerts read the same
    after it."""
    before = table_counts(server), [get(c, i) for i in ids]
    yield
    assert (table_counts(server), [get(c, i) for i in ids]) == before


def set_columns(server, aid, **cols):
    """What an evaluation would have left on the alert (it is reached through pushRates)."""
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("UPDATE rate_alerts SET " + ", ".join("%s = ?" % k for k in cols) +
                   " WHERE id = ?", tuple(cols.values()) + (aid,))
        db.commit()


# ---- create and read --------------------------------------------------------------------------

def test_create_answers_201_with_its_defaults(c, ws, server):
    r = c.post(PATH, json=body())
    a = assert_json(r, 201)
    assert re.match(ALR_ID, a["id"])
    assert r.header("Location") == PATH + "/" + a["id"] and r.header("ETag") == '"v1"'
    assert a["object"] == "fx_rate_alert" and a["workspace_id"] == ws[0]
    assert a["pair"] == "EURUSD"
    assert a["condition"] == {"field": "mid", "operator": "gt", "value": "1.0900"}
    assert a["repeat"] == "once" and a["notify"] == {"channels": ["webhook"]}
    assert a["status"] == "active" and a["trigger_count"] == 0 and a["metadata"] == {}
    assert a["version"] == 1 and a["created_at"] == a["updated_at"]
    assert re.match(r"^usr_[0-9a-z]{26}$", a["created_by"])
    for k in ("triggered_at", "last_evaluated_rate", "last_evaluated_at"):
        assert k not in a
    assert get(c, a["id"]) == a
    rec = audit_of(server, a["id"])
    assert [x[1] for x in rec] == ["fx_rate_alert.created"]


def test_create_keeps_what_is_given_and_normalises_expires_at(c):
    at = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + \
        datetime.timedelta(days=10)
    local = at.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    a = create(c, pair="GBPJPY", repeat="every_time", expires_at=local.isoformat(),
               condition={"field": "bid", "operator": "cross_below", "value": "190.125"},
               notify={"channels": ["email", "webhook"]}, metadata={"desk": "fx"})
    assert a["expires_at"] == at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert a["repeat"] == "every_time" and a["notify"] == {"channels": ["email", "webhook"]}
    assert a["condition"]["value"] == "190.125" and a["metadata"] == {"desk": "fx"}


def test_the_422_rules_change_nothing(c, server):
    cases = [
        (body(pair="EUREUR"), "/pair", "invalid_pair"),
        (body(pair="EURABC"), "/pair", "invalid_pair"),
        (body(expires_at=ts(seconds=-1)), "/expires_at", "expires_at_in_past"),
        (body(expires_at=ts(days=367)), "/expires_at", "expires_at_too_far"),
    ]
    for b, pointer, code in cases:
        with unchanged(server, c):
            assert_validation(c.post(PATH, json=b), {pointer: code})
    with unchanged(server, c):
        r = c.post(PATH, json=body(expires_at=ts(days=-1), pair="USDUSD"))
        assert_validation(r, {"/pair": "invalid_pair", "/expires_at": "expires_at_in_past"})
    assert create(c, expires_at=ts(days=365))["status"] == "active"
    # the schema's own: a rate is above zero, at most 10 decimals; operators and fields known
    for cond in ({"field": "mid", "operator": "gt", "value": "0"},
                 {"field": "mid", "operator": "gt", "value": "1.12345678901"},
                 {"field": "mid", "operator": "eq", "value": "1"},
                 {"field": "last", "operator": "gt", "value": "1"}):
        with unchanged(server, c):
            assert c.post(PATH, json=body(condition=cond)).status == 422


def test_get_of_another_workspace_or_unknown_is_404(c, server):
    a = create(c)
    _, _, other = server.new_workspace()
    for cl, aid in ((other, a["id"]), (c, UNKNOWN), (c, "ben_" + "0" * 26)):
        assert_problem(cl.get(PATH + "/" + aid), 404, "not_found")
        with unchanged(server, c, a["id"]):
            assert_problem(cl.patch(PATH + "/" + aid, json={"repeat": "every_time"}), 404)
            assert_problem(cl.post(PATH + "/" + aid + "/pause"), 404)
            assert_problem(cl.post(PATH + "/" + aid + "/resume"), 404)
            assert_problem(cl.delete(PATH + "/" + aid), 404)
    assert a["id"] not in [x["id"] for x in other.get(PATH).json()["data"]]


# ---- the list -----------------------------------------------------------------------------------

def test_the_list_is_newest_first_with_filters_and_a_cursor(server):
    _, _, c = server.new_workspace()
    made = [create(c, pair=p) for p in ("EURUSD", "GBPUSD", "EURUSD", "USDJPY", "EURUSD")]
    assert_json(c.post(PATH + "/" + made[1]["id"] + "/pause"), 200)
    seen, cursor = [], None
    while True:
        page = assert_json(c.get(PATH + "?limit=2" + ("&cursor=" + cursor if cursor else "")),
                           200)
        seen += page["data"]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    assert sorted(x["id"] for x in seen) == sorted(x["id"] for x in made)
    keys = [(x["created_at"], x["id"]) for x in seen]
    assert keys == sorted(keys, reverse=True)
    eur = assert_json(c.get(PATH + "?pair=EURUSD"), 200)["data"]
    assert {x["id"] for x in eur} == {made[i]["id"] for i in (0, 2, 4)}
    paused = assert_json(c.get(PATH + "?status=paused"), 200)["data"]
    assert [x["id"] for x in paused] == [made[1]["id"]]
    both = assert_json(c.get(PATH + "?status=paused&status=active"), 200)["data"]
    assert len(both) == 5
    assert assert_json(c.get(PATH + "?status=expired"), 200)["data"] == []
    assert assert_json(c.get(PATH + "?pair=GBPUSD&status=active"), 200)["data"] == []
    r = c.get(PATH + "?pair=EURUSD&limit=1")
    nxt = assert_json(r, 200)["next_cursor"]
    assert_problem(c.get(PATH + "?pair=GBPUSD&limit=1&cursor=" + nxt), 400, "invalid_cursor")
    assert c.get(PATH + "?pair=eurusd").status == 400


# ---- changes ------------------------------------------------------------------------------------

def test_update_changes_what_is_given_and_keeps_the_rest(c, server):
    a = create(c, repeat="every_time", metadata={"k": "v"},
               notify={"channels": ["webhook", "email"]})
    r = c.patch(PATH + "/" + a["id"], json={"metadata": {"x": "y"}})
    u = assert_json(r, 200)
    assert r.header("ETag") == '"v2"' and u["version"] == 2
    assert u["metadata"] == {"x": "y"} and u["repeat"] == "every_time"
    assert u["notify"] == a["notify"] and u["condition"] == a["condition"]
    u = assert_json(c.patch(PATH + "/" + a["id"], json={"notify": {"channels": ["email"]},
                                                        "expires_at": ts(days=3)}), 200)
    assert u["notify"] == {"channels": ["email"]} and u["repeat"] == "every_time"
    assert [x[1] for x in audit_of(server, a["id"])][-1] == "fx_rate_alert.updated"
    with unchanged(server, c, a["id"]):
        assert_validation(c.patch(PATH + "/" + a["id"], json={"expires_at": ts(days=-1)}),
                          {"/expires_at": "expires_at_in_past"})
        assert_validation(c.patch(PATH + "/" + a["id"], json={"expires_at": ts(days=400)}),
                          {"/expires_at": "expires_at_too_far"})
        assert c.patch(PATH + "/" + a["id"], json={"pair": "GBPUSD"}).status == 422
        assert c.patch(PATH + "/" + a["id"], json={}).status == 422


def test_a_changed_condition_forgets_the_last_rate_an_equal_one_does_not(c, server):
    a = create(c, condition={"field": "mid", "operator": "cross_above", "value": "1.09"})
    set_columns(server, a["id"], last_evaluated_rate="1.0850000000",
                last_evaluated_at="2026-01-01T00:00:00.000Z")
    u = assert_json(c.patch(PATH + "/" + a["id"], json={
        "condition": {"field": "mid", "operator": "cross_above", "value": "1.0900"}}), 200)
    assert u["last_evaluated_rate"] == "1.0850000000"  # 1.0900 is 1.09: the same condition
    u = assert_json(c.patch(PATH + "/" + a["id"], json={
        "condition": {"field": "bid", "operator": "cross_above", "value": "1.0900"}}), 200)
    assert "last_evaluated_rate" not in u and "last_evaluated_at" not in u
    assert u["status"] == "active"


def test_if_match_guards_update_and_delete(c, server):
    a = create(c)
    assert_json(c.patch(PATH + "/" + a["id"], json={"repeat": "every_time"},
                        headers={"If-Match": '"v1"'}), 200)
    with unchanged(server, c, a["id"]):
        assert_problem(c.patch(PATH + "/" + a["id"], json={"repeat": "once"},
                               headers={"If-Match": '"v1"'}), 412, "precondition_failed")
        assert_problem(c.delete(PATH + "/" + a["id"], headers={"If-Match": '"v1"'}), 412,
                       "precondition_failed")
    assert c.delete(PATH + "/" + a["id"], headers={"If-Match": '"v2"'}).status == 204
    assert_problem(c.get(PATH + "/" + a["id"]), 404, "not_found")
    assert "fx_rate_alert.deleted" in [x[1] for x in audit_of(server, a["id"])]


def test_delete_in_any_status(c):
    a, b = create(c), create(c)
    assert_json(c.post(PATH + "/" + b["id"] + "/pause"), 200)
    for x in (a, b):
        assert c.delete(PATH + "/" + x["id"]).status == 204
        assert c.get(PATH + "/" + x["id"]).status == 404


# ---- pause and resume ---------------------------------------------------------------------------

def test_pause_and_resume(c, server):
    a = create(c)
    r = c.post(PATH + "/" + a["id"] + "/pause")
    p = assert_json(r, 200)
    assert p["status"] == "paused" and p["version"] == 2 and r.header("ETag") == '"v2"'
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH + "/" + a["id"] + "/pause"), 409, "invalid_transition")
    set_columns(server, a["id"], last_evaluated_rate="1.0850000000",
                last_evaluated_at="2026-01-01T00:00:00.000Z")
    u = assert_json(c.post(PATH + "/" + a["id"] + "/resume"), 200)
    assert u["status"] == "active" and u["version"] == 3
    assert "last_evaluated_rate" not in u and "last_evaluated_at" not in u
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH + "/" + a["id"] + "/resume"), 409, "invalid_transition")
    actions = [x[1] for x in audit_of(server, a["id"])]
    assert actions == ["fx_rate_alert.created", "fx_rate_alert.paused", "fx_rate_alert.resumed"]


def test_resume_re_arms_a_triggered_alert(c, server):
    a = create(c)
    set_columns(server, a["id"], status="triggered", trigger_count=1, version=2,
                triggered_at="2026-01-01T00:00:00.000Z", last_evaluated_rate="1.1000000000",
                last_evaluated_at="2026-01-01T00:00:00.000Z")
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH + "/" + a["id"] + "/pause"), 409, "invalid_transition")
    u = assert_json(c.post(PATH + "/" + a["id"] + "/resume"), 200)
    assert u["status"] == "active" and u["version"] == 3 and u["trigger_count"] == 1
    assert u["triggered_at"] == "2026-01-01T00:00:00.000Z"
    assert "last_evaluated_rate" not in u
    # a triggered alert may still be changed (and stays triggered)
    set_columns(server, a["id"], status="triggered")
    t = assert_json(c.patch(PATH + "/" + a["id"], json={"repeat": "every_time"}), 200)
    assert t["status"] == "triggered"


# ---- expiry (the test clock) --------------------------------------------------------------------

def test_expiry_is_shown_by_reads_refused_by_writes_and_stored_by_resume(make_server):
    # a server of its own: its clock moves on and stays there (the rate limits' state
    # would otherwise be ahead of the module's server's time)
    server = make_server()
    _, _, c = server.new_workspace()
    soon = create(c, expires_at=ts(seconds=120))
    later = create(c, expires_at=ts(days=5))
    paused = create(c, expires_at=ts(seconds=120))
    assert_json(c.post(PATH + "/" + paused["id"] + "/pause"), 200)
    server.move_clock(600)  # the alerts of two minutes are past their expires_at
    g = get(c, soon["id"])
    assert g["status"] == "expired" and g["version"] == 1
    assert get(c, paused["id"])["status"] == "expired"
    assert get(c, later["id"])["status"] == "active"
    ids = lambda q: {x["id"] for x in assert_json(c.get(PATH + q), 200)["data"]}  # noqa
    assert ids("?status=expired") == {soon["id"], paused["id"]}
    assert ids("?status=active") == {later["id"]}
    assert ids("?status=paused") == set()
    assert ids("?status=paused&status=expired") == {soon["id"], paused["id"]}
    with unchanged(server, c, soon["id"]):
        assert_problem(c.patch(PATH + "/" + soon["id"], json={"repeat": "every_time"}),
                       409, "alert_not_editable")
        assert_problem(c.post(PATH + "/" + soon["id"] + "/pause"), 409,
                       "invalid_transition")
    # resume: it becomes expired instead, and that write is kept with the refusal
    assert_problem(c.post(PATH + "/" + paused["id"] + "/resume"), 409, "invalid_transition")
    db = open_db(server)
    with contextlib.closing(db):
        row = db.execute("SELECT status, version FROM rate_alerts WHERE id = ?",
                         (paused["id"],)).fetchone()
    assert tuple(row) == ("expired", 3)
    assert_problem(c.post(PATH + "/" + paused["id"] + "/resume"), 409, "invalid_transition")
    assert get(c, paused["id"])["version"] == 3
    assert c.delete(PATH + "/" + soon["id"]).status == 204
    assert get(c, later["id"])["status"] == "active"


def test_at_most_200_active_or_paused_alerts(server):
    wid, _, c = server.new_workspace()
    first = create(c)
    db = open_db(server)
    with contextlib.closing(db):
        for i in range(199):
            db.execute(
                "INSERT INTO rate_alerts (id, workspace_id, pair, condition_field, "
                "condition_operator, condition_value, repeat, notify, status, expires_at, "
                "trigger_count, created_by, metadata, version, created_at, updated_at) VALUES "
                "(?, ?, 'EURUSD', 'mid', 'gt', '1', 'once', '{\"channels\":[\"webhook\"]}', ?, "
                "?, 0, ?, '{}', 1, ?, ?)",
                ("alr_" + uuid.uuid4().hex[:26], wid, "paused" if i % 2 else "active",
                 first["expires_at"], first["created_by"], first["created_at"],
                 first["created_at"]))
        db.commit()
    with unchanged(server, c, first["id"]):
        assert_problem(c.post(PATH, json=body()), 409, "alert_limit_reached")
    set_columns(server, first["id"], status="triggered")  # a triggered one does not count
    second = create(c)
    with unchanged(server, c):
        assert_problem(c.post(PATH, json=body()), 409, "alert_limit_reached")
    # nor one past its expires_at, though not stored as expired yet
    set_columns(server, second["id"], expires_at="2020-01-01T00:00:00.000Z")
    create(c)


# ---- scopes -------------------------------------------------------------------------------------

def test_reads_need_rates_read_and_writes_rates_write(c, ws, server):
    a = create(c)
    email = "viewer-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(ws[0], email, "viewer")  # rates:read only
    viewer = server.client(token=server.login(email, USER_PASSWORD,
                                              workspace_id=ws[0])["access_token"])
    assert get(viewer, a["id"]) == get(c, a["id"])
    assert_json(viewer.get(PATH), 200)
    with unchanged(server, c, a["id"]):
        for r in (viewer.post(PATH, json=body()),
                  viewer.patch(PATH + "/" + a["id"], json={"repeat": "every_time"}),
                  viewer.post(PATH + "/" + a["id"] + "/pause"),
                  viewer.post(PATH + "/" + a["id"] + "/resume"),
                  viewer.delete(PATH + "/" + a["id"])):
            assert_problem(r, 403, "insufficient_scope")
            assert 'scope="rates:write"' in (r.header("WWW-Authenticate") or "")
    sa = assert_json(c.post("/v1/admin/service-accounts",
                            json={"name": "sync-" + uuid.uuid4().hex[:6], "role": "treasurer"}),
                     201)
    tok = assert_json(c.post("/v1/admin/service-accounts/" + sa["id"] + "/tokens",
                             json={"scopes": ["payments:read"]}), 201)["access_token"]
    with server.client(token=tok) as other:
        for r in (other.get(PATH), other.get(PATH + "/" + a["id"])):
            assert_problem(r, 403, "insufficient_scope")
            assert 'scope="rates:read"' in (r.header("WWW-Authenticate") or "")
    # a service account creates alerts in its own name
    tok = assert_json(c.post("/v1/admin/service-accounts/" + sa["id"] + "/tokens",
                             json={"scopes": ["rates:write"]}), 201)["access_token"]
    with server.client(token=tok) as robot:
        assert create(robot)["created_by"] == sa["id"]


# ---- triggering, through pushRates ----------------------------------------



def push(c, pair, bid, ask, at, mid=None):
    rate = {"pair": pair, "bid": bid, "ask": ask, "as_of": at}
    if mid:
        rate["mid"] = mid
    return assert_json(c.post("/v1/rates", json={"rates": [rate]}), 200)


def events(server, aid):
    db = open_db(server)
    with contextlib.closing(db):
        return [tuple(r) for r in db.execute(
            "SELECT type, resource_version, workspace_id FROM events WHERE resource_id = ? "
            "ORDER BY seq", (aid,))]


def test_pushed_rates_fire_alerts_once_and_every_time_with_one_event_each(server):
    wid, _, c = server.new_workspace()
    _, _, other = server.new_workspace()
    once = create(c, condition={"field": "mid", "operator": "gte", "value": "1.1"})
    every = create(c, repeat="every_time",
                   condition={"field": "bid", "operator": "gt", "value": "1.1"})
    cross = create(c, repeat="every_time",
                   condition={"field": "ask", "operator": "cross_above", "value": "1.1"})
    paused = create(c, condition={"field": "mid", "operator": "gt", "value": "0.5"})
    theirs = create(other, condition={"field": "mid", "operator": "gt", "value": "0.5"})
    assert_json(c.post(PATH + "/" + paused["id"] + "/pause"), 200)
    push(c, "EURUSD", "1.0998", "1.1002", ts(seconds=-50))   # mid 1.1: once fires
    g = get(c, once["id"])
    assert g["status"] == "triggered" and g["trigger_count"] == 1 and g["version"] == 2
    assert g["last_evaluated_rate"] == "1.1000000000"
    assert g["triggered_at"] == g["last_evaluated_at"]
    assert events(server, once["id"]) == [("fx_rate_alert.triggered", 2, wid)]
    assert get(c, every["id"])["trigger_count"] == 0          # bid 1.0998 not above
    cr = get(c, cross["id"])
    assert cr["trigger_count"] == 0 and cr["version"] == 1      # first rate: only the side
    assert cr["last_evaluated_rate"] == "1.1002000000"
    push(c, "EURUSD", "1.1001", "1.1003", ts(seconds=-40))
    assert get(c, every["id"])["trigger_count"] == 1
    assert get(c, cross["id"])["trigger_count"] == 0            # was above already
    push(c, "EURUSD", "1.1002", "1.1004", ts(seconds=-30))    # still above: no new firing
    assert get(c, every["id"])["trigger_count"] == 1
    push(c, "EURUSD", "1.0990", "1.0994", ts(seconds=-20))    # below again
    push(c, "EURUSD", "1.1005", "1.1009", ts(seconds=-10))    # above again: both fire
    assert get(c, every["id"])["trigger_count"] == 2
    assert get(c, cross["id"])["trigger_count"] == 1
    assert get(c, once["id"])["trigger_count"] == 1             # triggered: not evaluated
    assert get(c, paused["id"])["trigger_count"] == 0
    assert get(other, theirs["id"])["trigger_count"] == 0       # a pushed rate is c's only
    assert [e[0] for e in events(server, every["id"])] == ["fx_rate_alert.triggered"] * 2


def test_a_push_older_than_the_market_s_rate_enters_history_only_and_fires_nothing(server):
    """The market's rate (workspace_id NULL, as the sandbox market records it) is later: the
    pushed one is not current (current_updated 0, GET shows the market's) and its alerts are
    not evaluated against it; a push later than the market's is current and fires."""
    wid, _, c = server.new_workspace()
    a = create(c, pair="NOKSEK", condition={"field": "mid", "operator": "gt", "value": "1.0"})
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("INSERT INTO fx_live_rates (workspace_id, pair, bid, ask, mid, source, as_of, "
                   "value_date) VALUES (NULL, 'NOKSEK', '0.9', '0.9', '0.9', 'provider:sandbox', "
                   "?, '2030-01-02')", (ts(seconds=-10),))
        db.commit()
    assert push(c, "NOKSEK", "1.5", "1.5", ts(seconds=-30))["current_updated"] == 0
    assert assert_json(c.get("/v1/rates/NOKSEK"), 200)["mid"] == "0.9"
    g = get(c, a["id"])
    assert g["status"] == "active" and g["trigger_count"] == 0 and events(server, a["id"]) == []
    assert push(c, "NOKSEK", "1.5", "1.5", ts(seconds=-5))["current_updated"] == 1
    assert get(c, a["id"])["status"] == "triggered"
    assert [e[0] for e in events(server, a["id"])] == ["fx_rate_alert.triggered"]
