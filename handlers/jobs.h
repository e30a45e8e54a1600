/* The handlers' background jobs, the one list runtime/main.c hands to the job runner
 * (runtime/job_runner.h) after the server started; the runner stops them before storage
 * closes. A new job is added in handlers/jobs.c. */
#ifndef HANDLERS_JOBS_H
#define HANDLERS_JOBS_H

#include "runtime/config.h"

/* Adds every job of the handlers, configured from c, to the job runner. 0 / -1. */
int handlers_jobs(const struct config *c);

#endif
