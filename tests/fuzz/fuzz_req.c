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

const char *req_cookie(const struct req *r, const char *name)
{
    (void)r, (void)name;
    return param;
}
