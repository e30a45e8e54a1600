#!/usr/bin/env node
// Drives a real Chromium (Debian's /usr/bin/chromium, via playwright-core) through the
// server's OAuth 2.0 authorization-code pages: sign-in, optional MFA, consent, redirect.
// See README.md beside this file for the page-id contract and how pytest calls it.
//
//   node tests/browser/oauth_consent.mjs --authorize-url URL --email E --password P \
//        [--otp CODE] --redirect-prefix PREFIX --screenshot-dir DIR \
//        [--decision approve|deny] [--timeout-ms 20000]
//
// Success: one line of JSON on stdout, {"redirect", "title_consent", "consent_text"}, exit 0.
// Failure: one line {"error": "..."} on stdout, DIR/failure.png when a page was open, exit 1.
// Usage errors: {"error": "..."} and exit 2.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

import { CHROMIUM, CHROMIUM_ARGS, emit } from './chromium.mjs';

class FlowError extends Error {}

function usage(msg) {
  emit({ error: 'usage: ' + msg });
  process.exit(2);
}

function parse() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        'authorize-url': { type: 'string' },
        email: { type: 'string' },
        password: { type: 'string' },
        otp: { type: 'string' },
        'redirect-prefix': { type: 'string' },
        'screenshot-dir': { type: 'string' },
        decision: { type: 'string', default: 'approve' },
        'timeout-ms': { type: 'string', default: '20000' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    usage(e.message);
  }
  for (const k of ['authorize-url', 'email', 'password', 'redirect-prefix', 'screenshot-dir']) {
    if (values[k] === undefined) usage(`--${k} is required`);
  }
  if (!['approve', 'deny'].includes(values.decision)) usage('--decision must be approve or deny');
  const timeoutMs = Number(values['timeout-ms']);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1000) usage('--timeout-ms must be an integer >= 1000');
  return {
    authorizeUrl: values['authorize-url'],
    email: values.email,
    password: values.password,
    otp: values.otp,
    redirectPrefix: values['redirect-prefix'],
    dir: values['screenshot-dir'],
    decision: values.decision,
    timeoutMs,
  };
}

const opts = parse();
// Counted from process start, so node's start-up and loading playwright are inside the budget.
const started = Date.now() - Math.round(process.uptime() * 1000);
// The flow gets the budget less a reserve for the failure screenshot and closing the browser;
// a watchdog ends the process at the full budget whatever is still pending.
const reserveMs = Math.min(3000, Math.max(1000, Math.floor(opts.timeoutMs / 5)));
const deadline = started + opts.timeoutMs - reserveMs;
const left = () => Math.max(1, deadline - Date.now());

const watchdog = setTimeout(() => {
  emit({ error: `timed out after ${opts.timeoutMs} ms (browser did not close in time)` });
  process.exit(1); // playwright kills the chromium it launched on process exit
}, Math.max(1, started + opts.timeoutMs - Date.now()));

let browser = null;
let page = null;
let step = 'start'; // named in failure messages
const consoleLines = [];

async function errorText() {
  // Text of the server's #error element on the current page, if it has one.
  try {
    const loc = page.locator('#error');
    if (await loc.count()) return (await loc.first().innerText({ timeout: 1000 })).trim();
  } catch { /* page gone */ }
  return null;
}

// Click `button` (which submits a form) and wait for the main frame to commit a new document,
// then for the first of `selectors` to appear in it. Returns the matching selector.
async function submitAndWait(button, selectors) {
  const navigated = page.waitForEvent('framenavigated', {
    predicate: (f) => f === page.mainFrame(),
    timeout: left(),
  });
  navigated.catch(() => {}); // awaited below; don't let a failed click orphan it
  await page.click(button, { timeout: left() });
  await navigated;
  return waitForAny(selectors);
}

async function waitForAny(selectors) {
  const union = selectors.join(', ');
  await page.locator(union).first().waitFor({ state: 'attached', timeout: left() });
  for (const s of selectors) {
    if (await page.locator(s).count()) return s;
  }
  throw new FlowError(`none of ${union} found`); // not reached
}

async function failIfError(found, where) {
  if (found !== '#error') return;
  const text = await errorText();
  throw new FlowError(`server error page ${where}: ${JSON.stringify(text)}`);
}

async function shot(name) {
  await page.screenshot({ path: join(opts.dir, name), fullPage: true, timeout: left() });
}

async function flow() {
  step = 'launch';
  mkdirSync(opts.dir, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: left(),
  });
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  page = await context.newPage();
  // Kept for the failure message: a CSP violation (e.g. form-action) only shows up here.
  page.on('console', (m) => {
    if (!['error', 'warning'].includes(m.type()) || consoleLines.length >= 10) return;
    if (/favicon\.ico/.test(m.location()?.url || '')) return;
    consoleLines.push(`${m.type()}: ${m.text()}`);
  });

  // Navigation requests into the redirect target that fail (target not listening, aborted)
  // never commit, so waitForURL alone would only time out; catch them to say why.
  let redirectFailure = null;
  let failedRedirect;
  const redirectFailed = new Promise((resolve) => { failedRedirect = resolve; });
  page.on('requestfailed', (req) => {
    if (req.isNavigationRequest() && req.frame() === page.mainFrame()
        && req.url().startsWith(opts.redirectPrefix)) {
      redirectFailure = `navigation to ${req.url()} failed: ${req.failure()?.errorText}`;
      failedRedirect();
    }
  });

  // 1. sign-in
  step = 'sign-in';
  const resp = await page.goto(opts.authorizeUrl, { waitUntil: 'load', timeout: left() });
  let found = await waitForAny(['#sign-in-form', '#error']);
  if (found === '#error') {
    throw new FlowError(`authorize URL answered with an error page (HTTP ${resp?.status()}): `
      + JSON.stringify(await errorText()));
  }
  for (const id of ['#email', '#password', '#sign-in']) {
    if (!(await page.locator(`form#sign-in-form ${id}`).count())) {
      throw new FlowError(`sign-in page lacks ${id} inside form#sign-in-form`);
    }
  }
  await page.fill('#email', opts.email, { timeout: left() });
  await page.fill('#password', opts.password, { timeout: left() });
  await shot('sign-in.png');
  found = await submitAndWait('#sign-in', ['#otp', '#approve', '#error']);
  await failIfError(found, 'after sign-in');

  // 2. MFA, when the account has it
  if (found === '#otp') {
    step = 'mfa';
    await shot('mfa.png');
    if (opts.otp === undefined) throw new FlowError('MFA page (#otp) appeared but no --otp was given');
    await page.fill('#otp', opts.otp, { timeout: left() });
    found = await submitAndWait('#verify', ['#approve', '#error']);
    await failIfError(found, 'after MFA');
  }

  // 3. consent
  step = 'consent';
  if (!(await page.locator('form#consent-form #approve').count())
      || !(await page.locator('form#consent-form #deny').count())) {
    throw new FlowError('consent page lacks #approve/#deny inside form#consent-form');
  }
  const titleConsent = await page.title();
  const consentText = await page.evaluate(() => document.body.innerText);
  await shot('consent.png');

  // 4. decision -> redirect to the client
  step = opts.decision;
  const landed = page.waitForURL((u) => u.href.startsWith(opts.redirectPrefix),
    { waitUntil: 'commit', timeout: left() }).then(() => 'redirect', (e) => {
    // ERR_ABORTED here is typically a CSP form-action block of the redirect (see console).
    throw new FlowError(`no navigation to ${opts.redirectPrefix} after ${opts.decision}: `
      + (e.message || String(e)).split('\n')[0]);
  });
  const errorPage = page.waitForEvent('framenavigated',
    { predicate: (f) => f === page.mainFrame(), timeout: left() })
    .then(() => page.locator('#error').first().waitFor({ state: 'attached', timeout: left() }))
    .then(() => 'error');
  const failed = redirectFailed.then(() => 'failed');
  landed.catch(() => {}); errorPage.catch(() => {});
  await page.click(`#${opts.decision}`, { timeout: left() });
  const outcome = await Promise.race([landed, errorPage, failed]);
  if (outcome === 'failed') throw new FlowError(redirectFailure);
  if (outcome === 'error') {
    if (page.url().startsWith(opts.redirectPrefix)) { /* the client's page has an #error: fine */ } else {
      throw new FlowError(`server error page after ${opts.decision}: ${JSON.stringify(await errorText())}`);
    }
  }
  return { redirect: page.url(), title_consent: titleConsent, consent_text: consentText };
}

async function main() {
  let timer;
  const overall = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new FlowError(
      `timed out after ${opts.timeoutMs} ms`)), deadline - Date.now());
  });
  try {
    const result = await Promise.race([flow(), overall]);
    emit(result);
    process.exitCode = 0;
  } catch (e) {
    let msg = (e && e.message ? e.message : String(e)).split('\n')[0] + ` [step: ${step}]`;
    if (page) {
      msg += ` [at ${page.url()}]`;
      try {
        mkdirSync(opts.dir, { recursive: true });
        // A screenshot waits for a pending navigation (e.g. a server that never answers) and
        // would time out: stop loading first, which keeps the committed page as it is.
        const cdp = await page.context().newCDPSession(page);
        await Promise.race([cdp.send('Page.stopLoading'),
          new Promise((resolve) => setTimeout(resolve, 500))]);
        await page.screenshot({ path: join(opts.dir, 'failure.png'), fullPage: true,
          timeout: Math.max(500, reserveMs - 1000) });
      } catch { msg += ' [no failure.png]'; }
    }
    if (consoleLines.length) msg += ` [console: ${consoleLines.join(' | ')}]`;
    emit({ error: msg });
    process.exitCode = 1;
  } finally {
    clearTimeout(timer);
    if (browser) await browser.close().catch(() => {});
    clearTimeout(watchdog);
  }
}

await main();
