"""The TypeScript client of tests/sdk (types generated from the served document by
openapi-typescript, calls through openapi-fetch) run against a live server: it logs in, sends
X-Request-ID and Idempotency-Key through the typed header parameters (the retry is replayed),
and calls one operation of every API that has a built operation."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ADMIN_EMAIL, ADMIN_PASSWORD

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def client_js():
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node is not installed")
    out = subprocess.run(["make", "--no-print-directory", "sdk-build"], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return REPO / "build" / "sdk" / "out" / "client.js"


def test_the_generated_typescript_client_works_against_the_server(server, client_js):
    out = subprocess.run(["node", str(client_js)], cwd=REPO, capture_output=True, text=True,
                         timeout=120,
                         env=dict(os.environ, NODE_EXTRA_CA_CERTS=server.ca,
                                  TREASURY_URL=server.base, TREASURY_EMAIL=ADMIN_EMAIL,
                                  TREASURY_PASSWORD=ADMIN_PASSWORD))
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    checks = {(c.get("check"), c.get("api")): c for c in lines}
    assert out.returncode == 0 and lines and lines[-1] == {"ok": True}, out.stdout + out.stderr
    assert checks[("request-id", None)]["echoed"] is True
    assert checks[("idempotency-key", None)]["replayed"] is True
    assert checks[("coverage", None)]["missing"] == []
    for api in ("accounts", "admin", "conversions", "ledger", "meta", "payments", "rates",
                "workspace"):
        assert ("api", api) in checks, out.stdout
