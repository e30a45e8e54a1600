/* Group commit: the one path every write request takes (runtime/group_commit.c).
 *
 * A request thread hands its write over (group_commit_submit) and goes on serving other
 * connections. One writer thread takes everything queued, runs it in one transaction, commits
 * once - one fsync for the whole batch, synchronous=FULL - and only then tells each item how
 * it ended. Items that arrive while a batch commits form the next batch, so the batch grows
 * with the load and a lone request waits for nothing but its own fsync.
 *
 * Items first run unguarded: no savepoint each, which is cheaper, and almost every item either
 * keeps its writes or is refused before writing anything. When one needs writes of its own
 * undone (a failed statement after others succeeded, a refusal after writing), the writer rolls
 * the transaction back and runs the batch again from its start, each item now in a savepoint
 * of its own, so that item undoes only its own writes. An item may thus run twice; only the
 * last run's answer counts and nothing of the first was stored. */
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
    /* On the writer thread, inside the batch's open write transaction. Guarded: in a savepoint
     * of its own (storage_savepoint ... storage_savepoint_end), keeping or discarding its
     * writes; returns false. Unguarded (storage_unguarded_begin ... _end): returns true when
     * its writes must be undone, and is then run again, guarded, from a clean start (the
     * batch's transaction was rolled back). It must not begin, commit or roll back the
     * transaction. */
    bool (*run)(void *ctx, bool guarded);
    /* On the writer thread, after the batch ended; the item may be freed from here on. */
    void (*done)(void *ctx, enum group_commit_outcome outcome);
    void *ctx;
    struct group_commit_item *next; /* the queue's */
};

struct group_commit_stats {
    uint64_t items;    /* items run */
    uint64_t batches;  /* transactions committed or attempted */
    uint64_t largest;  /* items in the largest batch */
    uint64_t reruns;   /* batches run again in savepoints (an item needed its writes undone) */
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
