/* RFC 6749 §5.2 error responses, for operations marked x-oauth-errors (op->oauth_errors): the
 * runtime records every refusal as a problem (req_problem), and these functions turn it into
 * what OAuth client libraries read, {"error", "error_description"} served as
 * application/json. The HTTP status and headers stay the problem's. */
#ifndef RUNTIME_OAUTH_ERROR_H
#define RUNTIME_OAUTH_ERROR_H

#include <stddef.h>

#include "runtime/verr.h"

/* Longest error_description written, in bytes (longer text ends with "..."). */
#define OAUTH_ERROR_DESCRIPTION_MAX 1024

/* The RFC 6749 error code for a problem code answered with status: a code OAuth defines is
 * kept, anything else is mapped (oauth_error.c says why). Static string. */
const char *oauth_error_code(const char *problem_code, int status);
/* The body {"error","error_description"}: the description is detail followed by the
 * validation errors ("<pointer>: <detail> (<code>)", joined by "; "), reduced to the characters RFC 6749 §5.2
 * allows (%x20-21 / %x23-5B / %x5D-7E). detail and errors may be NULL. malloc'd. */
char *oauth_error_render(int status, const char *problem_code, const char *detail,
                         const struct verr_list *errors, size_t *len);

#endif
