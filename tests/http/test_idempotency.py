"""Idempotent retries (runtime/idempotency.c): X-Request-ID or Idempotency-Key on POST/PATCH
replays the operation's first answer (success or its handler's own refusal) for the same body,
refuses another body (422), answers 409 while the first still runs, is scoped by workspace,
user, method and path, never stores a request refused before its handler, survives a restart,
and under kill -9 leaves every resource exactly once."""

import contextlib
import http.client
import json
import signal
import threading
import time
import uuid

from conftest import USER_PASSWORD
from helpers import open_db
from helpers import (UNKNOWN_BEN, assert_json, assert_problem, assert_validation, beneficiary,
                     create_beneficiary, new_request_id)

PATH = "/v1/beneficiaries"


def names(c):
    return [b["name"] for b in c.get(PATH + "?limit=100").json()["data"]]


def post(c, body, key, header="X-Request-ID"):
    return c.post(PATH, json=body, headers={header: key})


def test_same_key_and_body_replays_the_first_answer_without_a_second_write(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    first = post(c, beneficiary(name="once"), key)
    got = assert_json(first, 201)
    assert first.header("Idempotent-Replayed") is None
    again = post(c, beneficiary(name="once"), key)
    assert assert_json(again, 201) == got
    assert again.header("Idempotent-Replayed") == "true"
    assert again.header("Location") == first.header("Location")
    assert again.header("ETag") == first.header("ETag")
    assert again.header("X-Request-ID") == key
    assert names(c) == ["once"]


def test_idempotency_key_header_is_an_alias(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    a = assert_json(post(c, beneficiary(name="alias"), key, "Idempotency-Key"), 201)
    r = post(c, beneficiary(name="alias"), key, "Idempotency-Key")
    assert assert_json(r, 201)["id"] == a["id"] and r.header("Idempotent-Replayed") == "true"
    assert names(c) == ["alias"]


def test_key_case_does_not_make_a_new_key(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    a = assert_json(post(c, beneficiary(name="case"), key.lower()), 201)
    assert assert_json(post(c, beneficiary(name="case"), key.upper()), 201)["id"] == a["id"]


def test_member_order_and_whitespace_do_not_change_the_body(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    body = beneficiary(name="canon")
    raw = json.dumps(dict(reversed(list(body.items()))), indent=3).encode()
    a = assert_json(post(c, body, key), 201)
    r = c.post(PATH, body=raw, headers={"Content-Type": "application/json", "X-Request-ID": key})
    assert assert_json(r, 201)["id"] == a["id"]
    assert r.header("Idempotent-Replayed") == "true"


def test_same_key_with_another_body_is_422_and_changes_nothing(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    assert_json(post(c, beneficiary(name="first"), key), 201)
    r = post(c, beneficiary(name="second"), key)
    assert_problem(r, 422, "idempotency_key_reused")
    assert names(c) == ["first"]


def test_malformed_key_on_an_idempotent_operation_is_400(server):
    _, _, c = server.new_workspace()
    for header in ("X-Request-ID", "Idempotency-Key"):
        r = c.post(PATH, json=beneficiary(), headers={header: "retry-1"})
        body = assert_validation(r, {"/header/" + header: "format"}, status=400,
                                 code="invalid_request")
        assert "UUID" in body["detail"]
    assert names(c) == []


def test_requests_without_a_key_are_not_idempotent(server):
    _, _, c = server.new_workspace()
    assert_json(c.post(PATH, json=beneficiary(name="n")), 201)
    assert_json(c.post(PATH, json=beneficiary(name="n")), 201)
    assert names(c) == ["n", "n"]


def test_a_refused_request_is_not_stored_so_the_fixed_one_runs(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    assert_validation(post(c, beneficiary(currency="ZZZ"), key), {"/currency": "format"})
    r = post(c, beneficiary(name="fixed"), key)
    assert_json(r, 201)
    assert r.header("Idempotent-Replayed") is None
    assert names(c) == ["fixed"]


def test_the_handlers_own_refusal_is_the_answer_replayed(server):
    """A 4xx the operation itself chose (here a 409 on a taken external_id) is the key's
    answer: the retry replays it, rendered for the retry (its own request_id), even after
    the conflict went away."""
    _, _, c = server.new_workspace()
    holder = create_beneficiary(c, name="holder", external_id="EXT-1")
    key = new_request_id()
    first = post(c, beneficiary(name="dup", external_id="EXT-1"), key, "Idempotency-Key")
    a = assert_problem(first, 409, "duplicate_external_id")
    assert first.header("Idempotent-Replayed") is None
    assert c.patch(PATH + "/" + holder["id"], json={"external_id": None}).status == 200
    again = post(c, beneficiary(name="dup", external_id="EXT-1"), key, "Idempotency-Key")
    b = assert_problem(again, 409, "duplicate_external_id")  # request_id == X-Request-ID
    assert again.header("Idempotent-Replayed") == "true"
    assert (a["detail"], a["instance"]) == (b["detail"], b["instance"])
    assert names(c) == ["holder"]


def test_a_business_rule_refusal_is_replayed_with_its_errors(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    body = beneficiary(account_identification={"scheme": "ABA", "identification": "123456789"},
                       bank=None, currency="USD", country="US")
    first = assert_validation(post(c, body, key), {"/bank/routing_number":
                                                   "routing_number_required"})
    again = post(c, body, key)
    assert again.header("Idempotent-Replayed") == "true"
    assert assert_validation(again, {"/bank/routing_number": "routing_number_required"})[
        "errors"] == first["errors"]


def test_a_not_found_patch_is_replayed(server):
    _, _, c = server.new_workspace()
    key = new_request_id()
    for replayed in (None, "true"):
        r = c.patch(PATH + "/" + UNKNOWN_BEN, json={"name": "x"}, headers={"X-Request-ID": key})
        assert_problem(r, 404, "not_found")
        assert r.header("Idempotent-Replayed") == replayed


def test_keys_are_scoped_per_workspace_and_user(server):
    _, _, a = server.new_workspace()
    wid_b, _, b = server.new_workspace()
    key = new_request_id()
    mine = assert_json(post(a, beneficiary(name="scoped"), key), 201)
    theirs = post(b, beneficiary(name="scoped"), key)
    assert assert_json(theirs, 201)["id"] != mine["id"]
    assert theirs.header("Idempotent-Replayed") is None
    # another user of the same workspace does not see the first user's answer either
    email = "second-user-%s@example.com" % uuid.uuid4().hex[:8]
    server.create_user(wid_b, email, "owner")
    with server.client(token=server.login(email, USER_PASSWORD, workspace_id=wid_b)[
            "access_token"]) as other:
        r = post(other, beneficiary(name="scoped"), key)
        assert assert_json(r, 201)["id"] != theirs.json()["id"]
    assert names(b) == ["scoped", "scoped"]


def test_the_same_key_on_another_path_is_another_request(server):
    _, _, c = server.new_workspace()
    x, y = create_beneficiary(c, external_id=None), create_beneficiary(c, external_id=None)
    key = new_request_id()
    for ben in (x, y):
        r = c.patch(PATH + "/" + ben["id"], json={"name": "renamed"}, headers={"X-Request-ID": key})
        assert assert_json(r, 200)["version"] == 2
    # and a PATCH replay does not bump the version again
    r = c.patch(PATH + "/" + x["id"], json={"name": "renamed"}, headers={"X-Request-ID": key})
    assert assert_json(r, 200)["version"] == 2 and r.header("Idempotent-Replayed") == "true"
    assert c.get(PATH + "/" + x["id"]).json()["version"] == 2


def test_login_is_never_replayed(server):
    key = new_request_id()
    with server.client() as c:
        body = {"email": server.admin_email, "password": server.admin_password}
        a = c.post("/v1/api/login", json=body, headers={"X-Request-ID": key}).json()
        b = c.post("/v1/api/login", json=body, headers={"X-Request-ID": key})
    assert b.status == 200 and b.header("Idempotent-Replayed") is None
    assert a["access_token"] != b.json()["access_token"]


def test_get_with_a_non_uuid_request_id_is_not_refused(server):
    with server.client(token=server.token) as c:
        assert c.get(PATH, headers={"X-Request-ID": "abc"}).status == 200
        assert c.get(PATH + "/" + UNKNOWN_BEN, headers={"Idempotency-Key": "abc"}).status == 404


def test_twenty_concurrent_identical_retries_create_one_beneficiary(server):
    _, token, _ = server.new_workspace()
    key = new_request_id()
    clients = [server.client(token=token) for _ in range(20)]
    for c in clients:
        c._connection().connect()
    go = threading.Barrier(20)
    results, lock = [], threading.Lock()

    def retry(c):
        go.wait()
        r = post(c, beneficiary(name="race"), key)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=retry, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 20
    created = [r for r in results if r.status == 201]
    for r in results:
        if r.status != 201:
            assert_problem(r, 409, "idempotency_request_in_progress")
            assert r.header("Retry-After") == "1"
    assert created, [r.status for r in results]
    assert len({r.json()["id"] for r in created}) == 1
    assert sum(1 for r in created if r.header("Idempotent-Replayed") is None) == 1
    with server.client(token=token) as c:
        assert names(c) == ["race"]
        # once the first has finished, every retry is a replay
        assert post(c, beneficiary(name="race"), key).header("Idempotent-Replayed") == "true"


def test_replays_survive_a_restart(make_server):
    s = make_server()
    token = s.token
    key = new_request_id()
    with s.client(token=token) as c:
        first = assert_json(post(c, beneficiary(name="durable"), key), 201)
    s.restart()
    with s.client(token=token) as c:
        r = post(c, beneficiary(name="durable"), key)
        assert assert_json(r, 201) == first and r.header("Idempotent-Replayed") == "true"


def test_expired_records_are_forgotten_and_purged(make_server):
    s = make_server()
    key = new_request_id()
    with s.client(token=s.token) as c:
        assert_json(post(c, beneficiary(name="old"), key), 201)
        db = open_db(s)
        with contextlib.closing(db), db:
            db.execute("UPDATE idempotency_keys SET expires_at = '2000-01-01T00:00:00.000Z'")
        # past its retention the key is free again: another body is simply a new request
        r = post(c, beneficiary(name="new"), key)
        assert_json(r, 201)
        assert r.header("Idempotent-Replayed") is None
        db = open_db(s)
        with contextlib.closing(db), db:
            db.execute("UPDATE idempotency_keys SET expires_at = '2000-01-01T00:00:00.000Z'")
        deadline = time.monotonic() + 10
        while True:  # the housekeeping thread purges once a second
            db = open_db(s)
            with contextlib.closing(db):
                left = db.execute("SELECT count(*) FROM idempotency_keys").fetchone()[0]
            if left == 0:
                break
            assert time.monotonic() < deadline, "expired idempotency records were not purged"
            time.sleep(0.2)


def test_kill_9_during_idempotent_creates_then_retries_leave_each_exactly_once(make_server):
    """A stream of creates, each with its own key, from 4 connections; the server is killed
    with SIGKILL in the middle. After a restart every request is retried with its key: every
    acknowledged beneficiary still exists, and every request's beneficiary exists once."""
    s = make_server()
    token = s.token
    requests = [(new_request_id(), "crash-%03d" % i) for i in range(200)]
    acknowledged, lock = {}, threading.Lock()
    next_index = [0]

    def stream():
        c = s.client(token=token)
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(requests):
                return
            key, name = requests[i]
            try:
                r = post(c, beneficiary(name=name, external_id=None), key)
            except (OSError, http.client.HTTPException):  # killed under us: answer lost
                return
            if r.status == 201:
                with lock:
                    acknowledged[name] = r.json()["id"]

    threads = [threading.Thread(target=stream) for _ in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 40:
        assert time.monotonic() < deadline and any(t.is_alive() for t in threads), \
            "the create stream stalled before the kill"
        time.sleep(0.005)
    s.stop(sig=signal.SIGKILL)
    for t in threads:
        t.join(timeout=30)
    assert 40 <= len(acknowledged) < len(requests)

    s.start()
    with s.client(token=token) as c:
        for key, name in requests:
            r = post(c, beneficiary(name=name, external_id=None), key)
            got = assert_json(r, 201)
            if name in acknowledged:
                assert got["id"] == acknowledged[name]
                assert r.header("Idempotent-Replayed") == "true"
        listed = []
        cursor = None
        while True:
            page = c.get(PATH + "?limit=100" + ("&cursor=" + cursor if cursor else "")).json()
            listed += [b["name"] for b in page["data"]]
            if not page["has_more"]:
                break
            cursor = page["next_cursor"]
    crash = sorted(n for n in listed if n.startswith("crash-"))
    assert crash == sorted(name for _, name in requests), "lost or duplicated beneficiaries"


def test_a_secret_shown_once_is_never_kept_for_a_replay(server):
    """x-replay: false (registering a confidential OAuth client): the key still makes the
    request run once, but the answer holding client_secret is not stored; a retry gets 409
    idempotency_answer_not_kept naming what the first request created, and the secret is in
    no idempotency record (nor anywhere else in the database file)."""
    _, _, c = server.new_workspace()
    key = new_request_id()
    body = {"name": "Ledger sync", "type": "confidential",
            "redirect_uris": ["https://erp.example/cb"], "scopes": ["payments:read"]}
    first = c.post("/v1/accounts/oauth/clients", json=body, headers={"Idempotency-Key": key})
    created = assert_json(first, 201)
    secret = created["client_secret"]
    again = c.post("/v1/accounts/oauth/clients", json=body, headers={"Idempotency-Key": key})
    assert_problem(again, 409, "idempotency_answer_not_kept")
    assert again.header("Location") == first.header("Location")
    assert first.header("Location") in again.json()["detail"]
    assert again.header("Idempotent-Replayed") is None
    listed = c.get("/v1/accounts/oauth/clients?limit=100").json()["data"]
    assert [x["id"] for x in listed if x["name"] == "Ledger sync"] == [created["id"]]
    # Another body under the same key is still the usual 422.
    assert_problem(c.post("/v1/accounts/oauth/clients", json=dict(body, name="Other"),
                          headers={"Idempotency-Key": key}), 422, "idempotency_key_reused")
    db = open_db(server)
    try:
        rows = db.execute("SELECT body FROM idempotency_keys WHERE key = ?",
                          (key.lower(),)).fetchall()
    finally:
        db.close()
    assert rows and all(secret.encode() not in bytes(r[0] or b"") for r in rows)
    for f in server.data_dir.glob("treasury.db*"):
        assert secret.encode() not in f.read_bytes(), f
