"""Rate limits (GCRA, runtime/ratelimit.c): exact under 64 concurrent connections, headers on
every response, per-workspace isolation, operator quotas applied to a running server, the
`auth` policy per client address, the failed-login guard per account, and quotas that survive
a restart (clean or kill -9)."""

import re
import signal
import threading
import time

import pytest

from conftest import USER_PASSWORD
from helpers import assert_json, assert_problem, create_beneficiary

PATH = "/v1/beneficiaries"
POLICY = re.compile(r'^"(default|auth)";q=(\d+);w=60$')
STATE = re.compile(r'^"(default|auth)";r=(\d+);t=(\d+)$')


def headers_of(r):
    return (int(r.header("X-RateLimit-Limit")), int(r.header("X-RateLimit-Remaining")),
            int(r.header("X-RateLimit-Reset")))


def assert_limited(r, limit=None):
    body = assert_problem(r, 429, "rate_limited")
    retry = r.header("Retry-After")
    assert retry is not None and re.fullmatch(r"[0-9]+", retry), r
    assert 1 <= int(retry) <= 3600, retry
    assert int(r.header("X-RateLimit-Remaining")) == 0
    if limit is not None:
        assert int(r.header("X-RateLimit-Limit")) == limit
    return body


def test_exactly_the_quota_succeeds_under_64_concurrent_connections(make_server):
    """64 connections hammer one workspace whose quota is 50/min. GCRA lets 50 through at once
    and one more every 1.2 s, so over a burst of `elapsed` seconds exactly
    50 + floor(elapsed / 1.2) succeed; the rest are 429, and Remaining is never negative."""
    s = make_server(extra_args=["--rate-limit", "50"], threads=2)
    token = s.token
    clients = [s.client(token=token) for _ in range(64)]
    for c in clients:  # TLS handshakes first, so the burst is only requests
        c._connection().connect()
    results, lock, start = [], threading.Lock(), threading.Barrier(64)

    def hammer(c):
        start.wait()
        for _ in range(4):
            r = c.get(PATH + "?limit=1")
            with lock:
                results.append((time.monotonic(), r.status, r.header("X-RateLimit-Remaining")))

    t0 = time.monotonic()
    threads = [threading.Thread(target=hammer, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    elapsed = max(t for t, _, _ in results) - t0
    ok = sum(1 for _, st, _ in results if st == 200)
    limited = sum(1 for _, st, _ in results if st == 429)
    assert ok + limited == 256, set(st for _, st, _ in results)
    assert 50 <= ok <= 50 + int(elapsed / 1.2), (ok, elapsed)
    assert all(int(rem) >= 0 for _, _, rem in results)


def test_remaining_counts_down_by_one_then_429_with_retry_after(make_server):
    s = make_server(extra_args=["--rate-limit", "10"])
    c = s.client(token=s.token)
    seen = []
    for _ in range(10):
        r = c.get(PATH)
        assert_json(r, 200)
        seen.append(int(r.header("X-RateLimit-Remaining")))
    assert seen == list(range(9, -1, -1)), seen  # no refill within 6 s of 10 quick requests
    r = c.get(PATH)
    assert_limited(r, limit=10)
    assert int(r.header("Retry-After")) <= 6  # one request comes back every 6 s
    limit, remaining, reset = headers_of(r)
    now = time.time()
    assert now - 2 <= reset <= now + 61, (reset, now)  # epoch seconds, within the minute
    policy = POLICY.match(r.header("RateLimit-Policy"))
    state = STATE.match(r.header("RateLimit"))
    assert policy and policy.group(1) == "default" and int(policy.group(2)) == 10
    assert state and int(state.group(2)) == 0
    assert abs(int(state.group(3)) - (reset - now)) <= 2, (state.group(3), reset - now)


def test_a_limited_workspace_does_not_slow_another(make_server):
    s = make_server(extra_args=["--rate-limit", "5"])
    a = s.client(token=s.token)
    _, _, b = s.new_workspace()
    for _ in range(5):
        assert a.get(PATH).status == 200
    assert_limited(a.get(PATH), limit=5)
    r = b.get(PATH)
    assert_json(r, 200)
    assert int(r.header("X-RateLimit-Remaining")) == 4


def test_unauthenticated_requests_are_limited_per_client_address(make_server):
    s = make_server(extra_args=["--rate-limit", "3"])
    with s.client() as anon:
        statuses = [anon.get(PATH, token=False).status for _ in range(4)]
        assert statuses == [401, 401, 401, 429], statuses
        assert_limited(anon.get("/healthz"), limit=3)  # the same address's quota
    with s.client(token=s.token) as c:  # a workspace has its own quota
        assert c.get(PATH).status == 200


def test_operator_quota_applies_to_the_running_server_and_default_restores_it(make_server):
    s = make_server()
    wid = s.login()["workspace_id"]
    c = s.client(token=s.token)
    assert int(c.get(PATH).header("X-RateLimit-Limit")) == 1000
    out = s.admin("set-rate-limit", "--workspace", wid, "--per-minute", "4").stdout
    assert "4 requests per minute" in out
    deadline = time.monotonic() + 10
    while int(c.get(PATH).header("X-RateLimit-Limit")) != 4:
        assert time.monotonic() < deadline, "the running server never applied the new quota"
        time.sleep(0.2)
    assert "4/min" in s.admin("list-workspaces").stdout
    s.admin("set-rate-limit", "--workspace", wid, "--per-minute", "default")
    deadline = time.monotonic() + 10
    while int(c.get(PATH).header("X-RateLimit-Limit")) != 1000:
        assert time.monotonic() < deadline, "the default quota never came back"
        time.sleep(0.2)


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_a_restart_is_no_way_around_a_spent_quota(make_server, how):
    s = make_server(extra_args=["--rate-limit", "5"])
    token = s.token
    c = s.client(token=token)
    for _ in range(5):
        assert c.get(PATH).status == 200
    assert_limited(c.get(PATH))
    if how == "sigterm":
        assert s.stop() == 0
    else:
        time.sleep(1.5)  # the housekeeping thread checkpoints once a second
        s.stop(sig=signal.SIGKILL)
    s.start()
    with s.client(token=token) as c:
        assert_limited(c.get(PATH), limit=5)


def test_login_is_limited_per_address_by_the_auth_policy(make_server):
    s = make_server(extra_env={"TREASURY_AUTH_RATE_LIMIT": "3"})
    for _ in range(3):
        r = s.login_response()
        assert r.status == 200, r
        assert POLICY.match(r.header("RateLimit-Policy")).group(1) == "auth"
    r = s.login_response()
    assert_limited(r, limit=3)
    assert b"access_token" not in r.body
    with s.client() as anon:  # other public routes use the address's default quota
        r = anon.get("/healthz")
        assert r.status == 200 and POLICY.match(r.header("RateLimit-Policy")).group(1) == "default"


def test_failed_logins_lock_the_account_not_the_address(server):
    email = "guarded-%d@example.com" % int(time.time() * 1000)
    wid = server.login()["workspace_id"]
    server.create_user(wid, email, "viewer")
    for i in range(10):
        assert_problem(server.login_response(email, "wrong password %d" % i), 401,
                       "invalid_credentials")
    r = server.login_response(email, USER_PASSWORD)  # even the right password now waits
    assert_limited(r)
    assert b"access_token" not in r.body
    assert "failed logins" in r.json()["detail"]
    assert r.header("RateLimit-Policy") == '"login_failures";q=10;w=900'
    assert int(r.header("Retry-After")) <= 90  # one attempt comes back every 90 s
    assert server.login()["access_token"]  # another account is unaffected


def test_unknown_emails_are_guarded_exactly_like_real_ones(server):
    email = "nobody-%d@example.com" % int(time.time() * 1000)
    statuses = [server.login_response(email, "whatever").status for _ in range(11)]
    assert statuses == [401] * 10 + [429], statuses


def test_successful_logins_do_not_count_as_failures(server):
    for _ in range(15):
        assert server.login()["access_token"]
