/* Compiled pattern table behind runtime/pattern.h; regexec() on a compiled regex_t is
 * thread-safe, so workers share one set.
 *
 * Most of the spec's patterns are "simple": anchored at the start, a sequence of literal
 * characters and bracket classes each with an optional quantifier, like ids
 * (^pay_[0-9a-z]{26}$). Those are also compiled here into a list of (byte set, min, max) atoms
 * and matched by a small backtracking matcher, which accepts exactly the same strings as
 * regexec (tests/unit/test_pattern.c compares the two) at a fraction of its cost: regexec
 * was 2.4% of a whole GET /v1/payments/{id}. Anything else (groups, alternation, '.', an
 * unanchored start) uses regexec. */
#include "runtime/pattern.h"

#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIMPLE_MAX_ATOMS 16

struct atom {
    uint8_t set[32]; /* bit c: byte c matches */
    unsigned min, max;
};

struct simple {
    bool ok;     /* the pattern is simple; else regexec */
    bool to_end; /* ends with $: the whole string must be used */
    size_t n;
    struct atom atoms[SIMPLE_MAX_ATOMS];
};

static regex_t *compiled;
static struct simple *simple;
static size_t n_compiled;

void pattern_release(void)
{
    for (size_t i = 0; i < n_compiled; i++)
        regfree(&compiled[i]);
    free(compiled);
    free(simple);
    compiled = NULL;
    simple = NULL;
    n_compiled = 0;
}

static void set_add(struct atom *a, unsigned char c)
{
    a->set[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static bool set_has(const struct atom *a, unsigned char c)
{
    return (a->set[c >> 3] >> (c & 7)) & 1u;
}

/* A decimal in a {} quantifier; advances *p. -1 when none. */
static long number(const char **p)
{
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9' && v < 100000)
        v = v * 10 + (*s++ - '0');
    *p = s;
    return v;
}

/* Parses pat as a simple pattern into *sp; sp->ok stays false when it is not one. */
static void parse_simple(const char *pat, struct simple *sp)
{
    memset(sp, 0, sizeof *sp);
    const char *p = pat;
    if (*p++ != '^')
        return;
    while (*p && !(p[0] == '$' && p[1] == '\0')) {
        if (sp->n == SIMPLE_MAX_ATOMS)
            return;
        struct atom *a = &sp->atoms[sp->n++];
        if (*p == '[') {
            p++;
            if (*p == '^' || *p == ']')
                return;
            while (*p && *p != ']') {
                unsigned char lo = (unsigned char)*p++;
                if (lo == '[' || lo == '\\')
                    return; /* [:class:], [=x=], escapes: leave them to regcomp */
                if (*p == '-' && p[1] && p[1] != ']') {
                    unsigned char hi = (unsigned char)p[1];
                    if (hi < lo)
                        return;
                    for (unsigned c = lo; c <= hi; c++)
                        set_add(a, (unsigned char)c);
                    p += 2;
                } else {
                    set_add(a, lo);
                }
            }
            if (*p++ != ']')
                return;
        } else if (strchr(".[]()*+?{}|^$\\", *p)) {
            return;
        } else {
            set_add(a, (unsigned char)*p++);
        }
        a->min = a->max = 1;
        if (*p == '?') {
            a->min = 0;
            p++;
        } else if (*p == '*' || *p == '+') {
            a->min = *p == '+';
            a->max = UINT_MAX;
            p++;
        } else if (*p == '{') {
            p++;
            long lo = number(&p), hi = lo;
            if (lo < 0)
                return;
            if (*p == ',') {
                p++;
                hi = *p == '}' ? -2 : number(&p);
                if (hi == -1 || (hi >= 0 && hi < lo))
                    return;
            }
            if (*p++ != '}')
                return;
            a->min = (unsigned)lo;
            a->max = hi == -2 ? UINT_MAX : (unsigned)hi;
        }
        if (*p == '?' || *p == '*' || *p == '+' || *p == '{')
            return; /* stacked quantifiers */
    }
    /* Linear time only: a variable-length atom must be followed by a mandatory atom whose
     * set is disjoint from its own (then only its longest run can be followed), or end the
     * pattern. [a-z]+[a-z0-9]+ and the like are left to regexec. */
    for (size_t i = 0; i + 1 < sp->n; i++) {
        const struct atom *a = &sp->atoms[i], *b = &sp->atoms[i + 1];
        if (a->min == a->max)
            continue;
        if (b->min == 0)
            return;
        for (size_t k = 0; k < sizeof a->set; k++) {
            if (a->set[k] & b->set[k])
                return;
        }
    }
    sp->to_end = *p == '$';
    sp->ok = true;
}

/* Atom i at s: its longest run first, then shorter ones (with the disjointness rule above a
 * shorter run fails at the next atom's first byte, so this stays linear). */
static bool match_from(const struct simple *sp, size_t i, const unsigned char *s)
{
    if (i == sp->n)
        return !sp->to_end || *s == '\0';
    const struct atom *a = &sp->atoms[i];
    size_t run = 0;
    while (run < a->max && s[run] && set_has(a, s[run]))
        run++;
    if (run < a->min)
        return false;
    for (size_t k = run + 1; k-- > a->min;) {
        if (match_from(sp, i + 1, s + k))
            return true;
    }
    return false;
}

int pattern_init(const char *const *patterns, size_t n, char *err, size_t errlen)
{
    regex_t *set = NULL;
    size_t done = 0;
    int rc = -1;

    pattern_release();
    if (n == 0)
        return 0;
    set = calloc(n, sizeof *set);
    simple = calloc(n, sizeof *simple);
    if (!set || !simple) {
        snprintf(err, errlen, "out of memory compiling %zu patterns", n);
        goto out;
    }
    for (; done < n; done++) {
        int e = regcomp(&set[done], patterns[done], REG_EXTENDED | REG_NOSUB);
        if (e != 0) {
            char why[128];
            regerror(e, &set[done], why, sizeof why);
            snprintf(err, errlen, "pattern %zu (%s) does not compile: %s", done,
                     patterns[done], why);
            goto out;
        }
        parse_simple(patterns[done], &simple[done]);
    }
    compiled = set;
    n_compiled = n;
    set = NULL;
    rc = 0;
out:
    if (set) {
        for (size_t i = 0; i < done; i++)
            regfree(&set[i]);
        free(set);
        free(simple);
        simple = NULL;
    }
    return rc;
}

bool pattern_match_regex(size_t idx, const char *s)
{
    if (idx >= n_compiled || !s)
        return false;
    return regexec(&compiled[idx], s, 0, NULL, 0) == 0;
}

bool pattern_match(size_t idx, const char *s)
{
    if (idx < n_compiled && s && simple[idx].ok)
        return match_from(&simple[idx], 0, (const unsigned char *)s);
    return pattern_match_regex(idx, s);
}

bool pattern_is_simple(size_t idx)
{
    return idx < n_compiled && simple[idx].ok;
}
