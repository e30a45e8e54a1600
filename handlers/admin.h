/* What the other APIs may ask of the admin API: the scopes a role grants, and revoking a
 * service-account token. Declared here so handlers/accounts.c never reaches into the admin
 * tables itself. */
#ifndef HANDLERS_ADMIN_H
#define HANDLERS_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The scopes role grants in workspace_id, as a mask with workspace:admin expanded to every
 * scope: a built-in role (spec x-roles) or one of the workspace's own, read in the caller's
 * transaction. 1 found, 0 no such role, -1 database failure. */
int admin_role_mask(const char *workspace_id, const char *role, uint64_t *mask);

/* The most a member of role may approve in currency: *limited false when the role has no
 * limits (built-in roles, custom roles without approval_limits); with limits, a currency not
 * listed gives *limit 0. 0 / -1. */
int admin_role_approval_limit(const char *workspace_id, const char *role, const char *currency,
                              int64_t *limit, bool *limited);

/* The role a principal (a member user, or a service account) holds in the workspace, into
 * role (n bytes). 1 found, 0 none, -1 failure. */
int admin_principal_role(const char *workspace_id, const char *principal_id, char *role,
                         size_t n);

/* Who created a service account of the workspace (a user id, or the service account that
 * did), into creator (n bytes): maker-checker treats a service account as acting for it.
 * 1 found, 0 no such service account, -1 failure. */
int admin_service_account_creator(const char *workspace_id, const char *service_account_id,
                                  char *creator, size_t n);

/* Who minted a service-account token (token_id, of service_account_id in the workspace): the
 * person holding its text, whom maker-checker counts as acting through it. Into minter (n
 * bytes). 1 found, 0 no such token, -1 failure. */
int admin_service_token_minter(const char *workspace_id, const char *service_account_id,
                               const char *token_id, char *minter, size_t n);

struct req;
/* Disables every active service account of r's workspace that user_id created, revoking all
 * their tokens (refused from the request after the commit), each with its audit record
 * (service_account.disabled, detail). How many, or -1. */
int admin_disable_service_accounts_of(struct req *r, const char *user_id, const char *detail);
/* Revokes a service-account token of the workspace (logout with a service token): refused from
 * the next request once the caller's transaction commits. 1 revoked, 0 no such active token,
 * -1 failure. */
int admin_revoke_service_token(struct req *r, const char *workspace_id,
                               const char *service_account_id, const char *token_id);
/* Revokes, at now, every active service-account token user_id minted in r's workspace
 * (refused from the request after the commit, for good). How many, or -1. */
int admin_revoke_tokens_created_by(struct req *r, const char *user_id, const char *now);

#endif
