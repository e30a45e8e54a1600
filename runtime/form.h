/* application/x-www-form-urlencoded request bodies (the WHATWG URL standard's parser: pairs
 * split on '&' and the first '=', '+' as space, percent-decoding), turned into the JSON
 * object of strings the operation's schema validates, so a form body and a JSON body go
 * through one validator and one typed struct. */
#ifndef RUNTIME_FORM_H
#define RUNTIME_FORM_H

#include <stddef.h>

#include "runtime/arena.h"

#define FORM_MAX_PAIRS 64

/* 0 and a NUL-terminated JSON object in *json (in a), or -1 with a static reason in *why:
 * a bad percent escape, text that is not UTF-8, an empty or repeated name, too many pairs. */
int form_to_json(struct arena *a, const char *body, size_t len, char **json, size_t *json_len,
                 const char **why);

#endif
