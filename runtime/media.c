/* Media types, Accept negotiation and raw request body types (runtime/media.h). The parsers
 * read the header text in place (no allocation) and never trust its length. */
#include "runtime/media.h"

#include <string.h>
#include <strings.h>

#include "runtime/arena.h"

static const struct {
    const char *name;
    const char *content_type;
} media_table[MEDIA_COUNT] = {
    [MEDIA_NONE] = { "", "" },
    [MEDIA_JSON] = { "application/json", "application/json" },
    [MEDIA_CSV] = { "text/csv", "text/csv; charset=utf-8" },
    [MEDIA_XML] = { "application/xml", "application/xml; charset=utf-8" },
    [MEDIA_TEXT] = { "text/plain", "text/plain; charset=utf-8" },
    [MEDIA_PDF] = { "application/pdf", "application/pdf" },
};

const char *media_name(enum media m)
{
    return m > MEDIA_NONE && m < MEDIA_COUNT ? media_table[m].name : "";
}

const char *media_content_type(enum media m)
{
    return m > MEDIA_NONE && m < MEDIA_COUNT ? media_table[m].content_type : "";
}

bool media_is_text(enum media m)
{
    return m == MEDIA_CSV || m == MEDIA_TEXT;
}

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* A token at s: its length (0 when none). */
static size_t token_len(const char *s, const char *end)
{
    size_t n = 0;
    while (s + n < end && is_tchar(s[n]))
        n++;
    return n;
}

/* type/subtype at *s (advanced past it): false when malformed. */
static bool parse_type(const char **s, const char *end, const char **type, size_t *tlen,
                       const char **sub, size_t *slen)
{
    const char *p = *s;
    *type = p;
    *tlen = token_len(p, end);
    p += *tlen;
    if (*tlen == 0 || p >= end || *p != '/')
        return false;
    p++;
    *sub = p;
    *slen = token_len(p, end);
    p += *slen;
    if (*slen == 0)
        return false;
    *s = p;
    return true;
}

/* One parameter after ';' at *s: name and value (quotes kept off, escapes left in). */
static bool parse_param(const char **s, const char *end, const char **name, size_t *nlen,
                        const char **val, size_t *vlen)
{
    const char *p = *s;
    while (p < end && is_ows(*p))
        p++;
    *name = p;
    *nlen = token_len(p, end);
    p += *nlen;
    if (*nlen == 0 || p >= end || *p != '=')
        return false;
    p++;
    if (p < end && *p == '"') {
        p++;
        *val = p;
        while (p < end && *p != '"') {
            if (*p == '\\' && p + 1 < end)
                p++;
            p++;
        }
        if (p >= end)
            return false;
        *vlen = (size_t)(p - *val);
        p++;
    } else {
        *val = p;
        *vlen = token_len(p, end);
        p += *vlen;
        if (*vlen == 0)
            return false;
    }
    *s = p;
    return true;
}

/* The next `; name=value` of a parameter list at *s: 1 with it, 0 at the end, -1 when what
 * follows is not a parameter. */
static int next_param(const char **s, const char *end, const char **name, size_t *nlen,
                      const char **val, size_t *vlen)
{
    const char *p = *s;
    while (p < end && is_ows(*p))
        p++;
    if (p >= end) {
        *s = p;
        return 0;
    }
    if (*p != ';')
        return -1;
    p++;
    if (!parse_param(&p, end, name, nlen, val, vlen))
        return -1;
    *s = p;
    return 1;
}

static bool eq(const char *s, size_t n, const char *want)
{
    return n == strlen(want) && strncasecmp(s, want, n) == 0;
}

/* qvalue (RFC 9110 §12.4.2) in thousandths, -1 when malformed. */
static int parse_q(const char *s, size_t n)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1'))
        return -1;
    int q = (s[0] - '0') * 1000;
    if (n == 1)
        return q;
    if (s[1] != '.' || n > 5)
        return -1;
    int scale = 100;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9' || (s[0] == '1' && s[i] != '0'))
            return -1;
        q += (s[i] - '0') * scale;
    }
    return q;
}

struct range {
    const char *type, *sub;
    size_t tlen, slen;
    int q;        /* thousandths */
    int rank;     /* 1 * / *, 2 type/ *, 3 type/subtype, 4 with parameters */
};

/* One element of Accept in [s, end): false when it does not parse (ignored). */
static bool parse_range(const char *s, const char *end, struct range *rg)
{
    while (s < end && is_ows(*s))
        s++;
    while (end > s && is_ows(end[-1]))
        end--;
    if (!parse_type(&s, end, &rg->type, &rg->tlen, &rg->sub, &rg->slen))
        return false;
    bool star_type = rg->tlen == 1 && rg->type[0] == '*';
    bool star_sub = rg->slen == 1 && rg->sub[0] == '*';
    if (star_type && !star_sub)
        return false;
    rg->rank = star_type ? 1 : star_sub ? 2 : 3;
    rg->q = 1000;
    bool seen_q = false;
    const char *name, *val;
    size_t nlen, vlen;
    int more;
    while ((more = next_param(&s, end, &name, &nlen, &val, &vlen)) > 0) {
        if (eq(name, nlen, "q")) {
            if (seen_q || (rg->q = parse_q(val, vlen)) < 0)
                return false;
            seen_q = true;
        } else if (seen_q) {
            continue; /* an extension after the weight: ignored */
        } else if (eq(name, nlen, "charset")) {
            if (!eq(val, vlen, "utf-8"))
                return false; /* we send UTF-8 only: such a range accepts nothing of ours */
            if (rg->rank == 3)
                rg->rank = 4;
        } else if (eq(name, nlen, "header") && eq(val, vlen, "present")) {
            if (rg->rank == 3) /* RFC 4180's parameter: our CSV always has its header row */
                rg->rank = 4;
        } else {
            return false; /* a parameter we never produce (header=absent, a profile): the
                             range asks for a representation we do not have */
        }
    }
    return more == 0;
}

static bool matches(const struct range *rg, const char *name)
{
    const char *slash = strchr(name, '/');
    size_t tlen = (size_t)(slash - name);
    if (rg->rank == 1)
        return true;
    if (rg->tlen != tlen || strncasecmp(rg->type, name, tlen) != 0)
        return false;
    return rg->rank == 2 || eq(rg->sub, rg->slen, slash + 1);
}

enum media media_negotiate(const char *accept, const enum media *offered, size_t n)
{
    if (n == 0)
        return MEDIA_NONE;
    const char *p = accept;
    while (p && (is_ows(*p) || *p == ','))
        p++;
    if (!p || !*p)
        return offered[0];
    int best_q[MEDIA_COUNT] = { 0 }, best_rank[MEDIA_COUNT] = { 0 };
    while (*p) {
        const char *start = p;
        bool quoted = false;
        while (*p && (quoted || *p != ',')) {
            if (*p == '"')
                quoted = !quoted;
            else if (*p == '\\' && quoted && p[1])
                p++;
            p++;
        }
        struct range rg;
        if (parse_range(start, p, &rg)) {
            for (size_t i = 0; i < n; i++) {
                enum media m = offered[i];
                if (m <= MEDIA_NONE || m >= MEDIA_COUNT || !matches(&rg, media_name(m)))
                    continue;
                /* the most specific range decides; among equally specific ones, the best */
                if (rg.rank > best_rank[m] || (rg.rank == best_rank[m] && rg.q > best_q[m])) {
                    best_rank[m] = rg.rank;
                    best_q[m] = rg.q;
                }
            }
        }
        if (*p == ',')
            p++;
    }
    enum media chosen = MEDIA_NONE;
    int chosen_q = 0;
    for (size_t i = 0; i < n; i++) {
        enum media m = offered[i];
        if (m > MEDIA_NONE && m < MEDIA_COUNT && best_q[m] > chosen_q) {
            chosen = m;
            chosen_q = best_q[m];
        }
    }
    return chosen;
}

enum media media_of(const char *content_type)
{
    const char *p = content_type, *type, *sub;
    size_t tlen, slen;
    if (!p)
        return MEDIA_NONE;
    const char *end = p + strlen(p);
    while (p < end && is_ows(*p))
        p++;
    if (!parse_type(&p, end, &type, &tlen, &sub, &slen))
        return MEDIA_NONE;
    for (int m = MEDIA_NONE + 1; m < MEDIA_COUNT; m++) {
        const char *name = media_table[m].name;
        if (tlen + 1 + slen == strlen(name) && strncasecmp(type, name, tlen) == 0 &&
            name[tlen] == '/' && strncasecmp(sub, name + tlen + 1, slen) == 0)
            return (enum media)m;
    }
    return MEDIA_NONE;
}

enum media media_request_type(const char *content_type, unsigned allowed, const char **why)
{
    *why = "no Content-Type";
    if (!content_type)
        return MEDIA_NONE;
    enum media m = media_of(content_type);
    *why = "not an accepted media type";
    if (m == MEDIA_NONE || !(allowed & MEDIA_BIT(m)))
        return MEDIA_NONE;
    const char *p = strchr(content_type, '/'), *end = content_type + strlen(content_type);
    p++;
    p += token_len(p, end);
    const char *name, *val;
    size_t nlen, vlen;
    int more;
    while ((more = next_param(&p, end, &name, &nlen, &val, &vlen)) > 0) {
        if (eq(name, nlen, "charset") && !eq(val, vlen, "utf-8")) {
            *why = "only charset=utf-8 is accepted";
            return MEDIA_NONE;
        }
    }
    if (more < 0) {
        *why = "malformed Content-Type parameters";
        return MEDIA_NONE;
    }
    *why = NULL;
    return m;
}

char *media_list(struct arena *a, const enum media *offered, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(media_name(offered[i])) + 2;
    char *out = arena_alloc(a, len), *p = out;
    *p = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *name = media_name(offered[i]);
        size_t l = strlen(name);
        if (i) {
            memcpy(p, ", ", 2);
            p += 2;
        }
        memcpy(p, name, l + 1);
        p += l;
    }
    return out;
}
