"""Connections a hostile or careless client holds (runtime/conn_guard.c): idle sockets and
stalled handshakes closed at their deadline with no CPU spent on them, one address capped while
others are served, bodies that trickle, and a body too large answered 413 so that common client
libraries read it. Bounded: deadlines are set to a second or two, at most 1,000 sockets."""

import json
import os
import resource
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from client import Client
from helpers import assert_headers_once, assert_json, assert_problem

HERE = Path(__file__).resolve().parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
SANITIZED = bool(os.environ.get("TREASURY_TEST_SANITIZED"))
FAST = ["--head-timeout-ms", "1500", "--idle-timeout-ms", "3000", "--body-timeout-ms", "1500",
        "--body-min-rate", "1000"]


def cpu_ticks(server):
    with open("/proc/%d/stat" % server.proc.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def closed_within(sock, seconds):
    """Seconds until the server closed sock (end of stream or reset); None if it did not."""
    sock.settimeout(seconds)
    t = time.monotonic()
    try:
        while True:
            if not sock.recv(4096):
                return time.monotonic() - t
    except (ConnectionResetError, ssl.SSLError):
        return time.monotonic() - t
    except socket.timeout:
        return None


def tls(server, host="127.0.0.1", timeout=10):
    ctx = ssl.create_default_context(cafile=server.ca)
    raw = socket.create_connection((host, server.https_port), timeout=timeout)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(raw, server_hostname="127.0.0.1")


def read_response(sock):
    """One response on a kept-alive connection (head and Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-response: %r" % data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = int([l.split(b":")[1] for l in head.split(b"\r\n")
                  if l.lower().startswith(b"content-length:")][0])
    while len(body) < length:
        body += sock.recv(65536)
    return head


def read_all(sock):
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (OSError, ssl.SSLError):
        return data


@pytest.fixture(scope="module")
def fast(tmp_path_factory, server_bin):
    from conftest import Servers
    servers = Servers(tmp_path_factory)
    s = servers(extra_args=FAST)
    yield s
    servers.close()


def test_an_idle_tcp_connection_is_closed_and_costs_no_cpu(fast):
    # libmicrohttpd 0.9.75 with MHD_USE_TURBO spun a core for good on such a connection.
    opened = time.monotonic()
    idle = socket.create_connection(("127.0.0.1", fast.https_port))
    # A handshake that stalls: a ClientHello record header announcing more than follows.
    stalled = socket.create_connection(("127.0.0.1", fast.https_port))
    stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(32))
    t0 = cpu_ticks(fast)
    time.sleep(1.0)
    during = cpu_ticks(fast) - t0
    for s in (idle, stalled):
        waited = closed_within(s, 5)
        assert waited is not None, "a connection that sent no request head was not closed"
        s.close()
        # Closed at the 1.5 s head deadline by conn_guard's sweep (every 0.2 s), not by
        # libmicrohttpd's inactivity timeout (3 s after the last byte). The 0.5 s margin is
        # slack for a slow (ASan) server and a busy machine; the timeout comes 0.8 s later.
        since = time.monotonic() - opened
        assert 1.4 < since < 2.2, "closed %.2f s after it was opened" % since
    t1 = cpu_ticks(fast)
    time.sleep(2.0)
    after = cpu_ticks(fast) - t1
    # A spinning worker burns CLK_TCK ticks a second; an idle server next to none.
    assert during < CLK_TCK // 4, "%d ticks in 1 s with two idle connections" % during
    assert after < CLK_TCK // 4, "%d ticks in 2 s after the connections closed" % after
    assert "past their deadline (head " in fast.log_text()


def test_a_head_trickled_byte_by_byte_is_cut_at_the_deadline(fast):
    s = tls(fast)
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
    t = time.monotonic()
    closed = False
    for b in head:
        try:
            s.send(bytes([b]))
        except (OSError, ssl.SSLError):
            closed = True
            break
        time.sleep(0.05)  # well within the inactivity timeout: only the deadline ends it
    elapsed = time.monotonic() - t
    if not closed:
        closed = closed_within(s, 3) is not None
    s.close()
    assert closed, "a trickled head outlived the head deadline"
    assert elapsed < 4, "the trickle went on for %.1f s" % elapsed


def test_a_trickled_body_is_cut_and_a_steady_one_is_not(fast):
    slow = tls(fast)
    slow.sendall(b"POST /v1/api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                 b"application/json\r\nContent-Length: 4000\r\n\r\n{\"email\":\"")
    assert closed_within(slow, 6) is not None, "a stalled body was not cut"
    slow.close()
    # 3,000 bytes over 2.5 s at 1,200 B/s: past the bare 1.5 s, but each 1,000 bytes earn a
    # second (--body-min-rate 1000), so it completes and is answered.
    steady = tls(fast)
    body = json.dumps({"email": "x" * 2960, "password": "p"}).encode()
    steady.sendall(b"POST /v1/api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                   b"application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                   % len(body))
    for i in range(0, len(body), 120):
        steady.sendall(body[i:i + 120])
        time.sleep(0.1)
    answer = read_all(steady)
    steady.close()
    assert answer.startswith(b"HTTP/1.1 4"), answer[:200]  # answered (the login is refused)


def test_a_kept_alive_connection_waits_for_its_next_request_until_the_idle_timeout(fast):
    s = tls(fast)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = read_response(s)
    assert first.startswith(b"HTTP/1.1 200"), first[:100]
    time.sleep(2.0)  # longer than the head deadline: an idle wait is not a head
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert read_response(s).startswith(b"HTTP/1.1 200")
    waited = closed_within(s, 6)
    s.close()
    assert waited is not None and 2.0 < waited < 5.0, waited


def ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_one_address_holding_a_thousand_connections_does_not_starve_another(make_server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1400:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    s = make_server(extra_args=["--listen", "127.0.0.1,::1", "--head-timeout-ms", "15000",
                                "--max-connections-per-address", "64"])
    held = []
    try:
        for _ in range(1000):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", s.https_port))
            held.append(c)
        time.sleep(0.5)
        for c in held:  # a byte each: the start of a handshake that never completes
            try:
                c.send(b"\x16")
            except OSError:
                pass
        # Another address is served promptly meanwhile.
        for _ in range(5):
            with Client("::1", s.https_port, cafile=s.ca, server_hostname="127.0.0.1") as v6:
                t = time.monotonic()
                assert_json(v6.get("/healthz"), 200)
                assert time.monotonic() - t < 3.0
        # The first address got at most its cap; the rest were closed at once.
        time.sleep(0.5)
        alive = 0
        for c in held:
            try:
                if c.recv(1) == b"":
                    continue
            except BlockingIOError:
                alive += 1
            except OSError:
                continue
        assert 0 < alive <= 64, "%d of 1000 connections from one address held" % alive
        assert "over --max-connections-per-address 64" in s.log_text()
    finally:
        for c in held:
            c.close()
    # Once they are gone, the address is served again.
    deadline = time.monotonic() + 10
    while True:
        try:
            with s.client() as c:
                assert_json(c.get("/healthz"), 200)
            break
        except (OSError, ssl.SSLError):
            assert time.monotonic() < deadline, "127.0.0.1 not served after its sockets closed"
            time.sleep(0.2)


# ---- a body past the cap: 413, readable by common clients --------------------------------

TEN_MIB = 10 * 1024 * 1024


def test_a_10_mib_body_is_read_as_413_by_pythons_http_client(fast):
    import http.client
    ctx = ssl.create_default_context(cafile=fast.ca)
    for _ in range(2):
        conn = http.client.HTTPSConnection("127.0.0.1", fast.https_port, context=ctx, timeout=20)
        conn.request("POST", "/v1/api/login", body=b"{" + b" " * TEN_MIB + b"}",
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        assert resp.status == 413 and body["code"] == "payload_too_large", body
        assert resp.getheader("Connection") == "close"


def test_a_10_mib_body_is_read_as_413_by_nodes_fetch(fast):
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed")
    out = subprocess.run([node, str(HERE / "fetch_large_body.mjs"),
                          "%s/v1/api/login" % fast.base, str(TEN_MIB)],
                         env=dict(os.environ, NODE_EXTRA_CA_CERTS=fast.ca),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["status"] == 413 and got["code"] == "payload_too_large", got


def test_expect_100_continue_gets_the_413_instead_of_100(fast):
    s = tls(fast)
    s.sendall(b"POST /v1/api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
              b"application/json\r\nExpect: 100-continue\r\nContent-Length: 999999\r\n\r\n")
    answer = read_all(s)  # no body sent: the server must not wait for it
    s.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"100 Continue" not in answer


def test_expect_100_continue_within_the_cap_is_continued(fast):
    s = tls(fast)
    body = b'{"email":"a@example.com","password":"x"}'
    s.sendall(b"POST /v1/api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
              b"application/json\r\nExpect: 100-continue\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body))
    interim = s.recv(65536)
    assert interim.startswith(b"HTTP/1.1 100"), interim[:100]
    s.sendall(body)
    answer = interim.split(b"\r\n\r\n", 1)[1] + read_all(s)
    s.close()
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


def test_a_chunked_body_past_the_cap_is_answered_413_once_sent(fast):
    ctx = ssl.create_default_context(cafile=fast.ca)
    import http.client
    conn = http.client.HTTPSConnection("127.0.0.1", fast.https_port, context=ctx, timeout=20)
    chunks = (b"x" * 65536 for _ in range(16))  # 1 MiB, chunked (no Content-Length)
    conn.request("POST", "/v1/api/login", body=chunks,
                 headers={"Content-Type": "application/json"}, encode_chunked=True)
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 413 and body["code"] == "payload_too_large", body


# ---- behind a trusted proxy ----------------------------------------------------------------

def test_behind_a_trusted_proxy_each_client_has_its_own_login_bucket(make_server):
    s = make_server(extra_args=["--trusted-proxy", "127.0.0.1", "--auth-rate-limit", "3"],
                    extra_env={"TREASURY_AUTH_RATE_LIMIT": "3"})
    login = {"email": "nobody@example.com", "password": "wrong-password-123"}

    def attempt(xff):
        with s.plain_client() as c:  # the proxy speaks plain HTTP to us and says so
            return c.post("/v1/api/login", json=login,
                          headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": xff})

    statuses = [attempt("198.51.100.1").status for _ in range(4)]
    assert statuses == [401, 401, 401, 429], statuses
    # A forged entry left of the proxy's own is no way out of the bucket ...
    assert attempt("203.0.113.50, 198.51.100.1").status == 429
    # ... nor is a port after the entry, as some load balancers add (it is the same client,
    # not the proxy) ...
    assert attempt("198.51.100.1:51234").status == 429
    # ... and another client behind the same proxy is not locked out.
    r = attempt("198.51.100.2")
    assert_problem(r, 401)
    assert_problem(attempt("[2001:db8::7]:443"), 401)
    want = {"198.51.100.1", "198.51.100.2", "2001:db8::7"}
    deadline = time.monotonic() + 3  # the access line is written once the answer is sent
    while True:
        peers = {rec.get("peer") for rec in s.access_records()}
        if want <= peers or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert want <= peers, peers


def test_lines_a_client_adds_cannot_push_the_proxys_own_out(make_server):
    # The proxy appends its own X-Forwarded-For line; 65 forged ones before it do not hide it.
    s = make_server(extra_args=["--trusted-proxy", "127.0.0.1"])
    forged = "".join("X-Forwarded-For: 203.0.113.%d\r\n" % (i % 250) for i in range(65))
    raw = ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: https\r\n" + forged +
           "X-Forwarded-For: 198.51.100.77\r\nConnection: close\r\n\r\n").encode()
    c = socket.create_connection(("127.0.0.1", s.http_port), timeout=5)
    c.sendall(raw)
    answer = read_all(c)
    c.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert "198.51.100.77" in {r.get("peer") for r in s.access_records(wait_for=1)}


def test_a_peer_that_is_no_trusted_proxy_is_believed_in_nothing(make_server):
    s = make_server(extra_args=["--trusted-proxy", "10.0.0.1", "--auth-rate-limit", "2"])
    login = {"email": "nobody@example.com", "password": "wrong-password-123"}
    with s.client() as c:
        statuses = [c.post("/v1/api/login", json=login,
                           headers={"X-Forwarded-For": "198.51.100.%d" % i}).status
                    for i in range(3)]
    assert statuses == [401, 401, 429], statuses
    assert {r.get("peer") for r in s.access_records(wait_for=3)} == {"127.0.0.1"}
    with s.plain_client() as c:
        r = c.get("/healthz", headers={"X-Forwarded-Proto": "https"})
    assert_problem(r, 400, "use_https")


def test_the_trusted_proxy_list_is_checked_at_start(make_server):
    from conftest import run_cli
    out = run_cli(["--trusted-proxy", "10.0.0.1,proxy.example", "--https-port", "1"])
    assert out.returncode == 2 and "proxy.example" in out.stderr, out.stderr


def test_a_large_body_on_an_operation_that_takes_none_is_refused_not_run(fast):
    from helpers import create_beneficiary
    with fast.client(token=fast.token) as c:
        ben = create_beneficiary(c)
    s = tls(fast)
    s.sendall(b"DELETE /v1/beneficiaries/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
              b"Bearer %s\r\nContent-Length: 100000\r\n\r\n" % (ben["id"].encode(),
                                                                  fast.token.encode()))
    answer = read_all(s)
    s.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    with fast.client(token=fast.token) as c:
        assert_json(c.get("/v1/beneficiaries/" + ben["id"]), 200)  # not deleted
