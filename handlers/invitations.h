/* Invitations (handlers/accounts_invitations.c): issuing one e-mails its one-time token to the
 * invitee through the mail outbox (runtime/mail.h); the inviter never sees it. Shared by the
 * admin API (POST /v1/admin/users/invite) and the operator's `admin invite-user`. */
#ifndef HANDLERS_INVITATIONS_H
#define HANDLERS_INVITATIONS_H

#include <stddef.h>

#include "generated/schemas_admin.h"
#include "runtime/req.h"

/* Invites email (compared case-insensitively) to workspace wid with role, which the caller
 * checked: supersedes the email's pending invitation there, stores the new token's digest,
 * queues the e-mail that carries the token (instructions use base_url, the service's public
 * URL) and audits `user.invited` in wid as r's principal, all in the current transaction.
 * Fills *out (strings in r->arena). 0 / -1. */
int invitations_issue(struct req *r, const char *wid, const char *email, const char *role,
                      const char *base_url, struct invitation_issued *out);

/* handlers/admin_cli.h's admin_invite_fn: the operator's invitation (actor "operator"), inside the
 * command's transaction. Its id into id. 0 / -1 with err. */
int invitations_issue_by_operator(const char *wid, const char *email, const char *role,
                                  const char *base_url, const char *request_id, char *id,
                                  size_t n, char *err, size_t errlen);

#endif
