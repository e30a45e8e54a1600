"""Optimistic concurrency on every operation that documents an If-Match header (RFC 9110
§13.1.1; issue 21's suites by kind): the ETag a write answers is the one the resource's GET
then shows; an If-Match with an ETag the resource had before (stale) or never had answers 412
`precondition_failed` and changes nothing; `If-Match: *` is accepted where If-Match is
optional; and where it is required (`x-if-match: required`) a write without it, or with `*`
(which names no version, so it could not stop a lost update), answers 428
`precondition_required` and changes nothing, where it is not the write applies. ETags are `"v<version>"` (the IfMatch
parameter's description). The operations come from the spec, the requests from spec_world.py."""

import pytest

from helpers import ETAG, assert_problem, table_counts
from spec_ops import OPS, SPEC, covered, skipped
from spec_world import EXCLUDED, server, world  # noqa: F401 (fixtures)

SUITE = "etag"
ETAG_OPS = [o for o in OPS if o.if_match]


def succeeds(op, r):
    assert r.status in op.success, "%s: %r" % (op.id, r)  # the answer of op's own success
    return r


def unchanged(server, world, call):
    """(tables, the resource as its workspace sees it): compared around a refused write."""
    return table_counts(server), world.view(call.op, call.values, call.caller), \
        world.etag(call.op, call.values, call.caller)


def any_version(server, world, op, call):
    """`If-Match: *`: applied where If-Match is optional (the answer returned); refused 428
    where it is required, changing nothing (None)."""
    if not op.if_match_required:
        return succeeds(op, call.send(headers={"If-Match": "*"}))
    before = unchanged(server, world, call)
    r = call.send(headers={"If-Match": "*"})
    assert_problem(r, 428, "precondition_required")
    assert unchanged(server, world, call) == before, "a 428 for * changed stored state"
    return None


def test_428_is_documented_exactly_where_if_match_is_required():
    """x-if-match: required and a documented 428 (and 412, and the If-Match header) go
    together."""
    assert any(o.if_match_required for o in OPS), "no operation requires If-Match"
    for o in OPS:
        assert o.documents(428) == (o.op.get("x-if-match") == "required"), o.id
        if o.documents(428):
            assert o.if_match and o.documents(412), o.id


@pytest.mark.parametrize("op", ETAG_OPS, ids=[o.id for o in ETAG_OPS])
def test_if_match(server, world, op):
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    assert op.documents(412), "%s documents If-Match but not 412" % op.id
    call = world.prepare(op)
    first = world.etag(op, call.values, call.caller)
    assert ETAG.match(first), first
    version = int(ETAG.match(first).group(1))
    # never had: the next version, which does not exist yet
    before = unchanged(server, world, call)
    r = call.send(headers={"If-Match": '"v%d"' % (version + 1)})
    assert_problem(r, 412, "precondition_failed")
    assert unchanged(server, world, call) == before, "a 412 changed stored state"
    if op.method == "DELETE":
        r = succeeds(op, call.send(headers={"If-Match": first}))
        call = world.prepare(op)  # another one for `*`
        any_version(server, world, op, call)
    else:
        # the current ETag: applied; the answer's ETag is the one the GET shows from now on
        r = succeeds(op, call.send(headers={"If-Match": first}))
        written = r.header("ETag")
        assert written and ETAG.match(written), r
        assert written != first, "%s applied a change and kept its ETag" % op.id
        assert world.etag(op, call.values, call.caller) == written
        # stale: the ETag before that write
        before = unchanged(server, world, call)
        r = call.send(headers={"If-Match": first})
        assert_problem(r, 412, "precondition_failed")
        assert unchanged(server, world, call) == before, "a stale If-Match changed stored state"
        # any version (a POST is an action, such as a transition, that a resource may take
        # once: taken by another one)
        if op.method == "POST":
            call = world.prepare(op)
        r = any_version(server, world, op, call)
        if r is not None:
            assert r.header("ETag") == world.etag(op, call.values, call.caller)
    # none at all
    call = world.prepare(op)
    before = unchanged(server, world, call)
    r = call.send(headers={"If-Match": None})
    if op.if_match_required:
        assert_problem(r, 428, "precondition_required")
        assert unchanged(server, world, call) == before, "a 428 changed stored state"
    else:
        succeeds(op, r)
    covered(SUITE, op)


def test_the_spec_says_what_an_etag_is():
    """The ETag form this suite relies on is the one the spec documents."""
    desc = SPEC["components"]["parameters"]["IfMatch"]["description"]
    assert '"v<version>"' in desc and "`*`" in desc, desc
