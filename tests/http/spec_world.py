"""Valid requests for any operation of the spec, made generically (for the suites by kind,
test_by_kind_*.py): a World is a workspace with its owner (who makes what the requests need) and a
second administrator (the actor, who sends the request under test, so that maker-checker rules
never refuse it); World.prepare(op) builds a request that succeeds: the body is the operation's
own example from the spec, with references to other resources replaced by real ones of this
workspace and the fields that must be unique made fresh; the ids in the path are resources made
for it.

What a request needs is keyed by resource kind (a schema name) or by request schema, never by
operation, so a new operation needs no line here:
- KINDS: how to make a resource of a kind the spec gives no creating POST for (sessions, OAuth
  grants, members), what must hold in the workspace before one is made (payments wait for
  approval only under an approval policy), and the state another resource needs it in when it
  refers to it (a payment's beneficiary is approved).
- BODIES: request bodies whose values only the live server can give (a current TOTP code).
Every other kind is made by the POST on its collection (or the PUT on its id path that
documents 201) with that operation's own example. An operation that cannot be driven this way
is in EXCLUDED (with the reason), which the suites count and print as skipped."""

import datetime
import hashlib
import hmac
import itertools
import json
import re
import struct
import time
import urllib.parse
import uuid
from collections import defaultdict

import pytest

from conftest import USER_PASSWORD, Servers
from helpers import assert_json, jwt_parts
from spec_ops import (BY_ROUTE, ID, OPS, PREFIX_KIND, collection_of, id_path, kind_of, reader_of,
                      resolve)

# The server the suites by kind start: no rate limit in the way, and the settlement worker
# looking once at start-up only (it would otherwise move approved payments along within a second,
# which a suite comparing the tables around a request would take for the request's doing).
SERVER_ENV = {"TREASURY_RATE_LIMIT": 100000000, "TREASURY_SETTLEMENT_INTERVAL_MS": 3600000}

# Operations no generic request reaches, with the reason: the suites count them as skipped.
# (Each suite also skips, with its own reason, the operations its kind does not apply to.)
EXCLUDED = {
    # The OAuth sign-in and consent pages: a form post carrying the sealed request and the CSRF
    # token of the page the browser was shown, with its cookie (tests/http/test_oauth*.py).
    "signIn": "a form post from the OAuth sign-in page (sealed request, CSRF token, cookie)",
    "verifySignIn": "a form post from the OAuth second-factor page (sealed request, cookie)",
    "decideAuthorization": "a form post from the OAuth consent page (sealed request, cookie)",
    # Accounting periods move future -> open -> closing -> closed -> locked, and a made period
    # is future: these need it further along (and in order with its neighbours); each is
    # tested in tests/http/test_ledger_periods.py (If-Match, scopes, audit, other workspaces).
    "softCloseLedgerPeriod": "needs an open period (a made one is future)",
    "closeLedgerPeriod": "needs a closing period, every earlier one closed",
    "lockLedgerPeriod": "needs a closed period",
    "reopenLedgerPeriod": "needs a closing or closed period, no later one closed",
}


class Person:
    """A signed-in member: email, password, user id, access token and a client."""

    def __init__(self, server, email, password, workspace_id):
        self.server, self.email, self.password, self.wid = server, email, password, workspace_id
        self.login = server.login(email, password, workspace_id=workspace_id)
        self.token = self.login["access_token"]
        self.user_id = jwt_parts(self.token)[1]["sub"]
        self.client = server.client(token=self.token)


def fresh(prefix=""):
    return prefix + uuid.uuid4().hex[:12]


def totp(secret_b32, at=None):
    """The RFC 6238 code (SHA-1, 6 digits, 30 s) of a base32 secret."""
    import base64
    key = base64.b32decode(secret_b32.upper() + "=" * (-len(secret_b32) % 8))
    counter = int((time.time() if at is None else at) // 30)
    mac = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    off = mac[-1] & 15
    return "%06d" % ((struct.unpack(">I", mac[off:off + 4])[0] & 0x7FFFFFFF) % 1000000)


# ---- resource kinds -------------------------------------------------------------------------

class Kind:
    def __init__(self, make=None, before=None, ready=None, own=False):
        self.make = make      # fn(world, person) -> object, when no creating operation exists
        self.before = before  # fn(world): what must hold in the workspace first (once)
        self.ready = ready    # fn(world, object) -> object as another resource may refer to it
        self.own = own        # belongs to a person (the caller), not to the workspace


def example_policy(world):
    """Payments wait for approval only under a policy asking for it: the spec's own example
    policy (putApprovalPolicy's example is the only source of one)."""
    op = BY_ROUTE[("PUT", "/payments/approval-policy")]
    assert_json(world.owner.client.put(op.path, json=world.fill(op.body_media[2], world.owner)),
                200)


def approved(world, obj):
    """A beneficiary approved by a member other than its maker (the checker)."""
    op = BY_ROUTE[("PUT", "/beneficiaries/{id}/approve")]
    return assert_json(world.checker.client.put(op.url({"id": obj["id"]})), 200)


def new_session(world, person):
    """Another session of person: a new sign-in."""
    token = world.server.login(person.email, person.password,
                               workspace_id=world.wid)["access_token"]
    return {"id": jwt_parts(token)[1]["sid"]}


def new_grant(world, person):
    """person's consent to a new public OAuth application of the workspace."""
    from oauth_flow import APP_URI, App, tokens_for
    lister, path = collection_of("OauthClient")
    body = {"name": fresh("App "), "type": "public", "redirect_uris": [APP_URI],
            "scopes": ["payments:read"]}
    app = App(assert_json(world.owner.client.post(lister.path, json=body), 201))
    tokens_for(world.server, None, app, person.email)
    grants = BY_ROUTE[("GET", "/accounts/oauth/grants")]
    for g in assert_json(person.client.get(grants.path + "?limit=100"), 200)["data"]:
        if g.get("client_id") == app.id:
            return g
    raise AssertionError("no grant of %s for %s" % (person.email, app.id))


def new_member(world, person=None):
    """A member (and the user it is) added by the operator CLI; the member as listed."""
    p = world.member("viewer")
    lister, _ = collection_of("Member")
    for m in assert_json(world.owner.client.get(lister.path + "?limit=100"), 200)["data"]:
        if m.get("user_id") == p.user_id:
            return m
    raise AssertionError("new member %s not listed" % p.email)


def new_ledger_account(world, person):
    """A top-level ledger account: the spec's example without its parent (which would be
    another ledger account made from the same example, and so on), with a code of its own."""
    op = BY_ROUTE[("POST", "/ledger/accounts")]
    body = world.fill({k: v for k, v in op.body_media[2].items() if k != "parent_id"}, person)
    body = body_ledger_account(world, person, body)
    return assert_json(world.owner.client.post(op.path, json=body), 201)


# The world's journal entries are drafts dated in a period of their own, opened before the
# first one is made (the world's other periods are single future days, and once a workspace
# has periods only an open one takes postings).
JOURNAL_DAY = "2990-06-15"


def open_journal_period(world):
    c = world.owner.client
    made = assert_json(c.post("/v1/ledger/periods", json={
        "name": "world-journals", "fiscal_year": 2990, "start_date": "2990-01-01",
        "end_date": "2990-12-31"}), 201)
    assert_json(c.post("/v1/ledger/periods/%s/open" % made["id"]), 200)


def body_journal(world, person, body):
    """The example entry as a draft (so that it can still be changed, posted or discarded)
    dated in the world's open period, without the example's account_lock_version (the
    world's accounts are new) and with an external_id of its own."""
    body.pop("post", None)
    body["effective_date"] = JOURNAL_DAY
    if "external_id" in body:
        body["external_id"] = "JE-" + fresh()[:12]
    for ln in body.get("lines", []):
        ln.pop("account_lock_version", None)
    return body


def live_rate(world):
    """Quotes price from a live rate: one of EURUSD (the examples' pair) pushed as of now,
    the rate the example quotes."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    assert_json(world.owner.client.post("/v1/rates", json={"rates": [{
        "pair": "EURUSD", "bid": "1.0841500000", "ask": "1.0843500000",
        "as_of": now + "Z", "source": "manual"}]}), 200)


def ensure_before(world, kind):
    """What KINDS says must hold before a resource of kind is made, for a request that makes
    one itself (a body naming what it needs)."""
    if kind not in world._before:
        KINDS[kind].before(world)
        world._before.add(kind)


def posted_entry(world, obj):
    """A world entry (a draft) posted, for the operations that act on posted entries only."""
    return assert_json(world.owner.client.post("/v1/ledger/journals/%s/post" % obj["id"]), 200)


# What an operation's target must be first, beyond being made (operationId -> fn(world, obj)
# -> obj): its kind's made state does not suit it.
def paused_alert(world, obj):
    """A world rate alert (active) paused, for resuming."""
    return assert_json(world.owner.client.post("/v1/rates/alerts/%s/pause" % obj["id"]), 200)


TARGET_READY = {
    "reverseJournalEntry": posted_entry,
    "resumeRateAlert": paused_alert,
}


def body_reversal(world, person, body):
    """The reversal dated in the world's open period (the example's date may be in none)."""
    body["effective_date"] = JOURNAL_DAY
    return body


# A rate's "id" is its pair, which every workspace may have: each one the world makes is a pair
# of its own, so that another workspace's never names one this workspace has.
_FX_CODES = ["SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "ZAR", "MXN", "SGD", "HKD", "NZD", "TRY",
             "ILS", "INR", "KRW", "THB", "BRL", "CLP", "PHP", "IDR", "MYR", "TWD", "RON", "ISK"]
_FX_PAIRS = itertools.cycle([a + b for a in _FX_CODES for b in _FX_CODES if a != b])


def new_fx_rate(world, person):
    """A live rate of a pair of its own, pushed now (there is no creating POST: a push)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    at = now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)
    body = {"rates": [{"pair": next(_FX_PAIRS), "bid": "1.25", "ask": "1.26", "as_of": at}]}
    return assert_json(world.owner.client.post("/v1/rates", json=body), 200)["data"][0]


KINDS = {
    "FxRate": Kind(make=new_fx_rate),
    "FxQuote": Kind(before=live_rate),
    "JournalEntry": Kind(before=open_journal_period),
    "Payment": Kind(before=example_policy),
    "PaymentBatch": Kind(before=example_policy),
    "Beneficiary": Kind(ready=approved),
    "LedgerAccount": Kind(make=new_ledger_account),
    "Session": Kind(make=new_session, own=True),
    "OauthGrant": Kind(make=new_grant, own=True),
    "Member": Kind(make=new_member),
    "User": Kind(make=new_member),
}


# ---- request bodies the live server fills ---------------------------------------------------

def mfa_enrolled(world, person):
    """Starts person's MFA enrolment; the secret."""
    op = BY_ROUTE[("POST", "/accounts/mfa/enroll")]
    r = person.client.post(op.path, json={"current_password": person.password})
    body = assert_json(r, 201)
    return body["secret"]


def body_mfa_code(world, person, body):
    body["code"] = totp(mfa_enrolled(world, person))
    return body


def body_mfa_proof(world, person, body):
    secret = mfa_enrolled(world, person)
    op = BY_ROUTE[("POST", "/accounts/mfa/confirm")]
    assert_json(person.client.post(op.path, json={"code": totp(secret)}), 200)
    body["code"] = totp(secret, time.time() + 30)  # the next step: the last one is spent
    return body


def body_login(world, person, body):
    body.update(email=person.email, password=person.password)
    return body


def body_refresh(world, person, body):
    """A refresh token of a new sign-in of person (refreshing rotates it)."""
    body["refresh_token"] = world.server.login(person.email, person.password,
                                               workspace_id=world.wid)["refresh_token"]
    return body


def public_app(world):
    from oauth_flow import APP_URI, App
    lister, _ = collection_of("OauthClient")
    body = {"name": fresh("App "), "type": "public", "redirect_uris": [APP_URI],
            "scopes": ["payments:read"]}
    return App(assert_json(world.owner.client.post(lister.path, json=body), 201))


def body_token(world, person, body):
    """An authorization code person's consent to a new public application gives."""
    from oauth_flow import consent, pkce, query_of
    app = public_app(world)
    verifier, challenge = pkce()
    r = consent(world.server, app, person.email, challenge)
    assert r.status == 302, r
    body.update(code=query_of(r.header("Location"))["code"], client_id=app.id,
                redirect_uri=app.redirect_uri, code_verifier=verifier)
    return body


def body_revocation(world, person, body):
    """The refresh token a new public application holds for person."""
    from oauth_flow import tokens_for
    app = public_app(world)
    body.update(token=tokens_for(world.server, None, app, person.email)["refresh_token"],
                client_id=app.id)
    return body


def invitation(world, email, inviter):
    op = BY_ROUTE[("POST", "/admin/users/invite")]
    inv = assert_json(inviter.post(op.path, json={"email": email, "role": "viewer"}), 201)
    return world.server.invitation_token(inv["id"])


def body_acceptance(world, person, body):
    """An invitation of person to another workspace (they are a member of this one)."""
    _, _, other = world.server.new_workspace()
    body["invitation_token"] = invitation(world, person.email, other)
    return body


def body_signup(world, person, body):
    """An invitation of a new e-mail address to this workspace."""
    body["invitation_token"] = invitation(world, fresh("new-") + "@example.com",
                                          world.owner.client)
    return body


def body_ledger_account(world, person, body):
    """A code no ledger account of the workspace has (unique, archived accounts included)."""
    body["code"] = fresh()[:10]
    return body


PERIOD_DAYS = itertools.count()


def body_period(world, person, body):
    """Periods never overlap: each made one is a day of its own, far in the future, each
    before the last (so no period made later is ever an earlier one that is not closed)."""
    day = datetime.date(2999, 12, 31) - datetime.timedelta(days=next(PERIOD_DAYS))
    body.update(start_date=day.isoformat(), end_date=day.isoformat(), fiscal_year=day.year)
    return body


def body_ledger_settings(world, person, body):
    """The example's posting settings without bank accounts (the server keeps none yet, so
    any `bank_account_id` is not found) and, while the chart of accounts is not built (no
    `lac_` kind to make), without mappings."""
    posting = body["payment_posting"]
    for m in posting["cash_accounts"]:
        m.pop("bank_account_id", None)
    if "lac" not in PREFIX_KIND:
        posting["cash_accounts"], posting["payee_clearing_accounts"] = [], []
    return body


def body_fx_quote(world, person, body):
    """The example quote at the pair's spot date (the example's value date is in the past),
    with the live rate it prices from."""
    ensure_before(world, "FxQuote")
    body.pop("value_date", None)
    return body


def body_fx_execute(world, person, body):
    """The terms of a quote of its own (a quote is executed once)."""
    q = world.make("FxQuote")
    body.update({k: q[k] for k in ("sell_currency", "buy_currency", "sell_amount",
                                   "buy_amount", "value_date")}, quote_id=q["id"])
    return body


def body_workspace(world, person, body):
    """The example profile with a slug of its own: slugs are unique across the service, and
    every world of a server changes its workspace's."""
    body["slug"] = fresh("kind-")
    return body


def body_rate_push(world, person, body):
    """Pushed rates are observed now: the example's as_of is long past the 7 days a push
    accepts (as_of_too_old)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    at = now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)
    for r in body["rates"]:
        r["as_of"] = at
    return body


def body_rate_curve(world, person, body):
    """A fresh name: two prepared bodies differ (the idempotency suite sends another)."""
    body["name"] = "curve " + fresh()[:12]
    return body


ECB_DAYS = itertools.count()


def body_ecb_file(world, person, body):
    """The example ECB file with a publication date of its own (a day of 2001 on), so two
    prepared files differ and each import adds a publication."""
    day = datetime.date(2001, 1, 1) + datetime.timedelta(days=next(ECB_DAYS))
    return re.sub(r'time="\d{4}-\d{2}-\d{2}"', 'time="%s"' % day.isoformat(), body)


# Raw (non-JSON) request bodies by operation: their schema is an inline string.
RAW_BODIES = {
    "importReferenceRates": body_ecb_file,
}


def body_rate_alert(world, person, body):
    """The example's expires_at has passed: a month from now instead (in the future, at most
    366 days ahead)."""
    if "expires_at" in body:
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=30)
        body["expires_at"] = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return body


BODIES = {
    "FxQuoteCreate": body_fx_quote,
    "FxConversionExecute": body_fx_execute,
    "WorkspaceUpdate": body_workspace,
    "FxRatePushBatch": body_rate_push,
    "RateCurveCreate": body_rate_curve,
    "RateCurveUpdate": body_rate_curve,
    "RateAlertCreate": body_rate_alert,
    "RateAlertUpdate": body_rate_alert,
    "LedgerPeriodCreate": body_period,
    "JournalEntryCreate": body_journal,
    "JournalEntryUpdate": body_journal,
    "JournalReversal": body_reversal,
    "LedgerSettingsUpdate": body_ledger_settings,
    "MfaCode": body_mfa_code,
    "MfaProof": body_mfa_proof,
    "LoginRequest": body_login,
    "RefreshRequest": body_refresh,
    "TokenRequest": body_token,
    "RevocationRequest": body_revocation,
    "InvitationAcceptance": body_acceptance,
    "CompleteSignupRequest": body_signup,
    "LedgerAccountCreate": body_ledger_account,
}


# ---- the world ------------------------------------------------------------------------------

class Call:
    """A prepared request: op, who sends it, its URL, body and the resources in its path."""

    def __init__(self, op, caller, values, body, media, targets, headers=None):
        self.op, self.caller, self.values = op, caller, values
        self.body, self.media, self.targets = body, media, targets
        self.headers = headers or {}
        self.url = op.url(values)

    def encoded(self, body=None):
        body = self.body if body is None else body
        if body is None:
            return None
        if self.media == "application/x-www-form-urlencoded":
            return urllib.parse.urlencode(body).encode()
        if isinstance(body, str):  # a raw body (application/xml, text/plain, text/csv)
            return body.encode()
        return json.dumps(body).encode()

    def send(self, client=None, headers=None, body=None, url=None, token=None):
        c = client or self.caller.client
        raw = self.encoded(body)
        hdrs = dict(self.headers)
        hdrs.update(headers or {})
        return c.request(self.op.method, url or self.url, body=raw, headers=hdrs,
                         token=token, content_type=self.media if raw is not None else None)


class World:
    """One workspace: its owner, a second administrator (the actor, who sends the requests
    under test) and an approver (the checker, who approves what the owner made)."""

    def __init__(self, server):
        self.server = server
        self.owner_email = fresh("owner-") + "@example.com"
        self.wid = server.create_workspace(fresh("kind-"), self.owner_email,
                                           password=USER_PASSWORD)
        self.owner = Person(server, self.owner_email, USER_PASSWORD, self.wid)
        self.actor = self.member("admin")
        self._checker = None
        self.made = defaultdict(list)  # kind -> the objects made of it, oldest first
        self._before = set()
        self._refs = {}  # kind -> the ready object references use

    @property
    def checker(self):
        if self._checker is None:
            self._checker = self.member("approver")
        return self._checker

    def member(self, role):
        email = fresh(role + "-") + "@example.com"
        self.server.create_user(self.wid, email, role)
        return Person(self.server, email, USER_PASSWORD, self.wid)

    # -- resources
    def make(self, kind, person=None, given=None):
        """A new resource of kind in this workspace (for person, when it belongs to one);
        given: path values already chosen (a token is made under the account in the path)."""
        spec = KINDS.get(kind, Kind())
        if spec.before and kind not in self._before:
            spec.before(self)
            self._before.add(kind)
        if spec.make:
            obj = spec.make(self, person or self.actor)
        else:
            obj = self.make_by_spec(kind, given or {})
        self.made[kind].append(obj)
        return obj

    def make_by_spec(self, kind, given):
        lister, path = collection_of(kind)
        creator = BY_ROUTE.get(("POST", path)) if path else None
        if path and (creator is None or not creator.documents(201)):
            creator = next((o for o in OPS if o.method == "PUT" and o.documents(201) and
                            o.spec_path.startswith(path + "/{") and
                            o.spec_path.count("/") == path.count("/") + 1), None)
        if creator is None:  # a kind nothing lists: the POST that answers 201 with one
            creator = next((o for o in OPS if o.method == "POST" and
                            o.response_kind(201) == kind), None)
        assert creator is not None, "nothing creates a %s: add it to KINDS" % kind
        call = self.prepare(creator, caller=self.owner, new_keys=True, given=given)
        r = call.send()
        return assert_json(r, 201)

    def makeable(self, kind):
        """Whether make(kind) can make one (no: a payment's events, made by its changes)."""
        if KINDS.get(kind, Kind()).make:
            return True
        lister, path = collection_of(kind)
        return bool((path and (BY_ROUTE.get(("POST", path)) or any(
            o.method == "PUT" and o.documents(201) and o.spec_path.startswith(path + "/{")
            for o in OPS))) or any(o.method == "POST" and o.response_kind(201) == kind
                                   for o in OPS))

    def view(self, op, values, person=None):
        """What this workspace sees of the resources in op's path: each one's GET (status,
        body, ETag) or, for a kind without one, its entry in its collection's list."""
        client = (person or self.actor).client
        out = []
        for name in op.path_params:
            at = id_path(op, name)
            getter = BY_ROUTE.get(("GET", at))
            if getter is not None:
                r = client.get(getter.url(values))
                out.append((r.status, r.body, r.header("ETag")))
                continue
            lister = BY_ROUTE[("GET", at[:at.rindex("/")])]
            r = client.get(lister.full_page(lister.url(values)))
            page = assert_json(r, 200)["data"]
            out.append([item for item in page if values[name] in item.values()])
        return out

    def ref(self, kind):
        """The resource of kind that request bodies refer to (made once, in its ready state)."""
        if kind not in self._refs:
            obj = self.make(kind, self.owner)
            ready = KINDS.get(kind, Kind()).ready
            self._refs[kind] = ready(self, obj) if ready else obj
        return self._refs[kind]

    @staticmethod
    def ident(obj, pattern):
        """The field of obj that identifies it in a path whose parameter has pattern."""
        for v in obj.values():
            if isinstance(v, str) and re.fullmatch(pattern, v):
                return v
        raise AssertionError("nothing in %r matches %s" % (obj, pattern))

    # -- bodies
    def fill(self, value, person):
        """The example value with references made real and unique fields made fresh."""
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k == "external_id" and isinstance(v, str):
                    out[k] = fresh("ext-")
                elif k == "email" and isinstance(v, str):
                    out[k] = fresh("someone-") + "@example.com"
                elif k == "current_password" and isinstance(v, str):
                    out[k] = person.password
                elif k == "name" and isinstance(v, str):
                    out[k] = v[:max(1, 40 - 9)] + " " + fresh()[:8]
                else:
                    out[k] = self.fill(v, person)
            return out
        if isinstance(value, list):
            return [self.fill(v, person) for v in value]
        if isinstance(value, str):
            m = ID.match(value)
            if m and m.group(1) in PREFIX_KIND:
                kind = PREFIX_KIND[m.group(1)]
                return self.ident(self.ref(kind), r"[a-z]{2,8}_[0-9a-z]{26}")
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
                return datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        return value

    # -- requests
    def caller_for(self, op):
        """Who sends op: the actor; a fresh member for a write on the caller's own account
        (x-any-scope: sessions, MFA, password), which may end the caller's sessions."""
        if op.any_scope and op.write:
            return self.member("admin")
        return self.actor

    def prepare(self, op, caller=None, new_keys=False, given=None):
        """A Call of op that succeeds: made resources in the path, the example body filled.
        new_keys: a PUT that creates gets a new key; given: path values chosen already."""
        assert op.id not in EXCLUDED, op.id
        caller = caller or self.caller_for(op)
        values, targets = {}, {}
        for name in op.path_params:
            param = next(p for p in op.params_in("path") if p["name"] == name)
            pattern = resolve(param["schema"]).get("pattern", ".+").strip("^$")
            kind = kind_of(op, name)
            if given and name in given:
                values[name] = given[name]
                continue
            if new_keys and op.method == "PUT" and id_path(op, name) == op.spec_path:
                example = str(param.get("example"))
                v = example + "_" + fresh()[:8]
                assert re.fullmatch(pattern, v), (v, pattern)
                values[name] = v
                continue
            spec = KINDS.get(kind, Kind())
            obj = self.make(kind, caller if spec.own else None, given=values)
            if op.id in TARGET_READY and name == op.path_params[-1]:
                obj = TARGET_READY[op.id](self, obj)
            targets[name] = obj
            values[name] = self.ident(obj, pattern)
        media = op.body_media
        body = None
        if media:
            body = self.fill(media[2], caller)
            schema = media[1].get("$ref", "").split("/")[-1]
            if schema in BODIES:
                body = BODIES[schema](self, caller, body)
            if isinstance(body, str) and op.id in RAW_BODIES:
                body = RAW_BODIES[op.id](self, caller, body)
        headers = {}
        if op.if_match_required:
            headers["If-Match"] = self.etag(op, values, caller)
        return Call(op, caller, values, body, media[0] if media else None, targets, headers)

    def etag(self, op, values, person=None):
        """The current ETag of what op writes: its reader's answer or, for a kind with no GET
        of its own, `"v<version>"` (the form If-Match documents) of its entry in its list."""
        client = (person or self.actor).client
        reader = reader_of(op)
        if reader is not None:
            r = client.get(reader.url(values))
            assert_json(r, 200)
            return r.header("ETag")
        entry = self.view(op, values, person)[-1]
        assert isinstance(entry, list) and len(entry) == 1, \
            "%s: no GET shows what it writes, and no list entry: %r" % (op.id, entry)
        return '"v%d"' % entry[0]["version"]


# ---- fixtures the suites by kind import (one server per module, its worlds) -----------------

@pytest.fixture(scope="module")
def server(tmp_path_factory, server_bin):
    """The suites by kind also check every answer against the spec: the server must be a test
    build (build/check or build/san), which validates each response and logs a violation
    (conftest fails on it). Such a build has the settable clock (the Makefile defines both
    together), which is what is looked for."""
    servers = Servers(tmp_path_factory)
    s = servers(extra_env=SERVER_ENV)
    if not (s.data_dir / "test-clock-offset").exists():
        servers.close()
        pytest.fail("%s is a release build: it does not check its answers against the spec; "
                    "run the suites by kind on build/check/treasury-server" % server_bin,
                    pytrace=False)
    yield s
    servers.close()


@pytest.fixture(scope="module")
def world(server):
    return World(server)


@pytest.fixture(scope="module")
def worlds(server):
    """Two workspaces: the first's resources, the second's requests."""
    return World(server), World(server)
