/* RFC 9457 problem documents: the closed list of problem codes with their titles (the spec's
 * root x-problem-codes, registered at start) and the serializer every error response goes
 * through. */
#ifndef RUNTIME_PROBLEM_H
#define RUNTIME_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/arena.h"
#include "runtime/verr.h"

struct problem_code {
    const char *code;
    const char *title;
};

/* Every code the server answers with its title (generated/problems.c), kept (not copied) for
 * the process's life. Call once at start, before serving. */
void problem_register(const struct problem_code *codes, size_t n);
/* Whether code is registered (true while nothing is). Test builds refuse to answer one that is
 * not (runtime/req.c): the generator checks literal codes, this the rest. */
bool problem_declared(const char *code);

/* Stable title for a code; codes outside the list get the status's reason phrase, which is
 * equally stable because a code always comes with one status. */
const char *problem_title(const char *code, int status);
const char *problem_reason(int status);
/* {"type","title","status","detail","instance","code","request_id"[,"errors"]}; malloc'd.
 * (Operations marked x-oauth-errors answer RFC 6749 bodies instead: runtime/oauth_error.h.) */
char *problem_render(int status, const char *code, const char *detail, const char *instance,
                     const char *request_id, const struct verr_list *errors, size_t *len);
/* problem_render with one more member (name and its JSON value text; name NULL: none) after
 * errors: what an operation documents beside them (req_problem_member). */
char *problem_render_with(int status, const char *code, const char *detail, const char *instance,
                          const char *request_id, const struct verr_list *errors,
                          const char *member, const char *member_json, size_t *len);
/* The same problem as an HTML error page (for page operations: a person reads it in a
 * browser). Temporary strings in a; the document is malloc'd. */
char *problem_render_html(struct arena *a, int status, const char *code, const char *detail,
                          const char *request_id, const struct verr_list *errors, size_t *len);

#endif
