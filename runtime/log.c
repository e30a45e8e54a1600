/* Structured logging to stderr: JSON lines (default) or text. Messages are written at once with
 * one write(2) each; access lines, one per request, are gathered in a buffer that a flusher
 * thread writes out every few milliseconds (log_buffer_start), so a request does not pay a
 * system call for its log line. Every message first flushes the buffer: order is kept. */
#include "runtime/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "runtime/format.h"
#include "runtime/jsonw.h"

static enum log_format log_fmt = LOG_FORMAT_JSON;

void log_init(enum log_format f)
{
    log_fmt = f;
}

#define BUFFER_BYTES (64 * 1024)
#define FLUSH_EVERY_MS 20

static pthread_mutex_t buf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t buf_cv = PTHREAD_COND_INITIALIZER;
static char buf[BUFFER_BYTES];
static size_t buf_len;
static bool buffering, flusher_stopping;
static pthread_t flusher;

static void write_all(const char *p, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(STDERR_FILENO, p + off, len - off);
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

/* Under buf_mu. */
static void flush_locked(void)
{
    write_all(buf, buf_len);
    buf_len = 0;
}

/* One line (line[len] is overwritten with the newline). Lines from different threads never
 * interleave: both paths write under buf_mu. */
static void emit_line(char *line, size_t len, bool buffered)
{
    line[len] = '\n';
    len++;
    pthread_mutex_lock(&buf_mu);
    if (buffered && buffering && len <= sizeof buf) {
        if (buf_len + len > sizeof buf)
            flush_locked();
        if (buf_len == 0)
            pthread_cond_signal(&buf_cv);
        memcpy(buf + buf_len, line, len);
        buf_len += len;
    } else {
        flush_locked();
        write_all(line, len);
    }
    pthread_mutex_unlock(&buf_mu);
}

static void emit(char *line, size_t len)
{
    emit_line(line, len, false);
}

static void *flusher_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "tr-log");
    pthread_mutex_lock(&buf_mu);
    while (!flusher_stopping) {
        if (buf_len == 0) {
            pthread_cond_wait(&buf_cv, &buf_mu);
            continue;
        }
        /* Let a few milliseconds of lines gather, then write them in one go. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += FLUSH_EVERY_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = 0;
        while (!flusher_stopping && rc == 0)
            rc = pthread_cond_timedwait(&buf_cv, &buf_mu, &until);
        flush_locked();
    }
    flush_locked();
    pthread_mutex_unlock(&buf_mu);
    return NULL;
}

int log_buffer_start(void)
{
    pthread_mutex_lock(&buf_mu);
    flusher_stopping = false;
    int rc = pthread_create(&flusher, NULL, flusher_main, NULL);
    buffering = rc == 0;
    pthread_mutex_unlock(&buf_mu);
    return rc == 0 ? 0 : -1;
}

void log_buffer_stop(void)
{
    pthread_mutex_lock(&buf_mu);
    bool was = buffering;
    buffering = false;
    flusher_stopping = true;
    pthread_cond_signal(&buf_cv);
    pthread_mutex_unlock(&buf_mu);
    if (was)
        pthread_join(flusher, NULL);
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
        emit_line(line, (size_t)n, true);
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
    emit_line(out, len, true);
    free(out);
}
