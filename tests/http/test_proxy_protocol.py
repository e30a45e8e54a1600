"""The PROXY protocol on the HTTPS port (--proxy-protocol on, runtime/proxy_listen.h): a trusted
proxy's connection begins with a header naming the client, which then counts as the
connection's address (access log, per-address login quota, per-address connection cap); a
trusted proxy's connection without one is closed, and so is one that sends nothing by the head
deadline; nobody else's connection is read for a header.

The test plays the proxy itself: a TCP connection from 127.0.0.1 (the trusted proxy here), the
header, then TLS and HTTP as the client would send them through a TCP-mode proxy."""

import http.client
import socket
import ssl
import struct
import time

import pytest

from client import Client
from conftest import run_cli
from helpers import assert_problem

SIG = b"\r\n\r\n\x00\r\nQUIT\n"
LOGIN = {"email": "nobody@example.com", "password": "wrong-password-123"}


def v2(src, sport=50000, dst="127.0.0.1", dport=8443):
    """A PROXY protocol v2 header (PROXY command, TCP) naming src as the client."""
    family = socket.AF_INET6 if ":" in src else socket.AF_INET
    if family == socket.AF_INET6 and ":" not in dst:
        dst = "::1"
    body = (socket.inet_pton(family, src) + socket.inet_pton(family, dst) +
            struct.pack("!HH", sport, dport))
    fam = 0x21 if family == socket.AF_INET6 else 0x11
    return SIG + bytes([0x21, fam]) + struct.pack("!H", len(body)) + body


V2_LOCAL = SIG + b"\x20\x00\x00\x00"


def v1(src, sport=50000, dst="127.0.0.1", dport=8443):
    return ("PROXY TCP4 %s %s %d %d\r\n" % (src, dst, sport, dport)).encode()


class _ViaProxy(http.client.HTTPSConnection):
    header = b""

    def connect(self):
        http.client.HTTPConnection.connect(self)
        self.sock.sendall(self.header)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)


class Proxied(Client):
    """A keep-alive client whose connection begins with a PROXY protocol header."""

    def __init__(self, server, header, **kw):
        super().__init__("127.0.0.1", server.https_port, cafile=server.ca, **kw)
        self.header = header

    def _connection(self):
        if self._conn is None:
            self._conn = _ViaProxy(self.host, self.port, timeout=self.timeout, context=self._ctx)
            self._conn.header = self.header
        return self._conn


def login_via(server, header):
    with Proxied(server, header) as c:
        return c.post("/v1/api/login", json=LOGIN)


def handshake_fails(server, prefix=b""):
    """True when the server ends the connection before (or during) the TLS handshake."""
    raw = socket.create_connection(("127.0.0.1", server.https_port), timeout=10)
    try:
        if prefix:
            raw.sendall(prefix)
        ctx = ssl.create_default_context(cafile=server.ca)
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return s.recv(100) == b""
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return True
    finally:
        raw.close()


def peers(server, n):
    return {r.get("peer") for r in server.access_records(wait_for=n)}


def wait_for_log(server, text, since=0, timeout=5.0):
    """Waits for text in the server's log past offset since (a test's own lines: the server
    is the module's) - counted closures are logged once a second."""
    deadline = time.monotonic() + timeout
    while text not in server.log_text()[since:]:
        assert time.monotonic() < deadline, "no %r in:\n%s" % (text, server.log_text()[-2000:])
        time.sleep(0.05)


@pytest.fixture(scope="module")
def proxied(tmp_path_factory, server_bin):
    from conftest import Servers
    servers = Servers(tmp_path_factory)
    s = servers(extra_args=["--trusted-proxy", "127.0.0.1", "--proxy-protocol", "on",
                            "--auth-rate-limit", "3", "--max-connections-per-address", "2",
                            "--head-timeout-ms", "1500"],
                extra_env={"TREASURY_AUTH_RATE_LIMIT": "3"})
    yield s
    servers.close()


def test_the_headers_client_has_its_own_login_bucket_and_access_lines(proxied):
    answers = [login_via(proxied, v2("198.51.100.1")) for _ in range(4)]
    assert [r.status for r in answers] == [401, 401, 401, 429], answers
    # Another client behind the same proxy is not locked out, in either version of the header.
    for header in (v2("198.51.100.2"), v1("198.51.100.3"), v2("2001:db8::7")):
        answers.append(login_via(proxied, header))
        assert_problem(answers[-1], 401)
    seen = [rec.get("peer") for r in answers
            for rec in proxied.access_records(request_id=r.header("X-Request-ID"))]
    assert seen == ["198.51.100.1"] * 4 + ["198.51.100.2", "198.51.100.3", "2001:db8::7"], seen


def test_a_proxied_connection_is_kept_alive_and_a_local_header_is_the_proxy(proxied):
    since = len(proxied.log_text())
    with Proxied(proxied, V2_LOCAL) as c:  # a health check's: the proxy's own connection
        for _ in range(3):
            r = c.get("/healthz")
            assert r.status == 200, r
    wait_for_log(proxied, '"peer":"127.0.0.1"', since)


def test_the_connection_cap_counts_the_headers_client(proxied):
    """--max-connections-per-address 2: a client's third connection through the proxy is
    refused, another client's is not (the proxy itself has no cap)."""
    since = len(proxied.log_text())
    held = [Proxied(proxied, v2("198.51.100.50")) for _ in range(2)]
    try:
        for c in held:
            assert c.get("/healthz").status == 200
        assert handshake_fails(proxied, v2("198.51.100.50"))
        with Proxied(proxied, v2("198.51.100.51")) as other:
            assert other.get("/healthz").status == 200
    finally:
        for c in held:
            c.close()
    wait_for_log(proxied, "over --max-connections-per-address 2 (such as 198.51.100.50)", since)


def test_a_clients_connections_that_send_nothing_count_against_its_own_cap(proxied):
    """A proxy in TCP mode sends the header as soon as it accepts the client, whatever the
    client then sends: connections that stop after the header are the client's, held to its
    --max-connections-per-address (2) at once, not parked in a waiting list every client
    behind the proxy shares (filling it would have locked the others out)."""
    since = len(proxied.log_text())
    idle = [socket.create_connection(("127.0.0.1", proxied.https_port), timeout=10)
            for _ in range(6)]
    try:
        for s in idle:
            s.sendall(v2("198.51.100.70"))
        wait_for_log(proxied, "over --max-connections-per-address 2 (such as 198.51.100.70)",
                     since)
        with Proxied(proxied, v2("198.51.100.71")) as other:
            assert other.get("/healthz").status == 200
    finally:
        for s in idle:
            s.close()


def test_x_forwarded_for_on_the_https_port_is_never_believed(proxied):
    """With --proxy-protocol on, a trusted proxy reaches the HTTPS port in TCP mode only: an
    X-Forwarded-For there was written by the client, also on a connection that kept the
    proxy's address (a LOCAL header; HAProxy's v1 UNKNOWN)."""
    with Proxied(proxied, V2_LOCAL) as c:
        r = c.get("/healthz", headers={"X-Forwarded-For": "198.51.100.80"})
        assert r.status == 200, r
    # this request's own line (another test's may still be on its way to the log)
    mine = proxied.access_records(request_id=r.header("X-Request-ID"))
    assert [rec.get("peer") for rec in mine] == ["127.0.0.1"], mine


def test_a_trusted_proxys_connection_without_a_header_is_closed(proxied):
    since = len(proxied.log_text())
    assert handshake_fails(proxied)  # TLS at once: its first byte is no header's
    assert handshake_fails(proxied, b"PROXY TCP4 198.51.100.1 127.0.0.1 1 2\n")  # bare LF
    assert handshake_fails(proxied, SIG + b"\x21\x12\x00\x0c" + bytes(12))  # UDP
    wait_for_log(proxied, "without a valid PROXY protocol header", since)


@pytest.mark.parametrize("sent", [b"", v2("198.51.100.1")[:10], b"PROXY TCP4 198.51",
                                  v2("198.51.100.1")],
                         ids=["nothing", "half-v2", "half-v1", "header-alone"])
def test_a_proxy_connection_that_sends_no_whole_header_is_closed_at_the_head_deadline(proxied,
                                                                                      sent):
    since = len(proxied.log_text())
    s = socket.create_connection(("127.0.0.1", proxied.https_port), timeout=10)
    try:
        if sent:
            s.sendall(sent)
        t = time.monotonic()
        s.settimeout(6)
        try:
            data = s.recv(100)
        except ConnectionResetError:
            data = b""
        took = time.monotonic() - t
    finally:
        s.close()
    assert data == b"" and 1.0 <= took < 4.0, (data, took)
    if sent == v2("198.51.100.1"):
        # A whole client header: handed over at once, so the head deadline that closes it is
        # the connection guard's, counted for the client (not the shared waiting list's).
        wait_for_log(proxied, "connections: closed 1 past their deadline (head 1", since)
    else:
        wait_for_log(proxied, "not complete within --head-timeout-ms 1500", since)


def test_a_health_check_closing_after_its_header_leaves_no_log_line(proxied):
    """HAProxy's health check with send-proxy-v2: a LOCAL header, then a reset. It is closed
    before libmicrohttpd sees it (which would log a failed TLS handshake for each)."""
    before = len(proxied.log_text())
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", proxied.https_port), timeout=5)
        s.sendall(V2_LOCAL)
        time.sleep(0.05)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, as HAProxy's checks end
    assert handshake_fails(proxied, b"")  # a line of its own, to wait for
    wait_for_log(proxied, "without a valid PROXY protocol header", before)
    time.sleep(1.2)
    assert "libmicrohttpd" not in proxied.log_text()[before:], proxied.log_text()[before:]


def test_a_header_from_a_peer_that_is_no_trusted_proxy_is_not_believed(make_server):
    s = make_server(extra_args=["--trusted-proxy", "10.0.0.1", "--proxy-protocol", "on",
                                "--auth-rate-limit", "2"])
    # Nothing is read for a header: it is the start of a TLS handshake, which fails.
    assert handshake_fails(s, v2("198.51.100.9"))
    assert handshake_fails(s, v1("198.51.100.9"))
    # The peer's own connections are served as they are, under its own address.
    with s.client() as c:
        statuses = [c.post("/v1/api/login", json=LOGIN).status for _ in range(3)]
    assert statuses == [401, 401, 429], statuses
    assert peers(s, 3) == {"127.0.0.1"}


def test_the_proxy_protocol_flag_is_checked_at_start():
    out = run_cli(["--proxy-protocol", "on", "--https-port", "1"])
    assert out.returncode == 2 and "--trusted-proxy" in out.stderr, out.stderr
    out = run_cli(["--proxy-protocol", "yes", "--trusted-proxy", "10.0.0.1"])
    assert out.returncode == 2 and "expected on or off" in out.stderr, out.stderr
    out = run_cli(["--help"])
    assert "--proxy-protocol" in out.stdout and "TREASURY_PROXY_PROTOCOL" in out.stdout
