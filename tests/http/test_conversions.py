"""The conversions API (handlers/conversions*.c): quotes priced from the live mid less the
workspace's spread with the documented rounding (sell fixed: floor; buy fixed: ceiling, in ISO
4217 minor units), checked against an exact rational computation (Python's fractions) over
seeded random amounts, rates and currencies of exponents 0, 2 and 3; every quote check with its
code and pointer; executing a quote once (also from many connections at once), its terms
repeated, expiry with the test clock, a value date in a closed period; cancelling; the
settlement job at the 12:00 UTC cut-off (funded: settled with one balanced ledger entry through
the FX accounts; unfunded: overdue, settled once funded); the history (filters, CSV) and the
positions; a `conversion` journal source. Every refusal changes nothing.

Live rates are pushed through POST /v1/rates (the rates API) as of the server's clock. The
workspace's spread is set in its row (treasury_fx_spread_bps), as PATCH /workspace stores it."""

import contextlib
import csv
import datetime
import io
import random
import re
import threading
import time
import uuid
from fractions import Fraction

import pytest

from conftest import USER_PASSWORD, Servers
from helpers import assert_json, assert_problem, assert_validation, audit_of, open_db, table_counts

QUOTE = "/v1/conversions/quote"
EXECUTE = "/v1/conversions/execute"
LIST = "/v1/conversions"
POSITIONS = "/v1/conversions/positions"
AMOUNT_MAX = 2 ** 53 - 1
EXPONENT = {"JPY": 0, "KRW": 0, "EUR": 2, "USD": 2, "GBP": 2, "CHF": 2, "KWD": 3, "BHD": 3}
OFFSET = {"s": 0}  # the server clock's offset from real time, in seconds


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """A server whose settlement job looks every 50 ms (it settles conversions)."""
    servers = Servers(tmp_path_factory)
    s = servers(extra_env={"TREASURY_SETTLEMENT_INTERVAL_MS": 50})
    yield s
    servers.close()


@pytest.fixture
def clock(server):
    """Moves the server's clock forward by seconds (never back: rate limits and tokens are
    kept by time, so the module's clock only ever advances; each test reads the server's
    now as real time plus the offset)."""
    def move(seconds):
        assert seconds >= 0
        OFFSET["s"] += seconds
        server.move_clock(OFFSET["s"])
    return move


def server_now():
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=OFFSET["s"])


def stamp(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def spot_of(day, days=2):
    d = day
    while days:
        d += datetime.timedelta(days=1)
        if d.weekday() < 5:
            days -= 1
    return d


def weekday_after(d):
    d += datetime.timedelta(days=1)
    while d.weekday() >= 5:
        d += datetime.timedelta(days=1)
    return d


class Ws(tuple):
    """(workspace id, owner client), and the owner's e-mail (to sign in again once the clock
    moved past the token's lifetime)."""
    email = None


@pytest.fixture
def ws(server):
    email = "owner-%s@example.com" % uuid.uuid4().hex[:10]
    wid = server.create_workspace("ws-" + email[6:16], email, password=USER_PASSWORD)
    w = Ws((wid, server.client(token=server.login(email, USER_PASSWORD,
                                                   workspace_id=wid)["access_token"])))
    w.email = email
    return w


def relogin(server, w):
    """The owner's client with a token of the server's current time."""
    return server.client(token=server.login(w.email, USER_PASSWORD,
                                            workspace_id=w[0])["access_token"])


def push(c, pair, mid, as_of=None):
    """A live rate of pair with that mid (bid = ask = mid), as of the server's now."""
    r = c.post("/v1/rates", json={"rates": [{"pair": pair, "bid": mid, "ask": mid, "mid": mid,
                                             "as_of": as_of or stamp(server_now()),
                                             "source": "manual"}]})
    assert_json(r, 200)


def set_spread(server, wid, bps):
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("UPDATE workspaces SET treasury_fx_spread_bps = ? WHERE id = ?", (bps, wid))
        db.commit()


def quote(c, sell="EUR", buy="USD", side="sell", amount=100000000, **over):
    body = {"sell_currency": sell, "buy_currency": buy, "fixed_side": side,
            side + "_amount": amount}
    body.update(over)
    return c.post(QUOTE, json=body)


def terms(q, **over):
    b = {k: q[k] for k in ("sell_currency", "buy_currency", "sell_amount", "buy_amount",
                           "value_date")}
    b["quote_id"] = q["id"]
    b.update(over)
    return b


def execute(c, q, **over):
    return c.post(EXECUTE, json=terms(q, **over))


# ---- the exact computation the spec documents -------------------------------------------------

def half_even(x, places):
    """x (a Fraction) rounded half-even to `places` decimals, as a Fraction."""
    scaled = x * 10 ** places
    n = scaled.numerator // scaled.denominator
    rest = scaled - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    return Fraction(n, 10 ** places)


def ceil(x):
    return -((-x.numerator) // x.denominator)


def floor(x):
    return x.numerator // x.denominator


def expected(mid, bps, side, amount, sell, buy):
    """(rate, sell_amount, buy_amount) per the spec: rate = mid x (1 - bps/10000) half-even to
    10 places; sell fixed: buy = floor(sell x rate); buy fixed: sell = ceil(buy / rate), in
    minor units."""
    rate = half_even(Fraction(mid) * (1 - Fraction(bps, 10000)), 10)
    es, eb = EXPONENT[sell], EXPONENT[buy]
    if side == "sell":
        return rate, amount, floor(Fraction(amount, 10 ** es) * rate * 10 ** eb)
    return rate, ceil(Fraction(amount, 10 ** eb) / rate * 10 ** es), amount


def fixed10(x):
    return "%d.%010d" % (floor(x), floor((x - floor(x)) * 10 ** 10))


# ---- quotes -----------------------------------------------------------------------------------

def test_a_sell_quote_rounds_the_bought_amount_down_and_locks_the_price(server, ws):
    wid, c = ws
    set_spread(server, wid, 5)
    push(c, "EURUSD", "1.08425")
    r = quote(c, amount=100000000)
    q = assert_json(r, 201)
    rate, _, buy = expected("1.08425", 5, "sell", 100000000, "EUR", "USD")
    assert q["rate"] == fixed10(rate) == "1.0837078750"
    assert q["mid_rate"] == "1.0842500000"
    assert q["buy_amount"] == buy == 108370787 and q["sell_amount"] == 100000000
    assert q["spread_bps"] == 5 and q["fixed_side"] == "sell" and q["status"] == "active"
    assert q["product"] == "spot" and q["rate_source"] == "manual"
    today = server_now().date()
    assert q["value_date"] == spot_of(today).isoformat()
    assert q["ttl_seconds"] == 30
    made = datetime.datetime.fromisoformat(q["created_at"].replace("Z", "+00:00"))
    ends = datetime.datetime.fromisoformat(q["expires_at"].replace("Z", "+00:00"))
    assert ends - made == datetime.timedelta(seconds=30)
    assert r.header("Location") == "/v1/conversions/quotes/" + q["id"]
    assert assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200) == q
    assert [a[1] for a in audit_of(server, q["id"])] == ["fx_quote.created"]


def test_a_buy_quote_rounds_the_sold_amount_up(server, ws):
    wid, c = ws
    set_spread(server, wid, 7)
    push(c, "GBPJPY", "187.3351234567")
    q = assert_json(quote(c, "GBP", "JPY", "buy", 1000001), 201)
    rate, sell, _ = expected("187.3351234567", 7, "buy", 1000001, "GBP", "JPY")
    assert q["rate"] == fixed10(rate)
    assert q["sell_amount"] == sell and q["buy_amount"] == 1000001
    # rounded in the house's favour: the sold amount at the rate covers what is bought
    assert Fraction(q["sell_amount"], 100) * rate * 1 >= 1000001


def test_the_inverse_pair_prices_at_the_exact_inverse(server, ws):
    _, c = ws
    push(c, "USDJPY", "149.87")
    q = assert_json(quote(c, "JPY", "USD", "sell", 1000000), 201)
    mid = half_even(1 / Fraction("149.87"), 10)
    assert q["mid_rate"] == fixed10(mid)
    assert q["buy_amount"] == floor(Fraction(1000000) * mid * 100)


def test_property_quotes_equal_the_exact_rational_computation_and_entries_balance(
        server, ws, clock):
    """Seeded: random pairs of currencies of exponents 0, 2 and 3, random rates (up to 10
    places) and amounts, either side fixed, random spreads; each quote's amounts equal the
    exact rational computation rounded by the documented rule (or the quote is refused as
    below one minor unit). Some are executed and, once funded and past their cut-off, settle:
    each ledger entry balances per currency and books the documented lines."""
    wid, c = ws
    rnd = random.Random(20250314)
    ccys = sorted(EXPONENT)
    executed = []
    for i in range(60):
        sell, buy = rnd.sample(ccys, 2)
        mid = Fraction(rnd.randint(1, 10 ** rnd.randint(4, 14)), 10 ** rnd.randint(0, 10))
        if mid >= 10 ** 8 or mid == 0:
            continue
        mid_text = fixed10(mid).rstrip("0").rstrip(".")
        bps = rnd.choice([0, 1, 5, 25, 1000])
        side = rnd.choice(["sell", "buy"])
        amount = rnd.randint(1, 10 ** rnd.randint(1, 12))
        set_spread(server, wid, bps)
        push(c, sell + buy, mid_text)
        rate, s_amt, b_amt = expected(mid_text, bps, side, amount, sell, buy)
        r = quote(c, sell, buy, side, amount)
        computed = b_amt if side == "sell" else s_amt
        if computed < 1:
            assert_validation(r, {"/%s_amount" % ("buy" if side == "sell" else "sell"):
                                  "amount_too_small"})
            continue
        if computed > AMOUNT_MAX:
            assert_validation(r, {"/%s_amount" % ("buy" if side == "sell" else "sell"):
                                  "amount_too_large"})
            continue
        q = assert_json(r, 201)
        assert (q["rate"], q["sell_amount"], q["buy_amount"]) == (fixed10(rate), s_amt, b_amt), \
            (sell, buy, mid_text, bps, side, amount)
        if len(executed) < 8 and s_amt < 10 ** 12:
            executed.append((assert_json(execute(c, q), 201), Fraction(q["mid_rate"])))
    assert len(executed) >= 4
    for x, _ in executed:
        fund(c, x["sell_currency"], x["sell_amount"])
    last = max(x["value_date"] for x, _ in executed)
    past_cutoff(clock, last)
    c = relogin(server, ws)
    for x, mid in executed:
        x = wait_status(c, x["id"], "settled")
        lines = entry_lines(c, x["ledger_transaction_id"])
        per = {}
        for ln in lines:
            d = per.setdefault(ln["currency"], [0, 0])
            d[0 if ln["direction"] == "debit" else 1] += ln["amount"]
        assert all(d == cr for d, cr in per.values()), lines
        es, eb = EXPONENT[x["sell_currency"]], EXPONENT[x["buy_currency"]]
        spread = floor(Fraction(x["sell_amount"], 10 ** es) * mid * 10 ** eb) - x["buy_amount"]
        assert spread >= 0
        assert per[x["sell_currency"]] == [x["sell_amount"]] * 2
        assert per[x["buy_currency"]] == [x["buy_amount"] + spread] * 2


def test_a_forward_is_priced_from_the_active_curve_interpolated_between_its_tenors(server, ws):
    """The live mid plus the curve's forward points at the value date: between the 1M and 3M
    tenors, p = p1 + (p2 - p1) x (d - d1) / (d2 - d1) half-even to 10 places (the curve's
    tenor dates as it shows them today), then the spread; checked by hand with fractions."""
    wid, c = ws
    set_spread(server, wid, 7)
    push(c, "EURUSD", "1.0842500000")
    crv = assert_json(c.post("/v1/rates/curves", json={
        "name": "EURUSD forwards " + uuid.uuid4().hex[:6], "pair": "EURUSD",
        "points": [{"tenor": "SPOT", "forward_points": "0"},
                   {"tenor": "1M", "forward_points": "0.0012500000"},
                   {"tenor": "3M", "forward_points": "0.0036000000"}]}), 201)
    crv = assert_json(c.post("/v1/rates/curves/%s/activate" % crv["id"]), 200)
    dates = {p["tenor"]: datetime.date.fromisoformat(p["value_date"]) for p in crv["points"]}
    d1, d2 = dates["1M"], dates["3M"]
    d = d1 + datetime.timedelta(days=17)
    while d.weekday() >= 5:
        d += datetime.timedelta(days=1)
    assert d1 < d < d2
    points = Fraction("0.00125") + (Fraction("0.0036") - Fraction("0.00125")) * \
        Fraction((d - d1).days, (d2 - d1).days)
    mid = Fraction("1.08425") + half_even(points, 10)
    rate = half_even(mid * (1 - Fraction(7, 10000)), 10)
    q = assert_json(quote(c, amount=12345678, value_date=d.isoformat()), 201)
    assert q["product"] == "forward" and q["rate_source"] == "curve:" + crv["id"]
    assert Fraction(q["mid_rate"]) == mid and Fraction(q["rate"]) == rate
    assert q["buy_amount"] == floor(12345678 * rate) and q["spread_bps"] == 7
    # buying a fixed amount forward rounds the sold amount up
    b = assert_json(quote(c, side="buy", amount=5000000, value_date=d.isoformat()), 201)
    assert b["sell_amount"] == ceil(Fraction(5000000) / rate)
    # on a tenor's own date its points; past the last tenor nothing is extrapolated
    t = assert_json(quote(c, amount=100, value_date=d1.isoformat()), 201)
    assert Fraction(t["mid_rate"]) == Fraction("1.08425") + Fraction("0.00125")
    later = d2 + datetime.timedelta(days=1)
    while later.weekday() >= 5:
        later += datetime.timedelta(days=1)
    before = table_counts(server)
    assert_validation(quote(c, value_date=later.isoformat()), {"/value_date": "outside_curve"})
    assert table_counts(server) == before


def test_each_quote_check_answers_its_code_at_its_field_and_stores_nothing(server, ws):
    wid, c = ws
    push(c, "EURUSD", "1.1")
    push(c, "EURGBP", "0.01")
    push(c, "GBPCHF", "99999999")
    today = server_now().date()
    spot = spot_of(today)
    saturday = today + datetime.timedelta(days=(5 - today.weekday()) % 7 or 7)
    far = weekday_after(spot.replace(year=spot.year + 1))
    before = table_counts(server)
    cases = [
        (dict(buy="EUR"), {"/buy_currency": "same_currency"}),
        (dict(buy_amount=5), {"/buy_amount": "fixed_side_mismatch"}),
        (dict(sell="CHF", buy="KWD"), {"/buy_currency": "rate_not_available"}),
        (dict(value_date=(today - datetime.timedelta(days=1)).isoformat()),
         {"/value_date": "value_date_in_past"}),
        (dict(value_date=saturday.isoformat()), {"/value_date": "value_date_not_business_day"}),
        (dict(value_date=far.isoformat()), {"/value_date": "value_date_too_far"}),
        (dict(value_date=weekday_after(spot).isoformat()), {"/value_date": "no_forward_curve"}),
        (dict(value_date=spot.isoformat(), product="forward"), {"/product": "product_mismatch"}),
        (dict(buy="GBP", amount=1), {"/buy_amount": "amount_too_small"}),
        (dict(sell="GBP", buy="CHF", amount=AMOUNT_MAX), {"/buy_amount": "amount_too_large"}),
    ]
    for over, want in cases:
        assert_validation(quote(c, **over), want)
    r = c.post(QUOTE, json={"sell_currency": "EUR", "buy_currency": "USD", "fixed_side": "buy"})
    assert_validation(r, {"/buy_amount": "required"})
    assert table_counts(server) == before


def test_a_quote_expires_at_its_lifetime_read_and_executed(server, ws, clock):
    _, c = ws
    push(c, "EURUSD", "1.2")
    q = assert_json(quote(c), 201)
    clock(28)
    assert assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200)["status"] == "active"
    clock(3)
    assert assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200)["status"] == "expired"
    assert_problem(execute(c, q), 409, "quote_expired")
    stored = assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200)
    assert stored["status"] == "expired" and stored["version"] == 2  # stored by the attempt
    assert assert_json(c.get(LIST), 200)["data"] == []


# ---- execute ------------------------------------------------------------------------------------

def test_executing_books_a_scheduled_conversion_at_the_quote_and_consumes_it(server, ws):
    _, c = ws
    push(c, "EURUSD", "1.08425")
    q = assert_json(quote(c, metadata={"desk": "a"}), 201)
    r = execute(c, q, metadata={"deal_ticket": "T-1"})
    x = assert_json(r, 201)
    assert r.header("Location") == "/v1/conversions/" + x["id"]
    assert re.fullmatch(r"cnv_[0-9a-z]{26}", x["id"])
    assert re.fullmatch(r"FX-\d{6}-[0-9A-Z]{6}", x["short_reference"])
    for k in ("sell_currency", "buy_currency", "sell_amount", "buy_amount", "value_date",
              "mid_rate", "spread_bps", "product"):
        assert x[k] == q[k], k
    assert x["client_rate"] == q["rate"] and x["quote_id"] == q["id"]
    assert x["status"] == "scheduled" and x["metadata"] == {"deal_ticket": "T-1"}
    assert x["settlement_cutoff_at"] == q["value_date"] + "T12:00:00.000Z"
    assert "ledger_transaction_id" not in x and "settled_at" not in x
    got = assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200)
    assert got["status"] == "consumed" and got["conversion_id"] == x["id"]
    assert assert_json(c.get(LIST + "/" + x["id"]), 200) == x
    assert_problem(execute(c, q), 409, "quote_already_used")
    assert [a[1] for a in audit_of(server, x["id"])] == ["fx_conversion.created"]


def test_the_request_must_repeat_the_quote_terms_and_name_a_quote_of_the_workspace(server, ws):
    _, c = ws
    push(c, "EURUSD", "1.08425")
    q = assert_json(quote(c), 201)
    _, _, other = server.new_workspace()
    before = table_counts(server)
    assert_validation(execute(c, q, sell_amount=q["sell_amount"] + 1, buy_currency="GBP",
                              value_date="2999-01-01"),
                      {"/sell_amount": "quote_mismatch", "/buy_currency": "quote_mismatch",
                       "/value_date": "quote_mismatch"})
    assert_validation(execute(c, q, buy_amount=q["buy_amount"] - 1),
                      {"/buy_amount": "quote_mismatch"})
    assert_validation(execute(c, q, quote_id="quo_" + "0" * 26), {"/quote_id": "quote_not_found"})
    assert_validation(other.post(EXECUTE, json=terms(q)), {"/quote_id": "quote_not_found"})
    assert table_counts(server) == before
    assert assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200)["status"] == "active"


def test_one_quote_executed_from_many_connections_at_once_books_exactly_one(server):
    _, tok, c = server.new_workspace()
    push(c, "EURUSD", "1.08425")
    q = assert_json(quote(c), 201)
    clients = [server.client(token=tok) for _ in range(12)]
    go = threading.Barrier(len(clients))
    answers = [None] * len(clients)

    def run(i):
        go.wait()
        answers[i] = clients[i].post(EXECUTE, json=terms(q))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(a.status for a in answers)
    assert statuses == [201] + [409] * (len(clients) - 1), statuses
    for a in answers:
        if a.status == 409:
            assert_problem(a, 409, "quote_already_used")
    db = open_db(server)
    with contextlib.closing(db):
        n = db.execute("SELECT count(*) FROM fx_conversions WHERE quote_id = ?",
                       (q["id"],)).fetchone()[0]
    assert n == 1


def test_a_value_date_in_a_closed_period_is_refused(server, ws):
    wid, c = ws
    push(c, "EURUSD", "1.08425")
    q = assert_json(quote(c), 201)
    day = q["value_date"]
    p = assert_json(c.post("/v1/ledger/periods", json={
        "name": "closed-" + day, "fiscal_year": int(day[:4]), "start_date": day,
        "end_date": day}), 201)
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("UPDATE ledger_periods SET status = 'closed' WHERE id = ?", (p["id"],))
        db.commit()
    before = table_counts(server)
    assert_problem(execute(c, q), 409, "period_closed")
    assert table_counts(server) == before
    assert assert_json(c.get("/v1/conversions/quotes/" + q["id"]), 200)["status"] == "active"


# ---- cancel -------------------------------------------------------------------------------------

def test_cancelling_a_scheduled_conversion_and_only_then(server, ws):
    _, c = ws
    push(c, "EURUSD", "1.08425")
    x = assert_json(execute(c, assert_json(quote(c), 201)), 201)
    r = c.post(LIST + "/%s/cancel" % x["id"])
    y = assert_json(r, 200)
    assert y["status"] == "cancelled" and "cancelled_at" in y and y["version"] == 2
    assert r.header("ETag") == '"v2"'
    assert [a[1:4] for a in audit_of(server, x["id"])][-1] == \
        ("fx_conversion.cancelled", "scheduled", "cancelled")
    body = assert_problem(c.post(LIST + "/%s/cancel" % x["id"]), 409, "invalid_transition")
    assert "cancelled" in body["detail"]
    assert_problem(c.post(LIST + "/cnv_%s/cancel" % ("0" * 26)), 404, "not_found")
    assert assert_json(c.get("/v1/conversions/quotes/" + x["quote_id"]), 200)["status"] == \
        "consumed"


# ---- settlement ---------------------------------------------------------------------------------

def account_id(c, code, currency, classification="asset"):
    r = c.get("/v1/ledger/accounts?limit=100")
    for a in assert_json(r, 200)["data"]:
        if a["code"] == code:
            return a["id"]
    return assert_json(c.post("/v1/ledger/accounts", json={
        "code": code, "name": code, "classification": classification,
        "currency": currency}), 201)["id"]


def fund(c, currency, amount):
    """Money into the FX cash account of currency: a posted manual entry debiting FXC-<ccy>
    (created first when the job has not yet) against an equity account."""
    cash = account_id(c, "FXC-" + currency, currency)
    equity = account_id(c, "EQ-" + currency, currency, "equity")
    assert_json(c.post("/v1/ledger/journals", json={
        "description": "FX funding", "effective_date": server_now().date().isoformat(),
        "post": True, "lines": [
            {"ledger_account_id": cash, "direction": "debit", "amount": amount,
             "currency": currency},
            {"ledger_account_id": equity, "direction": "credit", "amount": amount,
             "currency": currency}]}), 201)


def past_cutoff(clock, value_date, seconds=1):
    """The server's clock at `seconds` after the cut-off (12:00 UTC) of value_date."""
    at = datetime.datetime.fromisoformat(value_date + "T12:00:00+00:00") + \
        datetime.timedelta(seconds=seconds)
    clock(int((at - server_now()).total_seconds()) + 1)


def wait_status(c, cid, status, timeout=10):
    end = time.monotonic() + timeout
    while True:
        x = assert_json(c.get(LIST + "/" + cid), 200)
        if x["status"] == status or time.monotonic() > end:
            assert x["status"] == status, x
            return x
        time.sleep(0.05)


def entry_lines(c, jid):
    e = assert_json(c.get("/v1/ledger/journals/" + jid), 200)
    assert e["status"] == "posted" and e["source"] == "conversion"
    return e["lines"]


def test_an_unfunded_conversion_goes_overdue_at_the_cutoff_and_settles_once_funded(
        server, ws, clock):
    wid, c = ws
    set_spread(server, wid, 5)
    push(c, "EURUSD", "1.08425")
    q = assert_json(quote(c, amount=100000000), 201)
    x = assert_json(execute(c, q), 201)
    past_cutoff(clock, x["value_date"], seconds=-120)  # before the cut-off: nothing happens
    c = relogin(server, ws)
    time.sleep(0.4)
    assert assert_json(c.get(LIST + "/" + x["id"]), 200)["status"] == "scheduled"
    past_cutoff(clock, x["value_date"])
    c = relogin(server, ws)
    o = wait_status(c, x["id"], "overdue")
    assert o["version"] == 2 and "ledger_transaction_id" not in o
    fund(c, "EUR", 60000000)  # not enough yet
    time.sleep(0.4)
    assert assert_json(c.get(LIST + "/" + x["id"]), 200)["status"] == "overdue"
    fund(c, "EUR", 40000000)
    s = wait_status(c, x["id"], "settled")
    assert s["version"] == 3 and "settled_at" in s
    lines = entry_lines(c, s["ledger_transaction_id"])
    codes = {a["id"]: a["code"] for a in assert_json(c.get("/v1/ledger/accounts?limit=100"),
                                                      200)["data"]}
    spread = floor(Fraction(100000000, 100) * Fraction("1.08425") * 100) - 108370787
    assert spread == 54213
    got = sorted((codes[ln["ledger_account_id"]], ln["direction"], ln["amount"]) for ln in lines)
    assert got == sorted([("FXL-EUR", "debit", 100000000), ("FXC-EUR", "credit", 100000000),
                          ("FXC-USD", "debit", 108370787), ("FXS-USD", "debit", spread),
                          ("FXL-USD", "credit", 108370787 + spread)])
    e = assert_json(c.get("/v1/ledger/journals/" + s["ledger_transaction_id"]), 200)
    assert e["source_id"] == x["id"] and e["effective_date"] == x["value_date"]
    assert [a[1:4] for a in audit_of(server, x["id"])][1:] == [
        ("fx_conversion.overdue", "scheduled", "overdue"),
        ("fx_conversion.settled", "overdue", "settled")]
    assert_problem(c.post(LIST + "/%s/cancel" % x["id"]), 409, "invalid_transition")
    # the FX cash of EUR is spent; the USD bought is there
    fxc = {a["code"]: a for a in assert_json(c.get("/v1/ledger/accounts?limit=100"),
                                              200)["data"]}
    assert fxc["FXC-EUR"]["balances"]["posted"]["amount"] == 0
    assert fxc["FXC-USD"]["balances"]["posted"]["amount"] == 108370787


def test_a_funded_conversion_settles_at_the_cutoff_and_a_cancelled_one_never(server, ws, clock):
    _, c = ws
    push(c, "EURUSD", "1.5")
    fund(c, "EUR", 300)
    x = assert_json(execute(c, assert_json(quote(c, amount=100), 201)), 201)
    y = assert_json(execute(c, assert_json(quote(c, amount=100), 201)), 201)
    assert_json(c.post(LIST + "/%s/cancel" % y["id"]), 200)
    past_cutoff(clock, x["value_date"])
    c = relogin(server, ws)
    s = wait_status(c, x["id"], "settled")
    assert [a[1] for a in audit_of(server, x["id"])][1:] == ["fx_conversion.settled"]
    assert len(entry_lines(c, s["ledger_transaction_id"])) == 4  # no spread: no spread line
    time.sleep(0.3)
    assert assert_json(c.get(LIST + "/" + y["id"]), 200)["status"] == "cancelled"


# ---- history and positions ----------------------------------------------------------------------

def test_history_filters_csv_and_positions(server, ws):
    _, c = ws
    push(c, "EURUSD", "1.25")
    push(c, "GBPJPY", "190")
    a = assert_json(execute(c, assert_json(quote(c, amount=1000), 201)), 201)
    b = assert_json(execute(c, assert_json(quote(c, "GBP", "JPY", amount=200), 201)), 201)
    d = assert_json(execute(c, assert_json(quote(c, "USD", "EUR", "buy", 300), 201)), 201)
    assert_json(c.post(LIST + "/%s/cancel" % d["id"]), 200)

    def ids(q=""):
        return [x["id"] for x in assert_json(c.get(LIST + q), 200)["data"]]
    assert set(ids()) == {a["id"], b["id"], d["id"]}
    assert set(ids("?currency=EUR")) == {a["id"], d["id"]}
    assert set(ids("?currency=USD")) == {a["id"], d["id"]}
    assert ids("?currency=JPY") == [b["id"]]
    assert set(ids("?status=scheduled")) == {a["id"], b["id"]}
    assert ids("?status=cancelled&currency=USD") == [d["id"]]
    assert ids("?product=forward") == []
    vd = a["value_date"]
    assert set(ids("?value_date_from=%s" % vd)) == {a["id"], b["id"], d["id"]}
    assert ids("?value_date_to=%s" % vd) == []
    assert_problem(c.get(LIST + "?value_date_from=%s&value_date_to=%s" % (vd, vd)), 400,
                   "invalid_range")
    page = assert_json(c.get(LIST + "?limit=2"), 200)
    assert page["has_more"] and len(page["data"]) == 2
    rest = assert_json(c.get(LIST + "?limit=2&cursor=" + page["next_cursor"]), 200)
    assert {x["id"] for x in page["data"] + rest["data"]} == {a["id"], b["id"], d["id"]}

    r = c.get(LIST + "?currency=EUR", headers={"Accept": "text/csv"})
    assert r.status == 200 and r.header("Content-Type").startswith("text/csv")
    assert r.text.endswith("\r\n")
    rows = list(csv.DictReader(io.StringIO(r.text, newline="")))
    assert {row["id"] for row in rows} == {a["id"], d["id"]}
    row = next(row for row in rows if row["id"] == a["id"])
    assert (row["sell_amount"], row["buy_amount"], row["client_rate"], row["status"]) == \
        ("1000", str(a["buy_amount"]), a["client_rate"], "scheduled")
    assert_validation(c.get(LIST + "?cursor=" + page["next_cursor"],
                            headers={"Accept": "text/csv"}),
                      {"/query/cursor": "invalid_request"}, status=400, code="invalid_request")
    assert c.get(LIST, headers={"Accept": "application/xml"}).status == 406

    rep = assert_json(c.get(POSITIONS), 200)
    assert rep["object"] == "fx_position_report"
    pos = {p["currency"]: p for p in rep["data"]}
    assert set(pos) == {"EUR", "USD", "GBP", "JPY"}  # the cancelled one counts nowhere
    assert pos["EUR"] == {"currency": "EUR", "settled_balance": 0, "pending_buys": 0,
                          "pending_sells": 1000, "net_position": -1000,
                          "forward_exposure": [{"value_date": vd, "buys": 0, "sells": 1000,
                                                "net": -1000}]}
    assert pos["USD"]["pending_buys"] == a["buy_amount"] == 1250
    assert pos["JPY"]["net_position"] == b["buy_amount"]
    only = assert_json(c.get(POSITIONS + "?currency=GBP"), 200)["data"]
    assert [p["currency"] for p in only] == ["GBP"] and only[0]["pending_sells"] == 200
    assert assert_json(c.get(POSITIONS + "?currency=CHF"), 200)["data"] == []


def test_positions_count_settled_conversions_in_the_balance(server, ws, clock):
    _, c = ws
    push(c, "EURUSD", "2")
    fund(c, "EUR", 500)
    x = assert_json(execute(c, assert_json(quote(c, amount=500), 201)), 201)
    past_cutoff(clock, x["value_date"])
    c = relogin(server, ws)
    wait_status(c, x["id"], "settled")
    pos = {p["currency"]: p for p in assert_json(c.get(POSITIONS), 200)["data"]}
    assert pos["EUR"]["settled_balance"] == -500 and pos["EUR"]["forward_exposure"] == []
    assert pos["USD"]["settled_balance"] == 1000 and pos["USD"]["net_position"] == 1000


# ---- the ledger's conversion source -------------------------------------------------------------

def test_a_journal_may_name_a_conversion_of_the_workspace_as_its_source(server, ws):
    _, c = ws
    push(c, "EURUSD", "1.1")
    x = assert_json(execute(c, assert_json(quote(c), 201)), 201)
    cash = account_id(c, "C-EUR", "EUR")
    eq = account_id(c, "E-EUR", "EUR", "equity")
    body = {"description": "FX fee", "effective_date": server_now().date().isoformat(),
            "source": "conversion", "source_id": x["id"], "lines": [
                {"ledger_account_id": cash, "direction": "debit", "amount": 5, "currency": "EUR"},
                {"ledger_account_id": eq, "direction": "credit", "amount": 5, "currency": "EUR"}]}
    assert assert_json(c.post("/v1/ledger/journals", json=body), 201)["source_id"] == x["id"]
    body["source_id"] = "cnv_" + "0" * 26
    assert_validation(c.post("/v1/ledger/journals", json=body), {"/source_id": "source_not_found"})


# ---- prices at the edges ------------------------------------------------------------------------

ECB_DOC = ('<?xml version="1.0" encoding="UTF-8"?>\n<gesmes:Envelope '
           'xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" '
           'xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">'
           '<gesmes:subject>Reference rates</gesmes:subject><gesmes:Sender><gesmes:name>European '
           'Central Bank</gesmes:name></gesmes:Sender><Cube><Cube time="%s">'
           '<Cube currency="USD" rate="1.5"/></Cube></Cube></gesmes:Envelope>')


def test_a_curve_on_the_reference_spot_prices_forwards_from_the_reference_rate(server, ws):
    """spot_source reference: the points are added to the ECB rate, not to the live mid
    (which differs here), in the quote and in the pair's custom rate."""
    wid, c = ws
    push(c, "EURUSD", "1.0842500000")
    assert_json(c.post("/v1/rates/reference/import", body=ECB_DOC % server_now().date().isoformat(),
                       content_type="application/xml"), 200)
    crv = assert_json(c.post("/v1/rates/curves", json={
        "name": "on the ECB " + uuid.uuid4().hex[:6], "pair": "EURUSD", "spot_source": "reference",
        "points": [{"tenor": "SPOT", "forward_points": "0"},
                   {"tenor": "3M", "forward_points": "0.01"}]}), 201)
    crv = assert_json(c.post("/v1/rates/curves/%s/activate" % crv["id"]), 200)
    d = datetime.date.fromisoformat(next(p["value_date"] for p in crv["points"]
                                         if p["tenor"] == "3M"))
    q = assert_json(quote(c, amount=100000, value_date=d.isoformat()), 201)
    assert Fraction(q["mid_rate"]) == Fraction("1.51") and q["rate_source"] == "curve:" + crv["id"]
    custom = assert_json(c.get("/v1/rates/EURUSD?rate_type=custom&value_date=" + d.isoformat()),
                         200)
    assert Fraction(custom["mid"]) == Fraction("1.51")


def test_prices_and_amounts_past_what_the_api_shows_are_refused(server, ws):
    """A mid whose inverse is 10^8 or more (no Rate says it), a forward asked as such without
    a value date (the spot date is no forward), and an amount whose value at the mid - what
    settling posts to the liquidity account - would pass 2^53 - 1: each 422, nothing stored."""
    wid, c = ws
    push(c, "EURUSD", "0.000000005")
    push(c, "GBPUSD", "2")
    before = table_counts(server)
    assert_validation(quote(c, sell="USD", buy="EUR"), {"/buy_currency": "rate_not_available"})
    assert_validation(quote(c, product="forward", sell="GBP"), {"/product": "product_mismatch"})
    set_spread(server, wid, 1000)
    sell = (AMOUNT_MAX * 10) // 19
    assert_validation(quote(c, sell="GBP", amount=sell), {"/buy_amount": "amount_too_large"})
    assert table_counts(server) == before
    # just below the limit at the mid, it is quoted
    ok = assert_json(quote(c, sell="GBP", amount=AMOUNT_MAX // 2), 201)
    assert ok["buy_amount"] == floor(AMOUNT_MAX // 2 * Fraction(2) * Fraction(9, 10))
