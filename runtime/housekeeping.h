/* The server's background thread: once a second it checkpoints the rate-limit state, reloads
 * operator-set workspace quotas and revoked sessions when the database changed, and purges
 * expired idempotency records in small batches. Nothing here runs on a request's path. */
#ifndef RUNTIME_HOUSEKEEPING_H
#define RUNTIME_HOUSEKEEPING_H

/* Starts the thread (storage must be open). 0 / -1. */
int housekeeping_start(void);
/* Stops it, then runs a last rate-limit checkpoint so a clean restart loses nothing. */
void housekeeping_stop(void);
/* One round of every job, in the calling thread (start-up, shutdown and tests). */
void housekeeping_run_once(void);

#endif
