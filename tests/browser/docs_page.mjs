#!/usr/bin/env node
// Opens the API reference page (GET /docs) in a real Chromium (Debian's /usr/bin/chromium via
// playwright-core) with every request to anything but the server blocked and recorded, then
// checks what a reader relies on: nothing left the page, no CSP violation, the stylesheet
// applied, every contents link has its target and a sample of them scrolls there when
// clicked, and a planned operation shows its badge. Saves docs-top.png (the first screen),
// docs-after-click.png and docs-planned.png (a planned operation reached from the contents).
//
//   node tests/browser/docs_page.mjs --url https://127.0.0.1:PORT/docs --screenshot-dir DIR \
//        [--timeout-ms 60000]
//
// Exit 0: one line of JSON with what was seen (the pytest side asserts on it):
//   {"status", "requests": [urls], "blocked": [urls], "console": [lines], "violations": [..],
//    "page_errors": [..], "body_display", "toc_links", "missing_targets": [hrefs],
//    "clicked": [{"href", "hash", "top", "atBottom"}], "height", "planned_href",
//    "planned_badge_visible", "screenshots": [paths]}
// Exit 1: {"error": "...", "step": "..."}; step "launch" means the browser could not run.
// Exit 2: bad arguments.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

import { CHROMIUM, CHROMIUM_ARGS, emit } from './chromium.mjs';

let values;
try {
  ({ values } = parseArgs({
    options: {
      url: { type: 'string' },
      'screenshot-dir': { type: 'string' },
      'timeout-ms': { type: 'string', default: '60000' },
    },
    strict: true,
  }));
} catch (e) {
  emit({ error: 'usage: ' + e.message });
  process.exit(2);
}
if (!values.url || !values['screenshot-dir']) {
  emit({ error: 'usage: --url and --screenshot-dir are required' });
  process.exit(2);
}
const timeoutMs = Number(values['timeout-ms']);
const origin = new URL(values.url).origin;
const dir = values['screenshot-dir'];
const watchdog = setTimeout(() => {
  emit({ error: `timed out after ${timeoutMs} ms`, step });
  process.exit(1);
}, timeoutMs);

let step = 'launch';
let browser = null;
const seen = {
  requests: [], blocked: [], console: [], violations: [], page_errors: [], clicked: [],
  missing_targets: [], screenshots: [],
};

// A context whose every request not addressed to the server is recorded and never sent, with
// a listener for CSP violations injected by the driver (over CDP, so the page's CSP does not
// apply to it: it only listens).
async function openPage(deviceScaleFactor) {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 }, deviceScaleFactor,
    serviceWorkers: 'block',
  });
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(origin + '/')) return route.continue();
    seen.blocked.push(u);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.on('request', (req) => seen.requests.push(req.url()));
  page.on('console', (m) => seen.console.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => seen.page_errors.push(String(e)));
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__violations.push(
        `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  const resp = await page.goto(values.url, { waitUntil: 'load', timeout: timeoutMs / 3 });
  seen.status = resp ? resp.status() : 0;
  return page;
}

async function run() {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS,
    timeout: Math.min(30000, timeoutMs) });
  step = 'open';
  const page = await openPage(1);
  step = 'inspect';
  seen.body_display = await page.evaluate(() => getComputedStyle(document.body).display);
  const links = await page.evaluate(() => [...document.querySelectorAll('nav.toc a[href^="#"]')]
    .map((a) => a.getAttribute('href')));
  seen.toc_links = links.length;
  seen.missing_targets = await page.evaluate((hrefs) => hrefs.filter(
    (h) => !document.getElementById(decodeURIComponent(h.slice(1)))), links);
  seen.height = await page.evaluate(() => document.documentElement.scrollHeight);

  step = 'screenshot';
  mkdirSync(dir, { recursive: true });
  const top = join(dir, 'docs-top.png');
  await page.screenshot({ path: top });
  seen.screenshots.push(top);

  // Click a spread of contents links: the first, some in the middle, the last.
  step = 'navigate';
  const picks = [...new Set([0, 1, 2, Math.floor(links.length / 3), Math.floor(links.length / 2),
    Math.floor((2 * links.length) / 3), links.length - 2, links.length - 1])]
    .filter((i) => i >= 0 && i < links.length);
  for (const i of picks) {
    const href = links[i];
    const link = page.locator(`nav.toc a[href="${href.replace(/"/g, '\\"')}"]`).first();
    await link.click({ timeout: 10000 });
    const r = await page.evaluate((h) => {
      const el = document.getElementById(decodeURIComponent(h.slice(1)));
      const atBottom = window.scrollY + window.innerHeight
        >= document.documentElement.scrollHeight - 2;
      const top = el ? Math.round(el.getBoundingClientRect().top) : null;
      return { hash: location.hash, top, atBottom };
    }, href);
    seen.clicked.push({ href, ...r });
  }
  if (picks.length) {
    const shot = join(dir, 'docs-after-click.png');
    await page.screenshot({ path: shot });
    seen.screenshots.push(shot);
  }
  seen.violations = await page.evaluate(() => window.__violations);

  // A planned operation as a reader meets it: reached from the contents, its card and its
  // badge on screen. (A whole-page image of the full spec, ~100,000 CSS px tall, takes
  // Chromium longer than a test should wait, so the artifacts are screens, not the page.)
  step = 'planned operation';
  const planned = await page.evaluate(() => {
    const a = document.querySelector('nav.toc a.pl[href^="#op-"]');
    return a ? a.getAttribute('href') : null;
  });
  seen.planned_href = planned;
  if (planned) {
    await page.locator(`nav.toc a[href="${planned}"]`).first().click({ timeout: 10000 });
    seen.planned_badge_visible = await page.evaluate((h) => {
      const card = document.getElementById(decodeURIComponent(h.slice(1)));
      const badge = card && card.querySelector('h3 .b.pl');
      if (!badge) return false;
      const r = badge.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight && card.classList.contains('planned');
    }, planned);
    const shot = join(dir, 'docs-planned.png');
    await page.screenshot({ path: shot });
    seen.screenshots.push(shot);
  }
  seen.violations = await page.evaluate(() => window.__violations);
  await browser.close();
  browser = null;
}

try {
  await run();
  clearTimeout(watchdog);
  emit(seen);
  process.exit(0);
} catch (e) {
  emit({ error: String(e && e.message || e).slice(0, 2000), step });
  if (browser) await browser.close().catch(() => {});
  process.exit(1);
}
