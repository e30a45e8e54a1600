/* Several instances on one database (PostgreSQL) behaving as one service: what an instance must
 * hear of the others before it serves a request. Each instance keeps revocations and the
 * privilege cache in memory (runtime/revocation.h, runtime/privileges.h), and hears of its own
 * changes at once; another instance's changes reach it through two small tables of the runtime,
 * read in one statement at the start of every authenticated request:
 * - revocations: every id a handler revokes (revocation_after_commit) is also written there in
 *   the revoking transaction, so the next request anywhere finds it;
 * - storage_generations: the 'watched' row counts commits that changed a table storage_watch()
 *   registered (the engine bumps it inside such a commit); an instance that sees it move
 *   empties its privilege cache before it checks the request.
 * On SQLite there is one instance (and the operator CLI, heard through housekeeping): nothing
 * here runs. */
#ifndef RUNTIME_INSTANCES_H
#define RUNTIME_INSTANCES_H

#include <stdbool.h>
#include <stdint.h>

/* Whether this process shares its database with other instances (PostgreSQL). */
bool instances_shared(void);
/* Before a request's authorization, outside a transaction: hears what other instances
 * changed, and answers 1 when one of the token's ids (session, token, subject; NULL or empty
 * ones skipped) was revoked anywhere and its revocation still holds at now_s, 0 when not,
 * -1 on failure (the database did not answer). */
int instances_hear(const char *sid, const char *jti, const char *sub, int64_t now_s);
/* Inside the revoking transaction: records id as revoked until until_s for the other
 * instances. 0 / -1. */
int instances_note_revocation(const char *id, int64_t until_s);
/* Deletes revocations whose time has passed (housekeeping). 0 / -1. */
int instances_prune(int64_t now_s);

#endif
