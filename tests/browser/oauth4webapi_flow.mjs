// The OAuth flow as a strict third-party client library runs it (oauth4webapi): RFC 8414
// discovery with the issuer checked byte for byte, PKCE, the authorization response validated
// (state and the RFC 9207 `iss`), the code exchanged, a protected resource called, the refresh
// token rotated, then revoked (RFC 7009) and refused afterwards, and the code refused when used
// a second time: oauth4webapi must read each refusal as an RFC 6749 error (a ResponseBodyError
// with `error`, or the Bearer challenge's). The person in the middle is oauth_consent.mjs in
// Chromium.
//
//   NODE_EXTRA_CA_CERTS=<data-dir>/tls.crt node tests/browser/oauth4webapi_flow.mjs \
//     --issuer https://127.0.0.1:8443 --client-id cli_... --redirect-uri http://127.0.0.1:P/cb \
//     --email E --password P --scope payments:read --screenshot-dir DIR
//
// Prints one line of JSON ({"scope", "payments_status", "refreshed_scope", "revocation",
// "api_after_revocation", "refresh_after_revocation", "code_replay"}, each refusal as
// {"name", "status", "error"}); exit 1 with {"error"} when any step fails unexpectedly.
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as oauth from 'oauth4webapi';

function arg(name) {
  const i = process.argv.indexOf('--' + name);
  if (i < 0 || i + 1 >= process.argv.length) {
    console.log(JSON.stringify({ error: 'missing --' + name }));
    process.exit(2);
  }
  return process.argv[i + 1];
}

function consentInBrowser(url, email, password, prefix, dir) {
  const driver = join(dirname(fileURLToPath(import.meta.url)), 'oauth_consent.mjs');
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [driver, '--authorize-url', url, '--email', email, '--password',
      password, '--redirect-prefix', prefix, '--screenshot-dir', dir, '--timeout-ms', '40000'],
    { timeout: 60000 }, (err, stdout) => {
      const last = stdout.trim().split('\n').pop() || '{}';
      const out = JSON.parse(last);
      if (err || out.error) reject(new Error('browser: ' + (out.error || err.message)));
      else resolve(out.redirect);
    });
  });
}

// A refusal as oauth4webapi surfaced it: an RFC 6749 error body (ResponseBodyError) or an RFC
// 6750 challenge (WWWAuthenticateChallengeError); anything else is a failure of the run.
function refusal(e) {
  if (e instanceof oauth.ResponseBodyError) {
    return { name: e.name, status: e.status, error: e.error,
      described: typeof e.error_description === 'string' && e.error_description.length > 0 };
  }
  if (e instanceof oauth.WWWAuthenticateChallengeError) {
    return { name: e.name, status: e.status, error: e.cause[0]?.parameters?.error };
  }
  throw e;
}

async function refused(step) {
  try {
    await step();
  } catch (e) {
    return refusal(e);
  }
  return { name: 'accepted' };
}

async function main() {
  const issuer = new URL(arg('issuer'));
  const redirectUri = arg('redirect-uri');
  const client = { client_id: arg('client-id') };
  const auth = oauth.None();

  const as = await oauth.processDiscoveryResponse(
    issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2' }));
  if (!as.code_challenge_methods_supported?.includes('S256')) throw new Error('no S256');

  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('scope', arg('scope'));
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');

  const landed = await consentInBrowser(url.href, arg('email'), arg('password'), redirectUri,
    arg('screenshot-dir'));
  const params = oauth.validateAuthResponse(as, client, new URL(landed), state);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client,
    await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, verifier));
  if (tokens.token_type !== 'bearer') throw new Error('token_type ' + tokens.token_type);

  const api = await oauth.protectedResourceRequest(tokens.access_token, 'GET',
    new URL('/v1/payments', issuer));
  const refreshed = await oauth.processRefreshTokenResponse(as, client,
    await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token));
  if (refreshed.refresh_token === tokens.refresh_token) throw new Error('refresh not rotated');
  const payments = new URL('/v1/payments', issuer);
  const before = await oauth.protectedResourceRequest(refreshed.access_token, 'GET', payments);
  if (before.status !== 200) throw new Error('refreshed token refused: ' + before.status);

  // The app signs the user out: it revokes its refresh token (RFC 7009), which ends the
  // session, and finds both tokens refused afterwards.
  const revocation = await oauth.processRevocationResponse(
    await oauth.revocationRequest(as, client, auth, refreshed.refresh_token,
      { additionalParameters: { token_type_hint: 'refresh_token' } }));
  const apiAfter = await refused(() => oauth.protectedResourceRequest(
    refreshed.access_token, 'GET', payments));
  const refreshAfter = await refused(async () => oauth.processRefreshTokenResponse(as, client,
    await oauth.refreshTokenGrantRequest(as, client, auth, refreshed.refresh_token)));

  // The same code a second time: refused with invalid_grant (RFC 6749 §4.1.2, §5.2).
  const replay = await refused(async () => oauth.processAuthorizationCodeResponse(as, client,
    await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, verifier)));

  console.log(JSON.stringify({ scope: tokens.scope, payments_status: api.status,
    refreshed_scope: refreshed.scope,
    revocation: revocation === undefined ? 'ok' : String(revocation),
    api_after_revocation: apiAfter, refresh_after_revocation: refreshAfter,
    code_replay: replay }));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && (e.stack || e.message) || e) }));
  process.exit(1);
});
