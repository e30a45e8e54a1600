/* The job runner: runs the background jobs, work done without a client (the settlement worker
 * moving approved payments along, the mail outbox, purges). What the jobs are is not the
 * runtime's business: handlers/jobs.c adds the handlers' jobs, runtime/main.c the mail job.
 * Each job has its own thread and database connection; it runs one round every period, again
 * at once while a round finds a full batch, and stop wakes it at once and waits for the round
 * in progress to finish (a round is one or more committed transactions, so stopping between
 * rounds loses nothing). */
#ifndef RUNTIME_JOB_RUNNER_H
#define RUNTIME_JOB_RUNNER_H

#include <stddef.h>

struct job {
    const char *name;
    /* One round: how many items it handled (>= batch: run again at once), -1 on failure
     * (logged by the job, tried again next period). */
    int (*run)(void);
    int batch;
    int period_ms;
};

/* Adds a job (copied; name must outlive the runner) to those job_runner_start starts. As many
 * as the caller likes: the list grows. Before start only. 0 / -1 (out of memory, or started). */
int job_runner_add(const struct job *j);
/* Starts one thread per job added (storage must be open). 0 / -1 (then none runs, and the
 * jobs are forgotten as by job_runner_stop). */
int job_runner_start(void);
/* Stops them all, joins their threads and forgets the jobs (a later start needs them added
 * again). */
void job_runner_stop(void);

#endif
