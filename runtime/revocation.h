/* Revoked sessions and tokens, kept in memory so the bearer check refuses them without a
 * database round trip. An entry lives until no access token it covers can still be valid
 * (revocation time + the longest token lifetime + leeway). Entries come from the handlers
 * that revoke (after their commit) and from the database at start and whenever another
 * connection changed it (housekeeping), so a revocation made anywhere is seen within a
 * second and one made by this process at once. */
#ifndef RUNTIME_REVOCATION_H
#define RUNTIME_REVOCATION_H

#include <stdbool.h>
#include <stdint.h>

#define REVOCATION_ID_MAX 63
/* How long after its revocation a session can still have unexpired access tokens. */
#define REVOCATION_TOKEN_LIFETIME_S (86400 + 60)

/* Adds id (a session id "ses_...", a token id or a principal id) until until_s (Unix
 * seconds; INT64_MAX for ever). */
void revocation_add(const char *id, int64_t until_s);
struct req;
/* Adds id until until_s once r's transaction has committed (a request whose writes are thrown
 * away revokes nothing); the pipeline publishes the list before the answer is sent. */
void revocation_after_commit(struct req *r, const char *id, int64_t until_s);
void revocation_publish(const struct req *r);
/* True when id is revoked. One relaxed load when nothing is revoked at all. */
bool revocation_contains(const char *id);
/* Where revocations made before this process started (or by another process) come from: a
 * function the handlers supply (the runtime knows no table) that, inside the read transaction
 * revocation_load opens, calls revocation_add for every session revoked in the last
 * REVOCATION_TOKEN_LIFETIME_S before now_s, every revoked token and every disabled principal
 * whose tokens do not expire (those for good). 0 / -1. */
typedef int revocation_source_fn(int64_t now_s);
void revocation_set_source(revocation_source_fn *list);
/* Adds what the source lists and drops entries whose time has passed. 0 / -1. */
int revocation_load(int64_t now_s);
/* Forgets everything (tests). */
void revocation_reset(void);

#endif
