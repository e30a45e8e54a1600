"""The trial balance (GET /v1/ledger/trial-balance): the figures at the end of a day or of a
period, from posted entries or with the drafts, one currency or all, with or without the
accounts that never moved; totals per currency and whether they balance; JSON or CSV by
Accept (406 otherwise); 400 for as_of with period_id, 404 for an unknown period; the scope it
needs; and nothing of another workspace.

The books are made through the API (accounts, then entries posted with "post": true and
drafts), through the ledger's accounts and journals endpoints."""

import csv
import datetime
import io
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_problem, table_counts

TB = "/v1/ledger/trial-balance"
CSV_HEADER = ["ledger_account_id", "code", "name", "classification", "currency",
              "normal_balance", "debit_total", "credit_total", "balance"]

# code: (name, classification, currency); normal balances default from the classification
ACCOUNTS = {
    "1000": ("Cash EUR", "asset", "EUR"),
    "1100": ("Cash USD", "asset", "USD"),
    "2000": ("Payables EUR", "liability", "EUR"),
    "3000": ("Capital EUR", "equity", "EUR"),
    "3100": ("Capital USD", "equity", "USD"),
    "4000": ("Revenue EUR", "revenue", "EUR"),
    "5000": ("=Fees, \"net\"", "expense", "EUR"),  # never moves; a formula to the CSV
}
DEBIT_NORMAL = {"asset", "expense"}


@pytest.fixture(scope="module")
def books(server):
    """A fresh workspace with the accounts above and these entries (codes: debit / credit):
    posted 2025-01-10 1000/3000 100000 EUR, 2025-01-15 1100/3100 50000 USD, 2025-01-20
    1000/4000 25000 EUR, 2025-02-05 2000/1000 7000 EUR (Payables go negative); drafts
    2025-01-25 1000/4000 3000 EUR, 2025-01-26 a line on 1100 in EUR (not its currency: counts
    nowhere) with 4000 111 EUR, 2025-02-10 1000/4000 999 EUR; then the period 2025-01
    (January), made after the postings."""
    wid, tok, c = server.new_workspace()
    ids = {}
    for code, (name, cls, cur) in ACCOUNTS.items():
        ids[code] = assert_json(c.post("/v1/ledger/accounts", json={
            "code": code, "name": name, "classification": cls, "currency": cur}), 201)["id"]

    def entry(date, debit, credit, amount, cur="EUR", post=True, debit_cur=None):
        body = {"description": "TB %s" % date, "effective_date": date, "post": post,
                "lines": [
                    {"ledger_account_id": ids[debit], "direction": "debit", "amount": amount,
                     "currency": debit_cur or cur},
                    {"ledger_account_id": ids[credit], "direction": "credit", "amount": amount,
                     "currency": cur}]}
        got = assert_json(c.post("/v1/ledger/journals", json=body), 201)
        assert got["status"] == ("posted" if post else "draft"), got
        return got["id"]

    entry("2025-01-10", "1000", "3000", 100000)
    entry("2025-01-15", "1100", "3100", 50000, "USD")
    entry("2025-01-20", "1000", "4000", 25000)
    entry("2025-02-05", "2000", "1000", 7000)
    entry("2025-01-25", "1000", "4000", 3000, post=False)
    entry("2025-01-26", "1100", "4000", 111, post=False, debit_cur="EUR")
    entry("2025-02-10", "1000", "4000", 999, post=False)
    period = assert_json(c.post("/v1/ledger/periods", json={
        "name": "2025-01", "fiscal_year": 2025, "start_date": "2025-01-01",
        "end_date": "2025-01-31"}), 201)
    return {"wid": wid, "token": tok, "client": c, "ids": ids, "period": period["id"]}


def tb(client, query="", accept=None, status=200):
    r = client.request("GET", TB + query, headers={"Accept": accept} if accept else None)
    return assert_json(r, status) if accept is None else r


def expect(books, figures, include_zero=False, currency=None):
    """The rows the trial balance must hold: figures is {code: (debits, credits)}; the other
    accounts (of currency) are zero rows, listed only with include_zero."""
    rows = []
    for code in sorted(ACCOUNTS):
        name, cls, cur = ACCOUNTS[code]
        if currency and cur != currency:
            continue
        d, c = figures.get(code, (0, 0))
        if not include_zero and d == 0 and c == 0:
            continue
        rows.append({"ledger_account_id": books["ids"][code], "code": code, "name": name,
                     "classification": cls, "currency": cur,
                     "normal_balance": "debit" if cls in DEBIT_NORMAL else "credit",
                     "debit_total": d, "credit_total": c,
                     "balance": d - c if cls in DEBIT_NORMAL else c - d})
    return rows


def totals(rows):
    out = {}
    for row in rows:
        t = out.setdefault(row["currency"], {"currency": row["currency"], "debits": 0,
                                             "credits": 0})
        t["debits"] += row["debit_total"]
        t["credits"] += row["credit_total"]
    for t in out.values():
        t["balanced"] = t["debits"] == t["credits"]
    return [out[k] for k in sorted(out)]


def check(body, books, rows, as_of, status="posted", period_id=None, currency=None):
    assert body["object"] == "trial_balance"
    assert body["workspace_id"] == books["wid"]
    assert body["as_of"] == as_of
    assert body["status"] == status
    assert body.get("period_id") == period_id
    assert body.get("currency") == currency
    assert body["rows"] == rows
    assert body["totals_by_currency"] == totals(rows)
    assert body["balanced"] == all(t["balanced"] for t in totals(rows))
    assert isinstance(body["generated_at"], str) and body["generated_at"].endswith("Z")


JAN_31 = {"1000": (125000, 0), "1100": (50000, 0), "3000": (0, 100000), "3100": (0, 50000),
          "4000": (0, 25000)}
FEB_28 = dict(JAN_31, **{"1000": (125000, 7000), "2000": (7000, 0)})


# ---- posted figures as of a day ------------------------------------------------------------

@pytest.mark.parametrize("as_of, figures", [
    ("2025-01-09", {}),                                       # before the first posting
    ("2025-01-10", {"1000": (100000, 0), "3000": (0, 100000)}),  # the day's own postings count
    ("2025-01-15", {"1000": (100000, 0), "3000": (0, 100000), "1100": (50000, 0),
                    "3100": (0, 50000)}),
    ("2025-01-19", {"1000": (100000, 0), "3000": (0, 100000), "1100": (50000, 0),
                    "3100": (0, 50000)}),                     # a day nothing moved
    ("2025-01-31", JAN_31),
    ("2025-02-28", FEB_28),
    ("2031-12-31", FEB_28),
])
def test_posted_figures_as_of_a_day(books, as_of, figures):
    body = tb(books["client"], "?as_of=" + as_of)
    check(body, books, expect(books, figures), as_of)
    assert body["balanced"] is True


def test_without_as_of_it_is_today_utc_with_everything_posted(books):
    before = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    body = tb(books["client"])
    after = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert body["as_of"] in (before, after)
    check(body, books, expect(books, FEB_28), body["as_of"])


def test_a_negative_balance_is_signed_in_the_normal_direction(books):
    rows = tb(books["client"], "?as_of=2025-02-05")["rows"]
    payables = next(r for r in rows if r["code"] == "2000")
    assert (payables["debit_total"], payables["credit_total"], payables["balance"]) == \
        (7000, 0, -7000)


def test_include_zero_lists_every_account_in_code_order(books):
    body = tb(books["client"], "?as_of=2025-01-31&include_zero=true")
    check(body, books, expect(books, JAN_31, include_zero=True), "2025-01-31")
    assert [r["code"] for r in body["rows"]] == sorted(ACCOUNTS)
    assert tb(books["client"], "?as_of=2025-01-31&include_zero=false")["rows"] == \
        expect(books, JAN_31)


def test_include_zero_before_any_posting_lists_zero_rows_that_balance(books):
    body = tb(books["client"], "?as_of=2024-12-31&include_zero=true")
    check(body, books, expect(books, {}, include_zero=True), "2024-12-31")
    assert all(r["debit_total"] == r["credit_total"] == r["balance"] == 0 for r in body["rows"])
    assert body["balanced"] is True


def test_currency_keeps_the_accounts_of_one_currency(books):
    body = tb(books["client"], "?as_of=2025-01-31&currency=USD")
    check(body, books, expect(books, JAN_31, currency="USD"), "2025-01-31", currency="USD")
    assert [t["currency"] for t in body["totals_by_currency"]] == ["USD"]
    body = tb(books["client"], "?as_of=2025-01-31&currency=GBP&include_zero=true")
    check(body, books, [], "2025-01-31", currency="GBP")


# ---- posted and pending --------------------------------------------------------------------

def test_posted_and_pending_adds_the_drafts_dated_up_to_as_of(books):
    c = books["client"]
    # 01-25: 3000 on 1000/4000; 01-26: 111 on 4000 only (its 1100 line is in EUR, not
    # 1100's currency, so it counts nowhere); 02-10 is later
    jan = dict(JAN_31, **{"1000": (128000, 0), "4000": (0, 28111)})
    body = tb(c, "?as_of=2025-01-31&status=posted_and_pending")
    check(body, books, expect(books, jan), "2025-01-31", status="posted_and_pending")
    eur = next(t for t in body["totals_by_currency"] if t["currency"] == "EUR")
    assert (eur["debits"], eur["credits"], eur["balanced"]) == (128000, 128111, False)
    assert body["balanced"] is False
    assert tb(c, "?as_of=2025-01-24&status=posted_and_pending")["rows"] == \
        tb(c, "?as_of=2025-01-24")["rows"]
    feb = dict(FEB_28, **{"1000": (128999, 7000), "4000": (0, 29110)})
    body = tb(c, "?as_of=2025-02-28&status=posted_and_pending")
    check(body, books, expect(books, feb), "2025-02-28", status="posted_and_pending")


def test_status_posted_is_the_default_and_ignores_drafts(books):
    c = books["client"]
    explicit = tb(c, "?as_of=2025-02-28&status=posted")
    assert explicit["status"] == "posted"
    assert explicit["rows"] == tb(c, "?as_of=2025-02-28")["rows"] == expect(books, FEB_28)


def test_pending_with_a_currency_filter_counts_only_that_currency(books):
    body = tb(books["client"], "?as_of=2025-01-31&status=posted_and_pending&currency=USD")
    check(body, books, expect(books, JAN_31, currency="USD"), "2025-01-31",
          status="posted_and_pending", currency="USD")


# ---- periods -------------------------------------------------------------------------------

def test_a_period_gives_the_figures_of_its_end_date(books):
    body = tb(books["client"], "?period_id=" + books["period"])
    check(body, books, expect(books, JAN_31), "2025-01-31", period_id=books["period"])
    body = tb(books["client"], "?period_id=%s&currency=EUR&status=posted_and_pending"
              % books["period"])
    jan = dict(JAN_31, **{"1000": (128000, 0), "4000": (0, 28111)})
    check(body, books, expect(books, jan, currency="EUR"), "2025-01-31",
          status="posted_and_pending", period_id=books["period"], currency="EUR")


def test_an_unknown_period_is_404(books):
    assert_problem(tb(books["client"], "?period_id=per_0000000000000000000000000z",
                      accept="application/json"), 404, "not_found")


def test_another_workspaces_period_is_404(server, books):
    _, _, other = server.new_workspace()
    assert_problem(other.request("GET", TB + "?period_id=" + books["period"]), 404, "not_found")


def test_as_of_with_period_id_is_400(books):
    r = books["client"].request("GET", TB + "?as_of=2025-01-31&period_id=" + books["period"])
    assert_problem(r, 400, "invalid_request")


# ---- CSV -----------------------------------------------------------------------------------

def csv_rows(r):
    assert r.status == 200, r
    assert r.header("Content-Type") == "text/csv; charset=utf-8", r
    text = r.body.decode("utf-8")
    assert text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == CSV_HEADER
    return rows[1:]


def as_csv(rows):
    return [[str(row[k]) for k in CSV_HEADER] for row in rows]


def test_csv_holds_the_rows_of_the_json_answer(books):
    c = books["client"]
    for query in ("?as_of=2025-02-28", "?as_of=2025-01-31&status=posted_and_pending",
                  "?period_id=%s&currency=USD" % books["period"], "?as_of=2025-01-01"):
        assert csv_rows(tb(c, query, accept="text/csv")) == as_csv(tb(c, query)["rows"]), query


def test_csv_defuses_formulas_and_quotes_but_keeps_negative_amounts(books):
    r = tb(books["client"], "?as_of=2025-02-28&include_zero=true", accept="text/csv")
    rows = {row[1]: row for row in csv_rows(r)}
    assert rows["5000"][2] == "'" + ACCOUNTS["5000"][0]  # '= ahead of the formula
    assert '"\'=Fees, ""net"""' in r.body.decode("utf-8")
    assert rows["2000"][8] == "-7000"  # a number, not a defused text


@pytest.mark.parametrize("accept", ["application/xml", "text/html", "text/csv;q=0, "
                                    "application/json;q=0"])
def test_other_accept_is_406(books, accept):
    assert_problem(tb(books["client"], "?as_of=2025-01-31", accept=accept), 406,
                   "not_acceptable")


# ---- access --------------------------------------------------------------------------------

def member(server, books, role):
    email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
    server.create_user(books["wid"], email, role)
    return server.client(token=server.login(email, USER_PASSWORD,
                                            workspace_id=books["wid"])["access_token"])


def test_ledger_read_is_needed(server, books):
    viewer = member(server, books, "viewer")
    assert tb(viewer, "?as_of=2025-01-31")["rows"] == expect(books, JAN_31)
    approver = member(server, books, "approver")  # no ledger:read
    before = table_counts(server)
    r = approver.request("GET", TB + "?as_of=2025-01-31")
    assert_problem(r, 403, "insufficient_scope")
    assert 'scope="ledger:read"' in (r.header("WWW-Authenticate") or "")
    r = approver.request("GET", TB, headers={"Accept": "text/csv"})
    assert_problem(r, 403, "insufficient_scope")
    assert table_counts(server) == before
    r = books["client"].request("GET", TB, token=False)
    assert_problem(r, 401)


def test_another_workspace_sees_none_of_these_accounts(server, books):
    wid, _, other = server.new_workspace()
    body = assert_json(other.request("GET", TB + "?include_zero=true"), 200)
    assert body["workspace_id"] == wid
    assert body["rows"] == [] and body["totals_by_currency"] == [] and body["balanced"] is True
