/* Invitations: issuing one (the admin API and the operator CLI), completing a signup with one
 * (a new account, or an existing one proven as a login would), and accepting one with an
 * existing account after signing in. A user joins a workspace only through an invitation whose
 * token reached their mailbox: the token is e-mailed to the invitee through the outbox
 * (runtime/mail.h), never handed to the inviter. An existing account accepts either with its
 * own first-party token (a login, which asked for the second factor) or, at the signup, with
 * what a login asks for (its password and, when enrolled, its second factor, counted by the
 * failed-login guard), never with a password alone when it has a second factor. */
#include "generated/accounts_api.h"
#include "generated/rows_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/accounts.h"
#include "handlers/admin_cli.h"
#include "handlers/invitations.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/digest.h"
#include "runtime/format.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/mail.h"
#include "runtime/password.h"
#include "runtime/ratelimit.h"
#include "runtime/resource.h"
#include "runtime/storage.h"
#include "runtime/token.h"

#define INVITATION_LIFETIME_S (7 * 86400)
#define INVITATION_TOKEN_BYTES 32

/* The invitation of a token digest, read by its generated codec (rows_invitation_issued)
 * whatever workspace it is for: the token is the key. 1 found, 0 not, -1 failure. */
static int find_invitation(struct req *r, const char *hash, struct invitation_issued_row *inv)
{
    struct db_stmt *st = storage_prepare("SELECT " ROWS_INVITATION_ISSUED_COLUMNS
                                         " FROM invitations WHERE token_hash = ?1");
    if (!st)
        return -1;
    db_bind_text(st, 1, hash);
    int rc = db_step(st), ret = 0;
    if (rc == DB_ROW)
        ret = rows_invitation_issued.read(&r->arena, st, 0, inv) == 0 ? 1 : -1;
    else if (rc != DB_DONE)
        ret = -1;
    db_reset(st);
    if (ret < 0)
        log_error("invitations: lookup failed: %s", storage_errmsg());
    return ret;
}

/* The name of workspace wid into out ("" when none). 0 / -1. */
static int workspace_name(const char *wid, char *out, size_t n)
{
    struct db_stmt *st = storage_prepare("SELECT name FROM workspaces WHERE id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, wid);
    int rc = db_step(st);
    out[0] = '\0';
    if (rc == DB_ROW)
        acc_copy_column(st, 0, out, n);
    db_reset(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : -1;
}

/* audit_record in workspace wid as actor (a signup or an acceptance is recorded in the
 * workspace joined, whatever workspace the caller's token is for). */
static int audit_in(struct req *r, const char *wid, const char *actor, const char *action,
                    const char *type, const char *id, const char *before, const char *after,
                    const char *detail)
{
    struct principal saved = r->principal;
    r->principal.workspace_id = wid;
    r->principal.user_id = actor;
    int rc = audit_change(r, action, type, id, before, after, detail);
    r->principal = saved;
    return rc;
}

/* The membership an accepted invitation creates, the invitation marked accepted by user_id
 * (saved in its own workspace, whatever the caller's token is for), and both audited there.
 * 0 / -1. */
static int join(struct req *r, struct invitation_issued_row *inv, const char *user_id,
                const char *now)
{
    const struct invitation_issued *o = &inv->obj;
    if (acc_member_insert(inv->workspace_id, user_id, o->role, now, o->invited_by) != 0)
        return -1;
    inv->obj.status = INVITATION_ISSUED_STATUS_ACCEPTED;
    inv->accepted_at = now;
    inv->user_id = user_id;
    struct principal saved = r->principal;
    r->principal.workspace_id = inv->workspace_id;
    int saved_rc = resource_save(r, &rows_invitation_issued, inv);
    r->principal = saved;
    if (saved_rc != 1)
        return -1;
    char *detail = arena_printf(&r->arena, "role %s, invited by %s", o->role, o->invited_by);
    if (audit_in(r, inv->workspace_id, user_id, "invitation.accepted", "invitation", o->id,
                 "pending", "accepted", NULL) != 0 ||
        audit_in(r, inv->workspace_id, user_id, "member.created", "member", user_id, NULL,
                 "active", detail) != 0)
        return -1;
    return 0;
}

/* ---- issuing ------------------------------------------------------------------------------ */

/* s with control characters replaced by spaces (names go into e-mail text). In r->arena. */
static char *printable(struct req *r, const char *s)
{
    char *out = arena_strdup(&r->arena, s);
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return out;
}

static int queue_email(struct req *r, const char *inv_id, const char *to, const char *wname,
                       const char *role, const char *token, const char *expires,
                       const char *base_url, bool has_account, char *mail_id, size_t n)
{
    const char *new_account =
        "You have no account yet: choose your name and a passphrase (12 characters or\n"
        "more) and complete your signup with\n"
        "\n"
        "    POST %s/v1/api/complete-signup\n"
        "    {\"invitation_token\": \"%s\", \"name\": \"...\", \"password\": \"...\"}\n";
    const char *existing =
        "You already have an account: sign in as usual (with your second factor if you\n"
        "use one), then accept with your access token:\n"
        "\n"
        "    POST %s/v1/accounts/invitations/accept\n"
        "    Authorization: Bearer <your access token>\n"
        "    {\"invitation_token\": \"%s\"}\n"
        "\n"
        "and log in to the workspace with the workspace_id the answer gives.\n"
        "\n"
        "If you cannot sign in (you belong to no workspace any more), accept with your\n"
        "password instead, and your current one-time code as otp if you use one:\n"
        "\n"
        "    POST %s/v1/api/complete-signup\n"
        "    {\"invitation_token\": \"%s\", \"name\": \"...\", \"password\": \"...\",\n"
        "     \"otp\": \"123456\"}\n";
    char *how = has_account
                    ? arena_printf(&r->arena, existing, base_url, token, base_url, token)
                    : arena_printf(&r->arena, new_account, base_url, token);
    char *body = arena_printf(
        &r->arena,
        "Hello,\n"
        "\n"
        "You are invited to join the treasury workspace \"%s\" with the role %s.\n"
        "\n"
        "%s"
        "\n"
        "Invitation %s, valid until %s, works once.\n"
        "Keep this message to yourself: whoever holds the token can use it. If you did\n"
        "not expect this invitation, ignore this message.\n",
        printable(r, wname), role, how, inv_id, expires);
    int rc = mail_enqueue(to, "Your invitation to a treasury workspace", body, mail_id, n);
    /* The arena is the request's: the token does not outlive it, but say so explicitly. */
    explicit_bzero(how, strlen(how));
    explicit_bzero(body, strlen(body));
    return rc;
}

int invitations_issue(struct req *r, const char *wid, const char *email, const char *role,
                      const char *base_url, struct invitation_issued *out)
{
    char email_norm[EMAIL_MAX], now[40], expires[40], hash[DIGEST_HEX_LEN + 1];
    char wname[600], mail_id[ID_MAX];
    struct login_user u;
    bool has_account = false;
    acc_lower_ascii(email, email_norm, sizeof email_norm);
    memset(&u, 0, sizeof u);
    int64_t now_ms = clock_now_ms();
    format_time_rfc3339(now_ms, now, sizeof now);
    format_time_rfc3339(now_ms + (int64_t)INVITATION_LIFETIME_S * 1000, expires, sizeof expires);
    char *token = id_secret(&r->arena, INVITATION_TOKEN_BYTES);
    if (digest_sha256_hex(token, strlen(token), hash) != 0 ||
        workspace_name(wid, wname, sizeof wname) != 0 ||
        acc_find_user(email_norm, &u, &has_account) != 0)
        return -1;
    explicit_bzero(u.password_hash, sizeof u.password_hash);
    explicit_bzero(u.mfa_secret, sizeof u.mfa_secret);
    /* In r's workspace, which is wid (the admin API's caller, or the operator's). */
    struct invitation_issued_row *x = arena_alloc(&r->arena, sizeof *x);
    resource_new(r, &rows_invitation_issued, x);
    x->obj.email = arena_strdup(&r->arena, email);
    x->obj.role = arena_strdup(&r->arena, role);
    x->obj.status = INVITATION_ISSUED_STATUS_PENDING;
    x->obj.invited_by = r->principal.user_id;
    x->obj.created_at = arena_strdup(&r->arena, now);
    x->obj.expires_at = arena_strdup(&r->arena, expires);
    x->email_norm = arena_strdup(&r->arena, email_norm);
    x->token_hash = arena_strdup(&r->arena, hash);

    /* A newer invitation replaces a pending one: only the latest token works. */
    const char *key[] = {wid, email_norm};
    if (storage_exec_texts("UPDATE invitations SET status = 'superseded' "
                           "WHERE workspace_id = ? AND email_norm = ? AND status = 'pending'",
                           key, 2) != 0)
        return -1;
    int rc = queue_email(r, x->obj.id, email, wname, role, token, expires, base_url, has_account,
                         mail_id, sizeof mail_id);
    explicit_bzero(token, strlen(token));
    if (rc != 0)
        return -1;
    x->mail_id = arena_strdup(&r->arena, mail_id);
    if (resource_insert(r, &rows_invitation_issued, x) != 0)
        return -1;
    *out = x->obj;
    char *detail = arena_printf(&r->arena, "%s as %s (token e-mailed, %s)", email, role, mail_id);
    return audit_change(r, "user.invited", "invitation", out->id, NULL, "pending", detail);
}

int invitations_issue_by_operator(const char *wid, const char *email, const char *role,
                                  const char *base_url, const char *request_id, char *id,
                                  size_t n, char *err, size_t errlen)
{
    struct req r;
    struct invitation_issued inv;
    admin_operator_req(&r, wid, request_id);
    int rc = invitations_issue(&r, wid, email, role, base_url, &inv);
    if (rc == 0)
        snprintf(id, n, "%s", inv.id);
    else
        snprintf(err, errlen, "cannot issue the invitation (logged above)");
    arena_release(&r.arena);
    return rc;
}

/* ---- checking a presented token ----------------------------------------------------------- */

static void invalid_invitation(struct req *r)
{
    verr_add(&r->verr, "/invitation_token", NULL, "invalid_invitation", "%s",
             "no such invitation was issued to you");
    req_problem(r, 422, "invalid_invitation", "The invitation token is not valid.");
    r->with_errors = true;
}

/* 1 usable, 0 answered (410), on an invitation found by its token. One never e-mailed (issued
 * before invitations were: its token went back to the inviter) is refused like a replaced one;
 * an upgrade superseded them all (migration 19 of earlier releases). */
static int usable(struct req *r, const struct invitation_issued_row *inv, const char *now)
{
    if (inv->obj.status != INVITATION_ISSUED_STATUS_PENDING || !inv->mail_id) {
        req_problem(r, 410, "invitation_used",
                    "This invitation was already used or replaced by a newer one; ask for a "
                    "new invitation.");
        return 0;
    }
    if (strcmp(inv->obj.expires_at, now) <= 0) {
        req_problem(r, 410, "invitation_expired",
                    "This invitation expired at %s; ask for a new invitation.",
                    inv->obj.expires_at);
        return 0;
    }
    return 1;
}

/* Whether user_id is a member of wid: 1 yes (409 already_member answered), 0 no, -1
 * failure. */
static int already_member(struct req *r, const char *wid, const char *user_id)
{
    struct db_stmt *st = storage_prepare("SELECT 1 FROM members WHERE workspace_id = ? AND "
                                       "user_id = ?");
    if (!st)
        return -1;
    db_bind_text(st, 1, wid);
    db_bind_text(st, 2, user_id);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return -1;
    if (rc == DB_ROW)
        req_problem(r, 409, "already_member", "You are already a member of workspace %s.", wid);
    return rc == DB_ROW;
}

/* The invitation of token digest hash read again (the transaction was ended and begun anew
 * meanwhile): 1 still usable, 0 answered (410), -1 failure. */
static int still_usable(struct req *r, const char *hash, struct invitation_issued_row *inv)
{
    char now[40];
    int found = find_invitation(r, hash, inv);
    if (found < 0)
        return -1;
    if (!found) {
        req_problem(r, 410, "invitation_used",
                    "This invitation was used or replaced while it was being accepted.");
        return 0;
    }
    format_now_rfc3339(now, sizeof now);
    return usable(r, inv, now);
}

/* The answer of a signup: a session of user_id in the workspace just joined. 0 / -1. */
static int signed_in(struct req *r, const char *user_id, const char *wid,
                     struct accounts_complete_signup_response *out)
{
    int64_t lifetime = 86400;
    char role[48], scope[1024];
    bool found = false;
    if (acc_find_standing(user_id, wid, role, sizeof role, &lifetime, &found) != 0)
        return -1;
    if (!found) {
        log_error("signup: the new member %s has no standing in %s", user_id, wid);
        return -1;
    }
    if (acc_role_scopes(wid, role, scope, sizeof scope) != 0)
        return -1;
    struct login_response *resp =
        acc_open_session(r, user_id, wid, scope, lifetime, NULL, NULL, NULL);
    if (!resp)
        return -1;
    out->status = 200;
    out->body_200 = resp;
    return 0;
}

/* ---- completing a signup with an existing account ----------------------------------------- */

/* The e-mailed token proves the mailbox; the account's password and, when enrolled, its second
 * factor prove the account, exactly as a login (acc_prove_account: the same failed-login
 * guard, the same answers). Together they are signing in and accepting, which an account that
 * belongs to no workspace (so cannot sign in) has no other way to do. */
static int signup_existing(struct req *r, const struct complete_signup_request *b,
                           const char *hash, const char *email_norm,
                           struct accounts_complete_signup_response *out)
{
    const struct acc_credentials cred = {
        .password = b->password,
        .otp = b->has_otp ? b->otp : NULL,
        .recovery_code = b->has_recovery_code ? b->recovery_code : NULL,
    };
    struct login_user u;
    struct acc_guard g;
    struct invitation_issued_row inv;
    char now[40];
    int rc = acc_prove_account(r, email_norm, &cred, &u, &g);
    explicit_bzero(u.password_hash, sizeof u.password_hash);
    explicit_bzero(u.mfa_secret, sizeof u.mfa_secret);
    if (rc <= 0)
        return rc;
    /* Read again: the transaction was ended around the password hash. */
    if ((rc = still_usable(r, hash, &inv)) <= 0)
        return rc;
    if (strcmp(inv.email_norm, email_norm) != 0) { /* cannot happen: the token is the key */
        log_error("signup: invitation %s changed its email meanwhile", inv.obj.id);
        return -1;
    }
    if ((rc = already_member(r, inv.workspace_id, u.id)) != 0)
        return rc < 0 ? -1 : 0;
    /* answered as a login would be: a workspace that requires MFA takes no account without
     * it (the invitation stays usable once the account has enrolled) */
    int refused = acc_refuse_without_mfa(r, inv.workspace_id, u.id);
    if (refused != 0)
        return refused < 0 ? -1 : 0;
    format_now_rfc3339(now, sizeof now);
    if (join(r, &inv, u.id, now) != 0)
        return -1;
    return signed_in(r, u.id, inv.workspace_id, out);
}

/* ---- completing a signup (a new account) -------------------------------------------------- */

int accounts_complete_signup(struct req *r, const struct accounts_complete_signup_request *in,
                             struct accounts_complete_signup_response *out)
{
    const struct complete_signup_request *b = in->body;
    char hash[DIGEST_HEX_LEN + 1], now[40], user_id[ID_MAX];
    char new_hash[PASSWORD_HASH_MAX] = "";
    struct invitation_issued_row inv, again;
    struct login_user u;
    bool existing = false;
    int found = 0;

    memset(&u, 0, sizeof u);
    if (digest_sha256_hex(b->invitation_token, strlen(b->invitation_token), hash) != 0 ||
        (found = find_invitation(r, hash, &inv)) < 0)
        return -1;
    if (!found) {
        invalid_invitation(r);
        return 0;
    }
    format_now_rfc3339(now, sizeof now);
    if (!usable(r, &inv, now))
        return 0;
    /* The token's holder is the invitee, whose e-mail said whether they have an account:
     * answering by the account's existence tells them nothing new. */
    if (acc_find_user(inv.email_norm, &u, &existing) != 0)
        return -1;
    explicit_bzero(u.password_hash, sizeof u.password_hash);
    explicit_bzero(u.mfa_secret, sizeof u.mfa_secret);
    if (existing)
        return signup_existing(r, b, hash, inv.email_norm, out);
    if (b->has_otp || b->has_recovery_code) {
        verr_add(&r->verr, b->has_otp ? "/otp" : "/recovery_code", NULL, "mfa_not_enrolled",
                 "%s", "a new account has no multi-factor authentication yet");
        req_problem(r, 422, "mfa_not_enrolled",
                    "This invitation is for a new account, which has no multi-factor "
                    "authentication yet; omit otp and recovery_code.");
        r->with_errors = true;
        return 0;
    }
    const char *weak = password_policy_violation(b->password, inv.obj.email);
    if (weak) {
        verr_add(&r->verr, "/password", NULL, "weak_password", "%s", weak);
        req_problem(r, 422, "weak_password", "The password %s.", weak);
        r->with_errors = true;
        return 0;
    }
    /* scrypt without the write lock, as in login; then everything is read again. */
    storage_rollback();
    bool ok = password_hash(b->password, new_hash, sizeof new_hash) == 0;
    if (storage_begin(true) != 0) {
        req_problem(r, 503, "unavailable", "The database is unavailable; retry shortly.");
        return 0;
    }
    if (!ok)
        return -1;
    int rc = still_usable(r, hash, &again);
    if (rc <= 0)
        return rc;
    if (acc_find_user(inv.email_norm, &u, &existing) != 0)
        return -1;
    explicit_bzero(u.password_hash, sizeof u.password_hash);
    explicit_bzero(u.mfa_secret, sizeof u.mfa_secret);
    if (existing) { /* signed up through another invitation meanwhile */
        req_problem(r, 409, "account_exists",
                    "This email got an account (through another invitation) while this signup "
                    "ran: send that account's password, with its second factor if enrolled, "
                    "or sign in and accept with POST /v1/accounts/invitations/accept.");
        return 0;
    }
    snprintf(user_id, sizeof user_id, "%s", id_new(&r->arena, "usr"));
    if (acc_user_insert(user_id, inv.obj.email, inv.email_norm, new_hash, b->name, now) != 0 ||
        join(r, &again, user_id, now) != 0)
        return -1;
    return signed_in(r, user_id, again.workspace_id, out);
}

/* ---- accepting with an existing account --------------------------------------------------- */

int accounts_accept_invitation(struct req *r, const struct accounts_accept_invitation_request *in,
                               struct accounts_accept_invitation_response *out)
{
    char hash[DIGEST_HEX_LEN + 1], now[40], email_norm[EMAIL_MAX] = "", wname[600];
    struct invitation_issued_row inv;
    int found = 0;
    const char *uid = r->principal.user_id;

    if (token_is_service_subject(uid)) {
        req_problem(r, 409, "not_a_user", "Service accounts cannot accept invitations.");
        return 0;
    }
    if (digest_sha256_hex(in->body->invitation_token, strlen(in->body->invitation_token),
                          hash) != 0 ||
        (found = find_invitation(r, hash, &inv)) < 0)
        return -1;
    struct db_stmt *st =
        storage_prepare("SELECT email_norm FROM users WHERE id = ? AND status = 'active'");
    if (!st)
        return -1;
    db_bind_text(st, 1, uid);
    int rc = db_step(st);
    if (rc == DB_ROW)
        acc_copy_column(st, 0, email_norm, sizeof email_norm);
    db_reset(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return -1;
    /* Someone else's invitation is answered exactly like one that does not exist. */
    if (!found || !email_norm[0] || strcmp(inv.email_norm, email_norm) != 0) {
        invalid_invitation(r);
        return 0;
    }
    format_now_rfc3339(now, sizeof now);
    if (!usable(r, &inv, now))
        return 0;
    if ((rc = already_member(r, inv.workspace_id, uid)) != 0)
        return rc < 0 ? -1 : 0;
    /* as the signup with an existing account (and the login): a workspace that requires MFA
     * takes no account without it; the invitation stays usable once the account enrolled */
    if ((rc = acc_refuse_without_mfa(r, inv.workspace_id, uid)) != 0)
        return rc < 0 ? -1 : 0;
    if (join(r, &inv, uid, now) != 0 ||
        workspace_name(inv.workspace_id, wname, sizeof wname) != 0)
        return -1;
    struct membership *m = arena_alloc(&r->arena, sizeof *m);
    m->object = "membership";
    m->workspace_id = inv.workspace_id;
    m->workspace_name = arena_strdup(&r->arena, wname);
    m->role = inv.obj.role;
    m->joined_at = arena_strdup(&r->arena, now);
    out->status = 201;
    out->body_201 = m;
    return 0;
}
