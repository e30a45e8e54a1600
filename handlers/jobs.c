#include "handlers/jobs.h"

#include "handlers/payments.h"

size_t handlers_jobs(const struct config *c, struct job *out)
{
    size_t n = 0;
    out[n++] = payments_settlement_job(c);
    return n;
}
