"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) from the spec and a few
hand-picked cases: request-body examples of every operation (dispatch, json, form), real tokens
signed with the fuzz target's key (token), every route's path (router), the same dispatch
inputs for the golden small spec's operations (small), one sample per
format (formats), and the examples of every schema fuzz_schemas.c lists (schemas). Rerun after
the spec changes: /usr/bin/python3 tests/fuzz/seeds.py"""

import hashlib
import json
import os
import re
import shutil
import sys
import urllib.parse

import jwt  # Debian's python3-jwt

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "fuzz", "corpus")
sys.path.insert(0, os.path.join(REPO, "codegen"))
from spec import snake  # noqa: E402  (the generator's C names of schemas)


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


RAW_BODY_MEDIA = ("application/xml", "text/plain", "text/csv")
RAW_ANSWER_MEDIA = ("text/csv", "application/xml", "text/plain", "application/pdf")
# Accept headers (RFC 9110 §12.5.1): ranges, q-values, q=0, parameters, junk.
ACCEPTS = ["text/csv", "text/*", "*/*", "application/json;q=0.5, text/csv",
           "text/csv;q=0, */*", "*/*;q=0", "application/xml, application/pdf;q=0.9",
           "text/csv;charset=utf-8;q=0.7, text/plain;charset=latin1",
           "text/csv;q=1.000, application/json;q=0.999", "garbage, ,;q=, */csv",
           "text/csv;charset=\"utf-8, x\";q=0.5", "text/csv;q=0.5;ext=\"a\\\"b\"",
           "TEXT/CSV", "application/*;q=0.001", ""]


def schema_seeds(spec):
    """fuzz_schemas.c: byte 0 is the schema's index in its SCHEMAS list, then a JSON document:
    the schema's examples (its own, and those of every body that references it), and for
    sheet ranges (arrays of arrays) a few shapes an example does not show."""
    source = open(os.path.join(REPO, "tests", "fuzz", "fuzz_schemas.c")).read()
    block = re.search(r"#define SCHEMAS\(X\)(.*?)\n\n", source, re.S).group(1)
    order = re.findall(r"X\((\w+)\)", block)
    schemas = spec["components"]["schemas"]
    by_c_name = {snake(name): name for name in schemas}
    examples = {}
    for name, schema in schemas.items():
        if "example" in schema:
            examples.setdefault(name, []).append(schema["example"])
    for item in spec["paths"].values():
        for op in item.values():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            for body in [op.get("requestBody", {})] + list(op["responses"].values()):
                for mt in body.get("content", {}).values():
                    ref = mt.get("schema", {}).get("$ref", "")
                    if ref and "example" in mt:
                        examples.setdefault(ref.rsplit("/", 1)[1], []).append(mt["example"])
    for index, c_name in enumerate(order):
        name = by_c_name[c_name]
        for example in examples.get(name, []):
            write("schemas", bytes([index]) + json.dumps(example).encode())
        if c_name == "sheet_values_write":
            for values in ([[]], [["a"], ["b", "c", "d"]], [[""] * 3] * 4, [["x", 1]],
                           [[["nested"]]], [], "a1"):
                write("schemas", bytes([index]) + json.dumps({
                    "range": "Sheet1!A1:C4", "values": values,
                    "input_option": "raw"}).encode())


def dispatch_seeds(target, folder):
    """fuzz_dispatch.c's input for every operation of the generated code in folder (its
    routes.c gives each operation's index, its openapi.json the examples); the route paths."""
    spec = json.load(open(os.path.join(folder, "openapi.json")))
    routes = open(os.path.join(folder, "routes.c")).read()
    order = re.findall(r'\.operation_id = "([^"]+)"', routes)
    paths = re.findall(r'\.base = "([^"]*)",\s*\.path = "([^"]+)"', routes)
    ops = {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                ops[op["operationId"]] = op
    for index, op_id in enumerate(order):
        op = ops.get(op_id, {})
        content = op.get("requestBody", {}).get("content", {})
        example = content.get("application/json", {}).get("example")
        param = "pay_01jq5f6g7h8j9k0m1n2p3q4r5s"
        # Every header has the parameter's value (fuzz_dispatch.c): a media type as the
        # parameter drives the Content-Type of a raw body and the Accept of a negotiated
        # answer at once.
        for media, mt in content.items():
            if media in RAW_BODY_MEDIA and isinstance(mt.get("example"), str):
                for ct in (media, media + "; charset=utf-8", "application/json"):
                    write(target, index.to_bytes(2, "big") + (ct + "\n" + mt["example"]).encode())
                write(target, index.to_bytes(2, "big") + (media + "\n").encode() + b"\xff\xfe<x/>")
        produces = [m for r in op.get("responses", {}).values() if isinstance(r, dict)
                    for m in r.get("content", {})]
        if any(m in RAW_ANSWER_MEDIA for m in produces):
            for accept in ACCEPTS:
                write(target, index.to_bytes(2, "big") + (accept + "\n").encode())
        if example is not None:
            body = json.dumps(example)
            write(target, index.to_bytes(2, "big") + (param + "\n" + body).encode())
            if target == "dispatch":
                write("json", body)
                flat = {k: v for k, v in example.items() if isinstance(v, str)}
                if flat:
                    write("form", urllib.parse.urlencode(flat))
        else:
            write(target, index.to_bytes(2, "big") + (param + "\n").encode())
        # array query parameters: one value, a comma-separated list, an empty value
        params = [spec["components"]["parameters"][p["$ref"].split("/")[-1]] if "$ref" in p
                  else p for p in op.get("parameters", [])]
        if any(p.get("in") == "query" and p.get("schema", {}).get("type") == "array"
               for p in params):
            for value in ["approved", "approved,pending_approval", "", ",", "active,x,"]:
                write(target, index.to_bytes(2, "big") + (value + "\n").encode())
    return paths


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    spec = json.load(open(os.path.join(REPO, "generated", "openapi.json")))
    paths = dispatch_seeds("dispatch", os.path.join(REPO, "generated"))
    small = os.path.join(REPO, "tests", "codegen", "small", "expected")
    dispatch_seeds("small", small)
    # fuzz_small.c's Thing mode (byte 0 = 0xff): its arrays of arrays (grid, cube), its map of
    # arrays (groups), its maps (index, tally)
    thing = {"id": "thg_0001", "name": "grid", "kind": "small", "size": 5, "tags": ["a"],
             "created_at": "2025-03-14T09:26:53.589Z"}
    for extra in ({"grid": [[1, 2], [3], [9, 0]], "cube": [[[{"n": 1}], []], [[{"n": 2}]]]},
                  {"groups": {"a": ["x", "y"], "b": []}, "index": {"p": {"n": 7}},
                   "tally": {"total": 3, "extra": 9}},
                  {"grid": [[]], "groups": {"c": [1]}, "secret": "s"},
                  {"cube": [[[{"n": 10}]], [[{"n": 1}]], [[{"n": 1}]]], "groups": {"": ["x"]}}):
        write("small", b"\xff" + json.dumps({**thing, **extra}).encode())
    for base, path in paths:
        full = base + re.sub(r"\{[^}]+\}", "x_01jq5f6g7h8j9k0m1n2p3q4r5s", path)
        write("router", b"\x00" + full.encode())
        write("router", b"\x01" + full.encode())
    for doc in ['{"a":[1,2.5e-3,true,null,"\\u00e9\\ud83d\\ude00"]}', '[]', '"x"', '-0',
                '{"k":{"k":{"k":[{}]}}}', '12345678901234567890']:
        write("json", doc)
    for body in ["grant_type=refresh_token&refresh_token=abc%2Bdef", "a=1&b=%C3%A9&c=+x+",
                 "", "x=", "a=1&a=2", "%zz=1"]:
        write("form", body)
    key = bytes((i * 7 + 3) & 0xFF for i in range(32))
    claims = {"iss": "https://127.0.0.1:8443", "aud": "treasury-api", "sub": "usr_1",
              "wid": "wsp_1", "sid": "ses_1", "jti": "tok_1", "client_id": "first-party",
              "scope": "payments:read", "iat": 1800000000, "nbf": 1800000000,
              "exp": 1800000900}
    hdr = {"typ": "at+jwt", "kid": "k-fuzz"}
    write("token", jwt.encode(claims, key, algorithm="HS256", headers=hdr))
    service = {k: v for k, v in claims.items() if k != "exp"} | {"sub": "sa_x"}  # no exp
    write("token", jwt.encode(service, key, algorithm="HS256", headers=hdr))
    write("token", jwt.encode(claims, key, algorithm="HS512", headers=hdr))
    write("token", jwt.encode(claims, "wrong", algorithm="HS256", headers=hdr))
    samples = ["2025-03-14", "2025-03-14T09:26:53.589+01:00", "123e4567-e89b-12d3-a456-426614174000",
               "a@b.example", "https://x.example/p?q#f", "EUR", "DE", "DE89370400440532013000",
               "COBADEFFXXX", "2025-03-14T09:26:53.589Z", "AAECAwQF",
               "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
               "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "1.0842500000",
               "2025-03-14T09:26:53.589Z"]
    for i, s in enumerate(samples):
        write("formats", bytes([i]) + s.encode())
    for s in ["-0.0012500000", "99999999.9999999999", "0", "-0.000", "1e5", "01.5",
              "0.000000000000000001", "999999999999999999"]:
        write("formats", bytes([13]) + s.encode())
    # fuzz_media.c: byte 0 picks the offered types and their order, then the header text
    for i, accept in enumerate(ACCEPTS + list(RAW_BODY_MEDIA) + [
            "text/plain; charset=UTF-8", "application/xml;charset=\"utf-8\"",
            "text/csv; header=present", "text/plain; charset", "text/plain x"]):
        write("media", bytes([(i * 37 + 3) & 0xFF]) + accept.encode())
    schema_seeds(spec)
    for head in [b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"POST /v1/payments?limit=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                 b"Content-Type: application/json\r\nX-Tab: a\tb\r\n\r\n",
                 b"POST /v1/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                 b"GET /healthz HTTP/1.1\nHost: x\r\nX-A: a\x00b\r\nX-B: a\r\n c\r\n\r\n",
                 b"GET /v1/%2e%2E/x%00?a=%2F HTTP/1.0\r\nX-E:\r\n\r\n"]:
        write("http_strict", head)
    # fuzz_proxy_protocol.c: PROXY protocol headers (v2 binary, v1 text), a TLS ClientHello's start
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    v4 = bytes([198, 51, 100, 7, 10, 0, 0, 5, 0xC3, 0x50, 0x20, 0xFB])
    v6 = bytes([0x20, 0x01, 0x0D, 0xB8] + [0] * 11 + [9] + [0] * 15 + [1] +
               [0xC3, 0x50, 0x20, 0xFB])
    noop = b"\x04\x00\x04\x00\x00\x00\x00"
    for ver_cmd, fam, body in [(0x21, 0x11, v4), (0x21, 0x21, v6), (0x20, 0x00, b""),
                               (0x21, 0x11, v4 + noop), (0x21, 0x21, v6 + noop),
                               (0x20, 0x11, v4), (0x21, 0x12, v4), (0x11, 0x11, v4)]:
        write("proxy_protocol", sig + bytes([ver_cmd, fam]) + len(body).to_bytes(2, "big") +
              body + b"\x16\x03\x01\x02\x00\x01")
    for line in [b"PROXY TCP4 198.51.100.22 10.0.0.5 40000 8443\r\n",
                 b"PROXY TCP6 2001:db8::1 ::1 65535 0\r\n", b"PROXY UNKNOWN\r\n",
                 b"PROXY UNKNOWN ffff::1 ::1 1 2\r\n",
                 b"PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\nGET / HTTP/1.1\r\n"]:
        write("proxy_protocol", line)
    write("proxy_protocol", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")


if __name__ == "__main__":
    main()
