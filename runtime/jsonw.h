/* Streaming JSON writer into a malloc'd buffer (handed to libmicrohttpd, which frees it).
 * Commas and escaping are handled here; callers just nest begin/end calls. */
#ifndef RUNTIME_JSONW_H
#define RUNTIME_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/json.h"

struct jsonw {
    char *buf;
    size_t len, cap;
    int depth;
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
/* A member's key written as it is given: `raw` is the key already quoted and escaped with its
 * colon after it ("\"name\":"), n its length; the comma before it is written here when a member
 * precedes it in the object. For the generated encoders, whose keys are known when they are
 * generated: one copy instead of jsonw_key's escaping (a page of 20 payments has ~500 keys). */
void jsonw_raw_key(struct jsonw *w, const char *raw, size_t n);
void jsonw_string(struct jsonw *w, const char *s); /* NULL writes null */
/* raw: a JSON value's text, written as it is (generated code: an enum value, quoted). */
void jsonw_raw_value(struct jsonw *w, const char *raw, size_t n);
/* jsonw_raw_key(raw, n) and jsonw_string(s) in one call: a member of a generated encoder. */
void jsonw_raw_key_string(struct jsonw *w, const char *raw, size_t n, const char *s);
void jsonw_stringn(struct jsonw *w, const char *s, size_t n);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_double(struct jsonw *w, double v); /* shortest round-trip form, %.17g */
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* Re-serialises a parsed value (for free-form schemas and replays). */
void jsonw_value(struct jsonw *w, const struct json_value *v);

#endif
