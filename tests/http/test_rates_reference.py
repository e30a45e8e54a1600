"""ECB reference rates (handlers/rates_reference.c): a small file in the ECB's eurofxref
format made here is imported (daily and historical shapes, all or nothing), re-imported
(unchanged) and corrected (replaced); the rates of a day are the file's figures against EUR,
or cross rates through EUR against another base, checked by hand with Python's fractions
(half-even to 10 places); a day without a publication answers the last one before it; the
documented refusals (400 malformed_xml, 422 not_ecb_reference_file and the rates' own codes,
415, 404) change nothing; other workspaces see nothing; the scopes."""

import contextlib
import datetime
import json
from fractions import Fraction

import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import (TIMESTAMP, assert_json, assert_problem, assert_validation, audit_of,
                     open_db, table_counts)

PATH = "/v1/rates/reference"
IMPORT = PATH + "/import"
XML = "application/xml"


def ecb(pubs, root="gesmes:Envelope", extra=""):
    """An ECB eurofxref document: pubs {date: [(currency, rate), ...]} in the given order (the
    ECB lists the newest first)."""
    cubes = "".join(
        '\n    <Cube time="%s">%s\n    </Cube>' % (
            day, "".join('\n      <Cube currency="%s" rate="%s"/>' % cr for cr in rates))
        for day, rates in pubs.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n%s'
            '<%s xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" '
            'xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">\n'
            '  <gesmes:subject>Reference rates</gesmes:subject>\n'
            '  <gesmes:Sender>\n    <gesmes:name>European Central Bank</gesmes:name>\n'
            '  </gesmes:Sender>\n  <Cube>%s\n  </Cube>\n</%s>\n') % (extra, root, cubes, root)


FRIDAY = {"2025-03-14": [("USD", "1.0882"), ("JPY", "161.61"), ("GBP", "0.84085"),
                         ("CHF", "0.9595")]}
HISTORY = {"2025-03-13": [("USD", "1.0860"), ("JPY", "160.57"), ("GBP", "0.83923"),
                          ("CHF", "0.9581")],
           "2025-03-12": [("USD", "1.0892"), ("JPY", "161.63"), ("GBP", "0.84083"),
                          ("CHF", "0.9606")]}


def imported(c, doc, status=200):
    return assert_json(c.post(IMPORT, body=doc, content_type=XML), status)


def rates(c, **query):
    q = "&".join("%s=%s" % (k, x) for k, v in query.items()
                 for x in (v if isinstance(v, list) else [v]))
    return c.get(PATH + ("?" + q if q else ""))


def half_even_10(f):
    """f (a Fraction) rounded half-even to 10 places (round() of a Fraction is half-even),
    written with 10 places."""
    n = round(f * 10**10)
    return "%s%d.%010d" % ("-" if n < 0 else "", abs(n) // 10**10, abs(n) % 10**10)


@pytest.fixture
def ws(server):
    wid, _, c = server.new_workspace()
    return wid, c


def stored(server, wid):
    db = open_db(server)
    with contextlib.closing(db):
        pubs = db.execute("SELECT date, imported_at, rate_count FROM reference_publications "
                          "WHERE workspace_id = ? ORDER BY date", (wid,)).fetchall()
        rows = db.execute("SELECT date, currency, rate FROM reference_rates WHERE "
                          "workspace_id = ? ORDER BY date, currency", (wid,)).fetchall()
    return [tuple(p) for p in pubs], [tuple(r) for r in rows]


# ---- import ----------------------------------------------------------------------------------

def test_import_a_daily_file(server, ws):
    wid, c = ws
    res = imported(c, ecb(FRIDAY))
    assert res == {"object": "reference_rate_import", "source": "ecb",
                   "first_date": "2025-03-14", "last_date": "2025-03-14", "dates": 1,
                   "dates_added": 1, "dates_replaced": 0, "dates_unchanged": 0, "rates": 4,
                   "currencies": ["CHF", "GBP", "JPY", "USD"],
                   "imported_at": res["imported_at"]}
    assert TIMESTAMP.match(res["imported_at"])
    pubs, rows = stored(server, wid)
    assert pubs == [("2025-03-14", res["imported_at"], 4)]
    assert rows == sorted(("2025-03-14", cur, rate) for cur, rate in FRIDAY["2025-03-14"])
    # the file's figures, exactly as published, against EUR
    got = assert_json(rates(c, date="2025-03-14"), 200)
    assert got == {"object": "reference_rate_set", "workspace_id": wid, "source": "ecb",
                   "date": "2025-03-14", "requested_date": "2025-03-14", "base_currency": "EUR",
                   "rates": [{"currency": "CHF", "rate": "0.9595"},
                             {"currency": "GBP", "rate": "0.84085"},
                             {"currency": "JPY", "rate": "161.61"},
                             {"currency": "USD", "rate": "1.0882"}],
                   "imported_at": res["imported_at"]}
    trail = audit_of(server, "ecb:2025-03-14..2025-03-14")
    assert [a[1] for a in trail] == ["reference_rates.imported"]
    assert json.loads(trail[0][4])["dates_added"] == 1


def test_cross_rates_through_eur_by_hand(ws):
    _, c = ws
    imported(c, ecb(FRIDAY))
    got = assert_json(rates(c, date="2025-03-14", base_currency="USD"), 200)
    usd = Fraction("1.0882")
    want = [("CHF", Fraction("0.9595") / usd), ("EUR", 1 / usd), ("GBP", Fraction("0.84085") / usd),
            ("JPY", Fraction("161.61") / usd)]
    assert got["base_currency"] == "USD"
    assert got["rates"] == [{"currency": cur, "rate": half_even_10(f)} for cur, f in want]
    # the spec's example figures
    assert {x["currency"]: x["rate"] for x in got["rates"]}["EUR"] == "0.9189487227"
    assert {x["currency"]: x["rate"] for x in got["rates"]}["JPY"] == "148.5113030693"
    # only the currencies asked for
    some = assert_json(rates(c, date="2025-03-14", base_currency="GBP",
                             currency=["JPY", "EUR", "GBP", "SEK"]), 200)
    gbp = Fraction("0.84085")
    assert some["rates"] == [{"currency": "EUR", "rate": half_even_10(1 / gbp)},
                             {"currency": "JPY", "rate": half_even_10(Fraction("161.61") / gbp)}]


def test_half_even_at_the_tie(ws):
    """A cross rate exactly halfway at the 11th place rounds to the even 10th digit."""
    _, c = ws
    imported(c, ecb({"2025-03-14": [("USD", "4"), ("JPY", "0.000000001"), ("GBP", "0.0000000014")]}))
    got = assert_json(rates(c, date="2025-03-14", base_currency="USD",
                            currency=["JPY", "GBP"]), 200)
    # 1e-9 / 4 = 2.5e-10 -> 2e-10; 1.4e-9 / 4 = 3.5e-10 -> 4e-10
    assert Fraction("0.000000001") / 4 == Fraction(25, 10**11)
    assert got["rates"] == [{"currency": "GBP", "rate": "0.0000000004"},
                            {"currency": "JPY", "rate": "0.0000000002"}]


def test_a_day_without_publication_answers_the_last_one_before(ws):
    wid, c = ws
    imported(c, ecb({**FRIDAY, **HISTORY}))
    sunday = assert_json(rates(c, date="2025-03-16"), 200)
    assert sunday["date"] == "2025-03-14" and sunday["requested_date"] == "2025-03-16"
    thursday = assert_json(rates(c, date="2025-03-13", currency="USD"), 200)
    assert thursday["date"] == "2025-03-13" and thursday["rates"] == [
        {"currency": "USD", "rate": "1.0860"}]
    # today (no date): the latest publication, asked for today
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    latest = assert_json(rates(c), 200)
    assert latest["date"] == "2025-03-14" and latest["requested_date"] == today
    # nothing published on or before the day, a base the publication lacks, another workspace
    assert_problem(rates(c, date="2025-03-11"), 404, "not_found")
    assert_problem(rates(c, date="2025-03-14", base_currency="SEK"), 404, "not_found")


def test_historical_file_reimport_and_correction(server, ws):
    wid, c = ws
    first = imported(c, ecb({**FRIDAY, **HISTORY}))
    assert (first["first_date"], first["last_date"], first["dates"], first["dates_added"],
            first["rates"]) == ("2025-03-12", "2025-03-14", 3, 3, 12)
    before = stored(server, wid)
    again = imported(c, ecb(HISTORY))
    assert (again["dates"], again["dates_added"], again["dates_replaced"],
            again["dates_unchanged"]) == (2, 0, 0, 2)
    assert stored(server, wid) == before  # imported_at kept too
    # the same figures written otherwise are the same figures
    same = imported(c, ecb({"2025-03-13": [("USD", "1.086"), ("JPY", "160.570"),
                                           ("GBP", "0.83923"), ("CHF", "0.9581")]}))
    assert same["dates_unchanged"] == 1
    # a correction of 2025-03-13 (a rate changed, one dropped) beside a new day
    fixed = imported(c, ecb({"2025-03-17": [("USD", "1.0900")],
                             "2025-03-13": [("USD", "1.0861"), ("JPY", "160.57"),
                                            ("GBP", "0.83923")]}))
    assert (fixed["dates"], fixed["dates_added"], fixed["dates_replaced"],
            fixed["dates_unchanged"]) == (2, 1, 1, 0)
    pubs, rows = stored(server, wid)
    assert [p[0] for p in pubs] == ["2025-03-12", "2025-03-13", "2025-03-14", "2025-03-17"]
    assert dict((p[0], p[1]) for p in pubs)["2025-03-13"] == fixed["imported_at"]
    assert [(r[1], r[2]) for r in rows if r[0] == "2025-03-13"] == \
        [("GBP", "0.83923"), ("JPY", "160.57"), ("USD", "1.0861")]
    got = assert_json(rates(c, date="2025-03-13"), 200)
    assert got["imported_at"] == fixed["imported_at"]


# ---- refusals change nothing --------------------------------------------------------------------

def refused(server, c, doc, status, code, content_type=XML):
    imported(c, ecb(FRIDAY))  # something stored already, which must stay as it is
    before = table_counts(server)
    r = c.post(IMPORT, body=doc, content_type=content_type)
    body = assert_problem(r, status, code)
    assert table_counts(server) == before
    return body


@pytest.mark.parametrize("doc", [
    ecb(HISTORY)[:-30],                                   # cut short
    ecb(HISTORY).replace("</gesmes:Envelope>", "</Envelope>"),  # mismatched end tag
    "not xml at all",
    ecb(HISTORY).replace('rate="1.0860"', 'rate="1.0860" rate="2"'),  # an attribute twice
])
def test_malformed_xml(server, ws, doc):
    body = refused(server, ws[1], doc, 400, "malformed_xml")
    assert "line" in body["detail"]


@pytest.mark.parametrize("doc,why", [
    ('<?xml version="1.0"?><rates><rate currency="USD" value="1.08"/></rates>', "root"),
    (ecb(HISTORY, root="gesmes:Other"), "root"),
    (ecb({}), "no publication"),
    (ecb({"2025-03-13": []}), "no rate"),
    (ecb({"13 March 2025": [("USD", "1.08")]}), "time"),
    (ecb(HISTORY).replace('<Cube currency="USD" rate="1.0860"/>', '<Cube currency="USD"/>'),
     "currency or rate"),
    (ecb(HISTORY).replace('<Cube currency="USD" rate="1.0860"/>',
                          '<Cube currency="USD" rate="1.0860"><Cube/></Cube>'), "deeper"),
    # entity expansion ("billion laughs") never starts: a document type declaration is refused
    (ecb(HISTORY, extra='<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>\n'),
     "document type"),
])
def test_not_an_ecb_file(server, ws, doc, why):
    body = refused(server, ws[1], doc, 422, "validation_failed")
    assert [(e["pointer"], e["code"]) for e in body["errors"]] == [("", "not_ecb_reference_file")]
    assert why in body["errors"][0]["detail"]


def test_rates_of_the_file_are_checked_all_of_them(server, ws):
    doc = ecb({"2025-03-14": [("USD", "1.0882"), ("USD", "1.0883"), ("XYZ", "2"), ("EUR", "1"),
                              ("GBP", "-0.84"), ("JPY", "1e2"), ("CHF", "0.12345678901")],
               "2025-03-13": [("USD", "1.0860")],
               "2025-03-12": [("USD", "1.0892")]}).replace("2025-03-12", "2025-03-13")
    body = refused(server, ws[1], doc, 422, "validation_failed")
    got = sorted((e["code"], e["detail"].split(":")[0]) for e in body["errors"])
    assert got == sorted([("duplicate_currency", "2025-03-14 USD"),
                          ("unknown_currency", "2025-03-14 XYZ"),
                          ("unknown_currency", "2025-03-14 EUR"),
                          ("invalid_rate", "2025-03-14 GBP"),
                          ("invalid_rate", "2025-03-14 JPY"),
                          ("invalid_rate", "2025-03-14 CHF"),
                          ("duplicate_date", "2025-03-13")])
    assert all(e["pointer"] == "" for e in body["errors"])


def test_at_most_50_violations(server, ws):
    doc = ecb({"2025-%02d-%02d" % (1 + i // 28, 1 + i % 28): [("USD", "zero")] for i in range(80)})
    body = refused(server, ws[1], doc, 422, "validation_failed")
    assert len(body["errors"]) == 50


def test_another_media_type(server, ws):
    refused(server, ws[1], ecb(HISTORY), 415, "unsupported_media_type",
            content_type="application/json")
    refused(server, ws[1], ecb(HISTORY), 415, "unsupported_media_type", content_type="text/csv")


# ---- workspaces and scopes -----------------------------------------------------------------------

def test_other_workspaces_and_scopes(server, ws):
    wid, c = ws
    imported(c, ecb(FRIDAY))
    _, _, other = server.new_workspace()
    assert_problem(rates(other, date="2025-03-14"), 404, "not_found")
    email = "viewer-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid, email, "viewer")
    viewer = server.client(token=server.login(email, USER_PASSWORD, workspace_id=wid)["access_token"])
    assert assert_json(rates(viewer, date="2025-03-14"), 200)["date"] == "2025-03-14"
    before = table_counts(server)
    assert_problem(viewer.post(IMPORT, body=ecb(HISTORY), content_type=XML), 403,
                   "insufficient_scope")
    assert table_counts(server) == before


# ---- the reference rates the live reads show (GET /v1/rates, /rates/{pair}, history) ----------

def test_list_get_and_history_show_the_reference_rates(ws):
    """listRates shows the latest publication's EUR pairs (the file's figures as published)
    and a cross pair only when named; getRate?rate_type=reference the same figure; the
    reference history one point per publication, 1d only, cross rates by hand."""
    _, c = ws
    imported(c, ecb({**FRIDAY, **HISTORY}))
    listed = assert_json(c.get("/v1/rates?rate_type=reference&limit=100"), 200)["data"]
    assert [(x["pair"], x["mid"]) for x in listed] == [
        ("EURCHF", "0.9595"), ("EURGBP", "0.84085"), ("EURJPY", "161.61"), ("EURUSD", "1.0882")]
    assert all(x["bid"] == x["ask"] == x["mid"] and x["source"] == "ecb" and
               x["value_date"] == "2025-03-14" and x["rate_type"] == "reference" for x in listed)
    cross = half_even_10(Fraction("161.61") / Fraction("1.0882"))
    named = assert_json(c.get("/v1/rates?rate_type=reference&pair=USDJPY&pair=EURUSD"),
                        200)["data"]
    assert [(x["pair"], x["mid"]) for x in named] == [("EURUSD", "1.0882"), ("USDJPY", cross)]
    assert [x["pair"] for x in assert_json(c.get(
        "/v1/rates?rate_type=reference&quote_currency=GBP"), 200)["data"]] == ["EURGBP"]
    assert assert_json(c.get("/v1/rates?rate_type=reference&base_currency=USD"),
                       200)["data"] == []
    one = assert_json(c.get("/v1/rates/USDJPY?rate_type=reference"), 200)
    assert one["mid"] == cross and one["base_currency"] == "USD" and one["quote_currency"] == "JPY"
    assert_problem(c.get("/v1/rates/USDSEK?rate_type=reference"), 404, "not_found")
    hist = assert_json(c.get("/v1/rates/GBPUSD/history?rate_type=reference&interval=1d"
                             "&from=2025-03-12T00:00:00Z&to=2025-03-15T00:00:00Z&limit=2"), 200)
    want = [half_even_10(Fraction(usd) / Fraction(gbp)) for usd, gbp in
            (("1.0892", "0.84083"), ("1.0860", "0.83923"), ("1.0882", "0.84085"))]
    assert hist["rate_type"] == "reference" and hist["has_more"] is True
    assert [(p["start"], p["open"], p["close"], p["samples"]) for p in hist["data"]] == [
        ("2025-03-12T00:00:00.000Z", want[0], want[0], 1),
        ("2025-03-13T00:00:00.000Z", want[1], want[1], 1)]
    rest = assert_json(c.get("/v1/rates/GBPUSD/history?rate_type=reference&interval=1d"
                             "&from=2025-03-12T00:00:00Z&to=2025-03-15T00:00:00Z&limit=2"
                             "&cursor=" + hist["next_cursor"]), 200)
    assert [p["close"] for p in rest["data"]] == [want[2]] and rest["has_more"] is False
    # a range starting after midnight leaves that day out; `to` is exclusive
    mid_day = assert_json(c.get("/v1/rates/EURUSD/history?rate_type=reference&interval=1d"
                                "&from=2025-03-12T10:00:00Z&to=2025-03-14T00:00:00Z"), 200)
    assert [p["close"] for p in mid_day["data"]] == ["1.0860"]
    assert_problem(c.get("/v1/rates/EURSEK/history?rate_type=reference&interval=1d"
                         "&from=2025-03-12T00:00:00Z&to=2025-03-15T00:00:00Z"), 404, "not_found")
