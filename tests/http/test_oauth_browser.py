"""The OAuth flow in a real browser (Debian's chromium driven by playwright-core,
tests/browser/oauth_consent.mjs): sign in on the page, approve, follow the redirect to a local
test client, exchange the code and call GET /v1/payments with the token. The consent page's
screenshot is kept under build/test-artifacts/oauth/ for people to look at."""

import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json
from oauth_flow import Workspace, authorize_path, exchange, pkce, query_of

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests" / "browser" / "oauth_consent.mjs"
ARTIFACTS = REPO / "build" / "test-artifacts" / "oauth"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

pytestmark = pytest.mark.skipif(
    not (shutil.which("node") and os.path.exists(CHROMIUM) and
         (REPO / "node_modules" / "playwright-core").is_dir()),
    reason="needs node, chromium and playwright-core (make test-deps; npm ci)")


class Callback(http.server.BaseHTTPRequestHandler):
    """The test client's redirect target: records the query and says thanks."""
    hits = []

    def do_GET(self):
        Callback.hits.append(self.path)
        body = b"<!DOCTYPE html><title>Test client</title><p>Received.</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def callback():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Callback)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Callback.hits = []
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def drive(url, email, prefix, decision="approve"):
    shots = ARTIFACTS if decision == "approve" else ARTIFACTS / decision
    shots.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["node", str(DRIVER), "--authorize-url", url, "--email", email,
                        "--password", USER_PASSWORD, "--redirect-prefix", prefix,
                        "--screenshot-dir", str(shots), "--decision", decision,
                        "--timeout-ms", "40000"],
                       capture_output=True, text=True, timeout=60, cwd=str(REPO))
    out = r.stdout.strip().splitlines()
    assert r.returncode == 0 and out, "driver failed (%d): %s %s" % (r.returncode, r.stdout,
                                                                     r.stderr[-2000:])
    return json.loads(out[-1])


def test_a_person_approves_in_chromium_and_the_app_gets_a_working_token(server, callback):
    ws = Workspace(server)
    redirect = "http://127.0.0.1:%d/cb" % callback
    app = ws.register(uris=["http://127.0.0.1/cb"], scopes=["payments:read"],
                      name="Acme Cash Forecasting")
    email = ws.member("treasurer")
    verifier, challenge = pkce()
    url = server.base + authorize_path(app, challenge, state="br-1", redirect_uri=redirect)
    result = drive(url, email, redirect)
    assert result["title_consent"] == "Authorize Acme Cash Forecasting - Treasury"
    assert "Acme Cash Forecasting wants access" in result["consent_text"]
    assert "View payments and beneficiaries." in result["consent_text"]
    assert (ARTIFACTS / "consent.png").stat().st_size > 10000
    q = query_of(result["redirect"])
    assert q["state"] == "br-1" and q["iss"] == server.issuer
    assert any(h.startswith("/cb?code=") for h in Callback.hits)  # (and maybe /favicon.ico)
    tok = assert_json(exchange(server.client(), app, q["code"], verifier, redirect_uri=redirect),
                      200)
    assert tok["scope"] == "payments:read"
    r = server.client(token=tok["access_token"]).get("/v1/payments")
    assert assert_json(r, 200)["data"] == []


def test_a_person_denies_in_chromium(server, callback):
    ws = Workspace(server)
    redirect = "http://127.0.0.1:%d/cb" % callback
    app = ws.register(uris=[redirect], scopes=["payments:read"])
    url = server.base + authorize_path(app, pkce()[1], state="br-2", redirect_uri=redirect)
    result = drive(url, ws.member("viewer"), redirect, decision="deny")
    q = query_of(result["redirect"])
    assert q["error"] == "access_denied" and q["state"] == "br-2" and "code" not in q


def test_oauth4webapi_runs_the_whole_flow_against_this_server(server, callback):
    """A strict client library (B.5): discovery with the issuer checked, PKCE, `iss` and `state`
    in the authorization response, the code exchange, an API call and a refresh; then the
    refresh token revoked with its revocation request (RFC 7009), after which the access token
    and the refresh are refused, and the code used again, which the library must receive as an
    RFC 6749 invalid_grant (ResponseBodyError), not as a response it cannot read."""
    ws = Workspace(server)
    redirect = "http://127.0.0.1:%d/cb" % callback
    app = ws.register(uris=[redirect], scopes=["payments:read", "payments:write"])
    shots = ARTIFACTS / "oauth4webapi"
    shots.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["node", str(REPO / "tests" / "browser" / "oauth4webapi_flow.mjs"),
                        "--issuer", server.issuer, "--client-id", app.id,
                        "--redirect-uri", redirect, "--email", ws.member("approver"),
                        "--password", USER_PASSWORD, "--scope", "payments:read",
                        "--screenshot-dir", str(shots)],
                       capture_output=True, text=True, timeout=90, cwd=str(REPO),
                       env=dict(os.environ, NODE_EXTRA_CA_CERTS=server.ca))
    out = r.stdout.strip().splitlines()
    assert r.returncode == 0 and out, "oauth4webapi flow failed: %s %s" % (r.stdout,
                                                                         r.stderr[-2000:])
    assert json.loads(out[-1]) == {
        "scope": "payments:read", "payments_status": 200, "refreshed_scope": "payments:read",
        "revocation": "ok",
        "api_after_revocation": {"name": "WWWAuthenticateChallengeError", "status": 401,
                                 "error": "invalid_token"},
        "refresh_after_revocation": {"name": "ResponseBodyError", "status": 400,
                                     "error": "invalid_grant", "described": True},
        "code_replay": {"name": "ResponseBodyError", "status": 400, "error": "invalid_grant",
                        "described": True}}
