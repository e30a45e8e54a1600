/* Streaming JSON writer into a malloc'd buffer (handed to libmicrohttpd, which frees it).
 * Commas and escaping are handled here; callers just nest begin/end calls. */
#ifndef RUNTIME_JSONW_H
#define RUNTIME_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/json.h"

#define JSONW_MAX_DEPTH 64

struct jsonw {
    char *buf;
    size_t len, cap;
    int depth;
    bool first[JSONW_MAX_DEPTH + 1]; /* no member/item written yet at this depth */
    bool after_key;
};

void jsonw_init(struct jsonw *w);
/* Frees the buffer unless jsonw_take() took it. */
void jsonw_release(struct jsonw *w);
/* NUL-terminated output; caller owns it (free()). The writer is empty afterwards. */
char *jsonw_take(struct jsonw *w, size_t *len);

void jsonw_object_begin(struct jsonw *w);
void jsonw_object_end(struct jsonw *w);
void jsonw_array_begin(struct jsonw *w);
void jsonw_array_end(struct jsonw *w);
void jsonw_key(struct jsonw *w, const char *key);
void jsonw_string(struct jsonw *w, const char *s); /* NULL writes null */
void jsonw_stringn(struct jsonw *w, const char *s, size_t n);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_double(struct jsonw *w, double v); /* shortest round-trip form, %.17g */
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* Re-serialises a parsed value (for free-form schemas and replays). */
void jsonw_value(struct jsonw *w, const struct json_value *v);

#endif
