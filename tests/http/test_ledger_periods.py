"""Accounting periods (handlers/ledger_periods.c): creation (no overlap, unique names, end not
before start), every transition allowed and refused (future -> open -> closing -> closed ->
locked, reopen of closing and closed), the scopes each needs, the close checklist and the order
periods close and reopen in, If-Match, the audit records (a reopen's keeps its reason), another
workspace's periods (404), and the list's order, pages and filters.

The last section tests the posting rule (ledger_period_admits) through the journals API."""

import contextlib
import json
import random
import re
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import (ETAG, TIMESTAMP, assert_json, assert_problem, assert_validation, audit_of,
                     jwt_parts, open_db, table_counts)

PATH = "/v1/ledger/periods"
PER_ID = re.compile(r"^per_[0-9a-z]{26}$")
UNKNOWN = "per_" + "0" * 26
ACTIONS = ("open", "soft-close", "close", "lock", "reopen")
REASON = {"reason": "Supplier invoice INV-7781 dated 2025-03-28 arrived after the close."}


# ---- a workspace of its own for each test, and its people ---------------------------------

class Ws:
    """A fresh workspace: its owner (every scope), and members made on demand."""

    def __init__(self, server):
        self.server = server
        self.wid, token, self.owner = server.new_workspace()
        self.owner_id = jwt_parts(token)[1]["sub"]

    def member(self, role):
        email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
        self.server.create_user(self.wid, email, role)
        tok = self.server.login(email, USER_PASSWORD, workspace_id=self.wid)["access_token"]
        return self.server.client(token=tok), jwt_parts(tok)[1]["sub"]

    def service_token(self, scopes):
        """A client holding a service-account token with exactly scopes."""
        sa = assert_json(self.owner.post("/v1/admin/service-accounts", json={
            "name": "sa-" + uuid.uuid4().hex[:6], "role": "admin"}), 201)
        r = self.owner.post("/v1/admin/service-accounts/%s/tokens" % sa["id"],
                            json={"name": "t", "scopes": scopes})
        return self.server.client(token=assert_json(r, 201)["access_token"])


@pytest.fixture
def ws(server):
    return Ws(server)


def create(c, name, start, end, fiscal_year=2025, **extra):
    return c.post(PATH, json={"name": name, "fiscal_year": fiscal_year, "start_date": start,
                              "end_date": end, **extra})


def made(c, name, start, end, **kw):
    return assert_json(create(c, name, start, end, **kw), 201)


def act(c, period, action, body=None, if_match=None):
    headers = {"If-Match": if_match} if if_match else None
    if action == "reopen" and body is None:
        body = REASON
    return c.post("%s/%s/%s" % (PATH, period["id"], action), json=body, headers=headers)


def moved(c, period, action, body=None):
    return assert_json(act(c, period, action, body), 200)


def get(c, period):
    return assert_json(c.get(PATH + "/" + period["id"]), 200)


def month(n, year=2025):
    """(name, first day, last day) of month n of year."""
    last = [31, 29 if year % 4 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][n - 1]
    return "%d-%02d" % (year, n), "%d-%02d-01" % (year, n), "%d-%02d-%02d" % (year, n, last)


def walk(c, period, to):
    """period moved from future to `to` (every earlier period must be closed for a close)."""
    path = {"future": [], "open": ["open"], "closing": ["open", "soft-close"],
            "closed": ["open", "soft-close", "close"],
            "locked": ["open", "soft-close", "close", "lock"]}[to]
    for a in path:
        period = moved(c, period, a)
    assert period["status"] == to
    return period


@contextlib.contextmanager
def db(server):
    conn = open_db(server)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def unchanged(server, before):
    assert table_counts(server) == before


# ---- create and read -------------------------------------------------------------------------

def test_create_answers_201_future_with_location_and_etag(ws):
    r = create(ws.owner, "2025-04", "2025-04-01", "2025-04-30", metadata={"erp": "P04"})
    got = assert_json(r, 201)
    assert PER_ID.match(got["id"])
    assert r.header("Location") == PATH + "/" + got["id"]
    assert r.header("ETag") == '"v1"'
    assert got["object"] == "ledger_period" and got["workspace_id"] == ws.wid
    assert (got["name"], got["fiscal_year"], got["start_date"], got["end_date"]) == \
        ("2025-04", 2025, "2025-04-01", "2025-04-30")
    assert got["status"] == "future" and got["version"] == 1
    assert got["metadata"] == {"erp": "P04"}
    assert TIMESTAMP.match(got["created_at"]) and got["created_at"] == got["updated_at"]
    for k in ("opened_at", "soft_closed_at", "closed_at", "closed_by", "locked_at", "locked_by",
              "reopened_at", "reopened_by", "reopen_count"):
        assert k not in got, k
    r = ws.owner.get(PATH + "/" + got["id"])
    assert assert_json(r, 200) == got and r.header("ETag") == '"v1"'
    assert [a[1:4] for a in audit_of(ws.server, got["id"])] == \
        [("ledger_period.created", None, "future")]


def test_metadata_defaults_to_empty_and_a_single_day_period_is_allowed(ws):
    got = made(ws.owner, "day", "2025-06-30", "2025-06-30")
    assert got["metadata"] == {} and got["start_date"] == got["end_date"]


def test_end_before_start_is_422_at_end_date_and_changes_nothing(ws, server):
    before = table_counts(server)
    assert_validation(create(ws.owner, "bad", "2025-05-02", "2025-05-01"),
                      {"/end_date": "end_before_start"})
    unchanged(server, before)


@pytest.mark.parametrize("start, end", [
    ("2025-03-01", "2025-03-31"),  # the same days
    ("2025-03-10", "2025-03-12"),  # inside
    ("2025-02-15", "2025-03-01"),  # ends on its first day
    ("2025-03-31", "2025-04-15"),  # starts on its last day
    ("2025-02-01", "2025-04-30"),  # encloses it
])
def test_overlap_is_409_naming_the_other_and_changes_nothing(ws, server, start, end):
    other = made(ws.owner, "March", "2025-03-01", "2025-03-31")
    before = table_counts(server)
    body = assert_problem(create(ws.owner, "X", start, end), 409, "period_overlap")
    assert "March" in body["detail"] and other["id"] in body["detail"]
    unchanged(server, before)


def test_adjacent_periods_do_not_overlap(ws):
    made(ws.owner, "March", "2025-03-01", "2025-03-31")
    made(ws.owner, "Feb", "2025-02-01", "2025-02-28")
    made(ws.owner, "April", "2025-04-01", "2025-04-30")


def test_names_are_unique_in_a_workspace_only(ws, server):
    made(ws.owner, "2025-01", "2025-01-01", "2025-01-31")
    before = table_counts(server)
    body = assert_problem(create(ws.owner, "2025-01", "2025-02-01", "2025-02-28"), 409,
                          "duplicate_name")
    assert "2025-01" in body["detail"]
    unchanged(server, before)
    _, _, other = server.new_workspace()
    made(other, "2025-01", "2025-01-01", "2025-01-31")


def test_unknown_period_is_404(ws):
    assert_problem(ws.owner.get(PATH + "/" + UNKNOWN), 404, "not_found")
    for a in ACTIONS:
        assert_problem(act(ws.owner, {"id": UNKNOWN}, a), 404, "not_found")


def test_another_workspaces_period_is_404_everywhere_and_unchanged(ws, server):
    theirs = made(ws.owner, "theirs", "2025-01-01", "2025-01-31")
    theirs_open = walk(ws.owner, made(ws.owner, "theirs2", "2025-02-01", "2025-02-28"), "open")
    _, _, other = server.new_workspace()
    for p in (theirs, theirs_open):
        assert_problem(other.get(PATH + "/" + p["id"]), 404, "not_found")
        assert_problem(other.get(PATH + "/" + p["id"] + "/checklist"), 404, "not_found")
        for a in ACTIONS:
            assert_problem(act(other, p, a), 404, "not_found")
    assert assert_json(other.get(PATH), 200)["data"] == []
    assert get(ws.owner, theirs) == theirs and get(ws.owner, theirs_open) == theirs_open


# ---- transitions ----------------------------------------------------------------------------

def test_the_whole_life_of_a_period(ws):
    p = made(ws.owner, "2025-01", "2025-01-01", "2025-01-31")
    r = act(ws.owner, p, "open")
    o = assert_json(r, 200)
    assert o["status"] == "open" and o["version"] == 2 and r.header("ETag") == '"v2"'
    assert TIMESTAMP.match(o["opened_at"])
    s = moved(ws.owner, o, "soft-close")
    assert s["status"] == "closing" and s["version"] == 3 and TIMESTAMP.match(s["soft_closed_at"])
    assert s["opened_at"] == o["opened_at"]
    c = moved(ws.owner, s, "close")
    assert c["status"] == "closed" and c["version"] == 4
    assert TIMESTAMP.match(c["closed_at"]) and c["closed_by"] == ws.owner_id
    lk = moved(ws.owner, c, "lock")
    assert lk["status"] == "locked" and lk["version"] == 5
    assert TIMESTAMP.match(lk["locked_at"]) and lk["locked_by"] == ws.owner_id
    assert lk["closed_at"] == c["closed_at"] and lk["soft_closed_at"] == s["soft_closed_at"]
    assert get(ws.owner, p) == lk
    assert [a[1:4] for a in audit_of(ws.server, p["id"])] == [
        ("ledger_period.created", None, "future"),
        ("ledger_period.opened", "future", "open"),
        ("ledger_period.soft_closed", "open", "closing"),
        ("ledger_period.closed", "closing", "closed"),
        ("ledger_period.locked", "closed", "locked"),
    ]
    assert all(a[0] == ws.owner_id for a in audit_of(ws.server, p["id"]))


ALLOWED = {("future", "open"), ("open", "soft-close"), ("closing", "close"),
           ("closed", "lock"), ("closing", "reopen"), ("closed", "reopen")}


def test_every_transition_not_allowed_is_409_naming_the_status_and_changes_nothing(ws, server):
    """January locked, February closed, March closing, April open, May future: every action
    each may not take is refused."""
    states = ["locked", "closed", "closing", "open", "future"]
    periods = {}
    for n, state in enumerate(states, start=1):
        name, start, end = month(n)
        periods[state] = walk(ws.owner, made(ws.owner, name, start, end), state)
    before = table_counts(server)
    refused = 0
    for state, p in periods.items():
        for a in ACTIONS:
            if (state, a) in ALLOWED:
                continue
            body = assert_problem(act(ws.owner, p, a), 409, "invalid_transition")
            assert "is %s" % state in body["detail"], body
            refused += 1
        assert get(ws.owner, p) == p
    assert refused == len(states) * len(ACTIONS) - len(ALLOWED)
    unchanged(server, before)


def test_reopen_of_a_closed_period_keeps_the_reason_in_its_audit_record(ws):
    p = walk(ws.owner, made(ws.owner, "2025-03", "2025-03-01", "2025-03-31"), "closed")
    r = act(ws.owner, p, "reopen", body=REASON)
    o = assert_json(r, 200)
    assert o["status"] == "open" and o["version"] == p["version"] + 1
    assert r.header("ETag") == '"v%d"' % o["version"]
    assert o["reopen_count"] == 1 and o["reopened_by"] == ws.owner_id
    assert TIMESTAMP.match(o["reopened_at"])
    assert o["opened_at"] == p["opened_at"]
    for k in ("closed_at", "closed_by", "soft_closed_at"):
        assert k not in o, k  # the undone close's marks go; the audit records keep them
    rec = audit_of(ws.server, p["id"])[-1]
    assert rec[:4] == (ws.owner_id, "ledger_period.reopened", "closed", "open")
    assert json.loads(rec[4])["request"]["reason"] == REASON["reason"]
    # closed again, then reopened from closing: the count goes on
    c = moved(ws.owner, moved(ws.owner, o, "soft-close"), "close")
    assert TIMESTAMP.match(c["closed_at"]) and c["reopen_count"] == 1
    o2 = moved(ws.owner, moved(ws.owner, moved(ws.owner, c, "reopen"), "soft-close"), "reopen",
               body={"reason": "second thoughts"})
    assert o2["status"] == "open" and o2["reopen_count"] == 3
    rec = audit_of(ws.server, p["id"])[-1]
    assert rec[1:4] == ("ledger_period.reopened", "closing", "open")
    assert json.loads(rec[4])["request"]["reason"] == "second thoughts"


def test_reopen_needs_a_reason(ws, server):
    p = walk(ws.owner, made(ws.owner, "2025-03", "2025-03-01", "2025-03-31"), "closed")
    before = table_counts(server)
    assert_validation(act(ws.owner, p, "reopen", body={}), {"/reason": "required"})
    assert_validation(act(ws.owner, p, "reopen", body={"reason": ""}), {"/reason": "min_length"})
    unchanged(server, before)
    assert get(ws.owner, p) == p


def test_close_is_refused_while_an_earlier_period_is_not_closed(ws, server):
    jan = made(ws.owner, "2025-01", "2025-01-01", "2025-01-31")  # future
    feb = walk(ws.owner, made(ws.owner, "2025-02", "2025-02-01", "2025-02-28"), "open")
    mar = walk(ws.owner, made(ws.owner, "2025-03", "2025-03-01", "2025-03-31"), "closing")
    before = table_counts(server)
    body = assert_problem(act(ws.owner, mar, "close"), 409, "earlier_period_not_closed")
    assert "2025-01" in body["detail"] and jan["id"] in body["detail"], body  # the earliest
    assert "future" in body["detail"]
    unchanged(server, before)
    assert get(ws.owner, mar) == mar
    walk(ws.owner, jan, "closed")
    body = assert_problem(act(ws.owner, mar, "close"), 409, "earlier_period_not_closed")
    assert "2025-02" in body["detail"] and "open" in body["detail"], body
    moved(ws.owner, moved(ws.owner, get(ws.owner, feb), "soft-close"), "close")
    assert moved(ws.owner, mar, "close")["status"] == "closed"


def test_a_later_period_does_not_hold_up_a_close(ws):
    walk(ws.owner, made(ws.owner, "2025-02", "2025-02-01", "2025-02-28"), "open")
    jan = walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "closing")
    assert moved(ws.owner, jan, "close")["status"] == "closed"


def test_reopen_is_refused_while_a_later_period_is_closed_or_locked(ws, server):
    jan = walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "closed")
    feb = walk(ws.owner, made(ws.owner, "2025-02", "2025-02-01", "2025-02-28"), "closed")
    mar = walk(ws.owner, made(ws.owner, "2025-03", "2025-03-01", "2025-03-31"), "closing")
    before = table_counts(server)
    body = assert_problem(act(ws.owner, jan, "reopen"), 409, "later_period_closed")
    assert "2025-02" in body["detail"] and feb["id"] in body["detail"], body
    unchanged(server, before)
    assert get(ws.owner, jan) == jan
    # a later closing one does not count: February reopens, then January
    assert moved(ws.owner, feb, "reopen")["status"] == "open"
    assert moved(ws.owner, jan, "reopen")["status"] == "open"
    assert get(ws.owner, mar)["status"] == "closing"


def test_a_later_locked_period_forbids_reopening_for_good(ws):
    jan = walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "closed")
    walk(ws.owner, made(ws.owner, "2025-02", "2025-02-01", "2025-02-28"), "locked")
    body = assert_problem(act(ws.owner, jan, "reopen"), 409, "later_period_closed")
    assert "locked" in body["detail"]


@pytest.mark.parametrize("action, state", [("open", "future"), ("soft-close", "open"),
                                           ("close", "closing"), ("lock", "closed"),
                                           ("reopen", "closed")])
def test_if_match_guards_every_transition(ws, server, action, state):
    p = walk(ws.owner, made(ws.owner, "p", "2025-01-01", "2025-01-31"), state)
    before = table_counts(server)
    for v in {max(1, p["version"] - 1), p["version"] + 1} - {p["version"]}:
        assert_problem(act(ws.owner, p, action, if_match='"v%d"' % v), 412,
                       "precondition_failed")
    unchanged(server, before)
    assert get(ws.owner, p) == p
    r = act(ws.owner, p, action, if_match='"v%d"' % p["version"])
    got = assert_json(r, 200)
    assert got["version"] == p["version"] + 1
    assert ETAG.match(r.header("ETag")) and r.header("ETag") == '"v%d"' % got["version"]


# ---- scopes -----------------------------------------------------------------------------------

def test_treasurer_reads_but_changes_nothing(ws, server):
    treasurer, _ = ws.member("treasurer")  # ledger:read only
    p = walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "open")
    assert assert_json(treasurer.get(PATH), 200)["data"] == [p]
    assert get(treasurer, p) == p
    assert_json(treasurer.get(PATH + "/" + p["id"] + "/checklist"), 200)
    before = table_counts(server)
    assert_problem(create(treasurer, "x", "2025-02-01", "2025-02-28"), 403, "insufficient_scope")
    for a in ACTIONS:
        assert_problem(act(treasurer, p, a), 403, "insufficient_scope")
    unchanged(server, before)


def test_accountant_closes_but_only_an_administrator_locks_and_reopens(ws, server):
    accountant, acc_id = ws.member("accountant")  # ledger:read, write and close
    p = made(accountant, "2025-01", "2025-01-01", "2025-01-31")
    c = walk(accountant, p, "closed")
    assert c["closed_by"] == acc_id
    before = table_counts(server)
    r = assert_problem(act(accountant, c, "lock"), 403, "insufficient_scope")
    assert "workspace:admin" in r["detail"]
    assert_problem(act(accountant, c, "reopen"), 403, "insufficient_scope")
    unchanged(server, before)
    assert moved(ws.owner, c, "reopen")["reopened_by"] == ws.owner_id
    assert_problem(act(accountant, get(ws.owner, p), "reopen"), 403, "insufficient_scope")
    c = moved(accountant, moved(accountant, get(ws.owner, p), "soft-close"), "close")
    assert moved(ws.owner, c, "lock")["locked_by"] == ws.owner_id


def test_soft_close_and_close_need_ledger_close_not_ledger_write(ws, server):
    writer = ws.service_token(["ledger:read", "ledger:write"])
    p = made(writer, "2025-01", "2025-01-01", "2025-01-31")
    o = moved(writer, p, "open")
    before = table_counts(server)
    assert_problem(act(writer, o, "soft-close"), 403, "insufficient_scope")
    unchanged(server, before)
    s = moved(ws.owner, o, "soft-close")
    before = table_counts(server)
    assert_problem(act(writer, s, "close"), 403, "insufficient_scope")
    unchanged(server, before)
    assert get(ws.owner, s) == s
    closer = ws.service_token(["ledger:read", "ledger:close"])
    assert_problem(act(closer, s, "open"), 403, "insufficient_scope")  # ledger:write
    c = moved(closer, s, "close")
    # a service account acts for the person who minted its token
    assert c["status"] == "closed" and c["closed_by"] == ws.owner_id


# ---- the close checklist ----------------------------------------------------------------------

CHECKS = ["earlier_periods_closed", "unposted_drafts", "unreconciled_bank_transactions",
          "trial_balance_balanced"]


def checklist(c, p):
    got = assert_json(c.get(PATH + "/" + p["id"] + "/checklist"), 200)
    assert got["object"] == "period_close_checklist" and got["period_id"] == p["id"]
    assert TIMESTAMP.match(got["generated_at"])
    assert [x["check"] for x in got["checks"]] == CHECKS
    return got, {x["check"]: x for x in got["checks"]}


def test_checklist_of_a_period_ready_to_close(ws):
    p = made(ws.owner, "2025-01", "2025-01-01", "2025-01-31")
    got, by = checklist(ws.owner, p)
    assert got["ready"] is True
    for name in CHECKS:
        assert by[name] == {"check": name, "result": "passed", "count": 0}


def test_checklist_counts_the_earlier_periods_not_closed(ws):
    made(ws.owner, "2025-01", "2025-01-01", "2025-01-31")
    walk(ws.owner, made(ws.owner, "2025-02", "2025-02-01", "2025-02-28"), "open")
    walk(ws.owner, made(ws.owner, "2024-12", "2024-12-01", "2024-12-31"), "locked")
    walk(ws.owner, made(ws.owner, "2025-04", "2025-04-01", "2025-04-30"), "open")  # later
    mar = made(ws.owner, "2025-03", "2025-03-01", "2025-03-31")
    got, by = checklist(ws.owner, mar)
    assert got["ready"] is False
    e = by["earlier_periods_closed"]
    assert (e["result"], e["count"]) == ("failed", 2) and "2025-01" in e["detail"], e
    for name in CHECKS[1:]:
        assert by[name]["result"] == "passed"


def insert_draft(server, wid, day):
    with db(server) as conn:
        conn.execute(
            "INSERT INTO journal_entries (id, workspace_id, description, effective_date, status, "
            "lines, source, created_by, draft_version, metadata, version, created_at, "
            "updated_at) VALUES (?, ?, 'draft', ?, 'draft', '[]', 'manual', 'usr_x', 1, '{}', 1, "
            "'2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
            ("jrn_" + uuid.uuid4().hex[:26], wid, day))


def insert_account(server, wid, currency):
    acc = "lac_" + uuid.uuid4().hex[:26]
    with db(server) as conn:
        conn.execute(
            "INSERT INTO ledger_accounts (id, workspace_id, code, name, classification, "
            "normal_balance, currency, currency_exponent, status, metadata, version, created_at, "
            "updated_at) VALUES (?, ?, ?, 'a', 'asset', 'debit', ?, 2, 'active', '{}', 1, "
            "'2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
            (acc, wid, acc[-8:], currency))
    return acc


def insert_checkpoint(server, wid, acc, day, debits, credits):
    with db(server) as conn:
        conn.execute("INSERT INTO ledger_balance_days (ledger_account_id, day, workspace_id, "
                     "posted_debits, posted_credits) VALUES (?, ?, ?, ?, ?)",
                     (acc, day, wid, debits, credits))


def test_drafts_dated_in_the_period_fail_the_checklist_and_the_close(ws, server):
    """Journal drafts are written straight into the table (the journals API is another
    file's): only those dated in the period and still drafts count."""
    p = walk(ws.owner, made(ws.owner, "2025-03", "2025-03-01", "2025-03-31"), "closing")
    insert_draft(server, ws.wid, "2025-02-28")
    insert_draft(server, ws.wid, "2025-04-01")
    _, by = checklist(ws.owner, p)
    assert by["unposted_drafts"]["result"] == "passed"
    insert_draft(server, ws.wid, "2025-03-01")
    insert_draft(server, ws.wid, "2025-03-31")
    got, by = checklist(ws.owner, p)
    assert got["ready"] is False
    d = by["unposted_drafts"]
    assert (d["result"], d["count"]) == ("failed", 2) and "2025-03" in d["detail"], d
    before = table_counts(server)
    body = assert_problem(act(ws.owner, p, "close"), 409, "close_checklist_failed")
    assert body["errors"] == [{"pointer": "/checks/unposted_drafts", "code": "unposted_drafts",
                               "detail": d["detail"]}]
    unchanged(server, before)
    assert get(ws.owner, p) == p
    with db(server) as conn:
        conn.execute("UPDATE journal_entries SET status = 'discarded' WHERE workspace_id = ?",
                     (ws.wid,))
    assert moved(ws.owner, p, "close")["status"] == "closed"


def test_the_trial_balance_check_reads_each_accounts_latest_checkpoint_by_the_end(ws, server):
    p = walk(ws.owner, made(ws.owner, "2025-03", "2025-03-01", "2025-03-31"), "closing")
    eur = insert_account(server, ws.wid, "EUR")
    # its latest checkpoint by 31 March balances; an earlier one alone, or a later one, would not
    insert_checkpoint(server, ws.wid, eur, "2025-03-05", 100, 0)
    insert_checkpoint(server, ws.wid, eur, "2025-03-20", 100, 100)
    insert_checkpoint(server, ws.wid, eur, "2025-04-02", 900, 100)
    got, by = checklist(ws.owner, p)
    assert by["trial_balance_balanced"]["result"] == "passed" and got["ready"] is True
    usd = insert_account(server, ws.wid, "USD")
    gbp = insert_account(server, ws.wid, "GBP")
    insert_checkpoint(server, ws.wid, usd, "2025-03-31", 50, 0)  # on the last day: counts
    insert_checkpoint(server, ws.wid, gbp, "2025-02-01", 0, 70)  # an earlier month: counts
    got, by = checklist(ws.owner, p)
    t = by["trial_balance_balanced"]
    assert (t["result"], t["count"]) == ("failed", 2) and got["ready"] is False, t
    body = assert_problem(act(ws.owner, p, "close"), 409, "close_checklist_failed")
    assert [e["pointer"] for e in body["errors"]] == ["/checks/trial_balance_balanced"]
    # balanced within the currency by a second account: passes again
    usd2 = insert_account(server, ws.wid, "USD")
    gbp2 = insert_account(server, ws.wid, "GBP")
    insert_checkpoint(server, ws.wid, usd2, "2025-03-10", 0, 50)
    insert_checkpoint(server, ws.wid, gbp2, "2025-03-10", 70, 0)
    got, by = checklist(ws.owner, p)
    assert by["trial_balance_balanced"]["count"] == 0 and got["ready"] is True
    assert moved(ws.owner, p, "close")["status"] == "closed"


def test_another_workspaces_drafts_do_not_count(ws, server):
    p = made(ws.owner, "2025-03", "2025-03-01", "2025-03-31")
    other, _, _ = server.new_workspace()
    insert_draft(server, other, "2025-03-10")
    _, by = checklist(ws.owner, p)
    assert by["unposted_drafts"]["count"] == 0


# ---- the list ---------------------------------------------------------------------------------

def test_list_is_latest_first_by_start_date_whatever_the_creation_order(ws):
    months = list(range(1, 13))
    random.shuffle(months)
    for n in months:
        made(ws.owner, *month(n))
    seen, cursor = [], None
    while True:
        url = PATH + "?limit=5" + ("&cursor=" + cursor if cursor else "")
        page = assert_json(ws.owner.get(url), 200)
        assert len(page["data"]) <= 5
        seen += [p["name"] for p in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    assert seen == ["2025-%02d" % n for n in range(12, 0, -1)]


def names(c, query):
    return [p["name"] for p in assert_json(c.get(PATH + "?limit=100&" + query), 200)["data"]]


def test_filters_status_fiscal_year_and_date(ws):
    nov, dec = (made(ws.owner, *month(n, 2024), fiscal_year=2024) for n in (11, 12))
    walk(ws.owner, nov, "locked")
    walk(ws.owner, dec, "closed")
    jan = made(ws.owner, *month(1))
    feb = made(ws.owner, *month(2))
    made(ws.owner, "2025-03a", "2025-03-01", "2025-03-15")
    # a gap from 16 March to 31 March
    made(ws.owner, *month(4))
    walk(ws.owner, jan, "closed")
    walk(ws.owner, feb, "open")
    assert names(ws.owner, "status=closed") == ["2025-01", "2024-12"]
    assert names(ws.owner, "status=open") == ["2025-02"]
    assert names(ws.owner, "status=future") == ["2025-04", "2025-03a"]
    assert names(ws.owner, "status=locked") == ["2024-11"]
    assert names(ws.owner, "status=closing") == []
    assert names(ws.owner, "fiscal_year=2024") == ["2024-12", "2024-11"]
    assert names(ws.owner, "fiscal_year=2025&status=closed") == ["2025-01"]
    assert names(ws.owner, "fiscal_year=2026") == []
    assert names(ws.owner, "") == ["2025-04", "2025-03a", "2025-02", "2025-01", "2024-12",
                                   "2024-11"]
    # date: the period covering the day, both ends inclusive
    assert names(ws.owner, "date=2025-02-14") == ["2025-02"]
    assert names(ws.owner, "date=2025-02-01") == ["2025-02"]
    assert names(ws.owner, "date=2025-02-28") == ["2025-02"]
    assert names(ws.owner, "date=2025-03-15") == ["2025-03a"]
    assert names(ws.owner, "date=2025-03-16") == []
    assert names(ws.owner, "date=2024-12-31") == ["2024-12"]
    assert names(ws.owner, "date=2025-01-01") == ["2025-01"]
    assert names(ws.owner, "date=2025-02-14&status=closed") == []
    assert names(ws.owner, "date=2023-06-01") == []


def test_the_date_filter_finds_a_period_ending_on_the_last_day_there_is(server):
    """9999-12-31 has no day after it that sorts after it as text ("10000-01-01" sorts
    before): the filter compares the period's own days, both ends inclusive."""
    c = server.new_workspace()[2]
    made(c, "9999-12", "9999-12-01", "9999-12-31", fiscal_year=9999)
    assert names(c, "date=9999-12-31") == ["9999-12"]
    assert names(c, "date=9999-12-01") == ["9999-12"]
    assert names(c, "date=9999-11-30") == []


def test_a_cursor_serves_only_the_filters_it_was_issued_for(ws):
    for n in range(1, 5):
        made(ws.owner, *month(n))
    page = assert_json(ws.owner.get(PATH + "?limit=1&fiscal_year=2025"), 200)
    assert page["has_more"]
    assert_problem(ws.owner.get(PATH + "?limit=1&fiscal_year=2024&cursor=" +
                                page["next_cursor"]), 400, "invalid_cursor")
    nxt = assert_json(ws.owner.get(PATH + "?limit=1&fiscal_year=2025&cursor=" +
                                   page["next_cursor"]), 200)
    assert [p["name"] for p in nxt["data"]] == ["2025-03"]


def test_list_filters_are_validated(ws):
    for q in ("status=opened", "fiscal_year=1899", "fiscal_year=x", "date=2025-02-30",
              "date=20250201"):
        assert_problem(ws.owner.get(PATH + "?" + q), 400, "invalid_request")


# ---- the posting rule (ledger_period_admits), through the journals API ---------------------


def accounts(c):
    out = []
    for code, cls, nb in (("1010", "asset", "debit"), ("4000", "revenue", "credit")):
        out.append(assert_json(c.post("/v1/ledger/accounts", json={
            "code": code + uuid.uuid4().hex[:4], "name": "acc " + code, "classification": cls,
            "normal_balance": nb, "currency": "EUR", "currency_exponent": 2}), 201))
    return out


def entry(c, accs, day, post=True):
    return c.post("/v1/ledger/journals", json={
        "description": "test", "effective_date": day, "post": post, "lines": [
            {"ledger_account_id": accs[0]["id"], "direction": "debit", "amount": 100,
             "currency": "EUR"},
            {"ledger_account_id": accs[1]["id"], "direction": "credit", "amount": 100,
             "currency": "EUR"}]})


def test_without_periods_every_date_posts(ws):
    accs = accounts(ws.owner)
    assert_json(entry(ws.owner, accs, "2019-05-05"), 201)


@pytest.mark.parametrize("state", ["future", "closed", "locked"])
def test_posting_into_a_period_that_is_not_open_is_409_period_closed(ws, server, state):
    accs = accounts(ws.owner)
    p = walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), state)
    before = table_counts(server)
    body = assert_problem(entry(ws.owner, accs, "2025-01-15"), 409, "period_closed")
    assert "2025-01" in body["detail"] and state in body["detail"]
    assert [e["pointer"] for e in body["errors"]] == ["/effective_date"]
    unchanged(server, before)
    assert get(ws.owner, p) == p


def test_posting_on_a_date_no_period_covers_is_409(ws):
    accs = accounts(ws.owner)
    walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "open")
    assert_json(entry(ws.owner, accs, "2025-01-31"), 201)
    assert_problem(entry(ws.owner, accs, "2025-02-01"), 409, "period_closed")


def test_a_closing_period_takes_entries_only_with_ledger_close(ws, server):
    accs = accounts(ws.owner)
    walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "closing")
    writer = ws.service_token(["ledger:read", "ledger:write"])
    before = table_counts(server)
    assert_problem(entry(writer, accs, "2025-01-10"), 403, "insufficient_scope")
    unchanged(server, before)
    accountant, _ = ws.member("accountant")
    assert_json(entry(accountant, accs, "2025-01-10"), 201)


def test_drafts_made_through_the_api_hold_up_the_close(ws):
    accs = accounts(ws.owner)
    p = walk(ws.owner, made(ws.owner, "2025-01", "2025-01-01", "2025-01-31"), "closing")
    assert_json(entry(ws.owner, accs, "2025-01-10", post=False), 201)
    _, by = checklist(ws.owner, p)
    assert by["unposted_drafts"]["count"] == 1
    assert_problem(act(ws.owner, p, "close"), 409, "close_checklist_failed")
