"""Scope enforcement on every operation that needs a scope (issue 21's suites by kind): a
request that would succeed, sent with a token holding every scope of the catalogue except one
the operation needs (and except `workspace:admin`, which grants every scope), is refused 403
`insufficient_scope` with an RFC 6750 challenge naming the scopes needed, and changes nothing.
The tokens are a service account's, whose scopes are chosen when they are issued (an
administrator's account: its role grants every scope). The operations come from the spec, the
requests from spec_world.py."""

import uuid

import pytest

from helpers import assert_json, assert_problem, table_counts
from spec_ops import ADMIN_SCOPE, ALL_SCOPES, BY_ROUTE, OPS, covered, skipped
from spec_world import EXCLUDED, server, world  # noqa: F401 (fixtures)

SUITE = "scopes"
SCOPED = [o for o in OPS if o.scopes]


@pytest.fixture(scope="module")
def token_without(world):
    """token_without(scope): a service-account token holding every scope but scope (and
    workspace:admin)."""
    accounts = BY_ROUTE[("POST", "/admin/service-accounts")]
    tokens = BY_ROUTE[("POST", "/admin/service-accounts/{id}/tokens")]
    owner = world.owner.client
    sa = assert_json(owner.post(accounts.path, json={"name": "scopes-" + uuid.uuid4().hex[:6],
                                                     "role": "admin"}), 201)
    made = {}

    def make(scope):
        if scope not in made:
            scopes = [s for s in ALL_SCOPES if s not in (scope, ADMIN_SCOPE)]
            r = owner.post(tokens.url({"id": sa["id"]}), json={"name": "all but " + scope,
                                                                "scopes": scopes})
            made[scope] = assert_json(r, 201)["access_token"]
        return made[scope]
    return make


@pytest.mark.parametrize("op", SCOPED, ids=[o.id for o in SCOPED])
def test_a_token_without_a_needed_scope_is_refused_and_changes_nothing(server, world,
                                                                        token_without, op):
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    assert op.documents(403), "%s needs %s but documents no 403" % (op.id, op.scopes)
    for scope in op.scopes:
        call = world.prepare(op)
        token = token_without(scope)
        seen = world.view(op, call.values, call.caller)
        before = table_counts(server)
        r = call.send(token=token)
        assert_problem(r, 403, "insufficient_scope")
        challenge = r.header("WWW-Authenticate") or ""
        assert 'error="insufficient_scope"' in challenge, challenge
        assert 'scope="%s"' % " ".join(op.scopes) in challenge, challenge
        assert table_counts(server) == before, "a refused request changed stored state"
        assert world.view(op, call.values, call.caller) == seen
    covered(SUITE, op)
