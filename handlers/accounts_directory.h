/* The accounts API's directory: every write of its workspaces, users and members tables, in
 * one file (accounts_directory.c) for the handlers that change them (accounts.c: MFA;
 * accounts_invitations.c: signup and joining; accounts_password.c: passwords; workspace.c:
 * settings, profile and removing a member) and for the operator commands (admin_cli.c:
 * bootstrap), which link it without the rest of the handlers. It needs the runtime only (storage), and the
 * workspaces' generated row codec and encoder (generated/rows_workspace.c,
 * schemas_workspace_json.c: runtime-only too). Reads stay where they are used. Each function
 * logs a failed statement; 0 / -1 unless it says. */
#ifndef HANDLERS_ACCOUNTS_DIRECTORY_H
#define HANDLERS_ACCOUNTS_DIRECTORY_H

#include <stdint.h>

/* ---- workspaces ---- */

/* A new workspace id named name, created (and updated) at now. */
int acc_workspace_insert(const char *id, const char *name, const char *now);
/* The workspace's own request rate limit per minute (<= 0: back to the server's default).
 * 1 changed, 0 no such workspace, -1 failure. */
int acc_workspace_set_rate_limit(const char *id, long long per_minute, const char *now);
/* The caller's workspace w (loaded through rows_workspace, generated/rows_workspace.h) with
 * its settings changed, saved as the next version: only the settings, the version and
 * updated_at (never the operator's rate limit). resource_save_state's answers: 1 saved, 0
 * answered 412 (another writer came first), -1 failure. */
struct req;
struct workspace_row;
int acc_workspace_save_settings(struct req *r, struct workspace_row *w);
/* The caller's workspace w with its profile changed (PATCH /v1/workspace), saved whole as the
 * next version, except the operator's rate limit (maintained). resource_save's answers: 1
 * saved, 0 answered 412, DB_ERR_UNIQUE another workspace has the slug, -1 failure. */
int acc_workspace_save_profile(struct req *r, struct workspace_row *w);

/* ---- users ---- */

/* A new active user; name may be NULL. */
int acc_user_insert(const char *id, const char *email, const char *email_norm,
                    const char *password_hash, const char *name, const char *now);
int acc_user_set_password(const char *id, const char *password_hash, const char *now);
/* The MFA status ("disabled", "pending", "enabled") and sealed secret (NULL: none). */
int acc_user_set_mfa(const char *id, const char *status, const char *sealed);
/* The pending secret confirmed: MFA enabled with it. */
int acc_user_enable_mfa(const char *id);

/* ---- members ---- */

/* user_id joins workspace_id with role at now; invited_by NULL when nobody invited them. */
int acc_member_insert(const char *workspace_id, const char *user_id, const char *role,
                      const char *now, const char *invited_by);
/* user_id leaves workspace_id. */
int acc_member_delete(const char *workspace_id, const char *user_id);

#endif
