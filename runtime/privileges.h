/* Current privileges: a token's scopes are what it was granted when it was issued, intersected
 * on every request with what its principal may do now (the member's role, the service
 * account's role and status, the OAuth client's scopes and status). A narrowed role, a
 * removed member, a disabled account or client: the next request sees it.
 *
 * The runtime knows no table: the handlers supply the lookup (privileges_init) and name the
 * tables it reads (storage_watch, runtime/storage.h). Answers are cached per (workspace,
 * subject, client); a committed change to a watched table calls privileges_changed(), which
 * moves a generation counter on and so empties the cache at once. An answer computed while a
 * change was committing is stamped with the generation read before its read transaction began,
 * so it can never outlive the change. One process only: other processes writing the same
 * database (the operator CLI, more instances) are not heard. */
#ifndef RUNTIME_PRIVILEGES_H
#define RUNTIME_PRIVILEGES_H

#include <stdint.h>

#define PRIVILEGES_ID_MAX 63 /* longer ids are looked up every time, never cached */

/* What the principal sub of workspace wid, acting through OAuth client client_id (NULL: our
 * own tokens), may do now, as scope bits (workspace:admin expanded). 1 with *allowed, 0 when
 * the principal has no standing left in the workspace (not a member, not active, disabled,
 * client gone), -1 on failure. Called inside a read transaction. */
typedef int privileges_lookup_fn(const char *wid, const char *sub, const char *client_id,
                                 uint64_t *allowed);

void privileges_init(privileges_lookup_fn *lookup);
/* 1 / 0 / -1 as the lookup; from the cache when it holds a current answer. Opens and ends its
 * own read transaction on a miss, so call it outside one. */
int privileges_current(const char *wid, const char *sub, const char *client_id,
                       uint64_t *allowed);
/* Forgets every cached answer (after a committed change to what the lookup reads). */
void privileges_changed(void);

#endif
