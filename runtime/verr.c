/* Validation error list: every violation up to VERR_MAX, each with an RFC 6901 pointer,
 * so a client fixes a body in one round trip and a hostile body cannot grow the list. */
#include "runtime/verr.h"

#include <stdarg.h>
#include <string.h>

void verr_init(struct verr_list *l, struct arena *a)
{
    memset(l, 0, sizeof *l);
    l->arena = a;
}

void verr_add(struct verr_list *l, const char *base, const char *token, const char *code,
              const char *fmt, ...)
{
    if (l->count >= VERR_MAX) {
        l->truncated = true;
        return;
    }
    struct verr *e = &l->items[l->count++];
    if (token)
        e->pointer = verr_child(l->arena, base, token);
    else
        e->pointer = arena_strdup(l->arena, base ? base : "");
    e->code = arena_strdup(l->arena, code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    e->detail = arena_vprintf(l->arena, fmt, ap);
    va_end(ap);
}

char *verr_child(struct arena *a, const char *base, const char *token)
{
    if (!base)
        base = "";
    if (!token)
        token = "";
    size_t blen = strlen(base), extra = 0;
    for (const char *t = token; *t; t++)
        extra += *t == '~' || *t == '/';
    size_t tlen = strlen(token);
    char *out = arena_alloc(a, blen + 1 + tlen + extra + 1);
    char *o = out;
    memcpy(o, base, blen);
    o += blen;
    *o++ = '/';
    for (const char *t = token; *t; t++) {
        if (*t == '~') {
            *o++ = '~';
            *o++ = '0';
        } else if (*t == '/') {
            *o++ = '~';
            *o++ = '1';
        } else {
            *o++ = *t;
        }
    }
    *o = '\0';
    return out;
}

char *verr_index(struct arena *a, const char *base, unsigned long index)
{
    return arena_printf(a, "%s/%lu", base ? base : "", index);
}
