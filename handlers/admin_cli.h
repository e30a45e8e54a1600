/* Operator commands that work on the database without the HTTP API: the first-start
 * bootstrap (storage already open) and `treasury-server admin ...`. They live with the
 * handlers because they write the accounts and workspace tables; they use only the runtime,
 * and what they need of other handlers (built-in roles, invitations) is handed to them. */
#ifndef HANDLERS_ADMIN_CLI_H
#define HANDLERS_ADMIN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "runtime/req.h"

/* The actor the audit log names for what an operator command does. */
#define ADMIN_OPERATOR_ACTOR "operator"
/* r set up as a request of the operator's in workspace_id (actor ADMIN_OPERATOR_ACTOR), for
 * the handlers' functions a command calls and the audit records it writes; request_id NULL: a
 * new one. Release r->arena after. */
void admin_operator_req(struct req *r, const char *workspace_id, const char *request_id);

/* Tells the commands which role keys are built in (the generated x-roles table). Without it
 * only "owner" and "viewer" are. */
typedef bool admin_builtin_role_fn(const char *key);
void admin_init(admin_builtin_role_fn *builtin_role);

/* Issues an e-mailed invitation of email to workspace_id with role inside the command's
 * transaction (handlers/invitations.h), audited under request_id (the command's run; NULL: a
 * new one); its id into id. base_url is the service's public URL for the message's
 * instructions. 0 / -1 with err. */
typedef int admin_invite_fn(const char *workspace_id, const char *email, const char *role,
                            const char *base_url, const char *request_id, char *id, size_t n,
                            char *err, size_t errlen);
/* Lets `create-workspace` and `invite-user` invite an existing account instead of attaching
 * it. Without it they refuse an email that already has an account. */
void admin_set_inviter(admin_invite_fn *invite, const char *base_url);

/* With no workspace yet, creates the first one and its owner in one transaction, from
 * TREASURY_WORKSPACE_NAME, TREASURY_ADMIN_EMAIL and TREASURY_ADMIN_PASSWORD (a generated
 * password is printed once to out). Does nothing when a workspace exists. 0 / -1 with err. */
int admin_bootstrap(FILE *out, char *err, size_t errlen);
/* Opens the storage for a command about to run; create: it may create the data directory
 * and database (else a missing one is an error). 0, or -1 with the reason in err. */
typedef int admin_open_fn(bool create, void *arg, char *err, size_t errlen);
/* argv[0] is "admin". Parses the command line, answering --help and usage errors without
 * touching the data directory; then open_data(arg) (NULL: storage is already open) and the
 * command. Returns the process exit code: 0 ok, 1 failure, 2 usage error. */
int admin_main(int argc, char **argv, FILE *out, FILE *errout, admin_open_fn *open_data,
               void *arg);

#endif
