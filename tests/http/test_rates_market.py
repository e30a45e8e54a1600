"""The embedded sandbox FX market (handlers/rates_market.c): turned on with
--fx-market-interval-ms (the test servers run with it off), it ticks every pair into live rates
every workspace sees (source provider:sandbox), bid <= mid <= ask, kept as history; and tick n
of a pair is a function of (seed, pair, n) alone: the walk is recomputed here from its
documented definition and two servers with the same seed match it tick for tick. Two instances
on one PostgreSQL database tick it once per interval between them, not once each."""

import datetime
import time
from urllib.parse import urlencode

import pytest

import conftest
from helpers import assert_json, open_db
from conftest import ENGINE, run_cli, base_env

M = (1 << 64) - 1
PAIRS = {"EURUSD": (108425, 5), "GBPUSD": (129425, 5), "USDJPY": (148515, 3),
         "EURGBP": (83780, 5), "USDCHF": (88265, 5), "AUDUSD": (63120, 5),
         "USDCAD": (143810, 5), "EURJPY": (161025, 3)}


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def fnv1a(s):
    h = 0xCBF29CE484222325
    for ch in s.encode():
        h = ((h ^ ch) * 0x100000001B3) & M
    return h


def walk(seed, pair, n):
    """Ticks 1..n of pair: [(bid, ask, mid)] in units of 10^-scale (README: the walk)."""
    start, _ = PAIRS[pair]
    mid, out = start, []
    for k in range(1, n + 1):
        h = splitmix64(splitmix64(splitmix64(seed & M) ^ fnv1a(pair)) ^ k)
        d = h % 21 - 10
        nxt = mid + d
        if nxt < start // 2 or nxt > start * 2:
            nxt = mid - d
        mid = nxt
        half = 5 + (h >> 32) % 11
        out.append((mid - half, mid + half, mid))
    return out


def text(units, scale):
    """The canonical decimal text (runtime/decimal.h: no trailing zero)."""
    s = "%d.%0*d" % (units // 10 ** scale, scale, units % 10 ** scale)
    return s.rstrip("0").rstrip(".")


def ts(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (dt.microsecond // 1000)


def day_bars(c, pair, field="mid"):
    now = datetime.datetime.now(datetime.timezone.utc)
    q = urlencode({"interval": "1d", "from": ts(now - datetime.timedelta(days=2)),
                   "to": ts(now + datetime.timedelta(days=2)), "field": field})
    r = c.get("/v1/rates/%s/history?%s" % (pair, q))
    return [] if r.status == 404 else assert_json(r, 200)["data"]


def wait_ticks(c, pair, n, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bars = day_bars(c, pair)
        if sum(b["samples"] for b in bars) >= n:
            return
        time.sleep(0.1)
    raise AssertionError("fewer than %d ticks of %s within %d s" % (n, pair, timeout))


def check_against_walk(c, seed, pair):
    """The day bars of each side agree with ticks 1..n of the walk (n: their samples, read in
    one statement each, so ticks recorded meanwhile show in the next reading only)."""
    _, scale = PAIRS[pair]
    for side, field in enumerate(("bid", "ask", "mid")):
        bars = day_bars(c, pair, field)
        n = sum(b["samples"] for b in bars)
        ticks = walk(seed, pair, n)
        vals = [t[side] for t in ticks]
        assert bars[0]["open"] == text(vals[0], scale), (pair, field)
        assert bars[-1]["close"] == text(vals[-1], scale), (pair, field, n)
        assert max(b["high"] for b in bars) is not None
        assert {b["high"] for b in bars} <= {text(v, scale) for v in vals}
        assert text(max(vals), scale) in {b["high"] for b in bars}
        assert text(min(vals), scale) in {b["low"] for b in bars}


def market_server(make_server, seed, interval=40, **kw):
    return make_server(extra_args=["--fx-market-interval-ms", str(interval),
                                   "--fx-market-seed", str(seed)], **kw)


def test_the_walk_differs_by_seed_and_pair():
    assert walk(7, "EURUSD", 5) != walk(8, "EURUSD", 5)
    assert [t[2] for t in walk(7, "EURUSD", 3)] != [t[2] for t in walk(7, "GBPUSD", 3)]


def test_market_ticks_every_pair_into_live_rates(make_server):
    s = market_server(make_server, seed=7)
    _, _, c = s.new_workspace()
    wait_ticks(c, "EURJPY", 3)
    rates = assert_json(c.get("/v1/rates?limit=100"), 200)["data"]
    assert sorted(d["pair"] for d in rates) == sorted(PAIRS)
    from decimal import Decimal
    for d in rates:
        assert d["source"] == "provider:sandbox" and d["rate_type"] == "live"
        assert Decimal(d["bid"]) <= Decimal(d["mid"]) <= Decimal(d["ask"]), d
        assert Decimal(d["bid"]) < Decimal(d["ask"])
    before = sum(b["samples"] for b in day_bars(c, "EURUSD"))
    wait_ticks(c, "EURUSD", before + 3)  # history grows
    one = assert_json(c.get("/v1/rates/USDJPY"), 200)
    time.sleep(0.3)
    assert assert_json(c.get("/v1/rates/USDJPY"), 200)["as_of"] > one["as_of"]
    for pair in ("EURUSD", "USDJPY"):
        check_against_walk(c, 7, pair)


def test_two_servers_with_one_seed_make_the_same_ticks(make_server):
    a = market_server(make_server, seed=424242, interval=30)
    b = market_server(make_server, seed=424242, interval=70)
    ca, cb = a.new_workspace()[2], b.new_workspace()[2]
    wait_ticks(ca, "GBPUSD", 6)
    wait_ticks(cb, "GBPUSD", 4)
    for c in (ca, cb):
        check_against_walk(c, 424242, "GBPUSD")
        check_against_walk(c, 424242, "USDCAD")
    # the first tick of each: the same figures whatever their timing
    assert day_bars(ca, "GBPUSD")[0]["open"] == day_bars(cb, "GBPUSD")[0]["open"]


def test_the_market_goes_on_after_a_restart(make_server):
    s = market_server(make_server, seed=99, interval=40)
    _, _, c = s.new_workspace()
    wait_ticks(c, "AUDUSD", 3)
    s.stop()
    s.start()
    c = s.new_workspace()[2]
    n = sum(b["samples"] for b in day_bars(c, "AUDUSD"))
    wait_ticks(c, "AUDUSD", n + 2)
    check_against_walk(c, 99, "AUDUSD")  # ticks go on from n + 1, not from 1 again


def walk_ticks(db):
    return dict(db.execute("SELECT pair, tick FROM fx_market_walks").fetchall())


@pytest.mark.skipif(ENGINE != "postgresql",
                    reason="several instances share a database on PostgreSQL only")
def test_two_instances_tick_the_market_once_per_interval(make_server, tmp_path_factory):
    """Both instances run the market's job on one database, out of step with each other: each
    pair still ticks about once per interval, never twice within nine tenths of one (a round
    skips a pair another instance ticked that recently), and rounds that meet give way without
    a log line. Before, every instance ticked every pair (1.9 ticks an interval with two at
    1000 ms), and at 200 ms the rounds failed on each other's rows (error lines)."""
    interval = 200
    a = market_server(make_server, seed=5, interval=interval)
    b_data = tmp_path_factory.mktemp("second") / "data"
    conftest._databases[str(b_data.resolve())] = a.database  # b runs on a's database
    b = market_server(make_server, seed=5, interval=interval, data_dir=b_data)
    db = open_db(a)
    try:
        time.sleep(0.5)  # both instances' rounds under way
        t0, before = time.monotonic(), walk_ticks(db)
        time.sleep(4.0)
        took, after = time.monotonic() - t0, walk_ticks(db)
    finally:
        db.close()
    ticked = {p: after[p] - before[p] for p in PAIRS}
    # one round ticks every pair due, and every pair is due together
    assert len(set(ticked.values())) == 1, ticked
    n = ticked["EURUSD"]
    most = int(took * 1000 / (interval * 0.9)) + 1
    least = int(took * 1000 / interval * 0.5)  # slack for a loaded machine (ASan, 2 cores)
    print("two instances at %d ms: %d ticks in %.2f s (at most %d)" % (interval, n, took, most))
    assert least <= n <= most, (n, took, least, most)
    lines = [l for s in (a, b) for l in s.log_text().splitlines() if "market: " in l]
    assert not lines, lines[:5]
    # every tick recorded once: the history's samples are ticks 1..n of the walk
    check_against_walk(a.new_workspace()[2], 5, "EURUSD")


def test_market_flags():
    r = run_cli(["--fx-market-interval-ms", "-1", "--version"], env=base_env())
    assert r.returncode == 2 and "fx-market-interval-ms" in r.stderr
    r = run_cli(["--help"], env=base_env())
    assert "--fx-market-interval-ms" in r.stdout and "--fx-market-seed" in r.stdout
