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
/* Adds every session revoked in the last REVOCATION_TOKEN_LIFETIME_S, every revoked
 * service-account token and every disabled service account (those for good: their tokens do
 * not expire), and drops entries whose time has passed, in a read transaction. 0 / -1. */
int revocation_load(int64_t now_s);
/* Forgets everything (tests). */
void revocation_reset(void);

#endif
