/* Form bodies decoded into JSON. Stricter than browsers on purpose: a malformed escape or a
 * repeated name is refused instead of guessed at, since a credential request that means two
 * things must not be read as either. */
#include "runtime/form.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/format.h"
#include "runtime/json.h"
#include "runtime/jsonw.h"

/* Decodes s[0..n) into a new arena string; NULL on a bad escape or invalid UTF-8. */
static char *decode(struct arena *a, const char *s, size_t n, size_t *out_len)
{
    char *out = arena_alloc(a, n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%') {
            int hi = i + 1 < n ? format_hex_digit(s[i + 1]) : -1;
            int lo = i + 2 < n ? format_hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return NULL;
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    if (memchr(out, '\0', o) || !json_utf8_valid(out, o))
        return NULL;
    *out_len = o;
    return out;
}

int form_to_json(struct arena *a, const char *body, size_t len, char **json, size_t *json_len,
                 const char **why)
{
    const char *names[FORM_MAX_PAIRS];
    int n = 0;
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    size_t i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && body[end] != '&')
            end++;
        if (end > i) { /* empty pairs ("a=1&&b=2") are skipped, as the standard says */
            const char *eq = memchr(body + i, '=', end - i);
            size_t klen = eq ? (size_t)(eq - (body + i)) : end - i;
            size_t nk = 0, nv = 0;
            char *k = decode(a, body + i, klen, &nk);
            char *v = eq ? decode(a, eq + 1, (size_t)(body + end - eq - 1), &nv) : "";
            if (!k || !v) {
                *why = "a name or value is not valid percent-encoded UTF-8";
                goto fail;
            }
            if (nk == 0) {
                *why = "a pair has an empty name";
                goto fail;
            }
            for (int j = 0; j < n; j++) {
                if (strcmp(names[j], k) == 0) {
                    *why = "a name is given more than once";
                    goto fail;
                }
            }
            if (n == FORM_MAX_PAIRS) {
                *why = "too many pairs";
                goto fail;
            }
            names[n++] = k;
            jsonw_key(&w, k);
            jsonw_stringn(&w, v, nv);
        }
        i = end + 1;
    }
    jsonw_object_end(&w);
    char *text = jsonw_take(&w, json_len);
    jsonw_release(&w);
    if (!text) {
        *why = "out of memory";
        return -1;
    }
    *json = arena_strndup(a, text, *json_len);
    free(text);
    return 0;
fail:
    jsonw_release(&w);
    return -1;
}
