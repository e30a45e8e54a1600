/* Outgoing e-mail: a message (to, subject, plain-text body) is queued in the `mail_outbox`
 * table inside the caller's transaction, so a transaction that rolls back sends nothing and a
 * committed one never loses its message; a background job (mail_job) delivers what is due
 * after the commit, retrying with back-off, then marks it sent and clears its body (bodies
 * carry one-time secrets such as invitation tokens: they are kept only until delivered).
 *
 * Delivery goes to an SMTP relay through libcurl (smtp:// with STARTTLS required unless the
 * relay is on a loopback address, or smtps://; credentials from TREASURY_SMTP_USERNAME and
 * TREASURY_SMTP_PASSWORD), or, with no relay configured, into a spool directory
 * (<data-dir>/mail/) as one RFC 5322 <id>.eml file per message, written atomically with mode
 * 0600. Delivery is at least once: a crash between a delivery and its bookkeeping delivers the
 * message again (the spool file is then rewritten with the same name). The runtime knows no
 * API: what a message says is the caller's. */
#ifndef RUNTIME_MAIL_H
#define RUNTIME_MAIL_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/job_runner.h"

#define MAIL_SUBJECT_MAX 200
#define MAIL_BODY_MAX 16384

/* Configures delivery (smtp_url empty: the spool <data_dir>/mail/, created 0700 when missing)
 * and initialises libcurl; before any thread starts. Checks the URL (smtp:// or smtps://, no
 * credentials in it) and from (an address; required with a relay). 0 / -1 with err. */
int mail_init(const char *smtp_url, const char *from, const char *data_dir, char *err,
              size_t errlen);
/* Releases libcurl (after mail_job stopped). */
void mail_shutdown(void);

/* Queues a message in the current write transaction: to is one address, subject one line of
 * at most MAIL_SUBJECT_MAX bytes, body UTF-8 text of at most MAIL_BODY_MAX bytes whose lines
 * are at most 998 bytes. Its id (mail_...) into id (ID_MAX bytes) when not NULL. 0, or -1
 * (logged) for a message that cannot be sent as given or a database failure. */
int mail_enqueue(const char *to, const char *subject, const char *body, char *id, size_t n);

/* The delivery job: every second, the due messages, a few at a time. */
struct job mail_job(void);
/* One round of it on the calling thread, as the job runner runs it (tests): messages handled,
 * -1 on a database failure. */
int mail_deliver_due(void);

#endif
