"""Live FX rates (handlers/rates_live.c, rates_live_read.c): pushRates with its checks (all or
nothing, the computed mid rounded half-even, the spot value date), the current rate (a later
as_of wins, an older one only enters the history), getRate, listRates with its filters and
cursor, getRateHistory from OHLC bars (rates arriving out of order, the workspace's and the
market's merged), and tenant isolation. The sandbox market has tests of its own
(test_rates_market.py); here it is off (conftest.base_env)."""

import contextlib
import datetime
import uuid
from urllib.parse import urlencode

import pytest

from helpers import (QUERY_PARAM_CODE, QUERY_PARAM_STATUS, assert_json, assert_problem,
                     assert_validation, audit_of, open_db, table_counts)

PATH = "/v1/rates"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def ts(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (dt.microsecond // 1000)


def spot(pair, day):
    """Two weekdays after day (one for USDCAD / CADUSD)."""
    left = 1 if pair in ("USDCAD", "CADUSD") else 2
    while left:
        day += datetime.timedelta(days=1)
        if day.weekday() < 5:
            left -= 1
    return day.isoformat()


def push(c, *rates, status=200):
    r = c.post(PATH, json={"rates": list(rates)})
    if status != 200:
        return r
    return assert_json(r, 200)


def rate(pair="EURUSD", bid="1.0841500000", ask="1.0843500000", at=None, **over):
    b = {"pair": pair, "bid": bid, "ask": ask, "as_of": ts(at or utc_now())}
    b.update(over)
    return b


def q(path, **params):
    items = []
    for k, v in params.items():
        for x in (v if isinstance(v, list) else [v]):
            items.append((k, x))
    return path + ("?" + urlencode(items) if items else "")


@pytest.fixture
def ws(server):
    """A fresh workspace per test (rates are per pair, so tests must not share one)."""
    wid, _, c = server.new_workspace()
    return wid, c


def test_push_records_current_rates_with_computed_mid_and_spot_date(server, ws):
    wid, c = ws
    at = utc_now() - datetime.timedelta(seconds=5)
    got = push(c, rate(at=at, source="provider:refinitiv"),
               rate("GBPUSD", "1.2941", "1.2944", at=at, mid="1.29425"),
               rate("USDCAD", "1.4381", "1.4383", at=at, value_date="2030-01-02"))
    assert got["object"] == "fx_rate_push"
    assert got["received"] == 3 and got["current_updated"] == 3
    eur, gbp, cad = got["data"]
    # (bid + ask) / 2 to 10 places; given figures kept exactly as written
    assert (eur["bid"], eur["ask"], eur["mid"]) == ("1.0841500000", "1.0843500000", "1.0842500000")
    assert (gbp["bid"], gbp["ask"], gbp["mid"]) == ("1.2941", "1.2944", "1.29425")
    assert eur["value_date"] == spot("EURUSD", at.date())
    assert cad["value_date"] == "2030-01-02"
    assert eur["source"] == "provider:refinitiv" and gbp["source"] == "manual"
    assert eur["workspace_id"] == wid and eur["rate_type"] == "live"
    assert (eur["base_currency"], eur["quote_currency"]) == ("EUR", "USD")
    assert eur["as_of"] == ts(at)
    cur = assert_json(c.get(PATH + "/GBPUSD"), 200)
    assert cur == gbp
    # the audit record names the pairs
    assert [a for a in audit_of(server, "EURUSD,GBPUSD,USDCAD") if a[1] == "fx_rates.pushed"]


def test_computed_mid_is_rounded_half_even(ws):
    _, c = ws
    got = push(c, rate("EURUSD", "1.0000000001", "1.0000000002"),
               rate("GBPUSD", "1.0000000002", "1.0000000003"),
               rate("USDJPY", "148.5", "148.6"))
    # 1.00000000015 -> ...02 (to the even digit), 1.00000000025 -> ...02, exact otherwise
    assert [d["mid"] for d in got["data"]] == ["1.0000000002", "1.0000000002", "148.5500000000"]


def test_spot_date_skips_weekends():
    # the rule the server applies, checked on known days (2025-03-14 was a Friday)
    assert spot("EURUSD", datetime.date(2025, 3, 14)) == "2025-03-18"
    assert spot("USDCAD", datetime.date(2025, 3, 14)) == "2025-03-17"
    assert spot("EURUSD", datetime.date(2025, 3, 15)) == "2025-03-18"


def test_an_older_rate_only_enters_the_history(ws):
    _, c = ws
    now = utc_now()
    newer = push(c, rate(bid="1.1", ask="1.2", at=now - datetime.timedelta(seconds=10)))
    assert newer["current_updated"] == 1
    older = push(c, rate(bid="1.3", ask="1.4", at=now - datetime.timedelta(seconds=70)))
    assert older["current_updated"] == 0 and older["received"] == 1
    assert assert_json(c.get(PATH + "/EURUSD"), 200)["mid"] == newer["data"][0]["mid"]
    same = push(c, rate(bid="1.15", ask="1.25", at=now - datetime.timedelta(seconds=10)))
    assert same["current_updated"] == 1  # the same as_of: the later push is current
    assert assert_json(c.get(PATH + "/EURUSD"), 200)["bid"] == "1.15"


@pytest.mark.parametrize("bad,pointer,code", [
    ({"pair": "EUREUR"}, "/rates/1/pair", "invalid_pair"),
    ({"pair": "EURABC"}, "/rates/1/pair", "invalid_pair"),
    ({"bid": "1.2", "ask": "1.1"}, "/rates/1/ask", "bid_above_ask"),
    ({"bid": "1.1", "ask": "1.2", "mid": "1.25"}, "/rates/1/mid", "mid_outside_spread"),
    ({"bid": "1.1", "ask": "1.2", "mid": "1.09"}, "/rates/1/mid", "mid_outside_spread"),
    ({"as_of": "future"}, "/rates/1/as_of", "as_of_in_future"),
    ({"as_of": "old"}, "/rates/1/as_of", "as_of_too_old"),
    ({"as_of": "duplicate"}, "/rates/1/as_of", "duplicate_rate"),
])
def test_refusals_record_nothing(server, ws, bad, pointer, code):
    _, c = ws
    at = utc_now() - datetime.timedelta(seconds=1)
    good = rate("GBPUSD", "1.29", "1.30", at=at)
    second = rate("EURUSD", at=at + datetime.timedelta(milliseconds=1))
    bad = dict(bad)
    when = bad.pop("as_of", None)
    if when == "future":
        second["as_of"] = ts(utc_now() + datetime.timedelta(seconds=120))
    elif when == "old":
        second["as_of"] = ts(utc_now() - datetime.timedelta(days=7, seconds=60))
    elif when == "duplicate":
        second = dict(good)
    second.update(bad)
    before = table_counts(server)
    r = push(c, good, second, status=422)
    assert_validation(r, {pointer: code})
    assert table_counts(server) == before
    assert_problem(c.get(PATH + "/GBPUSD"), 404, "not_found")


def test_a_bid_equal_to_the_ask_and_an_as_of_a_minute_ahead_are_fine(ws):
    _, c = ws
    got = push(c, rate(bid="1.5", ask="1.5", at=utc_now() + datetime.timedelta(seconds=50)))
    assert got["data"][0]["mid"] == "1.5000000000"


def test_get_rate_answers(ws):
    _, c = ws
    assert_problem(c.get(PATH + "/EURUSD"), 404, "not_found")
    push(c, rate())
    assert_json(c.get(PATH + "/EURUSD?rate_type=live"), 200)
    b = assert_problem(c.get(PATH + "/EURUSD?value_date=2030-01-02"), QUERY_PARAM_STATUS,
                       QUERY_PARAM_CODE)
    assert b["errors"][0]["pointer"] == "/query/value_date"
    for pair in ("EUREUR", "EURABC"):
        b = assert_validation(c.get(PATH + "/" + pair), {"/path/pair": "invalid_pair"},
                              status=400, code="invalid_request")
    # the inverse pair has no rate of its own here (rates_live_mid inverts; the API does not)
    assert_problem(c.get(PATH + "/USDEUR"), 404, "not_found")
    # no active curve: no custom rate
    assert_problem(c.get(PATH + "/EURUSD?rate_type=custom"), 404, "not_found")


def test_list_filters_and_pages(ws):
    _, c = ws
    at = utc_now() - datetime.timedelta(seconds=3)
    pairs = ["GBPUSD", "EURUSD", "USDJPY", "EURGBP", "AUDUSD"]
    push(c, *[rate(p, "1.1", "1.2", at=at) for p in pairs])
    page = assert_json(c.get(PATH), 200)
    assert [d["pair"] for d in page["data"]] == sorted(pairs)
    assert page["has_more"] is False and page["next_cursor"] is None
    assert {d["rate_type"] for d in page["data"]} == {"live"}
    got = [d["pair"] for d in assert_json(c.get(q(PATH, pair=["USDJPY", "EURUSD", "CHFJPY"])),
                                           200)["data"]]
    assert got == ["EURUSD", "USDJPY"]
    assert [d["pair"] for d in assert_json(c.get(q(PATH, base_currency="EUR")), 200)["data"]] \
        == ["EURGBP", "EURUSD"]
    assert [d["pair"] for d in assert_json(c.get(q(PATH, quote_currency="USD")), 200)["data"]] \
        == ["AUDUSD", "EURUSD", "GBPUSD"]
    assert assert_json(c.get(q(PATH, rate_type="reference")), 200)["data"] == []
    assert assert_json(c.get(q(PATH, rate_type="live", base_currency="USD")), 200)["data"][0][
        "pair"] == "USDJPY"
    # pages of two, a cursor bound to its filters
    seen, cursor = [], None
    while True:
        page = assert_json(c.get(q(PATH, limit=2, **({"cursor": cursor} if cursor else {}))), 200)
        seen += [d["pair"] for d in page["data"]]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
        assert len(page["data"]) == 2
    assert seen == sorted(pairs)
    first = assert_json(c.get(q(PATH, limit=2)), 200)
    assert_problem(c.get(q(PATH, limit=2, cursor=first["next_cursor"], base_currency="EUR")),
                   400, "invalid_cursor")
    b = assert_problem(c.get(q(PATH, pair=["EURUSD", "EUREUR"])), QUERY_PARAM_STATUS,
                       QUERY_PARAM_CODE)
    assert [(e["pointer"], e["code"]) for e in b["errors"]] == [("/query/pair", "invalid_pair")]


def test_rates_are_the_workspace_s_own(server, ws):
    _, c = ws
    push(c, rate("EURCHF", "0.95", "0.96"))
    _, _, other = server.new_workspace()
    assert assert_json(other.get(PATH), 200)["data"] == []
    assert_problem(other.get(PATH + "/EURCHF"), 404, "not_found")
    now = ts(utc_now())
    assert_problem(other.get(q(PATH + "/EURCHF/history", interval="1m", to=now,
                               **{"from": ts(utc_now() - datetime.timedelta(hours=1))})),
                   404, "not_found")


def history(c, pair, interval, start, end, **kw):
    return c.get(q(PATH + "/%s/history" % pair, interval=interval, to=ts(end),
                   **{"from": ts(start)}, **kw))


def test_history_bars(ws):
    _, c = ws
    # a minute boundary a few minutes back, so that every rate is within the last 7 days
    base = utc_now().replace(second=0, microsecond=0) - datetime.timedelta(minutes=5)
    m = datetime.timedelta(minutes=1)
    s = datetime.timedelta(seconds=1)
    # minute 0: 1.10 at :10, 1.30 at :40, 1.05 at :20 (out of order), then 1.20 at :05
    push(c, rate("EURUSD", "1.10", "1.10", at=base + 10 * s))
    push(c, rate("EURUSD", "1.30", "1.32", at=base + 40 * s))
    push(c, rate("EURUSD", "1.05", "1.06", at=base + 20 * s),
         rate("EURUSD", "1.20", "1.21", at=base + 5 * s))
    # minute 2: one rate
    push(c, rate("EURUSD", "1.25", "1.27", at=base + 2 * m + 30 * s))
    page = assert_json(history(c, "EURUSD", "1m", base - m, base + 4 * m), 200)
    assert page["object"] == "fx_rate_history" and page["pair"] == "EURUSD"
    assert (page["rate_type"], page["field"], page["interval"]) == ("live", "mid", "1m")
    pts = page["data"]
    assert [p["start"] for p in pts] == [ts(base), ts(base + 2 * m)]
    p0 = pts[0]
    # mids: 1.20 (:05) 1.10 (:10) 1.055 (:20) 1.31 (:40)
    assert (p0["open"], p0["high"], p0["low"], p0["close"], p0["samples"]) == (
        "1.2050000000", "1.3100000000", "1.0550000000", "1.3100000000", 4)
    assert (pts[1]["open"], pts[1]["close"], pts[1]["samples"]) == (
        "1.2600000000", "1.2600000000", 1)
    bid = assert_json(history(c, "EURUSD", "1m", base, base + 4 * m, field="bid"), 200)
    assert bid["field"] == "bid"
    assert (bid["data"][0]["open"], bid["data"][0]["high"], bid["data"][0]["low"]) == (
        "1.20", "1.30", "1.05")
    # 1h / 1d: the same rates in one or two buckets
    hour = assert_json(history(c, "EURUSD", "1h", base - datetime.timedelta(hours=2),
                               base + datetime.timedelta(hours=1)), 200)["data"]
    assert sum(p["samples"] for p in hour) == 5
    assert hour[0]["low"] == "1.0550000000"
    day = assert_json(history(c, "EURUSD", "1d", base - datetime.timedelta(days=2),
                              base + datetime.timedelta(days=1), field="ask"), 200)["data"]
    assert sum(p["samples"] for p in day) == 5 and max(p["high"] for p in day) == "1.32"
    # the range is half-open by bucket start
    assert [p["start"] for p in assert_json(history(c, "EURUSD", "1m", base, base + 2 * m),
                                            200)["data"]] == [ts(base)]
    # one point a page
    page = assert_json(history(c, "EURUSD", "1m", base, base + 4 * m, limit=1), 200)
    assert page["has_more"] and len(page["data"]) == 1
    nxt = assert_json(history(c, "EURUSD", "1m", base, base + 4 * m, limit=1,
                              cursor=page["next_cursor"]), 200)
    assert [p["start"] for p in nxt["data"]] == [ts(base + 2 * m)] and not nxt["has_more"]
    assert_problem(history(c, "EURUSD", "1m", base, base + 3 * m, limit=1,
                           cursor=page["next_cursor"]), 400, "invalid_cursor")


def test_history_refusals(ws):
    _, c = ws
    now = utc_now()
    push(c, rate())
    d = datetime.timedelta
    for args, pointer, code in [
        (("1m", now, now), "/query/to", "invalid_range"),
        (("1m", now, now - d(minutes=1)), "/query/to", "invalid_range"),
        (("1m", now - d(days=7, seconds=1), now), "/query/to", "range_too_large"),
        (("1h", now - d(days=367), now), "/query/to", "range_too_large"),
        (("1d", now - d(days=7306), now), "/query/to", "range_too_large"),
        (("1m", now - d(days=1), now, "EURABC"), "/path/pair", "invalid_pair"),
    ]:
        interval, start, end = args[:3]
        pair = args[3] if len(args) > 3 else "EURUSD"
        assert_validation(history(c, pair, interval, start, end), {pointer: code}, status=400,
                          code="invalid_request")
    assert_json(history(c, "EURUSD", "1m", now - d(days=7), now), 200)
    assert_validation(history(c, "EURUSD", "1h", now - d(days=1), now, rate_type="reference"),
                      {"/query/interval": "interval_not_available"}, status=400,
                      code="invalid_request")
    assert_problem(history(c, "GBPUSD", "1m", now - d(days=1), now), 404, "not_found")


def test_market_rates_merge_with_the_workspace_s(server, ws):
    """A market rate (workspace_id NULL) is seen by every workspace; the later as_of of the
    workspace's own and the market's is current, and history merges both."""
    wid, c = ws
    base = utc_now().replace(second=0, microsecond=0) - datetime.timedelta(minutes=3)
    s = datetime.timedelta(seconds=1)
    pair = "NZDUSD"
    push(c, rate(pair, "0.60", "0.60", at=base + 20 * s))
    db = open_db(server)
    with contextlib.closing(db):
        # a market current rate later than the workspace's, and its 1m bar
        db.execute("INSERT INTO fx_live_rates (workspace_id, pair, bid, ask, mid, source, as_of, "
                   "value_date) VALUES (NULL, ?, '0.7', '0.7', '0.7', 'provider:sandbox', ?, "
                   "'2030-01-02')", (pair, ts(base + 30 * s)))
        db.execute("INSERT INTO fx_rate_bars (workspace_id, pair, bucket, start, first_as_of, "
                   "last_as_of, bid_open, bid_high, bid_low, bid_close, ask_open, ask_high, "
                   "ask_low, ask_close, mid_open, mid_high, mid_low, mid_close, samples) VALUES "
                   "(NULL, ?, '1m', ?, ?, ?, '0.5', '0.7', '0.5', '0.7', '0.5', '0.7', '0.5', "
                   "'0.7', '0.5', '0.7', '0.5', '0.7', 2)",
                   (pair, ts(base), ts(base + 10 * s), ts(base + 30 * s)))
        db.commit()
    cur = assert_json(c.get(PATH + "/" + pair), 200)
    assert (cur["mid"], cur["source"], cur["workspace_id"]) == ("0.7", "provider:sandbox", wid)
    listed = assert_json(c.get(q(PATH, pair=pair)), 200)["data"]
    assert [(d["mid"], d["source"]) for d in listed] == [("0.7", "provider:sandbox")]
    p = assert_json(history(c, pair, "1m", base, base + datetime.timedelta(minutes=1)),
                    200)["data"]
    assert [(x["open"], x["high"], x["low"], x["close"], x["samples"]) for x in p] == [
        ("0.5", "0.7", "0.5", "0.7", 3)]
    # another workspace sees the market's rate, not this one's
    _, _, other = server.new_workspace()
    assert assert_json(other.get(PATH + "/" + pair), 200)["workspace_id"] != wid
    p = assert_json(history(other, pair, "1m", base, base + datetime.timedelta(minutes=1)),
                    200)["data"]
    assert p[0]["samples"] == 2
    # a later push of the workspace's own takes over again
    push(c, rate(pair, "0.61", "0.61", at=base + 40 * s))
    assert assert_json(c.get(PATH + "/" + pair), 200)["mid"] == "0.6100000000"


def test_push_needs_rates_write(server, ws):
    wid, c = ws
    email = "viewer-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid, email, "viewer")
    from conftest import USER_PASSWORD
    tok = server.login(email, USER_PASSWORD, workspace_id=wid)["access_token"]
    v = server.client(token=tok)
    assert_problem(v.post(PATH, json={"rates": [rate()]}), 403)
    assert_json(v.get(PATH), 200)
