/* Background jobs: work the handlers do without a client (the settlement worker moving
 * approved payments along). Each job has its own thread and database connection; it runs one
 * round every period, again at once while a round finds a full batch, and stop wakes it at
 * once and waits for the round in progress to finish (a round is one or more committed
 * transactions, so stopping between rounds loses nothing). */
#ifndef RUNTIME_JOB_RUNNER_H
#define RUNTIME_JOB_RUNNER_H

#include <stddef.h>

#define JOB_RUNNER_MAX 8

struct job {
    const char *name;
    /* One round: how many items it handled (>= batch: run again at once), -1 on failure
     * (logged by the job, tried again next period). */
    int (*run)(void);
    int batch;
    int period_ms;
};

/* Starts one thread per job (storage must be open). 0 / -1 (then none runs). */
int job_runner_start(const struct job *jobs, size_t n);
/* Stops them all and joins their threads. */
void job_runner_stop(void);

#endif
