/* Offload: small pools of threads for the requests that would hold a libmicrohttpd thread for
 * long. Run on a libmicrohttpd thread, one such request would stall every other connection that
 * thread serves; handed over here (the connection suspended meanwhile, as for the group
 * commit), it stalls nobody. Two lanes, each its own queue and threads:
 * - hashing: the x-own-transaction operations, which hash a password (scrypt, tens of ms of
 *   CPU): as many threads as hashes may run at once (runtime/password.c), so that a burst of
 *   logins queues here, in order, rather than running all at once;
 * - writes: on an engine without the group-commit writer (PostgreSQL) every other write, each
 *   in its own transaction and mostly waiting on the database's commit: as many threads as
 *   writes may wait at once (none with SQLite).
 * (runtime/offload.c) */
#ifndef RUNTIME_OFFLOAD_H
#define RUNTIME_OFFLOAD_H

enum offload_lane { OFFLOAD_HASHING, OFFLOAD_WRITES, OFFLOAD_LANES };

struct offload_item {
    void (*run)(void *ctx); /* on a pool thread; the item may be freed from within */
    void *ctx;
    /* NULL, or the key the item shares with others (the workspace of a write): at most
     * OFFLOAD_PER_KEY items of one key hold threads of the lane at once, the rest wait in
     * their own queue, so that one busy key (a workspace whose writes queue on its lock anyway)
     * cannot take every thread from the others. Copied when submitted. */
    const char *key;
    struct offload_item *next; /* the queue's */
};

#define OFFLOAD_PER_KEY 4
#define OFFLOAD_KEY_MAX 63

/* Starts each lane's threads (at least 1 for hashing, 0 or more for writes; at most 64 each).
 * 0 / -1. */
int offload_start(int hashing_threads, int write_threads);
/* Queues an item on lane. Before start, after stop, or on a lane without threads, it runs at
 * once on the calling thread. */
void offload_submit(enum offload_lane lane, struct offload_item *it);
/* Takes the items queued and not started on every lane, in order per lane (NULL: none), for
 * the caller to answer without running them: a server stopping past its drain timeout. */
struct offload_item *offload_take_queued(void);
/* Runs what is queued, then stops the threads. */
void offload_stop(void);

#endif
