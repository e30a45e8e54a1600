"""An audit record for every successful write (issue 21's suites by kind): every write
operation whose spec declares `x-audit` with an `action` (one name; a list, of which the handler
picks one; or one per status) leaves, for a successful request, exactly one audit_events row of
the declared `resource` with that request's X-Request-ID and a declared action, about the
declared resource id (`path.<param>`, `response.<field>`, `principal.user_id` or
`principal.session_id`; `handler`, which the handler chooses, is not checked) and with the
declared response member (`status`) as its after_status. Operations declaring
`x-audit: {none: <reason>}` write no record by design and are counted as skipped with the
reason; so is one the served spec declares nothing for. The operations come from the spec, the
requests from spec_world.py."""

import contextlib
import time
import uuid

import pytest

from helpers import jwt_parts, open_db
from spec_ops import OPS, covered, skipped
from spec_world import EXCLUDED, server, world  # noqa: F401 (fixtures)

SUITE = "audit"
WRITES = [o for o in OPS if o.write]


def declared_actions(audit, status):
    """The actions x-audit allows for a status: one name, a list (one of them: the handler
    picks), or one per status."""
    action = audit["action"]
    if isinstance(action, dict):
        action = action.get(str(status), action.get(status))
    actions = action if isinstance(action, list) else [action]
    assert actions and all(isinstance(a, str) and a for a in actions), \
        "no action declared for %d: %r" % (status, audit)
    return actions


def declared_id(audit, call, response):
    """The resource id x-audit's `id` names, or None when the suite cannot tell."""
    source = audit.get("id")
    if not isinstance(source, str) or "." not in source:
        return None
    where, name = source.split(".", 1)
    if where == "path":
        return call.values.get(name)
    if where == "response" and response.body:
        value = response.json()
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value
    if where == "principal" and name == "user_id":
        return call.caller.user_id
    if where == "principal" and name == "session_id":
        return jwt_parts(call.caller.token)[1]["sid"]
    return None  # `handler`: the handler names it


def records(server, request_id, timeout=5.0):
    """The audit rows of request_id: (action, resource_type, resource_id, after_status), once
    committed."""
    db = open_db(server)
    with contextlib.closing(db):
        deadline = time.monotonic() + timeout
        while True:
            rows = db.execute("SELECT action, resource_type, resource_id, after_status "
                              "FROM audit_events "
                              "WHERE request_id = ? ORDER BY seq", (request_id,)).fetchall()
            if rows or time.monotonic() > deadline:
                return rows
            time.sleep(0.02)


def test_every_write_declares_its_audit():
    """Every implemented write says what it records (`action`) or why it records nothing
    (`none` with a reason), once the spec declares x-audit at all."""
    if not any(o.audit for o in WRITES):
        pytest.skip("no operation declares x-audit yet")
    for o in WRITES:
        assert isinstance(o.audit, dict), "%s declares no x-audit" % o.id
        if "none" in o.audit:
            assert isinstance(o.audit["none"], str) and o.audit["none"].strip(), o.id
        else:
            assert o.audit.get("action") and o.audit.get("resource") and o.audit.get("id"), \
                (o.id, o.audit)


@pytest.mark.parametrize("op", WRITES, ids=[o.id for o in WRITES])
def test_a_successful_write_leaves_its_declared_audit_record(server, world, op):
    audit = op.audit
    if not audit:
        skipped(SUITE, op, "the served spec declares no x-audit for it")
    if "none" in audit:
        skipped(SUITE, op, "x-audit: none: %s" % audit["none"])
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    call = world.prepare(op)
    request_id = str(uuid.uuid4())
    r = call.send(headers={"X-Request-ID": request_id})
    assert r.status in op.success, "%s: %r" % (op.id, r)
    assert r.header("X-Request-ID") == request_id, r
    actions = declared_actions(audit, r.status)
    rows = records(server, request_id)
    mine = [row for row in rows if row[0] in actions and row[1] == audit["resource"]]
    assert len(mine) == 1, "%s: %d audit records %r of %s for request %s, all of them: %r" % (
        op.id, len(mine), actions, audit["resource"], request_id, rows)
    _, _, resource_id, after_status = mine[0]
    want = declared_id(audit, call, r)
    if want is not None:
        assert resource_id == want, (mine, want)
    if audit.get("status"):
        assert after_status == r.json().get(audit["status"]), (mine, audit["status"])
    covered(SUITE, op)
