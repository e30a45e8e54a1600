/* A background job's round of items, each run as one step of the group-commit writer
 * (runtime/group_commit.h) on a row it claims: the settlement of a payment, of a conversion.
 * The job's run picks the due rows into steps (job_steps_add); its act hands them to the
 * writer and waits until each has ended (job_steps_run). Each step runs in a worker request
 * of its own (principal "system" of the row's workspace, the audit actor of every worker
 * step), in a savepoint or unguarded part of the writer's batch, started afresh when the
 * writer runs it twice; the row is claimed first (storage_claim), so that when two instances
 * pick the same row only the one holding it acts. What a job adds is its work on the row. */
#ifndef RUNTIME_JOB_STEPS_H
#define RUNTIME_JOB_STEPS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/group_commit.h"
#include "runtime/req.h"

struct job_steps;

/* One item of a round. id, ws, now and version are the job's (set by job_steps_add and the
 * job's pick); the rest is the runner's. Everything the work allocates lives in r's arena,
 * freed once the step ended. */
struct job_step {
    char id[40], ws[40];
    int64_t now;     /* when the round picked it (Unix ms) */
    int64_t version; /* the job's own use: the row's version when picked */
    struct req r;
    const char *moved; /* what the work changed, logged once committed (NULL: nothing) */
    bool ok;           /* the last run did its work (or found nothing to do) */
    struct group_commit_item item;
    struct job_steps *of;
};

struct job_steps {
    const char *name;  /* in the log: "settlement: <id> <moved>" */
    const char *table; /* the rows' table, whose `id` each step claims */
    /* The step's work, in the writer's transaction on the claimed row (st->r ready): 0 done
     * (st->moved says what changed), -1 failure (its writes are undone, the row stays due). */
    int (*work)(struct job_step *st);
    struct job_step *steps; /* the job's array of cap steps */
    int cap, n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
};
#define JOB_STEPS_INIT(name_, table_, work_, steps_, cap_)                                         \
    {.name = (name_), .table = (table_), .work = (work_), .steps = (steps_), .cap = (cap_),       \
     .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER}

/* Starts picking a round (none picked yet). */
void job_steps_reset(struct job_steps *s);
/* Picks the row id of workspace ws, due at now: its step (to set version on), NULL when the
 * round is full. */
struct job_step *job_steps_add(struct job_steps *s, const char *id, const char *ws, int64_t now);
/* Hands the round's steps to the writer and waits until each has ended. 0, or -1 when one
 * failed (it stays due). */
int job_steps_run(struct job_steps *s);

#endif
