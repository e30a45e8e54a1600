/* Strict HTTP/1.1 checks (http_strict.h). Each refusal names what was wrong in its detail. */
#include "runtime/http_strict.h"

#include <string.h>
#include <strings.h>

#include "runtime/format.h"

static bool fail(struct http_fault *f, int status, const char *code, const char *detail)
{
    f->status = status;
    f->code = code;
    f->detail = detail;
    return false;
}

static bool malformed(struct http_fault *f, const char *detail)
{
    return fail(f, 400, "malformed_request", detail);
}

static bool bad_target(struct http_fault *f, const char *detail)
{
    return fail(f, 400, "invalid_path", detail);
}

/* A path segment [s, e) that decodes to "." or "..". */
static bool dot_segment(const char *s, const char *e)
{
    int dots = 0;
    while (s < e) {
        if (*s == '.') {
            s++;
        } else if (e - s >= 3 && s[0] == '%' && s[1] == '2' && (s[2] == 'e' || s[2] == 'E')) {
            s += 3;
        } else {
            return false;
        }
        dots++;
    }
    return dots == 1 || dots == 2;
}

/* A byte RFC 3986 allows raw in a path: pchar (unreserved, sub-delims, ':' and '@') or '/';
 * '%' is checked as an escape separately. */
static bool path_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("-._~!$&'()*+,;=:@/%", c) != NULL);
}

bool http_strict_target(const char *raw, struct http_fault *f)
{
    if (!raw)
        return bad_target(f, "The request target is missing.");
    const char *query = NULL;
    for (const char *p = raw; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c >= 0x7f)
            return bad_target(f, "The request target may hold only printable ASCII; "
                                 "percent-encode anything else.");
        if (c == '#')
            return bad_target(f, "The request target may not hold a fragment ('#').");
        if (c == '?' && !query)
            query = p;
        if (!query && !path_char(c))
            return bad_target(f, "The path may hold only letters, digits and -._~!$&'()*+,;=:@/ "
                                 "(RFC 3986); percent-encode anything else.");
        if (c != '%')
            continue;
        int hi = format_hex_digit(p[1]), lo = hi < 0 ? -1 : format_hex_digit(p[2]);
        if (hi < 0 || lo < 0)
            return bad_target(f, "The request target holds a '%' that is not a percent "
                                 "escape of two hexadecimal digits.");
        int v = hi * 16 + lo;
        if (v == 0)
            return bad_target(f, "The request target holds an encoded NUL (%00).");
        if (!query && (v == '/' || v == '\\'))
            return bad_target(f, "The path holds an encoded '/' or '\\' (%2F, %5C).");
        p += 2;
    }
    const char *path_end = query ? query : raw + strlen(raw);
    for (const char *s = raw; s < path_end;) {
        const char *e = memchr(s, '/', (size_t)(path_end - s));
        if (!e)
            e = path_end;
        if (dot_segment(s, e))
            return bad_target(f, "The path holds a '.' or '..' segment.");
        s = e + 1;
    }
    return true;
}

static bool is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool named(const struct http_field *h, const char *name)
{
    return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* [s, s+n) trimmed of spaces and tabs at both ends equals word, case-insensitively. */
static bool token_is(const char *s, size_t n, const char *word)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

/* Transfer-Encoding: exactly "chunked" is accepted (libmicrohttpd decodes the body only then:
 * it compares the whole value, trailing blanks included); a coding we do not implement
 * answers 501, anything else (chunked twice, blanks around it, an empty element) 400. The
 * body's length is unknown to us either way. */
static bool check_transfer_encoding(const struct http_field *h, struct http_fault *f)
{
    if (h->value_len == 7 && strncasecmp(h->value, "chunked", 7) == 0)
        return true;
    bool unknown = false;
    int elements = 0;
    const char *s = h->value, *end = h->value + h->value_len;
    while (s <= end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        const char *a = s, *b = e;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a && !token_is(a, (size_t)(b - a), "chunked"))
            unknown = true;
        elements += b > a;
        s = e + 1;
    }
    if (unknown)
        return fail(f, 501, "unsupported_transfer_coding",
                    "Only the chunked transfer coding is implemented; send the body with "
                    "Content-Length or Transfer-Encoding: chunked.");
    return malformed(f, elements > 1 ? "Transfer-Encoding names chunked more than once."
                                     : "Transfer-Encoding must be exactly \"chunked\".");
}

bool http_strict_fields(const char *version, const struct http_field *fields, size_t n,
                        struct http_fault *f)
{
    /* HTTP/1.1's rules hold for every 1.x after 1.0 (libmicrohttpd serves 1.2 to 1.9 as 1.1). */
    bool http11 = version && strncmp(version, "HTTP/1.", 7) == 0 && strcmp(version, "HTTP/1.0");
    int content_length = 0, transfer_encoding = 0, host = 0;
    const struct http_field *te = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct http_field *h = &fields[i];
        if (h->name_len == 0)
            return malformed(f, "A header field has an empty name.");
        for (size_t k = 0; k < h->name_len; k++)
            if (!is_tchar((unsigned char)h->name[k]))
                return malformed(f, "A header field name holds a character that is not "
                                    "allowed there (such as a space before the colon).");
        for (size_t k = 0; k < h->value_len; k++) {
            unsigned char c = (unsigned char)h->value[k];
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return malformed(f, "A header field value holds a control character (such as "
                                    "a bare CR).");
        }
        if (named(h, "Content-Length")) {
            content_length++;
            if (h->value_len == 0)
                return malformed(f, "Content-Length is empty.");
            for (size_t k = 0; k < h->value_len; k++)
                if (h->value[k] < '0' || h->value[k] > '9')
                    return malformed(f, "Content-Length is not a decimal number.");
        } else if (named(h, "Transfer-Encoding")) {
            transfer_encoding++;
            te = h;
        } else if (named(h, "Host")) {
            host++;
        }
    }
    if (content_length > 1)
        return malformed(f, "Content-Length is sent more than once.");
    if (transfer_encoding) {
        if (content_length)
            return malformed(f, "Content-Length and Transfer-Encoding are both sent; the "
                                "body's length would be ambiguous.");
        if (!http11)
            return malformed(f, "Transfer-Encoding is not defined for this HTTP version.");
        if (transfer_encoding > 1)
            return malformed(f, "Transfer-Encoding is sent more than once.");
        if (!check_transfer_encoding(te, f))
            return false;
    }
    if (host > 1)
        return malformed(f, "Host is sent more than once.");
    if (http11 && host == 0)
        return malformed(f, "An HTTP/1.1 request must send Host.");
    return true;
}

static const char HEAD_HIDDEN[] =
    "The request head is malformed: a line not ended by CRLF, a NUL inside a line, or a "
    "folded header line.";

bool http_strict_head(const char *head, size_t head_len, const char *target, size_t target_len,
                      const char *version, const struct http_field *fields, size_t n,
                      struct http_fault *f)
{
    const char *end = head + head_len;
    if (!head || !version || version < head || version >= end)
        return malformed(f, HEAD_HIDDEN);
    /* The method: token characters up to the NUL written over the space after it, then the
     * blanks before the target (libmicrohttpd skips extra ones). Anything else there is a
     * NUL inside the method. The target runs up to the NUL written over the space before the
     * version: shorter as a C string means a NUL inside it. */
    if (!target || target <= head || target >= version || target + target_len + 1 != version)
        return malformed(f, HEAD_HIDDEN);
    const char *m = head;
    while (m < target && is_tchar((unsigned char)*m))
        m++;
    if (m == head || m >= target || *m++ != '\0')
        return malformed(f, HEAD_HIDDEN);
    while (m < target && *m == ' ')
        m++;
    if (m != target)
        return malformed(f, HEAD_HIDDEN);
    /* The request line ends after the version, with the two NULs of its CRLF. */
    const char *p = version + strnlen(version, (size_t)(end - version));
    if (end - p < 2 || p[0] || p[1])
        return malformed(f, HEAD_HIDDEN);
    p += 2;
    for (size_t i = 0; i < n; i++) {
        const struct http_field *h = &fields[i];
        /* Each field line: its name here, the colon's NUL, optional blanks, its value right
         * there, then the two NULs of its CRLF. A value cut short by a NUL, a bare LF, or a
         * line moved elsewhere by unfolding breaks this chain. */
        if (h->name != p || (size_t)(end - p) < h->name_len + 1 || p[h->name_len])
            return malformed(f, HEAD_HIDDEN);
        p += h->name_len + 1;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (h->value != p || (size_t)(end - p) < h->value_len + 2)
            return malformed(f, HEAD_HIDDEN);
        p += h->value_len;
        if (p[0] || p[1])
            return malformed(f, HEAD_HIDDEN);
        p += 2;
    }
    /* The empty line: its CRLF, and nothing after it. */
    if (end - p != 2 || p[0] || p[1])
        return malformed(f, HEAD_HIDDEN);
    return true;
}
