"""Beneficiaries CRUD: create (201, Location, ETag), read, conditional update (If-Match, 412),
archive (204, then 409 on change), external_id uniqueness, business-rule 422s, and schema
validation that reports every violation with a JSON Pointer."""

import contextlib
import uuid

import pytest

from helpers import open_db
from helpers import (BEN_ID, TIMESTAMP, UNKNOWN_BEN, assert_json, assert_problem,
                     assert_validation, beneficiary, create_beneficiary)

PATH = "/v1/beneficiaries"


@pytest.fixture(scope="module")
def c(server):
    return server.admin_client()


@pytest.fixture(scope="module")
def wid(server):
    return server.login()["workspace_id"]


@contextlib.contextmanager
def db_connection(server):
    """A short write to the live server's database (WAL allows a second connection)."""
    db = open_db(server)
    try:
        with db:
            yield db
    finally:
        db.close()


def ext():
    return "X-" + uuid.uuid4().hex[:12]


# ---- create and read -----------------------------------------------------------------------

def test_create_returns_201_with_location_etag_and_the_resource(c, wid):
    body = beneficiary(external_id=ext())
    r = c.post(PATH, json=body)
    got = assert_json(r, 201)
    assert BEN_ID.match(got["id"]), got["id"]
    assert r.header("Location") == "%s/%s" % (PATH, got["id"])
    assert r.header("ETag") == '"v1"'
    assert got["object"] == "beneficiary"
    assert got["workspace_id"] == wid
    assert got["status"] == "active"
    assert got["verification_status"] == "unverified"
    assert got["approval_status"] == "pending_approval"
    assert got["version"] == 1
    assert got["beneficiary_type"] == "ordinary"  # the schema default
    assert TIMESTAMP.match(got["created_at"]) and got["created_at"] == got["updated_at"]
    for k in ("name", "account_holder_name", "account_identification", "bank", "currency",
              "country", "email", "external_id", "metadata"):
        assert got[k] == body[k], k


def test_get_returns_the_same_resource_with_its_etag(c):
    created = create_beneficiary(c, external_id=ext())
    r = c.get(PATH + "/" + created["id"])
    assert assert_json(r, 200) == created
    assert r.header("ETag") == '"v1"'


def test_optional_fields_not_set_are_absent_and_metadata_defaults_to_empty(c):
    got = create_beneficiary(c, bank=None, email=None, metadata=None, external_id=None)
    for k in ("bank", "email", "external_id", "counterparty_id"):
        assert k not in got, k
    assert got["metadata"] == {}


@pytest.mark.parametrize("ident, bank", [
    ({"scheme": "IBAN", "identification": "GB82WEST12345698765432"}, {"bic": "NWBKGB2L"}),
    ({"scheme": "IBAN", "identification": "FR1420041010050500013M02606"}, None),
    ({"scheme": "SortCodeAccountNumber", "identification": "20000055555555"}, None),
    ({"scheme": "ABA", "identification": "000123456789"},
     {"routing_number": "021000021", "name": "JPMorgan Chase Bank", "country": "US"}),
    ({"scheme": "BBAN", "identification": "370400440532013000"}, {"bic": "DEUTDEFF"}),
])
def test_every_account_scheme_can_be_created(c, ident, bank):
    got = create_beneficiary(c, account_identification=ident, bank=bank, external_id=None)
    assert got["account_identification"] == ident


def test_beneficiary_type_trusted_is_kept(c):
    assert create_beneficiary(c, beneficiary_type="trusted", external_id=None)[
        "beneficiary_type"] == "trusted"


def test_name_length_counts_code_points_not_bytes(c):
    name = "é" * 140  # 280 bytes, 140 code points: the maximum
    assert create_beneficiary(c, name=name, external_id=None)["name"] == name
    r = c.post(PATH, json=beneficiary(name="é" * 141, external_id=None))
    assert_validation(r, {"/name": "max_length"})


def test_a_list_read_again_after_a_change_shows_the_change(c):
    """Lists keep each beneficiary's JSON by (id, version) (x-table cache): after a rename and
    an archive, the same page shows both as their GETs do."""
    cur = "CHF"  # a currency no other test of the module lists by
    made = [create_beneficiary(c, currency=cur, name="Kept %d AG" % i) for i in range(3)]
    url = PATH + "?limit=10&currency=" + cur

    def listed():
        page = assert_json(c.get(url), 200)["data"]
        for b in page:
            assert b == assert_json(c.get(PATH + "/" + b["id"]), 200), b["id"]
        return {b["id"]: b for b in page}

    assert sorted(listed()) == sorted(b["id"] for b in made)
    listed()
    assert_json(c.patch(PATH + "/" + made[0]["id"], json={"name": "Renamed AG"}), 200)
    assert c.delete(PATH + "/" + made[1]["id"]).status == 204
    now = listed()
    assert now[made[0]["id"]]["name"] == "Renamed AG"
    assert now[made[1]["id"]]["status"] == "archived"
    assert now[made[2]["id"]]["name"] == "Kept 2 AG"


def test_get_unknown_id_is_404(c):
    assert_problem(c.get(PATH + "/" + UNKNOWN_BEN), 404, "not_found")


def test_get_id_of_another_resource_type_is_404(c):
    assert_problem(c.get(PATH + "/pay_" + "1" * 26), 404, "not_found")


def test_ids_are_random_not_sequential(c):
    a = create_beneficiary(c, external_id=None)["id"]
    b = create_beneficiary(c, external_id=None)["id"]
    assert a != b
    assert sum(x != y for x, y in zip(a[4:], b[4:])) > 8


# ---- update --------------------------------------------------------------------------------

def test_patch_with_current_if_match_updates_and_bumps_version(c):
    ben = create_beneficiary(c, external_id=ext())
    r = c.patch(PATH + "/" + ben["id"], json={"name": "Renamed GmbH"}, headers={"If-Match": '"v1"'})
    got = assert_json(r, 200)
    assert got["name"] == "Renamed GmbH"
    assert got["version"] == 2 and r.header("ETag") == '"v2"'
    assert got["updated_at"] >= ben["updated_at"] and got["created_at"] == ben["created_at"]
    for k in ("account_holder_name", "account_identification", "bank", "currency", "country",
              "email", "external_id", "metadata", "id", "workspace_id", "status"):
        assert got[k] == ben[k], k
    assert c.get(PATH + "/" + ben["id"]).json() == got


def test_patch_with_stale_if_match_is_412_and_changes_nothing(c):
    ben = create_beneficiary(c, external_id=ext())
    assert c.patch(PATH + "/" + ben["id"], json={"name": "v2 name"}).status == 200
    r = c.patch(PATH + "/" + ben["id"], json={"name": "lost update"}, headers={"If-Match": '"v1"'})
    assert_problem(r, 412, "precondition_failed")
    after = c.get(PATH + "/" + ben["id"])
    assert after.json()["name"] == "v2 name" and after.json()["version"] == 2
    assert after.header("ETag") == '"v2"'


def test_patch_without_if_match_applies_to_the_current_version(c):
    ben = create_beneficiary(c, external_id=None)
    for i in range(3):
        r = c.patch(PATH + "/" + ben["id"], json={"name": "n%d" % i})
        assert r.status == 200 and r.json()["version"] == i + 2


@pytest.mark.parametrize("bad", ['v1', '"1"', 'W/"v1"', '"v0"', '*x'])
def test_malformed_if_match_is_refused(c, bad):
    """Not the IfMatch parameter's pattern (a quoted "v<version>", version from 1, or `*`): an
    invalid header parameter, 400 (BadRequest), not a precondition that fails."""
    ben = create_beneficiary(c, external_id=None)
    r = c.patch(PATH + "/" + ben["id"], json={"name": "x"}, headers={"If-Match": bad})
    assert_validation(r, {"/header/If-Match": "pattern"}, status=400, code="invalid_request")
    assert c.get(PATH + "/" + ben["id"]).json()["version"] == 1


def test_patch_null_clears_optional_fields(c):
    ben = create_beneficiary(c, external_id=ext())
    got = assert_json(c.patch(PATH + "/" + ben["id"], json={"email": None, "external_id": None}), 200)
    assert "email" not in got and "external_id" not in got


def test_patch_replaces_metadata_and_bank_as_a_whole(c):
    ben = create_beneficiary(c, external_id=None, metadata={"a": "1", "b": "2"})
    got = assert_json(c.patch(PATH + "/" + ben["id"],
                              json={"metadata": {"c": "3"}, "bank": {"name": "Other Bank"}}), 200)
    assert got["metadata"] == {"c": "3"}
    assert got["bank"] == {"name": "Other Bank"}


def test_patch_empty_object_is_422(c):
    ben = create_beneficiary(c, external_id=None)
    assert_validation(c.patch(PATH + "/" + ben["id"], json={}), {"": "min_properties"})


@pytest.mark.parametrize("field", ["id", "workspace_id", "status", "version", "created_at",
                                   "verification_status", "approval_status", "object"])
def test_patch_with_a_read_only_field_is_422(c, field):
    ben = create_beneficiary(c, external_id=None)
    value = {"id": UNKNOWN_BEN, "workspace_id": "wsp_" + "0" * 26, "status": "archived",
             "version": 9, "created_at": "2020-01-01T00:00:00.000Z", "object": "beneficiary",
             "verification_status": "verified", "approval_status": "approved"}[field]
    r = c.patch(PATH + "/" + ben["id"], json={"name": "x", field: value})
    assert_validation(r, {"/" + field: ("read_only", "additional_property")})
    assert c.get(PATH + "/" + ben["id"]).json() == ben


def test_patch_unknown_id_is_404(c):
    assert_problem(c.patch(PATH + "/" + UNKNOWN_BEN, json={"name": "x"}), 404, "not_found")


def test_patch_validates_the_merged_result_aba_without_routing_number(c):
    ben = create_beneficiary(c, external_id=None)  # IBAN with a BIC, no routing number
    r = c.patch(PATH + "/" + ben["id"],
                json={"account_identification": {"scheme": "ABA", "identification": "12345678"}})
    assert_validation(r, {"/bank/routing_number": "routing_number_required"})
    got = c.get(PATH + "/" + ben["id"]).json()
    assert got == ben, "a refused update changed the beneficiary"


# ---- archive -------------------------------------------------------------------------------

def test_delete_archives_with_204_and_the_beneficiary_stays_readable(c):
    ben = create_beneficiary(c, external_id=ext())
    r = c.delete(PATH + "/" + ben["id"])
    assert r.status == 204 and r.body == b"", r
    got = assert_json(c.get(PATH + "/" + ben["id"]), 200)
    assert got["status"] == "archived"
    assert got["version"] == ben["version"] + 1


def test_delete_twice_is_204_and_changes_nothing_more(c):
    ben = create_beneficiary(c, external_id=None)
    assert c.delete(PATH + "/" + ben["id"]).status == 204
    v = c.get(PATH + "/" + ben["id"]).json()["version"]
    assert c.delete(PATH + "/" + ben["id"]).status == 204
    assert c.get(PATH + "/" + ben["id"]).json()["version"] == v


def test_patch_of_an_archived_beneficiary_is_409(c):
    ben = create_beneficiary(c, external_id=None)
    assert c.delete(PATH + "/" + ben["id"]).status == 204
    r = c.patch(PATH + "/" + ben["id"], json={"name": "revived"})
    assert_problem(r, 409, "beneficiary_archived")
    assert c.get(PATH + "/" + ben["id"]).json()["name"] == ben["name"]


def test_delete_with_stale_if_match_is_412_and_does_not_archive(c):
    ben = create_beneficiary(c, external_id=None)
    c.patch(PATH + "/" + ben["id"], json={"name": "v2"})
    r = c.delete(PATH + "/" + ben["id"], headers={"If-Match": '"v1"'})
    assert_problem(r, 412, "precondition_failed")
    assert c.get(PATH + "/" + ben["id"]).json()["status"] == "active"
    assert c.delete(PATH + "/" + ben["id"], headers={"If-Match": '"v2"'}).status == 204


def test_delete_unknown_id_is_404(c):
    assert_problem(c.delete(PATH + "/" + UNKNOWN_BEN), 404, "not_found")


def test_archived_beneficiaries_are_listed_with_their_status(server):
    _, _, c = server.new_workspace()
    a = create_beneficiary(c, external_id=None)
    b = create_beneficiary(c, external_id=None)
    c.delete(PATH + "/" + a["id"])
    data = c.get(PATH).json()["data"]
    assert {x["id"]: x["status"] for x in data} == {a["id"]: "archived", b["id"]: "active"}
    assert [x["id"] for x in c.get(PATH + "?status=archived").json()["data"]] == [a["id"]]
    assert [x["id"] for x in c.get(PATH + "?status=active").json()["data"]] == [b["id"]]


# ---- external_id uniqueness ----------------------------------------------------------------

def test_duplicate_external_id_is_409(c):
    e = ext()
    create_beneficiary(c, external_id=e)
    r = c.post(PATH, json=beneficiary(external_id=e, name="Second"))
    assert_problem(r, 409, "duplicate_external_id")


def test_external_id_of_an_archived_beneficiary_stays_taken(c):
    e = ext()
    ben = create_beneficiary(c, external_id=e)
    assert c.delete(PATH + "/" + ben["id"]).status == 204
    assert_problem(c.post(PATH, json=beneficiary(external_id=e)), 409, "duplicate_external_id")


def test_patch_to_another_beneficiarys_external_id_is_409(c):
    e = ext()
    create_beneficiary(c, external_id=e)
    other = create_beneficiary(c, external_id=ext())
    r = c.patch(PATH + "/" + other["id"], json={"external_id": e})
    assert_problem(r, 409, "duplicate_external_id")
    assert c.get(PATH + "/" + other["id"]).json()["external_id"] == other["external_id"]


def test_patch_keeping_its_own_external_id_is_fine(c):
    ben = create_beneficiary(c, external_id=ext())
    r = c.patch(PATH + "/" + ben["id"], json={"external_id": ben["external_id"], "name": "same"})
    assert r.status == 200, r


# ---- business rules ------------------------------------------------------------------------

def test_aba_scheme_requires_a_routing_number(c):
    r = c.post(PATH, json=beneficiary(
        account_identification={"scheme": "ABA", "identification": "000123456789"},
        bank={"name": "Some US bank"}, currency="USD", country="US", external_id=None))
    assert_validation(r, {"/bank/routing_number": "routing_number_required"})


def test_counterparty_id_is_rejected_for_now(c):
    r = c.post(PATH, json=beneficiary(counterparty_id="cpty_" + "1" * 26, external_id=None))
    assert_validation(r, {"/counterparty_id": "counterparty_not_found"})


def test_business_rule_violations_are_reported_together(c):
    r = c.post(PATH, json=beneficiary(
        account_identification={"scheme": "ABA", "identification": "000123456789"}, bank=None,
        counterparty_id="cpty_" + "1" * 26, currency="USD", country="US", external_id=None))
    assert_validation(r, {"/bank/routing_number": "routing_number_required",
                          "/counterparty_id": "counterparty_not_found"})


def test_changing_where_money_goes_resets_verification_and_approval(make_server):
    """A PATCH that changes who or where the payee is (names, account, bank, currency or
    country) re-opens verification and approval; other changes, or writing the same values,
    keep them. The statuses are set out of
    band here (there is no approval API yet), in the database of the stopped server."""
    s = make_server()
    c = s.admin_client()
    keep = create_beneficiary(c, external_id=None)
    moved = create_beneficiary(c, external_id=None)
    assert s.stop() == 0
    db = open_db(s)
    with db:
        db.execute("UPDATE beneficiaries SET verification_status = 'verified', "
                   "approval_status = 'approved' WHERE id IN (?, ?)", (keep["id"], moved["id"]))
    db.close()
    s.start()
    c = s.client(token=s.token)
    got = assert_json(c.patch(PATH + "/" + keep["id"], json={
        "name": keep["name"], "beneficiary_type": "trusted", "metadata": {"x": "y"},
        "currency": keep["currency"], "bank": keep["bank"]}), 200)
    assert (got["verification_status"], got["approval_status"]) == ("verified", "approved"), got
    for change in ({"name": "Renamed"}, {"account_holder_name": "Someone Else Ltd"},
                   {"currency": "CHF"}, {"country": "AT"}, {"bank": {"bic": "DEUTDEFF"}},
                   {"account_identification": {"scheme": "IBAN",
                                               "identification": "GB82WEST12345698765432"}}):
        with db_connection(s) as db:
            db.execute("UPDATE beneficiaries SET verification_status = 'verified', "
                       "approval_status = 'approved' WHERE id = ?", (moved["id"],))
        got = assert_json(c.patch(PATH + "/" + moved["id"], json=change), 200)
        assert (got["verification_status"], got["approval_status"]) == \
            ("unverified", "pending_approval"), (change, got)



# ---- schema validation ---------------------------------------------------------------------

def test_create_with_three_bad_fields_lists_all_three(c):
    r = c.post(PATH, json=beneficiary(
        name="", currency="ZZZ", external_id=None,
        account_identification={"scheme": "IBAN", "identification": "DE00370400440532013000"}))
    body = assert_validation(r, {"/name": "min_length", "/currency": "format",
                                 "/account_identification/identification": "format"})
    assert len(body["errors"]) == 3, body["errors"]


def test_missing_required_fields_are_all_reported(c):
    r = c.post(PATH, json={})
    body = assert_problem(r, 422, "validation_failed")
    missing = {"name", "account_holder_name", "account_identification", "currency", "country"}
    reported = set()
    for e in body["errors"]:
        assert e["code"] == "required", e
        if e["pointer"]:
            reported.add(e["pointer"][1:])
        else:
            reported.update(m for m in missing if m in e["detail"])
    assert reported == missing, body["errors"]


@pytest.mark.parametrize("iban", [
    "DE89370400440532013001",        # check digits wrong
    "DE8937040044053201300",         # too short for DE
    "XX89370400440532013000",        # no such country
    "DE89 3704 0044 0532 0130 00",   # print form with spaces
    "de89370400440532013000",        # lower case
    "GB82WEST12345698765431",
])
def test_bad_iban_is_422_format_at_the_identification(c, iban):
    r = c.post(PATH, json=beneficiary(
        account_identification={"scheme": "IBAN", "identification": iban}, external_id=None))
    assert_validation(r, {"/account_identification/identification": ("format", "max_length")})


@pytest.mark.parametrize("bic", ["COBADEFFX", "COBA1EFF", "COBADE", "COBAZZFFXXX",
                                 "COBA-DEFFXX"])
def test_bad_bic_is_422_at_bank_bic(c, bic):
    r = c.post(PATH, json=beneficiary(bank={"bic": bic}, external_id=None))
    assert_validation(r, {"/bank/bic": ("format", "max_length")})


@pytest.mark.parametrize("field, value, code", [
    ("currency", "eur", "format"),
    ("currency", "EURO", None),
    ("currency", "XYZ", "format"),
    ("country", "XX", "format"),
    ("country", "de", "format"),
    ("email", "not-an-email", "format"),
    ("name", "x" * 141, "max_length"),
    ("name", 42, "type"),
    ("account_holder_name", "y" * 71, "max_length"),
    ("beneficiary_type", "vip", "enum"),
    ("external_id", "has space", "pattern"),
    ("external_id", "", "min_length"),
    ("metadata", {"k": 1}, None),
    ("metadata", ["not", "an", "object"], "type"),
    ("bank", {}, "min_properties"),
])
def test_field_violation_is_422_at_its_pointer(c, field, value, code):
    r = c.post(PATH, json=beneficiary(**{field: value}) if field != "external_id"
               else beneficiary(external_id=value))
    ptr = "/metadata/k" if (field == "metadata" and isinstance(value, dict) and value) else "/" + field
    assert_validation(r, {ptr: code})


def test_metadata_over_50_keys_is_422(c):
    r = c.post(PATH, json=beneficiary(metadata={"k%d" % i: "v" for i in range(51)},
                                      external_id=None))
    assert_validation(r, {"/metadata": "max_properties"})


def test_metadata_value_over_500_chars_is_422(c):
    r = c.post(PATH, json=beneficiary(metadata={"k": "v" * 501}, external_id=None))
    assert_validation(r, {"/metadata/k": "max_length"})


def test_unknown_scheme_is_422_under_account_identification(c):
    r = c.post(PATH, json=beneficiary(
        account_identification={"scheme": "SWIFT", "identification": "123"}, external_id=None))
    body = assert_problem(r, 422, "validation_failed")
    assert body["errors"] and all(e["pointer"].startswith("/account_identification")
                                  for e in body["errors"]), body["errors"]


def test_scheme_selects_the_variant_rules(c):
    # A sort code + account number is 14 digits; an IBAN is not accepted under that scheme.
    r = c.post(PATH, json=beneficiary(
        account_identification={"scheme": "SortCodeAccountNumber",
                                "identification": "DE89370400440532013000"}, external_id=None))
    assert_validation(r, {"/account_identification/identification": ("pattern", "max_length")},
                      exact=False)


@pytest.mark.parametrize("field", ["id", "workspace_id", "status"])
def test_read_only_field_in_create_body_is_422(c, field):
    value = {"id": UNKNOWN_BEN, "workspace_id": "wsp_" + "0" * 26, "status": "archived"}[field]
    r = c.post(PATH, json=beneficiary(external_id=None, **{field: value}))
    assert_validation(r, {"/" + field: ("read_only", "additional_property")})


def test_unknown_property_is_422_additional_property(c):
    r = c.post(PATH, json=beneficiary(external_id=None, is_admin=True))
    assert_validation(r, {"/is_admin": "additional_property"})


def test_unknown_property_nested_is_422(c):
    r = c.post(PATH, json=beneficiary(external_id=None, account_identification={
        "scheme": "IBAN", "identification": "DE89370400440532013000", "extra": 1}))
    assert_validation(r, {"/account_identification/extra": "additional_property"})


def test_pointer_escapes_slash_and_tilde_in_member_names(c):
    r = c.post(PATH, json=beneficiary(external_id=None, **{"a/b~c": 1}))
    assert_validation(r, {"/a~1b~0c": "additional_property"})


def test_many_violations_are_capped_not_unbounded(c):
    body = beneficiary(external_id=None)
    for i in range(200):
        body["extra_%03d" % i] = i
    r = c.post(PATH, json=body)
    got = assert_problem(r, 422, "validation_failed")
    assert 1 <= len(got["errors"]) <= 50


def test_rejected_create_stores_nothing(server):
    _, _, c = server.new_workspace()
    c.post(PATH, json=beneficiary(currency="ZZZ"))
    c.post(PATH, json=beneficiary(id=UNKNOWN_BEN))
    c.post(PATH, body=b"{", headers={"Content-Type": "application/json"})
    assert c.get(PATH).json()["data"] == []
