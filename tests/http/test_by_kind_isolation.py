"""Tenant isolation for every operation of the spec (OWASP API1, BOLA; issue 21's suites by
kind): a second workspace's member, sending an otherwise valid request (its own body, its own
references) with the first workspace's ids in the path, is answered 404 `not_found`, the same
answer as for an id that does not exist, and changes nothing (every table of the schema, and
the first workspace's view of the resource); and no list ever shows it a row of the first
workspace. The operations come from the spec (spec_ops.py), the requests from spec_world.py:
a new operation is checked without a line here."""

import json
import re

import pytest

from helpers import assert_json, assert_problem, table_counts
from spec_ops import ID, OPS, covered, list_kind, skipped
from spec_world import EXCLUDED, KINDS, Kind, server, worlds  # noqa: F401 (fixtures)

SUITE = "isolation"
ID_OPS = [o for o in OPS if o.path_params]
LIST_OPS = [o for o in OPS if o.method == "GET" and list_kind(o)]


def ids_in(value):
    """Every id (`ben_...`, `usr_...`) anywhere in a JSON value."""
    return set(re.findall(r"\b[a-z]{2,8}_[0-9a-z]{26}\b", json.dumps(value)))


def unknown(value):
    """An id of the same type that no workspace has."""
    m = ID.match(value)
    return m.group(1) + "_" + "0" * 26 if m else None


@pytest.mark.parametrize("op", ID_OPS, ids=[o.id for o in ID_OPS])
def test_another_workspaces_id_is_404_and_changes_nothing(server, worlds, op):
    a, b = worlds
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    theirs = a.prepare(op)
    mine = b.prepare(op)
    # the first workspace's current ETag: a precondition that holds there (a PUT that creates
    # under a key the caller chooses gets none: there is nothing of the caller's to match)
    headers = {"If-Match": a.etag(op, theirs.values, theirs.caller)} \
        if op.if_match and op.documents(404) else {}
    seen = a.view(op, theirs.values, theirs.caller)
    before = table_counts(server)
    r = mine.send(url=op.url(theirs.values), headers=headers)
    if op.documents(404):
        foreign = assert_problem(r, 404, "not_found")
        assert table_counts(server) == before, "a request with another workspace's id " \
                                               "changed stored state"
        for name, value in theirs.values.items():  # an id that does not exist: the same answer
            if unknown(value):
                r = mine.send(url=op.url(dict(theirs.values, **{name: unknown(value)})),
                              headers=headers)
                none = assert_problem(r, 404, "not_found")
                assert (none["type"], none["title"]) == (foreign["type"], foreign["title"])
    else:
        # A key the caller chooses (PUT documenting 201, no 404) names the caller's own
        # resource: the second workspace creates its own, the first one's stays as it was.
        assert op.method == "PUT" and op.documents(201), \
            "%s takes an id but documents no 404" % op.id
        assert_json(r, 201)
    assert a.view(op, theirs.values, theirs.caller) == seen, \
        "another workspace's request changed the resource"
    covered(SUITE, op)


@pytest.mark.parametrize("op", LIST_OPS, ids=[o.id for o in LIST_OPS])
def test_lists_never_show_another_workspaces_rows(server, worlds, op):
    a, b = worlds
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    kind = list_kind(op)
    own = KINDS.get(kind, Kind()).own
    calls = []
    for w in (a, b):  # each workspace holds a row of the list's kind (where one can be made)
        call = w.prepare(op)
        if w.makeable(kind):
            w.make(kind, call.caller if own else None, given=call.values)
        calls.append(call)
    theirs, mine = calls
    their_page = assert_json(theirs.send(url=op.full_page(theirs.url)), 200)["data"]
    their_ids = ids_in(their_page) | ids_in(dict(a.made)) | {a.wid}
    assert their_page, "the first workspace's %s list is empty: the check would prove " \
                       "nothing" % op.id
    page = assert_json(mine.send(url=op.full_page(mine.url)), 200)["data"]
    assert page, "the second workspace's %s list is empty: the check would prove nothing" % op.id
    leaked = ids_in(page) & their_ids
    assert not leaked, "%s shows another workspace's %s" % (op.id, sorted(leaked))
    for item in page:
        assert item.get("workspace_id", b.wid) == b.wid, item
    covered(SUITE, op)
