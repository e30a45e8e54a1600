/* Group commit: the one path every write request takes (runtime/group_commit.c).
 *
 * A request thread hands its write over (group_commit_submit) and goes on serving other
 * connections. One writer thread takes everything queued and runs it in one transaction,
 * committed once. A syncer thread fsyncs the WAL - one fsync for every batch committed since
 * its last one - and only then tells each item how it ended: a 2xx still means durable, as
 * with synchronous=FULL. The writer does not wait for that fsync: it runs the next batch
 * meanwhile, so the disk's flush and the CPU's work overlap, and keeps that batch open for
 * what arrives until the fsync returns (a commit before then would only wait for the next
 * one, and small commits cost more per request). So the batch grows with the load, and a lone
 * request waits for nothing but its own fsync.
 *
 * The price of not waiting: a commit is visible to other connections before it is durable.
 * Whatever shows or acts on what it read therefore waits until that is durable too: a read
 * answers only once group_commit_durable(group_commit_visible()) - the latest commit it could
 * have seen - holds (server.c), and a background job acts outside the database (a rail, SMTP)
 * only once what its round read is durable (the job runner waits: runtime/job_runner.h). A crash of the machine can then lose only commits that no
 * one was told of. If the fsync fails, the process stops (abort) rather than acknowledge
 * anything: the commits cannot be taken back, and a restart finds what reached the disk.
 *
 * That wait would hold nearly every read made while writes flow, so while reads arrive
 * (group_commit_note_read) the writer does not defer: it syncs each commit inside its COMMIT,
 * before SQLite publishes it, and numbers it only then, durable and visible at once. Reads
 * then wait for nothing, and the writes still group: what arrives during one commit's fsync
 * forms the next batch. The fsync is deferred again once no read came for a moment.
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
    /* Once the batch ended and, committed, is durable: on the writer thread, or on the
     * syncer's after the fsync that covers it. The item may be freed from here on. */
    void (*done)(void *ctx, enum group_commit_outcome outcome);
    void *ctx;
    /* Without the writer (PostgreSQL): the item's transaction queues behind others of the
       same key (storage_begin_serial; the workspace whose audit chain it extends). */
    const char *serial_key;
    struct group_commit_item *next;    /* the queue's */
    enum group_commit_outcome outcome; /* the syncer's: how its batch ended */
    uint64_t seq;                      /* the syncer's: the commit it waits for */
};

struct group_commit_stats {
    uint64_t items;    /* items run */
    uint64_t batches;  /* transactions committed or attempted */
    uint64_t largest;  /* items in the largest batch */
    uint64_t reruns;   /* batches run again in savepoints (an item needed its writes undone) */
    uint64_t syncs;    /* fsyncs by the syncer, each covering every batch committed before it */
    uint64_t synced;   /* transactions synced inside their COMMIT, reads running beside */
};

/* Starts the syncer and writer threads (after storage_open). 0 / -1. */
int group_commit_start(void);
/* Queues an item (the caller keeps it alive until done). Before start or after stop, the item
 * is run at once on the calling thread as a batch of one, so nothing is ever dropped. */
void group_commit_submit(struct group_commit_item *it);
/* Runs what is queued, syncs it, stops the threads and logs the totals. */
void group_commit_stop(void);
struct group_commit_stats group_commit_stats(void);

/* A request answered from reads of the database (not a write). While reads arrive, the writer
 * syncs each commit before it is visible, so that no read has to wait (group_commit.c). */
void group_commit_note_read(void);
/* The number of the writer's latest commit that another connection may have seen. Read it
 * after reading the database: what the reads saw is durable once group_commit_durable of it. */
uint64_t group_commit_visible(void);
bool group_commit_durable(uint64_t seq);
/* Blocks until commit seq is durable (for threads that may block). */
void group_commit_wait_durable(uint64_t seq);
/* For threads that must not block: false when seq is durable already; else true, and it->done
 * is called (outcome COMMITTED, on the syncer thread) once it is. it->run is not used. */
bool group_commit_after_durable(uint64_t seq, struct group_commit_item *it);

#endif
