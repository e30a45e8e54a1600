"""The ledger's chart of accounts (handlers/ledger_accounts.c): create with its defaults
(normal balance from the classification, the currency's ISO 4217 exponent), codes unique per
workspace archived accounts included, the parent rules, changes under If-Match, the
constraints a posted balance already breaks, archiving only what is empty, childless and
unused by the posting settings, balances on every read, the list by code with its filters and
cursor, scopes, and that every refusal changes nothing.

Balances are moved by postings and drafts (ledger_account_move / ledger_account_drafts), which
no operation of this API reaches yet: tests that need a balance write the sums into the row
directly, as a posting would have left them."""

import contextlib
import json
import re
import uuid

import pytest

from conftest import USER_PASSWORD
from helpers import (ETAG, QUERY_PARAM_CODE, QUERY_PARAM_STATUS, TIMESTAMP, assert_json, assert_problem, assert_validation, audit_of,
                     open_db, table_counts)

PATH = "/v1/ledger/accounts"
LAC_ID = r"^lac_[0-9a-z]{26}$"
UNKNOWN = "lac_" + "0" * 26


def code(prefix="C"):
    return (prefix + uuid.uuid4().hex)[:10]


def body(**over):
    b = {"code": code(), "name": "Account " + uuid.uuid4().hex[:6], "classification": "asset",
         "currency": "EUR"}
    for k, v in over.items():
        if v is None:
            b.pop(k, None)
        else:
            b[k] = v
    return b


def create(c, **over):
    return assert_json(c.post(PATH, json=body(**over)), 201)


def get(c, aid):
    return assert_json(c.get(PATH + "/" + aid), 200)


@pytest.fixture(scope="module")
def ws(server):
    """A workspace of its own: (workspace id, owner client)."""
    wid, _, c = server.new_workspace()
    return wid, c


@pytest.fixture(scope="module")
def c(ws):
    return ws[1]


@pytest.fixture(scope="module")
def other(server):
    """Another workspace's owner client."""
    return server.new_workspace()[2]


def set_sums(server, aid, pd=0, pc=0, dd=0, dc=0):
    """The sums a posting (posted_*) or a draft (draft_*) would have left on the account."""
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("UPDATE ledger_accounts SET posted_debits = ?, posted_credits = ?, "
                   "draft_debits = ?, draft_credits = ? WHERE id = ?", (pd, pc, dd, dc, aid))
        db.commit()


def set_posting_settings(server, wid, posting):
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("DELETE FROM ledger_settings WHERE workspace_id = ?", (wid,))
        db.execute("INSERT INTO ledger_settings (workspace_id, payment_posting, version, "
                   "updated_at) VALUES (?, ?, 2, '2026-01-01T00:00:00.000Z')",
                   (wid, json.dumps(posting)))
        db.commit()


@contextlib.contextmanager
def unchanged(server, c, *ids):
    """The block's request is refused: no table's row count moves and the accounts read the
    same after it (version, balances, everything)."""
    before = table_counts(server), [get(c, i) for i in ids]
    yield
    assert (table_counts(server), [get(c, i) for i in ids]) == before


def zero():
    return {"debits": 0, "credits": 0, "amount": 0}


# ---- create and read ------------------------------------------------------------------------

def test_create_answers_201_with_location_etag_and_the_account(c, ws, server):
    b = body(description="Main EUR account", metadata={"bank": "commerz"},
             constraints={"credits_must_not_exceed_debits": True})
    r = c.post(PATH, json=b)
    got = assert_json(r, 201)
    assert r.header("Location") == PATH + "/" + got["id"]
    assert r.header("ETag") == '"v1"'
    assert re.match(LAC_ID, got["id"])
    assert got["object"] == "ledger_account" and got["workspace_id"] == ws[0]
    for k in ("code", "name", "description", "classification", "currency", "metadata"):
        assert got[k] == b[k], k
    assert got["normal_balance"] == "debit"
    assert got["currency_exponent"] == 2
    assert got["status"] == "active" and "archived_at" not in got and "parent_id" not in got
    assert got["balances"] == {"posted": zero(), "pending": zero(), "available": zero()}
    assert got["lock_version"] == 0 and got["version"] == 1
    assert got["constraints"] == {"debits_must_not_exceed_credits": False,
                                  "credits_must_not_exceed_debits": True}
    assert TIMESTAMP.match(got["created_at"]) and got["created_at"] == got["updated_at"]
    r = c.get(PATH + "/" + got["id"])
    assert assert_json(r, 200) == got and r.header("ETag") == '"v1"'
    assert [a[1:4] for a in audit_of(server, got["id"])] == [
        ("ledger_account.created", None, "active")]


def test_defaults_constraints_false_and_metadata_empty(c):
    got = create(c)
    assert got["constraints"] == {"debits_must_not_exceed_credits": False,
                                  "credits_must_not_exceed_debits": False}
    assert got["metadata"] == {} and "description" not in got


@pytest.mark.parametrize("classification, normal", [
    ("asset", "debit"), ("expense", "debit"), ("liability", "credit"), ("equity", "credit"),
    ("revenue", "credit")])
def test_normal_balance_defaults_from_the_classification(c, classification, normal):
    assert create(c, classification=classification)["normal_balance"] == normal


def test_a_normal_balance_given_is_kept(c):
    """A contra account: an asset that runs a credit balance (accumulated depreciation)."""
    assert create(c, classification="asset", normal_balance="credit")["normal_balance"] == \
        "credit"


@pytest.mark.parametrize("currency, exponent", [
    ("EUR", 2), ("USD", 2), ("JPY", 0), ("KRW", 0), ("BHD", 3), ("KWD", 3), ("CLF", 4)])
def test_currency_exponent_is_the_iso_4217_minor_unit(c, currency, exponent):
    assert create(c, currency=currency)["currency_exponent"] == exponent
    assert create(c, currency=currency,
                  currency_exponent=exponent)["currency_exponent"] == exponent


def test_a_wrong_currency_exponent_is_422_and_changes_nothing(c, server):
    with unchanged(server, c):
        r = c.post(PATH, json=body(currency="JPY", currency_exponent=2))
        assert_validation(r, {"/currency_exponent": "currency_exponent_mismatch"})


@pytest.mark.parametrize("currency", ["XAU", "ABC", "eur"])
def test_a_currency_without_iso_4217_minor_unit_is_422_at_currency(c, currency):
    """The currency table (runtime/format.c) holds the active codes that have a minor unit:
    any other (gold, an unknown code) is refused by the schema's format check."""
    assert_validation(c.post(PATH, json=body(currency=currency)), {"/currency": None})


def test_code_is_unique_in_the_workspace_archived_accounts_included(c, other, server):
    a = create(c)
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH, json=body(code=a["code"])), 409, "duplicate_code")
    assert_json(c.post(PATH + "/" + a["id"] + "/archive"), 200)
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH, json=body(code=a["code"])), 409, "duplicate_code")
    # another workspace has codes of its own
    assert create(other, code=a["code"])["code"] == a["code"]


def test_a_chart_holds_at_most_10000_accounts_archived_ones_included(server):
    """The trial balance lists every account on one page (at most 10,000 rows): the chart stops
    there. 9,998 accounts are copied in SQL from one made through the API, then the 10,000th
    is the last one accepted, and the trial balance of all of them still answers."""
    wid, _, c = server.new_workspace()
    first = create(c)
    assert_json(c.post(PATH + "/" + first["id"] + "/archive"), 200)  # archived ones count
    cols = ("workspace_id, name, classification, normal_balance, currency, currency_exponent, "
            "status, metadata, version, created_at, updated_at")
    db = open_db(server)
    with contextlib.closing(db):
        db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9998) "
                   "INSERT INTO ledger_accounts (id, code, " + cols + ") "
                   "SELECT 'lac_seed' || (100000 + n.i) || 'aaaaaaaaaaaaaaaa', 'S' || n.i, " + cols.replace("workspace_id", "a.workspace_id")
                   .replace(", name", ", a.name").replace("status", "'active'") +
                   " FROM n, ledger_accounts a WHERE a.id = ?", (first["id"],))
        db.commit()
    last = create(c)
    with unchanged(server, c, last["id"]):
        p = assert_problem(c.post(PATH, json=body()), 422, "ledger_account_limit_reached")
        assert "10000" in p["detail"]
    tb = assert_json(c.get("/v1/ledger/trial-balance?include_zero=true"), 200)
    assert len(tb["rows"]) == 10000 and tb["balanced"] is True
    # another workspace's chart is its own
    assert create(server.new_workspace()[2])["status"] == "active"


def test_codes_differ_by_case(c):
    k = code("k")
    assert create(c, code=k)["code"] == k
    assert create(c, code=k.upper())["code"] == k.upper()


def test_create_is_idempotent_by_key(c, server):
    b = body()
    key = str(uuid.uuid4())
    first = c.post(PATH, json=b, headers={"Idempotency-Key": key})
    made = assert_json(first, 201)
    before = table_counts(server)
    again = c.post(PATH, json=b, headers={"Idempotency-Key": key})
    assert assert_json(again, 201) == made
    assert again.header("Idempotent-Replayed") == "true"
    assert again.header("Location") == first.header("Location")
    assert table_counts(server) == before
    # a retry with the same X-Request-ID is the same request too
    rid = str(uuid.uuid4())
    b2 = body()
    one = assert_json(c.post(PATH, json=b2, headers={"X-Request-ID": rid}), 201)
    r = c.post(PATH, json=b2, headers={"X-Request-ID": rid})
    assert assert_json(r, 201)["id"] == one["id"] and r.header("Idempotent-Replayed") == "true"


# ---- parents ----------------------------------------------------------------------------------

def test_a_parent_of_the_same_classification_and_currency_is_accepted(c):
    p = create(c)
    child = create(c, parent_id=p["id"])
    assert child["parent_id"] == p["id"]


def test_parent_rules_on_create_are_422_at_parent_id(c, other, server):
    eur_asset = create(c)
    archived = create(c)
    assert_json(c.post(PATH + "/" + archived["id"] + "/archive"), 200)
    foreign = create(other)
    cases = [
        (UNKNOWN, {}, ["parent_not_found"]),
        (foreign["id"], {}, ["parent_not_found"]),
        (archived["id"], {}, ["account_archived"]),
        (eur_asset["id"], {"classification": "liability"}, ["classification_mismatch"]),
        (eur_asset["id"], {"currency": "USD"}, ["currency_mismatch"]),
        (eur_asset["id"], {"classification": "expense", "currency": "GBP"},
         ["classification_mismatch", "currency_mismatch"]),
    ]
    for parent, over, codes in cases:
        with unchanged(server, c, eur_asset["id"], archived["id"]):
            b = assert_validation(c.post(PATH, json=body(parent_id=parent, **over)),
                                  {"/parent_id": None})
            assert sorted(e["code"] for e in b["errors"]) == codes, (parent, over, b)


# ---- update -----------------------------------------------------------------------------------

def test_update_changes_the_fields_given_and_bumps_the_version(c, server):
    p = create(c)
    a = create(c, description="old", metadata={"a": "1", "b": "2"})
    r = c.patch(PATH + "/" + a["id"], json={"name": "Renamed", "description": None,
                                             "metadata": {"c": "3"}, "parent_id": p["id"],
                                             "code": code("N")})
    got = assert_json(r, 200)
    assert r.header("ETag") == '"v2"' and got["version"] == 2
    assert got["name"] == "Renamed" and "description" not in got
    assert got["metadata"] == {"c": "3"} and got["parent_id"] == p["id"]
    assert got["updated_at"] >= a["updated_at"] and got["created_at"] == a["created_at"]
    for k in ("classification", "normal_balance", "currency", "currency_exponent", "balances",
              "lock_version", "constraints", "status"):
        assert got[k] == a[k], k
    assert get(c, a["id"]) == got
    # null makes it top-level again; its own code may be sent back
    got = assert_json(c.patch(PATH + "/" + a["id"], json={"parent_id": None,
                                                           "code": got["code"]}), 200)
    assert "parent_id" not in got and got["version"] == 3
    assert [x[1] for x in audit_of(server, a["id"])] == [
        "ledger_account.created", "ledger_account.updated", "ledger_account.updated"]


@pytest.mark.parametrize("field, value", [
    ("classification", "liability"), ("currency", "USD"), ("normal_balance", "credit"),
    ("currency_exponent", 2), ("status", "archived")])
def test_what_never_changes_cannot_be_sent(c, server, field, value):
    a = create(c)
    with unchanged(server, c, a["id"]):
        assert_validation(c.patch(PATH + "/" + a["id"], json={field: value}), {"/" + field: None})


def test_update_with_a_stale_if_match_is_412_and_a_current_one_applies(c, server):
    a = create(c)
    assert_json(c.patch(PATH + "/" + a["id"], json={"name": "v2"}), 200)
    with unchanged(server, c, a["id"]):
        r = c.patch(PATH + "/" + a["id"], json={"name": "stale"}, headers={"If-Match": '"v1"'})
        assert_problem(r, 412, "precondition_failed")
    r = c.patch(PATH + "/" + a["id"], json={"name": "v3"}, headers={"If-Match": '"v2"'})
    assert assert_json(r, 200)["name"] == "v3" and ETAG.match(r.header("ETag"))


def test_update_to_a_code_another_account_has_is_409(c, server):
    a, b = create(c), create(c)
    with unchanged(server, c, a["id"], b["id"]):
        assert_problem(c.patch(PATH + "/" + b["id"], json={"code": a["code"]}), 409,
                       "duplicate_code")


def test_an_archived_account_cannot_be_changed(c, server):
    a = create(c)
    assert_json(c.post(PATH + "/" + a["id"] + "/archive"), 200)
    with unchanged(server, c, a["id"]):
        assert_problem(c.patch(PATH + "/" + a["id"], json={"name": "x"}), 409,
                       "account_archived")


def test_parent_rules_on_update_include_cycles(c, other, server):
    top = create(c)
    mid = create(c, parent_id=top["id"])
    low = create(c, parent_id=mid["id"])
    usd = create(c, currency="USD")
    archived = create(c)
    assert_json(c.post(PATH + "/" + archived["id"] + "/archive"), 200)
    foreign = create(other)
    cases = [
        (top, top["id"], ["parent_cycle"]),
        (top, low["id"], ["parent_cycle"]),
        (mid, low["id"], ["parent_cycle"]),
        (top, UNKNOWN, ["parent_not_found"]),
        (top, foreign["id"], ["parent_not_found"]),
        (top, usd["id"], ["currency_mismatch"]),
        (top, archived["id"], ["account_archived"]),
    ]
    for acct, parent, codes in cases:
        with unchanged(server, c, top["id"], mid["id"], low["id"]):
            b = assert_validation(c.patch(PATH + "/" + acct["id"], json={"parent_id": parent}),
                                  {"/parent_id": None})
            assert sorted(e["code"] for e in b["errors"]) == codes, (acct["code"], parent, b)
    liability = create(c, classification="liability")
    b = assert_validation(c.patch(PATH + "/" + liability["id"], json={"parent_id": top["id"]}),
                          {"/parent_id": None})
    assert [e["code"] for e in b["errors"]] == ["classification_mismatch"]
    # moving low up under top is fine (no cycle)
    assert assert_json(c.patch(PATH + "/" + low["id"], json={"parent_id": top["id"]}),
                       200)["parent_id"] == top["id"]


def test_a_constraint_the_posted_balance_breaks_cannot_be_switched_on(c, server):
    a = create(c)  # asset, debit-normal
    set_sums(server, a["id"], pd=500, pc=200)
    with unchanged(server, c, a["id"]):
        r = c.patch(PATH + "/" + a["id"], json={"constraints": {
            "debits_must_not_exceed_credits": True}})
        assert_validation(r, {"/constraints": "balance_assertion_failed"},
                          code="balance_assertion_failed")
    # the one it keeps is fine, and then switching both on keeps failing
    got = assert_json(c.patch(PATH + "/" + a["id"], json={"constraints": {
        "credits_must_not_exceed_debits": True}}), 200)
    assert got["constraints"] == {"debits_must_not_exceed_credits": False,
                                  "credits_must_not_exceed_debits": True}
    b = create(c, classification="liability")
    set_sums(server, b["id"], pd=10, pc=0)
    with unchanged(server, c, b["id"]):
        r = c.patch(PATH + "/" + b["id"], json={"constraints": {
            "debits_must_not_exceed_credits": True}})
        assert_problem(r, 422, "balance_assertion_failed")
    # drafts do not count: only the posted balance is constrained
    set_sums(server, b["id"], pd=0, pc=10, dd=50)
    assert assert_json(c.patch(PATH + "/" + b["id"], json={"constraints": {
        "debits_must_not_exceed_credits": True}}), 200)["constraints"][
        "debits_must_not_exceed_credits"] is True


# ---- balances -------------------------------------------------------------------------------

def test_balances_of_a_debit_normal_account_on_every_read(c, server):
    """The spec's example: posted 130000000 / 4625000, a draft credit of 125000."""
    a = create(c, currency="EUR")
    set_sums(server, a["id"], pd=130000000, pc=4625000, dc=125000)
    want = {"posted": {"debits": 130000000, "credits": 4625000, "amount": 125375000},
            "pending": {"debits": 130000000, "credits": 4750000, "amount": 125250000},
            "available": {"debits": 130000000, "credits": 4750000, "amount": 125250000}}
    assert get(c, a["id"])["balances"] == want
    listed = assert_json(c.get(PATH + "?limit=100&currency=EUR"), 200)["data"]
    assert [x["balances"] for x in listed if x["id"] == a["id"]] == [want]
    assert assert_json(c.patch(PATH + "/" + a["id"], json={"name": "n"}), 200)["balances"] == want
    # a draft debit raises pending but not available
    set_sums(server, a["id"], pd=100, pc=40, dd=7, dc=5)
    assert get(c, a["id"])["balances"] == {
        "posted": {"debits": 100, "credits": 40, "amount": 60},
        "pending": {"debits": 107, "credits": 45, "amount": 62},
        "available": {"debits": 100, "credits": 45, "amount": 55}}


def test_balances_of_a_credit_normal_account(c, server):
    """The spec's example for payee clearing: posted 1250000 / 3750000, a draft debit."""
    a = create(c, classification="liability")
    set_sums(server, a["id"], pd=1250000, pc=3750000, dd=1250000)
    assert get(c, a["id"])["balances"] == {
        "posted": {"debits": 1250000, "credits": 3750000, "amount": 2500000},
        "pending": {"debits": 2500000, "credits": 3750000, "amount": 1250000},
        "available": {"debits": 2500000, "credits": 3750000, "amount": 1250000}}
    set_sums(server, a["id"], pd=10, pc=3, dc=4)
    assert get(c, a["id"])["balances"] == {
        "posted": {"debits": 10, "credits": 3, "amount": -7},
        "pending": {"debits": 10, "credits": 7, "amount": -3},
        "available": {"debits": 10, "credits": 3, "amount": -7}}


# ---- archive --------------------------------------------------------------------------------

def test_archive_answers_the_archived_account_and_is_final(c, server):
    a = create(c)
    set_sums(server, a["id"], pd=50000, pc=50000)  # moved, but back to zero
    r = c.post(PATH + "/" + a["id"] + "/archive", headers={"If-Match": '"v1"'})
    got = assert_json(r, 200)
    assert got["status"] == "archived" and TIMESTAMP.match(got["archived_at"])
    assert got["version"] == 2 and r.header("ETag") == '"v2"'
    assert got["balances"]["posted"] == {"debits": 50000, "credits": 50000, "amount": 0}
    assert get(c, a["id"]) == got
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH + "/" + a["id"] + "/archive"), 409, "invalid_transition")
    assert [x[1:4] for x in audit_of(server, a["id"])][-1] == (
        "ledger_account.archived", None, "archived")


def test_archive_with_a_stale_if_match_is_412(c, server):
    a = create(c)
    assert_json(c.patch(PATH + "/" + a["id"], json={"name": "v2"}), 200)
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH + "/" + a["id"] + "/archive", headers={"If-Match": '"v1"'}),
                       412, "precondition_failed")


@pytest.mark.parametrize("sums", [
    {"pd": 1}, {"pc": 1}, {"pd": 5, "pc": 2}, {"dd": 3}, {"dc": 3}, {"pd": 4, "pc": 4, "dc": 4}])
def test_an_account_with_a_posted_or_pending_balance_is_not_archived(c, server, sums):
    a = create(c, classification="revenue")
    set_sums(server, a["id"], **sums)
    with unchanged(server, c, a["id"]):
        assert_problem(c.post(PATH + "/" + a["id"] + "/archive"), 409, "account_not_empty")


def test_an_account_with_active_children_is_not_archived(c, server):
    p = create(c)
    kid = create(c, parent_id=p["id"])
    with unchanged(server, c, p["id"], kid["id"]):
        assert_problem(c.post(PATH + "/" + p["id"] + "/archive"), 409,
                       "account_has_active_children")
    assert_json(c.post(PATH + "/" + kid["id"] + "/archive"), 200)
    assert assert_json(c.post(PATH + "/" + p["id"] + "/archive"), 200)["status"] == "archived"


def test_an_account_the_posting_settings_use_is_not_archived(c, ws, server):
    cash, clearing, free = create(c), create(c, classification="liability"), create(c)
    set_posting_settings(server, ws[0], {
        "enabled": True,
        "cash_accounts": [{"originating_account": "acc-1", "ledger_account_id": cash["id"]}],
        "payee_clearing_accounts": [{"currency": "EUR", "ledger_account_id": clearing["id"]}]})
    try:
        for a in (cash, clearing):
            with unchanged(server, c, a["id"]):
                assert_problem(c.post(PATH + "/" + a["id"] + "/archive"), 409, "account_in_use")
        assert_json(c.post(PATH + "/" + free["id"] + "/archive"), 200)
    finally:
        set_posting_settings(server, ws[0], {"enabled": False, "cash_accounts": [],
                                              "payee_clearing_accounts": []})
    assert_json(c.post(PATH + "/" + cash["id"] + "/archive"), 200)


# ---- other workspaces, unknown ids ----------------------------------------------------------

def test_another_workspaces_account_is_404_and_untouched(c, other, server):
    theirs = create(other)
    for url, method, kw in [
            (PATH + "/" + theirs["id"], "GET", {}),
            (PATH + "/" + theirs["id"], "PATCH", {"json": {"name": "mine"}}),
            (PATH + "/" + theirs["id"] + "/archive", "POST", {}),
            (PATH + "/" + UNKNOWN, "GET", {}),
            (PATH + "/" + UNKNOWN, "PATCH", {"json": {"name": "x"}}),
            (PATH + "/" + UNKNOWN + "/archive", "POST", {})]:
        with unchanged(server, other, theirs["id"]):
            assert_problem(c.request(method, url, **kw), 404, "not_found")
    listed = assert_json(c.get(PATH + "?limit=100"), 200)["data"]
    assert theirs["id"] not in [a["id"] for a in listed]
    assert assert_json(c.get(PATH + "?parent_id=" + theirs["id"]), 200)["data"] == []


# ---- scopes ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def role_client(server, ws):
    made = {}

    def make(role):
        if role not in made:
            email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
            server.create_user(ws[0], email, role)
            tok = server.login(email, USER_PASSWORD, workspace_id=ws[0])["access_token"]
            made[role] = server.client(token=tok)
        return made[role]
    return make


def test_reads_need_ledger_read_and_writes_ledger_write(c, server, role_client):
    a = create(c)
    viewer = role_client("viewer")      # ledger:read only
    approver = role_client("approver")  # neither
    accountant = role_client("accountant")  # ledger:read and ledger:write
    assert get(viewer, a["id"]) == get(c, a["id"])
    assert_json(viewer.get(PATH), 200)
    for cl in (viewer, approver):
        with unchanged(server, c, a["id"]):
            for r in (cl.post(PATH, json=body()),
                      cl.patch(PATH + "/" + a["id"], json={"name": "no"}),
                      cl.post(PATH + "/" + a["id"] + "/archive")):
                assert_problem(r, 403, "insufficient_scope")
                assert 'scope="ledger:write"' in (r.header("WWW-Authenticate") or "")
    for r in (approver.get(PATH), approver.get(PATH + "/" + a["id"])):
        assert_problem(r, 403, "insufficient_scope")
        assert 'scope="ledger:read"' in (r.header("WWW-Authenticate") or "")
    made = create(accountant)
    assert assert_json(accountant.patch(PATH + "/" + made["id"], json={"name": "ok"}),
                       200)["name"] == "ok"
    assert_json(accountant.post(PATH + "/" + made["id"] + "/archive"), 200)


# ---- the list -------------------------------------------------------------------------------

def test_the_list_is_by_code_ascending_across_pages(server):
    _, _, c = server.new_workspace()
    codes = ["1010", "1000", "2100", "1010.1", "A-1", "0999", "3000", "1", "a_2", "Z"]
    made = {}
    for k in codes:
        made[k] = create(c, code=k)["id"]
    seen, cursor, pages = [], None, 0
    while True:
        url = PATH + "?limit=3" + ("&cursor=" + cursor if cursor else "")
        page = assert_json(c.get(url), 200)
        pages += 1
        assert len(page["data"]) <= 3
        seen += [a["code"] for a in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        assert page["next_cursor"]
        cursor = page["next_cursor"]
    assert seen == sorted(codes), seen  # bytewise: digits, upper case, '_', lower case
    assert pages == 4
    # a cursor serves only the filters it was issued for
    first = assert_json(c.get(PATH + "?limit=3"), 200)
    assert_problem(c.get(PATH + "?limit=3&currency=EUR&cursor=" + first["next_cursor"]), 400,
                   "invalid_cursor")


def test_list_filters_combine(server):
    _, _, c = server.new_workspace()
    cash = create(c, code="1000")
    bank = create(c, code="1010", parent_id=cash["id"])
    usd = create(c, code="1020", currency="USD")
    payable = create(c, code="2000", classification="liability")
    equity = create(c, code="3000", classification="equity")
    income = create(c, code="4000", classification="revenue")
    old = create(c, code="4900", classification="revenue")
    assert_json(c.post(PATH + "/" + old["id"] + "/archive"), 200)

    def codes(query):
        return [a["code"] for a in assert_json(c.get(PATH + "?limit=100&" + query), 200)["data"]]

    assert codes("") == ["1000", "1010", "1020", "2000", "3000", "4000", "4900"]
    assert codes("classification=asset") == ["1000", "1010", "1020"]
    assert codes("classification=liability&classification=revenue") == ["2000", "4000", "4900"]
    assert codes("status=archived") == ["4900"]
    assert codes("status=active&classification=revenue") == ["4000"]
    assert codes("currency=USD") == ["1020"]
    assert codes("currency=EUR&classification=asset") == ["1000", "1010"]
    assert codes("parent_id=" + cash["id"]) == ["1010"]
    assert codes("parent_id=" + bank["id"]) == []
    assert codes("classification=equity&status=archived") == []
    assert_problem(c.get(PATH + "?classification=cash"), QUERY_PARAM_STATUS, QUERY_PARAM_CODE)
    del usd, payable, equity, income
