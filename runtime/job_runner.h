/* The job runner: runs the background jobs, work done without a client (the settlement worker
 * moving approved payments along, the mail outbox, purges). What the jobs are is not the
 * runtime's business: handlers/jobs.c adds the handlers' jobs, runtime/main.c the mail job.
 * Each job has its own thread and database connection; it runs one round every period, again
 * at once while a round finds a full batch, and stop wakes it at once and waits for the round
 * in progress to finish (a round is one or more committed transactions, so stopping between
 * rounds loses nothing).
 *
 * A round has two parts, so that no job can act on what a crash could still take back. A
 * commit is visible before it is durable (runtime/group_commit.h): a job that read a payment
 * approved a moment ago and told a rail at once could have sent money for an approval the
 * machine then loses. So run does the round's database work only (reads what is due, may
 * write), and act, if the job has one, does what reaches outside the database (a rail, an SMTP
 * relay) on what run found; between the two the runner waits until every commit run could
 * have read is durable. A job therefore never waits for durability itself, and cannot forget
 * to. */
#ifndef RUNTIME_JOB_RUNNER_H
#define RUNTIME_JOB_RUNNER_H

#include <stddef.h>

struct job {
    const char *name;
    /* One round's database work, nothing outside the database: how many items it found or
     * handled (>= batch: another round at once), -1 on failure (logged by the job, tried
     * again next period). What it found for act it keeps in the job's own state (one thread
     * runs a job's rounds, one at a time). */
    int (*run)(void);
    /* What the round does outside the database with what run found (NULL: nothing). Called
     * only after run found items (> 0), once every commit run could have read is durable;
     * always then, stopping or not, so it can release what run kept. 0 / -1 (the round
     * fails). */
    int (*act)(void);
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
