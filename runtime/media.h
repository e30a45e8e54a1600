/* Media types beside JSON: content negotiation on Accept for the operations whose success
 * answers several representations (RFC 9110 §12.5.1), the Content-Type of a raw (non-JSON)
 * request body, and the Content-Type each representation is sent with. The generated
 * dispatchers call it; the handlers see the chosen type as an enum media. */
#ifndef RUNTIME_MEDIA_H
#define RUNTIME_MEDIA_H

#include <stdbool.h>
#include <stddef.h>

struct arena;

/* 0 is "none"; the values are stable (bit i of a mask is MEDIA_BIT(i)). */
enum media {
    MEDIA_NONE = 0,
    MEDIA_JSON, /* application/json */
    MEDIA_CSV,  /* text/csv (RFC 4180) */
    MEDIA_XML,  /* application/xml */
    MEDIA_TEXT, /* text/plain */
    MEDIA_PDF,  /* application/pdf */
    MEDIA_COUNT
};

#define MEDIA_BIT(m) (1u << (unsigned)(m))

/* "text/csv"; "" for MEDIA_NONE. */
const char *media_name(enum media m);
/* The Content-Type a representation is sent with: text types and XML with
 * "; charset=utf-8" ("text/csv; charset=utf-8"), the others bare. Static strings. */
const char *media_content_type(enum media m);
/* The media type named by a Content-Type (parameters ignored), MEDIA_NONE if not one of ours. */
enum media media_of(const char *content_type);
/* text/csv, text/plain: bodies of these must be valid UTF-8. */
bool media_is_text(enum media m);

/* RFC 9110 §12.5.1: the representation to send among offered[0..n) (in the spec's order)
 * for this Accept header. Each offered type takes the quality of the most specific media
 * range that matches it (type/subtype with parameters, type/subtype, type/any, any/any); q=0
 * means "not acceptable"; the highest quality wins, ties go to the earlier offered type.
 * An absent or blank Accept accepts anything (offered[0]). Elements that do not parse
 * (no '/', a bad q) are ignored, as are a charset other than utf-8 on a range (we send utf-8
 * only) and any other parameter but `header=present` (RFC 4180: our CSV always has its
 * header row), since we produce no representation that has it. MEDIA_NONE when nothing offered is acceptable (the caller answers 406). */
enum media media_negotiate(const char *accept, const enum media *offered, size_t n);

/* The media type of a raw request body's Content-Type among the allowed ones (a mask of
 * MEDIA_BIT()s). A charset parameter must be utf-8 (any case, quoted or not). MEDIA_NONE,
 * with the reason in *why (static text), otherwise (the caller answers 415). */
enum media media_request_type(const char *content_type, unsigned allowed, const char **why);

/* "application/json, text/csv": the offered types for a 406's detail (arena). */
char *media_list(struct arena *a, const enum media *offered, size_t n);

#endif
