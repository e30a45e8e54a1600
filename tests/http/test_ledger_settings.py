"""The ledger's posting settings (GET/PUT /v1/ledger/settings): the defaults a new workspace
reads (no 404, version 1), the replacement as a whole under a required If-Match (428 without,
412 stale), every check beyond the schema at its pointer with nothing changed, the audit record
with the settings before and after, and the scopes (ledger:read, ledger:write).

The accounts the settings name are made through POST /v1/ledger/accounts when the chart of
accounts is built, else written into the table as handlers/ledger_accounts.c would (the
branch that built the settings had no chart yet)."""

import contextlib
import json
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import ETAG, TIMESTAMP, assert_json, assert_problem, assert_validation, open_db

PATH = "/v1/ledger/settings"
ACCOUNTS = "/v1/ledger/accounts"
EMPTY = {"enabled": True, "cash_accounts": [], "payee_clearing_accounts": []}


class Ws:
    """A fresh workspace: its id, owner client, and members by role."""

    def __init__(self, server):
        self.server = server
        email = "owner-%s@example.com" % uuid.uuid4().hex[:10]
        self.wid = server.create_workspace("ws-" + email[6:16], email, password=USER_PASSWORD)
        self.owner = self.login(email)

    def login(self, email):
        tok = self.server.login(email, USER_PASSWORD, workspace_id=self.wid)["access_token"]
        return self.server.client(token=tok)

    def member(self, role):
        email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
        self.server.create_user(self.wid, email, role)
        return self.login(email)


@pytest.fixture
def ws(server):
    return Ws(server)


def new_id(prefix):
    return prefix + "_" + uuid.uuid4().hex[:26]


def make_account(ws, classification="asset", currency="EUR", archived=False):
    """A ledger account of ws's chart; its id."""
    code = uuid.uuid4().hex[:8]
    r = ws.owner.post(ACCOUNTS, json={"code": code, "name": "Account " + code,
                                      "classification": classification, "currency": currency})
    if r.status != 501:
        acc = assert_json(r, 201)
        if archived:
            assert_json(ws.owner.post(ACCOUNTS + "/" + acc["id"] + "/archive"), 200)
        return acc["id"]
    now = "2025-01-02T09:00:00.000Z"
    aid = new_id("lac")
    normal = "debit" if classification in ("asset", "expense") else "credit"
    db = open_db(ws.server)
    with contextlib.closing(db), db:
        db.execute(
            "INSERT INTO ledger_accounts (id, workspace_id, code, name, classification, "
            "normal_balance, currency, currency_exponent, status, archived_at, metadata, "
            "version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', 1, ?, ?)",
            (aid, ws.wid, code, "Account " + code, classification, normal, currency,
             0 if currency == "JPY" else 2, "archived" if archived else "active",
             now if archived else None, now, now))
    return aid


def posting(cash=(), clearing=(), enabled=True):
    return {"payment_posting": {
        "enabled": enabled,
        "cash_accounts": [dict(zip(("originating_account", "ledger_account_id"), c))
                          for c in cash],
        "payee_clearing_accounts": [{"currency": cur, "ledger_account_id": a}
                                    for cur, a in clearing]}}


def put(client, body, etag='"v1"'):
    return client.put(PATH, json=body, headers={"If-Match": etag} if etag else {})


def settings_rows(server, wid):
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute("SELECT version, payment_posting, client_written FROM ledger_settings "
                          "WHERE workspace_id = ?", (wid,)).fetchall()


def audit_rows(server, wid, action):
    db = open_db(server)
    with contextlib.closing(db):
        return db.execute("SELECT actor_id, before_status, after_status FROM audit_events "
                          "WHERE resource_id = ? AND action = ? ORDER BY seq",
                          (wid, action)).fetchall()


# ---- reading -------------------------------------------------------------------------------

def test_a_new_workspace_reads_the_defaults_without_a_stored_row(server, ws):
    r = ws.owner.get(PATH)
    got = assert_json(r, 200)
    assert got == {"object": "ledger_settings", "workspace_id": ws.wid,
                   "payment_posting": EMPTY, "version": 1, "updated_at": got["updated_at"]}
    assert TIMESTAMP.match(got["updated_at"])
    assert r.header("ETag") == '"v1"'
    assert settings_rows(server, ws.wid) == []  # reading wrote nothing


def test_each_workspace_reads_its_own(server, ws):
    other = Ws(server)
    cash = make_account(ws)
    assert_json(put(ws.owner, posting(cash=[("acc-a", cash)])), 200)
    got = assert_json(other.owner.get(PATH), 200)
    assert got["workspace_id"] == other.wid and got["payment_posting"] == EMPTY
    assert got["version"] == 1


# ---- replacing -----------------------------------------------------------------------------

def test_put_replaces_the_settings_as_a_whole_and_audits_before_and_after(server, ws):
    cash, clearing, clearing_asset = (make_account(ws), make_account(ws, "liability"),
                                      make_account(ws, "asset", "GBP"))
    body = posting(cash=[("acc-operating", cash), ("acc-reserve", cash)],
                   clearing=[("EUR", clearing), ("GBP", clearing_asset)])
    r = put(ws.owner, body)
    got = assert_json(r, 200)
    assert got["payment_posting"] == body["payment_posting"]
    assert got["version"] == 2 and r.header("ETag") == '"v2"'
    assert got["workspace_id"] == ws.wid
    assert assert_json(ws.owner.get(PATH), 200) == got
    rows = audit_rows(server, ws.wid, "ledger.settings.updated")
    assert len(rows) == 1
    assert json.loads(rows[0][1]) == EMPTY  # the defaults it replaced
    assert json.loads(rows[0][2]) == body["payment_posting"]

    second = posting(enabled=False, clearing=[("EUR", clearing)])
    got2 = assert_json(put(ws.owner, second, '"v2"'), 200)
    assert got2["version"] == 3 and got2["payment_posting"] == second["payment_posting"]
    rows = audit_rows(server, ws.wid, "ledger.settings.updated")
    assert len(rows) == 2
    assert json.loads(rows[1][1]) == body["payment_posting"]
    assert json.loads(rows[1][2]) == second["payment_posting"]
    stored = settings_rows(server, ws.wid)
    assert [(v, w) for v, _, w in stored] == [(3, 1)]


def test_put_without_if_match_is_428_and_changes_nothing(server, ws):
    r = put(ws.owner, posting(), etag=None)
    assert_problem(r, 428, "precondition_required")
    assert settings_rows(server, ws.wid) == []
    assert audit_rows(server, ws.wid, "ledger.settings.updated") == []


def test_put_with_a_stale_if_match_is_412_and_changes_nothing(server, ws):
    assert_json(put(ws.owner, posting(enabled=False)), 200)
    r = put(ws.owner, posting(), '"v1"')  # read before the first write
    assert_problem(r, 412, "precondition_failed")
    got = assert_json(ws.owner.get(PATH), 200)
    assert got["version"] == 2 and got["payment_posting"]["enabled"] is False
    assert len(audit_rows(server, ws.wid, "ledger.settings.updated")) == 1
    assert_problem(put(ws.owner, posting(), '"v7"'), 412, "precondition_failed")


def test_the_etag_of_a_get_is_the_if_match_of_the_next_put(ws):
    etag = ws.owner.get(PATH).header("ETag")
    assert ETAG.match(etag)
    r = put(ws.owner, posting(enabled=False), etag)
    assert_json(r, 200)
    assert_json(put(ws.owner, posting(), r.header("ETag")), 200)


# ---- checks beyond the schema --------------------------------------------------------------

CASH = "/payment_posting/cash_accounts/%d/%s"
CLEARING = "/payment_posting/payee_clearing_accounts/%d/%s"


def refused(server, ws, body, expected):
    """body is refused 422 with exactly expected ({pointer: code}), and nothing changed."""
    before = ws.owner.get(PATH)
    assert_validation(put(ws.owner, body, before.header("ETag")), expected)
    assert ws.owner.get(PATH).body == before.body
    assert audit_rows(server, ws.wid, "ledger.settings.updated") == []


def test_an_unknown_or_foreign_account_is_not_found(server, ws):
    foreign = make_account(Ws(server))
    cash, clearing = make_account(ws), make_account(ws, "liability")
    refused(server, ws, posting(cash=[("a", new_id("lac")), ("b", cash)],
                                clearing=[("EUR", clearing), ("USD", foreign)]),
            {CASH % (0, "ledger_account_id"): "ledger_account_not_found",
             CLEARING % (1, "ledger_account_id"): "ledger_account_not_found"})


def test_an_archived_account_is_refused(server, ws):
    cash, clearing = make_account(ws, archived=True), make_account(ws, "liability", archived=True)
    refused(server, ws, posting(cash=[("a", cash)], clearing=[("EUR", clearing)]),
            {CASH % (0, "ledger_account_id"): "account_archived",
             CLEARING % (0, "ledger_account_id"): "account_archived"})


@pytest.mark.parametrize("classification", ["liability", "equity", "revenue", "expense"])
def test_a_cash_account_must_be_an_asset(server, ws, classification):
    refused(server, ws, posting(cash=[("a", make_account(ws, classification))]),
            {CASH % (0, "ledger_account_id"): "classification_mismatch"})


@pytest.mark.parametrize("classification", ["equity", "revenue", "expense"])
def test_a_clearing_account_must_be_a_liability_or_an_asset(server, ws, classification):
    refused(server, ws, posting(clearing=[("EUR", make_account(ws, classification))]),
            {CLEARING % (0, "ledger_account_id"): "classification_mismatch"})


def test_a_clearing_account_in_another_currency_is_refused(server, ws):
    refused(server, ws, posting(clearing=[("EUR", make_account(ws, "liability", "GBP"))]),
            {CLEARING % (0, "ledger_account_id"): "currency_mismatch"})


def test_any_bank_account_is_not_found_since_none_exists_yet(server, ws):
    body = posting(cash=[("a", make_account(ws))])
    body["payment_posting"]["cash_accounts"][0]["bank_account_id"] = new_id("bac")
    refused(server, ws, body, {CASH % (0, "bank_account_id"): "bank_account_not_found"})


def test_an_originating_account_or_a_currency_mapped_twice_is_refused_at_the_later(server, ws):
    cash, clearing = make_account(ws), make_account(ws, "liability")
    refused(server, ws, posting(cash=[("a", cash), ("b", cash), ("a", cash)],
                                clearing=[("EUR", clearing), ("EUR", clearing)]),
            {CASH % (2, "originating_account"): "duplicate_originating_account",
             CLEARING % (1, "currency"): "duplicate_currency"})


def test_every_violation_is_reported_at_once(server, ws):
    body = posting(cash=[("a", make_account(ws, "liability", archived=True))],
                   clearing=[("EUR", make_account(ws, "expense", "GBP"))])
    before = ws.owner.get(PATH)
    got = assert_validation(put(ws.owner, body, before.header("ETag")),
                            {CASH % (0, "ledger_account_id"): None,
                             CLEARING % (0, "ledger_account_id"): None})
    codes = sorted(e["code"] for e in got["errors"])
    assert codes == ["account_archived", "classification_mismatch", "classification_mismatch",
                     "currency_mismatch"]


def test_the_schema_is_checked_first(ws):
    body = posting()
    del body["payment_posting"]["enabled"]
    assert_validation(put(ws.owner, body), {"/payment_posting/enabled": None})
    body = posting(cash=[("a", "not-an-id")])
    assert_validation(put(ws.owner, body), {CASH % (0, "ledger_account_id"): None})


# ---- scopes --------------------------------------------------------------------------------

def test_reading_wants_ledger_read_and_writing_ledger_write(server, ws):
    treasurer = ws.member("treasurer")  # ledger:read only
    accountant = ws.member("accountant")  # ledger:read and ledger:write
    approver = ws.member("approver")  # no ledger scope
    assert_json(treasurer.get(PATH), 200)
    assert_problem(approver.get(PATH), 403, "insufficient_scope")
    assert_problem(put(treasurer, posting(enabled=False)), 403, "insufficient_scope")
    assert_problem(put(approver, posting(enabled=False)), 403, "insufficient_scope")
    assert settings_rows(server, ws.wid) == []
    got = assert_json(put(accountant, posting(enabled=False)), 200)
    assert got["version"] == 2
    actor = audit_rows(server, ws.wid, "ledger.settings.updated")[0][0]
    assert actor.startswith("usr_")
