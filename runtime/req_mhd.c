/* The request accessors that read libmicrohttpd's connection (declared in runtime/req.h), kept
 * apart from runtime/req.c so code without a connection (fuzz targets) links with doubles. */
#include <microhttpd.h>
#include <strings.h>

#include "runtime/format.h"
#include "runtime/req.h"

const char *req_header(const struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *req_query(const struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct query_values {
    const char *name;
    const char **out;
    size_t max, count;
};

static enum MHD_Result collect_value(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct query_values *q = cls;
    (void)kind;
    if (key && strcasecmp(key, q->name) == 0) { /* as MHD_lookup_connection_value */
        if (q->count < q->max)
            q->out[q->count] = value ? value : "";
        q->count++;
    }
    return MHD_YES;
}

size_t req_query_values(const struct req *r, const char *name, const char **out, size_t max)
{
    struct query_values q = {name, out, max, 0};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_value, &q);
    return q.count;
}

struct link_query {
    struct arena *a;
    const char *q; /* "?a=1&b=2" so far, "" before the first */
};

static enum MHD_Result add_argument(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    struct link_query *lq = cls;
    (void)kind;
    if (key && strcasecmp(key, "cursor") != 0) /* the next page's cursor replaces it */
        lq->q = arena_printf(lq->a, "%s%c%s=%s", lq->q, *lq->q ? '&' : '?',
                             format_uri_component(lq->a, key),
                             format_uri_component(lq->a, value ? value : ""));
    return MHD_YES;
}

const char *req_next_link(struct req *r, const char *cursor)
{
    struct link_query lq = {&r->arena, ""};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_argument, &lq);
    return arena_printf(&r->arena, "<%s%s%ccursor=%s>; rel=\"next\"", r->path, lq.q,
                        *lq.q ? '&' : '?', format_uri_component(&r->arena, cursor));
}

const char *req_cookie(const struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name);
}
