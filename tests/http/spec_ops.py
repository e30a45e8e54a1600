"""The operations of the spec as the spec-driven suites see them (test_malformed.py and the
suites by kind, test_by_kind_*.py): every implemented operation (not `x-status: planned`) of every
API, read from generated/openapi.json (the document the server serves: test_contract.py checks
that they are the same), with what a suite needs to know about it: its scopes, whether it is
idempotent, documents If-Match or a status, lists a page, takes ids and of which resource kind.
A resource kind is a schema name (`Beneficiary`, `Member`, ...): the one an id-path's GET (or
PUT) answers, or the items of the collection's list. Nothing here names an operation."""

import datetime
import json
import re
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = json.loads((REPO / "generated" / "openapi.json").read_text())
SCHEMAS = SPEC["components"]["schemas"]
METHODS = ("get", "put", "post", "delete", "patch")
WRITES = ("POST", "PUT", "PATCH", "DELETE")
ID = re.compile(r"^([a-z]{2,8})_[0-9a-z]{26}$")


def ref_name(node):
    return node["$ref"].split("/")[-1] if isinstance(node, dict) and "$ref" in node else None


def deref(node, section):
    """node, or the components/<section> entry its $ref names."""
    name = ref_name(node)
    return SPEC["components"][section][name] if name else node


def resolve(node, seen=()):
    """node with $ref and allOf resolved (recursively for properties and items)."""
    if isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].split("/")[-1]
        if name in seen:
            return {}
        return resolve(SCHEMAS[name], seen + (name,))
    if isinstance(node, dict) and "allOf" in node:
        merged = {"type": "object", "properties": {}, "required": []}
        for part in node["allOf"]:
            p = resolve(part, seen)
            merged["properties"].update(p.get("properties", {}))
            merged["required"] += p.get("required", [])
            for k in ("additionalProperties",):
                if k in p:
                    merged[k] = p[k]
        return merged
    return node


def resolve_param(p):
    return deref(p, "parameters")


def item_kind(schema_name):
    """The schema of a page's (or list's) items: `BeneficiaryPage` -> `Beneficiary`."""
    data = resolve({"$ref": "#/components/schemas/" + schema_name}).get("properties", {}) \
        .get("data", {}) if schema_name else {}
    return ref_name(data.get("items", {})) if data.get("type") == "array" else None


class Op:
    def __init__(self, path, method, item, op):
        self.id = op["operationId"]
        self.method = method.upper()
        self.spec_path = path
        base = "" if item.get("servers", [{}])[0].get("url") == "/" else "/v1"
        self.path = base + path
        self.op = op
        self.params = [resolve_param(p) for p in item.get("parameters", []) +
                       op.get("parameters", [])]
        security = op.get("security") or []
        self.public = not security
        self.scopes = sorted({s for req in security for s in req.get("bearerAuth", [])})
        self.any_scope = bool(op.get("x-any-scope"))
        self.first_party = bool(op.get("x-first-party"))
        self.write = self.method in WRITES
        self.idempotent = op.get("x-idempotent", self.method in ("POST", "PUT", "PATCH"))
        self.replay = op.get("x-replay", True)
        self.statuses = set(op["responses"])
        self.audit = op.get("x-audit")

    def __repr__(self):
        return "<%s %s %s>" % (self.id, self.method, self.path)

    def documents(self, status):
        return str(status) in self.statuses

    def params_in(self, where):
        return [p for p in self.params if p["in"] == where]

    @property
    def path_params(self):
        return [p["name"] for p in self.params_in("path")]

    @property
    def is_list(self):
        """A list operation: it takes `limit` and `cursor`."""
        names = {p["name"] for p in self.params_in("query")}
        return self.method == "GET" and {"limit", "cursor"} <= names

    @property
    def limit_bounds(self):
        """(minimum, maximum) of a list operation's `limit`."""
        p = next(p for p in self.params_in("query") if p["name"] == "limit")
        s = resolve(p["schema"])
        return s["minimum"], s["maximum"]

    def full_page(self, url):
        """url asking for the largest page, for a list operation."""
        if not self.is_list:
            return url
        return url + ("&" if "?" in url else "?") + "limit=%d" % self.limit_bounds[1]

    @property
    def if_match(self):
        return any(p["name"].lower() == "if-match" for p in self.params_in("header"))

    @property
    def if_match_required(self):
        """`x-if-match: required`: a write without If-Match answers 428."""
        return self.op.get("x-if-match") == "required"

    @property
    def success(self):
        """The documented 2xx statuses, lowest first."""
        return sorted(int(s) for s in self.statuses if s.startswith("2"))

    def response(self, status):
        return deref(self.op["responses"].get(str(status), {}), "responses")

    def response_kind(self, status=None):
        """The schema name a 2xx JSON answer holds (the first documented 2xx by default)."""
        for s in ([status] if status else self.success):
            media = (self.response(s).get("content") or {}).get("application/json")
            if media:
                return ref_name(media.get("schema", {}))
        return None

    def response_headers(self, status):
        return {h.lower() for h in (self.response(status).get("headers") or {})}

    @property
    def body_media(self):
        """(media type, schema, example) of the request body; JSON preferred; None without."""
        content = (self.op.get("requestBody") or {}).get("content", {})
        for media in ("application/json", "application/x-www-form-urlencoded"):
            m = content.get(media)
            if m is None:
                continue
            if "example" in m:
                example = m["example"]
            elif m.get("examples"):
                example = next(iter(m["examples"].values()))["value"]
            else:
                continue
            return media, m.get("schema", {}), json.loads(json.dumps(example))
        return None

    def url(self, values):
        url = self.path
        for name, v in values.items():
            url = url.replace("{%s}" % name, v)
        query = self.required_query()
        return url + ("?" + urllib.parse.urlencode(query) if query else "")

    def required_query(self):
        """The required query parameters, each its example, except a time range (`from`,
        `to`: a rate history), which is the day around now so that it holds what was just
        made."""
        now = datetime.datetime.now(datetime.timezone.utc)
        out = []
        for p in self.params_in("query"):
            if not p.get("required"):
                continue
            if p["name"] in ("from", "to"):
                t = now + datetime.timedelta(days=-1 if p["name"] == "from" else 1)
                out.append((p["name"], t.strftime("%Y-%m-%dT%H:%M:%S.000Z")))
            else:
                out.append((p["name"], str(p.get("example", resolve(p["schema"]).get("example")))))
        return out


def operations():
    ops = []
    for path, item in SPEC["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, dict) and "operationId" in op and not op.get("x-status"):
                ops.append(Op(path, method, item, op))
    return sorted(ops, key=lambda o: o.id)


OPS = operations()
BY_ID = {o.id: o for o in OPS}
BY_ROUTE = {(o.method, o.spec_path): o for o in OPS}


def id_path(op, param):
    """The path of the resource param names: op's path up to and including {param}."""
    p = op.spec_path
    return p[:p.index("{%s}" % param) + len(param) + 2]


def kind_of(op, param):
    """The resource kind (schema name) path parameter param of op identifies."""
    at = id_path(op, param)
    for method in ("GET", "PUT"):
        o = BY_ROUTE.get((method, at))
        if o is not None and o.response_kind():
            return o.response_kind()
    lister = BY_ROUTE.get(("GET", at[:at.rindex("/")]))
    return item_kind(lister.response_kind()) if lister else None


def reader_of(op):
    """The GET that shows what op writes: on op's path, or on the resource's path above it
    (`PUT /workspace/settings` -> `GET /workspace`) when that answers the same kind."""
    path = op.spec_path
    while path:
        o = BY_ROUTE.get(("GET", path))
        if o is not None and o is not op and (path == op.spec_path or
                                              o.response_kind(200) == op.response_kind()):
            return o
        if path.endswith("}") and path != op.spec_path:
            return None  # above the resource op writes
        path = path[:path.rindex("/")]
    return None


def list_kind(op):
    """The kind of the items a list operation answers."""
    return item_kind(op.response_kind(200))


def collection_of(kind):
    """(list operation, collection path) of a kind: where its items are listed."""
    for o in OPS:
        if o.method == "GET" and item_kind(o.response_kind(200)) == kind:
            return o, o.spec_path
    return None, None


def id_prefixes():
    """{id prefix: kind} from the kinds' `id` patterns (`^ben_...` -> Beneficiary)."""
    out = {}
    for o in OPS:
        kind = list_kind(o) if o.method == "GET" else None
        if not kind:
            continue
        pid = resolve(SCHEMAS[kind]).get("properties", {}).get("id")
        m = re.match(r"^\^([a-z]+)_", resolve(pid or {}).get("pattern", ""))
        if m:
            out.setdefault(m.group(1), kind)
    return out


PREFIX_KIND = id_prefixes()
ALL_SCOPES = sorted(SPEC["x-scopes"])
ADMIN_SCOPE = "workspace:admin"  # grants every scope (runtime/auth.h)


# ---- what each suite by kind covered: printed at the end of the run (conftest.py) -------------

TALLY = {}  # suite -> {"covered": {op id}, "skipped": {op id: reason}}


def tally(suite):
    return TALLY.setdefault(suite, {"covered": set(), "skipped": {}})


def covered(suite, op):
    """Records that op passed suite's checks (called last, when they all held)."""
    tally(suite)["covered"].add(op.id)


def skipped(suite, op, reason):
    """Records and skips: op is one suite applies to but cannot check, for reason."""
    import pytest
    tally(suite)["skipped"][op.id] = reason
    pytest.skip(reason)


def tally_lines():
    lines = []
    for suite in sorted(TALLY):
        t = TALLY[suite]
        lines.append("by kind: %-12s %3d operations covered, %3d skipped" % (
            suite, len(t["covered"]), len(t["skipped"])))
        for op_id, reason in sorted(t["skipped"].items()):
            lines.append("by kind: %-12s   skipped %s: %s" % (suite, op_id, reason))
    return lines
