/* JSON writer into a growing malloc'd buffer: separators, escaping and re-serialisation of
 * parsed trees. Output is always valid JSON text, whatever bytes a caller hands in. */
#include "runtime/jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"

static _Noreturn void die(const char *why)
{
    fprintf(stderr, "jsonw: %s\n", why);
    abort();
}

/* Room for n more bytes: the growth, out of line so that reserve's test inlines everywhere. */
static __attribute__((noinline)) void grow(struct jsonw *w, size_t n)
{
    if (n > SIZE_MAX / 2 - w->len)
        die("output too large");
    /* A payment's JSON fits the first buffer; a page of twenty (14 KiB) the third, where
     * doubling took five reallocs that copied what was written so far each time. */
    size_t cap = w->cap ? w->cap : 1024, factor = w->cap ? 4 : 2;
    while (cap - w->len < n + 1)
        cap = cap <= SIZE_MAX / 4 ? cap * factor : w->len + n + 1; /* n < SIZE_MAX / 2 - len */
    char *nb = realloc(w->buf, cap);
    if (!nb)
        die("out of memory");
    w->buf = nb;
    w->cap = cap;
}

static inline void reserve(struct jsonw *w, size_t n)
{
    if (n > w->cap - w->len)
        grow(w, n);
}

static void put(struct jsonw *w, const char *s, size_t n)
{
    reserve(w, n + 1);
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void putc1(struct jsonw *w, char c)
{
    reserve(w, 2);
    w->buf[w->len++] = c;
    w->buf[w->len] = '\0';
}

/* The writer never emits whitespace, so the previous byte tells whether a ',' is due. */
static void separate(struct jsonw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0 || w->len == 0)
        return;
    char last = w->buf[w->len - 1];
    if (last != '[' && last != '{')
        putc1(w, ',');
}

void jsonw_init(struct jsonw *w)
{
    memset(w, 0, sizeof *w);
}

void jsonw_release(struct jsonw *w)
{
    free(w->buf);
    jsonw_init(w);
}

char *jsonw_take(struct jsonw *w, size_t *len)
{
    char *out = w->buf;
    size_t n = w->len;
    if (!out) {
        out = malloc(1);
        if (!out)
            die("out of memory");
        out[0] = '\0';
    }
    if (len)
        *len = n;
    jsonw_init(w);
    return out;
}

static void container_open(struct jsonw *w, char c)
{
    separate(w);
    putc1(w, c);
    w->depth++;
}

static void container_close(struct jsonw *w, char c)
{
    if (w->depth == 0)
        die("unbalanced end");
    w->depth--;
    w->after_key = false;
    putc1(w, c);
}

void jsonw_object_begin(struct jsonw *w)
{
    container_open(w, '{');
}

void jsonw_object_end(struct jsonw *w)
{
    container_close(w, '}');
}

void jsonw_array_begin(struct jsonw *w)
{
    container_open(w, '[');
}

void jsonw_array_end(struct jsonw *w)
{
    container_close(w, ']');
}

/* Length of a well-formed UTF-8 sequence at s, 0 if malformed (then written as U+FFFD). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    if (c >= 0xC2 && c <= 0xDF)
        return left >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || (s[2] & 0xC0) != 0x80)
            return 0;
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return s[1] >= lo && s[1] <= hi ? 4 : 0;
    }
    return 0;
}

/* Nonzero when one of the eight bytes in v is one plain copying cannot take: below 0x20, 0x80
 * and up, '"' or '\\'. Eight bytes per test (the borrow tricks of "Bit Twiddling Hacks": a
 * borrow can mark a byte wrongly only above one that is marked rightly, so "any" is exact). */
static uint64_t special8(uint64_t v)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    return (v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

static bool plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Copies the plain bytes that begin s (n bytes) to o, eight at a time as they are tested, the
 * last eight (overlapping) at once; their count (n when all are plain). */
static size_t copy_plain(const unsigned char *s, size_t n, char *o)
{
    size_t i = 0;
    uint64_t v;
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, s + i, 8);
        if (special8(v))
            break;
        memcpy(o + i, &v, 8);
    }
    if (i < n && n >= 8 && i + 8 > n) {
        memcpy(&v, s + n - 8, 8);
        if (!special8(v)) {
            memcpy(o + n - 8, &v, 8);
            return n;
        }
    }
    while (i < n && plain(s[i])) {
        o[i] = (char)s[i];
        i++;
    }
    return i;
}

/* The string's bytes from s[i] on, the opening quote and s[0..i) written: escapes what needs
 * it, then the closing quote. Out of line: most strings never get here (see quoted). */
static __attribute__((noinline)) void quoted_rest(struct jsonw *w, const unsigned char *s,
                                                  size_t i, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    while (i < n) {
        unsigned char c = s[i];
        const char *esc = NULL;
        char ubuf[7];
        size_t step = 1;
        if (plain(c)) {
            i++;
            run++;
            continue;
        }
        if (c >= 0x80) {
            step = utf8_len(s + i, n - i);
            if (step == 3 && c == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)) {
                /* U+2028/U+2029 are legal JSON but end a line in JavaScript. */
                esc = s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
            } else if (step == 0) {
                esc = "\\ufffd";
                step = 1;
            } else {
                i += step;
                run += step;
                continue;
            }
        } else {
            switch (c) {
            case '"': esc = "\\\""; break;
            case '\\': esc = "\\\\"; break;
            case '\b': esc = "\\b"; break;
            case '\f': esc = "\\f"; break;
            case '\n': esc = "\\n"; break;
            case '\r': esc = "\\r"; break;
            case '\t': esc = "\\t"; break;
            default:
                memcpy(ubuf, "\\u00", 4);
                ubuf[4] = hex[c >> 4];
                ubuf[5] = hex[c & 15];
                ubuf[6] = '\0';
                esc = ubuf;
            }
        }
        put(w, (const char *)s + i - run, run);
        run = 0;
        put(w, esc, strlen(esc));
        i += step;
    }
    put(w, (const char *)s + i - run, run);
    putc1(w, '"');
}

static void quoted(struct jsonw *w, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    /* Fast path: printable ASCII with nothing to escape (ids, codes, dates, most text) is
     * copied as it is tested; the first other byte hands over to quoted_rest. */
    reserve(w, n + 3);
    char *o = w->buf + w->len;
    *o++ = '"';
    size_t i = copy_plain(s, n, o);
    if (i == n) {
        o[n] = '"';
        w->len += n + 2;
        w->buf[w->len] = '\0';
        return;
    }
    w->len += 1 + i;
    w->buf[w->len] = '\0';
    quoted_rest(w, s, i, n);
}

static void keyn(struct jsonw *w, const char *key, size_t n)
{
    separate(w);
    quoted(w, key, n);
    putc1(w, ':');
    w->after_key = true;
}

void jsonw_key(struct jsonw *w, const char *key)
{
    keyn(w, key ? key : "", key ? strlen(key) : 0);
}

/* Inside an object a key follows its '{' or the end of a member's value, never a '[' nor
 * another key (jsonw_key's separate() would write the same comma). */
void jsonw_raw_key(struct jsonw *w, const char *raw, size_t n)
{
    reserve(w, n + 2);
    char *o = w->buf + w->len;
    if (w->len && o[-1] != '{')
        *o++ = ',';
    memcpy(o, raw, n);
    o[n] = '\0';
    w->len = (size_t)(o + n - w->buf);
    w->after_key = true;
}

void jsonw_raw_value(struct jsonw *w, const char *raw, size_t n)
{
    separate(w);
    put(w, raw, n);
}

void jsonw_raw_key_string(struct jsonw *w, const char *raw, size_t n, const char *s)
{
    jsonw_raw_key(w, raw, n);
    w->after_key = false;
    if (s)
        quoted(w, s, strlen(s));
    else
        put(w, "null", 4);
}

void jsonw_stringn(struct jsonw *w, const char *s, size_t n)
{
    separate(w);
    if (!s)
        put(w, "null", 4);
    else
        quoted(w, s, n);
}

void jsonw_string(struct jsonw *w, const char *s)
{
    jsonw_stringn(w, s, s ? strlen(s) : 0);
}

void jsonw_int(struct jsonw *w, int64_t v)
{
    char buf[FORMAT_I64_MAX];
    size_t n = format_i64(buf, v);
    separate(w);
    put(w, buf, n);
}

void jsonw_double(struct jsonw *w, double v)
{
    char buf[40];
    separate(w);
    if (!isfinite(v)) {
        put(w, "null", 4);
        return;
    }
    /* The shortest of %.15g..%.17g that reads back as the same double. */
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    put(w, buf, (size_t)n);
}

void jsonw_bool(struct jsonw *w, bool v)
{
    separate(w);
    if (v)
        put(w, "true", 4);
    else
        put(w, "false", 5);
}

void jsonw_null(struct jsonw *w)
{
    separate(w);
    put(w, "null", 4);
}

void jsonw_value(struct jsonw *w, const struct json_value *v)
{
    if (!v) {
        jsonw_null(w);
        return;
    }
    switch (v->type) {
    case JSON_NULL:
        jsonw_null(w);
        break;
    case JSON_FALSE:
        jsonw_bool(w, false);
        break;
    case JSON_TRUE:
        jsonw_bool(w, true);
        break;
    case JSON_NUMBER:
        separate(w);
        put(w, v->s, v->len);
        break;
    case JSON_STRING:
        jsonw_stringn(w, v->s, v->len);
        break;
    case JSON_ARRAY:
        jsonw_array_begin(w);
        for (size_t i = 0; i < v->count; i++)
            jsonw_value(w, v->items[i]);
        jsonw_array_end(w);
        break;
    case JSON_OBJECT:
        jsonw_object_begin(w);
        for (size_t i = 0; i < v->count; i++) {
            keyn(w, v->members[i].key, v->members[i].key_len);
            jsonw_value(w, v->members[i].value);
        }
        jsonw_object_end(w);
        break;
    }
}
