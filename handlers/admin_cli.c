/* Operator commands on the database without the HTTP API: the first-start bootstrap and
 * `treasury-server admin create-workspace | list-workspaces | create-user | invite-user |
 * set-rate-limit`. Each command runs in one transaction; a generated password is printed
 * once, only after the commit. An account that already exists is never attached to a
 * workspace by the operator: it is invited (the token e-mailed to it) and joins only by
 * accepting after signing in. What a command creates is audited in the workspace it is for,
 * by the actor ADMIN_OPERATOR_ACTOR: workspace.created, user.created, member.created (as the
 * API's member.created and member.removed: the member's user id) and user.invited. */
#include "handlers/admin_cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/accounts_directory.h"
#include "runtime/audit.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/jsonw.h"
#include "runtime/log.h"
#include "runtime/password.h"
#include "runtime/storage.h"

#define EXIT_USAGE 2
#define NAME_MAX_CHARS 140
#define EMAIL_MAX 256
#define GENERATED_PASSWORD_LEN 20
#define DEFAULT_WORKSPACE_NAME "Default workspace"
#define DEFAULT_ADMIN_EMAIL "admin@example.com"
#define RATE_LIMIT_MAX 1000000000 /* as the column's CHECK and --rate-limit */

/* What a command created, reported after its transaction committed. */
struct outcome {
    char request_id[ID_MAX]; /* of its audit records, one per run of the command's body */
    char workspace_id[ID_MAX];
    char user_id[ID_MAX];
    char email[EMAIL_MAX];
    bool new_user;
    bool invited;                            /* an existing account, invited: */
    char invitation_id[ID_MAX];              /* the invitation e-mailed to it */
    bool generated;                          /* password below must be shown, once */
    char password[PASSWORD_MAX_LEN * 4 + 1]; /* UTF-8: up to 4 bytes per character */
};

static void outcome_release(struct outcome *o)
{
    explicit_bzero(o->password, sizeof o->password);
}

/* Code points in s, or -1 when s is not valid UTF-8 (overlong forms, surrogates and values
 * beyond U+10FFFF are invalid) or, unless controls_ok, contains a control character. */
static long utf8_chars(const char *s, bool controls_ok)
{
    const unsigned char *p = (const unsigned char *)s;
    long n = 0;
    while (*p) {
        uint32_t cp;
        int len;
        if (*p < 0x80) {
            cp = *p;
            len = 1;
        } else if ((*p & 0xe0) == 0xc0) {
            cp = *p & 0x1f;
            len = 2;
        } else if ((*p & 0xf0) == 0xe0) {
            cp = *p & 0x0f;
            len = 3;
        } else if ((*p & 0xf8) == 0xf0) {
            cp = *p & 0x07;
            len = 4;
        } else {
            return -1;
        }
        for (int i = 1; i < len; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return -1;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return -1;
        if (!controls_ok && (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)))
            return -1;
        p += len;
        n++;
    }
    return n;
}

static bool is_blank(const char *s)
{
    for (; *s; s++) {
        if (*s != ' ')
            return false;
    }
    return true;
}

static bool valid_name(const char *s)
{
    long n = utf8_chars(s, false);
    return n >= 1 && n <= NAME_MAX_CHARS && !is_blank(s);
}

/* Emails are unique case-insensitively: the lower-cased form is the key. */
static int normalize_email(const char *email, char *out, size_t n)
{
    size_t len = strlen(email);
    if (!format_is_email(email) || len >= n)
        return -1;
    for (size_t i = 0; i <= len; i++)
        out[i] = (email[i] >= 'A' && email[i] <= 'Z') ? (char)(email[i] - 'A' + 'a') : email[i];
    return 0;
}

static int db_failed(const char *what)
{
    log_error("admin: %s failed: %s", what, storage_errmsg());
    return -1;
}

/* Runs a statement that returns no rows. */
/* Whether a query returns a row; its first column (text) into out when out is not NULL. */
static int query_row(const char *what, const char *sql, const char *const *v, int n, bool *found,
                     char *out, size_t outlen)
{
    int rc = storage_query_text(sql, v, n, out, outlen);
    if (rc < 0)
        return db_failed(what);
    *found = rc == 1;
    return 0;
}

void admin_operator_req(struct req *r, const char *workspace_id, const char *request_id)
{
    memset(r, 0, sizeof *r);
    arena_init(&r->arena);
    r->principal.workspace_id = workspace_id;
    r->principal.user_id = ADMIN_OPERATOR_ACTOR;
    r->request_id = request_id ? request_id : id_new(&r->arena, "req");
}

/* The audit record of a change the operator made in workspace_id, in the command's
 * transaction (o->request_id names the command's run). 0 / -1 with err. */
static int operator_audit(const char *workspace_id, const struct outcome *o, const char *action,
                          const char *resource_type, const char *resource_id, const char *after,
                          const char *detail, char *err, size_t errlen)
{
    struct req r;
    admin_operator_req(&r, workspace_id, o->request_id[0] ? o->request_id : NULL);
    int rc = audit_record(&r, action, resource_type, resource_id, NULL, after, detail);
    arena_release(&r.arena);
    if (rc != 0)
        snprintf(err, errlen, "database error writing the audit record (logged above)");
    return rc;
}

static admin_invite_fn *inviter;
static char inviter_base_url[256];

void admin_set_inviter(admin_invite_fn *invite, const char *base_url)
{
    inviter = invite;
    snprintf(inviter_base_url, sizeof inviter_base_url, "%s", base_url ? base_url : "");
}

/* Whether email already has an account (its id into o->user_id). 0 / -1 with err. */
static int existing_account(const char *email, struct outcome *o, bool *found, char *err,
                            size_t errlen)
{
    char norm[EMAIL_MAX];
    if (normalize_email(email, norm, sizeof norm) != 0) {
        snprintf(err, errlen, "\"%s\" is not a valid email address", email);
        return -1;
    }
    snprintf(o->email, sizeof o->email, "%s", email);
    const char *key[] = {norm};
    if (query_row("finding the user", "SELECT id FROM users WHERE email_norm = ?", key, 1, found,
                  o->user_id, sizeof o->user_id) != 0) {
        snprintf(err, errlen, "database error (logged above)");
        return -1;
    }
    return 0;
}

/* Invites the existing account o->email to workspace_id with role (never attaches it). */
static int invite_existing(const char *workspace_id, const char *role, struct outcome *o,
                           char *err, size_t errlen)
{
    if (!inviter) {
        snprintf(err, errlen, "%s already has an account; it cannot be added by the operator",
                 o->email);
        return -1;
    }
    if (inviter(workspace_id, o->email, role, inviter_base_url,
                o->request_id[0] ? o->request_id : NULL, o->invitation_id,
                sizeof o->invitation_id, err, errlen) != 0)
        return -1;
    o->invited = true;
    return 0;
}

/* The password for a new user: the environment variable's value, or a generated one the
 * caller prints once. */
static int choose_password(const char *env, struct outcome *o, char *err, size_t errlen)
{
    const char *v = getenv(env);
    if (v && *v) {
        long n = utf8_chars(v, true);
        if (n < PASSWORD_MIN_LEN || n > PASSWORD_MAX_LEN || strlen(v) >= sizeof o->password) {
            snprintf(err, errlen, "%s must be valid UTF-8 of %d to %d characters", env,
                     PASSWORD_MIN_LEN, PASSWORD_MAX_LEN);
            return -1;
        }
        snprintf(o->password, sizeof o->password, "%s", v);
        o->generated = false;
        return 0;
    }
    if (password_generate(o->password, sizeof o->password, GENERATED_PASSWORD_LEN) != 0) {
        snprintf(err, errlen, "cannot generate a password");
        return -1;
    }
    o->generated = true;
    return 0;
}

/* The user with this email, created (status active) when there is none. */
static int find_or_create_user(const char *email, const char *pw_env, struct outcome *o, char *err,
                               size_t errlen)
{
    char norm[EMAIL_MAX], now[40], hash[PASSWORD_HASH_MAX];
    bool found = false;
    int ret = -1;
    if (normalize_email(email, norm, sizeof norm) != 0) {
        snprintf(err, errlen, "\"%s\" is not a valid email address", email);
        return -1;
    }
    snprintf(o->email, sizeof o->email, "%s", email);
    const char *key[] = {norm};
    if (query_row("finding the user", "SELECT id FROM users WHERE email_norm = ?", key, 1, &found,
                  o->user_id, sizeof o->user_id) != 0)
        goto db_error;
    if (found) {
        o->new_user = false;
        return 0;
    }
    if (choose_password(pw_env, o, err, errlen) != 0)
        return -1;
    if (password_hash(o->password, hash, sizeof hash) != 0) {
        snprintf(err, errlen, "cannot hash the password");
        goto out;
    }
    if (id_new_buf(o->user_id, sizeof o->user_id, "usr") != 0) {
        snprintf(err, errlen, "cannot generate an id");
        goto out;
    }
    format_now_rfc3339(now, sizeof now);
    if (acc_user_insert(o->user_id, email, norm, hash, NULL, now) != 0)
        goto db_error;
    o->new_user = true;
    ret = 0;
    goto out;
db_error:
    snprintf(err, errlen, "database error (logged above)");
out:
    explicit_bzero(hash, sizeof hash);
    return ret;
}

/* Adds the user as a member; an existing membership is an error, not a role change. Audited
 * in the workspace: the account, when the command created it (its password from pw_env or
 * generated), and the membership, both by the operator's command cmd. */
static int add_member(const char *workspace_id, const char *role, const char *cmd,
                      const char *pw_env, struct outcome *o, char *err, size_t errlen)
{
    char now[40], existing_role[16], detail[EMAIL_MAX + 160];
    bool member = false;
    const char *key[] = {workspace_id, o->user_id};
    if (query_row("finding the membership",
                  "SELECT role FROM members WHERE workspace_id = ? AND user_id = ?", key, 2,
                  &member, existing_role, sizeof existing_role) != 0)
        goto db_error;
    if (member) {
        snprintf(err, errlen, "%s is already a member of %s (role %s)", o->email, workspace_id,
                 existing_role);
        return -1;
    }
    format_now_rfc3339(now, sizeof now);
    if (acc_member_insert(workspace_id, o->user_id, role, now, NULL) != 0)
        goto db_error;
    if (o->new_user) {
        snprintf(detail, sizeof detail, "%s, password %s%s, by the operator (%s)", o->email,
                 o->generated ? "generated and shown once to the operator" : "from ",
                 o->generated ? "" : pw_env, cmd);
        if (operator_audit(workspace_id, o, "user.created", "user", o->user_id, "active",
                           detail, err, errlen) != 0)
            return -1;
    }
    snprintf(detail, sizeof detail, "role %s, added by the operator (%s)", role, cmd);
    return operator_audit(workspace_id, o, "member.created", "member", o->user_id, "active",
                          detail, err, errlen);
db_error:
    snprintf(err, errlen, "database error (logged above)");
    return -1;
}

/* cmd: the command (create-workspace, bootstrap) its audit records name. */
static int create_workspace(const char *name, const char *owner_email, const char *pw_env,
                            const char *cmd, struct outcome *o, char *err, size_t errlen)
{
    char now[40], detail[NAME_MAX_CHARS * 4 + 80];
    if (id_new_buf(o->workspace_id, sizeof o->workspace_id, "wsp") != 0 ||
        id_new_buf(o->request_id, sizeof o->request_id, "req") != 0) {
        snprintf(err, errlen, "cannot generate an id");
        return -1;
    }
    format_now_rfc3339(now, sizeof now);
    if (acc_workspace_insert(o->workspace_id, name, now) != 0) {
        snprintf(err, errlen, "database error (logged above)");
        return -1;
    }
    snprintf(detail, sizeof detail, "\"%s\", by the operator (%s)", name, cmd);
    if (operator_audit(o->workspace_id, o, "workspace.created", "workspace", o->workspace_id,
                       NULL, detail, err, errlen) != 0)
        return -1;
    bool exists = false;
    if (existing_account(owner_email, o, &exists, err, errlen) != 0)
        return -1;
    if (exists) /* someone else's account is never made an owner behind their back */
        return invite_existing(o->workspace_id, "owner", o, err, errlen);
    if (find_or_create_user(owner_email, pw_env, o, err, errlen) != 0)
        return -1;
    return add_member(o->workspace_id, "owner", cmd, pw_env, o, err, errlen);
}

static void print_password(FILE *out, const struct outcome *o)
{
    fprintf(out,
            "\n"
            "======================================================================\n"
            "generated password for %s: %s\n"
            "It is shown only this once and cannot be recovered: store it now.\n"
            "======================================================================\n\n",
            o->email, o->password);
}

static void print_user(FILE *out, const struct outcome *o, const char *role, const char *pw_env)
{
    if (o->invited)
        fprintf(out,
                "%s: %s already has an account (%s): invited, not added. Invitation %s is "
                "e-mailed to them by the server; they join by accepting it after signing in.\n",
                role, o->email, o->user_id, o->invitation_id);
    else if (!o->new_user)
        fprintf(out, "%s: existing user %s (%s) added; password unchanged\n", role, o->email,
                o->user_id);
    else if (!o->generated)
        fprintf(out, "%s: new user %s (%s), password from %s\n", role, o->email, o->user_id,
                pw_env);
    else
        fprintf(out, "%s: new user %s (%s)\n", role, o->email, o->user_id);
    if (o->new_user && o->generated)
        print_password(out, o);
    fflush(out);
}

/* How often a command's transaction is run again when it failed on a conflict with a
 * concurrent one (PostgreSQL: several instances starting at once all bootstrap). */
#define CONFLICT_RUNS 8

static int bootstrap_once(const char *name, const char *email, FILE *out, char *err,
                          size_t errlen);

int admin_bootstrap(FILE *out, char *err, size_t errlen)
{
    const char *name = getenv("TREASURY_WORKSPACE_NAME");
    const char *email = getenv("TREASURY_ADMIN_EMAIL");
    if (!name || !*name)
        name = DEFAULT_WORKSPACE_NAME;
    if (!email || !*email)
        email = DEFAULT_ADMIN_EMAIL;
    if (!valid_name(name)) {
        snprintf(err, errlen,
                 "TREASURY_WORKSPACE_NAME must be 1 to %d characters without control characters",
                 NAME_MAX_CHARS);
        return -1;
    }
    if (!format_is_email(email) || strlen(email) >= EMAIL_MAX) {
        snprintf(err, errlen, "TREASURY_ADMIN_EMAIL \"%s\" is not a valid email address", email);
        return -1;
    }
    for (int run = 1;; run++) {
        int rc = bootstrap_once(name, email, out, err, errlen);
        if (rc == 0 || run == CONFLICT_RUNS || !storage_should_retry())
            return rc;
    }
}

/* One try: the first workspace, unless one exists. */
static int bootstrap_once(const char *name, const char *email, FILE *out, char *err,
                          size_t errlen)
{
    struct outcome o = {0};
    char why[256] = "";
    bool exists = false;
    int ret = -1;
    if (storage_begin(true) != 0) {
        snprintf(err, errlen, "bootstrap: cannot start a transaction");
        return -1;
    }
    if (query_row("looking for workspaces", "SELECT id FROM workspaces LIMIT 1", NULL, 0, &exists,
                  NULL, 0) != 0) {
        snprintf(err, errlen, "bootstrap: database error (logged above)");
        goto out;
    }
    if (exists) {
        ret = 0;
        goto out;
    }
    if (create_workspace(name, email, "TREASURY_ADMIN_PASSWORD", "bootstrap", &o, why,
                         sizeof why) != 0) {
        snprintf(err, errlen, "bootstrap: %s", why);
        goto out;
    }
    if (storage_commit() != 0) {
        snprintf(err, errlen, "bootstrap: commit failed (logged above)");
        goto out;
    }
    fprintf(out, "bootstrap: created workspace %s \"%s\"\n", o.workspace_id, name);
    print_user(out, &o, "owner", "TREASURY_ADMIN_PASSWORD");
    ret = 0;
out:
    storage_rollback(); /* no-op after a commit */
    outcome_release(&o);
    return ret;
}

/* --- command line --- */

struct option {
    const char *name; /* without the leading "--" */
    bool is_flag;     /* takes no value */
    const char *value;
    bool seen;
};

struct command {
    const char *name;
    const char *usage;
    int (*run)(struct option *opts, FILE *out, FILE *errout);
    struct option opts[4];
    bool creates; /* may create the data directory and database (a first workspace) */
};

static int fail(FILE *errout, const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(FILE *errout, const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(errout, "treasury-server admin %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(errout, fmt, ap);
    va_end(ap);
    fputc('\n', errout);
    return code;
}

/* Runs one write transaction around a command body, again from the start while it fails on a
 * conflict with a concurrent one (the body fills its outcome afresh each run); prints the
 * outcome only after commit. */
static int in_write_tx(const char *cmd, FILE *errout,
                       int (*body)(void *arg, char *err, size_t errlen), void *arg)
{
    char err[1024] = "";
    for (int run = 1;; run++) {
        if (storage_begin(true) != 0)
            return fail(errout, cmd, EXIT_FAILURE, "cannot start a transaction (logged above)");
        err[0] = '\0';
        if (body(arg, err, sizeof err) != 0) {
            storage_rollback();
            if (run < CONFLICT_RUNS && storage_should_retry())
                continue;
            return fail(errout, cmd, EXIT_FAILURE, "%s", err);
        }
        if (storage_commit() == 0)
            return EXIT_SUCCESS;
        if (run == CONFLICT_RUNS || !storage_should_retry())
            return fail(errout, cmd, EXIT_FAILURE, "commit failed (logged above)");
    }
}

struct create_workspace_args {
    const char *name;
    const char *email;
    struct outcome o;
};

static int create_workspace_body(void *arg, char *err, size_t errlen)
{
    struct create_workspace_args *a = arg;
    outcome_release(&a->o);
    a->o = (struct outcome){0}; /* a run after a conflict starts afresh */
    return create_workspace(a->name, a->email, "TREASURY_ADMIN_PASSWORD", "create-workspace",
                            &a->o, err, errlen);
}

static int cmd_create_workspace(struct option *opts, FILE *out, FILE *errout)
{
    struct create_workspace_args a = {.name = opts[0].value, .email = opts[1].value};
    if (!valid_name(a.name))
        return fail(errout, "create-workspace", EXIT_USAGE,
                    "--name must be 1 to %d characters without control characters", NAME_MAX_CHARS);
    if (!format_is_email(a.email) || strlen(a.email) >= EMAIL_MAX)
        return fail(errout, "create-workspace", EXIT_USAGE,
                    "--owner-email \"%s\" is not a valid email address", a.email);
    int rc = in_write_tx("create-workspace", errout, create_workspace_body, &a);
    if (rc == EXIT_SUCCESS) {
        fprintf(out, "created workspace %s \"%s\"\n", a.o.workspace_id, a.name);
        print_user(out, &a.o, "owner", "TREASURY_ADMIN_PASSWORD");
    }
    outcome_release(&a.o);
    return rc;
}

struct create_user_args {
    const char *workspace_id;
    const char *email;
    const char *role;
    struct outcome o;
};

/* The two commands' common start: the workspace must exist; *exists tells whether the email
 * already has an account (its id then in a->o.user_id). 0 / -1 with err. */
static int find_workspace_and_account(struct create_user_args *a, bool *exists, char *err,
                                      size_t errlen)
{
    bool found = false;
    const char *key[] = {a->workspace_id};
    if (query_row("finding the workspace", "SELECT id FROM workspaces WHERE id = ?", key, 1,
                  &found, NULL, 0) != 0) {
        snprintf(err, errlen, "database error (logged above)");
        return -1;
    }
    if (!found) {
        snprintf(err, errlen, "no workspace %s (see list-workspaces)", a->workspace_id);
        return -1;
    }
    snprintf(a->o.workspace_id, sizeof a->o.workspace_id, "%s", a->workspace_id);
    return existing_account(a->email, &a->o, exists, err, errlen);
}

static int create_user_body(void *arg, char *err, size_t errlen)
{
    struct create_user_args *a = arg;
    bool exists = false;
    outcome_release(&a->o);
    a->o = (struct outcome){0}; /* a run after a conflict starts afresh */
    if (find_workspace_and_account(a, &exists, err, errlen) != 0)
        return -1;
    if (exists) {
        char role[48];
        bool member = false;
        const char *mkey[] = {a->workspace_id, a->o.user_id};
        if (query_row("finding the membership",
                      "SELECT role FROM members WHERE workspace_id = ? AND user_id = ?", mkey, 2,
                      &member, role, sizeof role) != 0) {
            snprintf(err, errlen, "database error (logged above)");
            return -1;
        }
        if (member)
            snprintf(err, errlen, "%s is already a member of %s (role %s)", a->email,
                     a->workspace_id, role);
        else
            snprintf(err, errlen,
                     "%s already has an account; the operator never adds an existing account "
                     "to a workspace. Invite them instead: treasury-server admin invite-user "
                     "--workspace %s --email %s --role %s (or POST /v1/admin/users/invite); "
                     "they join by accepting after signing in",
                     a->email, a->workspace_id, a->email, a->role);
        return -1;
    }
    if (id_new_buf(a->o.request_id, sizeof a->o.request_id, "req") != 0) {
        snprintf(err, errlen, "cannot generate an id");
        return -1;
    }
    if (find_or_create_user(a->email, "TREASURY_USER_PASSWORD", &a->o, err, errlen) != 0)
        return -1;
    return add_member(a->workspace_id, a->role, "create-user", "TREASURY_USER_PASSWORD", &a->o,
                      err, errlen);
}

static admin_builtin_role_fn *builtin_role;

void admin_init(admin_builtin_role_fn *fn)
{
    builtin_role = fn;
}

/* A built-in role, or a role of the workspace's own. */
static bool role_exists(const char *workspace_id, const char *role)
{
    if (builtin_role ? builtin_role(role)
                     : strcmp(role, "owner") == 0 || strcmp(role, "viewer") == 0)
        return true;
    bool found = false;
    const char *key[] = {workspace_id, role};
    if (storage_begin(false) != 0)
        return false;
    if (query_row("finding the role", "SELECT key FROM roles WHERE workspace_id = ? AND key = ?",
                  key, 2, &found, NULL, 0) != 0)
        found = false;
    storage_rollback();
    return found;
}

static int cmd_create_user(struct option *opts, FILE *out, FILE *errout)
{
    struct create_user_args a = {
        .workspace_id = opts[0].value, .email = opts[1].value, .role = opts[2].value};
    if (!id_valid(a.workspace_id, "wsp"))
        return fail(errout, "create-user", EXIT_USAGE,
                    "--workspace \"%s\" is not a workspace id (wsp_...)", a.workspace_id);
    if (!format_is_email(a.email) || strlen(a.email) >= EMAIL_MAX)
        return fail(errout, "create-user", EXIT_USAGE,
                    "--email \"%s\" is not a valid email address", a.email);
    if (!role_exists(a.workspace_id, a.role))
        return fail(errout, "create-user", EXIT_USAGE,
                    "--role \"%s\" is neither a built-in role (owner, admin, treasurer, "
                    "approver, accountant, auditor, viewer, ...) nor one of the workspace's own "
                    "(GET /v1/admin/roles lists them)",
                    a.role);
    int rc = in_write_tx("create-user", errout, create_user_body, &a);
    if (rc == EXIT_SUCCESS) {
        fprintf(out, "added to workspace %s\n", a.workspace_id);
        print_user(out, &a.o, a.role, "TREASURY_USER_PASSWORD");
    }
    outcome_release(&a.o);
    return rc;
}

static int invite_user_body(void *arg, char *err, size_t errlen)
{
    struct create_user_args *a = arg;
    bool exists = false, member = false;
    outcome_release(&a->o);
    a->o = (struct outcome){0};
    if (find_workspace_and_account(a, &exists, err, errlen) != 0)
        return -1;
    const char *mkey[] = {a->workspace_id, a->o.user_id};
    if (exists && query_row("finding the membership",
                            "SELECT 1 FROM members WHERE workspace_id = ? AND user_id = ?", mkey,
                            2, &member, NULL, 0) != 0) {
        snprintf(err, errlen, "database error (logged above)");
        return -1;
    }
    if (member) {
        snprintf(err, errlen, "%s is already a member of %s", a->email, a->workspace_id);
        return -1;
    }
    if (!inviter) {
        snprintf(err, errlen, "invitations are not available in this build");
        return -1;
    }
    if (inviter(a->workspace_id, a->email, a->role, inviter_base_url,
                a->o.request_id[0] ? a->o.request_id : NULL, a->o.invitation_id,
                sizeof a->o.invitation_id, err, errlen) != 0)
        return -1;
    a->o.new_user = !exists;
    return 0;
}

static int cmd_invite_user(struct option *opts, FILE *out, FILE *errout)
{
    struct create_user_args a = {
        .workspace_id = opts[0].value, .email = opts[1].value, .role = opts[2].value};
    if (!id_valid(a.workspace_id, "wsp"))
        return fail(errout, "invite-user", EXIT_USAGE,
                    "--workspace \"%s\" is not a workspace id (wsp_...)", a.workspace_id);
    if (!format_is_email(a.email) || strlen(a.email) >= EMAIL_MAX)
        return fail(errout, "invite-user", EXIT_USAGE,
                    "--email \"%s\" is not a valid email address", a.email);
    if (!role_exists(a.workspace_id, a.role))
        return fail(errout, "invite-user", EXIT_USAGE,
                    "--role \"%s\" is neither a built-in role nor one of the workspace's own",
                    a.role);
    int rc = in_write_tx("invite-user", errout, invite_user_body, &a);
    if (rc == EXIT_SUCCESS)
        fprintf(out,
                "invited %s to workspace %s as %s: invitation %s is e-mailed by the server; "
                "%s\n",
                a.email, a.workspace_id, a.role, a.o.invitation_id,
                a.o.new_user ? "they complete their signup with its token"
                             : "they already have an account and join by accepting it after "
                               "signing in");
    return rc;
}

struct set_rate_limit_args {
    const char *workspace_id;
    long long per_minute; /* 0: back to the server's default */
};

static int set_rate_limit_body(void *arg, char *err, size_t errlen)
{
    struct set_rate_limit_args *a = arg;
    char now[40];
    format_now_rfc3339(now, sizeof now);
    int changed = acc_workspace_set_rate_limit(a->workspace_id, a->per_minute, now);
    if (changed < 0) {
        snprintf(err, errlen, "database error (logged above)");
        return -1;
    }
    if (!changed) {
        snprintf(err, errlen, "no workspace %s (see list-workspaces)", a->workspace_id);
        return -1;
    }
    return 0;
}

static int cmd_set_rate_limit(struct option *opts, FILE *out, FILE *errout)
{
    struct set_rate_limit_args a = {.workspace_id = opts[0].value};
    const char *v = opts[1].value;
    if (!id_valid(a.workspace_id, "wsp"))
        return fail(errout, "set-rate-limit", EXIT_USAGE,
                    "--workspace \"%s\" is not a workspace id (wsp_...)", a.workspace_id);
    if (strcmp(v, "default") != 0) {
        char *end = NULL;
        errno = 0;
        a.per_minute = strtoll(v, &end, 10);
        if (errno || end == v || *end || a.per_minute < 1 || a.per_minute > RATE_LIMIT_MAX)
            return fail(errout, "set-rate-limit", EXIT_USAGE,
                        "--per-minute must be 1 to %d or \"default\", not \"%s\"",
                        RATE_LIMIT_MAX, v);
    }
    int rc = in_write_tx("set-rate-limit", errout, set_rate_limit_body, &a);
    if (rc == EXIT_SUCCESS) {
        if (a.per_minute > 0)
            fprintf(out, "workspace %s: %lld requests per minute\n", a.workspace_id,
                    a.per_minute);
        else
            fprintf(out, "workspace %s: the server's default rate limit\n", a.workspace_id);
        fputs("A running server applies the change within a second.\n", out);
    }
    return rc;
}

static const char list_sql[] = "SELECT w.id, w.name, w.created_at, "
                               "(SELECT count(*) FROM members m WHERE m.workspace_id = w.id), "
                               "w.rate_limit_per_minute "
                               "FROM workspaces w ORDER BY w.created_at, w.id";

/* Control characters (possible in names set through the API) would garble the terminal. */
static void print_cell(FILE *out, const char *s, long width)
{
    long n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, out);
        if ((*p & 0xc0) != 0x80)
            n++;
    }
    for (; n < width; n++)
        fputc(' ', out);
}

static long display_width(const char *s)
{
    long n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xc0) != 0x80)
            n++;
    }
    return n;
}

static const char *column_text(struct db_stmt *st, int i)
{
    const char *t = db_column_text(st, i);
    return t ? (const char *)t : "";
}

static int list_json(struct db_stmt *st, FILE *out)
{
    struct jsonw w;
    int rc;
    jsonw_init(&w);
    jsonw_array_begin(&w);
    while ((rc = db_step(st)) == DB_ROW) {
        jsonw_object_begin(&w);
        jsonw_key(&w, "id");
        jsonw_string(&w, column_text(st, 0));
        jsonw_key(&w, "name");
        jsonw_string(&w, column_text(st, 1));
        jsonw_key(&w, "created_at");
        jsonw_string(&w, column_text(st, 2));
        jsonw_key(&w, "members");
        jsonw_int(&w, db_column_int64(st, 3));
        jsonw_key(&w, "rate_limit_per_minute"); /* null: the server's default */
        if (db_column_is_null(st, 4))
            jsonw_null(&w);
        else
            jsonw_int(&w, db_column_int64(st, 4));
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    if (rc != DB_DONE) {
        jsonw_release(&w);
        return db_failed("listing workspaces");
    }
    size_t len = 0;
    char *text = jsonw_take(&w, &len);
    fwrite(text, 1, len, out);
    fputc('\n', out);
    free(text);
    jsonw_release(&w);
    return 0;
}

/* Two passes over one read snapshot: the first measures the columns. */
static int list_table(struct db_stmt *st, FILE *out)
{
    long wid = 2, wname = 4, wcreated = 10;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        long n = display_width(column_text(st, 0));
        wid = n > wid ? n : wid;
        n = display_width(column_text(st, 1));
        wname = n > wname ? n : wname;
        n = display_width(column_text(st, 2));
        wcreated = n > wcreated ? n : wcreated;
    }
    if (rc != DB_DONE)
        return db_failed("listing workspaces");
    db_reset(st);
    print_cell(out, "ID", wid + 2);
    print_cell(out, "NAME", wname + 2);
    print_cell(out, "CREATED_AT", wcreated + 2);
    fputs("MEMBERS  RATE_LIMIT\n", out);
    while ((rc = db_step(st)) == DB_ROW) {
        print_cell(out, column_text(st, 0), wid + 2);
        print_cell(out, column_text(st, 1), wname + 2);
        print_cell(out, column_text(st, 2), wcreated + 2);
        fprintf(out, "%-7lld  ", (long long)db_column_int64(st, 3));
        if (db_column_is_null(st, 4))
            fputs("default\n", out);
        else
            fprintf(out, "%lld/min\n", (long long)db_column_int64(st, 4));
    }
    if (rc != DB_DONE)
        return db_failed("listing workspaces");
    return 0;
}

static int cmd_list_workspaces(struct option *opts, FILE *out, FILE *errout)
{
    int ret = EXIT_FAILURE;
    if (storage_begin(false) != 0)
        return fail(errout, "list-workspaces", EXIT_FAILURE,
                    "cannot start a transaction (logged above)");
    struct db_stmt *st = storage_prepare(list_sql);
    if (!st)
        goto out;
    if ((opts[0].seen ? list_json(st, out) : list_table(st, out)) != 0)
        goto out;
    db_reset(st);
    if (storage_commit() != 0)
        goto out;
    ret = EXIT_SUCCESS;
out:
    storage_rollback();
    if (ret != EXIT_SUCCESS)
        fail(errout, "list-workspaces", ret, "database error (logged above)");
    return ret;
}

static const struct command commands[] = {
    {"create-workspace",
     "usage: treasury-server admin create-workspace --name NAME --owner-email EMAIL\n"
     "\n"
     "Creates a workspace and makes EMAIL its owner: a new user gets TREASURY_ADMIN_PASSWORD,\n"
     "or a generated password printed once. An email that already has an account is not\n"
     "made owner: it is sent an owner invitation (e-mailed by the server) that its holder\n"
     "accepts after signing in. Prints the new workspace id.\n",
     cmd_create_workspace,
     {{"name", false, NULL, false},
      {"owner-email", false, NULL, false},
      {NULL, false, NULL, false}},
     true},
    {"list-workspaces",
     "usage: treasury-server admin list-workspaces [--json]\n"
     "\n"
     "Lists every workspace with its id, name, creation time and member count.\n",
     cmd_list_workspaces,
     {{"json", true, NULL, false}, {NULL, false, NULL, false}},
     false},
    {"create-user",
     "usage: treasury-server admin create-user --workspace WORKSPACE_ID --email EMAIL "
     "--role ROLE\n"
     "\n"
     "Adds EMAIL to the workspace with the role: a built-in role (owner, admin, treasurer,\n"
     "approver, accountant, auditor, viewer) or one of the workspace's own.\n"
     "EMAIL must not have an account yet (an existing account is never added by the\n"
     "operator: use invite-user); the new user gets TREASURY_USER_PASSWORD, or a generated\n"
     "password printed once.\n",
     cmd_create_user,
     {{"workspace", false, NULL, false},
      {"email", false, NULL, false},
      {"role", false, NULL, false},
      {NULL, false, NULL, false}},
     false},
    {"invite-user",
     "usage: treasury-server admin invite-user --workspace WORKSPACE_ID --email EMAIL "
     "--role ROLE\n"
     "\n"
     "Invites EMAIL to the workspace with the role, as POST /v1/admin/users/invite does: the\n"
     "one-time token is e-mailed to EMAIL by the server (the --smtp-url relay, or the spool\n"
     "<data-dir>/mail/) and never printed. Someone without an account completes the signup\n"
     "with it; an existing account accepts it after signing in.\n",
     cmd_invite_user,
     {{"workspace", false, NULL, false},
      {"email", false, NULL, false},
      {"role", false, NULL, false},
      {NULL, false, NULL, false}},
     false},
    {"set-rate-limit",
     "usage: treasury-server admin set-rate-limit --workspace WORKSPACE_ID "
     "--per-minute N|default\n"
     "\n"
     "Gives the workspace its own request quota (1 to 1000000000 requests per minute) instead\n"
     "of the server's --rate-limit, or `default` to go back to it. A running server applies\n"
     "the change within a second; list-workspaces shows every workspace's quota.\n",
     cmd_set_rate_limit,
     {{"workspace", false, NULL, false},
      {"per-minute", false, NULL, false},
      {NULL, false, NULL, false}},
     false},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void print_usage(FILE *f)
{
    fputs("usage: treasury-server admin COMMAND [OPTIONS]\n"
          "\n"
          "Operator commands on the data directory; they do not need the server running.\n"
          "\n"
          "commands:\n"
          "  create-workspace --name NAME --owner-email EMAIL\n"
          "  list-workspaces [--json]\n"
          "  create-user --workspace WORKSPACE_ID --email EMAIL --role ROLE\n"
          "  invite-user --workspace WORKSPACE_ID --email EMAIL --role ROLE\n"
          "  set-rate-limit --workspace WORKSPACE_ID --per-minute N|default\n"
          "\n"
          "Run `treasury-server admin COMMAND --help` for details.\n"
          "Exit status: 0 success, 1 failure, 2 usage error.\n",
          f);
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* Parses "--opt VALUE", "--opt=VALUE" and "--flag"; every value option is required. */
static int parse_options(const struct command *c, struct option *opts, int argc, char **argv,
                         FILE *errout)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return fail(errout, c->name, EXIT_USAGE, "unexpected argument \"%s\"", a);
        const char *eq = strchr(a + 2, '=');
        size_t nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        struct option *o = opts;
        while (o->name && !(strlen(o->name) == nlen && strncmp(o->name, a + 2, nlen) == 0))
            o++;
        if (!o->name)
            return fail(errout, c->name, EXIT_USAGE, "unknown option \"%.*s\"", (int)(nlen + 2), a);
        if (o->seen)
            return fail(errout, c->name, EXIT_USAGE, "--%s given twice", o->name);
        o->seen = true;
        if (o->is_flag) {
            if (eq)
                return fail(errout, c->name, EXIT_USAGE, "--%s takes no value", o->name);
            continue;
        }
        if (eq) {
            o->value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return fail(errout, c->name, EXIT_USAGE, "--%s needs a value", o->name);
            o->value = argv[++i];
        }
    }
    for (struct option *o = opts; o->name; o++) {
        if (!o->is_flag && !o->seen)
            return fail(errout, c->name, EXIT_USAGE, "--%s is required (see --help)", o->name);
    }
    return EXIT_SUCCESS;
}

int admin_main(int argc, char **argv, FILE *out, FILE *errout, admin_open_fn *open_data,
               void *arg)
{
    if (argc < 2) {
        print_usage(errout);
        return EXIT_USAGE;
    }
    if (is_help(argv[1])) {
        print_usage(out);
        return EXIT_SUCCESS;
    }
    const struct command *c = NULL;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, argv[1]) == 0)
            c = &commands[i];
    }
    if (!c) {
        fprintf(errout, "treasury-server admin: unknown command \"%s\"\n\n", argv[1]);
        print_usage(errout);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(c->usage, out);
            return EXIT_SUCCESS;
        }
    }
    /* A copy: the table stays constant, so repeated calls (tests) start clean. */
    struct option opts[sizeof c->opts / sizeof c->opts[0]];
    memcpy(opts, c->opts, sizeof opts);
    int rc = parse_options(c, opts, argc - 2, argv + 2, errout);
    if (rc != EXIT_SUCCESS)
        return rc;
    /* Only a command that will run touches the data directory: help and usage errors never
     * create or migrate anything. */
    char err[1280] = "";
    if (open_data && open_data(c->creates, arg, err, sizeof err) != 0)
        return fail(errout, c->name, EXIT_FAILURE, "%s", err);
    rc = c->run(opts, out, errout);
    fflush(out);
    return rc;
}
