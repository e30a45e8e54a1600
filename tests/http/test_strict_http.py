"""Strict HTTP/1.1 message parsing (RFC 9112 §2.2, §3, §5, §6; runtime/http_strict.c): every
message whose framing or head libmicrohttpd would have read leniently is refused with a problem
document, logged once, and the connection closed where the framing is unknown; request targets
with %00, an encoded '/' or dot segments never reach routing. Sent raw over TLS."""

import json
import socket
import ssl
import time

import pytest



def exchange(server, raw, timeout=5):
    """Sends raw bytes on a fresh TLS connection; returns everything read until the server
    closed (or the timeout) and whether it closed."""
    ctx = ssl.create_default_context(cafile=server.ca)
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", server.https_port),
                                                 timeout=timeout),
                        server_hostname="127.0.0.1")
    s.sendall(raw)
    data, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except (socket.timeout, ssl.SSLError, ConnectionResetError):
        pass
    s.close()
    return data, closed


def parse(data):
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ")[1])
    headers = {}
    names = []
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        names.append(k.strip().lower())
        headers[k.strip().lower().decode()] = v.strip().decode()
    repeated = {n for n in names if names.count(n) > 1}
    assert not repeated, "header field(s) sent twice: %r" % head
    return status, headers, body


def access_count(server, code, want=None, timeout=3.0):
    """Access lines with this problem code; with want, waits (briefly) until there are that
    many (access lines are written once the response is sent, buffered ~20 ms)."""
    deadline = time.monotonic() + timeout
    while True:
        n = sum(1 for r in server.access_records(wait_for=0, timeout=0) if r.get("code") == code)
        if want is None or n >= want or time.monotonic() > deadline:
            return n
        time.sleep(0.05)


def refused(server, raw, status, code, closes=True):
    before = access_count(server, code)
    data, closed = exchange(server, raw)
    assert data, "no answer to %r" % raw[:80]
    got, headers, body = parse(data)
    assert got == status, data[:300]
    assert headers["content-type"] == "application/problem+json", headers
    problem = json.loads(body[:int(headers["content-length"])])
    assert problem["code"] == code and problem["status"] == status, problem
    assert problem["request_id"] == headers["x-request-id"], problem
    if closes:
        assert headers.get("connection") == "close" and closed, headers
    assert access_count(server, code, want=before + 1) == before + 1  # logged once
    time.sleep(0.1)
    assert access_count(server, code) == before + 1
    return problem


FRAMING = [
    ("repeated-content-length",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
     400, "malformed_request"),
    ("conflicting-content-length",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\n{}",
     400, "malformed_request"),
    ("content-length-and-transfer-encoding",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400, "malformed_request"),
    ("unknown-transfer-coding",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}",
     501, "unsupported_transfer_coding"),
    ("coding-before-chunked",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
     501, "unsupported_transfer_coding"),
    ("chunked-twice",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
     b"0\r\n\r\n", 400, "malformed_request"),
    ("transfer-encoding-in-http-1.0",
     b"POST /v1/api/login HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400, "malformed_request"),
    ("bare-lf-after-request-line",
     b"GET /healthz HTTP/1.1\nHost: x\r\n\r\n", 400, "malformed_request"),
    ("bare-lf-after-a-field",
     b"GET /healthz HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n", 400, "malformed_request"),
    ("bare-lf-empty-line",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\n\n", 400, "malformed_request"),
    ("nul-in-a-value",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400, "malformed_request"),
    ("bare-cr-in-a-value",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400, "malformed_request"),
    ("folded-line",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400, "malformed_request"),
    ("space-before-colon",
     b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : a\r\n\r\n", 400, "malformed_request"),
    ("chunked-with-a-trailing-blank",  # libmicrohttpd would read the body to the end
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \r\n\r\n"
     b"0\r\n\r\n", 400, "malformed_request"),
    ("empty-transfer-encoding",
     b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 400,
     "malformed_request"),
    ("no-host", b"GET /healthz HTTP/1.1\r\nX-A: a\r\n\r\n", 400, "malformed_request"),
    ("no-host-in-http-1.5", b"GET /healthz HTTP/1.5\r\nX-A: a\r\n\r\n", 400,
     "malformed_request"),
    ("two-hosts", b"GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400,
     "malformed_request"),
]


@pytest.mark.parametrize("name,raw,status,code", FRAMING, ids=[f[0] for f in FRAMING])
def test_lenient_framing_is_refused_and_the_connection_closed(server, name, raw, status, code):
    refused(server, raw, status, code)


def test_a_body_sent_after_refused_framing_is_never_run_as_a_request(server):
    # Content-Length says 0 twice-over while a smuggled request follows: it must not be run.
    smuggled = (b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                b"Content-Length: 44\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nX-Z: 1\r\n\r\n")
    data, closed = exchange(server, smuggled)
    assert data.count(b"HTTP/1.1 ") == 1 and closed, data[:400]
    assert parse(data)[0] == 400


TARGETS = [
    ("nul-in-the-path", b"POST /v1/beneficiaries%00/x"),
    ("nul-in-a-list-path", b"GET /v1/payments%00/anything"),
    ("nul-in-a-query-value", b"GET /v1/payments?limit=1%00"),
    ("encoded-slash", b"GET /v1/payments%2Fpay_x"),
    ("encoded-backslash", b"GET /v1/payments%5cpay_x"),
    ("dot-dot-segment", b"GET /v1/beneficiaries/../payments"),
    ("encoded-dot-dot", b"GET /v1/%2e%2e/healthz"),
    ("dot-segment", b"GET /v1/./payments"),
    ("bad-percent-escape", b"GET /v1/payments%zz"),
    ("raw-non-ascii", b"GET /v1/caf\xc3\xa9"),
    # Bytes RFC 3986 does not allow raw in a path (pchar and '/' only).
    ("raw-backslash", b"GET /v1/payments\\..\\healthz"),
    ("raw-backslash-in-a-post", b"POST /v1/beneficiaries\\x"),
    ("raw-quote", b'GET /v1/"payments"'),
    ("raw-angle-brackets", b"GET /v1/<payments>"),
    ("raw-square-brackets", b"GET /v1/payments[0]"),
    ("raw-braces", b"GET /v1/payments/{id}"),
    ("raw-pipe", b"GET /v1/payments|x"),
    ("raw-caret", b"GET /v1/payments^x"),
    ("raw-backtick", b"GET /v1/payments`x"),
]


@pytest.mark.parametrize("name,line", TARGETS, ids=[t[0] for t in TARGETS])
def test_targets_that_decode_to_something_else_are_refused_before_routing(server, name, line):
    body = b'{"name":"x"}' if line.startswith(b"POST") else b""
    raw = (line + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + server.token.encode() +
           b"\r\nContent-Type: application/json\r\nConnection: close\r\n"
           b"Content-Length: %d\r\n\r\n" % len(body) + body)
    problem = refused(server, raw, 400, "invalid_path", closes=False)
    assert "%00" in problem["detail"] or "'/'" in problem["detail"] or \
        "segment" in problem["detail"] or "escape" in problem["detail"] or \
        "ASCII" in problem["detail"] or "RFC 3986" in problem["detail"], problem
    # Nothing was created or listed under a shortened path.
    with server.client(token=server.token) as c:
        assert c.get("/v1/beneficiaries").json()["data"] == []


def test_a_query_may_hold_what_browsers_send_raw_there(server):
    # The URL standard leaves these raw in a query; only the path is held to RFC 3986.
    data, _ = exchange(server, b"GET /healthz?f[a]={1}|2^`\\'x,y%41 HTTP/1.1\r\nHost: x\r\n"
                               b"Connection: close\r\n\r\n")
    assert parse(data)[0] == 200, data[:300]


def test_a_refused_target_keeps_the_connection(server):
    # The framing is sound, so the next request on the connection is served.
    data, _ = exchange(server, b"GET /v1/a%00b HTTP/1.1\r\nHost: x\r\n\r\n"
                               b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert data.count(b"HTTP/1.1 400") == 1 and data.count(b"HTTP/1.1 200") == 1, data[:500]


def test_what_libmicrohttpd_refuses_itself_is_still_refused_and_logged(server):
    # A field line without a colon, a Content-Length that is no number: libmicrohttpd answers
    # these itself (a short HTML page) before the server sees the request; one access line
    # each still says so.
    before = access_count(server, "malformed_request")
    for raw in (b"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n",
                b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n"):
        data, closed = exchange(server, raw)
        assert parse(data)[0] == 400 and closed, data[:200]
    assert access_count(server, "malformed_request", want=before + 2) == before + 2


def test_well_formed_requests_pass_the_strict_checks(server):
    data, _ = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nCookie: a=b; c=d\r\n"
                               b"X-Empty:\r\nX-Tab: a\tb\r\nX-Trailing: v  \r\n"
                               b"Connection: close\r\n\r\n")
    assert parse(data)[0] == 200, data[:300]
    data, _ = exchange(server, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert parse(data)[0] == 200, data[:300]
    data, _ = exchange(server, b"POST /v1/api/login HTTP/1.1\r\nHost: x\r\nContent-Type: "
                               b"application/json\r\nTransfer-Encoding: chunked\r\nConnection: "
                               b"close\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    assert parse(data)[0] == 422, data[:300]  # the body was read: the login needs fields
