"""TLS hardening as an outside scanner sees it (sslscan, Debian): only TLS 1.2 and 1.3, only
forward-secret AEAD suites, no renegotiation, not vulnerable to Heartbleed, fallback SCSV on.
HSTS on every HTTPS response is checked in test_tls_and_http.py."""

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("sslscan") is None,
                                reason="sslscan is not installed (make test-deps installs it)")


@pytest.fixture(scope="module")
def scan(server):
    r = subprocess.run(["sslscan", "--no-colour", "127.0.0.1:%d" % server.https_port],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("protocol,state", [("SSLv2", "disabled"), ("SSLv3", "disabled"),
                                            ("TLSv1.0", "disabled"), ("TLSv1.1", "disabled"),
                                            ("TLSv1.2", "enabled"), ("TLSv1.3", "enabled")])
def test_only_tls_1_2_and_1_3_are_offered(scan, protocol, state):
    assert re.search(r"^%s\s+%s$" % (re.escape(protocol), state), scan, re.M), scan


def test_every_suite_is_forward_secret_aead(scan):
    suites = re.findall(r"^(?:Preferred|Accepted)\s+(TLSv1\.[23])\s+\d+ bits\s+(\S+)", scan, re.M)
    assert len(suites) >= 3, scan
    for version, name in suites:
        aead = "GCM" in name or "CHACHA20-POLY1305" in name or "CHACHA20_POLY1305" in name
        forward_secret = version == "TLSv1.3" or name.startswith("ECDHE-")
        assert aead and forward_secret, "%s %s" % (version, name)
        assert not re.search(r"CBC|RC4|DES|NULL|EXPORT|anon|SHA1$|MD5", name), name


def test_no_renegotiation_heartbleed_or_downgrade(scan):
    assert "Session renegotiation not supported" in scan, scan
    assert "Server supports TLS Fallback SCSV" in scan, scan
    assert "vulnerable to heartbleed" in scan and " not vulnerable to heartbleed" in scan
    assert not re.search(r"TLSv1\.[0-3] vulnerable to heartbleed", scan), scan
