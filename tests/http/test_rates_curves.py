"""Custom rate curves (handlers/rates_curves.c): a draft is created with its points in tenor
order and each tenor's value date of today (RateCurveTenor, checked here by hand on pinned
days: a Friday, a Saturday, the end of January, USDCAD's one-day spot), the 422 rules (each
tenor once, SPOT at 0, a real pair) with nothing stored, changes and deletion of drafts only
(409 `curve_not_editable`, If-Match 412), activation (one active curve per pair: the one
before is archived in the same request, with its own event and audit record) and archiving
(409 `invalid_transition` from the wrong state), the list's filters and order, another
workspace's curves (404) and the scopes.

The interpolation between tenors (rates_forward, which no operation of this API answers) is
tested in tests/unit/test_rates_curves.c against figures computed with Python's fractions."""

import calendar
import contextlib
import datetime
import json
import re
import time
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import (ETAG, TIMESTAMP, assert_json, assert_problem, assert_validation, audit_of,
                     open_db, table_counts)

PATH = "/v1/rates/curves"
CRV_ID = re.compile(r"^crv_[0-9a-z]{26}$")
UNKNOWN = "crv_" + "0" * 26
TENORS = ["ON", "TN", "SPOT", "1W", "1M", "3M", "6M", "1Y"]


def body(pair="EURUSD", **over):
    b = {"name": "desk " + uuid.uuid4().hex[:6], "pair": pair,
         "points": [{"tenor": "3M", "forward_points": "0.0036000000"},
                    {"tenor": "SPOT", "forward_points": "0"},
                    {"tenor": "1M", "forward_points": "0.00125"}]}
    b.update(over)
    return b


def create(c, **over):
    return assert_json(c.post(PATH, json=body(**over)), 201)


def get(c, cid):
    return assert_json(c.get(PATH + "/" + cid), 200)


def act(c, cid, action):
    return c.post("%s/%s/%s" % (PATH, cid, action))


@pytest.fixture(scope="module")
def ws(server):
    wid, _, c = server.new_workspace()
    return wid, c


@pytest.fixture(scope="module")
def c(ws):
    return ws[1]


def curve_rows(server, wid):
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute("SELECT id, status, version FROM rate_curves WHERE workspace_id = ? "
                          "ORDER BY id", (wid,)).fetchall()


# ---- the tenors' value dates, by hand ---------------------------------------------------------

def next_weekday(d, n):
    while n:
        d += datetime.timedelta(days=1)
        if d.weekday() < 5:
            n -= 1
    return d


def roll(d):
    while d.weekday() >= 5:
        d += datetime.timedelta(days=1)
    return d


def plus_months(d, n):
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    return datetime.date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


def tenor_dates(today, pair="EURUSD"):
    spot = next_weekday(today, 1 if pair in ("USDCAD", "CADUSD") else 2)
    return {"ON": roll(today), "TN": next_weekday(today, 1), "SPOT": spot,
            "1W": roll(spot + datetime.timedelta(days=7)),
            "1M": roll(plus_months(spot, 1)), "3M": roll(plus_months(spot, 3)),
            "6M": roll(plus_months(spot, 6)), "1Y": roll(plus_months(spot, 12))}


def pin(server, day):
    """The server's clock at noon UTC of day."""
    server.move_clock(calendar.timegm(day.timetuple()) + 12 * 3600 - time.time())


def signed_in_owner(server):
    """The owner of a fresh workspace, signed in now (whatever day the clock says)."""
    return server.new_workspace()[2]


ALL_POINTS = [{"tenor": t, "forward_points": "0" if t == "SPOT" else "0.00%d" % (i + 1)}
              for i, t in enumerate(reversed(TENORS))]


# ---- create --------------------------------------------------------------------------------

def test_create_makes_a_draft(server, ws, c):
    r = c.post(PATH, json=body(metadata={"desk": "fx"}))
    crv = assert_json(r, 201)
    assert CRV_ID.match(crv["id"])
    assert r.header("Location") == PATH + "/" + crv["id"]
    assert r.header("ETag") == '"v1"'
    assert crv["object"] == "rate_curve" and crv["workspace_id"] == ws[0]
    assert crv["status"] == "draft" and crv["spot_source"] == "live"
    assert crv["version"] == 1 and crv["metadata"] == {"desk": "fx"}
    assert [p["tenor"] for p in crv["points"]] == ["SPOT", "1M", "3M"]
    assert [p["forward_points"] for p in crv["points"]] == ["0", "0.00125", "0.0036000000"]
    for k in ("effective_from", "activated_at", "archived_at"):
        assert k not in crv
    assert get(c, crv["id"]) == crv
    assert audit_of(server, crv["id"])[0][1:4] == ("rate_curve.created", None, "draft")


@pytest.mark.parametrize("over,errors", [
    ({"pair": "EUREUR"}, {"/pair": "invalid_pair"}),
    ({"pair": "EURABC"}, {"/pair": "invalid_pair"}),
    ({"points": [{"tenor": "1M", "forward_points": "0.001"},
                 {"tenor": "1M", "forward_points": "0.002"}]},
     {"/points/1/tenor": "duplicate_tenor"}),
    ({"points": [{"tenor": "SPOT", "forward_points": "0.0001"},
                 {"tenor": "1M", "forward_points": "0.002"}]},
     {"/points/0/forward_points": "spot_points_not_zero"}),
    ({"pair": "EURXYZ", "points": [{"tenor": "SPOT", "forward_points": "-0.5"},
                                   {"tenor": "SPOT", "forward_points": "0"}]},
     {"/pair": "invalid_pair", "/points/0/forward_points": "spot_points_not_zero",
      "/points/1/tenor": "duplicate_tenor"}),
])
def test_create_refusals_store_nothing(server, ws, c, over, errors):
    before = table_counts(server)
    assert_validation(c.post(PATH, json=body(**over)), errors)
    assert table_counts(server) == before


def test_spot_at_zero_written_any_way_is_zero(c):
    crv = create(c, points=[{"tenor": "SPOT", "forward_points": "0.000"},
                            {"tenor": "1W", "forward_points": "-0.0001"}])
    assert crv["points"][0]["forward_points"] == "0.000"


# ---- change and delete drafts only ------------------------------------------------------------

def test_update_a_draft(server, c):
    crv = create(c, spot_source="reference")
    r = c.patch(PATH + "/" + crv["id"], json={"name": "renamed", "points": [
        {"tenor": "1Y", "forward_points": "0.01"}, {"tenor": "ON", "forward_points": "-0.0002"}]})
    up = assert_json(r, 200)
    assert r.header("ETag") == '"v2"'
    assert up["name"] == "renamed" and up["version"] == 2
    assert up["spot_source"] == "reference"  # absent from the body: kept
    assert [(p["tenor"], p["forward_points"]) for p in up["points"]] == \
        [("ON", "-0.0002"), ("1Y", "0.01")]
    assert get(c, crv["id"]) == up
    # a stale If-Match changes nothing
    before = get(c, crv["id"])
    assert_problem(c.patch(PATH + "/" + crv["id"], json={"name": "x"},
                           headers={"If-Match": '"v1"'}), 412, "precondition_failed")
    assert get(c, crv["id"]) == before
    # the rules of create apply
    assert_validation(c.patch(PATH + "/" + crv["id"], json={"points": [
        {"tenor": "SPOT", "forward_points": "1"}, {"tenor": "1W", "forward_points": "0"}]}),
        {"/points/0/forward_points": "spot_points_not_zero"})
    assert get(c, crv["id"]) == before


def test_only_a_draft_changes_or_is_deleted(server, c):
    crv = create(c, pair="GBPUSD")
    assert_json(act(c, crv["id"], "activate"), 200)
    active = get(c, crv["id"])
    p = assert_problem(c.patch(PATH + "/" + crv["id"], json={"name": "x"}), 409,
                       "curve_not_editable")
    assert "active" in p["detail"]
    assert_problem(c.delete(PATH + "/" + crv["id"]), 409, "curve_not_editable")
    assert get(c, crv["id"]) == active
    assert_json(act(c, crv["id"], "archive"), 200)
    archived = get(c, crv["id"])
    assert_problem(c.patch(PATH + "/" + crv["id"], json={"name": "x"}), 409, "curve_not_editable")
    assert_problem(c.delete(PATH + "/" + crv["id"]), 409, "curve_not_editable")
    assert get(c, crv["id"]) == archived


def test_delete_a_draft(server, c):
    crv = create(c)
    assert_problem(c.delete(PATH + "/" + crv["id"], headers={"If-Match": '"v7"'}), 412,
                   "precondition_failed")
    get(c, crv["id"])
    r = c.delete(PATH + "/" + crv["id"], headers={"If-Match": '"v1"'})
    assert r.status == 204
    assert_problem(c.get(PATH + "/" + crv["id"]), 404, "not_found")
    assert_problem(c.delete(PATH + "/" + crv["id"]), 404, "not_found")
    assert [a[1] for a in audit_of(server, crv["id"])] == ["rate_curve.created", "rate_curve.deleted"]


# ---- activate and archive ------------------------------------------------------------------------

def events_of(server, rid):
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute("SELECT type, resource_version, data FROM events WHERE resource_id = ? "
                          "ORDER BY seq", (rid,)).fetchall()


def test_activation_replaces_the_pairs_active_curve(server, ws, c):
    first = create(c, pair="EURJPY", points=[{"tenor": "SPOT", "forward_points": "0"},
                                             {"tenor": "1M", "forward_points": "-0.12"}])
    r = act(c, first["id"], "activate")
    a1 = assert_json(r, 200)
    assert r.header("ETag") == '"v2"'
    assert a1["status"] == "active" and a1["version"] == 2
    assert TIMESTAMP.match(a1["activated_at"]) and a1["effective_from"] == a1["activated_at"]
    assert_problem(act(c, first["id"], "activate"), 409, "invalid_transition")
    other_pair = create(c, pair="JPYEUR")  # a curve prices its own pair only
    assert_json(act(c, other_pair["id"], "activate"), 200)

    second = create(c, pair="EURJPY")
    a2 = assert_json(act(c, second["id"], "activate"), 200)
    assert a2["status"] == "active"
    old = get(c, first["id"])
    assert old["status"] == "archived" and old["version"] == 3
    assert old["archived_at"] == a2["activated_at"]
    assert get(c, other_pair["id"])["status"] == "active"

    assert [(t, v) for t, v, _ in events_of(server, first["id"])] == \
        [("rate_curve.activated", 2), ("rate_curve.archived", 3)]
    data = json.loads(events_of(server, first["id"])[1][2])
    assert json.dumps(data).count('"archived"') >= 1
    assert [(t, v) for t, v, _ in events_of(server, second["id"])] == \
        [("rate_curve.activated", 2)]
    trail = audit_of(server, first["id"])
    assert [a[1:4] for a in trail] == [("rate_curve.created", None, "draft"),
                                       ("rate_curve.activated", None, "active"),
                                       ("rate_curve.archived", "active", "archived")]
    assert json.loads(trail[2][4])["replaced_by"] == second["id"]
    actives = [row for row in curve_rows(server, ws[0]) if row[1] == "active"]
    assert sorted(row[0] for row in actives) == sorted([second["id"], other_pair["id"]])


def test_archive(server, c):
    crv = create(c, pair="AUDUSD")
    a = assert_json(act(c, crv["id"], "archive"), 200)
    assert a["status"] == "archived" and TIMESTAMP.match(a["archived_at"])
    assert "activated_at" not in a
    before = get(c, crv["id"])
    assert_problem(act(c, crv["id"], "archive"), 409, "invalid_transition")
    assert_problem(act(c, crv["id"], "activate"), 409, "invalid_transition")
    assert get(c, crv["id"]) == before
    assert [t for t, _, _ in events_of(server, crv["id"])] == ["rate_curve.archived"]


# ---- list, isolation, scopes ----------------------------------------------------------------------

def test_list_filters_and_order(server):
    wid, _, c = server.new_workspace()
    made = [create(c, pair="USDCHF"), create(c, pair="USDCHF"), create(c, pair="NZDUSD")]
    assert_json(act(c, made[1]["id"], "activate"), 200)
    everything = assert_json(c.get(PATH), 200)
    ids = [x["id"] for x in everything["data"]]
    assert sorted(ids) == sorted(m["id"] for m in made)
    keys = [(x["created_at"], x["id"]) for x in everything["data"]]
    assert keys == sorted(keys, reverse=True)  # newest first
    chf = assert_json(c.get(PATH + "?pair=USDCHF"), 200)["data"]
    assert sorted(x["id"] for x in chf) == sorted([made[0]["id"], made[1]["id"]])
    active = assert_json(c.get(PATH + "?status=active"), 200)["data"]
    assert [x["id"] for x in active] == [made[1]["id"]]
    page = assert_json(c.get(PATH + "?limit=2"), 200)
    assert page["has_more"] and len(page["data"]) == 2
    rest = assert_json(c.get(PATH + "?limit=2&cursor=" + page["next_cursor"]), 200)
    assert [x["id"] for x in page["data"] + rest["data"]] == ids and not rest["has_more"]


def test_another_workspaces_curve_is_not_found(server, c):
    crv = create(c)
    _, _, other = server.new_workspace()
    for r in (other.get(PATH + "/" + crv["id"]), other.patch(PATH + "/" + crv["id"], json={"name": "x"}),
              other.delete(PATH + "/" + crv["id"]), act(other, crv["id"], "activate"),
              act(other, crv["id"], "archive"), other.get(PATH + "/" + UNKNOWN)):
        assert_problem(r, 404, "not_found")
    assert crv["id"] not in [x["id"] for x in assert_json(other.get(PATH), 200)["data"]]
    assert get(c, crv["id"])["version"] == 1


def test_scopes(server, ws):
    wid = ws[0]
    email = "viewer-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid, email, "viewer")
    viewer = server.client(token=server.login(email, USER_PASSWORD, workspace_id=wid)["access_token"])
    crv = create(ws[1])
    assert get(viewer, crv["id"])["id"] == crv["id"]
    assert_problem(viewer.post(PATH, json=body()), 403, "insufficient_scope")
    assert_problem(act(viewer, crv["id"], "activate"), 403, "insufficient_scope")
    assert_problem(viewer.delete(PATH + "/" + crv["id"]), 403, "insufficient_scope")
    assert get(ws[1], crv["id"])["status"] == "draft"


EXPECTED = [
    # a Wednesday, spot on the 31st: months end on their last day; 2026-01-31 is a Saturday
    (datetime.date(2025, 1, 29), "EURUSD",
     {"ON": "2025-01-29", "TN": "2025-01-30", "SPOT": "2025-01-31", "1W": "2025-02-07",
      "1M": "2025-02-28", "3M": "2025-04-30", "6M": "2025-07-31", "1Y": "2026-02-02"}),
    # a Friday: TN over the weekend, spot on Tuesday
    (datetime.date(2025, 3, 14), "EURUSD",
     {"ON": "2025-03-14", "TN": "2025-03-17", "SPOT": "2025-03-18", "1W": "2025-03-25",
      "1M": "2025-04-18", "3M": "2025-06-18", "6M": "2025-09-18", "1Y": "2026-03-18"}),
    # USDCAD settles one weekday after the trade
    (datetime.date(2025, 3, 14), "USDCAD",
     {"ON": "2025-03-14", "TN": "2025-03-17", "SPOT": "2025-03-17", "1W": "2025-03-24",
      "1M": "2025-04-17", "3M": "2025-06-17", "6M": "2025-09-17", "1Y": "2026-03-17"}),
    # a Saturday: ON rolls to Monday, like TN
    (datetime.date(2025, 3, 15), "EURUSD",
     {"ON": "2025-03-17", "TN": "2025-03-17", "SPOT": "2025-03-18", "1W": "2025-03-25",
      "1M": "2025-04-18", "3M": "2025-06-18", "6M": "2025-09-18", "1Y": "2026-03-18"}),
]


def test_tenor_value_dates_by_hand():
    for day, pair, expected in EXPECTED:
        assert {k: v.isoformat() for k, v in tenor_dates(day, pair).items()} == expected


def test_tenor_value_dates_of_the_day(make_server):
    """The server's tenors on each pinned day are the hand-checked ones, and a curve read again
    shows them. A server of its own: the clock only moves forward after the first pin (the
    rate limiter's windows follow it)."""
    server = make_server()
    for day, pair, expected in EXPECTED:
        pin(server, day)
        owner = signed_in_owner(server)
        crv = create(owner, pair=pair, points=ALL_POINTS)
        assert [p["tenor"] for p in crv["points"]] == TENORS  # tenor order, whatever was sent
        assert {p["tenor"]: p["value_date"] for p in crv["points"]} == expected
        assert {p["tenor"]: p["forward_points"] for p in crv["points"]} == \
            {p["tenor"]: p["forward_points"] for p in ALL_POINTS}
        assert get(owner, crv["id"]) == crv


def test_tenor_value_dates_move_with_the_day(server, c):
    """Today's dates (the real clock), on every read: a curve saved with other days' dates
    (as stored a week ago) reads with today's."""
    crv = create(c, points=ALL_POINTS)
    today = datetime.datetime.now(datetime.timezone.utc).date()
    want = {k: v.isoformat() for k, v in tenor_dates(today).items()}
    assert {p["tenor"]: p["value_date"] for p in crv["points"]} == want
    db = open_db(server)
    with contextlib.closing(db):
        stale = [dict(p, value_date="2001-01-01") for p in crv["points"]]
        db.execute("UPDATE rate_curves SET points = ? WHERE id = ?", (json.dumps(stale), crv["id"]))
        db.commit()
    assert {p["tenor"]: p["value_date"] for p in get(c, crv["id"])["points"]} == want
    listed = assert_json(c.get(PATH + "?limit=100"), 200)["data"]
    assert {p["tenor"]: p["value_date"]
            for p in next(x for x in listed if x["id"] == crv["id"])["points"]} == want
