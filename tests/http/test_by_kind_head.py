"""HEAD on every GET operation of the spec (RFC 9110 §9.3.2; issue 17): the same status and
head fields as the GET, and no body. Uptime monitors and link checkers probe with HEAD, so a
new GET operation is checked here without a line. The operations come from the spec
(spec_ops.py), the requests from spec_world.py; test_methods.py holds the wire-level checks."""

import pytest

from spec_ops import OPS, covered, skipped
from spec_world import EXCLUDED, server, world  # noqa: F401 (fixtures)

SUITE = "head"
GET_OPS = [o for o in OPS if o.method == "GET"]
# The head fields that describe this exchange rather than the resource.
PER_EXCHANGE = {"date", "x-request-id", "ratelimit", "x-ratelimit-remaining",
                "x-ratelimit-reset", "set-cookie"}


def head_fields(r, also=()):
    return {k.lower(): v for k, v in r.headers.items()
            if k.lower() not in PER_EXCHANGE and k.lower() not in also}


@pytest.mark.parametrize("op", GET_OPS, ids=[o.id for o in GET_OPS])
def test_head_is_the_gets_head_without_the_body(server, world, op):
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    call = world.prepare(op)
    c = call.caller.client
    get = call.send()  # a success mostly; a refusal (no reference rates imported yet) too
    assert get.status < 500, "%s: %r" % (op.id, get)
    head = c.request("HEAD", call.url, headers=dict(call.headers))
    again = call.send()
    assert head.status == get.status, "%s: HEAD %r, GET %r" % (op.id, head, get)
    assert head.body == b"", "%s: HEAD sent a body" % op.id
    if again.body == get.body:
        # A representation that does not change between two reads: the HEAD announces its
        # length and every field the GET sends, with the same values.
        assert int(head.header("Content-Length")) == len(get.body), op.id
        assert head_fields(head) == head_fields(get), op.id
    else:
        # One that does (a live rate's time, a page's sign-in form): the same fields, and the
        # values of those that do not describe the body.
        varying = {"content-length", "etag", "last-modified"}
        assert set(head_fields(head)) == set(head_fields(get)), op.id
        assert head_fields(head, varying) == head_fields(get, varying), op.id
    covered(SUITE, op)
