/* Idempotent retries (draft-ietf-httpapi-idempotency-key-header): on an operation marked
 * x-idempotent, a client UUID in Idempotency-Key or X-Request-ID makes a retry safe. The answer
 * of the operation itself (success, or a 4xx its handler chose) is stored and replayed for the
 * same key and body; another body answers 422; a retry while the first runs answers 409. A
 * request refused before its handler (parameters, schema, auth, quota) or failing with a 5xx
 * is not stored, so it can be fixed or retried. A success is stored in the same transaction as
 * the handler's writes. Keys are scoped by (workspace, user, method, path), kept 24 h or the
 * retention the source set below answers for the request. */
#ifndef RUNTIME_IDEMPOTENCY_H
#define RUNTIME_IDEMPOTENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/req.h"

#define IDEMPOTENCY_RETENTION_S (24 * 3600)

/* How long the record of request r is kept, in seconds (0: IDEMPOTENCY_RETENTION_S). The
 * handlers supply it (a workspace's own retention, handlers/workspace.c): the runtime knows no
 * table. Called inside r's write transaction, once r's principal is known. */
typedef int64_t idempotency_retention_fn(struct req *r);
/* Sets the source of retentions (NULL: every record kept IDEMPOTENCY_RETENTION_S); before
 * the server takes requests. */
void idempotency_set_retention_source(idempotency_retention_fn *fn);

/* Before the transaction: reads the key (none: the request is simply not idempotent), refuses
 * a malformed one (400), fingerprints the canonical body and claims the key in this process
 * (409 while another request holds it). 0 = go on; -1 = a problem was recorded on r. */
int idempotency_prepare(struct req *r);
/* Inside the transaction, before the handler: 1 when r was answered from the stored record
 * (the replayed response, or 422 for another body), 0 when the handler must run, -1 on a
 * database failure. */
int idempotency_lookup(struct req *r);
/* Inside a write transaction, after the handler answered: stores status, body (a problem as
 * its code, detail and errors) and the headers the operation set (those from index
 * first_header on). 0 / -1. */
int idempotency_store(struct req *r, int first_header);
/* Releases the in-process claim; call once for every request whose prepare() claimed a key. */
void idempotency_finish(struct req *r);
/* Deletes up to max_rows records that expired before now_ms; the number deleted, or -1. Runs
 * in its own short transaction so a large backlog never holds the write lock for long. */
int idempotency_purge(int64_t now_ms, int max_rows);

#endif
