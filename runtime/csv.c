/* CSV text in an arena (runtime/csv.h). */
#include "runtime/csv.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runtime/arena.h"

void csv_init(struct csv *c, struct arena *a)
{
    memset(c, 0, sizeof *c);
    c->a = a;
}

void csv_put(struct csv *c, const char *s, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        /* doubling: an arena cannot grow a block in place, so the old one is left behind;
         * what is left adds up to less than the final size */
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *p = arena_alloc(c->a, cap);
        if (c->len)
            memcpy(p, c->p, c->len);
        c->p = p;
        c->cap = cap;
    }
    memcpy(c->p + c->len, s, n);
    c->len += n;
    c->p[c->len] = '\0';
}

static void separate(struct csv *c)
{
    if (c->in_row)
        csv_put(c, ",", 1);
    c->in_row = true;
}

void csv_cell(struct csv *c, const char *v)
{
    separate(c);
    if (!v)
        return;
    bool formula = v[0] && strchr("=+-@\t\r", v[0]);
    bool quote = strpbrk(v, ",\"\r\n") != NULL;
    if (quote)
        csv_put(c, "\"", 1);
    if (formula)
        csv_put(c, "'", 1);
    /* the runs between quotes in one copy each, every quote doubled */
    for (const char *s = v;;) {
        const char *q = strchr(s, '"');
        if (!q) {
            csv_put(c, s, strlen(s));
            break;
        }
        csv_put(c, s, (size_t)(q - s) + 1);
        csv_put(c, "\"", 1);
        s = q + 1;
    }
    if (quote)
        csv_put(c, "\"", 1);
}

void csv_int(struct csv *c, int64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, v);
    separate(c);
    csv_put(c, buf, (size_t)n);
}

void csv_row_end(struct csv *c)
{
    csv_put(c, "\r\n", 2);
    c->in_row = false;
}

const char *csv_text(struct csv *c, size_t *len)
{
    *len = c->len;
    return c->p ? c->p : "";
}
