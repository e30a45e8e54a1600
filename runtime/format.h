/* String formats the spec may name (`format:`), checked exactly, plus ISO reference data:
 * ISO 4217 currencies with their minor-unit exponents and ISO 3166-1 alpha-2 countries. */
#ifndef RUNTIME_FORMAT_H
#define RUNTIME_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/arena.h"

bool format_is_date(const char *s);      /* RFC 3339 full-date, real calendar dates */
bool format_is_date_time(const char *s); /* RFC 3339 date-time, offset required */
bool format_is_uuid(const char *s);      /* 8-4-4-4-12 hex, any version */
bool format_is_email(const char *s);     /* pragmatic addr-spec: local@domain.tld, <= 254 */
bool format_is_uri(const char *s);       /* absolute RFC 3986 URI: scheme ":" ... no spaces */
bool format_is_currency(const char *s);  /* active ISO 4217 alphabetic code */
bool format_is_country(const char *s);   /* ISO 3166-1 alpha-2 */
bool format_is_iban(const char *s);      /* country + check digits, per-country length, mod-97 */
bool format_is_bic(const char *s);       /* ISO 9362: 8 or 11, valid country */
/* The value of a hexadecimal digit (either case), -1 for any other character. */
int format_hex_digit(char c);
/* s percent-encoded except RFC 3986 unreserved characters (a URI query value or path segment),
 * in a. */
char *format_uri_component(struct arena *a, const char *s);
/* Minor-unit exponent of an ISO 4217 code (JPY 0, BHD 3, CLF 4, most 2); -1 if unknown. */
int format_currency_exponent(const char *code);
/* v in decimal, NUL-terminated, into buf (FORMAT_I64_MAX bytes); returns the length. */
#define FORMAT_I64_MAX 21
size_t format_i64(char buf[FORMAT_I64_MAX], int64_t v);
/* Current UTC time as RFC 3339 with milliseconds and 'Z'. buf >= 32 bytes. */
void format_now_rfc3339(char *buf, size_t n);
void format_time_rfc3339(int64_t unix_ms, char *buf, size_t n);
/* Parses the form format_time_rfc3339() writes ("2025-03-14T09:26:53.589Z", UTC, ms) back to
 * Unix milliseconds. False for any other text. */
bool format_time_parse(const char *s, int64_t *unix_ms);
/* Any RFC 3339 date-time (any offset, any fraction; seconds 60 read as 60) to Unix
 * milliseconds, fraction truncated to ms. False when s is not one. */
bool format_time_parse_any(const char *s, int64_t *unix_ms);

#endif
