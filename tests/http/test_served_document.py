"""The served document (GET /v1/openapi.json) against the running server, as a client tool
reads it: the oauth2 scheme's flow works at the URLs it names, and its `security` tells an
application's token where it is accepted (an operation listing the oauth2 alternative) and
where it is not (x-first-party operations, workspace:admin ones); X-Request-ID and
Idempotency-Key are declared where the runtime honours them; a 403 declares
WWW-Authenticate as optional, since only insufficient_scope carries it."""

import urllib.parse
import uuid

import pytest

from helpers import assert_json, assert_problem, create_beneficiary
from oauth_flow import AUTHORIZE, TOKEN, Workspace, tokens_for

METHODS = ("get", "put", "post", "patch", "delete")


@pytest.fixture(scope="module")
def doc(server):
    return assert_json(server.client().get("/v1/openapi.json"), 200)


def operations(doc):
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def param_names(doc, op):
    out = []
    for p in op.get("parameters", []):
        if "$ref" in p:
            p = doc["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]]
        out.append((p["in"], p["name"]))
    return out


def test_the_oauth2_flow_runs_at_the_urls_the_document_names(server, doc):
    scheme = doc["components"]["securitySchemes"]["oauth2"]
    flow = scheme["flows"]["authorizationCode"]
    # relative to the server: what Swagger UI and Postman resolve them to
    assert urllib.parse.urljoin(server.base + "/v1/", flow["authorizationUrl"]) == \
        server.base + AUTHORIZE
    assert urllib.parse.urljoin(server.base + "/v1/", flow["tokenUrl"]) == server.base + TOKEN
    assert flow["refreshUrl"] == flow["tokenUrl"]
    meta = assert_json(server.client().get("/.well-known/oauth-authorization-server"), 200)
    # the flow offers exactly what the authorization server grants applications
    withheld = set(scheme["x-withheld-scopes"])
    assert {"workspace:admin", "transfers:sign"} <= withheld
    assert set(flow["scopes"]) == set(doc["x-scopes"]) - withheld == \
        set(meta["scopes_supported"])
    assert meta["authorization_endpoint"] == server.base + AUTHORIZE
    assert meta["token_endpoint"] == server.base + TOKEN
    assert sorted(meta["scopes_supported"]) == sorted(flow["scopes"])


def test_an_applications_token_is_accepted_exactly_where_security_lists_oauth2(server, doc):
    ws = Workspace(server)
    app = ws.register(scopes=sorted(doc["components"]["securitySchemes"]["oauth2"]["flows"]
                                    ["authorizationCode"]["scopes"]))
    tok = tokens_for(server, ws, app, ws.owner_email)["access_token"]
    c = server.client(token=tok)
    checked = 0
    for path, method, op in operations(doc):
        if method != "get" or "{" in path or not op["security"] or op.get("x-status"):
            continue
        schemes = [next(iter(r)) for r in op["security"]]
        r = c.get("/v1" + path)
        if "oauth2" in schemes:  # accepted: what it answers then is the operation's own
            # (GET /rates/reference is 404 until a publication was imported)
            assert r.status < 500 and r.status not in (401, 403), (path, r.status, r.text[:300])
            if r.status != 200:
                assert_problem(r, 404, "not_found")
        else:
            assert_problem(r, 403, "insufficient_scope")
            assert r.header("WWW-Authenticate", "").startswith("Bearer "), path
        checked += 1
    assert checked >= 8


def test_x_request_id_everywhere_and_idempotency_key_where_a_retry_is_replayed(server, doc):
    for path, method, op in operations(doc):
        names = param_names(doc, op)
        assert ("header", "X-Request-ID") in names, (method, path)
        idem = ("header", "Idempotency-Key") in names
        assert idem == (method in ("post", "put", "patch") and op.get("x-idempotent", True)
                        and op["security"] != []), (method, path)
    # the runtime honours what is declared: a key that is not a UUID is refused on POST
    # /v1/beneficiaries (declared there) and ignored on GET /v1/workspace (not declared)
    c = server.admin_client()
    r = c.post("/v1/beneficiaries", json={}, headers={"Idempotency-Key": "not-a-uuid"})
    assert_problem(r, 400, "invalid_request")
    assert c.get("/v1/workspace", headers={"Idempotency-Key": "not-a-uuid"}).status == 200
    rid = str(uuid.uuid4())
    assert c.get("/v1/workspace", headers={"X-Request-ID": rid}).header("X-Request-ID") == rid


def resolved(doc, node, section):
    if "$ref" in node:
        return doc["components"][section][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_a_403_declares_www_authenticate_as_optional_and_a_business_refusal_has_none(server,
                                                                                  doc):
    """RFC 6750 §3: the challenge comes with insufficient_scope only; a business rule's 403
    (self_approval, maker_cannot_approve, ...) has none. So every 403 of the document
    declares WWW-Authenticate with required: false, and a client generated from it does not
    fail on a 403 without it."""
    seen = 0
    for path, method, op in operations(doc):
        if "403" not in op["responses"]:
            continue
        resp = resolved(doc, op["responses"]["403"], "responses")
        header = resp.get("headers", {}).get("WWW-Authenticate")
        assert header is not None, (method, path)
        assert resolved(doc, header, "headers").get("required") is False, (method, path)
        seen += 1
    assert seen > 200
    # approving the beneficiary one created yourself: 403 self_approval, without a challenge
    c = server.admin_client()
    ben = create_beneficiary(c, external_id=None)
    r = c.put("/v1/beneficiaries/%s/approve" % ben["id"])
    assert_problem(r, 403, "self_approval")
    assert r.header("WWW-Authenticate") is None, r.header("WWW-Authenticate")
    # (an insufficient_scope 403 has one: asserted in the oauth2 test above)
