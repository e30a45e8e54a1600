"""OpenAPI 3.1 -> a plain model the C templates print: loading, multi-file bundling, checks,
and every naming rule. Templates only print; all decisions are made here.

Pipeline (driven by generate.py): load_bundle() -> Model(bundle) (checks + model) -> render.
Every error is reported as `openapi/file.yaml#/json/pointer: message`.
"""
import decimal
import json
import os
import re
import urllib.parse

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

METHODS = ['get', 'post', 'put', 'patch', 'delete']
JSON_MEDIA = 'application/json'
FORM_MEDIA = 'application/x-www-form-urlencoded'
PROBLEM_MEDIA = 'application/problem+json'
HTML_MEDIA = 'text/html'
# Non-JSON representations (runtime/media.h): a 2xx response may offer them beside or instead
# of JSON (negotiated on Accept); a request body may be sent as one of RAW_REQUEST_MEDIA.
RAW_MEDIA = {'text/csv': 'MEDIA_CSV', 'application/xml': 'MEDIA_XML',
             'text/plain': 'MEDIA_TEXT', 'application/pdf': 'MEDIA_PDF'}
RAW_REQUEST_MEDIA = ('application/xml', 'text/plain', 'text/csv')
BINARY_MEDIA = 'application/pdf'   # the only place for format: binary
MAX_SCOPES = 64
ROUTE_MAX_PARAMS = 8          # runtime/op.h
QUERY_ARRAY_MAX = 100         # the most items an array query parameter may allow
DEFAULT_MAX_BODY = 65536

ANNOTATIONS = {'description', 'title', 'example', 'examples', 'deprecated', '$comment',
               'externalDocs'}
SITE_FLAGS = {'readOnly', 'writeOnly', 'default'}
SCHEMA_KEYWORDS = ANNOTATIONS | SITE_FLAGS | {
    'type', 'required', 'properties', 'additionalProperties', 'enum', 'const', 'minLength',
    'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum',
    'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties',
    'maxProperties', 'items', '$ref', 'allOf', 'oneOf', 'discriminator'}
# Our own string formats live in x-format (a generic validator fails a schema on an unknown
# `format`), each with a pattern a generic validator can check; the runtime checks exactly.
DECIMAL_KEYWORDS = {'x-precision', 'x-scale', 'x-minimum', 'x-maximum', 'x-exclusive-minimum',
                    'x-exclusive-maximum'}
X_SCHEMA_KEYWORDS = {'x-format'} | DECIMAL_KEYWORDS
# Storage mappings of object schemas, checked and turned into C by codegen/rows.py.
X_ROW_KEYWORDS = {'x-table', 'x-merge-into'}
SCHEMA_KEYWORDS |= X_SCHEMA_KEYWORDS | X_ROW_KEYWORDS
TYPE_KEYWORDS = {
    'string': {'minLength', 'maxLength', 'pattern', 'format', 'enum', 'const'} |
              X_SCHEMA_KEYWORDS,
    'integer': {'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
                'format', 'enum', 'const'},
    'number': {'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'},
    'boolean': {'const'},
    'array': {'items', 'minItems', 'maxItems', 'uniqueItems'},
    'object': {'properties', 'required', 'additionalProperties', 'minProperties',
               'maxProperties'} | X_ROW_KEYWORDS,
}
ALL_TYPE_KEYWORDS = set().union(*TYPE_KEYWORDS.values())
# format -> (runtime/format.h predicate, error detail); None = annotation only
STRING_FORMATS = {
    'date': ('format_is_date', 'must be a date (YYYY-MM-DD)'),
    'date-time': ('format_is_date_time', 'must be an RFC 3339 date-time with offset'),
    'uuid': ('format_is_uuid', 'must be a UUID'),
    'email': ('format_is_email', 'must be an email address'),
    'uri': ('format_is_uri', 'must be an absolute URI'),
    'password': None,
}
# x-format -> (runtime/format.h predicate, error detail); decimal is runtime/decimal.h
X_FORMATS = {
    'iso4217': ('format_is_currency', 'must be an active ISO 4217 currency code'),
    'iso3166-alpha2': ('format_is_country', 'must be an ISO 3166-1 alpha-2 country code'),
    'iban': ('format_is_iban', 'must be a valid IBAN'),
    'bic': ('format_is_bic', 'must be a valid BIC'),
    'decimal': None,
}
INTEGER_FORMATS = {'int32', 'int64'}
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1

OPERATION_KEYS = {'tags', 'summary', 'description', 'operationId', 'parameters', 'requestBody',
                  'responses', 'security', 'deprecated', 'externalDocs'}
OPERATION_EXTENSIONS = {'x-idempotent', 'x-replay', 'x-rate-limit-class', 'x-max-body-bytes', 'x-status',
                        'x-any-scope', 'x-first-party', 'x-oauth-errors',
                        'x-own-transaction', 'x-audit', 'x-event', 'x-if-match'}
# Declared behaviour (audit, events, If-Match) is checked and modelled by codegen/declared.py.
DECLARED_EXTENSIONS = ('x-audit', 'x-event', 'x-if-match')
PATH_ITEM_KEYS = {'summary', 'description', 'parameters', 'servers'}
PARAM_KEYS = {'name', 'in', 'required', 'description', 'schema', 'example', 'examples',
              'deprecated', 'style', 'explode', 'allowEmptyValue'}
DEFAULT_STYLE = {'path': ('simple', False), 'query': ('form', True), 'header': ('simple', False),
                 'cookie': ('form', True)}
HEADER_KEYS = {'description', 'required', 'schema', 'example', 'examples', 'deprecated',
               'style', 'explode', 'x-set-by'}
RESPONSE_KEYS = {'description', 'headers', 'content', 'x-empty-body'}
MEDIA_KEYS = {'schema', 'example', 'examples'}
REQUEST_BODY_KEYS = {'description', 'content', 'required'}
COMPONENT_SECTIONS = {'schemas', 'parameters', 'responses', 'headers', 'examples',
                      'requestBodies', 'securitySchemes'}
# Headers HTTP itself or the runtime owns; OpenAPI says such parameters are ignored.
RESERVED_HEADERS = {'authorization', 'content-type', 'accept'}
# Request headers the runtime reads for every operation (request id, idempotency key): the
# served document declares them (codegen/served.py adds them), the sources do not.
RUNTIME_PARAMS = {'x-request-id', 'idempotency-key'}

C_KEYWORDS = {
    'auto', 'break', 'case', 'char', 'const', 'continue', 'default', 'do', 'double', 'else',
    'enum', 'extern', 'float', 'for', 'goto', 'if', 'inline', 'int', 'long', 'register',
    'restrict', 'return', 'short', 'signed', 'sizeof', 'static', 'struct', 'switch', 'typedef',
    'union', 'unsigned', 'void', 'volatile', 'while', 'bool', 'true', 'false', 'alignas',
    'alignof', 'noreturn', 'static_assert', 'thread_local', 'errno', 'assert', 'offsetof',
    'main', 'NULL'}


class SpecError(Exception):
    """One or more spec problems, each `file#/pointer: message`."""

    def __init__(self, errors):
        super().__init__('\n'.join(errors))
        self.errors = list(errors)


# ---- names ------------------------------------------------------------------------------

def snake(s):
    """camelCase / PascalCase / kebab -> snake_case C identifier."""
    s = re.sub(r'([A-Z]+)([A-Z][a-z])', r'\1_\2', s)
    s = re.sub(r'([a-z0-9])([A-Z])', r'\1_\2', s)
    return ident(s)


def ident(s):
    """Lower-case C identifier: non-alphanumerics become '_'; keywords get a trailing '_'."""
    s = re.sub(r'[^A-Za-z0-9]+', '_', s).strip('_').lower()
    if not s:
        s = 'x'
    if s[0].isdigit():
        s = 'n' + s
    if s in C_KEYWORDS:
        s += '_'
    return s


def upper(s):
    """Upper-case constant part: 'pending_approval' -> PENDING_APPROVAL,
    'SortCodeAccountNumber' -> SORT_CODE_ACCOUNT_NUMBER, 'at+jwt' -> AT_JWT."""
    s = re.sub(r'([A-Z]+)([A-Z][a-z])', r'\1_\2', s)
    s = re.sub(r'([a-z0-9])([A-Z])', r'\1_\2', s)
    return re.sub(r'[^A-Za-z0-9]+', '_', s).strip('_').upper() or 'EMPTY'


def ptr_escape(token):
    return str(token).replace('~', '~0').replace('/', '~1')


def c_string(s):
    """A C string literal for s (UTF-8 bytes; octal escapes, never trigraphs)."""
    out = ['"']
    prev = ''
    for b in s.encode('utf-8'):
        c = chr(b)
        if c == '"':
            out.append('\\"')
        elif c == '\\':
            out.append('\\\\')
        elif c == '\n':
            out.append('\\n')
        elif c == '\r':
            out.append('\\r')
        elif c == '\t':
            out.append('\\t')
        elif c == '?' and prev == '?':
            out.append('\\?')
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append('\\%03o' % b)
        prev = c
    out.append('"')
    return ''.join(out)


def comment_text(s, limit=100):
    """One line of text safe inside a C comment."""
    s = ' '.join(str(s).split())
    s = s.replace('*/', '* /').replace('/*', '/ *')
    if len(s) > limit:
        s = s[:limit - 3].rstrip() + '...'
    return s


def first_sentence(src):
    """The text up to the first full stop that ends a sentence (followed by a space or the
    end; not inside `code` or parentheses)."""
    if not isinstance(src, str):
        return ''
    t = ' '.join(src.split())
    in_code, depth = False, 0
    for i, ch in enumerate(t):
        if ch == '`':
            in_code = not in_code
        elif in_code:
            continue
        elif ch == '(':
            depth += 1
        elif ch == ')':
            depth = max(0, depth - 1)
        elif ch == '.' and depth == 0 and (i + 1 == len(t) or t[i + 1] == ' ') and \
                t[max(0, i - 3):i] not in ('e.g', 'i.e', 'etc'):
            return t[:i + 1]
    return t


def plural(n, word):
    return '%d %s%s' % (n, word, '' if n == 1 else ('es' if word.endswith('s') else 's'))


def int_literal(n):
    if n == INT64_MIN:
        return 'INT64_MIN'
    return 'INT64_C(%d)' % n


def double_literal(x):
    r = repr(float(x))
    if r in ('inf', '-inf', 'nan'):
        raise ValueError('non-finite number')
    if 'e' not in r and '.' not in r:
        r += '.0'
    return r


# ---- patterns: ECMA-262 subset -> POSIX ERE -------------------------------------------------

_CLASS_SETS = {
    'd': set(range(ord('0'), ord('9') + 1)),
    'w': set(range(ord('0'), ord('9') + 1)) | set(range(ord('A'), ord('Z') + 1))
    | set(range(ord('a'), ord('z') + 1)) | {ord('_')},
    's': {ord(c) for c in ' \t\n\r\f\v'},
}
_CONTROL = {'n': '\n', 't': '\t', 'r': '\r', 'f': '\f', 'v': '\v'}
_ESCAPABLE = set('^$\\.*+?()[]{}|/-')


def _emit_set(chars, negate):
    """Bracket expression for a set of ASCII codes, ordered so POSIX reads it literally."""
    chars = set(chars)
    specials = {c for c in chars if chr(c) in ']-^'}
    rest = sorted(chars - specials)
    runs, i = [], 0
    def group(c):   # ranges stay inside one of 0-9, A-Z, a-z: portable across locales
        ch = chr(c)
        return '0' if ch.isdigit() else 'A' if ch.isupper() else 'a' if ch.islower() else ch

    while i < len(rest):
        j = i
        while j + 1 < len(rest) and rest[j + 1] == rest[j] + 1 and \
                group(rest[j + 1]) == group(rest[i]) and group(rest[i]) in '0Aa':
            j += 1
        if j - i >= 2:
            runs.append(chr(rest[i]) + '-' + chr(rest[j]))
        else:
            runs.extend(chr(c) for c in rest[i:j + 1])
        i = j + 1
    body = (']' if ord(']') in chars else '') + ''.join(runs)
    if ord('^') in chars:
        body += '^'
    if ord('-') in chars:
        body += '-'
    if not negate and body.startswith('^'):
        body = body[1:] + '^' if len(body) > 1 else None
        if body is None:
            return '\\^'
    return '[' + ('^' if negate else '') + body + ']'


def _parse_class(p, i):
    """p[i] == '['. Returns (posix bracket expression, index after ']')."""
    n = len(p)
    j = i + 1
    negate = False
    if j < n and p[j] == '^':
        negate = True
        j += 1
    chars = set()
    first = True
    while True:
        if j >= n:
            raise ValueError('unterminated character class')
        c = p[j]
        if c == ']':
            if first:
                raise ValueError('empty character class')
            j += 1
            break
        first = False
        if c == '[' and j + 1 < n and p[j + 1] in ':.=':
            raise ValueError('POSIX bracket syntax [%s inside a class is not ECMA-262' % p[j + 1])
        lo, j, cls = _class_atom(p, j)
        if cls is not None:
            chars |= cls
            continue
        if j + 1 < n and p[j] == '-' and p[j + 1] != ']':
            hi, j, cls2 = _class_atom(p, j + 1)
            if cls2 is not None:
                raise ValueError('a character class escape cannot end a range')
            if hi < lo:
                raise ValueError('range out of order in character class')
            chars |= set(range(lo, hi + 1))
        else:
            chars.add(lo)
    if not chars:
        raise ValueError('empty character class')
    return _emit_set(chars, negate), j


def _class_atom(p, j):
    """One class member at p[j]: (code, next index, None) or (None, next index, set)."""
    c = p[j]
    if c != '\\':
        return ord(c), j + 1, None
    if j + 1 >= len(p):
        raise ValueError('trailing backslash')
    e = p[j + 1]
    if e in 'dws':
        return None, j + 2, _CLASS_SETS[e]
    if e in 'DWS':
        raise ValueError('\\%s inside a character class is not supported' % e)
    if e in _CONTROL:
        return ord(_CONTROL[e]), j + 2, None
    if e in _ESCAPABLE:
        return ord(e), j + 2, None
    raise ValueError('unsupported escape \\%s in character class' % e)


def translate_pattern(p):
    """Translate an ECMA-262 `pattern` (unanchored search) into an equivalent POSIX ERE for
    regcomp(REG_EXTENDED|REG_NOSUB), also an unanchored search. Raises ValueError for
    constructs POSIX cannot express (lookaround, backreferences, lazy quantifiers, ...)."""
    if not isinstance(p, str):
        raise ValueError('pattern must be a string')
    if any(ord(c) > 126 or (ord(c) < 32 and c not in '\t') for c in p):
        raise ValueError('only printable ASCII is supported in patterns')
    out = []
    i, n = 0, len(p)
    atom = False  # a quantifier may follow
    while i < n:
        c = p[i]
        if c == '\\':
            if i + 1 >= n:
                raise ValueError('trailing backslash')
            e = p[i + 1]
            i += 2
            if e in 'dws':
                out.append(_emit_set(_CLASS_SETS[e], False))
            elif e in 'DWS':
                out.append(_emit_set(_CLASS_SETS[e.lower()], True))
            elif e in _CONTROL:
                out.append(_CONTROL[e])
            elif e in _ESCAPABLE:
                out.append('\\' + e if e in '^.[$()|*+?{\\' else e)
            elif e.isdigit():
                raise ValueError('backreferences are not supported')
            elif e in 'bB':
                raise ValueError('word boundaries (\\b, \\B) are not supported')
            else:
                raise ValueError('unsupported escape \\%s' % e)
            atom = True
            continue
        if c == '[':
            s, i = _parse_class(p, i)
            out.append(s)
            atom = True
            continue
        if c == '(':
            if p.startswith('(?', i):
                if p.startswith('(?:', i):
                    out.append('(')
                    i += 3
                    atom = False
                    continue
                if p.startswith('(?=', i) or p.startswith('(?!', i) or \
                        p.startswith('(?<=', i) or p.startswith('(?<!', i):
                    raise ValueError('lookaround assertions are not supported')
                raise ValueError('named or flagged groups are not supported')
            out.append('(')
            i += 1
            atom = False
            continue
        if c in '*+?':
            if not atom:
                raise ValueError('quantifier without an atom')
            out.append(c)
            i += 1
            if i < n and p[i] == '?':
                raise ValueError('lazy quantifiers are not supported')
            atom = False
            continue
        if c == '{':
            m = re.match(r'\{(\d+)(,(\d*))?\}', p[i:])
            if not m:
                raise ValueError('a literal { must be escaped as \\{')
            if not atom:
                raise ValueError('quantifier without an atom')
            if m.group(3) and int(m.group(3)) < int(m.group(1)):
                raise ValueError('quantifier range out of order')
            if int(m.group(1)) > 255 or (m.group(3) and int(m.group(3)) > 255):
                raise ValueError('repetition counts above 255 are not supported')
            out.append(m.group(0))
            i += len(m.group(0))
            if i < n and p[i] == '?':
                raise ValueError('lazy quantifiers are not supported')
            atom = False
            continue
        if c == '}':
            raise ValueError('a literal } must be escaped as \\}')
        if c == '.':
            out.append('[^\n\r]')
            atom = True
            i += 1
            continue
        if c in '|^$)':
            atom = c == ')'
            out.append(c)
            i += 1
            continue
        out.append(c)
        atom = True
        i += 1
    try:   # what the translation let through must also be a well-formed expression
        re.compile(p)
    except re.error as e:
        raise ValueError('invalid regular expression: %s' % e)
    return ''.join(out)


# ---- YAML loading ---------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    """safe_load with YAML 1.2 core scalars: only true/false are booleans, no timestamps,
    decimal integers only; duplicate keys are errors; integer keys become strings."""


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver('tag:yaml.org,2002:bool',
                              re.compile(r'^(?:true|True|TRUE|false|False|FALSE)$'),
                              list('tTfF'))
_Loader.add_implicit_resolver('tag:yaml.org,2002:int', re.compile(r'^[-+]?[0-9]+$'),
                              list('-+0123456789'))
_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$|^[-+]?[0-9]+[eE][-+]?[0-9]+$'),
    list('-+0123456789.'))
_Loader.add_implicit_resolver('tag:yaml.org,2002:null', re.compile(r'^(?:~|null|Null|NULL|)$'),
                              ['~', 'n', 'N', ''])


def _construct_int(loader, node):
    return int(loader.construct_scalar(node).replace('+', ''), 10)


def _construct_float(loader, node):
    return float(loader.construct_scalar(node))


def _construct_mapping(loader, node):
    loader.flatten_mapping(node)
    out = {}
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        if isinstance(key, bool) or key is None or isinstance(key, float):
            raise yaml.constructor.ConstructorError(
                None, None, 'mapping key %r must be a string' % (key,), knode.start_mark)
        key = str(key)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, 'duplicate key %r' % key, knode.start_mark)
        out[key] = loader.construct_object(vnode, deep=True)
    return out


_Loader.add_constructor('tag:yaml.org,2002:int', _construct_int)
_Loader.add_constructor('tag:yaml.org,2002:float', _construct_float)
_Loader.add_constructor('tag:yaml.org,2002:map', _construct_mapping)


def rel(path):
    return os.path.relpath(path, REPO_ROOT).replace(os.sep, '/')


def load_yaml(path):
    try:
        with open(path, encoding='utf-8') as f:
            doc = yaml.load(f, Loader=_Loader)
    except OSError as e:
        raise SpecError(['%s: cannot read: %s' % (rel(path), e.strerror)])
    except yaml.YAMLError as e:
        mark = getattr(e, 'problem_mark', None) or getattr(e, 'context_mark', None)
        where = ':%d' % (mark.line + 1) if mark else ''
        raise SpecError(['%s%s: invalid YAML: %s' % (rel(path), where,
                                                      getattr(e, 'problem', None) or e)])
    _check_json_values(doc, path, '')
    return doc


def _check_json_values(v, path, ptr):
    if isinstance(v, float) and (v != v or v in (float('inf'), float('-inf'))):
        raise SpecError(['%s#%s: non-finite numbers are not JSON' % (rel(path), ptr)])
    if isinstance(v, dict):
        for k, x in v.items():
            _check_json_values(x, path, ptr + '/' + ptr_escape(k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _check_json_values(x, path, '%s/%d' % (ptr, i))


# ---- bundling -------------------------------------------------------------------------------

class Loc:
    __slots__ = ('file', 'ptr')

    def __init__(self, file, ptr):
        self.file = file   # repo-relative path
        self.ptr = ptr

    def __truediv__(self, token):
        return Loc(self.file, self.ptr + '/' + ptr_escape(token))

    def __str__(self):
        return '%s#%s' % (self.file, self.ptr)


def _raw_key(key, ctx):
    """True when the value under key is data (examples, defaults), never rewritten."""
    if ctx == 'names':
        return False
    if key in ('example', 'default', 'const', 'enum', 'x-scopes') or \
            (key.startswith('x-') and ctx != 'names'):
        return True
    return ctx == 'example_obj' and key == 'value'


class Bundle:
    """Every file reachable from the root by $ref, merged into one document whose refs are all
    local (#/components/...). origin maps id(node) of each bundled dict/list to its Loc."""

    def __init__(self, root_path):
        self.root_abs = os.path.abspath(root_path)
        self.root_rel = rel(self.root_abs)
        self.docs = {}
        self.order = []
        self.origin = {}
        self.errors = []
        self.inlining = []
        self.referenced_paths = set()   # (abs file, path key) path items wired from the root

    def doc(self, abs_path, loc):
        if abs_path not in self.docs:
            if not os.path.exists(abs_path):
                raise SpecError(['%s: unresolved $ref: file %s does not exist'
                                 % (loc, rel(abs_path))])
            d = load_yaml(abs_path)
            if not isinstance(d, dict):
                raise SpecError(['%s#: the document must be a mapping' % rel(abs_path)])
            self.docs[abs_path] = d
            self.order.append(abs_path)
        return self.docs[abs_path]

    def loc_of(self, node):
        return self.origin.get(id(node))

    def _resolve(self, ref, abs_file, loc):
        """-> (target abs file, token list, target node)."""
        if not isinstance(ref, str):
            raise SpecError(['%s: $ref must be a string' % loc])
        file_part, _, frag = ref.partition('#')
        target_abs = os.path.normpath(os.path.join(os.path.dirname(abs_file), file_part)) \
            if file_part else abs_file
        frag = urllib.parse.unquote(frag)
        if frag and not frag.startswith('/'):
            raise SpecError(['%s: unresolved $ref %s: the fragment must be a JSON Pointer'
                             % (loc, ref)])
        tokens = [t.replace('~1', '/').replace('~0', '~') for t in frag.split('/')[1:]] \
            if frag else []
        node = self.doc(target_abs, loc)
        for t in tokens:
            if isinstance(node, dict) and t in node:
                node = node[t]
            elif isinstance(node, list) and t.isdigit() and int(t) < len(node):
                node = node[int(t)]
            else:
                raise SpecError(['%s: unresolved $ref %s' % (loc, ref)])
        return target_abs, tokens, node

    def rewrite(self, node, abs_file, ptr, ctx='generic'):
        loc = Loc(rel(abs_file), ptr)
        if isinstance(node, list):
            out = [self.rewrite(v, abs_file, '%s/%d' % (ptr, i), 'generic')
                   for i, v in enumerate(node)]
            self.origin[id(out)] = loc
            return out
        if not isinstance(node, dict):
            return node
        if '$ref' in node and ctx != 'names':
            return self._rewrite_ref(node, abs_file, ptr, loc, ctx)
        out = {}
        for k, v in node.items():
            sub = ptr + '/' + ptr_escape(k)
            if _raw_key(k, ctx):
                out[k] = v
                continue
            if ctx == 'names':
                child_ctx = 'example_obj' if self._in_examples else 'generic'
                out[k] = self.rewrite(v, abs_file, sub, child_ctx)
                continue
            if k == 'mapping' and isinstance(v, dict):
                out[k] = {mk: self._rewrite_mapping(mv, abs_file, Loc(loc.file, sub) / mk)
                          for mk, mv in v.items()}
                self.origin[id(out[k])] = Loc(loc.file, sub)
                continue
            if k in ('properties', 'schemas', 'parameters', 'responses', 'headers', 'content',
                     'requestBodies', 'securitySchemes', 'paths') and isinstance(v, dict):
                self._in_examples = False
                out[k] = self.rewrite(v, abs_file, sub, 'names')
                continue
            if k == 'examples' and isinstance(v, dict):
                self._in_examples = True
                out[k] = self.rewrite(v, abs_file, sub, 'names')
                self._in_examples = False
                continue
            if k == 'examples':
                out[k] = v
                continue
            out[k] = self.rewrite(v, abs_file, sub, 'generic')
        self.origin[id(out)] = loc
        return out

    _in_examples = False

    def _rewrite_mapping(self, value, abs_file, loc):
        if not isinstance(value, str):
            raise SpecError(['%s: discriminator mapping values must be strings' % loc])
        if '#' not in value and '/' not in value and '.' not in value:
            value = '#/components/schemas/' + value
        target_abs, tokens, _ = self._resolve(value, abs_file, loc)
        if len(tokens) != 3 or tokens[:2] != ['components', 'schemas']:
            raise SpecError(['%s: discriminator mapping must name a component schema' % loc])
        return '#/components/schemas/' + ptr_escape(tokens[2])

    def _rewrite_ref(self, node, abs_file, ptr, loc, ctx):
        target_abs, tokens, target = self._resolve(node['$ref'], abs_file, loc / '$ref')
        if len(tokens) == 3 and tokens[0] == 'components':
            if tokens[1] not in COMPONENT_SECTIONS:
                raise SpecError(['%s: unsupported component section %s' % (loc, tokens[1])])
            out = {}
            for k, v in node.items():
                if k == '$ref':
                    out[k] = '#/components/%s/%s' % (tokens[1], ptr_escape(tokens[2]))
                elif _raw_key(k, 'generic'):
                    out[k] = v
                else:
                    out[k] = self.rewrite(v, abs_file, ptr + '/' + ptr_escape(k), 'generic')
            self.origin[id(out)] = loc
            return out
        if len(node) > 1:
            raise SpecError(['%s: keys next to a $ref that does not name a component are not '
                             'supported' % loc])
        key = (target_abs, tuple(tokens))
        if key in self.inlining:
            raise SpecError(['%s: circular $ref %s' % (loc, node['$ref'])])
        if len(tokens) == 2 and tokens[0] == 'paths':
            self.referenced_paths.add((target_abs, tokens[1]))
        self.inlining.append(key)
        tptr = ''.join('/' + ptr_escape(t) for t in tokens)
        try:
            return self.rewrite(target, target_abs, tptr, ctx)
        finally:
            self.inlining.pop()


def load_bundle(root_path):
    b = Bundle(root_path)
    root = b.doc(b.root_abs, Loc(b.root_rel, ''))
    out = {}
    for k, v in root.items():
        if k == 'components':
            continue
        out[k] = b.rewrite(v, b.root_abs, '/' + ptr_escape(k),
                           'names' if k == 'paths' else 'generic') \
            if not _raw_key(k, 'generic') else v
    comps = {}
    comp_loc = {}
    i = 0
    while i < len(b.order):   # files discovered while rewriting are appended to b.order
        f = b.order[i]
        i += 1
        d = b.docs[f]
        if f != b.root_abs:
            for k in d:
                if k not in ('paths', 'components'):
                    raise SpecError(['%s#/%s: an API file has only paths and components'
                                     % (rel(f), ptr_escape(k))])
        c = d.get('components') or {}
        if not isinstance(c, dict):
            raise SpecError(['%s#/components: must be a mapping' % rel(f)])
        for section, entries in c.items():
            sloc = Loc(rel(f), '/components/' + ptr_escape(section))
            if section not in COMPONENT_SECTIONS:
                raise SpecError(['%s: unsupported component section %s' % (sloc, section)])
            if not isinstance(entries, dict):
                raise SpecError(['%s: must be a mapping' % sloc])
            dest = comps.setdefault(section, {})
            for name, v in entries.items():
                if name in dest:
                    raise SpecError(['%s: component %s/%s clashes with %s (component names are '
                                     'unique across files)' % (sloc / name, section, name,
                                                               comp_loc[(section, name)])])
                comp_loc[(section, name)] = sloc / name
                ctx = 'example_obj' if section == 'examples' else 'generic'
                dest[name] = b.rewrite(v, f, sloc.ptr + '/' + ptr_escape(name), ctx)
            b.origin[id(dest)] = sloc
    b.origin[id(comps)] = Loc(b.root_rel, '/components')
    out['components'] = comps
    # every path item of an API file must be wired into the root
    for f in b.order:
        if f == b.root_abs:
            continue
        for p in (b.docs[f].get('paths') or {}):
            if (f, p) not in b.referenced_paths:
                raise SpecError(['%s#/paths/%s: path %s is not referenced from %s'
                                 % (rel(f), ptr_escape(p), p, b.root_rel)])
    b.bundled = out
    b.origin[id(out)] = Loc(b.root_rel, '')
    return b


def bundled_json(bundle):
    return json.dumps(bundle.bundled, indent=2, ensure_ascii=False) + '\n'


# ---- model ------------------------------------------------------------------------------------

class Node:
    """One schema as the C code sees it. kind: string integer number boolean enum object oneof
    array map any. Every non-trivial node gets validate_<cname>(); object and oneof nodes get a
    struct and decode_/encode_<cname>(); enum nodes an enum with _str/_parse."""

    def __init__(self, cname, loc, component=None):
        self.cname = cname
        self.loc = loc
        self.component = component
        self.kind = None
        self.nullable = False
        self.checks = []
        self.trivial = False
        self.description = ''
        self.fields = []
        self.required = []
        self.addl = None          # object/any: None (allowed), False, or a Node
        self.items = None
        self.value = None
        self.enum_values = []     # [(json value, C constant)]
        self.enum_has_null = False
        self.set_text = False     # enum: items of an array query parameter get <enum>_set()
        self.disc_prop = None
        self.variants = []        # oneof: [Variant]
        self.type_name = None     # JSON type for 'type' errors
        self.type_detail = ''
        self.json_type_test = ''  # C condition true when v has the right JSON type
        self.array_struct = False # array used as an array item or map value: a struct type

    @property
    def is_struct(self):
        return self.kind in ('object', 'oneof')

    @property
    def upper(self):
        return self.cname.upper()

    def __repr__(self):
        return 'Node(%s, %s)' % (self.cname, self.kind)


class Field:
    def __init__(self, json_name, cname, node, required, read_only=False, write_only=False,
                 default=None, loc=None):
        self.json_name = json_name
        self.cname = cname
        self.node = node
        self.required = required
        self.read_only = read_only
        self.write_only = write_only
        self.default = default        # C expression or None
        self.loc = loc
        self.comment = ''

    @property
    def optional(self):
        return not self.required

    @property
    def nullable(self):
        return self.node.nullable

    @property
    def kind(self):
        return self.node.kind

    @property
    def is_pointer(self):
        return self.node.kind in ('string', 'object', 'oneof', 'any', 'array', 'map')


class Variant:
    def __init__(self, key, node, const, cname):
        self.key = key
        self.node = node
        self.const = const
        self.cname = cname


def ctype(node, role):
    """C type of a value of node: role 'field' (struct member), 'elem' (array element),
    'entry' (map value)."""
    k = node.kind
    if k == 'string':
        return 'const char *'
    if k == 'integer':
        return 'int64_t '
    if k == 'number':
        return 'double '
    if k == 'boolean':
        return 'bool '
    if k == 'enum':
        return 'enum %s ' % node.cname
    if k in ('object', 'oneof'):
        return 'struct %s ' % node.cname if role == 'elem' else 'struct %s *' % node.cname
    if k == 'array' and role in ('elem', 'entry'):
        return 'struct %s ' % node.cname
    if k == 'any':
        return 'const struct json_value *'
    raise AssertionError(k)


class Model:
    def __init__(self, bundle):
        self.b = bundle
        self.doc = bundle.bundled
        self.errors = []
        self.nodes = {}           # cname -> Node
        self.comp_nodes = {}      # component name -> Node
        self.inline_memo = {}     # id(schema) -> Node
        self.patterns = []        # translated, index = pattern id
        self.pattern_src = []
        self.c_names = {}         # global C identifiers -> Loc, for clash detection
        self.ops = []
        self.reserved_structs = _runtime_structs()
        self.build()

    # -- helpers -------------------------------------------------------------------------------
    def loc(self, node, fallback=None):
        l = self.b.loc_of(node)
        return l if l is not None else fallback

    def fail(self, loc, msg):
        raise SpecError(['%s: %s' % (loc, msg)])

    def claim(self, name, loc, what):
        if name in self.c_names:
            self.fail(loc, '%s maps to the C name %s, already used by %s'
                      % (what, name, self.c_names[name]))
        self.c_names[name] = loc

    def component(self, section, ref, loc):
        m = re.match(r'^#/components/([^/]+)/(.+)$', ref or '')
        if not m or m.group(1) != section:
            self.fail(loc, 'expected a $ref to #/components/%s/...' % section)
        name = m.group(2).replace('~1', '/').replace('~0', '~')
        comps = self.doc['components'].get(section, {})
        if name not in comps:
            self.fail(loc, 'unresolved $ref %s' % ref)
        return name, comps[name]

    def deref(self, section, obj, loc):
        """Follow a component $ref (parameters, responses, headers, requestBodies)."""
        seen = 0
        while isinstance(obj, dict) and '$ref' in obj:
            if set(obj) - {'$ref', 'description', 'summary'}:
                self.fail(loc, 'keys next to $ref are not supported here')
            name, obj2 = self.component(section, obj['$ref'], loc)
            loc = self.loc(obj2, loc)
            obj = obj2
            seen += 1
            if seen > 20:
                self.fail(loc, 'circular $ref')
        if not isinstance(obj, dict):
            self.fail(loc, 'must be a mapping')
        return obj, loc

    # -- build -------------------------------------------------------------------------------
    def build(self):
        doc = self.doc
        root = Loc(self.b.root_rel, '')
        v = doc.get('openapi')
        if not isinstance(v, str) or not v.startswith('3.1.'):
            self.fail(root / 'openapi', 'openapi must be 3.1.x')
        self.check_schema_keywords()
        if self.errors:
            raise SpecError(self.errors)
        self.build_scopes(root)
        self.build_roles(root)
        self.base = self.server_base(doc.get('servers'), root / 'servers')
        comps = doc['components']
        schemas = comps.get('schemas', {})
        for name in schemas:
            self.component_node(name, self.loc(schemas[name], root))
        paths = doc.get('paths') or {}
        if not isinstance(paths, dict):
            self.fail(root / 'paths', 'paths must be a mapping')
        seen_ids = {}
        for path, item in paths.items():
            self.build_path(path, item, root / 'paths' / path, seen_ids)
        if self.errors:
            raise SpecError(self.errors)
        if not self.ops:
            self.fail(root / 'paths', 'the document has no operations')
        self.check_routes()
        self.apis = sorted({op.api for op in self.ops})
        self.ops.sort(key=lambda o: (o.api, o.full_path, METHODS.index(o.method.lower())))
        self.node_list = sorted(self.nodes.values(), key=lambda n: n.cname)
        self.build_schema_groups(root)
        self.build_routes()
        n = len(self.scopes)
        self.scopes_all = 'UINT64_MAX' if n == 64 else '(UINT64_C(1) << %d) - 1' % n \
            if n else 'UINT64_C(0)'

    def build_schema_groups(self, root):
        """Splits the schemas by the file that defines them, so that a change to one API's
        schemas recompiles only that API's code: group = file stem (`common` for common.yaml
        and the root). Each group's header includes the headers of the groups its schemas use;
        those includes must not form a cycle (a schema two API files share belongs in
        common.yaml). Sets node.group, self.groups [(name, nodes, deps)] and op.schema_groups."""
        def stem(loc):
            name = os.path.splitext(os.path.basename(loc.file))[0]
            return 'common' if loc.file == self.b.root_rel else name
        for n in self.node_list:
            n.group = stem(n.loc)
        deps = {}
        for n in self.node_list:
            for child in _node_children(n):
                if child.group != n.group:
                    deps.setdefault(n.group, set()).add(child.group)
        names = sorted({n.group for n in self.node_list}, key=lambda g: (g != 'common', g))
        order, state = [], {}

        def visit(g, trail):
            if state.get(g) == 'done':
                return
            if state.get(g) == 'open':
                cyc = trail[trail.index(g):] + [g]
                self.fail(root / 'components' / 'schemas',
                          'the schemas of %s use each other (%s); move what they share to '
                          'common.yaml' % (' and '.join(sorted(set(cyc))), ' -> '.join(cyc)))
                return
            state[g] = 'open'
            for d in sorted(deps.get(g, ())):
                visit(d, trail + [g])
            state[g] = 'done'
            order.append(g)
        for g in names:
            visit(g, [])
        if self.errors:
            raise SpecError(self.errors)
        self.groups = [(g, [n for n in self.node_list if n.group == g], sorted(deps.get(g, ())))
                       for g in order]
        for op in self.ops:
            op.schema_groups = sorted({n.group for n in _reachable_nodes(op)},
                                      key=lambda g: order.index(g))

    def build_routes(self):
        """The route table: one entry per distinct template, in match precedence order
        (fewer segments first; at the first differing segment a literal beats a parameter)."""
        self.route_ops = sorted(self.ops, key=lambda o: (o.full_path,
                                                         METHODS.index(o.method.lower())))
        for i, op in enumerate(self.route_ops):
            op.index = i
        groups = {}
        for op in self.route_ops:
            groups.setdefault(op.full_path, []).append(op)
        routes = []
        for full, ops in groups.items():
            segs = []
            for s in full.split('/')[1:]:
                if s.startswith('{'):
                    segs.append({'literal': None, 'name': s[1:-1]})
                else:
                    segs.append({'literal': s, 'name': None})
            routes.append({'path': full, 'segs': segs, 'ops': [o.index for o in ops],
                           'allow': ', '.join(o.method for o in ops),
                           'key': (len(segs), tuple((0, s['literal']) if s['literal'] is not None
                                                    else (1, '') for s in segs))})
        routes.sort(key=lambda r: r['key'])
        self.routes = routes
        self.max_segs = max([len(r['segs']) for r in routes] + [1])

    def build_scopes(self, root):
        xs = self.doc.get('x-scopes', {})
        if not isinstance(xs, dict):
            self.fail(root / 'x-scopes', 'x-scopes must map scope names to descriptions')
        names = sorted(xs)
        if len(names) > MAX_SCOPES:
            self.fail(root / 'x-scopes', 'at most %d scopes are supported' % MAX_SCOPES)
        self.scopes = []
        for i, n in enumerate(names):
            if not re.match(r'^[a-z][a-z0-9_.:-]*$', n):
                self.fail(root / 'x-scopes' / n, 'scope names are lower-case words like '
                                                 'payments:read')
            macro = 'SCOPE_' + upper(n)
            self.claim(macro, root / 'x-scopes' / n, 'scope %s' % n)
            self.scopes.append({'name': n, 'macro': macro, 'bit': i,
                                'description': comment_text(xs[n])})
        self.scope_by_name = {s['name']: s for s in self.scopes}
        # Scopes never delegated to an OAuth application (the oauth2 scheme's x-withheld-scopes;
        # codegen/served.py checks the list and leaves them out of the flow): SCOPES_WITHHELD.
        withheld = set()
        schemes = (self.doc.get('components') or {}).get('securitySchemes') or {}
        for sch in schemes.values():
            if isinstance(sch, dict) and isinstance(sch.get('x-withheld-scopes'), list):
                withheld.update(x for x in sch['x-withheld-scopes'] if x in self.scope_by_name)
        self.withheld_macros = [s['macro'] for s in self.scopes if s['name'] in withheld]

    def build_roles(self, root):
        """Built-in roles (root x-roles, in source order): key -> {name, description,
        scopes}. Every scope must be declared; the generated table gives each role's scopes in
        catalogue order and as a mask."""
        xr = self.doc.get('x-roles', {})
        if not isinstance(xr, dict):
            self.fail(root / 'x-roles', 'x-roles must map role keys to {name, description, '
                                        'scopes}')
        self.roles = []
        for key, r in xr.items():
            loc = root / 'x-roles' / key
            if not re.match(r'^[a-z][a-z0-9_]{1,39}$', str(key)):
                self.fail(loc, 'role keys are lower-case words like treasurer')
            if not isinstance(r, dict) or set(r) - {'name', 'description', 'scopes'} or \
                    not isinstance(r.get('name'), str) or \
                    not isinstance(r.get('description', ''), str) or \
                    not isinstance(r.get('scopes'), list):
                self.fail(loc, 'a role is {name: text, description: text, scopes: [names]}')
            for i, sc in enumerate(r['scopes']):
                if sc not in self.scope_by_name:
                    self.fail(loc / 'scopes' / i, 'scope %s is not declared in the root '
                                                  'x-scopes' % sc)
            if len(set(r['scopes'])) != len(r['scopes']):
                self.fail(loc / 'scopes', 'a scope is listed twice')
            granted = [sc for sc in self.scopes if sc['name'] in r['scopes']]
            self.roles.append({'key': key, 'name': r['name'],
                               'description': ' '.join(str(r.get('description', '')).split()),
                               'scopes': ' '.join(sc['name'] for sc in granted),
                               'mask': ' | '.join(sc['macro'] for sc in granted) or '0'})

    def server_base(self, servers, loc):
        if servers is None:
            return ''
        if not isinstance(servers, list) or len(servers) != 1 or \
                not isinstance(servers[0], dict) or not isinstance(servers[0].get('url'), str):
            self.fail(loc, 'servers must be a list of exactly one {url: /prefix}')
        url = servers[0]['url']
        if not url.startswith('/') or '{' in url or '?' in url or '#' in url:
            self.fail(loc / 0 / 'url', 'the server url must be an absolute path like /v1')
        return url.rstrip('/')

    # -- keyword allow-list over every schema -----------------------------------------------------
    def check_schema_keywords(self):
        doc = self.doc
        comps = doc['components']
        for name, s in comps.get('schemas', {}).items():
            self.walk_schema(s, self.loc(s, Loc(self.b.root_rel, '/components/schemas/' + name)))
        for section in ('parameters', 'headers'):
            for name, p in comps.get(section, {}).items():
                if isinstance(p, dict) and isinstance(p.get('schema'), dict):
                    self.walk_schema(p['schema'], self.loc(p['schema']))
        for name, r in comps.get('responses', {}).items():
            self.walk_content(r)
        for name, r in comps.get('requestBodies', {}).items():
            self.walk_content(r)
        for path, item in (doc.get('paths') or {}).items():
            if not isinstance(item, dict):
                continue
            for p in item.get('parameters') or []:
                if isinstance(p, dict) and isinstance(p.get('schema'), dict):
                    self.walk_schema(p['schema'], self.loc(p['schema']))
            for m in METHODS:
                op = item.get(m)
                if not isinstance(op, dict):
                    continue
                for p in op.get('parameters') or []:
                    if isinstance(p, dict) and isinstance(p.get('schema'), dict):
                        self.walk_schema(p['schema'], self.loc(p['schema']))
                if isinstance(op.get('requestBody'), dict):
                    self.walk_content(op['requestBody'])
                for code, r in (op.get('responses') or {}).items():
                    if isinstance(r, dict):
                        self.walk_content(r)

    def walk_content(self, r):
        if not isinstance(r, dict):
            return
        for media, mt in (r.get('content') or {}).items():
            if media == BINARY_MEDIA:
                continue   # {type: string, format: binary}: checked where the response is built
            if isinstance(mt, dict) and isinstance(mt.get('schema'), dict):
                self.walk_schema(mt['schema'], self.loc(mt['schema']))
        for hname, h in (r.get('headers') or {}).items():
            if isinstance(h, dict) and isinstance(h.get('schema'), dict):
                self.walk_schema(h['schema'], self.loc(h['schema']))

    def walk_schema(self, s, loc):
        loc = self.loc(s, loc)
        if not isinstance(s, dict):
            self.errors.append('%s: boolean or non-object schemas are not supported' % loc)
            return
        for k in s:
            if k not in SCHEMA_KEYWORDS:
                hint = ''
                if k == 'nullable':
                    hint = ' (OpenAPI 3.0; write type: [T, "null"])'
                self.errors.append('%s: unsupported schema keyword %s%s' % (loc / k, k, hint))
        for k in ('properties',):
            if isinstance(s.get(k), dict):
                for pn, ps in s[k].items():
                    self.walk_schema(ps, loc / k / pn)
        for k in ('items', 'additionalProperties'):
            if isinstance(s.get(k), dict):
                self.walk_schema(s[k], loc / k)
        for k in ('allOf', 'oneOf'):
            if isinstance(s.get(k), list):
                for i, m in enumerate(s[k]):
                    self.walk_schema(m, loc / k / i)
        if 'format' in s and s['format'] in X_FORMATS:
            self.errors.append('%s: format %r is not a standard format (generic validators '
                               'fail on it): write x-format: %s with a pattern'
                               % (loc / 'format', s['format'], s['format']))
        elif 'format' in s and s['format'] not in STRING_FORMATS and \
                s['format'] not in INTEGER_FORMATS:
            self.errors.append('%s: unknown format %r%s' % (
                loc / 'format', s['format'], ' (only in an %s response)' % BINARY_MEDIA
                if s['format'] == 'binary' else ''))
        if 'x-format' in s and s['x-format'] not in X_FORMATS:
            self.errors.append('%s: unknown x-format %r' % (loc / 'x-format', s['x-format']))
        if 'pattern' in s:
            try:
                translate_pattern(s['pattern'])
            except ValueError as e:
                self.errors.append('%s: unsupported pattern %r: %s' % (loc / 'pattern',
                                                                      s['pattern'], e))

    # -- schema merge (allOf, $ref with siblings) --------------------------------------------------
    def merge(self, s, loc, stack=()):
        """Flatten $ref chains and allOf into one keyword dict. Returns (eff, proplocs)."""
        loc = self.loc(s, loc)
        if not isinstance(s, dict):
            self.fail(loc, 'boolean or non-object schemas are not supported')
        if '$ref' in s:
            name, target = self.component('schemas', s['$ref'], loc / '$ref')
            if name in stack:
                self.fail(loc, 'allOf/$ref cycle through %s' % name)
            base, blocs = self.merge(target, self.loc(target, loc), stack + (name,))
            rest = {k: v for k, v in s.items() if k != '$ref'}
            if 'allOf' in rest:
                rest, rlocs = self.merge(rest, loc, stack)
            else:
                rlocs = {pn: loc / 'properties' / pn for pn in rest.get('properties', {})}
            return self.combine(rest, rlocs, base, blocs, loc)
        if 'allOf' in s:
            members = s['allOf']
            if not isinstance(members, list) or not members:
                self.fail(loc / 'allOf', 'allOf must be a non-empty list')
            acc = {k: v for k, v in s.items() if k != 'allOf'}
            alocs = {pn: loc / 'properties' / pn for pn in acc.get('properties', {})}
            for i, m in enumerate(members):
                e, elocs = self.merge(m, loc / 'allOf' / i, stack)
                acc, alocs = self.combine(acc, alocs, e, elocs, loc / 'allOf' / i)
            return acc, alocs
        return dict(s), {pn: loc / 'properties' / pn for pn in (s.get('properties') or {})}

    def combine(self, a, alocs, b, blocs, loc):
        out = dict(a)
        locs = dict(alocs)
        for k, v in b.items():
            if k not in out:
                out[k] = v
                if k == 'properties':
                    locs.update(blocs)
                continue
            if k in ANNOTATIONS:
                continue
            if k == 'properties':
                props = dict(out[k])
                for pn, ps in v.items():
                    if pn in props and props[pn] != ps:
                        self.fail(loc, 'property %s is defined differently by two allOf '
                                       'members' % pn)
                    if pn not in props:
                        props[pn] = ps
                        locs[pn] = blocs.get(pn, loc)
                out[k] = props
            elif k == 'required':
                out[k] = list(out[k]) + [x for x in v if x not in out[k]]
            elif k == 'type':
                ta = set(out[k]) if isinstance(out[k], list) else {out[k]}
                tb = set(v) if isinstance(v, list) else {v}
                t = ta & tb
                if not t - {'null'}:
                    self.fail(loc, 'allOf members have incompatible types')
                t = sorted(t, key=lambda x: x == 'null')
                out[k] = t if len(t) > 1 else t[0]
            elif out[k] != v:
                self.fail(loc, 'allOf members give %s different values' % k)
        return out, locs

    # -- nodes -------------------------------------------------------------------------------------
    def component_node(self, name, loc):
        if name in self.comp_nodes:
            return self.comp_nodes[name]
        s = self.doc['components']['schemas'][name]
        loc = self.loc(s, loc)
        if not re.match(r'^[A-Za-z][A-Za-z0-9]*$', name):
            self.fail(loc, 'schema names are PascalCase identifiers')
        node = Node(snake(name), loc, component=name)
        self.comp_nodes[name] = node
        self.fill(node, s, loc)
        return node

    def node_of(self, s, loc, cname):
        """The node for a schema at a use site (property, items, parameter, body...)."""
        loc = self.loc(s, loc)
        if not isinstance(s, dict):
            self.fail(loc, 'boolean or non-object schemas are not supported')
        if '$ref' in s and not (set(s) - {'$ref'} - ANNOTATIONS - SITE_FLAGS):
            name, _ = self.component('schemas', s['$ref'], loc / '$ref')
            return self.component_node(name, loc)
        if id(s) in self.inline_memo:
            return self.inline_memo[id(s)]
        node = Node(cname, loc)
        self.inline_memo[id(s)] = node
        self.fill(node, s, loc)
        return node

    def site_flags(self, s, loc):
        eff, _ = self.merge(s, loc)
        ro = eff.get('readOnly', False)
        wo = eff.get('writeOnly', False)
        if not isinstance(ro, bool) or not isinstance(wo, bool):
            self.fail(loc, 'readOnly/writeOnly must be booleans')
        if ro and wo:
            self.fail(loc, 'a property cannot be both readOnly and writeOnly')
        return ro, wo, eff.get('default', None), 'default' in eff

    def register(self, node):
        """Record a finished node and claim every C name it will define."""
        what = 'schema %s' % (node.component or node.cname)
        if node.cname in self.reserved_structs and node.kind in ('object', 'oneof', 'map'):
            self.fail(node.loc, 'struct %s clashes with the runtime type of that name; rename '
                                'the schema' % node.cname)
        self.claim('validate_' + node.cname, node.loc, what)
        if node.kind in ('object', 'oneof', 'enum'):
            self.claim(node.cname, node.loc, what)
        if node.kind in ('object', 'oneof'):
            self.claim('decode_' + node.cname, node.loc, what)
            self.claim('encode_' + node.cname, node.loc, what)
        if node.kind == 'oneof':
            self.claim(node.cname + '_kind', node.loc, what)
            for v in node.variants:
                self.claim(v.const, node.loc, 'oneOf mapping %s' % v.key)
        if node.kind == 'enum':
            self.claim(node.cname + '_str', node.loc, what)
            self.claim(node.cname + '_parse', node.loc, what)
            self.claim(node.cname + '_set', node.loc, what)  # when a filter set (set_text)
            for v, c in node.enum_values:
                self.claim(c, node.loc, 'enum value %r' % v)
        if node.kind == 'map' or (node.kind == 'object' and isinstance(node.addl, Node)):
            self.claim(node.cname + '_entry', node.loc, what)
        self.nodes[node.cname] = node

    def fill(self, node, s, loc):
        eff, proplocs = self.merge(s, loc)
        node.description = first_sentence(eff.get('description') or eff.get('title') or '')
        t = eff.get('type')
        types = t if isinstance(t, list) else ([t] if t is not None else [])
        for x in types:
            if x not in ('string', 'integer', 'number', 'boolean', 'object', 'array', 'null'):
                self.fail(loc / 'type', 'unsupported type %r' % (x,))
        if 'null' in types:
            node.nullable = True
            types = [x for x in types if x != 'null']
            if not types:
                self.fail(loc / 'type', 'type null alone is not supported')
        if len(types) > 1:
            self.fail(loc / 'type', 'only [T, "null"] type unions are supported')
        base = types[0] if types else None
        used = set(eff) - ANNOTATIONS - SITE_FLAGS - {'type'}
        if 'oneOf' in eff:
            if base not in (None, 'object'):
                self.fail(loc, 'oneOf is only supported for objects')
            self.fill_oneof(node, eff, loc)
            return
        if 'discriminator' in eff:
            self.fail(loc / 'discriminator', 'discriminator needs oneOf')
        if base is None:
            if used:
                self.fail(loc, 'a schema with %s needs a type' % ', '.join(sorted(used)))
            node.kind = 'any'
            node.trivial = True
            self.register(node)
            return
        wrong = used - TYPE_KEYWORDS[base]
        if wrong:
            self.fail(loc / sorted(wrong)[0], 'keyword %s does not apply to type %s'
                      % (sorted(wrong)[0], base))
        getattr(self, 'fill_' + base)(node, eff, loc, proplocs)

    def set_type(self, node, json_type, test, detail):
        node.type_name = json_type
        node.json_type_test = test
        node.type_detail = detail + (' or null' if node.nullable else '')

    def fill_string(self, node, eff, loc, _):
        self.set_type(node, 'string', '(v->type == JSON_STRING)', 'must be a string')
        node.kind = 'enum' if 'enum' in eff else 'string'
        ch = node.checks
        lo, hi = eff.get('minLength'), eff.get('maxLength')
        for k, v in (('minLength', lo), ('maxLength', hi)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                self.fail(loc / k, '%s must be a non-negative integer' % k)
        if lo is not None or hi is not None:
            ch.append({'op': 'length', 'min': lo, 'max': hi})
        if 'pattern' in eff:
            idx = self.pattern_index(eff['pattern'], loc / 'pattern')
            ch.append({'op': 'pattern', 'index': idx, 'source': eff['pattern'],
                       'detail': 'must match the pattern %s' % eff['pattern']})
        if 'format' in eff:
            f = eff['format']
            if f not in STRING_FORMATS:
                self.fail(loc / 'format', 'format %r does not apply to strings' % f)
            node.password = f == 'password'  # its value is a secret (never audited)
            if STRING_FORMATS[f]:
                ch.append({'op': 'format', 'func': STRING_FORMATS[f][0],
                           'detail': STRING_FORMATS[f][1]})
        self.fill_x_format(node, eff, loc)
        if 'const' in eff:
            if not isinstance(eff['const'], str):
                self.fail(loc / 'const', 'const must be a string')
            ch.append({'op': 'const_string', 'value': eff['const'],
                       'detail': 'must be %s' % json.dumps(eff['const'])})
        if node.kind == 'enum':
            vals = eff['enum']
            if not isinstance(vals, list) or not vals:
                self.fail(loc / 'enum', 'enum must be a non-empty list')
            seen = {}
            for v in vals:
                if v is None:
                    if not node.nullable:
                        self.fail(loc / 'enum', 'null in enum needs type [string, "null"]')
                    node.enum_has_null = True
                    continue
                if not isinstance(v, str):
                    self.fail(loc / 'enum', 'enum values of a string must be strings')
                const = '%s_%s' % (node.upper, upper(v))
                if const in seen:
                    self.fail(loc / 'enum', 'enum values %r and %r map to the same C constant %s'
                              % (seen[const], v, const))
                seen[const] = v
                node.enum_values.append((v, const))
            if node.nullable and not node.enum_has_null:
                self.fail(loc / 'enum', 'a nullable enum must list null')
            ch.append({'op': 'enum_string', 'values': [v for v, _ in node.enum_values],
                       'detail': 'must be one of: ' + ', '.join(v for v, _ in node.enum_values)})
        self.register(node)

    def fill_x_format(self, node, eff, loc):
        """x-format: one of ours, checked exactly by the runtime, always with a pattern a
        generic validator can check; decimal with its precision, scale and decimal bounds."""
        xf = eff.get('x-format')
        used = sorted(k for k in DECIMAL_KEYWORDS if k in eff)
        if xf != 'decimal' and used:
            self.fail(loc / used[0], '%s needs x-format: decimal' % used[0])
        if xf is None:
            return
        if xf not in X_FORMATS:
            self.fail(loc / 'x-format', 'unknown x-format %r' % (xf,))
        if 'pattern' not in eff:
            self.fail(loc / 'x-format', 'x-format %s needs a pattern that generic validators '
                                        'can check' % xf)
        if X_FORMATS[xf]:
            node.checks.append({'op': 'format', 'func': X_FORMATS[xf][0],
                                'detail': X_FORMATS[xf][1]})
            return
        p, sc = eff.get('x-precision'), eff.get('x-scale')
        if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 18:
            self.fail(loc / 'x-precision', 'x-precision must be an integer from 1 to 18')
        if isinstance(sc, bool) or not isinstance(sc, int) or not 0 <= sc <= p:
            self.fail(loc / 'x-scale', 'x-scale must be an integer from 0 to x-precision')
        bounds = {}
        for k in ('x-minimum', 'x-exclusive-minimum', 'x-maximum', 'x-exclusive-maximum'):
            if k in eff:
                bounds[k] = self.decimal_value(eff[k], loc / k, k)
        for a, b in (('x-minimum', 'x-exclusive-minimum'), ('x-maximum', 'x-exclusive-maximum')):
            if a in bounds and b in bounds:
                self.fail(loc / b, '%s and %s together: keep one' % (a, b))
        lo = bounds.get('x-minimum', bounds.get('x-exclusive-minimum'))
        negative = lo is None or lo[0] < 0
        d = {'op': 'decimal', 'precision': p, 'scale': sc, 'negative': negative,
             'bounds': [],
             'detail': 'must be a decimal number%s with at most %d significant digit%s and %d '
                       'decimal place%s, without exponent' % (
                           '' if negative else ' without sign', p, '' if p == 1 else 's', sc,
                           '' if sc == 1 else 's')}
        for k, (v, units, scale, text) in bounds.items():
            low = 'minimum' in k
            excl = 'exclusive' in k
            d['bounds'].append({'code': 'minimum' if low else 'maximum',
                                'units': int_literal(units), 'scale': scale,
                                'cmp': ('<=' if excl else '<') if low else ('>=' if excl else '>'),
                                'detail': 'must be %s %s' % (('>' if excl else '>=') if low else
                                                             ('<' if excl else '<='), text)})
        node.checks.append(d)

    def decimal_value(self, v, loc, what):
        """A decimal bound: a string in the decimal grammar with at most 18 significant digits
        and 18 decimal places -> (Decimal, units, scale, text), normalised."""
        if not isinstance(v, str) or not re.match(r'^-?(0|[1-9][0-9]*)([.][0-9]+)?$', v):
            self.fail(loc, '%s must be a decimal string like "0" or "-1.5"' % what)
        d = decimal.Decimal(v)
        digits = v.lstrip('-').replace('.', '').lstrip('0')
        frac = v.split('.')[1] if '.' in v else ''
        if len(digits) > 18 or len(frac) > 18:
            self.fail(loc, '%s has more than 18 significant digits or decimal places' % what)
        scale = len(frac.rstrip('0'))
        units = int((d * (decimal.Decimal(10) ** scale)).to_integral_exact())
        return d, units, scale, v

    def int_value(self, v, loc, what):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (isinstance(v, float) and not v.is_integer()):
            self.fail(loc, '%s of an integer must be an integer' % what)
        v = int(v)
        if v < INT64_MIN or v > INT64_MAX:
            self.fail(loc, '%s is outside int64' % what)
        return v

    def fill_integer(self, node, eff, loc, _):
        node.kind = 'integer'
        self.set_type(node, 'integer', '(v->type == JSON_NUMBER)', 'must be an integer')
        lo = hi = None
        lo_x = hi_x = False
        if 'minimum' in eff:
            lo = self.int_value(eff['minimum'], loc / 'minimum', 'minimum')
        if 'exclusiveMinimum' in eff:
            x = self.int_value(eff['exclusiveMinimum'], loc / 'exclusiveMinimum',
                               'exclusiveMinimum')
            if lo is None or x >= lo:
                lo, lo_x = x, True
        if 'maximum' in eff:
            hi = self.int_value(eff['maximum'], loc / 'maximum', 'maximum')
        if 'exclusiveMaximum' in eff:
            x = self.int_value(eff['exclusiveMaximum'], loc / 'exclusiveMaximum',
                               'exclusiveMaximum')
            if hi is None or x <= hi:
                hi, hi_x = x, True
        f = eff.get('format')
        if f is not None and f not in INTEGER_FORMATS:
            self.fail(loc / 'format', 'format %r does not apply to integers' % f)
        ch = node.checks
        if f == 'int32':
            if lo is None or (lo < INT32_MIN if not lo_x else lo < INT32_MIN - 1):
                ch.append({'op': 'int_min', 'value': int_literal(INT32_MIN), 'code': 'format',
                           'detail': 'must be a 32-bit integer', 'excl': False})
            if hi is None or (hi > INT32_MAX if not hi_x else hi > INT32_MAX + 1):
                ch.append({'op': 'int_max', 'value': int_literal(INT32_MAX), 'code': 'format',
                           'detail': 'must be a 32-bit integer', 'excl': False})
        if lo is not None:
            ch.append({'op': 'int_min', 'value': int_literal(lo), 'code': 'minimum',
                       'excl': lo_x, 'detail': 'must be %s %d' % ('>' if lo_x else '>=', lo)})
        if hi is not None:
            ch.append({'op': 'int_max', 'value': int_literal(hi), 'code': 'maximum',
                       'excl': hi_x, 'detail': 'must be %s %d' % ('<' if hi_x else '<=', hi)})
        if 'multipleOf' in eff:
            m = self.int_value(eff['multipleOf'], loc / 'multipleOf', 'multipleOf')
            if m <= 0:
                self.fail(loc / 'multipleOf', 'multipleOf must be positive')
            ch.append({'op': 'multiple_of', 'value': int_literal(m),
                       'detail': 'must be a multiple of %d' % m})
        if 'enum' in eff:
            vals = eff['enum']
            if not isinstance(vals, list) or not vals or \
                    any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
                self.fail(loc / 'enum', 'enum of an integer must list integers')
            ch.append({'op': 'enum_int', 'values': [int_literal(v) for v in vals],
                       'detail': 'must be one of: ' + ', '.join(str(v) for v in vals)})
        if 'const' in eff:
            c = self.int_value(eff['const'], loc / 'const', 'const')
            ch.append({'op': 'enum_int', 'values': [int_literal(c)], 'code': 'const',
                       'detail': 'must be %d' % c})
        self.register(node)

    def fill_number(self, node, eff, loc, _):
        node.kind = 'number'
        self.set_type(node, 'number', '(v->type == JSON_NUMBER)', 'must be a number')
        for k, op, code, sym in (('minimum', 'num_min', 'minimum', '>='),
                                 ('exclusiveMinimum', 'num_min', 'minimum', '>'),
                                 ('maximum', 'num_max', 'maximum', '<='),
                                 ('exclusiveMaximum', 'num_max', 'maximum', '<')):
            if k in eff:
                v = eff[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    self.fail(loc / k, '%s must be a number' % k)
                try:
                    lit = double_literal(v)
                except ValueError:
                    self.fail(loc / k, '%s must be finite' % k)
                node.checks.append({'op': op, 'value': lit, 'code': code,
                                    'excl': k.startswith('exclusive'),
                                    'detail': 'must be %s %s' % (sym, v)})
        self.register(node)

    def fill_boolean(self, node, eff, loc, _):
        node.kind = 'boolean'
        self.set_type(node, 'boolean', '(v->type == JSON_TRUE || v->type == JSON_FALSE)',
                      'must be a boolean')
        if 'const' in eff:
            if not isinstance(eff['const'], bool):
                self.fail(loc / 'const', 'const of a boolean must be true or false')
            node.checks.append({'op': 'const_bool', 'value': eff['const'],
                                'detail': 'must be %s' % json.dumps(eff['const'])})
        self.register(node)

    def count_keyword(self, eff, k, loc):
        v = eff.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            self.fail(loc / k, '%s must be a non-negative integer' % k)
        return v

    def fill_array(self, node, eff, loc, _):
        node.kind = 'array'
        self.set_type(node, 'array', '(v->type == JSON_ARRAY)', 'must be an array')
        items = eff.get('items', {})
        if not isinstance(items, dict):
            self.fail(loc / 'items', 'items must be one schema')
        node.items = self.node_of(items, loc / 'items', node.cname + '_item')
        if node.items.kind == 'map':
            self.fail(loc / 'items', 'arrays of maps are not supported; wrap the map in an '
                                     'object')
        if node.items.kind == 'array':
            self.array_struct(node.items)
        if node.items.nullable and node.items.kind != 'any':
            self.fail(loc / 'items', 'nullable array items are not supported')
        lo = self.count_keyword(eff, 'minItems', loc)
        hi = self.count_keyword(eff, 'maxItems', loc)
        if lo is not None:
            node.checks.append({'op': 'min_items', 'value': lo,
                                'detail': 'must have at least %s' % plural(lo, 'item')})
        if hi is not None:
            node.checks.append({'op': 'max_items', 'value': hi,
                                'detail': 'must have at most %s' % plural(hi, 'item')})
        u = eff.get('uniqueItems', False)
        if not isinstance(u, bool):
            self.fail(loc / 'uniqueItems', 'uniqueItems must be a boolean')
        if u:
            node.checks.append({'op': 'unique_items', 'detail': 'must not contain duplicates'})
        self.register(node)

    def array_struct(self, node):
        """An array that is an array item or a map value is stored by value as
        struct <name> { T *items; size_t count; }."""
        if not node.array_struct:
            node.array_struct = True
            self.claim(node.cname, node.loc, 'schema %s' % (node.component or node.cname))

    def fill_object(self, node, eff, loc, proplocs):
        self.set_type(node, 'object', '(v->type == JSON_OBJECT)', 'must be an object')
        props = eff.get('properties') or {}
        if not isinstance(props, dict):
            self.fail(loc / 'properties', 'properties must be a mapping')
        required = eff.get('required', [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            self.fail(loc / 'required', 'required must be a list of property names')
        if len(set(required)) != len(required):
            self.fail(loc / 'required', 'required lists a property twice')
        for r in required:
            if r not in props:
                self.fail(loc / 'required', 'required property %s is not in properties' % r)
        addl = eff.get('additionalProperties', None)
        if addl is not None and not isinstance(addl, (bool, dict)):
            self.fail(loc / 'additionalProperties', 'additionalProperties must be a boolean or '
                                                     'a schema')
        lo = self.count_keyword(eff, 'minProperties', loc)
        hi = self.count_keyword(eff, 'maxProperties', loc)
        if lo is not None:
            node.checks.append({'op': 'min_props', 'value': lo,
                                'detail': 'must have at least %s' % ('1 property' if lo == 1 else '%d properties' % lo)})
        if hi is not None:
            node.checks.append({'op': 'max_props', 'value': hi,
                                'detail': 'must have at most %s' % ('1 property' if hi == 1 else '%d properties' % hi)})
        if addl is False:
            node.addl = False
        elif isinstance(addl, dict) and (set(addl) - ANNOTATIONS):
            sub = node.cname + ('_value' if not props else '_additional')
            node.addl = self.node_of(addl, loc / 'additionalProperties', sub)
            if node.addl.kind == 'map':
                self.fail(loc / 'additionalProperties', 'map values that are maps are not '
                                                        'supported; wrap them in an object')
            if node.addl.kind == 'array':
                self.array_struct(node.addl)
            if node.addl.nullable and node.addl.kind != 'any':
                self.fail(loc / 'additionalProperties', 'nullable map values are not supported')
        if not props:
            if isinstance(node.addl, Node):
                node.kind = 'map'
                node.value = node.addl
            else:
                node.kind = 'any'
            self.register(node)
            return
        node.kind = 'object'
        node.required = required
        members = set()
        for pn, ps in props.items():
            ploc = proplocs.get(pn, loc / 'properties' / pn)
            fc = snake(pn)
            child = self.node_of(ps, ploc, '%s_%s' % (node.cname, fc))
            ro, wo, default, has_default = self.site_flags(ps, ploc)
            f = Field(pn, fc, child, pn in required, ro, wo, loc=ploc)
            if has_default:
                f.default = self.default_literal(child, default, ploc)
                f.default_json = json.dumps(default)
            self.add_members(members, f, ploc)
            f.comment = self.field_comment(f)
            node.fields.append(f)
        if isinstance(node.addl, Node):
            for m in ('additional', 'additional_count'):
                if m in members:
                    self.fail(loc, 'member %s clashes with the additionalProperties entries' % m)
        self.register(node)

    def add_members(self, members, f, loc):
        names = [f.cname]
        if f.kind in ('array', 'map'):
            names.append(f.cname + '_count')
        if f.nullable:
            names.append(f.cname + '_is_null')
        if f.optional:
            names.append('has_' + f.cname)
        for n in names:
            if n in members:
                self.fail(loc, 'C member %s is used twice in this struct' % n)
            members.add(n)

    def field_comment(self, f):
        parts = ['required' if f.required else 'optional']
        if f.nullable:
            parts.append('nullable')
        if f.read_only:
            parts.append('read-only')
        if f.write_only:
            parts.append('write-only')
        if f.default is not None:
            parts.append('default %s' % f.default_json)
        n = f.node
        if n.component:
            parts.append(n.component)
        if f.cname != f.json_name:
            parts.append('JSON "%s"' % f.json_name)
        return comment_text(', '.join(parts))

    def default_literal(self, node, v, loc):
        k = node.kind
        if v is None:
            self.fail(loc / 'default', 'default null is not supported')
        if k == 'string' and isinstance(v, str):
            return c_string(v)
        if k == 'enum' and isinstance(v, str):
            for val, const in node.enum_values:
                if val == v:
                    return const
            self.fail(loc / 'default', 'default %r is not one of the enum values' % v)
        if k == 'integer' and isinstance(v, int) and not isinstance(v, bool):
            return int_literal(v)
        if k == 'number' and isinstance(v, (int, float)) and not isinstance(v, bool):
            return double_literal(v)
        if k == 'boolean' and isinstance(v, bool):
            return 'true' if v else 'false'
        self.fail(loc / 'default', 'default values are supported for strings, enums, integers, '
                                   'numbers and booleans of the matching type')

    def fill_oneof(self, node, eff, loc):
        node.kind = 'oneof'
        self.set_type(node, 'object', '(v->type == JSON_OBJECT)', 'must be an object')
        extra = set(eff) - ANNOTATIONS - SITE_FLAGS - {'type', 'oneOf', 'discriminator'}
        if extra:
            self.fail(loc / sorted(extra)[0], 'keyword %s next to oneOf is not supported'
                      % sorted(extra)[0])
        d = eff.get('discriminator')
        if not isinstance(d, dict) or not isinstance(d.get('propertyName'), str) or \
                not isinstance(d.get('mapping'), dict) or not d['mapping']:
            self.fail(loc, 'oneOf needs a discriminator with propertyName and mapping')
        if set(d) - {'propertyName', 'mapping'}:
            self.fail(loc / 'discriminator', 'unsupported discriminator keys')
        members = eff['oneOf']
        if not isinstance(members, list) or not members:
            self.fail(loc / 'oneOf', 'oneOf must be a non-empty list')
        names = []
        for i, m in enumerate(members):
            if not isinstance(m, dict) or set(m) != {'$ref'}:
                self.fail(loc / 'oneOf' / i, 'oneOf members must be $refs to component schemas')
            names.append(self.component('schemas', m['$ref'], loc / 'oneOf' / i)[0])
        node.disc_prop = d['propertyName']
        mapped = []
        seen_c = set()
        for key, target in d['mapping'].items():
            tname, _ = self.component('schemas', target, loc / 'discriminator' / 'mapping' / key)
            if tname not in names:
                self.fail(loc / 'discriminator' / 'mapping' / key,
                          'mapping target %s is not a oneOf member' % tname)
            mapped.append(tname)
            cname = snake(key)
            if cname in seen_c or cname == 'kind':
                self.fail(loc / 'discriminator' / 'mapping' / key,
                          'mapping key %s gives a duplicate C member %s' % (key, cname))
            seen_c.add(cname)
            node.variants.append(Variant(key, None, '%s_KIND_%s' % (node.upper, upper(key)),
                                         cname))
        for n in names:
            if n not in mapped:
                self.fail(loc / 'discriminator' / 'mapping', 'oneOf member %s has no mapping'
                                                             % n)
        for v, tname in zip(node.variants, mapped):
            v.node = self.component_node(tname, loc)
            if v.node.kind != 'object':
                self.fail(loc / 'discriminator' / 'mapping' / v.key,
                          'oneOf member %s must be an object with properties' % tname)
            fld = [f for f in v.node.fields if f.json_name == node.disc_prop]
            if not fld or not fld[0].required:
                self.fail(v.node.loc, 'oneOf member %s must have the discriminator property %s '
                                      'as a required property' % (tname, node.disc_prop))
            if fld[0].kind not in ('string', 'enum'):
                self.fail(v.node.loc, 'the discriminator property %s must be a string'
                          % node.disc_prop)
        self.register(node)

    def pattern_index(self, p, loc):
        try:
            t = translate_pattern(p)
        except ValueError as e:
            self.fail(loc, 'unsupported pattern %r: %s' % (p, e))
        if p in self.pattern_src:
            return self.pattern_src.index(p)
        self.pattern_src.append(p)
        self.patterns.append(t)
        return len(self.patterns) - 1

    # -- operations ------------------------------------------------------------------------------
    def build_path(self, path, item, loc, seen_ids):
        loc = self.loc(item, loc)
        if not isinstance(item, dict):
            self.fail(loc, 'a path item must be a mapping')
        if not isinstance(path, str) or not path.startswith('/'):
            self.fail(loc, 'paths start with /')
        api = os.path.splitext(os.path.basename(loc.file))[0]
        if loc.file == self.b.root_rel:
            self.fail(loc, 'path items live in an API file and are referenced from the root '
                           'with $ref')
        for k in item:
            if k in METHODS or k in PATH_ITEM_KEYS:
                continue
            if k in ('head', 'options', 'trace'):
                self.fail(loc / k, 'method %s is not supported' % k.upper())
            self.fail(loc / k, 'unsupported path item key %s' % k)
        base = self.base
        if 'servers' in item:
            base = self.server_base(item['servers'], loc / 'servers')
        segs = path.split('/')[1:]
        tvars = []
        for s in segs:
            if s == '':
                if path != '/':
                    self.fail(loc, 'empty path segment in %s' % path)
                continue
            if '{' in s or '}' in s:
                m = re.match(r'^\{([A-Za-z_][A-Za-z0-9_]*)\}$', s)
                if not m:
                    self.fail(loc, 'a path parameter must be a whole segment: %s' % s)
                if m.group(1) in tvars:
                    self.fail(loc, 'path parameter {%s} appears twice' % m.group(1))
                tvars.append(m.group(1))
        if len(tvars) > ROUTE_MAX_PARAMS:
            self.fail(loc, 'at most %d path parameters' % ROUTE_MAX_PARAMS)
        common = item.get('parameters') or []
        for m in METHODS:
            if m in item:
                self.build_op(api, path, base, m, item[m], loc / m, common, loc, tvars, seen_ids)

    def build_op(self, api, path, base, method, o, loc, common, item_loc, tvars, seen_ids):
        loc = self.loc(o, loc)
        if not isinstance(o, dict):
            self.fail(loc, 'an operation must be a mapping')
        for k in o:
            if k.startswith('x-'):
                if k not in OPERATION_EXTENSIONS:
                    self.fail(loc / k, 'unknown extension %s (known: %s)'
                              % (k, ', '.join(sorted(OPERATION_EXTENSIONS))))
            elif k not in OPERATION_KEYS:
                what = 'unsupported operation key %s' % k
                self.fail(loc / k, what)
        oid = o.get('operationId')
        if not isinstance(oid, str) or not oid:
            self.fail(loc, 'missing operationId')
        if not re.match(r'^[a-z][A-Za-z0-9]*$', oid):
            self.fail(loc / 'operationId', 'operationId must be camelCase: %s' % oid)
        if oid in seen_ids:
            self.fail(loc / 'operationId', 'duplicate operationId %s (also at %s)'
                      % (oid, seen_ids[oid]))
        seen_ids[oid] = loc
        op = Op()
        op.api, op.operation_id, op.method, op.base, op.path = api, oid, method.upper(), base, path
        op.loc = loc
        op.full_path = (base + path) if path != '/' or not base else base
        op.handler = '%s_%s' % (api, snake(oid))
        op.summary = comment_text(o.get('summary') or '')
        tags = o.get('tags') or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            self.fail(loc / 'tags', 'tags must be a list of names')
        op.tag = tags[0] if tags else ''
        self.claim(op.handler, loc, 'operation %s' % oid)
        for suffix in ('_request', '_response'):
            self.claim(op.handler + suffix, loc, 'operation %s' % oid)
        self.claim('dispatch_' + op.handler, loc, 'operation %s' % oid)
        self.build_security(op, o, loc)
        self.build_extensions(op, o, loc)
        self.build_params(op, o, loc, common, item_loc, tvars)
        self.build_body(op, o, loc)
        self.build_responses(op, o, loc)
        self.check_statuses(op, loc)
        op.template_segments = [s for s in op.full_path.split('/')[1:]]
        self.ops.append(op)

    def build_security(self, op, o, loc):
        if 'security' not in o:
            self.fail(loc, 'operation has no security (use security: [] for a public '
                           'operation)')
        sec = o['security']
        if not isinstance(sec, list):
            self.fail(loc / 'security', 'security must be a list')
        op.scopes = []
        if not sec:
            op.is_public = True
            if 'x-any-scope' in o:
                self.fail(loc / 'x-any-scope', 'x-any-scope on a public operation')
            return
        op.is_public = False
        schemes = self.doc['components'].get('securitySchemes', {})
        # The served form [{bearerAuth: [s]}, {oauth2: [s]}] (codegen/served.py) is one
        # requirement: an OAuth application's token is a bearer token checked the same way.
        if len(sec) == 2 and isinstance(sec[1], dict) and len(sec[1]) == 1:
            alt, alt_scopes = next(iter(sec[1].items()))
            if not isinstance(schemes.get(alt), dict) or schemes[alt].get('type') != 'oauth2':
                self.fail(loc / 'security' / 1, 'a second security requirement must name the '
                                                'oauth2 scheme')
            if not isinstance(sec[0], dict) or list(sec[0].values()) != [alt_scopes]:
                self.fail(loc / 'security' / 1 / alt, 'the oauth2 alternative must list the same '
                                                      'scopes as the bearer requirement')
            sec = sec[:1]
        if len(sec) != 1:
            self.fail(loc / 'security', 'exactly one security requirement object is supported '
                                        '(found %d)' % len(sec))
        req = sec[0]
        if not isinstance(req, dict) or len(req) != 1:
            self.fail(loc / 'security' / 0, 'the security requirement must name exactly one '
                                            'scheme')
        scheme, scopes = next(iter(req.items()))
        if scheme not in schemes:
            self.fail(loc / 'security' / 0 / scheme, 'unknown security scheme %s' % scheme)
        s = schemes[scheme]
        if not isinstance(s, dict) or s.get('type') != 'http' or \
                str(s.get('scheme', '')).lower() != 'bearer':
            self.fail(loc / 'security' / 0 / scheme, 'only http bearer security schemes are '
                                                     'supported')
        if not isinstance(scopes, list) or not all(isinstance(x, str) for x in scopes):
            self.fail(loc / 'security' / 0 / scheme, 'scopes must be a list of names')
        for i, sc in enumerate(scopes):
            if sc not in self.scope_by_name:
                self.fail(loc / 'security' / 0 / scheme / i, 'scope %s is not declared in the '
                                                              'root x-scopes' % sc)
        if len(set(scopes)) != len(scopes):
            self.fail(loc / 'security' / 0 / scheme, 'a scope is listed twice')
        # A token without any scope requirement must be a deliberate choice (the user's own
        # sessions, logout), so an empty list needs x-any-scope: true, and only then.
        any_scope = o.get('x-any-scope', False)
        if not isinstance(any_scope, bool):
            self.fail(loc / 'x-any-scope', 'x-any-scope must be a boolean')
        if not scopes and not any_scope:
            self.fail(loc / 'security' / 0 / scheme, 'a protected operation must require at '
                                                     'least one scope (or say x-any-scope: '
                                                     'true)')
        if scopes and any_scope:
            self.fail(loc / 'x-any-scope', 'x-any-scope: true with scopes listed')
        op.scopes = [self.scope_by_name[sc] for sc in scopes]

    def build_extensions(self, op, o, loc):
        write = op.method in ('POST', 'PUT', 'PATCH')
        op.declared = {k: (o[k], loc / k) for k in DECLARED_EXTENSIONS if k in o}
        op.idempotent = o.get('x-idempotent', write)
        if not isinstance(op.idempotent, bool):
            self.fail(loc / 'x-idempotent', 'x-idempotent must be a boolean')
        # x-replay: false -- the key is claimed and the request runs once, but an answer that
        # holds a secret shown once is not kept: a retry gets 409 idempotency_answer_not_kept.
        replay = o.get('x-replay', True)
        if not isinstance(replay, bool):
            self.fail(loc / 'x-replay', 'x-replay must be a boolean')
        if not replay and not op.idempotent:
            self.fail(loc / 'x-replay', 'x-replay: false on an operation that is not idempotent '
                                        '(nothing is stored for it anyway)')
        op.no_replay = not replay
        op.rate_limit_class = o.get('x-rate-limit-class', 'default')
        if not isinstance(op.rate_limit_class, str) or \
                not re.match(r'^[a-z][a-z0-9_-]*$', op.rate_limit_class):
            self.fail(loc / 'x-rate-limit-class', 'x-rate-limit-class must be a lower-case name')
        mb = o.get('x-max-body-bytes')
        if mb is not None and (isinstance(mb, bool) or not isinstance(mb, int) or mb <= 0 or
                               mb > 64 * 1024 * 1024):
            self.fail(loc / 'x-max-body-bytes', 'x-max-body-bytes must be a positive integer '
                                                '(at most 64 MiB)')
        op.x_max_body = mb
        st = o.get('x-status')
        if st is not None and st != 'planned':
            self.fail(loc / 'x-status', 'x-status supports only the value planned')
        op.planned = st == 'planned'
        # x-first-party: the user's own account (sessions, MFA, OAuth grants, clients): tokens
        # issued to OAuth applications may not call it, whatever their scopes.
        op.first_party = o.get('x-first-party', False)
        if not isinstance(op.first_party, bool):
            self.fail(loc / 'x-first-party', 'x-first-party must be a boolean')
        if op.first_party and not o.get('security'):
            self.fail(loc / 'x-first-party', 'x-first-party on a public operation')
        # x-oauth-errors: an RFC 6749 endpoint; its problems also carry error and
        # error_description (RFC 6749 §5.2) for OAuth client libraries.
        op.oauth_errors = o.get('x-oauth-errors', False)
        if not isinstance(op.oauth_errors, bool):
            self.fail(loc / 'x-oauth-errors', 'x-oauth-errors must be a boolean')
        # x-own-transaction: the handler opens and ends its own transactions (it hashes a
        # password between them, outside the write lock), so a write operation runs on its
        # request thread instead of joining the group commit.
        op.own_transaction = o.get('x-own-transaction', False)
        if not isinstance(op.own_transaction, bool):
            self.fail(loc / 'x-own-transaction', 'x-own-transaction must be a boolean')

    def build_params(self, op, o, loc, common, item_loc, tvars):
        plist = {}   # (name, in) -> (param, loc, component name); operation level overrides
        for level, lst, base in (('path item', common, item_loc),
                                 ('operation', o.get('parameters') or [], loc)):
            if not isinstance(lst, list):
                self.fail(base / 'parameters', 'parameters must be a list')
            here = set()
            for i, p in enumerate(lst):
                ploc = self.loc(p, base / 'parameters' / i)
                comp = None
                if isinstance(p, dict) and '$ref' in p:
                    comp, _ = self.component('parameters', p['$ref'], ploc)
                p, ploc = self.deref('parameters', p, ploc)
                key = (p.get('name'), p.get('in'))
                if key in here:
                    self.fail(ploc, 'parameter %s in %s is declared twice' % key)
                here.add(key)
                plist[key] = (p, ploc, comp)
        plist = list(plist.values())
        op.params = []
        members = {'body'}
        declared_path = []
        for p, ploc, comp_name in plist:
            for k in p:
                if k not in PARAM_KEYS:
                    self.fail(ploc / k, 'unsupported parameter key %s' % k)
            name, where = p.get('name'), p.get('in')
            if not isinstance(name, str) or not name:
                self.fail(ploc, 'parameter without a name')
            if where not in ('path', 'query', 'header', 'cookie'):
                self.fail(ploc / 'in', 'parameter location must be path, query, header or cookie')
            style, explode = DEFAULT_STYLE[where]
            if p.get('style', style) != style:
                self.fail(ploc / 'style', 'only the default style (%s) is supported for %s '
                                          'parameters' % (style, where))
            is_array = where == 'query' and isinstance(p.get('schema'), dict) and \
                self.merge(p['schema'], ploc / 'schema')[0].get('type') == 'array'
            if not is_array and p.get('explode', explode) != explode:
                self.fail(ploc / 'explode', 'only the default explode (%s) is supported for %s '
                                            'parameters' % (str(explode).lower(), where))
            if not isinstance(p.get('explode', explode), bool):
                self.fail(ploc / 'explode', 'explode must be a boolean')
            if p.get('allowEmptyValue', False) is not False:
                self.fail(ploc / 'allowEmptyValue', 'allowEmptyValue is not supported')
            if where == 'header' and name.lower() in RESERVED_HEADERS:
                self.fail(ploc / 'name', 'header %s cannot be a parameter' % name)
            if where == 'header' and name.lower() in RUNTIME_PARAMS:
                self.fail(ploc / 'name', 'header %s is read by the runtime; the served document '
                                         'declares it on every operation it applies to '
                                         '(codegen/served.py), do not list it' % name)
            required = p.get('required', False)
            if not isinstance(required, bool):
                self.fail(ploc / 'required', 'required must be a boolean')
            if where == 'path':
                if not required:
                    self.fail(ploc / 'required', 'path parameter %s must be required: true'
                              % name)
                if name not in tvars:
                    self.fail(ploc, 'path parameter %s is not in the template %s'
                              % (name, op.path))
                declared_path.append(name)
            if 'schema' not in p:
                self.fail(ploc, 'parameter %s needs a schema' % name)
            cname = ident(name) if where == 'header' else snake(name)
            node_name = ('param_' + snake(comp_name)) if comp_name else \
                '%s_param_%s' % (op.handler, cname)
            node = self.node_of(p['schema'], ploc / 'schema', node_name)
            scalar = node.items if node.kind == 'array' else node
            if node.kind == 'array' and where != 'query':
                self.fail(ploc / 'schema', 'only query parameters can be arrays')
            if scalar.kind not in ('string', 'enum', 'integer', 'number', 'boolean'):
                self.fail(ploc / 'schema', 'parameters must be strings, enums, integers, '
                                           'numbers or booleans, or query arrays of them')
            if node.kind == 'array':
                hi = [c['value'] for c in node.checks if c['op'] == 'max_items']
                if not hi or hi[0] > QUERY_ARRAY_MAX:
                    self.fail(ploc / 'schema', 'an array parameter needs maxItems (at most %d)'
                              % QUERY_ARRAY_MAX)
            if node.nullable:
                self.fail(ploc / 'schema', 'nullable parameters are not supported')
            ro, wo, default, has_default = self.site_flags(p['schema'], ploc / 'schema')
            f = Field(name, cname, node, required, loc=ploc)
            if has_default:
                if required:
                    self.fail(ploc / 'schema' / 'default', 'a required parameter cannot have a '
                                                           'default')
                f.default = self.default_literal(node, default, ploc / 'schema')
                f.default_json = json.dumps(default)
            self.add_members(members, f, ploc)
            f.where = where
            f.getter = {'path': 'req_path_param', 'query': 'req_query',
                        'header': 'req_header', 'cookie': 'req_cookie'}[where]
            f.pointer = '/%s/%s' % (where, ptr_escape(name))
            f.param_type = {'string': 'STRING', 'enum': 'STRING', 'integer': 'INTEGER',
                            'number': 'NUMBER', 'boolean': 'BOOLEAN'}[scalar.kind]
            f.type_detail = scalar.type_detail if f.param_type != 'STRING' \
                else 'must be valid UTF-8 text'
            f.explode = p.get('explode', explode)
            # an array parameter collects one value more than maxItems, so max_items fires
            f.collect = hi[0] + 1 if node.kind == 'array' else 0
            if node.kind == 'array' and node.items.kind == 'enum':
                node.items.set_text = True  # a filter set: handlers bind cursors to its text
            f.comment = comment_text('%s %s, %s%s%s' % (
                where, name, 'required' if required else 'optional',
                ', default %s' % f.default_json if f.default else '',
                '' if not f.collect else ', repeated: ?%s=a&%s=b' % (name, name) if f.explode
                else ', comma-separated: ?%s=a,b' % name))
            op.params.append(f)
        for v in tvars:
            if v not in declared_path:
                self.fail(op.loc, 'path template variable {%s} has no path parameter' % v)
        order = {'path': 0, 'query': 1, 'header': 2, 'cookie': 3}
        op.params.sort(key=lambda f: order[f.where])

    def build_body(self, op, o, loc):
        op.body = None
        op.body_required = False
        op.form_body = False
        op.raw_body = []   # non-JSON body: (media type, MEDIA_ constant, string node)
        op.raw_body_mask = ''
        if 'requestBody' not in o:
            op.max_body_bytes = op.x_max_body or 0
            if op.x_max_body:
                self.fail(loc / 'x-max-body-bytes', 'x-max-body-bytes on an operation without '
                                                    'a request body')
            return
        if op.method in ('GET', 'DELETE'):
            self.fail(loc / 'requestBody', 'a %s operation cannot have a request body'
                      % op.method)
        rb, rloc = self.deref('requestBodies', o['requestBody'], loc / 'requestBody')
        comp = None
        if '$ref' in o['requestBody']:
            comp = self.component('requestBodies', o['requestBody']['$ref'], loc)[0]
        for k in rb:
            if k not in REQUEST_BODY_KEYS:
                self.fail(rloc / k, 'unsupported request body key %s' % k)
        content = rb.get('content')
        if isinstance(content, dict) and content and \
                any(k in RAW_REQUEST_MEDIA for k in content):
            return self.build_raw_body(op, rb, rloc, content)
        if not isinstance(content, dict) or JSON_MEDIA not in content or \
                set(content) - {JSON_MEDIA, FORM_MEDIA}:
            self.fail(rloc / 'content', 'a request body must have the media type %s (and may '
                                        'also accept %s)' % (JSON_MEDIA, FORM_MEDIA))
        mt = content[JSON_MEDIA]
        mloc = rloc / 'content' / JSON_MEDIA
        if not isinstance(mt, dict) or 'schema' not in mt:
            self.fail(mloc, 'request body without schema')
        for k in mt:
            if k not in MEDIA_KEYS:
                self.fail(mloc / k, 'unsupported media type key %s' % k)
        required = rb.get('required', False)
        if not isinstance(required, bool):
            self.fail(rloc / 'required', 'required must be a boolean')
        name = ('request_body_' + snake(comp)) if comp else op.handler + '_body'
        node = self.node_of(mt['schema'], mloc / 'schema', name)
        if node.kind not in ('object', 'oneof', 'any') or node.nullable:
            self.fail(mloc / 'schema', 'a request body must be an object schema')
        op.form_body = FORM_MEDIA in content
        if op.form_body:
            self.check_form_body(node, content, rloc / 'content' / FORM_MEDIA, mt)
        op.body = Field('body', 'body', node, required)
        op.body.comment = 'request body (%s)' % ('required' if required else 'optional; NULL '
                                                 'when absent')
        op.body_required = required
        op.max_body_bytes = op.x_max_body or DEFAULT_MAX_BODY

    def build_raw_body(self, op, rb, rloc, content):
        """A non-JSON request body (a bank statement, a rate file): one or more of
        application/xml, text/plain, text/csv, each {type: string, maxLength}, never mixed
        with JSON. The dispatcher checks the Content-Type (415), the UTF-8 of text types and
        the schema (422), and hands the handler the bytes, their length and the media type."""
        for media, mt in content.items():
            mloc = rloc / 'content' / media
            if media not in RAW_REQUEST_MEDIA:
                self.fail(mloc, 'a non-JSON request body is one or more of %s, alone (not %s)'
                          % (', '.join(RAW_REQUEST_MEDIA), media))
            if not isinstance(mt, dict) or not isinstance(mt.get('schema'), dict):
                self.fail(mloc, 'request body without schema')
            for k in mt:
                if k not in MEDIA_KEYS:
                    self.fail(mloc / k, 'unsupported media type key %s' % k)
            node = self.node_of(mt['schema'], mloc / 'schema', '%s_body_%s'
                                % (op.handler, snake(media)))
            if node.kind != 'string' or node.nullable or \
                    'maxLength' not in self.merge(mt['schema'], mloc / 'schema')[0]:
                self.fail(mloc / 'schema', 'a %s request body has the schema {type: string, '
                                           'maxLength: N} (minLength and pattern allowed)'
                          % media)
            op.raw_body.append((media, RAW_MEDIA[media], node))
        required = rb.get('required', False)
        if not isinstance(required, bool):
            self.fail(rloc / 'required', 'required must be a boolean')
        op.raw_body_mask = ' | '.join('MEDIA_BIT(%s)' % c for _, c, _ in op.raw_body)
        op.body = Field('body', 'body', None, required)
        op.body.comment = 'request body: its bytes (%s), NUL-terminated' % (
            'required' if required else 'optional; NULL when absent')
        op.body_required = required
        op.max_body_bytes = op.x_max_body or DEFAULT_MAX_BODY

    def check_form_body(self, node, content, floc, json_mt):
        """A form body (RFC 6749 clients send one) is the JSON body's schema with every value a
        string: the runtime turns the pairs into a JSON object of strings before validation,
        so both media types share one schema, one validator and one typed struct."""
        fm = content[FORM_MEDIA]
        if not isinstance(fm, dict) or fm.get('schema') != json_mt.get('schema'):
            self.fail(floc / 'schema', 'the %s schema must be the same as the %s one'
                      % (FORM_MEDIA, JSON_MEDIA))
        for k in fm:
            if k not in MEDIA_KEYS:
                self.fail(floc / k, 'unsupported media type key %s' % k)
        if node.kind != 'object' or node.addl is not False:
            self.fail(floc / 'schema', 'a form body must be an object with '
                                       'additionalProperties: false')
        for f in node.fields:
            if f.node.kind not in ('string', 'enum') or f.node.type_name != 'string' or \
                    f.node.nullable:
                self.fail(floc / 'schema', 'a form body can only hold string properties '
                                           '(%s is not one)' % f.json_name)

    def build_responses(self, op, o, loc):
        rs = o.get('responses')
        if not isinstance(rs, dict) or not rs:
            self.fail(loc / 'responses', 'an operation needs responses')
        op.responses = []
        op.headers = []
        hdr_by_name = {}
        members = {'status'}
        for code, r in rs.items():
            rloc0 = loc / 'responses' / code
            if not re.match(r'^[1-5][0-9][0-9]$', str(code)):
                self.fail(rloc0, 'response keys must be explicit statuses (no default or '
                                 'ranges)')
            status = int(code)
            comp = None
            if isinstance(r, dict) and '$ref' in r:
                comp = self.component('responses', r['$ref'], rloc0)[0]
            r, rloc = self.deref('responses', r, self.loc(r, rloc0))
            for k in r:
                if k not in RESPONSE_KEYS:
                    self.fail(rloc / k, 'unsupported response key %s' % k)
            if not isinstance(r.get('description'), str):
                self.fail(rloc, 'response without description')
            resp = Resp(status)
            content = r.get('content')
            # x-empty-body: a 2xx other than 204 that has no body on purpose (RFC 7009 §2.2's
            # 200), so that a forgotten schema stays an error everywhere else.
            empty = r.get('x-empty-body', False)
            if not isinstance(empty, bool):
                self.fail(rloc / 'x-empty-body', 'x-empty-body must be a boolean')
            if empty and (content or not 200 <= status < 300):
                self.fail(rloc / 'x-empty-body', 'x-empty-body: true is for a 2xx response '
                                                 'without content')
            if status in (204, 304) or (300 <= status < 400 and not content) or empty:
                if content:
                    self.fail(rloc / 'content', '%d responses have no content' % status)
                resp.kind = 'empty'
            elif isinstance(content, dict) and list(content) == [HTML_MEDIA]:
                # A server-rendered page: the handler hands over the whole document.
                mt = content[HTML_MEDIA]
                mloc = rloc / 'content' / HTML_MEDIA
                if not isinstance(mt, dict) or not isinstance(mt.get('schema'), dict) or \
                        mt['schema'].get('type') != 'string' or len(mt['schema']) > 2 or \
                        set(mt['schema']) - {'type', 'description'}:
                    self.fail(mloc, 'a %s response must have the schema {type: string}'
                              % HTML_MEDIA)
                for k in mt:
                    if k not in MEDIA_KEYS:
                        self.fail(mloc / k, 'unsupported media type key %s' % k)
                resp.kind = 'html'
                resp.field = Field('body_%d' % status, 'body_%d' % status, None, True)
                resp.field.comment = comment_text('status %d: %s (an HTML document)'
                                                  % (status, first_sentence(r['description'])))
                members.add(resp.field.cname)
            elif isinstance(content, dict) and any(k in RAW_MEDIA for k in content):
                self.build_raw_response(op, status, r, rloc, resp, members, comp)
            else:
                if not isinstance(content, dict) or len(content) != 1:
                    self.fail(rloc, 'response without schema (content needs exactly one media '
                                    'type)')
                media, mt = next(iter(content.items()))
                mloc = rloc / 'content' / media
                if media not in (JSON_MEDIA, PROBLEM_MEDIA):
                    self.fail(mloc, 'unsupported media type %s' % media)
                if not isinstance(mt, dict) or 'schema' not in mt:
                    self.fail(mloc, 'response without schema')
                for k in mt:
                    if k not in MEDIA_KEYS:
                        self.fail(mloc / k, 'unsupported media type key %s' % k)
                sch = mt['schema']
                is_problem_ref = isinstance(sch, dict) and \
                    sch.get('$ref') == '#/components/schemas/Problem'
                name = ('response_' + snake(comp)) if comp else '%s_%d' % (op.handler, status)
                node = self.node_of(sch, mloc / 'schema', name)
                if op.oauth_errors and status >= 400:
                    # An RFC 6749 endpoint: its errors are RFC 6749 §5.2 JSON objects, which the
                    # runtime renders from the problem the handler (or the runtime) raised
                    # (runtime/oauth_error.h); the handler never builds them.
                    if media != JSON_MEDIA or is_problem_ref:
                        self.fail(mloc, 'an x-oauth-errors operation answers errors as RFC 6749 '
                                        'JSON: document status %d as %s with an error object '
                                        'schema' % (status, JSON_MEDIA))
                    self.check_oauth_error_schema(node, mloc / 'schema')
                    resp.kind = 'problem'
                    resp.oauth = True
                elif media == PROBLEM_MEDIA or is_problem_ref:
                    resp.kind = 'problem'
                else:
                    if node.kind not in ('object', 'oneof', 'any') or node.nullable:
                        self.fail(mloc / 'schema', 'a response body must be an object schema')
                    resp.kind = 'json'
                    resp.field = Field('body_%d' % status, 'body_%d' % status, node, True)
                    resp.field.comment = comment_text('status %d: %s'
                                                      % (status, first_sentence(r['description'])))
                    members.add(resp.field.cname)
                resp.node = node
            for hname, h in (r.get('headers') or {}).items():
                hloc0 = rloc / 'headers' / hname
                hcomp = None
                if isinstance(h, dict) and '$ref' in h:
                    hcomp = self.component('headers', h['$ref'], hloc0)[0]
                h, hloc = self.deref('headers', h, self.loc(h, hloc0))
                for k in h:
                    if k not in HEADER_KEYS:
                        self.fail(hloc / k, 'unsupported header key %s' % k)
                xs = h.get('x-set-by')
                if xs is not None and xs != 'runtime':
                    self.fail(hloc / 'x-set-by', 'x-set-by supports only runtime')
                if xs == 'runtime':
                    continue
                if hname.lower() in RESERVED_HEADERS:
                    self.fail(hloc0, 'header %s is set by the runtime' % hname)
                if resp.kind == 'problem':
                    self.fail(hloc0, 'header %s on a problem response can never be sent by a '
                                     'handler; mark it x-set-by: runtime' % hname)
                if h.get('style', 'simple') != 'simple' or h.get('explode', False):
                    self.fail(hloc, 'only the default header style is supported')
                if 'schema' not in h:
                    self.fail(hloc, 'header %s needs a schema' % hname)
                node = self.node_of(h['schema'], hloc / 'schema',
                                    ('header_' + ident(hcomp)) if hcomp else
                                    '%s_header_%s' % (op.handler, ident(hname)))
                if node.kind not in ('string', 'integer') or node.nullable:
                    self.fail(hloc / 'schema', 'response headers must be strings or integers')
                required = h.get('required', False)
                key = hname.lower()
                if key not in hdr_by_name:
                    f = Field(hname, ident(hname), node, False, loc=hloc)
                    f.statuses = []
                    f.required_statuses = []
                    hdr_by_name[key] = f
                    if f.cname in members or 'has_' + f.cname in members:
                        self.fail(hloc0, 'header %s clashes with another response member'
                                  % hname)
                    members.add(f.cname)
                    if f.kind == 'integer':
                        members.add('has_' + f.cname)
                    op.headers.append(f)
                f = hdr_by_name[key]
                if f.node is not node and f.node.kind != node.kind:
                    self.fail(hloc, 'header %s has different types on different statuses'
                              % hname)
                f.statuses.append(status)
                if required:
                    f.required_statuses.append(status)
            # 304 Not Modified is no redirect: it answers a conditional request, not a move.
            if 300 <= status < 400 and status != 304 and 'location' not in {
                    h.lower() for h in (r.get('headers') or {})}:
                self.fail(rloc, 'a %d response needs a Location header' % status)
            op.responses.append(resp)
        op.responses.sort(key=lambda x: x.status)
        for f in op.headers:
            f.comment = comment_text('header %s on %s' % (f.json_name, ', '.join(
                str(s) for s in sorted(f.statuses))))
        op.statuses = [r.status for r in op.responses]
        op.json_responses = [r for r in op.responses if r.kind == 'json']
        op.html_responses = [r for r in op.responses if r.kind == 'html']
        # A page operation (it renders HTML) answers its errors as pages too: the runtime
        # renders a problem raised with req_problem() as an HTML error page.
        op.page = bool(op.html_responses)
        if op.page:
            for r in op.responses:
                if r.kind == 'problem':
                    self.fail(loc / 'responses' / str(r.status),
                              'a page operation answers errors as pages: document status %d '
                              'as %s' % (r.status, HTML_MEDIA))
        op.html_error_statuses = [r.status for r in op.html_responses if r.status >= 400]
        # Negotiated operations: every 2xx with content offers the same media types, in the
        # same order (ties in Accept go to the earlier one; no Accept takes the first).
        op.raw_responses = [r for r in op.responses if r.media]
        op.produces = []
        if op.raw_responses:
            if op.page or op.oauth_errors:
                self.fail(loc / 'responses', 'a page or x-oauth-errors operation cannot offer '
                                             'non-JSON media types')
            first = op.raw_responses[0]
            op.produces = [(m, c) for m, c, _ in first.media]
            for r in op.responses:
                if 200 <= r.status < 300 and r.kind != 'empty' and \
                        [(m, c) for m, c, _ in r.media] != op.produces:
                    self.fail(loc / 'responses' / str(r.status),
                              'every 2xx response of a negotiated operation offers the same '
                              'media types (%s)' % ', '.join(m for m, _ in op.produces))
        op.negotiated = bool(op.produces)
        op.problem_statuses = [r.status for r in op.responses if r.kind == 'problem']
        op.empty_statuses = [r.status for r in op.responses if r.kind == 'empty']

    def build_raw_response(self, op, status, r, rloc, resp, members, comp):
        """A 2xx offering non-JSON representations (text/csv, application/xml, text/plain,
        application/pdf), beside or instead of JSON: the dispatcher picks one on Accept before
        the handler runs (in.accept), the handler fills body_<status> (JSON) or
        raw_<status>/raw_<status>_len (the chosen raw type)."""
        content = r['content']
        if not 200 <= status < 300:
            self.fail(rloc / 'content', 'non-JSON media types are for 2xx responses only')
        resp.media = []   # (media type, MEDIA_ constant, string node or None) in spec order
        for media, mt in content.items():
            mloc = rloc / 'content' / media
            if media != JSON_MEDIA and media not in RAW_MEDIA:
                self.fail(mloc, 'unsupported media type %s beside non-JSON ones (allowed: %s)'
                          % (media, ', '.join([JSON_MEDIA] + sorted(RAW_MEDIA))))
            if not isinstance(mt, dict) or not isinstance(mt.get('schema'), dict):
                self.fail(mloc, 'response without schema')
            for k in mt:
                if k not in MEDIA_KEYS:
                    self.fail(mloc / k, 'unsupported media type key %s' % k)
            sch = mt['schema']
            if media == JSON_MEDIA:
                name = ('response_' + snake(comp)) if comp else '%s_%d' % (op.handler, status)
                node = self.node_of(sch, mloc / 'schema', name)
                if node.kind not in ('object', 'oneof', 'any') or node.nullable:
                    self.fail(mloc / 'schema', 'a response body must be an object schema')
                resp.kind = 'json'
                resp.node = node
                resp.field = Field('body_%d' % status, 'body_%d' % status, node, True)
                resp.field.comment = comment_text('status %d as JSON (in->accept): %s'
                                                  % (status, first_sentence(r['description'])))
                members.add(resp.field.cname)
                resp.media.append((media, 'MEDIA_JSON', None))
                continue
            if media == BINARY_MEDIA:
                if sch.get('type') != 'string' or sch.get('format') != 'binary' or \
                        set(sch) - {'type', 'format', 'maxLength', 'description'}:
                    self.fail(mloc / 'schema', 'an %s response has the schema {type: string, '
                                               'format: binary} (maxLength allowed, in bytes)'
                              % BINARY_MEDIA)
                mx = sch.get('maxLength')
                if mx is not None and (not isinstance(mx, int) or isinstance(mx, bool) or
                                       mx <= 0):
                    self.fail(mloc / 'schema' / 'maxLength', 'maxLength must be a positive '
                                                             'integer (bytes)')
                resp.media.append((media, RAW_MEDIA[media], None))
                resp.binary_max = mx
                continue
            node = self.node_of(sch, mloc / 'schema', '%s_%d_%s'
                                % (op.handler, status, snake(media)))
            if node.kind != 'string' or node.nullable or \
                    'maxLength' not in self.merge(sch, mloc / 'schema')[0]:
                self.fail(mloc / 'schema', 'a %s response has the schema {type: string, '
                                           'maxLength: N} (minLength and pattern allowed)'
                          % media)
            resp.media.append((media, RAW_MEDIA[media], node))
        if resp.kind != 'json':
            resp.kind = 'raw'
        resp.raw_field = 'raw_%d' % status
        for m in (resp.raw_field, resp.raw_field + '_len'):
            if m in members:
                self.fail(rloc, 'response member %s clashes with another one' % m)
            members.add(m)

    def check_oauth_error_schema(self, node, loc):
        """An RFC 6749 §5.2 error body: an object with the required string `error` (and the
        optional string `error_description`) and nothing else, which is all the runtime
        writes."""
        fields = {f.json_name: f for f in node.fields} if node.kind == 'object' else {}
        err = fields.get('error')
        desc = fields.get('error_description')
        if node.kind != 'object' or node.nullable or node.addl is not False or \
                not err or not err.required or err.node.type_name != 'string' or \
                (desc and desc.node.type_name != 'string') or \
                set(fields) - {'error', 'error_description'}:
            self.fail(loc, 'an RFC 6749 error schema must be an object with '
                           'additionalProperties: false, the required string property error '
                           'and at most the string property error_description')

    def check_statuses(self, op, loc):
        """The statuses the generated dispatcher, or the runtime before it, answers must be
        documented; and 501 only where the dispatcher answers it (planned operations)."""
        need = {500: 'the dispatcher answers 500 when the handler fails'}
        if op.params:
            need[400] = 'invalid parameters answer 400 invalid_request'
        if op.body:
            need[400] = 'malformed JSON answers 400 malformed_json'
            need[422] = 'schema violations answer 422 validation_failed'
            # runtime/pipeline.c, before the dispatcher, for any body (JSON, form or raw)
            need[413] = 'a body over x-max-body-bytes answers 413 payload_too_large'
        # runtime/auth.c, before the dispatcher (planned operations included)
        if op.first_party:
            need[403] = ('an OAuth application\'s token on an x-first-party operation answers '
                         '403 insufficient_scope')
        elif op.scopes:
            need[403] = 'a token lacking one of its scopes answers 403 insufficient_scope'
        if op.idempotent and not op.is_public:
            need[409] = ('a retry while the first request with its idempotency key still runs '
                         'answers 409 idempotency_request_in_progress')
        if op.planned:
            need[501] = 'planned operations answer 501 not_implemented'
        else:
            if 501 in op.statuses:
                self.fail(loc / 'responses' / '501', 'status 501 is documented, but of the '
                                                     'dispatchers only a planned operation\'s '
                                                     '(x-status: planned) answers it')
            if op.negotiated:
                need[406] = 'a negotiated operation answers 406 not_acceptable'
            if op.raw_body:
                need[415] = 'a raw body of another Content-Type answers 415'
            if not any(r.kind in ('json', 'empty', 'html', 'raw') and 200 <= r.status < 400
                       for r in op.responses):
                self.fail(loc / 'responses', 'an operation needs a 2xx or 3xx response')
        for status, why in sorted(need.items()):
            if status not in op.statuses:
                self.fail(loc / 'responses', 'status %d is not documented (%s)' % (status, why))
            elif status not in op.problem_statuses and status not in op.html_error_statuses:
                self.fail(loc / 'responses' / str(status), 'status %d must be a problem '
                                                           'response (or, on a page, a %s '
                                                           'one)' % (status, HTML_MEDIA))

    def check_routes(self):
        seen = {}
        for op in self.ops:
            shape = tuple('{}' if s.startswith('{') else s for s in op.template_segments)
            key = (shape, op.method)
            if key in seen:
                self.fail(op.loc, '%s %s is ambiguous with %s' % (op.method, op.full_path,
                                                                   seen[key]))
            seen[key] = op.loc


class Op:
    def __repr__(self):
        return 'Op(%s)' % self.operation_id

    @property
    def scopes_text(self):
        return ' '.join(s['name'] for s in self.scopes)

    @property
    def scopes_expr(self):
        if not self.scopes:
            return '0'
        return ' | '.join(s['macro'] for s in self.scopes)


class Resp:
    def __init__(self, status):
        self.status = status
        self.kind = None      # json | problem | empty | html | raw (non-JSON media only)
        self.media = []       # negotiated: (media type, MEDIA_ constant, string node or None)
        self.raw_field = None  # raw_<status>: the handler's bytes for a non-JSON media type
        self.binary_max = None  # application/pdf: maxLength in bytes
        self.oauth = False    # a problem the runtime renders as an RFC 6749 error (x-oauth-errors)
        self.node = None
        self.field = None


def _node_children(n):
    """The nodes a node's generated code refers to directly."""
    out = [f.node for f in n.fields]
    out += [x for x in (n.items, n.addl, n.value) if isinstance(x, Node)]
    out += [v.node for v in n.variants]
    return out


def _reachable_nodes(obj):
    """Every Node an operation's generated code refers to (its parameters, body, responses and
    headers), not descending into the nodes themselves."""
    found, seen, todo = [], set(), [obj]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Node):
            found.append(x)
        elif isinstance(x, (list, tuple, set)):
            todo.extend(x)
        elif isinstance(x, dict):
            todo.extend(x.values())
        elif hasattr(x, '__dict__') and type(x).__module__ == __name__:
            todo.extend(vars(x).values())
    return found


def _runtime_structs():
    """Struct names the runtime headers define; a schema may not reuse them."""
    names = set()
    rdir = os.path.join(REPO_ROOT, 'runtime')
    if os.path.isdir(rdir):
        for fn in sorted(os.listdir(rdir)):
            if fn.endswith('.h'):
                with open(os.path.join(rdir, fn), encoding='utf-8') as f:
                    names.update(re.findall(r'\bstruct\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{',
                                            f.read()))
    names.update({'req', 'op', 'arena', 'json_value', 'json_member', 'json_error', 'jsonw',
                  'verr', 'verr_list', 'route_match'})
    return names
