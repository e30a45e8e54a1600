/* Strict RFC 8259 JSON parser into an arena tree. Numbers keep their literal text so integers
 * are exact (money never passes through a double); strings are validated UTF-8. */
#ifndef RUNTIME_JSON_H
#define RUNTIME_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/arena.h"

#define JSON_MAX_DEPTH 64

enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_member;

struct json_value {
    enum json_type type;
    const char *s;  /* STRING: decoded UTF-8, NUL-terminated; NUMBER: the literal text */
    size_t len;     /* bytes in s (STRING, NUMBER) */
    size_t count;   /* ARRAY: items; OBJECT: members */
    struct json_value **items;   /* ARRAY */
    struct json_member *members; /* OBJECT, in document order */
};

struct json_member {
    const char *key; /* decoded UTF-8, NUL-terminated */
    size_t key_len;
    struct json_value *value;
};

struct json_error {
    size_t offset;   /* byte offset of the problem in the input */
    const char *msg; /* static text, e.g. "invalid UTF-8", "duplicate key" */
};

/* Parses exactly one JSON text (surrounding whitespace allowed). Rejects invalid UTF-8 anywhere,
 * lone surrogates, "\u0000" in strings and keys, duplicate object keys, depth > JSON_MAX_DEPTH,
 * leading zeros, trailing garbage. Returns 0 and *out, or -1 and *err. Tree lives in a. */
int json_parse(struct arena *a, const char *buf, size_t len, struct json_value **out,
               struct json_error *err);

/* NULL when absent or v is not an object. */
const struct json_value *json_get(const struct json_value *obj, const char *key);

enum json_int_result { JSON_INT_OK = 0, JSON_INT_NOT_INTEGER = -1, JSON_INT_RANGE = -2 };
/* Exact conversion of a NUMBER literal: "12", "-3", "1.0", "1e2" and "1.50e1" are integers
 * (no fraction left after the exponent); "1.5" is NOT_INTEGER; beyond int64 is RANGE.
 * Never goes through floating point. */
enum json_int_result json_number_to_int64(const struct json_value *v, int64_t *out);
/* strtod of the literal, for schema type "number" (never used for money). */
double json_number_to_double(const struct json_value *v);

/* Number of Unicode code points in valid UTF-8 (for minLength/maxLength). */
size_t json_utf8_codepoints(const char *s, size_t len);
/* True when s[0..len) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
bool json_utf8_valid(const char *s, size_t len);

#endif
