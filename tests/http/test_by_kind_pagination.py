"""Cursor pagination of every list operation of the spec (issue 21's suites by kind): the
documented `limit` bounds (one below the minimum and one above the maximum answer 400
`invalid_request` at /query/limit, the bounds themselves are served), walking the list in small
pages gives exactly the full list, once each, in the same order, and a cursor that was tampered
with, comes from another list, was issued for other filters or for another workspace answers
400 `invalid_cursor` (the Cursor parameter and the BadRequest response say so). A list
operation is one that takes `limit` and `cursor`; the operations come from the spec, the rows
from spec_world.py."""

import pytest

from helpers import assert_json, assert_problem, assert_validation
from spec_ops import BY_ROUTE, OPS, covered, id_path, list_kind, resolve, skipped
from spec_world import EXCLUDED, KINDS, Kind, server, worlds  # noqa: F401 (fixtures)

SUITE = "pagination"
PAGED = [o for o in OPS if o.is_list]
ROWS = 5  # rows a list gets where its kind can be made: pages of 2 walk 2, 2, 1
PAGE = 2


LISTS = {}  # (world id, op id, which) -> the Call listing it (rows made)


def listed(world, op, which=0):
    """A call of op on a list holding ROWS rows of its kind (where they can be made); which:
    another one of a list under a resource (another payment's events)."""
    key = (id(world), op.id, which)
    if key not in LISTS:
        call = world.prepare(op)
        kind = list_kind(op)
        have = len(rows(call))
        if world.makeable(kind):
            own = KINDS.get(kind, Kind()).own
            for _ in range(ROWS - have):
                world.make(kind, call.caller if own else None, given=call.values)
        elif op.path_params:
            # Rows nobody makes that hang under a resource (a payment's events) come from its
            # changes: its PATCH, with the spec's example, until the list stops growing.
            patch = BY_ROUTE.get(("PATCH", id_path(op, op.path_params[-1])))
            while patch is not None and have < ROWS:
                assert_json(world.prepare(patch, given=call.values).send(), 200)
                now = len(rows(call))
                if now == have:
                    break
                have = now
        LISTS[key] = call
    return LISTS[key]


def rows(call):
    return assert_json(call.send(url=call.op.full_page(call.url)), 200)["data"]


def paged(world, op, at_least=0):
    """listed(world, op); op skipped (and counted) when excluded or with fewer rows than
    at_least (rows the suite cannot make)."""
    if op.id in EXCLUDED:
        skipped(SUITE, op, EXCLUDED[op.id])
    call = listed(world, op)
    n = len(rows(call))
    if n < at_least:
        skipped(SUITE, op, "%d row(s) of %s, which the suite cannot make: %d needed" % (
            n, list_kind(op), at_least))
    return call


def query(url, **q):
    return url + ("&" if "?" in url else "?") + "&".join("%s=%s" % kv for kv in q.items())


def walk(call, limit, **filters):
    pages, cursor = [], None
    while True:
        q = dict(filters, limit=limit)
        if cursor:
            q["cursor"] = cursor
        page = assert_json(call.send(url=query(call.url, **q)), 200)
        assert set(page) >= {"data", "has_more", "next_cursor"}, page
        pages.append(page)
        assert len(pages) <= 100, "pagination does not end"
        if not page["has_more"]:
            assert page["next_cursor"] is None, page
            return pages
        assert len(page["data"]) == limit, "a page before the last is short: %r" % page
        assert isinstance(page["next_cursor"], str) and page["next_cursor"], page
        cursor = page["next_cursor"]


def first_cursor(call):
    page = assert_json(call.send(url=query(call.url, limit=1)), 200)
    assert page["has_more"] and page["next_cursor"], \
        "%s: one row in pages of 1 and no next page" % call.op.id
    return page["next_cursor"]


def flip(s, i):
    return s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1:]


def filters_of(op):
    """{name: a value the spec gives} for each filter of op (query parameters other than
    limit and cursor that document an example or an enum)."""
    out = {}
    for p in op.params_in("query"):
        if p["name"] in ("limit", "cursor"):
            continue
        s = resolve(p["schema"])
        value = p.get("example", s.get("example", (s.get("enum") or [None])[0]))
        if value is not None and not isinstance(value, (list, dict)):
            out[p["name"]] = value
    return out


@pytest.mark.parametrize("op", PAGED, ids=[o.id for o in PAGED])
def test_limit_bounds(worlds, op):
    call = paged(worlds[0], op)
    lo, hi = op.limit_bounds
    assert op.documents(400) and not op.documents(422), op.id  # a parameter: 400 only
    for bad, code in ((lo - 1, "minimum"), (hi + 1, "maximum")):
        assert_validation(call.send(url=query(call.url, limit=bad)), {"/query/limit": code},
                          status=400, code="invalid_request")
    assert len(assert_json(call.send(url=query(call.url, limit=lo)), 200)["data"]) <= lo
    assert_json(call.send(url=query(call.url, limit=hi)), 200)


@pytest.mark.parametrize("op", PAGED, ids=[o.id for o in PAGED])
def test_pages_concatenate_to_the_whole_list(worlds, op):
    call = paged(worlds[0], op, at_least=PAGE + 1)
    whole = assert_json(call.send(url=op.full_page(call.url)), 200)
    assert whole["has_more"] is False and whole["next_cursor"] is None
    pages = walk(call, PAGE)
    rows = [row for p in pages for row in p["data"]]
    assert rows == whole["data"], "pages of %d are not the list" % PAGE
    keys = [repr(sorted(r.items())) for r in rows]
    assert len(set(keys)) == len(keys), "a row twice"
    covered(SUITE, op)  # with the cursor tests below (they need two pages too)


@pytest.mark.parametrize("op", PAGED, ids=[o.id for o in PAGED])
def test_tampered_cursor_is_400_invalid_cursor(worlds, op):
    call = paged(worlds[0], op, at_least=2)
    cursor = first_cursor(call)
    for i in (0, len(cursor) // 2, len(cursor) - 1):
        assert_problem(call.send(url=query(call.url, limit=1, cursor=flip(cursor, i))), 400,
                       "invalid_cursor")


@pytest.mark.parametrize("op", PAGED, ids=[o.id for o in PAGED])
def test_cursor_of_another_list_filter_or_workspace_is_400_invalid_cursor(worlds, op):
    a, b = worlds
    call = paged(a, op, at_least=2)
    foreign = {}
    # the same list of the other workspace
    foreign["another workspace"] = first_cursor(listed(b, op))
    # every other list of this workspace that has a second page
    for other in PAGED:
        if other is not op and other.id not in EXCLUDED:
            o = listed(a, other)
            if len(rows(o)) >= 2:
                foreign[other.id] = first_cursor(o)
    # the same list under another parent (a payment's events for another payment's)
    if op.path_params:
        sibling = listed(a, op, which=1)
        assert sibling.url != call.url
        if len(rows(sibling)) >= 2:
            foreign["another parent"] = first_cursor(sibling)
    for name, value in filters_of(op).items():  # this list's cursor with a filter added
        foreign["with %s=%s" % (name, value)] = (first_cursor(call), {name: value})
    for label, cursor in foreign.items():
        extra = {}
        if isinstance(cursor, tuple):
            cursor, extra = cursor
        r = call.send(url=query(call.url, limit=1, cursor=cursor, **extra))
        assert r.status == 400, "%s: a cursor (%s) answered %r" % (op.id, label, r)
        assert_problem(r, 400, "invalid_cursor")
