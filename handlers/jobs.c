#include "handlers/jobs.h"

#include "handlers/accounts_oauth.h"
#include "handlers/conversions.h"
#include "handlers/payments.h"
#include "runtime/job_runner.h"

int handlers_jobs(const struct config *c)
{
    const struct job jobs[] = {
        payments_settlement_job(c),
        accounts_oauth_purge_job(),
        conversions_settlement_job(c),
    };
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
        if (job_runner_add(&jobs[i]) != 0)
            return -1;
    return 0;
}
