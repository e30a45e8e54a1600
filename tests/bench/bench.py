"""`make bench`: throughput of a release build over HTTPS on loopback, measured with wrk.

Starts build/treasury-server on free ports with a fresh data directory and a rate limit high
enough not to interfere, then runs each scenario for a fixed time with the same connection
count. /healthz (routing, TLS, headers, one trivial query) is the baseline every other scenario
is quoted against, so the ratios compare like with like on whatever machine runs this. Bounded:
about 6 s per scenario. Never asserts timings; it prints a table."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "http"))

from client import Client  # noqa: E402
from conftest import free_ports  # noqa: E402

BIN = Path(os.environ.get("TREASURY_SERVER_BIN") or REPO / "build" / "treasury-server").resolve()
DURATION = os.environ.get("BENCH_DURATION", "5s")
CONNECTIONS = os.environ.get("BENCH_CONNECTIONS", "16")
THREADS = os.environ.get("BENCH_THREADS", "2")
PASSWORD = "bench-password-0123456789"

BENEFICIARY = {
    "name": "ACME GmbH", "account_holder_name": "ACME GmbH",
    "account_identification": {"scheme": "IBAN", "identification": "DE89370400440532013000"},
    "bank": {"bic": "COBADEFFXXX", "country": "DE"}, "currency": "EUR", "country": "DE",
}


PAYMENT = {"amount": 125000, "currency": "EUR", "type": "sepa",
           "originating_account": "acc-operating-eur", "remittance_information": "Invoice 7"}
BATCH_ITEMS = 100


def post_script(path, body):
    """A wrk Lua script that POSTs body as JSON."""
    path.write_text('wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = '
                    '"application/json"\n' % json.dumps(json.dumps(body)))
    return path


def wrk(url, token=None, script=None):
    args = ["wrk", "-t", "1", "-c", CONNECTIONS, "-d", DURATION, "--latency"]
    if token:
        args += ["-H", "Authorization: Bearer " + token]
    if script:
        args += ["-s", str(script)]
    out = subprocess.run(args + [url], capture_output=True, text=True, timeout=120).stdout
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    p50 = re.search(r"50%\s+(\S+)", out).group(1)
    p99 = re.search(r"99%\s+(\S+)", out).group(1)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    return rps, p50, p99, int(non2xx.group(1)) if non2xx else 0, errors.group(0) if errors else ""


def main():
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: make deps")
    root = Path(tempfile.mkdtemp(prefix="treasury-bench-"))
    https_port, http_port = free_ports(2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREASURY_")}
    env.update(TREASURY_ADMIN_PASSWORD=PASSWORD, TREASURY_SCRYPT_LOG2N="10")
    log = open(root / "server.log", "wb")
    proc = subprocess.Popen([str(BIN), "--data-dir", str(root / "data"), "--https-port",
                             str(https_port), "--http-port", str(http_port), "--rate-limit",
                             "100000000", "--log-format", "text"],
                            env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 15
        while b"listening on https://" not in (root / "server.log").read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit("server did not start:\n" + (root / "server.log").read_text())
            time.sleep(0.05)
        ca = str(root / "data" / "tls.crt")
        with Client("127.0.0.1", https_port, cafile=ca) as c:
            tok = c.post("/v1/api/login", json={"email": "admin@example.com",
                                                "password": PASSWORD}).json()["access_token"]
        with Client("127.0.0.1", https_port, cafile=ca, token=tok) as c:
            ids = [c.post("/v1/beneficiaries", json=BENEFICIARY).json()["id"] for _ in range(100)]
            wid = c.get("/v1/workspace").json()["id"]
        # Payments go to an approved beneficiary, and someone else approves it (four eyes).
        subprocess.run([str(BIN), "--data-dir", str(root / "data"), "admin", "create-user",
                        "--workspace", wid, "--email", "approver@example.com", "--role",
                        "approver"], env={**env, "TREASURY_USER_PASSWORD": PASSWORD},
                       check=True, capture_output=True, timeout=60)
        with Client("127.0.0.1", https_port, cafile=ca) as c:
            approver = c.post("/v1/api/login", json={"email": "approver@example.com",
                                                     "password": PASSWORD}).json()["access_token"]
        with Client("127.0.0.1", https_port, cafile=ca, token=approver) as c:
            c.put("/v1/beneficiaries/%s/approve" % ids[0])
        payment = dict(PAYMENT, beneficiary_id=ids[0])
        with Client("127.0.0.1", https_port, cafile=ca, token=tok) as c:
            pay_id = c.post("/v1/payments", json=payment).json()["id"]
        post = post_script(root / "post.lua", BENEFICIARY)
        post_payment = post_script(root / "payment.lua", payment)
        post_batch = post_script(root / "batch.lua", {"items": [payment] * BATCH_ITEMS})
        base = "https://127.0.0.1:%d" % https_port
        scenarios = [
            ("GET /healthz (baseline)", base + "/healthz", None, None),
            ("GET /v1/beneficiaries/{id}", base + "/v1/beneficiaries/" + ids[0], tok, None),
            ("GET /v1/beneficiaries?limit=20", base + "/v1/beneficiaries?limit=20", tok, None),
            ("POST /v1/beneficiaries", base + "/v1/beneficiaries", tok, post),
            ("GET /v1/payments/{id}", base + "/v1/payments/" + pay_id, tok, None),
            ("GET /v1/payments?limit=20", base + "/v1/payments?limit=20", tok, None),
            ("POST /v1/payments", base + "/v1/payments", tok, post_payment),
            ("POST /v1/payments/batches (%d items)" % BATCH_ITEMS, base + "/v1/payments/batches",
             tok, post_batch),
        ]
        print("wrk -t1 -c%s -d%s against %s (server --threads default)" % (CONNECTIONS, DURATION, BIN))
        print("%-40s %10s %8s %9s %9s %8s" % ("scenario", "req/s", "ratio", "p50", "p99", "non-2xx"))
        baseline = None
        for name, url, token, script in scenarios:
            rps, p50, p99, non2xx, errors = wrk(url, token, script)
            baseline = baseline or rps
            print("%-40s %10.0f %7.2fx %9s %9s %8d %s" % (name, rps, rps / baseline, p50, p99,
                                                          non2xx, errors))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = "killed"
        log.close()
        if rc != 0:
            print("server exit code %r; log in %s" % (rc, root / "server.log"))
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
