#include "handlers/jobs.h"

#include "handlers/accounts_oauth.h"
#include "handlers/payments.h"

size_t handlers_jobs(const struct config *c, struct job *out)
{
    size_t n = 0;
    out[n++] = payments_settlement_job(c);
    out[n++] = accounts_oauth_purge_job();
    return n;
}
