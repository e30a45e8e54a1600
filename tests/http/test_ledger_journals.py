"""Journal entries of the ledger API: drafts with versions, posting under the rules in their
order (balance per currency, accounts, currencies, external_id, assertions, lock versions),
reversal, discard, lists; the stored balances against a recomputation from the immutable
postings; posted entries and postings refused any change by the database itself; and many
clients posting against one assertion at once."""

import random
import threading
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_problem, assert_validation, open_db

ACC = "/v1/ledger/accounts"
JRN = "/v1/ledger/journals"
DAY = "2025-03-14"


class Books:
    """A workspace with an owner (every scope) and members of other roles."""

    def __init__(self, server):
        self.server = server
        tag = uuid.uuid4().hex[:10]
        self.owner_email = "owner-%s@example.com" % tag
        self.wid = server.create_workspace("ledger-" + tag, self.owner_email,
                                           password=USER_PASSWORD)
        self.owner = self.login(self.owner_email)

    def login(self, email):
        tok = self.server.login(email, USER_PASSWORD, workspace_id=self.wid)["access_token"]
        return self.server.client(token=tok)

    def member(self, role):
        email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
        self.server.create_user(self.wid, email, role)
        return self.login(email)

    def account(self, classification="asset", currency="EUR", **over):
        body = {"code": "A" + uuid.uuid4().hex[:8], "name": "Account %s" % classification,
                "classification": classification, "currency": currency, **over}
        return assert_json(self.owner.post(ACC, json=body), 201)

    def get(self, acc):
        return assert_json(self.owner.get(ACC + "/" + acc["id"]), 200)


def line(acc, direction, amount, currency=None, **over):
    return {"ledger_account_id": acc["id"], "direction": direction, "amount": amount,
            "currency": currency or acc["currency"], **over}


def entry(lines, post=False, **over):
    return {"description": "test entry", "effective_date": DAY, "lines": lines,
            **({"post": True} if post else {}), **over}


@pytest.fixture(scope="module")
def books(server):
    return Books(server)


@pytest.fixture(scope="module")
def c(books):
    return books.owner


def pair(books, currency="EUR"):
    return books.account("asset", currency), books.account("liability", currency)


def count_entries(server, wid):
    with open_db(server) as db:
        return db.execute("SELECT COUNT(*) FROM journal_entries WHERE workspace_id = ?",
                          (wid,)).fetchone()[0]


def posted(acc):
    return acc["balances"]["posted"]


# ---- drafts and posting ----------------------------------------------------------------------

def test_a_draft_counts_in_pending_only_and_has_version_0(books, c):
    cash, loan = pair(books)
    r = c.post(JRN, json=entry([line(cash, "debit", 500), line(loan, "credit", 500)]))
    e = assert_json(r, 201)
    assert r.header("Location") == JRN + "/" + e["id"] and r.header("ETag") == '"v1"'
    assert e["status"] == "draft" and e["draft_version"] == 0 and e["source"] == "manual"
    assert e["totals"] == [{"currency": "EUR", "debits": 500, "credits": 500}]
    assert "posted_at" not in e
    got = books.get(cash)
    assert got["balances"]["pending"] == {"debits": 500, "credits": 0, "amount": 500}
    assert posted(got) == {"debits": 0, "credits": 0, "amount": 0}
    assert got["lock_version"] == 0
    # available of the liability: posted credits less its draft debits (none) = 0
    assert books.get(loan)["balances"]["available"]["amount"] == 0


def test_post_true_posts_at_once_and_moves_balances_and_lock_versions(books, c, server):
    cash, loan = pair(books)
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 700),
                                            line(loan, "credit", 700)], post=True)), 201)
    assert e["status"] == "posted" and e["posted_by"] and e["posted_at"]
    a, b = books.get(cash), books.get(loan)
    assert posted(a) == {"debits": 700, "credits": 0, "amount": 700}
    assert posted(b) == {"debits": 0, "credits": 700, "amount": 700}
    assert a["lock_version"] == 1 and b["lock_version"] == 1
    assert a["version"] == 1  # the account itself did not change
    with open_db(server) as db:
        rows = db.execute("SELECT line, ledger_account_id, direction, amount FROM ledger_postings "
                          "WHERE journal_entry_id = ? ORDER BY line", (e["id"],)).fetchall()
    assert [tuple(x) for x in rows] == [(0, cash["id"], "debit", 700),
                                        (1, loan["id"], "credit", 700)]


def test_posting_a_draft_moves_it_from_pending_to_posted(books, c):
    cash, loan = pair(books)
    d = assert_json(c.post(JRN, json=entry([line(cash, "debit", 40), line(loan, "credit", 40)])),
                    201)
    r = c.post(JRN + "/" + d["id"] + "/post", headers={"If-Match": '"v1"'})
    p = assert_json(r, 200)
    assert p["status"] == "posted" and p["version"] == 2 and r.header("ETag") == '"v2"'
    got = books.get(cash)
    assert posted(got)["amount"] == 40 and got["balances"]["pending"]["amount"] == 40
    assert_problem(c.post(JRN + "/" + d["id"] + "/post"), 409, "journal_not_editable")


def test_unbalanced_entry_names_each_currency_and_changes_nothing(books, c, server):
    cash, loan = pair(books)
    usd_a, usd_b = pair(books, "USD")
    before = count_entries(server, books.wid)
    r = c.post(JRN, json=entry([line(cash, "debit", 125000), line(loan, "credit", 120000),
                                line(usd_a, "debit", 10), line(usd_b, "credit", 10)],
                               post=True))
    body = assert_problem(r, 422, "unbalanced_entry")
    assert body["imbalances"] == [{"currency": "EUR", "debits": 125000, "credits": 120000,
                                   "difference": 5000}]
    assert [e["pointer"] for e in body["errors"]] == ["/lines"]
    assert count_entries(server, books.wid) == before
    assert posted(books.get(cash))["debits"] == 0


def test_a_balanced_cross_currency_entry_posts_one_leg_per_currency(books, c):
    cash, loan = pair(books)
    usd_a, usd_b = pair(books, "USD")
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 9), line(loan, "credit", 9),
                                            line(usd_a, "debit", 11),
                                            line(usd_b, "credit", 11)], post=True)), 201)
    assert sorted((t["currency"], t["debits"], t["credits"]) for t in e["totals"]) == \
        [("EUR", 9, 9), ("USD", 11, 11)]


def test_unknown_account_archived_account_and_currency_mismatch(books, c):
    cash, loan = pair(books)
    ghost = {"id": "lac_" + "0" * 26, "currency": "EUR"}
    assert_validation(c.post(JRN, json=entry([line(cash, "debit", 5), line(ghost, "credit", 5)],
                                             post=True)),
                      {"/lines/1/ledger_account_id": "ledger_account_not_found"})
    old = books.account("liability")
    assert_json(c.post(ACC + "/" + old["id"] + "/archive"), 200)
    body = assert_problem(c.post(JRN, json=entry([line(cash, "debit", 5),
                                                  line(old, "credit", 5)], post=True)),
                          422, "account_archived")
    assert body["errors"][0]["pointer"] == "/lines/1/ledger_account_id"
    body = assert_problem(c.post(JRN, json=entry([line(cash, "debit", 5, "USD"),
                                                  line(loan, "credit", 5, "USD")], post=True)),
                          422, "currency_mismatch")
    assert {e["pointer"] for e in body["errors"]} == {"/lines/0/currency", "/lines/1/currency"}
    # a draft is checked against the schema only
    assert_json(c.post(JRN, json=entry([line(cash, "debit", 5), line(ghost, "credit", 5)])), 201)


def test_balance_assertions_hold_or_refuse_the_whole_entry(books, c):
    cash, loan = pair(books)
    fund = entry([line(cash, "debit", 100), line(loan, "credit", 100)], post=True)
    assert_json(c.post(JRN, json=fund), 201)
    # spending 150 of 100 with an assertion that the cash stays >= 0
    spend = entry([line(loan, "debit", 150),
                   line(cash, "credit", 150, balance_assertions={"posted_balance_gte": 0})],
                  post=True)
    body = assert_problem(c.post(JRN, json=spend), 422, "balance_assertion_failed")
    assert [e["pointer"] for e in body["errors"]] == [
        "/lines/1/balance_assertions/posted_balance_gte"]
    assert posted(books.get(cash))["amount"] == 100
    spend["lines"][0]["amount"] = spend["lines"][1]["amount"] = 100
    assert_json(c.post(JRN, json=spend), 201)
    assert posted(books.get(cash))["amount"] == 0


def test_available_counts_the_drafts_that_lower_it(books, c):
    cash, loan = pair(books)
    assert_json(c.post(JRN, json=entry([line(cash, "debit", 100), line(loan, "credit", 100)],
                                       post=True)), 201)
    assert_json(c.post(JRN, json=entry([line(loan, "debit", 80), line(cash, "credit", 80)])), 201)
    got = books.get(cash)
    assert got["balances"]["available"] == {"debits": 100, "credits": 80, "amount": 20}
    over = entry([line(loan, "debit", 30),
                  line(cash, "credit", 30, balance_assertions={"available_balance_gte": 0})],
                 post=True)
    assert_problem(c.post(JRN, json=over), 422, "balance_assertion_failed")


def test_an_account_constraint_is_an_assertion_on_every_posting(books, c):
    cash = books.account("asset")
    wallet = books.account("liability", constraints={"debits_must_not_exceed_credits": True})
    bad = entry([line(wallet, "debit", 1), line(cash, "credit", 1)], post=True)
    body = assert_problem(c.post(JRN, json=bad), 422, "balance_assertion_failed")
    assert body["errors"][0]["pointer"] == "/lines/0"
    assert posted(books.get(wallet))["debits"] == 0


def test_account_lock_version_must_be_current(books, c):
    cash, loan = pair(books)
    ok = entry([line(cash, "debit", 3, account_lock_version=0), line(loan, "credit", 3)],
               post=True)
    assert_json(c.post(JRN, json=ok), 201)
    body = assert_problem(c.post(JRN, json=ok), 409, "lock_version_mismatch")
    assert body["errors"][0]["pointer"] == "/lines/0/account_lock_version"
    assert books.get(cash)["lock_version"] == 1


def test_external_id_is_unique_among_posted_entries_only(books, c):
    cash, loan = pair(books)
    ext = "JE-" + uuid.uuid4().hex[:8]
    lines = [line(cash, "debit", 2), line(loan, "credit", 2)]
    d1 = assert_json(c.post(JRN, json=entry(lines, external_id=ext)), 201)
    assert_json(c.post(JRN, json=entry(lines, external_id=ext)), 201)  # drafts may share
    assert_json(c.post(JRN + "/" + d1["id"] + "/post"), 200)
    assert_problem(c.post(JRN, json=entry(lines, external_id=ext, post=True)), 409,
                   "duplicate_external_id")


def test_sources(books, c):
    cash, loan = pair(books)
    lines = [line(cash, "debit", 2), line(loan, "credit", 2)]
    assert_validation(c.post(JRN, json=entry(lines, source="system")),
                      {"/source": "source_reserved"})
    assert_validation(c.post(JRN, json=entry(lines, source="payment",
                                             source_id="pay_" + "0" * 26)),
                      {"/source_id": "source_not_found"})
    assert_validation(c.post(JRN, json=entry(lines, source="conversion")),
                      {"/source_id": "required"})


# ---- drafts change; posted entries do not -----------------------------------------------------

def test_updating_a_draft_records_versions_oldest_first(books, c):
    cash, loan = pair(books)
    d = assert_json(c.post(JRN, json=entry([line(cash, "debit", 10), line(loan, "credit", 10)])),
                    201)
    path = JRN + "/" + d["id"]
    assert_problem(c.patch(path, json={"description": "x"}), 428, "precondition_required")
    assert_problem(c.patch(path, json={"description": "x"}, headers={"If-Match": '"v9"'}), 412)
    u = assert_json(c.patch(path, json={"lines": [line(cash, "debit", 15),
                                                  line(loan, "credit", 15)],
                                        "external_id": "E-1"},
                            headers={"If-Match": '"v1"'}), 200)
    assert u["draft_version"] == 1 and u["version"] == 2 and u["external_id"] == "E-1"
    assert books.get(cash)["balances"]["pending"]["debits"] == 15
    u = assert_json(c.patch(path, json={"external_id": None, "description": "third"},
                            headers={"If-Match": '"v2"'}), 200)
    assert "external_id" not in u and u["draft_version"] == 2
    page = assert_json(c.get(path + "/versions?limit=2"), 200)
    assert [v["number"] for v in page["data"]] == [0, 1] and page["has_more"]
    assert page["data"][0]["lines"][0]["amount"] == 10
    assert page["data"][1]["external_id"] == "E-1"
    rest = assert_json(c.get(path + "/versions?limit=2&cursor=" + page["next_cursor"]), 200)
    assert [v["number"] for v in rest["data"]] == [2] and not rest["has_more"]
    assert rest["data"][0]["description"] == "third"


def test_a_posted_entry_cannot_change_or_be_discarded(books, c):
    cash, loan = pair(books)
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 1), line(loan, "credit", 1)],
                                           post=True)), 201)
    body = assert_problem(c.patch(JRN + "/" + e["id"], json={"description": "x"},
                                  headers={"If-Match": '"v1"'}), 409, "journal_not_editable")
    assert "posted" in body["detail"]
    assert_problem(c.post(JRN + "/" + e["id"] + "/discard"), 409, "journal_not_editable")


def test_the_database_refuses_changes_to_posted_entries_and_postings(books, c, server):
    cash, loan = pair(books)
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 1), line(loan, "credit", 1)],
                                           post=True)), 201)
    for sql in ("UPDATE journal_entries SET lines = '[]' WHERE id = ?",
                "UPDATE journal_entries SET status = 'draft' WHERE id = ?",
                "DELETE FROM journal_entries WHERE id = ?",
                "UPDATE ledger_postings SET amount = 2 WHERE journal_entry_id = ?",
                "DELETE FROM ledger_postings WHERE journal_entry_id = ?"):
        db = open_db(server)
        try:
            with pytest.raises(Exception):
                db.execute(sql, (e["id"],))
                db.commit()
        finally:
            db.close()
    assert assert_json(c.get(JRN + "/" + e["id"]), 200)["lines"] == e["lines"]


def test_discard_is_for_the_creator_or_an_administrator(books, c):
    cash, loan = pair(books)
    accountant = books.member("accountant")
    d = assert_json(accountant.post(JRN, json=entry([line(cash, "debit", 6),
                                                     line(loan, "credit", 6)])), 201)
    other = books.member("accountant")
    assert_problem(other.post(JRN + "/" + d["id"] + "/discard"), 403, "not_creator")
    assert_problem(accountant.post(JRN + "/" + d["id"] + "/discard",
                                   headers={"If-Match": '"v7"'}), 412)
    x = assert_json(accountant.post(JRN + "/" + d["id"] + "/discard"), 200)
    assert x["status"] == "discarded" and x["discarded_at"]
    assert books.get(cash)["balances"]["pending"]["debits"] == 0
    d2 = assert_json(accountant.post(JRN, json=entry([line(cash, "debit", 6),
                                                      line(loan, "credit", 6)])), 201)
    assert_json(c.post(JRN + "/" + d2["id"] + "/discard"), 200)  # the owner administers


# ---- reversal ----------------------------------------------------------------------------------

def test_reversal_posts_the_mirror_entry_and_links_both_ways(books, c):
    cash, loan = pair(books)
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 90), line(loan, "credit", 90)],
                                           post=True)), 201)
    r = c.post(JRN + "/" + e["id"] + "/reverse", json={"effective_date": "2025-03-17"})
    rev = assert_json(r, 201)
    assert r.header("Location") == JRN + "/" + rev["id"]
    assert rev["status"] == "posted" and rev["source"] == "system"
    assert rev["reverses_entry_id"] == e["id"] and rev["effective_date"] == "2025-03-17"
    assert [(x["ledger_account_id"], x["direction"], x["amount"]) for x in rev["lines"]] == \
        [(cash["id"], "credit", 90), (loan["id"], "debit", 90)]
    orig = assert_json(c.get(JRN + "/" + e["id"]), 200)
    assert orig["reversed_by_entry_id"] == rev["id"] and orig["version"] == 2
    assert posted(books.get(cash)) == {"debits": 90, "credits": 90, "amount": 0}
    assert_problem(c.post(JRN + "/" + e["id"] + "/reverse"), 409, "already_reversed")
    d = assert_json(c.post(JRN, json=entry([line(cash, "debit", 1), line(loan, "credit", 1)])),
                    201)
    assert_problem(c.post(JRN + "/" + d["id"] + "/reverse"), 409, "invalid_transition")


# ---- lists, scopes, isolation -------------------------------------------------------------------

def test_list_filters_and_order(books, c):
    cash, loan = pair(books)
    made = []
    for day in ("2025-01-05", "2025-02-05", "2025-03-05"):
        made.append(assert_json(c.post(JRN, json=entry([line(cash, "debit", 1),
                                                        line(loan, "credit", 1)],
                                                       post=day != "2025-02-05",
                                                       effective_date=day)), 201))
    page = assert_json(c.get(JRN + "?ledger_account_id=%s" % cash["id"]), 200)
    assert [x["id"] for x in page["data"]] == [m["id"] for m in reversed(made)]
    page = assert_json(c.get(JRN + "?ledger_account_id=%s&status=draft" % cash["id"]), 200)
    assert [x["id"] for x in page["data"]] == [made[1]["id"]]
    page = assert_json(c.get(JRN + "?ledger_account_id=%s&effective_date_gte=2025-02-01"
                                   "&effective_date_lt=2025-03-05" % cash["id"]), 200)
    assert [x["id"] for x in page["data"]] == [made[1]["id"]]
    first = assert_json(c.get(JRN + "?ledger_account_id=%s&limit=2" % cash["id"]), 200)
    nxt = assert_json(c.get(JRN + "?ledger_account_id=%s&limit=2&cursor=%s"
                                  % (cash["id"], first["next_cursor"])), 200)
    assert [x["id"] for x in first["data"] + nxt["data"]] == [m["id"] for m in reversed(made)]
    assert_problem(c.get(JRN + "?ledger_account_id=%s&limit=2&cursor=%s"
                               % (loan["id"], first["next_cursor"])), 400, "invalid_cursor")


def test_the_account_filter_follows_a_draft_s_lines_as_they_change(books, c):
    """The filter reads the index of the accounts each entry has lines on, rewritten with the
    lines: a draft moved to other accounts leaves the first ones' lists, posting keeps it,
    and another account of the same workspace never lists it."""
    cash, loan = pair(books)
    bank, fee = pair(books)
    d = assert_json(c.post(JRN, json=entry([line(cash, "debit", 3), line(loan, "credit", 3)])),
                    201)

    def listed(acc):
        page = assert_json(c.get(JRN + "?ledger_account_id=%s" % acc["id"]), 200)
        return [x["id"] for x in page["data"]]
    assert listed(cash) == [d["id"]] and listed(loan) == [d["id"]] and listed(bank) == []
    assert_json(c.patch(JRN + "/" + d["id"], json={"lines": [line(bank, "debit", 3),
                                                         line(loan, "credit", 3)]},
                        headers={"If-Match": '"v1"'}), 200)
    assert listed(cash) == [] and listed(bank) == [d["id"]] and listed(loan) == [d["id"]]
    assert_json(c.post(JRN + "/" + d["id"] + "/post"), 200)
    assert listed(bank) == [d["id"]] and listed(fee) == []
    # an account id no entry names lists nothing
    assert assert_json(c.get(JRN + "?ledger_account_id=lac_" + "z" * 26), 200)["data"] == []


def test_the_period_filter_lists_the_entries_dated_within_it(server):
    """Both ends of the period included; an unknown period lists nothing. (A workspace of its
    own: once a workspace has periods, only an open one takes postings.)"""
    own = Books(server)
    c = own.owner
    cash, loan = pair(own)
    made = [assert_json(c.post(JRN, json=entry([line(cash, "debit", 1), line(loan, "credit", 1)],
                                               effective_date=day)), 201)
            for day in ("2025-02-04", "2025-02-05", "2025-03-05", "2025-03-06")]
    last = assert_json(c.post(JRN, json=entry([line(cash, "debit", 1), line(loan, "credit", 1)],
                                              effective_date="9999-12-31")), 201)
    per = assert_json(c.post("/v1/ledger/periods", json={
        "name": "feb", "fiscal_year": 2025, "start_date": "2025-02-05",
        "end_date": "2025-03-05"}), 201)
    page = assert_json(c.get(JRN + "?period_id=" + per["id"]), 200)
    assert [x["id"] for x in page["data"]] == [made[2]["id"], made[1]["id"]]
    assert {x["period_id"] for x in page["data"]} == {per["id"]}
    assert "period_id" not in assert_json(c.get(JRN + "/" + made[0]["id"]), 200)
    assert assert_json(c.get(JRN + "?period_id=per_" + "0" * 26), 200)["data"] == []
    # a period ending on the last day there is still takes its last day in
    end = assert_json(c.post("/v1/ledger/periods", json={
        "name": "end", "fiscal_year": 9999, "start_date": "9999-12-01",
        "end_date": "9999-12-31"}), 201)
    assert [x["id"] for x in assert_json(c.get(JRN + "?period_id=" + end["id"]),
                                         200)["data"]] == [last["id"]]


def test_scopes_and_other_workspaces(books, c, server):
    cash, loan = pair(books)
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 1), line(loan, "credit", 1)])),
                    201)
    treasurer = books.member("treasurer")  # ledger:read only
    assert_json(treasurer.get(JRN + "/" + e["id"]), 200)
    assert_problem(treasurer.post(JRN, json=entry([line(cash, "debit", 1),
                                                   line(loan, "credit", 1)])), 403,
                   "insufficient_scope")
    _, _, stranger = server.new_workspace()
    assert_problem(stranger.get(JRN + "/" + e["id"]), 404, "not_found")
    assert_problem(stranger.post(JRN + "/" + e["id"] + "/post"), 404, "not_found")
    # another workspace's accounts are not found either
    assert_validation(stranger.post(JRN, json=entry([line(cash, "debit", 1),
                                                     line(loan, "credit", 1)], post=True)),
                      {"/lines/0/ledger_account_id": "ledger_account_not_found",
                       "/lines/1/ledger_account_id": "ledger_account_not_found"})


def test_an_idempotent_refusal_replays_its_imbalances(books, c):
    cash, loan = pair(books)
    key = str(uuid.uuid4())
    body = entry([line(cash, "debit", 3), line(loan, "credit", 2)], post=True)
    a = assert_problem(c.post(JRN, json=body, headers={"Idempotency-Key": key}), 422,
                       "unbalanced_entry")
    b = assert_problem(c.post(JRN, json=body, headers={"Idempotency-Key": key}), 422,
                       "unbalanced_entry")
    assert a["imbalances"] == b["imbalances"] == [
        {"currency": "EUR", "debits": 3, "credits": 2, "difference": 1}]


# ---- invariants ---------------------------------------------------------------------------------

def check_invariants(server, wid):
    """Stored balances equal a recomputation from the postings; each currency balances; the
    latest checkpoint of each account equals its posted sums; no constraint is broken."""
    with open_db(server) as db:
        accounts = db.execute(
            "SELECT id, currency, posted_debits, posted_credits, lock_version, "
            "constraints_debits_must_not_exceed_credits, "
            "constraints_credits_must_not_exceed_debits FROM ledger_accounts "
            "WHERE workspace_id = ?", (wid,)).fetchall()
        sums = {row[0]: (row[1], row[2], row[3]) for row in db.execute(
            "SELECT ledger_account_id, "
            "SUM(CASE WHEN direction = 'debit' THEN amount ELSE 0 END), "
            "SUM(CASE WHEN direction = 'credit' THEN amount ELSE 0 END), "
            "COUNT(DISTINCT journal_entry_id) FROM ledger_postings WHERE workspace_id = ? "
            "GROUP BY ledger_account_id", (wid,)).fetchall()}
        latest = {row[0]: (row[1], row[2]) for row in db.execute(
            "SELECT b.ledger_account_id, b.posted_debits, b.posted_credits "
            "FROM ledger_balance_days b WHERE b.workspace_id = ? AND b.day = "
            "(SELECT MAX(x.day) FROM ledger_balance_days x "
            "WHERE x.ledger_account_id = b.ledger_account_id)", (wid,)).fetchall()}
    by_currency = {}
    for aid, cur, d, cr, lock, dnec, cned in accounts:
        want = sums.get(aid, (0, 0, 0))
        assert (d, cr) == (want[0], want[1]), (aid, d, cr, want)
        assert lock == want[2], (aid, lock, want)
        assert latest.get(aid, (0, 0)) == (d, cr), (aid, latest.get(aid), d, cr)
        assert not (dnec == 1 and d > cr) and not (cned == 1 and cr > d), aid
        tot = by_currency.setdefault(cur, [0, 0])
        tot[0] += d
        tot[1] += cr
    for cur, (d, cr) in by_currency.items():
        assert d == cr, (cur, d, cr)


def test_many_clients_against_one_assertion(server):
    """20 clients each try to spend 100 of a wallet holding 1,000 (its constraint and each
    line's assertion say it never goes below zero), from 20 connections at once: exactly 10
    succeed, the rest are refused with the documented problem, and the stored figures equal
    the accepted entries."""
    books = Books(server)
    c = books.owner
    cash = books.account("asset")
    wallet = books.account("liability", constraints={"debits_must_not_exceed_credits": True})
    assert_json(c.post(JRN, json=entry([line(cash, "debit", 1000),
                                        line(wallet, "credit", 1000)], post=True)), 201)
    spend = entry([line(wallet, "debit", 100, balance_assertions={"posted_balance_gte": 0}),
                   line(cash, "credit", 100)], post=True)
    clients = [books.login(books.owner_email) for _ in range(20)]
    results, go = [], threading.Barrier(len(clients))

    def send(cl):
        go.wait()
        results.append(cl.post(JRN, json=spend))

    threads = [threading.Thread(target=send, args=(cl,)) for cl in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    codes = sorted(r.status for r in results)
    assert codes == [201] * 10 + [422] * 10, codes
    for r in results:
        if r.status == 422:
            assert_problem(r, 422, "balance_assertion_failed")
    assert posted(books.get(wallet)) == {"debits": 1000, "credits": 1000, "amount": 0}
    check_invariants(server, books.wid)


def test_random_journals_keep_the_books_balanced(server):
    """A seeded mix of valid and invalid journals: every refusal is a documented problem, and
    after all of them the stored balances equal a recomputation from the postings, each
    currency balances, and the checkpoints agree."""
    rng = random.Random(22)
    books = Books(server)
    c = books.owner
    accounts = [books.account(rng.choice(["asset", "liability", "equity", "revenue", "expense"]),
                              cur) for cur in ("EUR", "EUR", "EUR", "USD", "USD", "JPY")]
    expected = {"unbalanced_entry", "validation_failed", "currency_mismatch",
                "balance_assertion_failed", "lock_version_mismatch"}
    drafts, outcomes = [], {}
    for i in range(120):
        cur = rng.choice(["EUR", "USD"])
        mine = [a for a in accounts if a["currency"] == cur]
        n = rng.randint(2, 5)
        lines, total = [], 0
        for k in range(n - 1):
            amt = rng.randint(1, 10_000)
            total += amt
            lines.append(line(rng.choice(mine), "debit", amt))
        lines.append(line(rng.choice(mine), "credit", total))
        fault = rng.random()
        if fault < 0.1:
            lines[0]["amount"] += 1                                   # unbalanced
        elif fault < 0.15:
            lines[0]["ledger_account_id"] = "lac_" + "1" * 26         # unknown account
        elif fault < 0.2:
            lines[0]["currency"] = lines[-1]["currency"] = "JPY"      # mismatch
        elif fault < 0.3:
            lines[-1]["balance_assertions"] = {"posted_balance_gte": rng.randint(-5000, 5000)}
        elif fault < 0.35:
            lines[0]["account_lock_version"] = rng.randint(0, 3)
        post = rng.random() < 0.8
        r = c.post(JRN, json=entry(lines, post=post,
                                   effective_date="2025-0%d-1%d" % (rng.randint(1, 9),
                                                                    rng.randint(0, 9))))
        if r.status == 201:
            outcomes["ok"] = outcomes.get("ok", 0) + 1
            if not post:
                drafts.append(r.json())
        else:
            body = assert_problem(r, r.status)
            assert body["code"] in expected, body
            outcomes[body["code"]] = outcomes.get(body["code"], 0) + 1
        if drafts and rng.random() < 0.2:
            d = drafts.pop(rng.randrange(len(drafts)))
            action = rng.choice(["/post", "/discard"])
            r = c.post(JRN + "/" + d["id"] + action)
            assert r.status == 200 or assert_problem(r, r.status)["code"] in expected, r
    assert outcomes.get("ok", 0) > 40 and len(outcomes) >= 4, outcomes
    check_invariants(server, books.wid)
    for a in accounts:
        got = books.get(a)
        with open_db(server) as db:
            d, cr = db.execute("SELECT posted_debits, posted_credits FROM ledger_accounts "
                               "WHERE id = ?", (a["id"],)).fetchone()
        assert (posted(got)["debits"], posted(got)["credits"]) == (d, cr)


def test_a_change_to_an_account_never_writes_its_balances_back(books, c):
    """A change to an account, at the version read before a posting (postings do not change
    the account's version), keeps the posting's figures. (That the save's statement does not
    even name them, x-table maintained, is checked on the generated SQL in tests/codegen.)"""
    cash, loan = pair(books)
    read = books.get(cash)
    assert_json(c.post(JRN, json=entry([line(cash, "debit", 55), line(loan, "credit", 55)],
                                       post=True)), 201)
    changed = assert_json(c.patch(ACC + "/" + cash["id"], json={"name": "Renamed"},
                                  headers={"If-Match": '"v%d"' % read["version"]}), 200)
    assert changed["name"] == "Renamed"
    assert posted(changed) == {"debits": 55, "credits": 0, "amount": 55}
    assert changed["lock_version"] == 1


def test_the_journal_listing_as_csv_has_one_row_per_line(books, c):
    cash, loan = pair(books)
    e = assert_json(c.post(JRN, json=entry([line(cash, "debit", 12), line(loan, "credit", 12)],
                                           post=True, external_id="CSV-" + uuid.uuid4().hex[:6])),
                    201)
    r = c.get(JRN + "?ledger_account_id=" + cash["id"], headers={"Accept": "text/csv"})
    assert r.status == 200 and r.header("Content-Type").startswith("text/csv"), r
    rows = r.body.decode().split("\r\n")
    assert rows[0] == ("journal_entry_id,effective_date,status,source,external_id,description,"
                       "line,ledger_account_id,ledger_account_code,direction,amount,currency")
    assert rows[1:3] == [
        "%s,%s,posted,manual,%s,test entry,0,%s,%s,debit,12,EUR" % (
            e["id"], DAY, e["external_id"], cash["id"], cash["code"]),
        "%s,%s,posted,manual,%s,test entry,1,%s,%s,credit,12,EUR" % (
            e["id"], DAY, e["external_id"], loan["id"], loan["code"])]
    assert_problem(c.get(JRN, headers={"Accept": "application/xml"}), 406, "not_acceptable")
