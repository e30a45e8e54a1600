/* What the accounts handler files share (accounts.c: login, refresh-token families, sessions,
 * MFA; accounts_lockout.c: the failed-login guard; accounts_password.c: password changes and
 * re-authentication; accounts_invitations.c: issuing, signing up with and accepting
 * invitations). OAuth builds on these (its tokens are a login's sessions bound to a client):
 * the OAuth files include this header, never the other way round; what they share among
 * themselves and declare for others is in accounts_oauth.h. Not a cross-API header. */
#ifndef HANDLERS_ACCOUNTS_H
#define HANDLERS_ACCOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/storage.h"
#include "generated/accounts_api.h"
#include "handlers/accounts_directory.h"
#include "runtime/id.h"
#include "runtime/password.h"
#include "runtime/ratelimit.h"
#include "runtime/req.h"

#define EMAIL_MAX 256

struct login_user {
    char id[ID_MAX];
    char password_hash[PASSWORD_HASH_MAX];
    bool active;
    bool mfa_enabled;
    char mfa_secret[256]; /* sealed */
    int64_t mfa_last_step;
};

/* ASCII lower case (emails are compared normalized). */
void acc_lower_ascii(const char *in, char *out, size_t n);
void acc_copy_column(struct db_stmt *st, int col, char *out, size_t n);

/* The user with this normalized email. 0 with *found, -1 on failure. */
int acc_find_user(const char *email_norm, struct login_user *u, bool *found);
/* The membership to use: workspace `wanted`, or the user's oldest. 0 with *found, -1. */
int acc_find_membership(const char *user_id, const char *wanted, char *wid, size_t wid_len,
                        char *role, size_t role_len, int64_t *lifetime, bool *found);
/* The role of an active user in wid and the workspace's token lifetime. 0 with *found, -1. */
int acc_find_standing(const char *user_id, const char *wid, char *role, size_t role_len,
                      int64_t *lifetime, bool *found);
/* Whether user_id may not open a session of workspace wid because the workspace requires MFA
 * (its treasury.require_mfa) and the user has not enabled it: 1 refused, 0 not, -1 failure. */
int acc_mfa_refused(const char *wid, const char *user_id);
/* acc_mfa_refused, answered as a login is (403 workspace_requires_mfa): 1 refused (answered),
 * 0 not, -1 failure. For the login, and a signup or an acceptance with an existing account. */
int acc_refuse_without_mfa(struct req *r, const char *wid, const char *user_id);
/* The scopes role grants in wid, space-separated. 0 / -1. */
int acc_role_scopes(const char *wid, const char *role, char *out, size_t n);
/* A TOTP code of the account, accepted once (1), wrong or replayed (0), failure (-1):
 * its time step must be newer than the last one accepted (last_step, read before, and again
 * atomically in the mfa_steps table, which records it). */
int acc_use_totp(const char *user_id, const char *sealed, int64_t last_step, const char *code);
/* One unused recovery code: 1 used now, 0 wrong or used, -1 failure. */
int acc_use_recovery_code(const char *user_id, const char *code);

/* What a login proves an account with; NULL for what was not sent. */
struct acc_credentials {
    const char *password;
    const char *device_token;
    const char *otp;
    const char *recovery_code;
};
struct acc_guard;
/* The key on which an account's sign-in attempts take turns once their failure is counted
 * (storage_serialize_writes), in r's arena. */
const char *acc_turn_key(struct req *r, const char *email_norm);
/* Proves the account of email_norm as a login does: the password, then the second factor
 * when MFA is on, under the failed-login guard (accounts_lockout.c), failures counted and
 * answered exactly as a login's (401 invalid_credentials / mfa_required / invalid_otp, 422
 * mfa_not_enrolled, 429). Commits the transaction and begins another around the password
 * hash: the caller reads again whatever it read before. 1 proven (*u the account, *g its
 * guard, the client's failures forgotten), 0 answered, -1 failure. */
int acc_prove_account(struct req *r, const char *email_norm, const struct acc_credentials *c,
                      struct login_user *u, struct acc_guard *g);

/* (accounts_lockout.c) The failed-login guard of one attempt: the back-off of its client
 * (a known device, or the account's unknown clients) and the address quota it spent. */
struct acc_guard {
    char key[96];           /* back-off key: "dev:<device id>" or "acct:<email digest>" */
    char device_id[ID_MAX]; /* the known device the attempt came from; "" for none */
    char address_key[RATELIMIT_KEY_MAX + 1]; /* the address failure quota spent; "" none */
    bool in_backoff;        /* held back: heard only with a second factor */
    int64_t retry_after;    /* seconds, for the back-off's 429 */
    int64_t prev_failures, prev_last;
};
/* Before the password is hashed, in the write transaction: finds the device of device_token
 * (a known one of user_id), refuses a held-back attempt without a second factor and an
 * address over its failure quota (429 answered: 0), else counts the attempt as a failure
 * (the caller commits before hashing) and answers 1. -1 on failure. */
int acc_guard_begin(struct req *r, const char *email_norm, const char *user_id,
                    const char *device_token, bool second_factor, struct acc_guard *g);
/* The back-off's 429 (the same whatever went wrong while held back). */
void acc_guard_refuse(struct req *r, const struct acc_guard *g);
/* The attempt proved the password but is not a login (no second factor sent): not counted
 * after all. Sets keep_writes. 0 / -1. */
int acc_guard_undo(struct req *r, const struct acc_guard *g);
/* A login: the client's failures are forgotten. Sets keep_writes. 0 / -1. */
int acc_guard_success(struct req *r, const struct acc_guard *g);
/* The second factor of u (otp, else recovery_code) under the per-client quota of wrong codes:
 * 1 right, 0 wrong or over the quota (*retry_after > 0), -1 failure. */
int acc_guard_second_factor(struct req *r, const struct acc_guard *g, const struct login_user *u,
                            const char *otp, const char *recovery_code, int64_t *retry_after);
void acc_guard_codes_refused(struct req *r, int64_t retry_after);
/* The device token to hand back after a login of user_id: the presented one renewed when it
 * was a known device, else a new device's. In r->arena; NULL on failure. */
const char *acc_device_issue(struct req *r, const char *user_id, const struct acc_guard *g,
                             const char *presented);
int64_t acc_device_lifetime_s(void);
/* Deletes (a batch of at most 500) devices expired before before_ms, back-off counts whose
 * last failure is before before_ms. How many rows, or -1. */
int acc_device_purge_expired(int64_t before_ms);
/* Runs the purge statement sql (a DELETE of at most a batch of rows, its one parameter the
 * cutoff before_ms) for the file that owns its table. How many rows went, or -1. */
int acc_purge(const char *sql, int64_t before_ms);
int acc_backoff_purge_quiet(int64_t before_ms);

/* (accounts_password.c) true, with 409 `not_a_user` answered, when the caller is a service
 * account. */
bool acc_is_service_account(struct req *r);
/* Re-authenticates the caller (a user) by their current password, under a quota of wrong
 * passwords per user; with new_password, also hashes it into new_hash. Hashes without the
 * write lock (the transaction is ended and begun again: call it before reading what the
 * operation changes; the operation is x-own-transaction). 1 right, 0 answered (403
 * reauthentication_failed, 409 not_a_user, 429), -1 failure. */
int acc_reauthenticate(struct req *r, const char *password, const char *new_password,
                       char *new_hash, size_t new_hash_len);


/* Space-separated scope lists. */
bool acc_has_scope(const char *list, const char *name, size_t n);
void acc_scope_intersection(const char *want, const char *allowed, char *out, size_t n);
bool acc_scope_beyond(const char *want, const char *allowed, char *out, size_t n);

/* A new session (a refresh-token family) of user_id in wid with scope, and its first token
 * pair; client_id and grant_id bind it to an OAuth application (NULL for a login). Its id into
 * *sid_out when not NULL. The answer lives in r->arena; NULL on failure. */
struct login_response *acc_open_session(struct req *r, const char *user_id, const char *wid,
                                       const char *scope, int64_t lifetime,
                                       const char *client_id, const char *grant_id,
                                       const char **sid_out);
/* Revokes session sid of user_id in wid (reason recorded); its tokens are refused once the
 * transaction commits. 1 revoked now, 0 not an active session of theirs, -1 failure. */
int acc_revoke_session(struct req *r, const char *sid, const char *user_id, const char *wid,
                       const char *reason);
/* Revokes every active session of an OAuth grant (column_name "grant_id") or client
 * ("client_id") id, reason recorded, and refuses their tokens once the transaction commits.
 * 0 / -1. */
int acc_revoke_sessions_of(struct req *r, const char *column_name, const char *id,
                           const char *reason);
/* Revokes the active sessions of user_id in every workspace but session keep (NULL: all), or
 * of user_id in workspace wid, reason recorded, refusing their tokens once the transaction
 * commits. How many, or -1. */
int acc_revoke_user_sessions(struct req *r, const char *user_id, const char *keep,
                             const char *reason);
int acc_revoke_member_sessions(struct req *r, const char *user_id, const char *wid,
                               const char *reason);
/* After the commit, refuses the tokens of session (or token) id at once (more than one per
 * request is fine). */
void acc_publish_revocation(struct req *r, const char *id);
/* Rotates refresh_token (RFC 6749 §6, RFC 9700 §4.14.2) for client_id (NULL: a login's
 * token), narrowed to want_scope when given. *out is the new pair, or NULL when a problem was
 * answered (invalid_grant, invalid_scope). 0 / -1. */
int acc_refresh(struct req *r, const char *refresh_token, const char *want_scope,
                const char *client_id, struct login_response **out);

/* The session a refresh token (current or already used) belongs to, for its revocation
 * (RFC 7009): its id, user, workspace and client ("" for a login's), and whether it is still
 * active (neither revoked nor expired). */
struct acc_token_session {
    char session_id[ID_MAX], user_id[ID_MAX], workspace_id[ID_MAX], client_id[ID_MAX];
    bool active;
};
/* 0 with *found (false: no such refresh token), -1 on failure. */
int acc_refresh_token_session(const char *refresh_token, struct acc_token_session *s,
                              bool *found);


#endif
