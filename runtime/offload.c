/* Offload pools (see offload.h): per lane a FIFO queue and the threads offload_start asked
 * for taking from it. */
#include "runtime/offload.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "runtime/log.h"

#define LANE_THREADS_MAX 64

/* The items of one key: how many hold threads, and those waiting their turn. */
struct keyed {
    char key[OFFLOAD_KEY_MAX + 1];
    int running;
    struct offload_item *head, *tail;
    struct keyed *next;
};

struct lane {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct offload_item *head, *tail;
    struct keyed *keys; /* the keys with items running or waiting (few: a list) */
    pthread_t threads[LANE_THREADS_MAX];
    int started;
    bool stopping;
    const char *name; /* the threads' name */
};

static struct lane lanes[OFFLOAD_LANES] = {
    [OFFLOAD_HASHING] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, .name = "tr-offload"},
    [OFFLOAD_WRITES] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, .name = "tr-write"},
};

static void append(struct offload_item **head, struct offload_item **tail,
                   struct offload_item *it)
{
    it->next = NULL;
    if (*tail)
        (*tail)->next = it;
    else
        *head = it;
    *tail = it;
}

static struct keyed *find_key(struct lane *l, const char *key)
{
    for (struct keyed *k = l->keys; k; k = k->next) {
        if (strcmp(k->key, key) == 0)
            return k;
    }
    return NULL;
}

/* Under l->mu: an item of key k ended; the next of its waiting ones takes its place. */
static void key_done(struct lane *l, const char *key)
{
    struct keyed **p = &l->keys;
    while (*p && strcmp((*p)->key, key) != 0)
        p = &(*p)->next;
    struct keyed *k = *p;
    if (!k)
        return;
    if (k->head) {
        struct offload_item *next = k->head;
        k->head = next->next;
        if (!k->head)
            k->tail = NULL;
        append(&l->head, &l->tail, next);
        pthread_cond_signal(&l->cv);
        return;
    }
    if (--k->running == 0) {
        *p = k->next;
        free(k);
    }
}

static void *worker(void *arg)
{
    struct lane *l = arg;
    prctl(PR_SET_NAME, l->name);
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->head && !l->stopping)
            pthread_cond_wait(&l->cv, &l->mu);
        struct offload_item *it = l->head;
        if (!it)
            break; /* stopping, and nothing left */
        l->head = it->next;
        if (!l->head)
            l->tail = NULL;
        char key[OFFLOAD_KEY_MAX + 1] = ""; /* the item may be freed by its run */
        if (it->key)
            snprintf(key, sizeof key, "%s", it->key);
        pthread_mutex_unlock(&l->mu);
        it->run(it->ctx);
        pthread_mutex_lock(&l->mu);
        if (key[0])
            key_done(l, key);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static int lane_start(struct lane *l, int n)
{
    if (n > LANE_THREADS_MAX)
        n = LANE_THREADS_MAX;
    pthread_mutex_lock(&l->mu);
    l->stopping = false;
    for (l->started = 0; l->started < n; l->started++) {
        if (pthread_create(&l->threads[l->started], NULL, worker, l) != 0)
            break;
    }
    int got = l->started;
    pthread_mutex_unlock(&l->mu);
    return got == n ? 0 : -1;
}

int offload_start(int hashing_threads, int write_threads)
{
    if (lane_start(&lanes[OFFLOAD_HASHING], hashing_threads < 1 ? 1 : hashing_threads) != 0 ||
        lane_start(&lanes[OFFLOAD_WRITES], write_threads < 0 ? 0 : write_threads) != 0) {
        log_error("offload: cannot start its threads");
        offload_stop();
        return -1;
    }
    return 0;
}

void offload_submit(enum offload_lane lane, struct offload_item *it)
{
    struct lane *l = &lanes[lane];
    it->next = NULL;
    pthread_mutex_lock(&l->mu);
    if (!l->started || l->stopping) {
        pthread_mutex_unlock(&l->mu);
        it->run(it->ctx);
        return;
    }
    if (it->key && *it->key && strlen(it->key) <= OFFLOAD_KEY_MAX) {
        struct keyed *k = find_key(l, it->key);
        if (!k && (k = calloc(1, sizeof *k)) != NULL) {
            snprintf(k->key, sizeof k->key, "%s", it->key);
            k->next = l->keys;
            l->keys = k;
        }
        if (k && k->running >= OFFLOAD_PER_KEY) {
            append(&k->head, &k->tail, it);
            pthread_mutex_unlock(&l->mu);
            return;
        }
        if (k)
            k->running++;
        else
            it->key = NULL; /* out of memory: unkeyed, never lost */
    } else {
        it->key = NULL;
    }
    append(&l->head, &l->tail, it);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

struct offload_item *offload_take_queued(void)
{
    struct offload_item *all = NULL, **end = &all;
    for (int i = 0; i < OFFLOAD_LANES; i++) {
        struct lane *l = &lanes[i];
        pthread_mutex_lock(&l->mu);
        *end = l->head;
        if (l->tail)
            end = &l->tail->next;
        l->head = l->tail = NULL;
        /* and those waiting for their key's turn: their keys' counts stay with the items
         * still running, which give them back as they end */
        for (struct keyed *k = l->keys; k; k = k->next) {
            *end = k->head;
            if (k->tail)
                end = &k->tail->next;
            k->head = k->tail = NULL;
        }
        pthread_mutex_unlock(&l->mu);
    }
    return all;
}

void offload_stop(void)
{
    for (int i = 0; i < OFFLOAD_LANES; i++) {
        struct lane *l = &lanes[i];
        pthread_mutex_lock(&l->mu);
        int n = l->started;
        l->stopping = true;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        for (int k = 0; k < n; k++)
            pthread_join(l->threads[k], NULL);
        pthread_mutex_lock(&l->mu);
        l->started = 0;
        pthread_mutex_unlock(&l->mu);
    }
}
