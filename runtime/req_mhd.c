/* The request accessors that read libmicrohttpd's connection (declared in runtime/req.h), kept
 * apart from runtime/req.c so code without a connection (fuzz targets) links with doubles. */
#include <microhttpd.h>

#include "runtime/req.h"

const char *req_header(const struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *req_query(const struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *req_cookie(const struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name);
}
