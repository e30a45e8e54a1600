"""Malformed requests derived from the spec itself (issue 7; after the Smithy malformed-request
suite): for every operation, each constraint of its request body and query parameters is broken
once, starting from the operation's own valid example, and the server must answer the
documented problem (422 validation_failed for the body, 400 invalid_request for a parameter)
with an error at the right JSON Pointer and code, and change nothing. (The OAuth endpoints,
x-oauth-errors, answer an RFC 6749 invalid_request naming the pointer and code in its
error_description instead.) Whole-body cases add
malformed JSON: invalid UTF-8, duplicate keys, NaN, deep nesting, huge numbers. New operations
and constraints add cases by themselves; the counts per operation are written to
build/test-artifacts/malformed-cases.txt."""

import copy
import json
import re
import urllib.parse
from pathlib import Path

import pytest

import spec_ops
from conftest import Servers
from helpers import check_oauth_error, table_counts
from spec_ops import SPEC, resolve

REPO = Path(__file__).resolve().parents[2]
CHECKED_FORMATS = {"date": "2025-13-45", "date-time": "yesterday", "uuid": "not-a-uuid",
                   "email": "no-at-sign", "uri": "no scheme here", "iso4217": "QQQ",
                   "iso3166-alpha2": "QQ", "iban": "DE00370400440532013000",
                   "bic": "COBAXXFFXXX"}
REPORT = REPO / "build" / "test-artifacts" / "malformed-cases.txt"


def types_of(schema):
    t = schema.get("type")
    return set(t) if isinstance(t, list) else ({t} if t else set())


def wrong_type_value(schema):
    t = types_of(schema)
    if not t:
        return None
    for candidate, kind in (({"x": 1}, "object"), ([1], "array"), ("text", "string"),
                            (12, "integer"), (True, "boolean")):
        if kind in t or (kind == "integer" and "number" in t):
            continue
        return candidate
    return None


def non_matching(pattern, lo, hi):
    for ch in ("#", "!", " ", "\u00e9", "0", "A", "a"):
        s = ch * max(lo, 1)
        if len(s) <= hi and not re.search(pattern, s):
            return s
    return None


def value_cases(schema, value):
    """(replacement value, code) pairs that break one constraint of schema."""
    s = resolve(schema)
    if "oneOf" in s or not s:
        return []
    out = []
    wrong = wrong_type_value(s)
    if wrong is not None:
        out.append((wrong, "type"))
    t = types_of(s)
    if "enum" in s:
        out.append(("not-one-of-them", "enum"))
    if "const" in s:
        out.append(("not-the-const", "const"))
    if "string" in t and "enum" not in s and "const" not in s:
        lo, hi = s.get("minLength", 0), s.get("maxLength", 10 ** 6)
        if "maxLength" in s:
            out.append(("a" * (hi + 1), "max_length"))
        if lo > 1:
            out.append(("a" * (lo - 1), "min_length"))
        if "pattern" in s:
            bad = non_matching(s["pattern"], lo, hi)
            if bad is not None:
                out.append((bad, "pattern"))
        # our own formats (x-format) always carry a pattern, which these samples match
        fmt = s.get("x-format", s.get("format"))
        if fmt in CHECKED_FORMATS and ("pattern" not in s or "x-format" in s):
            out.append((CHECKED_FORMATS[fmt], "format"))
    if t & {"integer", "number"}:
        if "maximum" in s:
            out.append((s["maximum"] + 1, "maximum"))
        if "minimum" in s:
            out.append((s["minimum"] - 1, "minimum"))
    if "array" in t and isinstance(value, list) and value:
        if "maxItems" in s:
            out.append((value[:1] * (s["maxItems"] + 1), "max_items"))
        if s.get("minItems", 0) > 0:
            out.append(([], "min_items"))
    return out


def body_cases(schema, example, ptr=""):
    """(body, pointer, code) for each broken constraint, recursing into object members."""
    s = resolve(schema)
    cases = []
    if not isinstance(example, dict) or "oneOf" in s or s.get("type") not in ("object", None):
        return cases
    props = s.get("properties", {})
    for name in s.get("required", []):
        if name in example:
            body = copy.deepcopy(example)
            del body[name]
            cases.append((body, ptr + "/" + name, "required"))
    if s.get("additionalProperties") is False:
        body = copy.deepcopy(example)
        body["zz_not_in_the_schema"] = 1
        cases.append((body, ptr + "/zz_not_in_the_schema", "additional_property"))
    for name, sub in props.items():
        if name not in example:
            continue
        for value, code in value_cases(sub, example[name]):
            body = copy.deepcopy(example)
            body[name] = value
            cases.append((body, ptr + "/" + name, code))
        for inner, p, code in body_cases(sub, example[name], ptr + "/" + name):
            body = copy.deepcopy(example)
            body[name] = inner
            cases.append((body, p, code))
    return cases


def operations():
    return [(o.id, o.method, o.path, o.op, o.params) for o in spec_ops.OPS]


OPS = operations()


def is_page(op):
    def deref(r):
        return SPEC["components"]["responses"][r["$ref"].split("/")[-1]] if "$ref" in r else r
    return any("text/html" in (deref(r).get("content") or {})
               for r in op.get("responses", {}).values() if isinstance(r, dict))


def cases_for(op_id, method, path, op, params):
    """[(label, method, url, body bytes or None, expected status, pointer, code)]."""
    url_path = path
    for p in params:
        if p["in"] == "path":
            url_path = url_path.replace("{%s}" % p["name"], p.get("example") or
                                        "x_01jq5f6g7h8j9k0m1n2p3q4r5s")
    content = (op.get("requestBody") or {}).get("content", {})
    media = content.get("application/json")
    example = (media or {}).get("example",
                                content.get("application/x-www-form-urlencoded", {}).get("example"))
    # parameter cases carry the valid body, when the operation takes one
    valid = json.dumps(example).encode() if media and example is not None else None
    cases = []
    for p in params:
        if p["in"] != "path":
            continue
        for value, code in value_cases(p["schema"], p.get("example")):
            if not isinstance(value, str) or not value or "/" in value or value.strip() != value:
                continue
            url = path
            for q in params:
                if q["in"] == "path":
                    url = url.replace("{%s}" % q["name"], urllib.parse.quote(value, safe="")
                                      if q is p else (q.get("example") or
                                                      "x_01jq5f6g7h8j9k0m1n2p3q4r5s"))
            cases.append(("path %s %s" % (p["name"], code), method, url, valid, 400,
                          "/path/" + p["name"], code))
    for p in params:
        if p["in"] != "query":
            continue
        for value, code in value_cases(p["schema"], p.get("example")):
            if isinstance(value, (dict, list, bool)) or value is None:
                continue
            q = urllib.parse.urlencode({p["name"]: value})
            cases.append(("query %s %s" % (p["name"], code), method, url_path + "?" + q, valid,
                          400, "/query/" + p["name"], code))
    if valid is not None:
        for body, ptr, code in body_cases(media["schema"], example):
            cases.append(("body %s %s" % (ptr, code), method, url_path,
                          json.dumps(body).encode(), 422, ptr, code))
        depth = min(600, op.get("x-max-body-bytes", 65536) // 2 - 2)  # within the body cap
        whole = [(b'{"a":\xff}', "invalid UTF-8"), (b'{"a":1,"a":2}', "duplicate key"),
                 (b'{"a":NaN}', "NaN"), (b"[" * depth + b"]" * depth, "deep nesting"),
                 (b'{"a":1e999999}', None)]
        for raw, label in whole:
            if label is None:  # a huge number is JSON; the schema refuses the object
                cases.append(("body huge number", method, url_path, raw, 422, "", None))
            else:
                cases.append(("body " + label, method, url_path, raw, 400, None,
                              "malformed_json"))
    return cases


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    servers = Servers(tmp_path_factory)
    yield servers(extra_env={"TREASURY_RATE_LIMIT": 100000000})
    servers.close()


@pytest.fixture(scope="module")
def report():
    counts = {}
    yield counts
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    lines = ["%-40s %4d" % (k, v) for k, v in sorted(counts.items())]
    lines.append("%-40s %4d" % ("total", sum(counts.values())))
    REPORT.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("op_id,method,path,op,params", OPS, ids=[o[0] for o in OPS])
def test_every_broken_constraint_is_refused_at_its_pointer(server, report, op_id, method, path,
                                                           op, params):
    cases = cases_for(op_id, method, path, op, params)
    report[op_id] = len(cases)
    if not cases:
        pytest.skip("no body example and no constrained query parameter")
    page = is_page(op)
    c = server.admin_client()
    before = table_counts(server)
    # where If-Match is required, a well-formed one: without it the answer is 428 before the
    # request is read (x-if-match: required)
    headers = {"If-Match": '"v1"'} if spec_ops.BY_ID[op_id].if_match_required else None
    for label, m, url, body, status, ptr, code in cases:
        ctype = "application/json" if body is not None else None
        r = c.request(m, url, body=body, content_type=ctype, headers=headers)
        assert r.status == status, "%s %s [%s]: %d %r" % (m, url, label, r.status, r.body[:300])
        if page:
            assert b'data-code="' in r.body
            if ptr:
                assert ptr.encode() in r.body, "%s: pointer %s not on the page" % (label, ptr)
            continue
        if op.get("x-oauth-errors"):
            oauth = check_oauth_error(r)
            d = oauth["error_description"]
            assert oauth["error"] == "invalid_request", (label, oauth)
            if code == "malformed_json":
                assert "not valid JSON" in d, (label, d)
            elif code is not None:  # "<pointer>: <detail> (<code>)" among the violations
                assert re.search(r"(^|[.;] )%s: [^;]* \(%s\)(;|$)" % (
                    re.escape(ptr or "(the body)"), re.escape(code)), d), \
                    "%s %s [%s]: expected %s %s in %r" % (m, url, label, ptr, code, d)
            continue
        problem = r.json()
        if code == "malformed_json":
            assert problem["code"] == "malformed_json", (label, problem)
            continue
        errors = {(e["pointer"], e["code"]) for e in problem.get("errors", [])}
        if code is None:
            assert errors, (label, problem)
            continue
        assert (ptr, code) in errors, "%s %s [%s]: expected %s %s in %s" % (
            m, url, label, ptr, code, sorted(errors))
    assert table_counts(server) == before, "a refused request changed stored state"
