/* Strict RFC 8259 parser into an arena tree, plus exact integer conversion of number literals.
 * Everything untrusted passes through here, so every rule is checked and every loop is linear. */
#include "runtime/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scratch stacks shared by all nesting levels: a container pushes its children, then moves
 * exactly that many into the arena, so no arena space is wasted on growth. */
struct pending_member {
    struct json_member m;
    size_t offset; /* of the key, for the duplicate-key error */
};

struct parser {
    struct arena *a;
    const unsigned char *start, *p, *end;
    struct json_error *err;
    int depth;
    struct json_value **items;
    size_t nitems, capitems;
    struct pending_member *members;
    size_t nmembers, capmembers;
};

static int fail(struct parser *ps, const unsigned char *at, const char *msg)
{
    ps->err->offset = (size_t)(at - ps->start);
    ps->err->msg = msg;
    return -1;
}

static void *grow(void *ptr, size_t *cap, size_t elem)
{
    size_t ncap = *cap ? *cap * 2 : 64;
    if (ncap > SIZE_MAX / elem / 2) {
        fprintf(stderr, "json: scratch stack overflow\n");
        abort();
    }
    void *np = realloc(ptr, ncap * elem);
    if (!np) {
        fprintf(stderr, "json: out of memory\n");
        abort();
    }
    *cap = ncap;
    return np;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is invalid or truncated.
 * Ranges per Unicode Table 3-7: no overlongs, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, const unsigned char *end)
{
    unsigned char c = s[0];
    size_t left = (size_t)(end - s);
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        if (left < 2 || (s[1] & 0xC0) != 0x80)
            return 0;
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3)
            return 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
        if (s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80)
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4)
            return 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
        if (s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        return 4;
    }
    return 0;
}

/* Offset of the first invalid byte, or len when all of s is valid. */
static size_t utf8_scan(const unsigned char *s, size_t len)
{
    const unsigned char *p = s, *end = s + len;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t n = utf8_seq(p, end);
        if (n == 0)
            return (size_t)(p - s);
        p += n;
    }
    return len;
}

bool json_utf8_valid(const char *s, size_t len)
{
    return utf8_scan((const unsigned char *)s, len) == len;
}

size_t json_utf8_codepoints(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            n++;
    return n;
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static struct json_value *value_new(struct parser *ps, enum json_type t)
{
    struct json_value *v = arena_alloc(ps->a, sizeof *v);
    v->type = t;
    return v;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(unsigned char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote. The whole input was checked for UTF-8 up front, so multi-byte
 * sequences are copied as they are; only escapes and control characters need work here. */
static int parse_string(struct parser *ps, const char **out, size_t *out_len)
{
    const unsigned char *q = ps->p + 1;
    /* Find the closing quote first: the decoded text is never longer than the raw text. */
    while (q < ps->end && *q != '"') {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= ps->end)
        return fail(ps, ps->p, "unterminated string");
    const unsigned char *close = q;
    unsigned char *buf = arena_alloc(ps->a, (size_t)(close - ps->p));
    unsigned char *o = buf;
    const unsigned char *p = ps->p + 1;
    while (p < close) {
        unsigned char c = *p;
        if (c < 0x20)
            return fail(ps, p, "control character in string");
        if (c != '\\') {
            *o++ = c;
            p++;
            continue;
        }
        const unsigned char *esc = p;
        p++;
        switch (*p) {
        case '"': *o++ = '"'; p++; continue;
        case '\\': *o++ = '\\'; p++; continue;
        case '/': *o++ = '/'; p++; continue;
        case 'b': *o++ = '\b'; p++; continue;
        case 'f': *o++ = '\f'; p++; continue;
        case 'n': *o++ = '\n'; p++; continue;
        case 'r': *o++ = '\r'; p++; continue;
        case 't': *o++ = '\t'; p++; continue;
        case 'u': break;
        default: return fail(ps, esc, "invalid escape");
        }
        unsigned cp;
        if (close - p < 5 || hex4(p + 1, &cp) != 0)
            return fail(ps, esc, "invalid \\u escape");
        p += 5;
        if (cp == 0)
            return fail(ps, esc, "\\u0000 not allowed");
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return fail(ps, esc, "lone surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (close - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) != 0 ||
                lo < 0xDC00 || lo > 0xDFFF)
                return fail(ps, esc, "lone surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        }
        o += put_utf8(o, cp);
    }
    *o = '\0';
    *out = (const char *)buf;
    *out_len = (size_t)(o - buf);
    ps->p = close + 1;
    return 0;
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int parse_number(struct parser *ps, struct json_value **out)
{
    const unsigned char *s = ps->p, *p = ps->p, *end = ps->end;
    if (p < end && *p == '-')
        p++;
    if (p >= end || !is_digit(*p))
        return fail(ps, p, "invalid number");
    if (*p == '0') {
        p++;
        if (p < end && is_digit(*p))
            return fail(ps, p, "leading zero");
    } else {
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p))
            return fail(ps, p, "digit expected after '.'");
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !is_digit(*p))
            return fail(ps, p, "digit expected in exponent");
        while (p < end && is_digit(*p))
            p++;
    }
    struct json_value *v = value_new(ps, JSON_NUMBER);
    v->len = (size_t)(p - s);
    v->s = arena_strndup(ps->a, (const char *)s, v->len);
    ps->p = p;
    *out = v;
    return 0;
}

static int literal(struct parser *ps, const char *word, enum json_type t, struct json_value **out)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, ps->p, "invalid literal");
    ps->p += n;
    *out = value_new(ps, t);
    return 0;
}

static int parse_value(struct parser *ps, struct json_value **out);

static int parse_array(struct parser *ps, struct json_value **out)
{
    size_t base = ps->nitems;
    int rc = -1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
    } else {
        for (;;) {
            struct json_value *item;
            if (parse_value(ps, &item) != 0)
                goto out;
            if (ps->nitems == ps->capitems)
                ps->items = grow(ps->items, &ps->capitems, sizeof *ps->items);
            ps->items[ps->nitems++] = item;
            skip_ws(ps);
            if (ps->p >= ps->end) {
                fail(ps, ps->p, "unterminated array");
                goto out;
            }
            if (*ps->p == ']') {
                ps->p++;
                break;
            }
            if (*ps->p != ',') {
                fail(ps, ps->p, "expected ',' or ']'");
                goto out;
            }
            ps->p++;
        }
    }
    struct json_value *v = value_new(ps, JSON_ARRAY);
    v->count = ps->nitems - base;
    if (v->count) {
        v->items = arena_alloc(ps->a, v->count * sizeof *v->items);
        memcpy(v->items, ps->items + base, v->count * sizeof *v->items);
    }
    *out = v;
    rc = 0;
out:
    ps->nitems = base;
    return rc;
}

static int member_cmp(const void *x, const void *y)
{
    const struct pending_member *a = *(const struct pending_member *const *)x;
    const struct pending_member *b = *(const struct pending_member *const *)y;
    if (a->m.key_len != b->m.key_len)
        return a->m.key_len < b->m.key_len ? -1 : 1;
    int c = memcmp(a->m.key, b->m.key, a->m.key_len);
    if (c)
        return c;
    /* Ties by position, so the later of two equal keys is the one reported. */
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static bool same_key(const struct pending_member *a, const struct pending_member *b)
{
    return a->m.key_len == b->m.key_len && memcmp(a->m.key, b->m.key, a->m.key_len) == 0;
}

/* Reports the earliest repeated key. Small objects compare pairwise; large ones sort
 * pointers, so thousands of keys cost n log n rather than n squared. */
static int check_duplicates(struct parser *ps, struct pending_member *m, size_t n)
{
    const struct pending_member *dup = NULL;
    if (n < 2)
        return 0;
    if (n <= 16) {
        for (size_t i = 1; i < n && !dup; i++)
            for (size_t j = 0; j < i; j++)
                if (same_key(&m[i], &m[j])) {
                    dup = &m[i];
                    break;
                }
    } else {
        const struct pending_member **sorted = malloc(n * sizeof *sorted);
        if (!sorted) {
            fprintf(stderr, "json: out of memory\n");
            abort();
        }
        for (size_t i = 0; i < n; i++)
            sorted[i] = &m[i];
        qsort(sorted, n, sizeof *sorted, member_cmp);
        for (size_t i = 1; i < n; i++)
            if (same_key(sorted[i], sorted[i - 1]) && (!dup || sorted[i]->offset < dup->offset))
                dup = sorted[i];
        free(sorted);
    }
    if (dup)
        return fail(ps, ps->start + dup->offset, "duplicate key");
    return 0;
}

static int parse_object(struct parser *ps, struct json_value **out)
{
    size_t base = ps->nmembers;
    int rc = -1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
    } else {
        for (;;) {
            struct pending_member pm = { 0 };
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, ps->p, "expected string key");
                goto out;
            }
            pm.offset = (size_t)(ps->p - ps->start);
            if (parse_string(ps, &pm.m.key, &pm.m.key_len) != 0)
                goto out;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                fail(ps, ps->p, "expected ':'");
                goto out;
            }
            ps->p++;
            if (parse_value(ps, &pm.m.value) != 0)
                goto out;
            if (ps->nmembers == ps->capmembers)
                ps->members = grow(ps->members, &ps->capmembers, sizeof *ps->members);
            ps->members[ps->nmembers++] = pm;
            skip_ws(ps);
            if (ps->p >= ps->end) {
                fail(ps, ps->p, "unterminated object");
                goto out;
            }
            if (*ps->p == '}') {
                ps->p++;
                break;
            }
            if (*ps->p != ',') {
                fail(ps, ps->p, "expected ',' or '}'");
                goto out;
            }
            ps->p++;
            skip_ws(ps);
        }
    }
    size_t n = ps->nmembers - base;
    /* (no members yet: the stack may still be NULL, and NULL + 0 is undefined behaviour) */
    if (n > 0 && check_duplicates(ps, ps->members + base, n) != 0)
        goto out;
    struct json_value *v = value_new(ps, JSON_OBJECT);
    v->count = n;
    if (n) {
        v->members = arena_alloc(ps->a, n * sizeof *v->members);
        for (size_t i = 0; i < n; i++)
            v->members[i] = ps->members[base + i].m;
    }
    *out = v;
    rc = 0;
out:
    ps->nmembers = base;
    return rc;
}

static int parse_value(struct parser *ps, struct json_value **out)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, ps->p, "unexpected end of input");
    switch (*ps->p) {
    case '{':
    case '[': {
        if (ps->depth >= JSON_MAX_DEPTH)
            return fail(ps, ps->p, "nesting too deep");
        ps->depth++;
        int rc = *ps->p == '{' ? parse_object(ps, out) : parse_array(ps, out);
        ps->depth--;
        return rc;
    }
    case '"': {
        struct json_value *v = value_new(ps, JSON_STRING);
        if (parse_string(ps, &v->s, &v->len) != 0)
            return -1;
        *out = v;
        return 0;
    }
    case 't':
        return literal(ps, "true", JSON_TRUE, out);
    case 'f':
        return literal(ps, "false", JSON_FALSE, out);
    case 'n':
        return literal(ps, "null", JSON_NULL, out);
    default:
        if (*ps->p == '-' || is_digit(*ps->p))
            return parse_number(ps, out);
        return fail(ps, ps->p, "unexpected character");
    }
}

int json_parse(struct arena *a, const char *buf, size_t len, struct json_value **out,
               struct json_error *err)
{
    struct parser ps = { 0 };
    struct json_error ignored;
    int rc = -1;
    ps.a = a;
    ps.start = ps.p = (const unsigned char *)buf;
    ps.end = ps.start + len;
    ps.err = err ? err : &ignored;
    *out = NULL;

    size_t bad = utf8_scan(ps.start, len);
    if (bad != len) {
        fail(&ps, ps.start + bad, "invalid UTF-8");
        goto out;
    }
    skip_ws(&ps);
    if (ps.p == ps.end) {
        fail(&ps, ps.p, "empty input");
        goto out;
    }
    struct json_value *v;
    if (parse_value(&ps, &v) != 0)
        goto out;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, ps.p, "trailing characters");
        goto out;
    }
    *out = v;
    rc = 0;
out:
    free(ps.items);
    free(ps.members);
    return rc;
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT || !key)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->count; i++) {
        const struct json_member *m = &obj->members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0)
            return m->value;
    }
    return NULL;
}

/* Exponents beyond this are clamped: with any literal shorter than the clamp the sign of the
 * adjusted exponent, and so the verdict, is unchanged, and no loop depends on its size. */
#define EXP_CLAMP 100000000000000000LL /* 1e17 */

enum json_int_result json_number_to_int64(const struct json_value *v, int64_t *out)
{
    if (!v || v->type != JSON_NUMBER || !v->s || v->len == 0)
        return JSON_INT_NOT_INTEGER;
    const char *p = v->s, *end = v->s + v->len;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    /* The significand is the integer digits followed by the fraction digits. */
    const char *int_s = p;
    while (p < end && is_digit((unsigned char)*p))
        p++;
    const char *int_e = p;
    const char *frac_s = int_e, *frac_e = int_e;
    if (p < end && *p == '.') {
        frac_s = ++p;
        while (p < end && is_digit((unsigned char)*p))
            p++;
        frac_e = p;
    }
    long long exp = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        while (p < end && is_digit((unsigned char)*p)) {
            if (exp < EXP_CLAMP)
                exp = exp * 10 + (*p - '0');
            p++;
        }
        if (exp > EXP_CLAMP)
            exp = EXP_CLAMP;
        if (eneg)
            exp = -exp;
    }
    if (p != end || int_s == int_e)
        return JSON_INT_NOT_INTEGER;

    /* Walk the significand's digits as one sequence, ignoring the '.' between the parts. */
    size_t n_int = (size_t)(int_e - int_s), n_frac = (size_t)(frac_e - frac_s);
    size_t n = n_int + n_frac;
#define DIGIT(i) ((i) < n_int ? int_s[(i)] : frac_s[(i) - n_int])
    size_t first = 0;
    while (first < n && DIGIT(first) == '0')
        first++;
    if (first == n) {
        *out = 0; /* zero in any spelling, "-0" and "0e999999999" included */
        return JSON_INT_OK;
    }
    size_t last = n; /* one past the last non-zero digit */
    while (DIGIT(last - 1) == '0')
        last--;
    /* value = digits[first, last) * 10^scale */
    long long scale = exp - (long long)n_frac + (long long)(n - last);
    if (scale < 0)
        return JSON_INT_NOT_INTEGER;
    size_t sig = last - first;
    if (scale > 19 || sig + (size_t)scale > 19)
        return JSON_INT_RANGE;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t acc = 0;
    for (size_t i = first; i < last + (size_t)scale; i++) {
        unsigned d = i < last ? (unsigned)(DIGIT(i) - '0') : 0;
        if (acc > (limit - d) / 10)
            return JSON_INT_RANGE;
        acc = acc * 10 + d;
    }
#undef DIGIT
    if (neg)
        *out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    else
        *out = (int64_t)acc;
    return JSON_INT_OK;
}

double json_number_to_double(const struct json_value *v)
{
    if (!v || v->type != JSON_NUMBER || !v->s)
        return 0.0;
    /* The server never calls setlocale(), so strtod reads '.' as the decimal point. */
    return strtod(v->s, NULL);
}
