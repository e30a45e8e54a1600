"""Content negotiation (RFC 9110 §12.5.1) on GET /v1/payments, which answers application/json
and text/csv: the CSV page (RFC 4180, formula-safe cells) holds the same payments as the JSON
one, q-values and media ranges pick the representation, nothing acceptable answers 406
not_acceptable, every answer carries Vary: Accept, errors stay problem documents, HEAD and the
Link header to the next page."""

import csv
import io
import re
import urllib.parse

import pytest

from helpers import assert_json, assert_problem, media_type
from payments_team import PAY, Team

CSV_HEADER = ["id", "created_at", "updated_at", "status", "amount", "currency", "type",
              "priority", "originating_account", "beneficiary_id", "effective_date",
              "remittance_information", "external_id", "batch_id", "failure_code",
              "failure_reason", "rail_reference", "version"]
# Cells a spreadsheet would run as formulas, and cells that need RFC 4180 quoting.
TRICKY = ["=HYPERLINK(\"https://evil.example\",\"x\")", "+1+2", "@SUM(A1:A2)",
          "say \"hi\", then\r\nnext line", "plain text"]


@pytest.fixture(scope="module")
def team(server):
    t = Team(server)
    ben = t.beneficiary()
    for i, text in enumerate(TRICKY):
        over = {"remittance_information": text}
        if i == 0:
            over["external_id"] = "-42"
        r = t.pay(ben, amount=1000 + i, **over)
        assert r.status == 201, r
    return t


def get(client, accept=None, query="?limit=100", method="GET"):
    return client.request(method, PAY + query, headers={"Accept": accept} if accept is not None
                          else None)


def rows_of(resp):
    assert resp.status == 200, resp
    assert resp.header("Content-Type") == "text/csv; charset=utf-8", resp
    text = resp.body.decode("utf-8")
    assert text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == CSV_HEADER
    return [dict(zip(CSV_HEADER, row)) for row in rows[1:]]


def unformula(cell):
    return cell[1:] if cell[:2] in ("'=", "'+", "'-", "'@") else cell


def test_csv_rows_match_the_json_page(team):
    page = assert_json(get(team.owner), 200)
    rows = rows_of(get(team.owner, "text/csv"))
    assert len(rows) == len(page["data"]) == len(TRICKY)
    for row, p in zip(rows, page["data"]):
        assert row["id"] == p["id"]
        assert row["amount"] == str(p["amount"]) and re.fullmatch(r"[1-9][0-9]*", row["amount"])
        for k in ("created_at", "updated_at", "status", "currency", "type", "priority",
                  "originating_account", "beneficiary_id", "effective_date"):
            assert row[k] == p[k], k
        assert row["version"] == str(p["version"])
        for k in ("remittance_information", "external_id", "batch_id", "failure_code",
                  "failure_reason", "rail_reference"):
            assert unformula(row[k]) == p.get(k, ""), (k, row[k], p.get(k))


def test_csv_cells_are_formula_safe_and_quoted(team):
    rows = rows_of(get(team.owner, "text/csv"))
    by_text = {unformula(r["remittance_information"]): r for r in rows}
    for text in TRICKY:
        cell = by_text[text]["remittance_information"]
        if text[0] in "=+-@":
            assert cell == "'" + text, cell
        else:
            assert cell == text, cell
    assert by_text[TRICKY[0]]["external_id"] == "'-42"
    raw = get(team.owner, "text/csv").body.decode("utf-8")
    assert '"say ""hi"", then\r\nnext line"' in raw  # quotes doubled, line break kept quoted


@pytest.mark.parametrize("accept,want", [
    ("text/csv", "text/csv"),
    ("text/*", "text/csv"),
    ("TEXT/CSV", "text/csv"),
    ("*/*", "application/json"),
    ("", "application/json"),
    ("text/csv, application/json", "application/json"),            # tie: the spec's order
    ("application/json;q=0.5, text/csv", "text/csv"),
    ("text/csv;q=0.5, application/json", "application/json"),
    ("application/json;q=0, */*", "text/csv"),                      # q=0 excludes
    ("text/csv;q=0.001, application/json;q=0", "text/csv"),
    ("text/*;q=0.9, */*;q=0.1", "text/csv"),
    ("text/csv;charset=utf-8", "text/csv"),
    ("garbage, text/csv", "text/csv"),                               # bad elements ignored
    ("application/json;q=0.8, text/csv;q=0.8", "application/json"),
])
def test_accept_picks_the_representation(team, accept, want):
    r = get(team.owner, accept, query="?limit=1")
    assert r.status == 200, r
    assert media_type(r) == want, (accept, r)


def test_no_accept_header_answers_json(team):
    r = get(team.owner, None, query="?limit=1")
    assert_json(r, 200)


@pytest.mark.parametrize("accept", ["application/xml", "image/*", "text/html",
                                    "application/json;q=0, text/csv;q=0", "*/*;q=0",
                                    "text/csv;charset=latin1", "garbage"])
def test_nothing_acceptable_answers_406_as_a_problem(team, accept):
    r = get(team.owner, accept, query="?limit=1")
    body = assert_problem(r, 406, "not_acceptable")
    assert "application/json, text/csv" in body["detail"], body
    assert "Accept" in (r.header("Vary") or "")


def test_every_answer_varies_on_accept(team):
    for accept in ("application/json", "text/csv", "application/xml"):
        r = get(team.owner, accept, query="?limit=1")
        assert "Accept" in [v.strip() for v in (r.header("Vary") or "").split(",")], r
    # an error before the operation runs (no token) varies too: the operation is known
    r = team.owner.request("GET", PAY, headers={"Accept": "text/csv"}, token=False)
    assert_problem(r, 401)
    assert "Accept" in (r.header("Vary") or "")
    # an operation that is not negotiated does not
    r = team.owner.get("/v1/beneficiaries?limit=1")
    assert "Accept" not in (r.header("Vary") or "")


def test_errors_stay_problem_documents_whatever_accept_says(team):
    r = get(team.owner, "text/csv", query="?limit=0")
    body = assert_problem(r, 400, "invalid_request")
    assert any(e["pointer"] == "/query/limit" for e in body["errors"]), body
    r = get(team.owner, "text/csv", query="?cursor=bm90LWEtY3Vyc29y")
    assert_problem(r, 400, "invalid_cursor")


def test_head_answers_the_csv_head_without_a_body(team):
    full = get(team.owner, "text/csv")
    head = get(team.owner, "text/csv", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.header("Content-Type") == "text/csv; charset=utf-8"
    assert head.header("Content-Length") == str(len(full.body))
    assert "Accept" in (head.header("Vary") or "")
    head = get(team.owner, "application/xml", method="HEAD")
    assert head.status == 406 and head.body == b""


def next_link(resp):
    link = resp.header("Link")
    if link is None:
        return None
    m = re.fullmatch(r'<(/v1/payments\?[^>]*)>; rel="next"', link)
    assert m, link
    return m.group(1)


def test_csv_pages_follow_the_link_header(team):
    seen, url, pages = [], PAY + "?limit=2&currency=EUR", 0
    while url:
        r = team.owner.get(url, headers={"Accept": "text/csv"})
        rows = rows_of(r)
        assert 1 <= len(rows) <= 2
        seen += [row["id"] for row in rows]
        url = next_link(r)
        pages += 1
        assert pages < 10
    assert pages == 3
    everything = [p["id"] for p in assert_json(get(team.owner), 200)["data"]]
    assert seen == everything


def test_the_json_page_links_its_next_cursor(team):
    r = get(team.owner, None, query="?limit=2")
    page = assert_json(r, 200)
    assert page["has_more"] is True
    link = next_link(r)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    assert q["cursor"] == [page["next_cursor"]] and q["limit"] == ["2"]
    # the link repeats the request's filters as sent, a repeated one included, and replaces
    # the cursor it came with
    r = get(team.owner, None, query="?limit=1&status=approved&status=pending_approval")
    page = assert_json(r, 200)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(next_link(r)).query)
    assert q == {"limit": ["1"], "status": ["approved", "pending_approval"],
                 "cursor": [page["next_cursor"]]}
    r2 = team.owner.get(next_link(r))
    q2 = urllib.parse.parse_qs(urllib.parse.urlsplit(next_link(r2)).query)
    assert q2["cursor"] == [assert_json(r2, 200)["next_cursor"]] and q2["status"] == q["status"]
    last = assert_json(get(team.owner, None, query="?limit=100"), 200)
    assert last["has_more"] is False
    assert get(team.owner, None, query="?limit=100").header("Link") is None
