"""A domain event for every successful change that declares one (issue 21's suites by kind):
every write whose spec declares `x-event` (one type, or one per status) leaves, for a
successful request, exactly one row in the event outbox with that request's X-Request-ID, the
declared type, the declared resource type (x-audit's `resource`), the answer's `id` and
`version`, and the answer itself as the event's object (for a 204, which has none, the resource as
its GET then answers it; a repeat that changes nothing adds no event). Writes declaring no event are not this
suite's (the audit suite covers every write). The operations come from the spec, the requests
from spec_world.py."""

import contextlib
import json
import time
import uuid

import pytest

from helpers import open_db
from spec_ops import OPS, covered, skipped
from spec_world import EXCLUDED, server, world  # noqa: F401 (fixtures)

SUITE = "events"
EVENTS = [o for o in OPS if o.write and o.op.get("x-event")]


def declared_type(event, status):
    if isinstance(event, dict):
        event = event.get(str(status), event.get(status))
    assert isinstance(event, str) and event, "no event type for %d" % status
    return event


def events_of(server, request_id, timeout=5.0):
    """The outbox rows of request_id: (type, resource_type, resource_id, resource_version,
    data), once committed."""
    db = open_db(server)
    with contextlib.closing(db):
        deadline = time.monotonic() + timeout
        while True:
            rows = db.execute("SELECT type, resource_type, resource_id, resource_version, data "
                              "FROM events WHERE request_id = ? ORDER BY seq",
                              (request_id,)).fetchall()
            if rows or time.monotonic() > deadline:
                return rows
            time.sleep(0.02)


def test_some_operations_declare_events():
    assert EVENTS, "no operation declares x-event"


@pytest.mark.parametrize("op", EVENTS, ids=[o.id for o in EVENTS])
def test_a_successful_change_leaves_its_declared_event(server, world, op):
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    call = world.prepare(op)
    request_id = str(uuid.uuid4())
    r = call.send(headers={"X-Request-ID": request_id})
    assert r.status in op.success, "%s: %r" % (op.id, r)
    etype = declared_type(op.op["x-event"], r.status)
    rows = events_of(server, request_id)
    mine = [row for row in rows if row[0] == etype]
    assert len(mine) == 1, "%s: %d events %s for request %s, all of them: %r" % (
        op.id, len(mine), etype, request_id, rows)
    _, rtype, rid, version, data = mine[0]
    if r.status == 204:
        # no body: the event's object is the resource as the change left it, which its GET
        # (the operation's own URL) answers
        body = call.caller.client.get(call.url).json()
        # a repeat that changes nothing adds no event
        again = str(uuid.uuid4())
        assert call.send(headers={"X-Request-ID": again}).status == 204
        time.sleep(0.2)
        assert events_of(server, again, timeout=0) == [], op.id
    else:
        body = r.json()
    assert rtype == op.audit["resource"], (rtype, op.audit)
    assert rid == body["id"]
    assert version == body.get("version", 0)
    assert json.loads(data)["object"] == body
    covered(SUITE, op)
