/* Strict HTTP/1.1 message checks (RFC 9112 §2.2, §3, §5, §6.1, §6.3; RFC 9110 §5.5) that
 * libmicrohttpd 0.9.75 does not make: it accepts a repeated or conflicting Content-Length,
 * Content-Length beside Transfer-Encoding, a transfer coding it cannot decode (and then waits
 * for the end of the connection), bare LF line ends, NUL and bare CR in field lines, folded
 * lines, and decodes %00 and %2F into the path. The server runs these checks when the head is
 * complete, before any body is read, and refuses with the fault's status; a head refused
 * closes the connection (the body's length is in doubt), a target refused does not. The body
 * itself is libmicrohttpd's to read: its chunked decoder still takes a bare LF after a chunk
 * size or chunk.
 *
 * Pure functions of what they are given, so they are unit-tested and fuzzed without a
 * connection. */
#ifndef RUNTIME_HTTP_STRICT_H
#define RUNTIME_HTTP_STRICT_H

#include <stdbool.h>
#include <stddef.h>

struct http_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

struct http_fault {
    int status;         /* 400, or 501 for a transfer coding we do not implement */
    const char *code;   /* the problem code */
    const char *detail; /* static text for the problem document */
};

/* The request target as received (before percent-decoding): printable ASCII only, no
 * fragment, valid percent escapes; in the path only what RFC 3986 allows there raw (pchar and
 * '/'), so no '\', '"', '<', '>', '[', ']', '{', '}', '|', '^' or '`', which servers and
 * proxies read differently (some take '\' for '/'); and, once decoded, no NUL anywhere, no
 * encoded '/' or '\' in the path and no "." or ".." path segment. The query is held to
 * printable ASCII only: browsers send '{', '|', '}', '^', '`', '[', ']' and '\' raw there (the
 * URL standard's query percent-encode set leaves them), and nothing routes on it. */
bool http_strict_target(const char *raw, struct http_fault *fault);

/* The header fields in the order received, and the version ("HTTP/1.1"): one valid
 * Content-Length at most, never beside Transfer-Encoding; Transfer-Encoding exactly "chunked",
 * not in HTTP/1.0; exactly one Host after HTTP/1.0; field names of token characters; values
 * without CR, LF, NUL or other control characters but HTAB. */
bool http_strict_fields(const char *version, const struct http_field *fields, size_t n,
                        struct http_fault *fault);

/* The raw bytes of the request head as libmicrohttpd 0.9.75 leaves them in its read buffer,
 * from the method to the end of the empty line: it parses in place, writing NUL over each
 * line end (CRLF: two bytes, a bare LF: one), over the space before the version and over the
 * colon of each field, and points the target, the version, field names and values into that
 * buffer. Walking it with those pointers shows what its parser hid: a line ended by a bare
 * LF, a NUL inside a line or the target, a folded line (obs-fold), whitespace before a colon.
 * target is where the target started and target_len its length as a C string, both taken
 * before the parser decoded it in place (the URI log callback); fields must be the head's
 * header fields in order (their pointers into head). What stays invisible: NULs and bare
 * LFs next to each other or to a line end ("\0\n", "\n\0", "\0\0\n\n"), which all become
 * NULs and can pass for CRLFs once parsed. The lines then end where a reader taking each
 * such pair for a CRLF would end them, and a value ends at its NUL; a NUL or bare LF alone
 * in a line is always seen. */
bool http_strict_head(const char *head, size_t head_len, const char *target, size_t target_len,
                      const char *version, const struct http_field *fields, size_t n,
                      struct http_fault *fault);

#endif
