/* The handlers' background jobs, the one list runtime/main.c starts after the server and stops
 * before it closes storage. A new job is added here. */
#ifndef HANDLERS_JOBS_H
#define HANDLERS_JOBS_H

#include <stddef.h>

#include "runtime/config.h"
#include "runtime/job_runner.h"

/* Fills out (JOB_RUNNER_MAX entries) with every job, configured from c; their number. */
size_t handlers_jobs(const struct config *c, struct job *out);

#endif
