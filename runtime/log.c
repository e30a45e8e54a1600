/* Structured logging to stderr: JSON lines (default) or text, one write(2) per line. */
#include "runtime/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/format.h"
#include "runtime/jsonw.h"

static enum log_format log_fmt = LOG_FORMAT_JSON;

void log_init(enum log_format f)
{
    log_fmt = f;
}

static void emit(char *line, size_t len)
{
    /* One write so lines from different threads never interleave. */
    line[len] = '\n';
    size_t off = 0;
    while (off < len + 1) {
        ssize_t n = write(STDERR_FILENO, line + off, len + 1 - off);
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

static void vlog(const char *level, const char *fmt, va_list ap)
{
    char msg[2048];
    char ts[40];
    vsnprintf(msg, sizeof msg, fmt, ap);
    format_now_rfc3339(ts, sizeof ts);
    if (log_fmt == LOG_FORMAT_TEXT) {
        char line[2200];
        int n = snprintf(line, sizeof line - 1, "%s %s %s", ts, level, msg);
        if (n < 0)
            return;
        if ((size_t)n > sizeof line - 2)
            n = (int)sizeof line - 2;
        emit(line, (size_t)n);
        return;
    }
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "ts");
    jsonw_string(&w, ts);
    jsonw_key(&w, "level");
    jsonw_string(&w, level);
    jsonw_key(&w, "msg");
    jsonw_string(&w, msg);
    jsonw_object_end(&w);
    size_t len = 0;
    char *out = jsonw_take(&w, &len);
    emit(out, len); /* the terminating NUL's byte becomes the newline */
    free(out);
}

void log_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog("info", fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog("warn", fmt, ap);
    va_end(ap);
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog("error", fmt, ap);
    va_end(ap);
}

void log_access(const struct log_access *a)
{
    char ts[40];
    format_now_rfc3339(ts, sizeof ts);
    if (log_fmt == LOG_FORMAT_TEXT) {
        char line[1024];
        int n = snprintf(line, sizeof line - 1, "%s access %s %s %d %.3fms req=%s ws=%s code=%s", ts,
                         a->method, a->route, a->status, a->ms, a->request_id,
                         a->workspace ? a->workspace : "-", a->code ? a->code : "-");
        if (n < 0)
            return;
        if ((size_t)n > sizeof line - 2)
            n = (int)sizeof line - 2;
        emit(line, (size_t)n);
        return;
    }
    struct jsonw w;
    jsonw_init(&w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "ts");
    jsonw_string(&w, ts);
    jsonw_key(&w, "level");
    jsonw_string(&w, "info");
    jsonw_key(&w, "msg");
    jsonw_string(&w, "access");
    jsonw_key(&w, "method");
    jsonw_string(&w, a->method);
    jsonw_key(&w, "route");
    jsonw_string(&w, a->route);
    jsonw_key(&w, "status");
    jsonw_int(&w, a->status);
    jsonw_key(&w, "ms");
    jsonw_int(&w, (int64_t)(a->ms * 1000.0 + 0.5) / 1000); /* whole ms keeps lines short */
    jsonw_key(&w, "us");
    jsonw_int(&w, (int64_t)(a->ms * 1000.0 + 0.5));
    jsonw_key(&w, "request_id");
    jsonw_string(&w, a->request_id);
    jsonw_key(&w, "workspace");
    jsonw_string(&w, a->workspace);
    jsonw_key(&w, "user");
    jsonw_string(&w, a->user);
    jsonw_key(&w, "peer");
    jsonw_string(&w, a->peer);
    if (a->code) {
        jsonw_key(&w, "code");
        jsonw_string(&w, a->code);
    }
    jsonw_object_end(&w);
    size_t len = 0;
    char *out = jsonw_take(&w, &len);
    emit(out, len);
    free(out);
}
