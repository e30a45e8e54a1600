/* Structured logging to stderr: one line per event, JSON or text; lines from concurrent threads
 * never interleave. Never pass secrets here. */
#ifndef RUNTIME_LOG_H
#define RUNTIME_LOG_H

#include <stdint.h>

enum log_format { LOG_FORMAT_JSON, LOG_FORMAT_TEXT };

struct log_access {
    const char *method;
    const char *route;   /* operation template ("/v1/beneficiaries/{id}"), or "-" when unmatched */
    int status;
    double ms;
    const char *request_id;
    const char *workspace; /* NULL when unauthenticated */
    const char *user;
    const char *code;      /* problem code, NULL on success */
    const char *peer;
};

void log_init(enum log_format f);
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Access lines are buffered once log_buffer_start() ran (written within ~20 ms by a flusher
 * thread, and before any other message); log_buffer_stop() writes what is left. */
void log_access(const struct log_access *a);
int log_buffer_start(void);
void log_buffer_stop(void);

#endif
