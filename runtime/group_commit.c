/* Group commit (see group_commit.h): a FIFO queue of write items, the one writer thread that
 * runs them in batches, one transaction per batch, and the syncer thread that fsyncs what the
 * writer committed and only then tells the items, and the reads waiting on it, how it ended. */
#include "runtime/group_commit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "runtime/log.h"
#include "runtime/storage.h"

/* Bounds one transaction (and so the wait of its last item); under load the queue refills
 * while a batch runs, so this only caps how much one commit carries. */
#define MAX_BATCH 128

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct group_commit_item *head, *tail;
static pthread_t writer;
static bool running, stopping;
static struct group_commit_stats stats;

/* The syncer's side, under sync_mu. The writer numbers its commits: visible is the number of
 * the latest commit other connections may see (raised before its COMMIT), durable the latest
 * one fsynced. Items of committed batches wait in unsynced, in commit order, for the fsync
 * that covers them; waiters are reads (group_commit_after_durable) waiting for a number. */
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cv = PTHREAD_COND_INITIALIZER;    /* work for the syncer */
static pthread_cond_t durable_cv = PTHREAD_COND_INITIALIZER; /* durable moved */
static struct group_commit_item *unsynced, *unsynced_tail, *waiters;
static uint64_t unsynced_seq; /* the number of the latest commit in unsynced */
static void *wal;             /* the writer's WAL, once a sync of it was deferred */
static bool must_sync;        /* a commit in unsynced deferred its fsync */
static pthread_t syncer;
static bool syncing, sync_stopping;
static uint64_t syncs;
static atomic_uint_fast64_t visible, durable;
static atomic_bool sync_busy; /* the syncer's fsync is running */

/* Reads beside the writes (group_commit_note_read). While one arrived within the last
 * READS_WINDOW_MS, the writer syncs each commit inside its COMMIT, before SQLite publishes it,
 * as SQLite does by itself: then nothing is visible before it is durable and no read waits,
 * where a deferred fsync would hold every read made meanwhile. Without reads, the fsync is
 * deferred and overlaps the next batch. Measured with POSTs on 16 connections beside reads on
 * 16 more (make bench): deferred, the reads waited and were served half as often (8.8-10.5k/s
 * against 18.6-19.7k/s synced in the commit, p99 4.6-7.5 ms against 2.7-2.9) for about a
 * quarter more POSTs (3.6-4.0k/s against 3.0-3.1k). */
#define READS_WINDOW_MS 100
static atomic_int_fast64_t last_read_ms = INT64_MIN / 2;

static int64_t monotonic_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void group_commit_note_read(void)
{
    int64_t now = monotonic_ms();
    if (atomic_load_explicit(&last_read_ms, memory_order_relaxed) != now)
        atomic_store_explicit(&last_read_ms, now, memory_order_relaxed);
}

static bool reads_beside(void)
{
    return monotonic_ms() - atomic_load_explicit(&last_read_ms, memory_order_relaxed) <
           READS_WINDOW_MS;
}

static void finish(struct group_commit_item *from, struct group_commit_item *to,
                   enum group_commit_outcome outcome)
{
    while (from != to) {
        struct group_commit_item *next = from->next;
        from->done(from->ctx, outcome); /* may free the item */
        from = next;
    }
}

/* Under sync_mu: takes the waiting reads that commit seq being durable releases, in order. */
static struct group_commit_item *take_waiters(uint64_t seq)
{
    struct group_commit_item *ready = NULL, **keep = &waiters, **add = &ready;
    while (*keep) {
        struct group_commit_item *it = *keep;
        if (it->seq <= seq) {
            *keep = it->next;
            it->next = NULL;
            *add = it;
            add = &it->next;
        } else {
            keep = &it->next;
        }
    }
    return ready;
}

/* Durable as soon as visible: a commit synced inside its COMMIT gets its number only now,
 * after SQLite published it, and so does every commit before it, whose frames the same fsync
 * of the WAL wrote out (the syncer, still at an older one, never lowers durable); the reads
 * waiting for those are released. */
static uint64_t number_synced_commit(void)
{
    pthread_mutex_lock(&sync_mu);
    uint64_t seq = atomic_load(&visible) + 1;
    atomic_store(&durable, seq);
    atomic_store(&visible, seq);
    struct group_commit_item *ready = take_waiters(seq);
    pthread_cond_broadcast(&durable_cv);
    pthread_mutex_unlock(&sync_mu);
    finish(ready, NULL, GROUP_COMMIT_COMMITTED);
    return seq;
}

/* The commits are visible and cannot be taken back, and their answers were not sent. Stopping
 * is the only honest way out: after a restart the database holds what reached the disk, which
 * every acknowledged write did. */
static _Noreturn void fsync_failed(void)
{
    log_error("group commit: fsync of the WAL failed (%s); stopping before anything not "
              "durable is acknowledged", strerror(errno));
    abort();
}

/* The items [from, to) ran in the transaction numbered seq, which ended with outcome (its
 * commit's fsync deferred when w is set): told once everything up to seq is durable. Without
 * the syncer (before start, after stop) the commit was synced: told at once. */
static void hand_to_syncer(struct group_commit_item *from, struct group_commit_item *to,
                           enum group_commit_outcome outcome, uint64_t seq, void *w)
{
    if (from == to)
        return;
    pthread_mutex_lock(&sync_mu);
    if (!syncing) { /* not reached: the syncer outlives the writer */
        pthread_mutex_unlock(&sync_mu);
        if (w && storage_sync(w) != 0)
            fsync_failed();
        finish(from, to, outcome);
        return;
    }
    for (struct group_commit_item *it = from; it != to; it = it->next)
        it->outcome = outcome;
    struct group_commit_item *last = from;
    while (last->next != to)
        last = last->next;
    last->next = NULL;
    if (unsynced_tail)
        unsynced_tail->next = from;
    else
        unsynced = from;
    unsynced_tail = last;
    if (seq > unsynced_seq)
        unsynced_seq = seq;
    if (w) {
        wal = w;
        must_sync = true;
    }
    pthread_cond_signal(&sync_cv);
    pthread_mutex_unlock(&sync_mu);
}

#ifdef TREASURY_TEST_HOOKS
/* Test builds: while the file named by TREASURY_TEST_HOLD_SYNC exists, the syncer's fsync does
 * not return (a slow disk); while the one named by TREASURY_TEST_FAIL_SYNC exists, it fails
 * with EIO. */
static bool test_file(const char *var)
{
    const char *path = getenv(var);
    return path && *path && access(path, F_OK) == 0;
}

static int sync_wal(void *w)
{
    while (test_file("TREASURY_TEST_HOLD_SYNC"))
        usleep(10 * 1000);
    if (w && test_file("TREASURY_TEST_FAIL_SYNC")) {
        errno = EIO;
        return -1;
    }
    return w ? storage_sync(w) : 0;
}
#else
static int sync_wal(void *w)
{
    return w ? storage_sync(w) : 0;
}
#endif

static void *syncer_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-syncer");
    pthread_mutex_lock(&sync_mu);
    for (;;) {
        while (!unsynced && !sync_stopping)
            pthread_cond_wait(&sync_cv, &sync_mu);
        if (!unsynced)
            break;
        struct group_commit_item *list = unsynced;
        uint64_t seq = unsynced_seq;
        void *w = must_sync ? wal : NULL;
        unsynced = unsynced_tail = NULL;
        must_sync = false;
        atomic_store(&sync_busy, w != NULL);
        pthread_mutex_unlock(&sync_mu);
        if (sync_wal(w) != 0)
            fsync_failed();
        if (w) { /* the writer may commit what it gathered meanwhile */
            atomic_store(&sync_busy, false);
            pthread_mutex_lock(&mu);
            pthread_cond_signal(&cv);
            pthread_mutex_unlock(&mu);
        }
        pthread_mutex_lock(&sync_mu);
        if (seq > atomic_load(&durable)) /* a commit synced in itself may be ahead */
            atomic_store(&durable, seq);
        if (w)
            syncs++;
        struct group_commit_item *ready = take_waiters(seq);
        pthread_cond_broadcast(&durable_cv);
        pthread_mutex_unlock(&sync_mu);
        while (list) {
            struct group_commit_item *next = list->next;
            list->done(list->ctx, list->outcome); /* may free the item */
            list = next;
        }
        finish(ready, NULL, GROUP_COMMIT_COMMITTED);
        pthread_mutex_lock(&sync_mu);
    }
    pthread_mutex_unlock(&sync_mu);
    return NULL;
}

/* Under mu: takes queued items off the head, in order, while the batch holds fewer than
 * MAX_BATCH (*size counts it); NULL when there are none or the batch is full. */
static struct group_commit_item *take_queued(uint64_t *size)
{
    if (!head || *size >= MAX_BATCH)
        return NULL;
    struct group_commit_item *list = head, *last = head;
    (*size)++;
    while (last->next && *size < MAX_BATCH) {
        last = last->next;
        (*size)++;
    }
    head = last->next;
    if (!head)
        tail = NULL;
    last->next = NULL;
    return list;
}

/* The writer's open transaction has run its last item. While the syncer's fsync runs, a commit
 * now would only wait for the next one, so the batch takes in what arrives meanwhile (up to
 * MAX_BATCH): the next fsync then covers one larger commit instead of several small ones,
 * which cost more per request. Not while reads run beside: a commit synced in itself waits for
 * no other fsync. Returns the items to run next, NULL to commit now. */
static struct group_commit_item *more_while_syncing(uint64_t *size)
{
    pthread_mutex_lock(&mu);
    while (!head && !stopping && atomic_load(&sync_busy) && *size < MAX_BATCH)
        pthread_cond_wait(&cv, &mu);
    struct group_commit_item *more = NULL;
    if (!stopping && atomic_load(&sync_busy))
        more = take_queued(size);
    pthread_mutex_unlock(&mu);
    return more;
}

/* Runs a list in as few transactions as it takes: normally one. When SQLite rolls the whole
 * transaction back under an item (an I/O or disk-full error), the items since BEGIN are lost
 * and the rest go on in a new transaction. When an unguarded item needs its writes undone,
 * the transaction is rolled back and the list runs again, every item in a savepoint. On the
 * writer thread (defer) the commit leaves its fsync to the syncer, unless reads run beside
 * (reads_beside: then it syncs in itself and its items are told at once); elsewhere it syncs. */
static void run_batch(struct group_commit_item *list, bool defer)
{
    bool guarded = false;
    uint64_t size = 0; /* items in list, for MAX_BATCH */
    for (struct group_commit_item *it = list; it; it = it->next)
        size++;
    while (list) {
        if (storage_begin(true) != 0) {
            finish(list, NULL, GROUP_COMMIT_NOT_RUN);
            return;
        }
        struct group_commit_item *it = list;
        uint64_t ran = 0, seq = 0;
        bool lost = false, again = false;
        void *w = NULL;
        for (; it; it = it->next) {
            again = it->run(it->ctx, guarded) && !guarded;
            ran++;
            if (defer && !again && !it->next && !reads_beside())
                it->next = more_while_syncing(&size);
            if (!storage_in_tx()) {
                log_error("group commit: the transaction was rolled back under a request; "
                          "%llu request(s) of this batch fail", (unsigned long long)ran);
                storage_rollback(); /* nothing left to roll back: gives the write lock back */
                lost = true;
                seq = atomic_load(&visible); /* they may have read what is not yet durable */
                again = false;
                it = it->next;
                break;
            }
            if (again)
                break;
        }
        if (again) {
            storage_rollback();
            guarded = true;
            pthread_mutex_lock(&mu);
            stats.reruns++;
            pthread_mutex_unlock(&mu);
            continue;
        }
        bool synced = false;
        if (!lost && defer && reads_beside()) {
            synced = true;
            if (storage_commit() == 0) {
                seq = number_synced_commit();
            } else {
                lost = true;
                seq = atomic_load(&visible); /* they may have read what is not yet durable */
            }
        } else if (!lost && defer) {
            /* Numbered before COMMIT: a read that can see the commit sees its number too. */
            seq = atomic_fetch_add(&visible, 1) + 1;
            if (storage_commit_unsynced(&w) != 0)
                lost = true;
        } else if (!lost && storage_commit() != 0) {
            lost = true;
        }
        pthread_mutex_lock(&mu);
        stats.items += ran;
        stats.batches++;
        if (synced)
            stats.synced++;
        if (ran > stats.largest)
            stats.largest = ran;
        pthread_mutex_unlock(&mu);
        for (struct group_commit_item *x = list; x != it; x = x->next)
            size--;
        struct group_commit_item *rest = it;
        if (synced && !lost)
            finish(list, rest, GROUP_COMMIT_COMMITTED); /* durable already */
        else if (defer)
            hand_to_syncer(list, rest, lost ? GROUP_COMMIT_LOST : GROUP_COMMIT_COMMITTED, seq, w);
        else
            finish(list, rest, lost ? GROUP_COMMIT_LOST : GROUP_COMMIT_COMMITTED);
        list = rest;
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-writer");
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head && !stopping)
            pthread_cond_wait(&cv, &mu);
        if (!head)
            break;
        uint64_t n = 0;
        struct group_commit_item *list = take_queued(&n);
        pthread_mutex_unlock(&mu);
        run_batch(list, true);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void stop_syncer(void);

int group_commit_start(void)
{
    pthread_mutex_lock(&sync_mu);
    sync_stopping = false;
    int rc = pthread_create(&syncer, NULL, syncer_main, NULL);
    syncing = rc == 0;
    pthread_mutex_unlock(&sync_mu);
    if (rc != 0) {
        log_error("group commit: cannot start the syncer thread");
        return -1;
    }
    pthread_mutex_lock(&mu);
    stopping = false;
    rc = pthread_create(&writer, NULL, writer_main, NULL);
    running = rc == 0;
    pthread_mutex_unlock(&mu);
    if (rc != 0) {
        log_error("group commit: cannot start the writer thread");
        stop_syncer();
        return -1;
    }
    return 0;
}

/* How often an item alone is run again when its transaction met a concurrent one. */
#define ALONE_RUNS 8

/* On an engine without the group-commit writer (PostgreSQL takes writes on every connection
 * and groups their flushes itself): the item in a transaction of its own on the calling
 * thread, in a savepoint as a guarded item is, run again while the commit fails on a conflict
 * with a concurrent transaction (run() starts each run from a clean state). */
static void run_alone(struct group_commit_item *it)
{
    for (int run = 1;; run++) {
        if (storage_begin_serial(true, it->serial_key) != 0) {
            it->done(it->ctx, GROUP_COMMIT_NOT_RUN);
            return;
        }
        it->run(it->ctx, true);
        if (storage_commit() == 0) {
            it->done(it->ctx, GROUP_COMMIT_COMMITTED);
            return;
        }
        if (!storage_should_retry() || run == ALONE_RUNS) {
            it->done(it->ctx, GROUP_COMMIT_LOST);
            return;
        }
    }
}

void group_commit_submit(struct group_commit_item *it)
{
    it->next = NULL;
    if (!storage_batches_writes()) {
        run_alone(it);
        return;
    }
    pthread_mutex_lock(&mu);
    if (!running || stopping) {
        pthread_mutex_unlock(&mu);
        run_batch(it, false);
        return;
    }
    if (tail)
        tail->next = it;
    else
        head = it;
    tail = it;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

/* After the writer: what it committed last is synced and told first. */
static void stop_syncer(void)
{
    pthread_mutex_lock(&sync_mu);
    if (!syncing) {
        pthread_mutex_unlock(&sync_mu);
        return;
    }
    sync_stopping = true;
    pthread_cond_signal(&sync_cv);
    pthread_mutex_unlock(&sync_mu);
    pthread_join(syncer, NULL);
    pthread_mutex_lock(&sync_mu);
    syncing = false;
    struct group_commit_item *left = waiters; /* none: every number was synced */
    waiters = NULL;
    pthread_cond_broadcast(&durable_cv);
    pthread_mutex_unlock(&sync_mu);
    finish(left, NULL, GROUP_COMMIT_COMMITTED);
}

void group_commit_stop(void)
{
    pthread_mutex_lock(&mu);
    if (!running) {
        pthread_mutex_unlock(&mu);
        stop_syncer();
        return;
    }
    stopping = true;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(writer, NULL);
    pthread_mutex_lock(&mu);
    running = false;
    pthread_mutex_unlock(&mu);
    stop_syncer();
    struct group_commit_stats s = group_commit_stats();
    log_info("group commit: %llu write request(s) in %llu transaction(s), largest %llu, "
             "%llu run again in savepoints, %llu fsync(s), %llu synced in their commit",
             (unsigned long long)s.items, (unsigned long long)s.batches,
             (unsigned long long)s.largest, (unsigned long long)s.reruns,
             (unsigned long long)s.syncs, (unsigned long long)s.synced);
}

struct group_commit_stats group_commit_stats(void)
{
    pthread_mutex_lock(&mu);
    struct group_commit_stats s = stats;
    pthread_mutex_unlock(&mu);
    pthread_mutex_lock(&sync_mu);
    s.syncs = syncs;
    pthread_mutex_unlock(&sync_mu);
    return s;
}

uint64_t group_commit_visible(void)
{
    return atomic_load(&visible);
}

bool group_commit_durable(uint64_t seq)
{
    return atomic_load(&durable) >= seq;
}

void group_commit_wait_durable(uint64_t seq)
{
    if (group_commit_durable(seq))
        return;
    pthread_mutex_lock(&sync_mu);
    while (syncing && atomic_load(&durable) < seq)
        pthread_cond_wait(&durable_cv, &sync_mu);
    pthread_mutex_unlock(&sync_mu);
}

bool group_commit_after_durable(uint64_t seq, struct group_commit_item *it)
{
    pthread_mutex_lock(&sync_mu);
    if (!syncing || atomic_load(&durable) >= seq) {
        pthread_mutex_unlock(&sync_mu);
        return false;
    }
    it->seq = seq;
    it->next = waiters;
    waiters = it;
    pthread_mutex_unlock(&sync_mu);
    return true;
}
