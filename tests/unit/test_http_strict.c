/* Strict HTTP/1.1 checks: request targets, header fields, and the raw head as libmicrohttpd
 * 0.9.75 leaves it (the HTTP tests send the same faults through the real parser). */
#include "runtime/http_strict.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/unit.h"

static bool target_ok(const char *raw)
{
    struct http_fault f;
    return http_strict_target(raw, &f);
}

static void test_ordinary_targets_pass(void)
{
    CHECK(target_ok("/healthz"));
    CHECK(target_ok("/v1/payments?limit=20&status=draft"));
    CHECK(target_ok("/v1/beneficiaries/ben_01abc"));
    CHECK(target_ok("/v1/payments?q=a%20b%2Fc")); /* an encoded '/' in the query is data */
    CHECK(target_ok("/v1/x.y/..z/.a"));          /* dots inside segments are names */
    CHECK(target_ok("/"));
    /* Every byte RFC 3986 allows raw in a path, and what a query may hold besides. */
    CHECK(target_ok("/azAZ09-._~!$&'()*+,;=:@/x%41"));
    CHECK(target_ok("*")); /* OPTIONS * */
    CHECK(target_ok("/v1/payments?status=a,b&q=%22x%22&r=a/b?c"));
    CHECK(target_ok("/v1/x?f[a]={1}|2^`\\\"<>")); /* a query: printable ASCII */
}

static void test_bytes_rfc_3986_forbids_in_a_path_are_refused(void)
{
    static const char forbidden[] = "\\\"<>[]{}|^`";
    char target[32];
    for (const char *c = forbidden; *c; c++) {
        struct http_fault f;
        snprintf(target, sizeof target, "/v1/pay%cments", *c);
        CHECK(!http_strict_target(target, &f) && f.status == 400 &&
              strcmp(f.code, "invalid_path") == 0 && strstr(f.detail, "RFC 3986") != NULL);
        snprintf(target, sizeof target, "/v1/payments?q=%c", *c);
        CHECK(target_ok(target)); /* the same byte in the query */
    }
    CHECK(!target_ok("/v1/payments\\..\\healthz"));
}

static void test_nul_encoded_slash_and_dot_segments_are_refused(void)
{
    struct http_fault f;
    CHECK(!http_strict_target("/v1/beneficiaries%00/x", &f));
    CHECK(f.status == 400 && strcmp(f.code, "invalid_path") == 0);
    CHECK(!target_ok("/v1/payments?limit=1%00"));
    CHECK(!target_ok("/v1/payments%2Fx"));
    CHECK(!target_ok("/v1/payments%2fx"));
    CHECK(!target_ok("/v1/payments%5Cx"));
    CHECK(!target_ok("/v1/../healthz"));
    CHECK(!target_ok("/v1/./healthz"));
    CHECK(!target_ok("/v1/%2e%2E/healthz"));
    CHECK(!target_ok("/v1/.%2e"));
    CHECK(!target_ok("/.."));
}

static void test_malformed_targets_are_refused(void)
{
    CHECK(!target_ok("/a b"));
    CHECK(!target_ok("/a\tb"));
    CHECK(!target_ok("/caf\xc3\xa9"));
    CHECK(!target_ok("/a#frag"));
    CHECK(!target_ok("/a%"));
    CHECK(!target_ok("/a%4"));
    CHECK(!target_ok("/a%zz"));
    CHECK(!target_ok(NULL));
}

#define FIELD(n, v) { n, sizeof(n) - 1, v, sizeof(v) - 1 }

static bool fields_ok(const char *version, const struct http_field *f, size_t n,
                      struct http_fault *fault)
{
    return http_strict_fields(version, f, n, fault);
}

static void test_ordinary_fields_pass(void)
{
    struct http_fault f;
    struct http_field ok[] = { FIELD("Host", "x"), FIELD("Content-Length", "12"),
                               FIELD("X-Tab", "a\tb"), FIELD("X-Obs", "caf\xc3\xa9") };
    CHECK(fields_ok("HTTP/1.1", ok, 4, &f));
    struct http_field chunked[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "Chunked") };
    CHECK(fields_ok("HTTP/1.1", chunked, 2, &f));
    CHECK(fields_ok("HTTP/1.0", NULL, 0, &f)); /* HTTP/1.0 needs no Host */
}

static void test_content_length_framing_faults_close(void)
{
    struct http_fault f;
    struct http_field two[] = { FIELD("Host", "x"), FIELD("Content-Length", "2"),
                                FIELD("content-length", "3") };
    CHECK(!fields_ok("HTTP/1.1", two, 3, &f) && f.status == 400 );
    struct http_field same[] = { FIELD("Host", "x"), FIELD("Content-Length", "2"),
                                 FIELD("Content-Length", "2") };
    CHECK(!fields_ok("HTTP/1.1", same, 3, &f) );
    struct http_field both[] = { FIELD("Host", "x"), FIELD("Content-Length", "2"),
                                 FIELD("Transfer-Encoding", "chunked") };
    CHECK(!fields_ok("HTTP/1.1", both, 3, &f) && f.status == 400 );
    struct http_field sign[] = { FIELD("Host", "x"), FIELD("Content-Length", "+2") };
    CHECK(!fields_ok("HTTP/1.1", sign, 2, &f) );
}

static void test_transfer_codings_other_than_chunked(void)
{
    struct http_fault f;
    struct http_field gzip[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "gzip") };
    CHECK(!fields_ok("HTTP/1.1", gzip, 2, &f));
    CHECK(f.status == 501 && strcmp(f.code, "unsupported_transfer_coding") == 0 );
    struct http_field gz_ch[] = { FIELD("Host", "x"),
                                  FIELD("Transfer-Encoding", "gzip, chunked") };
    CHECK(!fields_ok("HTTP/1.1", gz_ch, 2, &f) && f.status == 501);
    struct http_field twice[] = { FIELD("Host", "x"),
                                  FIELD("Transfer-Encoding", "chunked, chunked") };
    CHECK(!fields_ok("HTTP/1.1", twice, 2, &f) && f.status == 400 );
    struct http_field two_lines[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "chunked"),
                                      FIELD("Transfer-Encoding", "chunked") };
    CHECK(!fields_ok("HTTP/1.1", two_lines, 3, &f) && f.status == 400);
    struct http_field http10[] = { FIELD("Transfer-Encoding", "chunked") };
    CHECK(!fields_ok("HTTP/1.0", http10, 1, &f) && f.status == 400);
    /* libmicrohttpd decodes only the exact value: blanks around it would make it read the
     * body to the end of the connection. */
    struct http_field blanks[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "chunked ") };
    CHECK(!fields_ok("HTTP/1.1", blanks, 2, &f) && f.status == 400);
    struct http_field tab[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "chunked\t") };
    CHECK(!fields_ok("HTTP/1.1", tab, 2, &f) && f.status == 400);
    struct http_field empty[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "") };
    CHECK(!fields_ok("HTTP/1.1", empty, 2, &f) && f.status == 400);
    /* HTTP/1.2 and later 1.x are served as 1.1, with its rules. */
    CHECK(!fields_ok("HTTP/1.5", NULL, 0, &f) && f.status == 400);
    struct http_field te15[] = { FIELD("Host", "x"), FIELD("Transfer-Encoding", "chunked") };
    CHECK(fields_ok("HTTP/1.5", te15, 2, &f));
}

static void test_host_and_field_characters(void)
{
    struct http_fault f;
    CHECK(!fields_ok("HTTP/1.1", NULL, 0, &f) && f.status == 400);
    struct http_field hosts[] = { FIELD("Host", "x"), FIELD("Host", "y") };
    CHECK(!fields_ok("HTTP/1.1", hosts, 2, &f));
    struct http_field cr[] = { FIELD("Host", "x"), FIELD("X-A", "a\rb") };
    CHECK(!fields_ok("HTTP/1.1", cr, 2, &f) );
    struct http_field ctl[] = { FIELD("Host", "x"), FIELD("X-A", "a\x01") };
    CHECK(!fields_ok("HTTP/1.1", ctl, 2, &f));
    struct http_field del[] = { FIELD("Host", "x"), FIELD("X-A", "a\x7f") };
    CHECK(!fields_ok("HTTP/1.1", del, 2, &f));
    struct http_field space[] = { FIELD("Host", "x"), FIELD("X-A ", "a") };
    CHECK(!fields_ok("HTTP/1.1", space, 2, &f));
    struct http_field empty[] = { FIELD("Host", "x"), FIELD("", "a") };
    CHECK(!fields_ok("HTTP/1.1", empty, 2, &f));
}

/* A head as libmicrohttpd 0.9.75 leaves it: "GET\0/\0HTTP/1.1\0\0Host\0 x\0\0X-A\0 a\0\0\0\0"
 * for "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\r\n". */
struct parsed {
    char buf[256];
    size_t len;
    const char *version;
    struct http_field f[8];
    size_t n;
};

static void parsed_add(struct parsed *p, const char *bytes, size_t n)
{
    memcpy(p->buf + p->len, bytes, n);
    p->len += n;
}

/* The request line with its CRLF, as parsed. */
static void parsed_start(struct parsed *p)
{
    memset(p, 0, sizeof *p);
    parsed_add(p, "GET\0/\0", 6);
    p->version = p->buf + p->len;
    parsed_add(p, "HTTP/1.1\0\0", 10);
}

/* A field line "name: value" ended by eol ("\0\0" for CRLF, "\0" for a bare LF). */
static void parsed_field(struct parsed *p, const char *name, const char *value, const char *eol,
                         size_t eol_len)
{
    struct http_field *h = &p->f[p->n++];
    h->name = p->buf + p->len;
    h->name_len = strlen(name);
    parsed_add(p, name, strlen(name));
    parsed_add(p, "\0 ", 2);
    h->value = p->buf + p->len;
    h->value_len = strlen(value);
    parsed_add(p, value, strlen(value));
    parsed_add(p, eol, eol_len);
}

static bool head_ok(struct parsed *p)
{
    struct http_fault f;
    return http_strict_head(p->buf, p->len, p->buf + 4, 1, p->version, p->f, p->n, &f);
}

static void test_a_well_formed_head_passes(void)
{
    struct parsed p;
    parsed_start(&p);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    parsed_field(&p, "X-A", "a b", "\0\0", 2);
    parsed_add(&p, "\0\0", 2);
    CHECK(head_ok(&p));
    /* An empty value: the pointer sits on the line end. */
    parsed_start(&p);
    struct http_field *h = &p.f[p.n++];
    h->name = p.buf + p.len;
    h->name_len = 3;
    parsed_add(&p, "X-E\0", 4);
    h->value = p.buf + p.len;
    h->value_len = 0;
    parsed_add(&p, "\0\0\0\0", 4);
    CHECK(head_ok(&p));
}

static void test_bare_lf_is_refused(void)
{
    struct parsed p;
    parsed_start(&p);
    parsed_field(&p, "Host", "x", "\0", 1); /* "Host: x\n" */
    parsed_field(&p, "X-A", "a", "\0\0", 2);
    parsed_add(&p, "\0\0", 2);
    CHECK(!head_ok(&p));
    parsed_start(&p);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    parsed_add(&p, "\0", 1); /* the empty line as a bare LF */
    CHECK(!head_ok(&p));
    /* The request line ended by a bare LF. */
    memset(&p, 0, sizeof p);
    parsed_add(&p, "GET\0/\0", 6);
    p.version = p.buf + p.len;
    parsed_add(&p, "HTTP/1.1\0", 9);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    parsed_add(&p, "\0\0", 2);
    CHECK(!head_ok(&p));
}

static void test_nul_inside_a_value_is_refused(void)
{
    struct parsed p;
    parsed_start(&p);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    /* "X-A: a\0b\r\n": the parser's value ends at the NUL. */
    struct http_field *h = &p.f[p.n++];
    h->name = p.buf + p.len;
    h->name_len = 3;
    parsed_add(&p, "X-A\0 ", 5);
    h->value = p.buf + p.len;
    h->value_len = 1;
    parsed_add(&p, "a\0b\0\0", 5);
    parsed_add(&p, "\0\0", 2);
    CHECK(!head_ok(&p));
}

static void test_a_folded_or_moved_line_is_refused(void)
{
    struct parsed p;
    parsed_start(&p);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    /* Unfolding copies the field elsewhere: its pointers leave the buffer. */
    static const char moved[] = "X-A\0a b";
    p.f[p.n++] = (struct http_field){ moved, 3, moved + 4, 3 };
    parsed_add(&p, "X-A\0 a\0\0 b\0\0\0\0", 14);
    CHECK(!head_ok(&p));
}

static void test_bytes_after_the_empty_line_or_a_short_head_are_refused(void)
{
    struct parsed p;
    parsed_start(&p);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    parsed_add(&p, "\0\0Z", 3);
    CHECK(!head_ok(&p));
    struct http_fault f;
    CHECK(!http_strict_head(p.buf, 8, p.buf + 4, 1, p.version, p.f, p.n, &f)); /* version
                                                                                  beyond */
    CHECK(!http_strict_head(p.buf, p.len, p.buf + 4, 1, NULL, p.f, p.n, &f));
}

static void test_a_nul_inside_the_target_is_refused(void)
{
    /* "GET /a\0b HTTP/1.1": the target as a C string is "/a", two bytes short of the version. */
    struct parsed p;
    memset(&p, 0, sizeof p);
    parsed_add(&p, "GET\0/a\0b\0", 9);
    p.version = p.buf + p.len;
    parsed_add(&p, "HTTP/1.1\0\0", 10);
    parsed_field(&p, "Host", "x", "\0\0", 2);
    parsed_add(&p, "\0\0", 2);
    struct http_fault f;
    CHECK(!http_strict_head(p.buf, p.len, p.buf + 4, 2, p.version, p.f, p.n, &f));
    /* Had the target been four bytes long as a C string, the line would be sound. */
    CHECK(http_strict_head(p.buf, p.len, p.buf + 4, 4, p.version, p.f, p.n, &f));
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_ordinary_targets_pass),
        UNIT_TEST(test_nul_encoded_slash_and_dot_segments_are_refused),
        UNIT_TEST(test_bytes_rfc_3986_forbids_in_a_path_are_refused),
        UNIT_TEST(test_malformed_targets_are_refused),
        UNIT_TEST(test_ordinary_fields_pass),
        UNIT_TEST(test_content_length_framing_faults_close),
        UNIT_TEST(test_transfer_codings_other_than_chunked),
        UNIT_TEST(test_host_and_field_characters),
        UNIT_TEST(test_a_well_formed_head_passes),
        UNIT_TEST(test_bare_lf_is_refused),
        UNIT_TEST(test_nul_inside_a_value_is_refused),
        UNIT_TEST(test_a_folded_or_moved_line_is_refused),
        UNIT_TEST(test_bytes_after_the_empty_line_or_a_short_head_are_refused),
        UNIT_TEST(test_a_nul_inside_the_target_is_refused),
    };
    return unit_run("http_strict", tests, sizeof tests / sizeof tests[0]);
}
