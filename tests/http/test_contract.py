"""The whole contract is in the spec (issue 19): every sample operation the service contract
names is in the served document with that method and path, tagged with the API the contract
puts it in; and every operation the spec marks `x-status: planned` answers 501
`not_implemented` with a problem document naming the operation, for a caller holding every
scope, while built operations never do. The planned list comes from the served spec, so an
operation that gets built leaves it by itself."""

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = json.loads((REPO / "generated" / "openapi.json").read_text())
METHODS = ("get", "put", "post", "delete", "patch")

# (API tag, method, path below /v1): the sample operations of the contract, verbatim.
CONTRACT = [
    ("accounts", "post", "/api/login"),
    ("accounts", "post", "/api/complete-signup"),
    ("accounts", "get", "/auth/oauth/callback"),
    ("accounts", "post", "/accounts/auth/oauth/token"),
    ("accounts", "post", "/accounts/auth/oauth/refresh"),
    ("payments", "get", "/payments"),
    ("payments", "post", "/payments"),
    ("payments", "put", "/payments/{id}/approve"),
    ("rates", "get", "/rates"),
    ("rates", "get", "/rates/{pair}/history"),
    ("rates", "post", "/rates/alerts"),
    ("banking", "get", "/connections"),
    ("banking", "get", "/accounts/{id}/balance"),
    ("banking", "get", "/accounts/{id}/transactions"),
    ("ledger", "get", "/ledger/accounts"),
    ("ledger", "post", "/ledger/journals"),
    ("ledger", "get", "/ledger/trial-balance"),
    ("reporting", "get", "/reports"),
    ("reporting", "post", "/reports/generate"),
    ("reporting", "post", "/reports/schedule"),
    ("audit", "get", "/audit/events"),
    ("audit", "get", "/audit/events/{id}/timeline"),
    ("audit", "post", "/audit/reports"),
    ("integrations", "get", "/integrations"),
    ("integrations", "post", "/integrations"),
    ("integrations", "post", "/webhooks"),
    ("conversions", "post", "/conversions/quote"),
    ("conversions", "post", "/conversions/execute"),
    ("conversions", "get", "/conversions/positions"),
    ("transfers", "post", "/transfers"),
    ("transfers", "post", "/transfers/{id}/sign"),
    ("transfers", "get", "/counterparties"),
    ("analytics", "post", "/insights/query"),
    ("analytics", "get", "/forecasts/cashflow"),
    ("analytics", "get", "/anomalies"),
    ("workspace", "get", "/workspace"),
    ("workspace", "get", "/workspace/members"),
    ("workspace", "put", "/workspace/settings"),
    ("admin", "get", "/admin/users"),
    ("admin", "post", "/admin/users/invite"),
    ("admin", "put", "/admin/roles/{id}"),
    ("scheduling", "get", "/schedules"),
    ("scheduling", "post", "/schedules"),
    ("scheduling", "post", "/schedules/{id}/run"),
    ("sheets", "get", "/sheets"),
    ("sheets", "post", "/sheets"),
    ("sheets", "get", "/sheets/{id}/cells"),
]

CONTRACT_APIS = {"accounts", "payments", "rates", "banking", "ledger", "reporting", "audit",
                 "integrations", "conversions", "transfers", "analytics", "workspace", "admin",
                 "scheduling", "sheets"}


def operations():
    for path, item in SPEC["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def planned():
    return [(p, m, op) for p, m, op in operations() if op.get("x-status") == "planned"]


def concrete(path, op):
    """The path with each parameter replaced by a value its schema accepts, or a plausible id."""
    params = {p["name"]: p for p in op.get("parameters", []) if p.get("in") == "path"}

    def value(m):
        name = m.group(1)
        schema = params.get(name, {}).get("schema", {})
        if "$ref" in schema:
            schema = SPEC["components"]["schemas"][schema["$ref"].split("/")[-1]]
        if "example" in params.get(name, {}):
            return str(params[name]["example"])
        if "example" in schema:
            return str(schema["example"])
        if "enum" in schema:
            return str(schema["enum"][0])
        return "xyz_01jq57rhym4n0qhqtvs6hcx1jr"
    return re.sub(r"\{([^}]+)\}", value, path)


@pytest.mark.parametrize("api,method,path", CONTRACT,
                         ids=["%s %s" % (m.upper(), p) for _, m, p in CONTRACT])
def test_every_contract_sample_operation_is_in_the_served_spec(api, method, path):
    item = SPEC["paths"].get(path)
    assert item is not None and method in item, "%s %s missing from the spec" % (method, path)
    assert item[method]["tags"] == [api]


def test_every_api_of_the_contract_has_a_tag_and_operations():
    tags = {t["name"] for t in SPEC["tags"]}
    assert CONTRACT_APIS <= tags
    used = {op["tags"][0] for _, _, op in operations()}
    assert CONTRACT_APIS <= used, sorted(CONTRACT_APIS - used)


def test_planned_operations_are_documented_as_501():
    for path, method, op in planned():
        assert "501" in op["responses"], (method, path)
    assert planned(), "nothing planned: drop this test's 501 half when all is built"


def test_built_operations_do_not_document_501():
    """Only a planned operation's dispatcher answers 501: a built one listing it (rates, ledger
    and conversions did after they were built) tells clients and /docs something false."""
    built = [(p, m) for p, m, op in operations() if op.get("x-status") != "planned"]
    assert [(m, p) for p, m in built if "501" in SPEC["paths"][p][m]["responses"]] == []
    assert len(built) > 100


# Paths of repository files: at least one folder, a file name with an extension we keep, not
# the tail of a URL or of an absolute path (/v1/openapi.json is the served URL, not a file).
REPO_PATH = re.compile(r"(?<![\w/.:~-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*/[\w.-]+"
                       r"\.(?:c|h|py|md|yaml|yml|json|sql|mjs|js|ts|j2|css|sh|txt))(?![\w/])")


def repository_paths(text):
    return REPO_PATH.findall(text)


def descriptions(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                yield v
            else:
                yield from descriptions(v)
    elif isinstance(node, list):
        for v in node:
            yield from descriptions(v)


def test_every_file_a_description_names_is_in_the_repository():
    """A client reading the served document (or /docs) may follow a file it names: it must be
    one of this repository's, not a design note elsewhere."""
    assert repository_paths("see `codegen/docs.py`, ../shared/design/contract.md and "
                            "GET /v1/openapi.json or https://x.example/a/b.json") == \
        ["codegen/docs.py", "../shared/design/contract.md"]
    named = {p for d in descriptions(SPEC) for p in repository_paths(d)}
    assert named, "no description names a file: keep the check honest by testing it"
    for p in sorted(named):
        full = (REPO / p).resolve()
        assert full.is_relative_to(REPO) and full.is_file(), p


def test_the_served_spec_is_the_generated_one(server):
    r = server.client().get("/v1/openapi.json")
    assert r.status == 200
    assert r.json() == SPEC


def test_planned_operations_answer_501_naming_the_operation(server):
    c = server.client(token=server.token)
    seen = 0
    for path, method, op in planned():
        full = ("/v1" + concrete(path, op)) if not path.startswith("/.well-known") else path
        r = c.request(method.upper(), full, json={} if method in ("post", "put", "patch")
                      else None)
        assert r.status == 501, (method, path, r.status, r.body[:300])
        assert r.headers["content-type"].startswith("application/problem+json")
        body = r.json()
        assert body["code"] == "not_implemented" and body["status"] == 501
        assert op["operationId"] in body["detail"], body
        seen += 1
    assert seen == len(planned())


def test_contract_operations_that_are_built_do_not_answer_501(server):
    """Every built operation of the contract's list is dispatched to its handler: called with
    its path parameters filled in and, for a write, an empty JSON object as its body, it may
    answer anything (a refusal of the empty body, 404 for an unknown id) but 501."""
    c = server.client(token=server.token)
    tried = 0
    for api, method, path in CONTRACT:
        op = SPEC["paths"][path][method]
        if op.get("x-status") == "planned":
            continue
        r = c.request(method.upper(), "/v1" + concrete(path, op),
                      json={} if "requestBody" in op else None)
        assert r.status != 501, (method, path, r.status, r.body[:300])
        tried += 1
    assert tried >= 20


def test_the_not_implemented_example_is_what_the_server_sends(server):
    """The shared 501 response's example is a real answer: the planned operation its detail
    names, requested, answers that problem (type, title, status, detail, instance, code)."""
    ex = SPEC["components"]["responses"]["NotImplemented"]["content"][
        "application/problem+json"]["example"]
    m = re.fullmatch(r"([A-Z]+) (/v1(/\S*)) \((\w+)\) is planned and not built yet\.",
                     ex["detail"])
    assert m, ex["detail"]
    method, full, path, oid = m.groups()
    op = SPEC["paths"][path][method.lower()]
    assert op["operationId"] == oid and op.get("x-status") == "planned"
    r = server.client(token=server.token).request(method, full)
    body = r.json()
    assert r.status == 501
    for k in ("type", "title", "status", "detail", "instance", "code"):
        assert body[k] == ex[k], k


def test_readme_table_of_apis_tells_what_is_built():
    """README.md's table of the fifteen APIs (built and planned counts) matches the spec, so the
    first page a newcomer reads stays true as operations get built."""
    counts = {}
    for _, _, op in operations():
        counts.setdefault(op["tags"][0], [0, 0])
        counts[op["tags"][0]][1 if op.get("x-status") == "planned" else 0] += 1
    text = (REPO / "README.md").read_text()
    rows = re.findall(r"^\| (\w+)[^|]*\| `(\w+)\.yaml` \| (\d+) \| (\d+) \|$", text, re.M)
    assert {r[0] for r in rows} == CONTRACT_APIS
    for tag, stem, built, planned_n in rows:
        assert stem == tag and counts[tag] == [int(built), int(planned_n)], (tag, counts[tag])
