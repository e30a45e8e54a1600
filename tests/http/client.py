"""Tiny HTTPS client for the HTTP tests: http.client + ssl, the server's own tls.crt as the only
CA, hostname checking on (the certificate names IP 127.0.0.1), TCP_NODELAY, keep-alive reuse."""

import http.client
import json as jsonlib
import socket
import ssl


class Response:
    def __init__(self, status, reason, headers, body, method=None, path=None):
        self.status = status
        self.reason = reason
        self.headers = headers  # http.client.HTTPMessage: case-insensitive .get() and []
        self.body = body
        self.method = method  # of the request answered
        self.path = path      # its path, without the query

    def json(self):
        return jsonlib.loads(self.body.decode("utf-8"))

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def header(self, name, default=None):
        return self.headers.get(name, default)

    def header_all(self, name):
        return self.headers.get_all(name) or []

    def __repr__(self):
        return "<Response %d %s %r>" % (self.status, self.headers.get("Content-Type"), self.body[:300])


def _nodelay(sock):
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


class _HTTPS(http.client.HTTPSConnection):
    sni_name = None  # name checked against the certificate; default the host connected to

    def connect(self):
        http.client.HTTPConnection.connect(self)  # TCP (sets TCP_NODELAY), then TLS below
        _nodelay(self.sock)
        self.sock = self._context.wrap_socket(self.sock,
                                              server_hostname=self.sni_name or self.host)


class _HTTP(http.client.HTTPConnection):
    def connect(self):
        super().connect()
        _nodelay(self.sock)


def tls_context(cafile):
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class Client:
    """One keep-alive connection. tls=False talks plain HTTP (for the "use HTTPS" listener).
    Client.response_hook, when set, sees every response (the tests use it to check that every
    error is a proper problem document and that no request ever gets a 5xx)."""

    response_hook = None

    def __init__(self, host, port, cafile=None, tls=True, server_hostname=None, timeout=15,
                 token=None):
        self.host = host
        self.port = port
        self.tls = tls
        self.timeout = timeout
        self.token = token  # default bearer token for every request (None: none)
        self._ctx = tls_context(cafile) if tls else None
        self._server_hostname = server_hostname
        self._conn = None

    def _connection(self):
        if self._conn is None:
            if self.tls:
                self._conn = _HTTPS(self.host, self.port, timeout=self.timeout, context=self._ctx)
                # Lets a test connect to 127.0.0.1 while checking the name "localhost".
                self._conn.sni_name = self._server_hostname
            else:
                self._conn = _HTTP(self.host, self.port, timeout=self.timeout)
        return self._conn

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method, path, body=None, json=None, headers=None, token=None,
                content_type=None):
        """body: bytes/str/iterable (iterable without Content-Length is sent chunked);
        json: a value serialised as the body with Content-Type application/json.
        token: bearer token for this request (False: send none even if the client has one)."""
        hdrs = {}
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        if content_type is not None:
            hdrs["Content-Type"] = content_type
        tok = self.token if token is None else token
        if tok:
            hdrs["Authorization"] = "Bearer " + tok
        if isinstance(body, str):
            body = body.encode("utf-8")
        for k, v in (headers or {}).items():
            if v is None:
                hdrs.pop(k, None)
            else:
                hdrs[k] = v
        # A reused keep-alive connection may have been closed by the server in the meantime;
        # retry once on a fresh connection only when the failure came before any response.
        for attempt in (0, 1):
            conn = self._connection()
            reused = conn.sock is not None
            try:
                conn.request(method, path, body=body, headers=hdrs)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError) as e:
                if conn.sock is None:  # refused while connecting: there is nothing to read
                    self.close()
                    raise
                # The server may answer early (413) and close while we still send: read it.
                try:
                    return self._read(conn, method, path)
                except (http.client.HTTPException, OSError):
                    self.close()
                    if attempt == 0 and reused and isinstance(body, (bytes, type(None))):
                        continue
                    raise e
            except BaseException:
                self.close()  # never leave a half-used connection to the next request
                raise
            try:
                return self._read(conn, method, path)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt == 0 and reused and isinstance(body, (bytes, type(None))):
                    continue
                raise
            except BaseException:
                self.close()
                raise
        raise AssertionError("unreachable")

    def _read(self, conn, method, path):
        resp = conn.getresponse()
        data = resp.read()
        out = Response(resp.status, resp.reason, resp.headers, data, method, path.split("?")[0])
        if resp.will_close:
            self.close()
        if Client.response_hook is not None:
            Client.response_hook(out)
        return out

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def patch(self, path, **kw):
        return self.request("PATCH", path, **kw)

    def put(self, path, **kw):
        return self.request("PUT", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
