#include "tests/fuzz/fuzz_req.h"

#include "runtime/req.h"

static const char *param;

void fuzz_req_set_param(const char *value)
{
    param = value;
}

const char *req_header(const struct req *r, const char *name)
{
    (void)r, (void)name;
    return param;
}

const char *req_query(const struct req *r, const char *name)
{
    (void)r, (void)name;
    return param;
}

size_t req_query_values(const struct req *r, const char *name, const char **out, size_t max)
{
    (void)r, (void)name;
    if (!param)
        return 0;
    if (max > 0)
        out[0] = param;
    return 1;
}

const char *req_cookie(const struct req *r, const char *name)
{
    (void)r, (void)name;
    return param;
}
