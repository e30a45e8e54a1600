"""Idempotent replay on every idempotent write of the spec (`x-idempotent`, true by default
for POST, PUT and PATCH; issue 21's suites by kind), as the Idempotency-Key parameter documents
it: the same key and the same request replay the first answer (status, body byte for byte,
ETag and Location) with `Idempotent-Replayed: true` and change nothing; the same key with
another body answers 422 `idempotency_key_reused` and changes nothing. An operation whose
answer holds a secret shown once (`x-replay: false`) keeps no answer: a retry answers 409
`idempotency_answer_not_kept`. The operations come from the spec, the requests from
spec_world.py."""

import copy
import uuid

import pytest

from helpers import assert_problem, table_counts
from spec_ops import OPS, covered, resolve, skipped
from spec_world import EXCLUDED, server, world  # noqa: F401 (fixtures)

SUITE = "idempotency"
IDEMPOTENT = [o for o in OPS if o.write and o.idempotent]
KEPT_HEADERS = ("ETag", "Location", "Content-Type")


def another_body(world, call):
    """A body other than call's that op also accepts: a second prepared one (fresh names and
    external ids), else the first with one member changed within its schema; None when the
    operation takes no body."""
    if call.body is None:
        return None
    again = world.prepare(call.op, caller=call.caller, given=call.values).body
    if again != call.body:
        return again
    other = changed(call.body, resolve(call.op.body_media[1]))
    if other is None:
        raise AssertionError("%s: no other body to send" % call.op.id)
    return other


def changed(body, schema, nested=False):
    """body with one member changed within schema (a string lengthened or another of its
    enum, an integer raised; failing those, in a nested object, where a boolean may also be
    flipped), or None."""
    props = schema.get("properties", {})
    for name, value in body.items():
        s = resolve(props.get(name, {}))
        other = copy.deepcopy(body)
        if isinstance(value, str) and "enum" in s:
            choices = [v for v in s["enum"] if v != value]
            if not choices:
                continue
            other[name] = choices[0]
        elif isinstance(value, str) and len(value) < s.get("maxLength", 10 ** 6) and \
                "pattern" not in s and "format" not in s:
            other[name] = value + "."
        elif isinstance(value, bool):
            if not nested:
                continue
            other[name] = not value
        elif isinstance(value, int) and value + 1 <= s.get("maximum", 2 ** 62):
            other[name] = value + 1
        else:
            continue
        return other
    for name, value in body.items():
        if isinstance(value, dict):
            inner = changed(value, resolve(props.get(name, {})), nested=True)
            if inner is not None:
                return {**body, name: inner}
    return None


@pytest.mark.parametrize("op", IDEMPOTENT, ids=[o.id for o in IDEMPOTENT])
def test_same_key_replays_and_another_body_is_refused(server, world, op):
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    assert any(p["name"] == "Idempotency-Key" for p in op.params_in("header")), \
        "%s is idempotent but documents no Idempotency-Key" % op.id
    call = world.prepare(op)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = call.send(headers=key)
    assert first.status in op.success, "%s: %r" % (op.id, first)
    assert first.header("Idempotent-Replayed") in (None, "false"), first
    # the other body first: preparing it may make what it refers to (a quote to execute)
    other = another_body(world, call)
    before = table_counts(server)
    again = call.send(headers=key)
    if op.replay:
        assert again.status == first.status, again
        assert again.header("Idempotent-Replayed") == "true", again
        assert again.body == first.body, "the replay is not the first answer byte for byte"
        for h in KEPT_HEADERS:
            assert again.header(h) == first.header(h), (h, first.header(h), again.header(h))
    else:
        assert op.documents(409), op.id
        assert_problem(again, 409, "idempotency_answer_not_kept")
    assert table_counts(server) == before, "a retry changed stored state"
    if other is not None:
        assert op.documents(422), "%s documents no 422 for a reused key" % op.id
        r = call.send(headers=key, body=other)
        assert_problem(r, 422, "idempotency_key_reused")
        assert table_counts(server) == before, "a reused key changed stored state"
    covered(SUITE, op)
