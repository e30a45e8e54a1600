/* The append-only audit log: who did what to which resource, with the status before and after
 * and the request id, written in the transaction of the change. Each workspace's records form
 * a hash chain (hash = SHA-256(prev_hash | canonical record)), so altering or
 * removing a stored record is detectable. */
#ifndef RUNTIME_AUDIT_H
#define RUNTIME_AUDIT_H

#include "runtime/op.h"
#include "runtime/req.h"

/* Appends a record for r's principal in r's workspace; before, after and detail (a reason
 * given by the actor) may be NULL. Must run inside r's write transaction. 0 / -1. */
int audit_record(struct req *r, const char *action, const char *resource_type,
                 const char *resource_id, const char *before, const char *after,
                 const char *detail);
/* A change a handler reports, in the request's transaction. The first one an operation
 * reports of its declared resource (x-audit) with one of its declared actions is its declared
 * record: its detail also carries the request members the declaration copies. Any other is
 * written as audit_record writes it. 0 / -1. */
int audit_change(struct req *r, const char *action, const char *resource_type,
                 const char *resource_id, const char *before, const char *after,
                 const char *detail);
/* The declared record of an operation whose handler reported none (the generated dispatcher
 * calls it after a success): the action declared (for the status), resource_id, after (the
 * declared response member's value, or NULL) and the declared request members. 0 / -1. */
int audit_declared_write(struct req *r, const char *resource_id, const char *after);
/* Recomputes workspace_id's chain in the current transaction: the first seq whose hash does
 * not match (into *broken), 0 when all do. 0 / -1. */
int audit_verify(const char *workspace_id, int64_t *broken);

#endif
