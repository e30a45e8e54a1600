#include "handlers/jobs.h"

#include "handlers/accounts_oauth.h"
#include "handlers/conversions.h"
#include "handlers/payments.h"
#include "handlers/rates_live.h"
#include "runtime/job_runner.h"

int handlers_jobs(const struct config *c)
{
    const struct job jobs[] = {
        payments_settlement_job(c),
        accounts_oauth_purge_job(),
        conversions_settlement_job(c),
        rates_live_prune_job(),
    };
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
        if (job_runner_add(&jobs[i]) != 0)
            return -1;
    /* the sandbox FX market, unless --fx-market-interval-ms 0 turned it off */
    if (c->fx_market_interval_ms > 0) {
        struct job market = rates_market_job(c);
        if (job_runner_add(&market) != 0)
            return -1;
    }
    return 0;
}
