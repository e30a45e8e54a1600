/* The accounts API's directory writes (accounts_directory.h): the one file that changes the
 * workspaces, users and members tables. */
#include "handlers/accounts_directory.h"

#include "generated/rows_workspace.h"
#include "runtime/log.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

static int db_failed(const char *what)
{
    log_error("accounts: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* Runs sql with the texts v[0..n) (NULL binds SQL NULL; a failure is logged with it). */
static int exec(const char *sql, const char *const *v, int n)
{
    return storage_exec_texts(sql, v, n);
}

/* ---- workspaces ---- */

int acc_workspace_insert(const char *id, const char *name, const char *now)
{
    const char *row[] = {id, name, now, now};
    return exec("INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
                row, 4);
}

int acc_workspace_set_rate_limit(const char *id, long long per_minute, const char *now)
{
    struct db_stmt *st = storage_prepare(
        "UPDATE workspaces SET rate_limit_per_minute = ?, updated_at = ? WHERE id = ?");
    if (!st)
        return -1;
    if (per_minute > 0)
        db_bind_int64(st, 1, per_minute);
    else
        db_bind_null(st, 1);
    db_bind_text(st, 2, now);
    db_bind_text(st, 3, id);
    int rc = db_step(st);
    int changed = storage_changes();
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("setting the rate limit");
    return changed == 1;
}

int acc_workspace_save_settings(struct req *r, struct workspace_row *w)
{
    return resource_save_state(r, &rows_workspace, w);
}

int acc_workspace_save_profile(struct req *r, struct workspace_row *w)
{
    return resource_save(r, &rows_workspace, w);
}

/* ---- users ---- */

int acc_user_insert(const char *id, const char *email, const char *email_norm,
                    const char *password_hash, const char *name, const char *now)
{
    const char *row[] = {id, email, email_norm, password_hash, name, now, now};
    return exec("INSERT INTO users (id, email, email_norm, password_hash, status, name, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, 'active', ?, ?, ?)",
                row, 7);
}

int acc_user_set_password(const char *id, const char *password_hash, const char *now)
{
    const char *v[] = {password_hash, now, id};
    return exec("UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?", v, 3);
}

int acc_user_set_mfa(const char *id, const char *status, const char *sealed)
{
    const char *v[] = {status, sealed, id};
    return exec("UPDATE users SET mfa_status = ?, mfa_secret = ? WHERE id = ?", v,
                3);
}

int acc_user_enable_mfa(const char *id)
{
    const char *v[] = {id};
    return exec("UPDATE users SET mfa_status = 'enabled' WHERE id = ?", v, 1);
}

/* ---- members ---- */

int acc_member_insert(const char *workspace_id, const char *user_id, const char *role,
                      const char *now, const char *invited_by)
{
    const char *row[] = {workspace_id, user_id, role, now, invited_by};
    return exec("INSERT INTO members (workspace_id, user_id, role, created_at, invited_by) "
                "VALUES (?, ?, ?, ?, ?)",
                row, 5);
}

int acc_member_delete(const char *workspace_id, const char *user_id)
{
    const char *v[] = {user_id, workspace_id};
    return exec("DELETE FROM members WHERE user_id = ? AND workspace_id = ?", v, 2);
}
