"""Runtime error handling before a handler runs: routing (404/405), body size (413), media type
(415), unreadable JSON and invalid UTF-8 (400), query parameters, request ids and the headers
every response carries. Every error must be an RFC 9457 problem without internals."""

import json
import re

import pytest

from helpers import (QUERY_PARAM_CODE, QUERY_PARAM_STATUS, UNKNOWN_BEN, assert_json,
                     assert_problem, assert_rate_limit_headers, assert_validation, beneficiary,
                     new_request_id)

CAP = 65536          # default x-max-body-bytes
LOGIN_CAP = 4096     # POST /api/login declares x-max-body-bytes: 4096


@pytest.fixture(scope="module")
def c(server):
    return server.admin_client()


def padded_body(size):
    """A valid beneficiary create body of exactly size bytes (whitespace padding)."""
    raw = json.dumps(beneficiary(external_id=None)).encode()
    assert len(raw) < size
    return raw[:-1] + b" " * (size - len(raw)) + b"}"


# ---- routing -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", [
    "/v1/no-such-thing",
    "/v2/beneficiaries",
    "/beneficiaries",                       # the API lives under /v1
    "/v1/beneficiaries/%s/extra" % UNKNOWN_BEN,
    "/v1/",
    "/",
])
def test_unknown_path_is_404_problem(c, path):
    r = c.get(path)
    assert_problem(r, 404, "not_found", instance=path)


def test_unknown_path_is_404_even_without_a_token(server):
    with server.client() as anon:
        assert_problem(anon.get("/v1/no-such-thing"), 404, "not_found")


@pytest.mark.parametrize("method, path, allowed", [
    ("PUT", "/v1/beneficiaries", {"GET", "POST"}),
    ("DELETE", "/v1/beneficiaries", {"GET", "POST"}),
    ("POST", "/v1/beneficiaries/" + UNKNOWN_BEN, {"GET", "PATCH", "DELETE"}),
    ("PUT", "/v1/beneficiaries/" + UNKNOWN_BEN, {"GET", "PATCH", "DELETE"}),
    ("GET", "/v1/api/login", {"POST"}),
    ("DELETE", "/v1/openapi.json", {"GET"}),
])
def test_wrong_method_is_405_with_allow_header(c, method, path, allowed):
    r = c.request(method, path, body=b"{}" if method in ("POST", "PUT") else None,
                  headers={"Content-Type": "application/json"} if method in ("POST", "PUT") else None)
    assert_problem(r, 405, "method_not_allowed")
    allow = {m.strip() for m in (r.header("Allow") or "").split(",") if m.strip()}
    allow.discard("HEAD")
    allow.discard("OPTIONS")
    assert allow == allowed, r.header("Allow")


def test_wrong_method_is_405_even_without_a_token(server):
    with server.client() as anon:
        r = anon.request("PUT", "/v1/beneficiaries", body=b"{}",
                         headers={"Content-Type": "application/json"})
    assert_problem(r, 405, "method_not_allowed")
    assert r.header("Allow")


# ---- body size -----------------------------------------------------------------------------

def test_body_over_64_kib_is_413(c):
    r = c.post("/v1/beneficiaries", body=padded_body(CAP + 1),
               headers={"Content-Type": "application/json"})
    assert_problem(r, 413, "payload_too_large")


def test_body_of_exactly_64_kib_is_accepted(c):
    r = c.post("/v1/beneficiaries", body=padded_body(CAP),
               headers={"Content-Type": "application/json"})
    assert r.status == 201, r


def test_chunked_body_over_the_cap_is_413(c):
    chunks = (b"{" + b" " * 8192 for _ in range(9))  # 73 KiB, no Content-Length
    r = c.post("/v1/beneficiaries", body=chunks, headers={"Content-Type": "application/json"})
    assert_problem(r, 413, "payload_too_large")


def test_login_has_its_own_4_kib_cap(server):
    with server.client() as anon:
        big = {"email": server.admin_email, "password": server.admin_password}
        raw = json.dumps(big).encode()
        raw = raw[:-1] + b" " * (LOGIN_CAP + 1 - len(raw)) + b"}"
        assert len(raw) == LOGIN_CAP + 1
        r = anon.post("/v1/api/login", body=raw, headers={"Content-Type": "application/json"})
        assert_problem(r, 413, "payload_too_large")
        assert b"access_token" not in r.body


def test_server_still_serves_after_a_413(c):
    try:  # the server may answer early and close while the body is still being sent
        r = c.post("/v1/beneficiaries", body=padded_body(CAP * 3),
                   headers={"Content-Type": "application/json"})
        assert r.status == 413, r
    except OSError:
        c.close()
    assert c.get("/v1/beneficiaries").status == 200


# ---- media type ----------------------------------------------------------------------------

@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded",
                                   "application/jsonp", "application/xml", None])
def test_post_without_json_content_type_is_415(c, ctype):
    body = json.dumps(beneficiary(external_id=None)).encode()
    r = c.post("/v1/beneficiaries", body=body, headers={"Content-Type": ctype})
    assert_problem(r, 415, "unsupported_media_type")


def test_json_content_type_with_charset_is_accepted(c):
    body = json.dumps(beneficiary(external_id=None)).encode()
    r = c.post("/v1/beneficiaries", body=body,
               headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status == 201, r


def test_patch_without_json_content_type_is_415(c):
    r = c.patch("/v1/beneficiaries/" + UNKNOWN_BEN, body=b'{"name":"x"}',
                headers={"Content-Type": "text/plain"})
    # The body is refused before the operation runs (and so before it looks the id up).
    assert_problem(r, 415, "unsupported_media_type")
    ben = c.post("/v1/beneficiaries", json=beneficiary(external_id=None)).json()
    r = c.patch("/v1/beneficiaries/" + ben["id"], body=b'{"name":"x"}',
                headers={"Content-Type": "text/plain"})
    assert_problem(r, 415, "unsupported_media_type")
    assert c.get("/v1/beneficiaries/" + ben["id"]).json()["name"] == ben["name"]


def test_login_without_json_content_type_is_415(server):
    with server.client() as anon:
        r = anon.post("/v1/api/login",
                      body=b"email=admin%40example.com&password=x",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_problem(r, 415, "unsupported_media_type")


# ---- unreadable bodies ---------------------------------------------------------------------

@pytest.mark.parametrize("raw", [
    b'{"name": ',
    b"{'name': 'single quotes'}",
    b'{"name": "x",}',
    b'{"name": "x"} trailing',
    b"",
    b"   ",
    b'{"name": "unterminated}',
    b"NaN",
    b'{"a": 01}',
    b"[" * 5000 + b"]" * 5000,            # deep nesting must be refused, not crash
], ids=["truncated", "single-quotes", "trailing-comma", "trailing-garbage", "empty", "blank",
        "unterminated-string", "nan", "leading-zero", "deep-nesting"])
def test_unreadable_json_is_refused(c, raw):
    r = c.post("/v1/beneficiaries", body=raw, headers={"Content-Type": "application/json"})
    if not raw:
        # No body at all: the required body is missing, a schema violation of the whole body
        # (422, pointer ""); blank is a body that is not JSON (400 malformed_json).
        assert_validation(r, {"": "required"})
    else:
        assert_problem(r, 400, "malformed_json")
    assert c.get("/healthz").status == 200


@pytest.mark.parametrize("raw", [
    b'{"name": "\xff\xfe", "x": 1}',
    b'{"name": "\xc0\xaf"}',                    # overlong encoding of "/"
    b'{"name": "\xed\xa0\x80"}',                # UTF-8-encoded surrogate
    b'{"name": "caf\xe9"}',                     # Latin-1, not UTF-8
    b'{"na\xffme": "x"}',
], ids=["ff-fe", "overlong", "surrogate", "latin1", "in-key"])
def test_invalid_utf8_body_is_400(c, raw):
    r = c.post("/v1/beneficiaries", body=raw, headers={"Content-Type": "application/json"})
    assert_problem(r, 400, "malformed_json")


def test_valid_multibyte_utf8_is_accepted(c):
    r = c.post("/v1/beneficiaries", json=beneficiary(name="Müller & Søn — 東京 🏦", external_id=None))
    assert r.status == 201, r
    assert r.json()["name"] == "Müller & Søn — 東京 🏦"


def test_json_unicode_escapes_are_decoded(c):
    raw = json.dumps(beneficiary(name="@@")).encode().replace(
        b"@@", b"caf\\u00e9 \\ud83c\\udfe6 \\\"q\\\" \\/")
    r = c.post("/v1/beneficiaries", body=raw, headers={"Content-Type": "application/json"})
    assert r.status == 201, r
    assert r.json()["name"] == 'caf\u00e9 \U0001f3e6 "q" /'


def test_lone_surrogate_escape_is_refused(c):
    raw = json.dumps(beneficiary(name="@@")).encode().replace(b"@@", b"x\\ud800y")
    r = c.post("/v1/beneficiaries", body=raw, headers={"Content-Type": "application/json"})
    assert_problem(r, 400, "malformed_json")  # not a Unicode string: not JSON (RFC 8259 §8.2)


def test_json_body_that_is_not_an_object_is_422_at_the_root(c):
    r = c.post("/v1/beneficiaries", body=b"[]", headers={"Content-Type": "application/json"})
    assert_validation(r, {"": "type"})


# ---- query parameters ----------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "101", "-1", "1.5", "abc", "99999999999999999999",
                                   "1e2", "", "20abc", "0x10"])
def test_invalid_limit_is_refused_with_a_query_pointer(c, value):
    r = c.get("/v1/beneficiaries?limit=" + value)
    assert_validation(r, {"/query/limit": None}, status=QUERY_PARAM_STATUS, code=QUERY_PARAM_CODE)


@pytest.mark.parametrize("value", ["1", "100", "20"])
def test_limit_bounds_are_accepted(c, value):
    assert c.get("/v1/beneficiaries?limit=" + value).status == 200


def test_invalid_status_filter_is_refused(c):
    r = c.get("/v1/beneficiaries?status=deleted")
    assert_validation(r, {"/query/status/0": "enum"}, status=QUERY_PARAM_STATUS,
                      code=QUERY_PARAM_CODE)


def test_every_invalid_query_parameter_is_reported(c):
    r = c.get("/v1/beneficiaries?limit=0&status=nope&currency=euro")
    assert_validation(r, {"/query/limit": None, "/query/status/0": None, "/query/currency": None},
                      status=QUERY_PARAM_STATUS, code=QUERY_PARAM_CODE)


# ---- request ids and common headers --------------------------------------------------------

def test_valid_client_request_id_is_echoed(c):
    rid = new_request_id()
    r = c.get("/v1/beneficiaries", headers={"X-Request-ID": rid})
    assert r.header("X-Request-ID") == rid


def test_client_request_id_is_echoed_on_errors_and_in_the_problem(c):
    rid = new_request_id()
    r = c.get("/v1/beneficiaries/" + UNKNOWN_BEN, headers={"X-Request-ID": rid})
    body = assert_problem(r, 404, "not_found")
    assert r.header("X-Request-ID") == rid and body["request_id"] == rid


@pytest.mark.parametrize("bad", ["hello", "123", "x" * 200, "'; DROP TABLE x; --",
                                 "00000000-0000-0000-0000-00000000000g"])
def test_invalid_client_request_id_is_replaced_by_a_generated_one(c, bad):
    r = c.get("/healthz", headers={"X-Request-ID": bad})
    rid = r.header("X-Request-ID")
    assert rid and rid != bad
    assert re.fullmatch(r"[A-Za-z0-9_-]{8,64}", rid), rid


def test_generated_request_ids_are_unique(c):
    ids = {c.get("/healthz").header("X-Request-ID") for _ in range(20)}
    assert len(ids) == 20 and None not in ids


@pytest.mark.parametrize("path, status, token", [
    ("/healthz", 200, "admin"),
    ("/v1/beneficiaries", 200, "admin"),
    ("/v1/beneficiaries", 401, None),
    ("/v1/beneficiaries", 401, "garbage"),
    ("/v1/beneficiaries/" + UNKNOWN_BEN, 404, "admin"),
    ("/v1/nothing-here", 404, None),
])
def test_rate_limit_headers_are_integers_on_every_response(server, path, status, token):
    tok = {"admin": server.token, "garbage": "garbage", None: False}[token]
    with server.client() as cl:
        r = cl.get(path, token=tok)
    assert r.status == status, r
    assert_rate_limit_headers(r)
    assert r.header("X-Request-ID")


def test_405_and_415_also_carry_rate_limit_headers(c):
    assert_rate_limit_headers(c.put("/v1/beneficiaries", body=b"{}",
                                    headers={"Content-Type": "application/json"}))
    assert_rate_limit_headers(c.post("/v1/beneficiaries", body=b"{}",
                                     headers={"Content-Type": "text/plain"}))


def test_success_responses_are_json_with_no_store(c):
    r = c.get("/v1/beneficiaries")
    assert_json(r, 200)
    assert r.header("Cache-Control") == "no-store"


def test_access_token_in_query_string_is_refused(server):
    with server.client() as cl:
        r = cl.get("/v1/beneficiaries?access_token=" + server.token, token=False)
    assert_problem(r, 400, "invalid_request")
    assert "invalid_request" in (r.header("WWW-Authenticate") or "")
