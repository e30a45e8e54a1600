"""Cursor pagination of GET /v1/beneficiaries: {data, has_more, next_cursor}, newest first by
(created_at, id), limit 1..100 (default 20), opaque tamper-proof cursors bound to their filters."""

import base64

import pytest

from helpers import assert_json, assert_problem, create_beneficiary

PATH = "/v1/beneficiaries"
N = 45


@pytest.fixture(scope="module")
def ws(server):
    """A workspace holding exactly N beneficiaries (created in order), and their ids."""
    _, _, c = server.new_workspace()
    ids = []
    for i in range(N):
        cur = "GBP" if i % 3 == 0 else "EUR"
        ids.append(create_beneficiary(c, name="p-%02d" % i, currency=cur, external_id=None)["id"])
    return c, ids


def walk(c, limit=None, query=""):
    pages, cursor = [], None
    while True:
        q = [query] if query else []
        if limit is not None:
            q.append("limit=%d" % limit)
        if cursor:
            q.append("cursor=" + cursor)
        page = assert_json(c.get(PATH + ("?" + "&".join(q) if q else "")), 200)
        assert set(page) >= {"data", "has_more", "next_cursor"}, page
        pages.append(page)
        assert len(pages) < 200, "pagination does not terminate"
        if not page["has_more"]:
            assert page["next_cursor"] is None, page
            return pages
        assert isinstance(page["next_cursor"], str) and page["next_cursor"], page
        cursor = page["next_cursor"]


def sort_key(b):
    return (b["created_at"], b["id"])


def test_walking_45_items_in_pages_of_20_gives_20_20_5(ws):
    c, ids = ws
    pages = walk(c, limit=20)
    assert [len(p["data"]) for p in pages] == [20, 20, 5]
    assert [p["has_more"] for p in pages] == [True, True, False]
    seen = [b["id"] for p in pages for b in p["data"]]
    assert len(seen) == len(set(seen)), "duplicates across pages"
    assert set(seen) == set(ids), "missing or foreign items"


def test_items_are_newest_first_by_created_at_then_id(ws):
    c, ids = ws
    items = [b for p in walk(c, limit=20) for b in p["data"]]
    keys = [sort_key(b) for b in items]
    assert keys == sorted(keys, reverse=True)
    assert len(set(keys)) == len(keys)
    # Creation order is reflected wherever timestamps differ.
    pos = {i: n for n, i in enumerate(ids)}
    for a, b in zip(items, items[1:]):
        if a["created_at"] != b["created_at"]:
            assert pos[a["id"]] > pos[b["id"]]
    assert items[-1]["id"] == ids[0] or items[-1]["created_at"] == items[-2]["created_at"]


def test_default_page_size_is_20(ws):
    c, _ = ws
    page = assert_json(c.get(PATH), 200)
    assert len(page["data"]) == 20 and page["has_more"] is True


def test_limit_100_returns_everything_in_one_page(ws):
    c, ids = ws
    page = assert_json(c.get(PATH + "?limit=100"), 200)
    assert len(page["data"]) == N
    assert page["has_more"] is False and page["next_cursor"] is None


@pytest.mark.parametrize("limit", [1, 7, 44, 45, 46])
def test_other_page_sizes_walk_the_same_sequence(ws, limit):
    c, _ = ws
    reference = [b["id"] for b in assert_json(c.get(PATH + "?limit=100"), 200)["data"]]
    pages = walk(c, limit=limit)
    assert [b["id"] for p in pages for b in p["data"]] == reference
    assert all(len(p["data"]) == limit for p in pages[:-1])
    assert 1 <= len(pages[-1]["data"]) <= limit


def test_filters_combine_with_pagination(ws):
    c, ids = ws
    gbp = {ids[i] for i in range(N) if i % 3 == 0}
    pages = walk(c, limit=4, query="currency=GBP")
    got = [b["id"] for p in pages for b in p["data"]]
    assert set(got) == gbp and len(got) == len(gbp)
    assert all(b["currency"] == "GBP" for p in pages for b in p["data"])


def test_cursor_keeps_its_place_when_new_items_arrive(server):
    _, _, c = server.new_workspace()
    first = [create_beneficiary(c, name="old-%d" % i, external_id=None)["id"] for i in range(6)]
    page1 = assert_json(c.get(PATH + "?limit=3"), 200)
    newer = create_beneficiary(c, name="newer", external_id=None)["id"]
    page2 = assert_json(c.get(PATH + "?limit=3&cursor=" + page1["next_cursor"]), 200)
    got = [b["id"] for b in page1["data"] + page2["data"]]
    assert newer not in got
    assert sorted(got) == sorted(first) and len(set(got)) == 6


def test_empty_workspace_lists_nothing(server):
    _, _, c = server.new_workspace()
    page = assert_json(c.get(PATH), 200)
    assert page == {"data": [], "has_more": False, "next_cursor": None}


def flip(s, i):
    ch = s[i]
    return s[:i] + ("A" if ch != "A" else "B") + s[i + 1:]


def test_tampered_cursor_is_400_invalid_cursor(ws):
    c, _ = ws
    cursor = c.get(PATH + "?limit=20").json()["next_cursor"]
    for i in (0, len(cursor) // 2, len(cursor) - 1):
        r = c.get(PATH + "?limit=20&cursor=" + flip(cursor, i))
        assert_problem(r, 400, "invalid_cursor")


@pytest.mark.parametrize("bad", ["abc", "AAAA", "eyJrIjoiMjAyNS0wMy0xNFQwOToyNjo1My41ODlaIn0.c2ln",
                                 "%00", "x" * 600])
def test_garbage_cursor_is_refused(ws, bad):
    c, _ = ws
    r = c.get(PATH + "?cursor=" + bad)
    assert_problem(r, 400)


def test_forged_cursor_pointing_elsewhere_is_refused(ws):
    """A cursor whose readable part is edited (e.g. to jump) without a valid MAC is refused."""
    c, _ = ws
    cursor = c.get(PATH + "?limit=20").json()["next_cursor"]
    head = cursor.split(".")[0]
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except Exception:
        pytest.skip("cursor has no base64 part to edit")
    edited = base64.urlsafe_b64encode(raw.replace(b"2", b"1", 1)).rstrip(b"=").decode()
    forged = cursor.replace(head, edited, 1)
    if forged == cursor:
        pytest.skip("nothing to edit in the cursor")
    assert_problem(c.get(PATH + "?limit=20&cursor=" + forged), 400, "invalid_cursor")


def test_cursor_with_other_filters_is_400_invalid_cursor(ws):
    c, _ = ws
    cursor = c.get(PATH + "?limit=5").json()["next_cursor"]
    r = c.get(PATH + "?limit=5&status=active&cursor=" + cursor)
    assert_problem(r, 400, "invalid_cursor")
    r = c.get(PATH + "?limit=5&currency=GBP&cursor=" + cursor)
    assert_problem(r, 400, "invalid_cursor")


def test_cursor_of_another_workspace_is_400_invalid_cursor(server, ws):
    """A cursor is issued for its list's filters, the workspace among them."""
    c, ids = ws
    cursor = c.get(PATH + "?limit=5").json()["next_cursor"]
    wid, _, other = server.new_workspace()
    create_beneficiary(other, external_id=None)
    assert_problem(other.get(PATH + "?limit=5&cursor=" + cursor), 400, "invalid_cursor")
