"""OAuth test helpers: a workspace with registered applications, a cookie-keeping browser
stand-in for the authorization pages (forms, no JavaScript), PKCE pairs and the token
endpoint."""

import base64
import hashlib
import html
import re
import secrets
import urllib.parse
import uuid

from conftest import USER_PASSWORD
from helpers import assert_json

AUTHORIZE = "/v1/accounts/auth/oauth/authorize"
TOKEN = "/v1/accounts/auth/oauth/token"
REFRESH = "/v1/accounts/auth/oauth/refresh"
CLIENTS = "/v1/accounts/oauth/clients"
GRANTS = "/v1/accounts/oauth/grants"
COOKIE = "__Host-oauth_session"
APP_URI = "https://app.example/oauth/callback"


def pkce():
    """A fresh (verifier, S256 challenge) pair."""
    verifier = secrets.token_urlsafe(48)[:64]
    return verifier, challenge_of(verifier)


def challenge_of(verifier):
    d = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(d).decode().rstrip("=")


def form(**fields):
    return urllib.parse.urlencode({k: v for k, v in fields.items() if v is not None})


def query_of(location):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query,
                                       keep_blank_values=True))


class Browser:
    """Walks the authorization pages like a browser without script: keeps the cookie, follows
    the pages' own forms."""

    def __init__(self, server):
        self.c = server.client()
        self.cookie = None

    def _headers(self, extra=None):
        h = dict(extra or {})
        if self.cookie:
            h["Cookie"] = "%s=%s" % (COOKIE, self.cookie)
        return h

    def _keep(self, r):
        for sc in r.header_all("Set-Cookie"):
            name, _, rest = sc.partition("=")
            if name == COOKIE:
                self.cookie = rest.split(";")[0]
        return r

    def get(self, path):
        return self._keep(self.c.get(path, headers=self._headers(), token=False))

    def post(self, path, **fields):
        return self._keep(self.c.post(path, body=form(**fields), token=False,
                                      headers=self._headers(),
                                      content_type="application/x-www-form-urlencoded"))

    @staticmethod
    def hidden(page):
        text = page.text if hasattr(page, "text") else page
        found = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', text))
        return {k: html.unescape(v) for k, v in found.items()}


class App:
    """A registered client."""

    def __init__(self, body, secret=None):
        self.body, self.id, self.secret = body, body["id"], secret
        self.redirect_uri = body["redirect_uris"][0]


class Workspace:
    """A workspace with an owner (an administrator, who registers apps) and members."""

    def __init__(self, server):
        self.server = server
        self.owner_email = "owner-%s@example.com" % uuid.uuid4().hex[:10]
        self.wid = server.create_workspace("oauth-" + self.owner_email[6:16], self.owner_email,
                                           password=USER_PASSWORD)
        self.owner_token = self.token(self.owner_email)
        self.owner = server.client(token=self.owner_token)

    def token(self, email):
        return self.server.login(email, USER_PASSWORD, workspace_id=self.wid)["access_token"]

    def member(self, role):
        email = "%s-%s@example.com" % (role, uuid.uuid4().hex[:8])
        self.server.create_user(self.wid, email, role)
        return email

    def register(self, type_="public", uris=(APP_URI,), scopes=("payments:read",
                                                                 "payments:write"), name=None,
                 origins=None):
        body = {"name": name or "App " + uuid.uuid4().hex[:6], "type": type_,
                "redirect_uris": list(uris), "scopes": list(scopes)}
        if origins is not None:
            body["allowed_origins"] = list(origins)
        r = self.owner.post(CLIENTS, json=body)
        body = assert_json(r, 201)
        return App(body, body.get("client_secret"))


def authorize_path(app, challenge, state="st-8f2c", scope=None, redirect_uri=None,
                   method="S256", response_type="code", client_id=None):
    return AUTHORIZE + "?" + form(response_type=response_type,
                                  client_id=app.id if client_id is None else client_id,
                                  redirect_uri=redirect_uri or app.redirect_uri, scope=scope,
                                  state=state, code_challenge=challenge,
                                  code_challenge_method=method)


def sign_in(browser, page, email, password=USER_PASSWORD):
    h = Browser.hidden(page)
    return browser.post(AUTHORIZE + "/sign-in", request_id=h["request_id"], csrf=h["csrf"],
                        email=email, password=password)


def consent(server, app, email, challenge, decision="approve", browser=None, **authz):
    """Signs in (when needed) and decides; the decision's redirect response."""
    b = browser or Browser(server)
    page = b.get(authorize_path(app, challenge, **authz))
    assert page.status == 200, page
    if 'id="sign-in-form"' in page.text:
        r = sign_in(b, page, email)
        assert r.status == 303, r
        page = b.get(r.header("Location"))
        assert page.status == 200 and 'id="consent-form"' in page.text, page
    h = Browser.hidden(page)
    return b.post(AUTHORIZE + "/decision", request_id=h["request_id"], csrf=h["csrf"],
                  decision=decision)


def exchange(client, app, code, verifier, redirect_uri=None, **extra):
    fields = dict(grant_type="authorization_code", code=code, client_id=app.id,
                  redirect_uri=redirect_uri or app.redirect_uri, code_verifier=verifier)
    fields.update(extra)
    return client.post(TOKEN, body=form(**fields), token=False,
                       content_type="application/x-www-form-urlencoded")


def tokens_for(server, ws, app, email, scope=None):
    """The whole flow: a token response (parsed) for email's consent to app."""
    verifier, challenge = pkce()
    r = consent(server, app, email, challenge, scope=scope)
    assert r.status == 302, r
    q = query_of(r.header("Location"))
    secret = {"client_secret": app.secret} if app.secret else {}
    return assert_json(exchange(server.client(), app, q["code"], verifier, **secret), 200)
