/* Problem documents (RFC 9457): titles are fixed per code, `status` always equals the HTTP
 * status, and no detail ever carries SQL, paths or stack traces (callers write them). */
#include "runtime/problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/html.h"
#include "runtime/jsonw.h"

#define PROBLEM_TYPE_PREFIX "urn:treasury:problem:"

/* problem_register's, for the process's life. */
static const struct problem_code *api_titles;
static size_t api_count;

void problem_register(const struct problem_code *codes, size_t n)
{
    api_titles = codes;
    api_count = n;
}

const char *problem_reason(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return status >= 500 ? "Server Error" : "Client Error";
    }
}

const char *problem_title(const char *code, int status)
{
    for (size_t i = 0; i < api_count; i++)
        if (strcmp(api_titles[i].code, code) == 0)
            return api_titles[i].title;
    return problem_reason(status);
}

bool problem_declared(const char *code)
{
    for (size_t i = 0; i < api_count; i++)
        if (strcmp(api_titles[i].code, code) == 0)
            return true;
    return api_count == 0; /* nothing registered (unit tests): nothing to hold it to */
}

char *problem_render(int status, const char *code, const char *detail, const char *instance,
                     const char *request_id, const struct verr_list *errors, size_t *len)
{
    return problem_render_with(status, code, detail, instance, request_id, errors, NULL, NULL,
                               len);
}

char *problem_render_with(int status, const char *code, const char *detail, const char *instance,
                          const char *request_id, const struct verr_list *errors,
                          const char *member, const char *member_json, size_t *len)
{
    struct jsonw w;
    char type[128];
    snprintf(type, sizeof type, PROBLEM_TYPE_PREFIX "%s", code);
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "type");
    jsonw_string(&w, type);
    jsonw_key(&w, "title");
    jsonw_string(&w, problem_title(code, status));
    jsonw_key(&w, "status");
    jsonw_int(&w, status);
    jsonw_key(&w, "detail");
    jsonw_string(&w, detail ? detail : problem_title(code, status));
    jsonw_key(&w, "instance");
    jsonw_string(&w, instance ? instance : "/");
    jsonw_key(&w, "code");
    jsonw_string(&w, code);
    jsonw_key(&w, "request_id");
    jsonw_string(&w, request_id ? request_id : "");
    if (errors && errors->count > 0) {
        jsonw_key(&w, "errors");
        jsonw_array_begin(&w);
        for (int i = 0; i < errors->count; i++) {
            jsonw_object_begin(&w);
            jsonw_key(&w, "pointer");
            jsonw_string(&w, errors->items[i].pointer);
            jsonw_key(&w, "code");
            jsonw_string(&w, errors->items[i].code);
            jsonw_key(&w, "detail");
            jsonw_string(&w, errors->items[i].detail);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    if (member && member_json) {
        jsonw_key(&w, member);
        jsonw_raw_value(&w, member_json, strlen(member_json));
    }
    jsonw_object_end(&w);
    return jsonw_take(&w, len);
}

char *problem_render_html(struct arena *a, int status, const char *code, const char *detail,
                          const char *request_id, const struct verr_list *errors, size_t *len)
{
    const char *title = problem_title(code, status);
    char *list = "";
    for (int i = 0; errors && i < errors->count; i++)
        list = arena_printf(a, "%s<li><code>%s</code> %s</li>", list,
                            html_escape(a, errors->items[i].pointer),
                            html_escape(a, errors->items[i].detail));
    char *body = arena_printf(
        a,
        "<div class=\"card\" id=\"error\" data-code=\"%s\"><h1>%s</h1><p>%s</p>%s%s%s"
        "<p class=\"muted\">Nothing was changed. Go back to the application you came from "
        "and start again. Reference: <code>%s</code></p></div>",
        html_escape(a, code), html_escape(a, title), html_escape(a, detail ? detail : title),
        *list ? "<ul class=\"muted\">" : "", list, *list ? "</ul>" : "",
        html_escape(a, request_id ? request_id : "-"));
    char *page = html_page(a, title, body);
    *len = strlen(page);
    return strdup(page);
}
