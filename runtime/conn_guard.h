/* Connection limits a public server needs and libmicrohttpd 0.9.75 lacks: a cap on the
 * connections of one client address (an IPv6 client counted by its /64) and on all of them,
 * absolute deadlines for each phase of a request, and a lingering close after an early answer.
 *
 * libmicrohttpd's own timeout is one of inactivity: a client that sends one byte every few
 * seconds (slowloris) never reaches it. The deadlines here are absolute:
 *   - head: a new connection has head_timeout_ms from its accept to finish the TLS handshake
 *     and send a complete request head; a kept-alive connection as long from the first line
 *     of a later request;
 *   - idle: a kept-alive connection waits idle_timeout_ms at most for that first line;
 *   - body: the body must arrive within body_timeout_ms of the head, extended by one second
 *     for every body_min_rate bytes received (Apache's mod_reqtimeout does the same);
 *   - answer: the client must read the answer within idle_timeout_ms plus a second per
 *     body_min_rate bytes of it (a client that reads a byte now and then would otherwise
 *     hold the connection for as long as it likes);
 *   - none while the server works on the request (it may wait for a group commit).
 * A connection past its deadline is shut down (shutdown(2), from this module's thread; the
 * server's thread then sees the end of the stream and closes it as usual) and counted in a
 * log line. It knows sockets, not HTTP: runtime/server.c tells it where each connection is.
 *
 * Lingering close: a server that answers before it has read the body (a 413) and closes at
 * once makes the kernel reset the connection while the client still sends, and most clients
 * (Python's http.client, Node's fetch) then lose the answer they were sent. A connection
 * marked with conn_guard_linger keeps its socket (a duplicate descriptor) after the server
 * closed it: the write side is shut, what the client still sends is read and dropped until
 * it closes, 5 s pass without data or 30 s in all (nginx's lingering close does the same).
 * At most 256 sockets linger, 4 of one client address; past that a connection closes at once. */
#ifndef RUNTIME_CONN_GUARD_H
#define RUNTIME_CONN_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "runtime/ipaddr.h"

#define CONN_GUARD_MAX_EXEMPT 8

struct conn_guard_limits {
    int max_connections;   /* in all */
    int max_per_address;   /* per IPv4 address, per IPv6 /64 */
    int head_timeout_ms;
    int idle_timeout_ms;
    int body_timeout_ms;
    int body_min_rate;     /* bytes per second that earn the body one more second */
    /* Addresses with no per-address cap (the trusted proxies, whose connections carry many
     * clients). */
    struct ipaddr exempt[CONN_GUARD_MAX_EXEMPT];
    int n_exempt;
};

struct conn_slot;

/* Starts the deadline thread. 0 / -1. */
int conn_guard_start(const struct conn_guard_limits *limits);
/* Stops it and closes the lingering sockets. Connections still tracked stay as they are. */
void conn_guard_stop(void);

/* At accept, before anything is allocated for the connection: false when it would pass a cap
 * (the server then closes the socket at once). */
bool conn_guard_admit(const struct sockaddr *sa, socklen_t len);
/* Tracks an accepted connection (its head deadline starts now). NULL when it is over a cap
 * after all (another thread admitted one of the same address meanwhile) or out of memory:
 * the socket has then been shut down, and the server closes it as a dead connection. */
struct conn_slot *conn_guard_open(int fd, const struct sockaddr *sa, socklen_t len);
/* The server is about to close the socket (fd still open): forget it, or keep a duplicate
 * to linger on when conn_guard_linger was called. NULL is ignored. */
void conn_guard_close(struct conn_slot *s);

/* Where the connection is (each a few atomic stores; NULL is ignored): */
void conn_guard_request_line(struct conn_slot *s); /* a request line arrived */
void conn_guard_head_done(struct conn_slot *s);    /* the head is complete: the body's turn */
void conn_guard_body_read(struct conn_slot *s, size_t n);
void conn_guard_busy(struct conn_slot *s);         /* the server has the request: no deadline */
/* The answer (bytes long) is queued: the client must read it within idle_timeout_ms plus a
 * second per body_min_rate bytes, however slowly it keeps reading. */
void conn_guard_answer(struct conn_slot *s, size_t bytes);
void conn_guard_request_done(struct conn_slot *s); /* answered: wait for the next request */
/* Close this connection lingering (see above) once the server closes it. */
void conn_guard_linger(struct conn_slot *s);

/* For tests: connections tracked in all and for the address of sa; sockets lingering. */
int conn_guard_count(const struct sockaddr *sa, socklen_t len);
int conn_guard_total(void);
int conn_guard_lingering(void);
/* For tests: one pass over the deadlines at once (the thread also runs them on its own). */
void conn_guard_sweep(void);

#endif
