/* Group commit: the one path every write request takes (runtime/group_commit.c).
 *
 * A request thread hands its write over (group_commit_submit) and goes on serving other
 * connections. One writer thread takes everything queued, runs it in one transaction (each
 * item inside a savepoint of its own, so a failed statement or a refusal undoes only that
 * item), commits once - one fsync for the whole batch, synchronous=FULL - and only then tells
 * each item how it ended. Items that arrive while a batch commits form the next batch, so the
 * batch grows with the load and a lone request waits for nothing but its own fsync. */
#ifndef RUNTIME_GROUP_COMMIT_H
#define RUNTIME_GROUP_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

enum group_commit_outcome {
    GROUP_COMMIT_COMMITTED, /* the batch committed: what the item kept is durable */
    GROUP_COMMIT_LOST,      /* the item ran, but its transaction did not commit: nothing of it
                               was stored (commit failed, or SQLite rolled back the
                               transaction on an I/O, disk-full or out-of-memory error) */
    GROUP_COMMIT_NOT_RUN,   /* no transaction could be opened; the item never ran */
};

struct group_commit_item {
    /* On the writer thread, inside the batch's open write transaction: opens its own savepoint
     * (storage_savepoint) and ends it (storage_savepoint_end), keeping or discarding its
     * writes. It must not begin, commit or roll back the transaction. */
    void (*run)(void *ctx);
    /* On the writer thread, after the batch ended; the item may be freed from here on. */
    void (*done)(void *ctx, enum group_commit_outcome outcome);
    void *ctx;
    struct group_commit_item *next; /* the queue's */
};

struct group_commit_stats {
    uint64_t items;    /* items run */
    uint64_t batches;  /* transactions committed or attempted */
    uint64_t largest;  /* items in the largest batch */
};

/* Starts the writer thread (after storage_open). 0 / -1. */
int group_commit_start(void);
/* Queues an item (the caller keeps it alive until done). Before start or after stop, the item
 * is run at once on the calling thread as a batch of one, so nothing is ever dropped. */
void group_commit_submit(struct group_commit_item *it);
/* Runs what is queued, stops the thread and logs the totals. */
void group_commit_stop(void);
struct group_commit_stats group_commit_stats(void);

#endif
