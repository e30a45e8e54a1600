"""Behaviour an operation declares instead of coding: its audit record (x-audit), its domain
event (x-event), a required If-Match (x-if-match), and the root list of problem codes
(x-problem-codes). spec.Model keeps each operation's raw declarations (op.declared); build()
checks them against the operation they sit on and models them for cgen.declared_body() and the
route table, and collects the problem codes. Every error names the file and pointer.

    x-audit:                        # every built write operation (POST/PUT/PATCH/DELETE)
      action: beneficiary.updated   # or a list (the handler's audit_change() says which;
                                    # the first when it reports none),
                                    # or by status: {'201': role.created, '200': role.updated}
      resource: beneficiary         # the record's resource_type
      id: path.id                   # path.<param> | response.<field> | principal.user_id |
                                    # principal.session_id | handler (the handler reports
                                    # the record with audit_change(); a success without it
                                    # is a failure)
      status: approval_status       # optional: the response field recorded as after_status
      fields: [name, currency]      # optional: request body members copied into the detail
    x-audit:
      none: why this write records nothing
    x-event: beneficiary.updated    # or by status; the response body is the event's object (a
                                    # 204: the resource the handler saved, as saved)
    x-if-match: required            # 428 precondition_required without If-Match
"""
import os
import re

from spec import Loc, SpecError, c_string

ACTION = re.compile(r'^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$')
RESOURCE = re.compile(r'^[a-z][a-z0-9_]*$')
CODE = re.compile(r'^[a-z][a-z0-9_]*$')
WRITE_METHODS = ('POST', 'PUT', 'PATCH', 'DELETE')
AUDIT_KEYS = {'action', 'resource', 'id', 'status', 'fields'}
# How C code raises a problem with a literal code: req_problem(r, 404, "not_found", ...) and the
# few runtime helpers that take (status, code) the same way.
PROBLEM_CALL = re.compile(r'\b(?:req_problem|problem_answer|answer_problem)\s*\(\s*[^,()]+,\s*'
                          r'\d{3}\s*,\s*"([a-z0-9_]+)"')


class Audit:
    def __init__(self):
        self.none = None          # the reason, for x-audit: {none: ...}
        self.actions = []         # [action]; the first is the default
        self.by_status = []       # [(status, action)] when the action depends on the status
        self.resource = None
        self.id_from = None       # path | response | principal | handler
        self.id_name = None       # the path parameter (Field) or response member name
        self.status_field = None  # response member name
        self.fields = []          # [(json name, redact: bool)]


class Event:
    def __init__(self):
        self.by_status = []       # [(status, type)]
        self.version = False      # the response bodies have an integer `version`
        self.saved = False        # 204: the event is of the resource the handler saved


def fail(loc, msg):
    raise SpecError(['%s: %s' % (loc, msg)])


def _secret(node, seen=None):
    """Whether a value of node could hold a secret: a writeOnly member or a password string
    anywhere inside it (such a member is written as "[redacted]")."""
    seen = seen if seen is not None else set()
    if node is None or id(node) in seen:
        return False
    seen.add(id(node))
    if getattr(node, 'password', False):
        return True
    for f in node.fields:
        if f.write_only or _secret(f.node, seen):
            return True
    for v in node.variants:
        if _secret(v.node, seen):
            return True
    return _secret(node.items, seen) or _secret(node.value, seen)


def _success_bodies(op):
    return [r for r in op.responses if 200 <= r.status < 300 and r.kind == 'json']


def _member(node, name):
    for f in node.fields if node is not None else ():
        if f.json_name == name:
            return f
    return None


def _statused(value, op, loc, what, pattern):
    """value: a name, or {status: name} over the operation's 2xx statuses -> [(status, name)]
    (status None: every success)."""
    successes = [r.status for r in op.responses if 200 <= r.status < 300]
    if isinstance(value, str):
        if not pattern.match(value):
            fail(loc, '%s %r must look like resource.happened (lower case, dotted)'
                 % (what, value))
        return [(None, value)]
    if not isinstance(value, dict) or not value:
        fail(loc, '%s must be a name or a map from status to name' % what)
    out = []
    for k, v in value.items():
        k = int(k) if isinstance(k, str) and k.isdigit() else k  # YAML keys arrive as text
        if isinstance(k, bool) or not isinstance(k, int) or k not in successes:
            fail(loc / str(k), '%s by status: %r is not a success status of %s'
                 % (what, k, op.operation_id))
        if not isinstance(v, str) or not pattern.match(v):
            fail(loc / str(k), '%s %r must look like resource.happened' % (what, v))
        out.append((k, v))
    missing = sorted(set(successes) - {k for k, _ in out})
    if missing:
        fail(loc, '%s by status names no %s for status %s'
             % (what, what, ', '.join(map(str, missing))))
    return sorted(out)


def build_audit(op, value, loc):
    a = Audit()
    if not isinstance(value, dict):
        fail(loc, 'x-audit must be a mapping (action, resource, id, ...) or {none: reason}')
    if 'none' in value:
        if set(value) != {'none'}:
            fail(loc, 'x-audit: none takes no other keys')
        if not isinstance(value['none'], str) or len(value['none'].strip()) < 10:
            fail(loc / 'none', 'x-audit: none needs the reason this write records nothing')
        a.none = value['none'].strip()
        return a
    for k in value:
        if k not in AUDIT_KEYS:
            fail(loc / k, 'unknown x-audit key %s (known: %s)' % (k, ', '.join(sorted(AUDIT_KEYS))))
    for k in ('action', 'resource', 'id'):
        if k not in value:
            fail(loc, 'x-audit needs %s' % k)
    action = value['action']
    if isinstance(action, list):
        if not action or not all(isinstance(x, str) and ACTION.match(x) for x in action):
            fail(loc / 'action', 'an action list holds names like resource.happened')
        if len(set(action)) != len(action):
            fail(loc / 'action', 'an action is listed twice')
        a.actions = list(action)
    else:
        pairs = _statused(action, op, loc / 'action', 'action', ACTION)
        a.actions = [x for _, x in pairs]
        a.by_status = [(s, x) for s, x in pairs if s is not None]
    if not isinstance(value['resource'], str) or not RESOURCE.match(value['resource']):
        fail(loc / 'resource', 'resource is a lower-case name (beneficiary, oauth_client)')
    a.resource = value['resource']
    src = value['id']
    m = re.match(r'^(path|response|principal)\.([a-z_][a-z0-9_]*)$', src) \
        if isinstance(src, str) else None
    if src == 'handler':
        a.id_from = 'handler'
    elif not m:
        fail(loc / 'id', 'id is path.<parameter>, response.<member>, principal.user_id, '
                         'principal.session_id or handler')
    else:
        a.id_from, name = m.group(1), m.group(2)
        if a.id_from == 'path':
            p = next((p for p in op.params if p.where == 'path' and p.json_name == name), None)
            if p is None:
                fail(loc / 'id', '%s has no path parameter %s' % (op.operation_id, name))
            a.id_name = p
        elif a.id_from == 'principal':
            if name not in ('user_id', 'session_id'):
                fail(loc / 'id', 'the principal gives principal.user_id or principal.session_id')
            a.id_name = name
            if op.is_public:
                fail(loc / 'id', 'principal.user_id on a public operation')
        else:
            bodies = _success_bodies(op)
            if not bodies or len(bodies) != len([r for r in op.responses
                                                 if 200 <= r.status < 300]):
                fail(loc / 'id', 'response.%s: every success of %s must answer a JSON body'
                     % (name, op.operation_id))
            for r in bodies:
                f = _member(r.field.node, name)
                if f is None or f.kind != 'string' or not f.required:
                    fail(loc / 'id', 'response.%s: the %d answer has no required string member '
                         '%s' % (name, r.status, name))
            a.id_name = name
    if 'status' in value:
        name = value['status']
        bodies = _success_bodies(op)
        if not isinstance(name, str) or not bodies:
            fail(loc / 'status', 'status names a member of the JSON success bodies')
        if len(bodies) != len([r for r in op.responses if 200 <= r.status < 300]):
            fail(loc / 'status', 'status: every success of %s must answer a JSON body with '
                                 'member %s' % (op.operation_id, name))
        for r in bodies:
            f = _member(r.field.node, name)
            if f is None or f.kind not in ('enum', 'string') or not f.required:
                fail(loc / 'status', 'the %d answer has no required string or enum member %s'
                     % (r.status, name))
        a.status_field = name
    if 'fields' in value:
        names = value['fields']
        body = op.body.node if op.body is not None else None
        if body is None or body.kind != 'object':
            fail(loc / 'fields', 'fields name members of a JSON object request body, which %s '
                 'does not take' % op.operation_id)
        if not isinstance(names, list) or not names or \
                not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
            fail(loc / 'fields', 'fields is a list of distinct member names')
        for i, n in enumerate(names):
            f = _member(body, n)
            if f is None:
                fail(loc / 'fields' / i, 'the request body has no member %s' % n)
            a.fields.append((n, f.write_only or _secret(f.node)))
    if op.own_transaction and (a.id_from == 'response' or a.status_field or a.fields or
                               a.by_status):
        fail(loc, 'an x-own-transaction operation writes its record from inside its own '
                  'transaction, before the response exists: its id comes from path, principal '
                  'or handler, and it records no response status, fields or action by status')
    return a


def build_event(op, value, loc, audit):
    e = Event()
    if audit is None or audit.none is not None:
        fail(loc, 'x-event needs an x-audit naming the resource (the event\'s resource type)')
    e.by_status = _statused(value, op, loc, 'event type', ACTION)
    bodies = _success_bodies(op)
    statuses = [r.status for r in op.responses if 200 <= r.status < 300]
    if statuses == [204]:
        # No body: the event's object is the resource the handler saved, as saved
        # (resource_saved_event); a 204 that saved nothing (an idempotent repeat) has none.
        if op.own_transaction:
            fail(loc, 'x-event on an x-own-transaction operation is not supported')
        e.saved = True
        return e
    if len(bodies) != len(statuses):
        fail(loc, 'x-event: every success of %s must answer the resource as JSON (the event\'s '
                  'object)' % op.operation_id)
    for r in bodies:
        f = _member(r.field.node, 'id')
        if f is None or f.kind != 'string' or not f.required:
            fail(loc, 'x-event: the %d answer has no required string id' % r.status)
    versions = [_member(r.field.node, 'version') for r in bodies]
    e.version = all(v is not None and v.kind == 'integer' and v.required for v in versions)
    if op.own_transaction:
        fail(loc, 'x-event on an x-own-transaction operation is not supported')
    return e


def build_if_match(op, value, loc):
    if value != 'required':
        fail(loc, 'x-if-match supports only the value required')
    if not any(p.where == 'header' and p.json_name.lower() == 'if-match' for p in op.params):
        fail(loc, 'x-if-match: required on an operation that documents no If-Match header')
    for status, why in ((412, 'a stale If-Match'), (428, 'a missing If-Match')):
        if status not in op.statuses:
            fail(loc, 'x-if-match: required, but %s does not document %d (%s)'
                 % (op.operation_id, status, why))
    return True


def build_problem_codes(model, root):
    """Root x-problem-codes: {code: title}. -> [(code, title)] in source order."""
    raw = model.doc.get('x-problem-codes')
    loc = root / 'x-problem-codes'
    if not isinstance(raw, dict) or not raw:
        fail(loc, 'the root x-problem-codes lists every problem code with its title')
    out = []
    for code, title in raw.items():
        if not isinstance(code, str) or not CODE.match(code):
            fail(loc / str(code), 'a problem code is a lower-case name (snake_case)')
        if not isinstance(title, str) or not title.strip() or len(title) > 80:
            fail(loc / code, 'a problem code\'s title is short text (at most 80 characters)')
        out.append((code, title))
    return out


def _spec_codes(model, node, loc, out):
    """Codes named by problem examples anywhere in the document: {code: Loc}, each where its
    source file has it when the bundle knows."""
    loc = model.loc(node, loc) if isinstance(node, (dict, list)) else loc
    if isinstance(node, dict):
        if isinstance(node.get('type'), str) and \
                node['type'].startswith('urn:treasury:problem:') and \
                isinstance(node.get('code'), str):
            out.setdefault(node['code'], loc)
        for k, v in node.items():
            _spec_codes(model, v, loc / str(k), out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _spec_codes(model, v, loc / i, out)


def source_codes(dirs):
    """Codes the C sources under dirs raise with a literal: {code: 'file:line'}."""
    out = {}
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not name.endswith('.c'):
                continue
            path = os.path.join(d, name)
            with open(path, encoding='utf-8') as f:
                text = f.read()
            for m in PROBLEM_CALL.finditer(text):
                line = text.count('\n', 0, m.start()) + 1
                out.setdefault(m.group(1), '%s:%d' % (path, line))
    return out


def build(model, sources=()):
    """Checks and models every declaration; sets model.problem_codes, op.audit, op.event,
    op.if_match_required."""
    root = Loc(model.b.root_rel, '')
    model.problem_codes = build_problem_codes(model, root)
    known = {c for c, _ in model.problem_codes}
    errors = []
    used = {}
    _spec_codes(model, model.doc, root, used)
    for code, where in sorted(used.items()):
        if code not in known:
            errors.append('%s: problem code %s is used but not declared in the root '
                          'x-problem-codes' % (where, code))
    for code, where in sorted(source_codes(sources).items()):
        if code not in known:
            errors.append('%s: problem code %s is raised but not declared in the root '
                          'x-problem-codes (%s)' % (where, code, root / 'x-problem-codes'))
    if errors:
        raise SpecError(errors)
    for op in model.ops:
        decl = op.declared
        op.audit = op.event = None
        op.if_match_required = False
        if 'x-audit' in decl:
            value, loc = decl['x-audit']
            if op.method not in WRITE_METHODS:
                fail(loc, 'x-audit on a %s: only writes are audited' % op.method)
            op.audit = build_audit(op, value, loc)
        elif op.method in WRITE_METHODS and not op.planned:
            fail(op.loc, '%s %s (%s) is a write and declares no audit behaviour: add x-audit '
                 '(action, resource, id) or x-audit: {none: <why nothing is recorded>}'
                 % (op.method, op.full_path, op.operation_id))
        if 'x-event' in decl:
            value, loc = decl['x-event']
            op.event = build_event(op, value, loc, op.audit)
        if 'x-if-match' in decl:
            value, loc = decl['x-if-match']
            op.if_match_required = build_if_match(op, value, loc)
        op.audit_recorded = op.audit is not None and op.audit.none is None


def problem_table_lines(model):
    return ['    {%s, %s},' % (c_string(c), c_string(t)) for c, t in model.problem_codes]
