/* libFuzzer: the strict HTTP checks (runtime/http_strict.c) on raw request heads. The input is
 * parsed in place the way libmicrohttpd 0.9.75 parses a head (line ends written over with NUL,
 * CRLF as two, a bare LF as one; the colon of a field too; leading blanks of a value skipped;
 * a folded line moved elsewhere), and the checks are run on what that leaves, as the server
 * runs them. Properties: never crashes or reads outside the head; a head that is strictly
 * well-formed by an independent reading of RFC 9112 passes http_strict_head; a head holding a
 * bare LF, a bare CR or a NUL is refused by the checks together (the target's among them),
 * but for the documented blind spot: NULs and bare LFs next to each other or to a line end,
 * which once parsed can pass for CRLFs. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/http_strict.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define MAX_FIELDS 64

static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* RFC 9112's head, read independently: request-line CRLF *( field-line CRLF ) CRLF, with a
 * token method, one SP, a target of visible ASCII, one SP, HTTP/1.x; field names of tchar,
 * values of VCHAR/obs-text/SP/HTAB. Returns its length, 0 when not well-formed. */
static size_t strict_head(const unsigned char *d, size_t n)
{
    size_t i = 0;
    while (i < n && tchar(d[i]))
        i++;
    if (i == 0 || i >= n || d[i++] != ' ')
        return 0;
    size_t t = i;
    while (i < n && d[i] > 0x20 && d[i] < 0x7f)
        i++;
    if (i == t || i >= n || d[i++] != ' ' || i + 10 > n)
        return 0;
    if (memcmp(d + i, "HTTP/1.1\r\n", 10) != 0 && memcmp(d + i, "HTTP/1.0\r\n", 10) != 0)
        return 0;
    i += 10;
    for (;;) {
        if (i + 2 <= n && d[i] == '\r' && d[i + 1] == '\n')
            return i + 2;
        size_t name = i;
        while (i < n && tchar(d[i]))
            i++;
        if (i == name || i >= n || d[i++] != ':')
            return 0;
        while (i < n && (d[i] == ' ' || d[i] == '\t'))
            i++;
        while (i < n && (d[i] == '\t' || (d[i] >= 0x20 && d[i] != 0x7f)))
            i++;
        if (i + 2 > n || d[i] != '\r' || d[i + 1] != '\n')
            return 0;
        i += 2;
    }
}

/* The next line of buf[*pos, len) as libmicrohttpd's get_next_header_line takes it: up to a
 * CRLF or a bare LF, written over with NUL; *line_len its length. NULL when no line end is
 * left. */
static char *next_line(char *buf, size_t len, size_t *pos, size_t *line_len)
{
    for (size_t i = *pos; i < len; i++) {
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n') {
            char *line = buf + *pos;
            *line_len = i - *pos;
            buf[i] = buf[i + 1] = '\0';
            *pos = i + 2;
            return line;
        }
        if (buf[i] == '\n') {
            char *line = buf + *pos;
            *line_len = i - *pos;
            buf[i] = '\0';
            *pos = i + 1;
            return line;
        }
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size > 8192)
        return 0;
    struct http_fault f;
    /* The target check on the whole input as a C string. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    (void)http_strict_target(text, &f);
    free(text);

    size_t wellformed = strict_head(data, size);
    char *buf = malloc(size + 1);
    static char moved[8192 + 1]; /* where an unfolded line goes: outside the head */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    size_t pos = 0, line_len = 0;
    char *line;
    while ((line = next_line(buf, size, &pos, &line_len)) && line_len == 0) {
        /* libmicrohttpd tolerates empty lines before the request line */
    }
    if (!line)
        goto out;
    /* parse_initial_message_line: the method up to the first space, blanks skipped, the
     * version after the last space (searched from the end, trailing spaces skipped). */
    char *method = line, *sp = memchr(line, ' ', line_len);
    if (!sp)
        goto out;
    *sp = '\0';
    char *uri = sp + 1;
    while (uri < line + line_len && *uri == ' ')
        uri++;
    if (uri == line + line_len)
        goto out;
    char *v = line + line_len - 1;
    while (*v == ' ' && v > uri)
        v--;
    while (*v != ' ' && v > uri)
        v--;
    if (v <= uri)
        goto out;
    *v = '\0';
    const char *version = v + 1;
    if (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0)
        goto out;
    size_t target_len = strlen(uri); /* what the URI log callback sees */
    bool target_ok = http_strict_target(uri, &f);
    struct http_field fields[MAX_FIELDS];
    size_t n = 0;
    char *last = NULL, *colon = NULL;
    for (;;) {
        line = next_line(buf, size, &pos, &line_len);
        if (!line)
            goto out; /* incomplete head: libmicrohttpd waits for more */
        if ((line[0] == ' ' || line[0] == '\t') && last) {
            /* obs-fold: the field is rebuilt elsewhere (libmicrohttpd reallocates it). */
            size_t name_len = strlen(last), value_len = strlen(colon);
            memcpy(moved, last, name_len + 1);
            memcpy(moved + name_len + 1, colon, value_len + 1);
            last = moved;
            colon = moved + name_len + 1;
            continue;
        }
        if (last) {
            if (n == MAX_FIELDS)
                goto out;
            fields[n++] = (struct http_field){ last, strlen(last), colon, strlen(colon) };
            last = NULL;
        }
        if (line[0] == '\0')
            break;
        char *c = strchr(line, ':');
        if (!c)
            goto out; /* libmicrohttpd refuses it itself */
        *c++ = '\0';
        while (*c == ' ' || *c == '\t')
            c++;
        last = line;
        colon = c;
    }
    size_t head_len = (size_t)(buf + pos - method);
    bool head_ok = http_strict_head(method, head_len, uri, target_len, version, fields, n, &f);
    bool fields_ok = http_strict_fields(version, fields, n, &f);
    if (wellformed && (size_t)(method - buf) == 0 && wellformed == pos && !head_ok)
        abort(); /* a well-formed head refused */
    /* A bare LF, bare CR or NUL in the head must not pass both checks. */
    for (size_t i = 0; i < pos; i++) {
        bool bare_lf = data[i] == '\n' && (i == 0 || data[i - 1] != '\r');
        bool nul = data[i] == '\0';
        bool bare_cr = data[i] == '\r' && !(i + 1 < size && data[i + 1] == '\n');
        /* The blind spot: NULs and bare LFs next to each other or to a line end all become
         * NULs once parsed, and a run of them can pass for CRLFs. One alone cannot. */
        bool in_run = (i > 0 && strchr("\r\n", data[i - 1]) && data[i - 1]) ||
                      (i > 0 && data[i - 1] == '\0') ||
                      (i + 1 < size && (data[i + 1] == '\0' || data[i + 1] == '\n' ||
                                        data[i + 1] == '\r'));
        if ((method - buf) == 0 && (((bare_lf || nul) && !in_run) || bare_cr) && head_ok &&
            fields_ok && target_ok)
            abort(); /* a lenient head accepted */
    }
out:
    free(buf);
    return 0;
}
