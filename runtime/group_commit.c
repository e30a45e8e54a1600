/* Group commit (see group_commit.h): a FIFO queue of write items and the one writer thread that
 * runs them in batches, one transaction and one fsync per batch. */
#include "runtime/group_commit.h"

#include <pthread.h>
#include <stddef.h>

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

static void finish(struct group_commit_item *from, struct group_commit_item *to,
                   enum group_commit_outcome outcome)
{
    while (from != to) {
        struct group_commit_item *next = from->next;
        from->done(from->ctx, outcome); /* may free the item */
        from = next;
    }
}

/* Runs a list in as few transactions as it takes: normally one. When SQLite rolls the whole
 * transaction back under an item (an I/O or disk-full error), the items since BEGIN are lost
 * and the rest go on in a new transaction. When an unguarded item needs its writes undone,
 * the transaction is rolled back and the list runs again, every item in a savepoint. */
static void run_batch(struct group_commit_item *list)
{
    bool guarded = false;
    while (list) {
        if (storage_begin(true) != 0) {
            finish(list, NULL, GROUP_COMMIT_NOT_RUN);
            return;
        }
        struct group_commit_item *it = list;
        uint64_t ran = 0;
        bool lost = false, again = false;
        for (; it; it = it->next) {
            again = it->run(it->ctx, guarded) && !guarded;
            ran++;
            if (!storage_in_tx()) {
                log_error("group commit: the transaction was rolled back under a request; "
                          "%llu request(s) of this batch fail", (unsigned long long)ran);
                storage_rollback(); /* nothing left to roll back: gives the write lock back */
                lost = true;
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
        if (!lost && storage_commit() != 0)
            lost = true;
        pthread_mutex_lock(&mu);
        stats.items += ran;
        stats.batches++;
        if (ran > stats.largest)
            stats.largest = ran;
        pthread_mutex_unlock(&mu);
        finish(list, it, lost ? GROUP_COMMIT_LOST : GROUP_COMMIT_COMMITTED);
        list = it;
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head && !stopping)
            pthread_cond_wait(&cv, &mu);
        if (!head)
            break;
        struct group_commit_item *list = head, *last = head;
        uint64_t n = 1;
        while (last->next && n < MAX_BATCH) {
            last = last->next;
            n++;
        }
        head = last->next;
        if (!head)
            tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&mu);
        run_batch(list);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int group_commit_start(void)
{
    pthread_mutex_lock(&mu);
    stopping = false;
    int rc = pthread_create(&writer, NULL, writer_main, NULL);
    running = rc == 0;
    pthread_mutex_unlock(&mu);
    if (rc != 0) {
        log_error("group commit: cannot start the writer thread");
        return -1;
    }
    return 0;
}

void group_commit_submit(struct group_commit_item *it)
{
    it->next = NULL;
    pthread_mutex_lock(&mu);
    if (!running || stopping) {
        pthread_mutex_unlock(&mu);
        run_batch(it);
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

void group_commit_stop(void)
{
    pthread_mutex_lock(&mu);
    if (!running) {
        pthread_mutex_unlock(&mu);
        return;
    }
    stopping = true;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(writer, NULL);
    pthread_mutex_lock(&mu);
    running = false;
    struct group_commit_stats s = stats;
    pthread_mutex_unlock(&mu);
    log_info("group commit: %llu write request(s) in %llu transaction(s), largest %llu, "
             "%llu run again in savepoints",
             (unsigned long long)s.items, (unsigned long long)s.batches,
             (unsigned long long)s.largest, (unsigned long long)s.reruns);
}

struct group_commit_stats group_commit_stats(void)
{
    pthread_mutex_lock(&mu);
    struct group_commit_stats s = stats;
    pthread_mutex_unlock(&mu);
    return s;
}
