"""GET /docs in a real browser (Debian's chromium driven by playwright-core,
tests/browser/docs_page.mjs): every request that is not for the server is blocked and
recorded, and none may happen; no CSP violation and no console error; the stylesheet applies
(its hash is right); every link of the contents has its target, and clicking a spread of them
scrolls there; a planned operation, reached from the contents, shows its badge. Screenshots
are kept in build/test-artifacts/docs/ for people to look at: docs-top.png (the first
screen), docs-after-click.png, docs-planned.png."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests" / "browser" / "docs_page.mjs"
ARTIFACTS = REPO / "build" / "test-artifacts" / "docs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

pytestmark = pytest.mark.skipif(
    not (shutil.which("node") and os.path.exists(CHROMIUM) and
         (REPO / "node_modules" / "playwright-core").is_dir()),
    reason="needs node, chromium and playwright-core (make test-deps; npm ci)")


def drive(url):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["node", str(DRIVER), "--url", url, "--screenshot-dir", str(ARTIFACTS),
                        "--timeout-ms", "90000"],
                       capture_output=True, text=True, timeout=120, cwd=str(REPO))
    lines = r.stdout.strip().splitlines()
    out = json.loads(lines[-1]) if lines else {"error": r.stderr[-2000:], "step": "?"}
    if r.returncode != 0 and out.get("step") == "launch":
        pytest.skip("chromium cannot run here: %s" % out.get("error"))
    assert r.returncode == 0, "driver failed (%d): %s %s" % (r.returncode, r.stdout,
                                                             r.stderr[-2000:])
    return out


def test_docs_page_in_chromium_loads_nothing_else_and_navigates_by_its_contents(server):
    seen = drive(server.base + "/docs")
    print("docs screenshots: %s (page %d CSS px tall)"
          % (", ".join(seen["screenshots"]), seen["height"]))
    assert seen["status"] == 200
    assert seen["blocked"] == [], "requests left the page: %r" % seen["blocked"]
    assert all(u.startswith(server.base + "/") for u in seen["requests"]), seen["requests"]
    # the page itself, and at most the browser's own favicon probe of the server
    assert {u for u in seen["requests"] if not u.endswith("/favicon.ico")} == \
        {server.base + "/docs"}, seen["requests"]
    assert seen["violations"] == [], seen["violations"]
    noise = [ln for ln in seen["console"] if "favicon.ico" not in ln]
    assert not [ln for ln in noise if ln.startswith(("error", "warning"))], noise
    assert seen["page_errors"] == []
    assert seen["body_display"] == "grid", "the stylesheet did not apply (CSP hash?)"
    assert seen["toc_links"] > 20 and seen["missing_targets"] == []
    assert len(seen["clicked"]) >= 5
    for c in seen["clicked"]:
        assert c["hash"] == c["href"], c
        # scrolled to the target (scroll-padding-top is 1rem), or as far as the page goes
        assert c["top"] is not None and (abs(c["top"] - 16) <= 4 or c["atBottom"]), c
    assert seen["planned_href"] and seen["planned_badge_visible"], seen.get("planned_href")
    for shot in seen["screenshots"]:
        assert Path(shot).stat().st_size > 10000, shot
