/* Offload: a small pool of threads for the requests that would hold a libmicrohttpd thread for
 * long - the x-own-transaction operations, which hash a password (scrypt, tens of ms of CPU).
 * Run on a libmicrohttpd thread, one such request would stall every other connection that
 * thread serves; handed over here (the connection suspended meanwhile, as for the group
 * commit), it stalls nobody. On an engine without the group-commit writer (PostgreSQL) every
 * write runs here too, each in its own transaction, so the pool is as large as the writes
 * that may wait on the database at once. (runtime/offload.c) */
#ifndef RUNTIME_OFFLOAD_H
#define RUNTIME_OFFLOAD_H

struct offload_item {
    void (*run)(void *ctx); /* on a pool thread; the item may be freed from within */
    void *ctx;
    struct offload_item *next; /* the queue's */
};

/* Starts the pool's nthreads threads (at most 64). 0 / -1. */
int offload_start(int nthreads);
/* Queues an item. Before start or after stop it runs at once on the calling thread. */
void offload_submit(struct offload_item *it);
/* Takes the items queued and not started, in order (NULL: none), for the caller to answer
 * without running them: a server stopping past its drain timeout. */
struct offload_item *offload_take_queued(void);
/* Runs what is queued, then stops the threads. */
void offload_stop(void);

#endif
