/* Flags and their TREASURY_* environment equivalents. One table drives parsing, --help and the
 * environment lookup, so a new flag is one line here. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "runtime/config.h"
#include "runtime/forwarded.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TREASURY_VERSION
#define TREASURY_VERSION "0.1.0"
#endif

enum kind { K_PATH, K_STR, K_PORT, K_INT, K_INT0, K_LOGFMT, K_ONOFF }; /* K_INT0: 0 allowed */

struct flag {
    const char *name; /* without "--" */
    const char *env;
    enum kind kind;
    size_t offset;
    size_t size;
    long max; /* K_PORT, K_INT: largest accepted value */
    const char *help;
};

#define F(name, env, kind, field, max, help)                                                  \
    { name, env, kind, offsetof(struct config, field), sizeof(((struct config *)0)->field), max, \
      help }

static const struct flag flags[] = {
    F("data-dir", "TREASURY_DATA_DIR", K_PATH, data_dir, 0, "data directory (database, keys, certificate) [./var]"),
    F("database", "TREASURY_DATABASE", K_STR, database, 0, "a SQLite database file, or a PostgreSQL database as a postgresql:// URL that several instances may share (README: Running several instances) [<data-dir>/treasury.db]"),
    F("listen", "TREASURY_LISTEN", K_STR, listen, 0, "address(es) to listen on, comma-separated, at most 4 [127.0.0.1]"),
    F("https-port", "TREASURY_HTTPS_PORT", K_PORT, https_port, 65535, "HTTPS port [8443]"),
    F("http-port", "TREASURY_HTTP_PORT", K_PORT, http_port, 65535, "plain-HTTP port answering 400 \"use HTTPS\"; 0 disables [8080]"),
    F("threads", "TREASURY_THREADS", K_INT, threads, 1024,
      "request threads [the cores this process may run on]"),
    F("tls-cert", "TREASURY_TLS_CERT", K_PATH, tls_cert, 0, "PEM certificate [<data-dir>/tls.crt, self-signed on first start]"),
    F("tls-key", "TREASURY_TLS_KEY", K_PATH, tls_key, 0, "PEM private key [<data-dir>/tls.key]"),
    F("log-format", "TREASURY_LOG_FORMAT", K_LOGFMT, log_format, 0, "json or text [json]"),
    F("public-url", "TREASURY_PUBLIC_URL", K_STR, public_url, 0, "external base URL, the token issuer [https://<listen>:<https-port>]"),
    F("trusted-proxy", "TREASURY_TRUSTED_PROXY", K_STR, trusted_proxy, 0, "reverse proxy address(es), comma-separated: their X-Forwarded-Proto: https counts as HTTPS, the client is X-Forwarded-For's rightmost other address, no per-address cap [none]"),
    F("proxy-protocol", "TREASURY_PROXY_PROTOCOL", K_ONOFF, proxy_protocol, 0, "on: every connection of a --trusted-proxy to the HTTPS port begins with a PROXY protocol header (v2 or v1: HAProxy's send-proxy-v2), whose client address counts (log, quotas, connection caps); their connections without one are closed; nobody else's is read for one (README: Running several instances) [off]"),
    F("max-connections", "TREASURY_MAX_CONNECTIONS", K_INT, max_connections, 100000, "concurrent connection limit [1024]"),
    F("max-connections-per-address", "TREASURY_MAX_CONNECTIONS_PER_ADDRESS", K_INT, max_connections_per_address, 100000, "concurrent connections of one client address (IPv6: one /64) [128]"),
    F("head-timeout-ms", "TREASURY_HEAD_TIMEOUT_MS", K_INT, head_timeout_ms, 600000, "a new connection's TLS handshake and request head; a later request's fields after its request line [10000]"),
    F("idle-timeout-ms", "TREASURY_IDLE_TIMEOUT_MS", K_INT, idle_timeout_ms, 3600000, "a kept-alive connection's wait for its next request line, and any silence [30000]"),
    F("body-timeout-ms", "TREASURY_BODY_TIMEOUT_MS", K_INT, body_timeout_ms, 3600000, "a request body, from the end of its head ... [10000]"),
    F("body-min-rate", "TREASURY_BODY_MIN_RATE", K_INT, body_min_rate, 1000000000, "... plus one second per this many bytes received [1024]"),
    F("rate-limit", "TREASURY_RATE_LIMIT", K_INT, rate_limit, 1000000000, "default requests per minute per workspace [1000]"),
    F("auth-rate-limit", "TREASURY_AUTH_RATE_LIMIT", K_INT, auth_rate_limit, 1000000000, "login attempts per minute per client address [30]"),
    F("settlement-interval-ms", "TREASURY_SETTLEMENT_INTERVAL_MS", K_INT, settlement_interval_ms, 3600000, "how often approved payments are moved along [1000]"),
    F("sandbox-rail-delay-ms", "TREASURY_SANDBOX_RAIL_DELAY_MS", K_INT, sandbox_rail_delay_ms, 86400000, "each step of the sandbox settlement rail [5000]"),
    F("fx-market-interval-ms", "TREASURY_FX_MARKET_INTERVAL_MS", K_INT0, fx_market_interval_ms, 3600000, "how often the sandbox FX market ticks (README: The sandbox FX market); 0 turns it off [1000]"),
    F("fx-market-seed", "TREASURY_FX_MARKET_SEED", K_INT0, fx_market_seed, 2147483647, "the sandbox FX market's seed: the same seed makes the same ticks [1]"),
    F("smtp-url", "TREASURY_SMTP_URL", K_STR, smtp_url, 0, "SMTP relay for the server's e-mail (invitations): smtp://host:port (STARTTLS required unless on loopback) or smtps://host:port; credentials only from TREASURY_SMTP_USERNAME / TREASURY_SMTP_PASSWORD [none: each message is written to <data-dir>/mail/<id>.eml]"),
    F("mail-from", "TREASURY_MAIL_FROM", K_STR, mail_from, 0, "sender address of the server's e-mail, required with --smtp-url [no-reply@treasury.invalid]"),
    F("drain-timeout-ms", "TREASURY_DRAIN_TIMEOUT_MS", K_INT, drain_timeout_ms, 600000, "on SIGTERM, how long requests under way may take before queued ones are refused [10000]"),
};

#define NFLAGS (sizeof flags / sizeof flags[0])

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: treasury-server [flags]\n"
            "       treasury-server [--data-dir DIR] admin <command> [args]   (operator commands; admin --help)\n"
            "\n"
            "Serves the treasury API over HTTPS. Flags (each also read from its environment variable):\n");
    for (size_t i = 0; i < NFLAGS; i++)
        fprintf(out, "  --%-22s %-32s %s\n", flags[i].name, flags[i].env, flags[i].help);
    fprintf(out, "  --%-22s %-32s %s\n", "help", "", "print this help and exit");
    fprintf(out, "  --%-22s %-32s %s\n", "version", "", "print the version and exit");
}

static int set(struct config *c, const struct flag *f, const char *value, const char *origin,
               FILE *err)
{
    char *field = (char *)c + f->offset;
    char *end = NULL;
    long v;
    switch (f->kind) {
    case K_PATH:
    case K_STR:
        if (strlen(value) >= f->size || (f->kind == K_PATH && value[0] == '\0')) {
            fprintf(err, "treasury-server: %s %s: value empty or too long\n", origin, f->name);
            return -1;
        }
        memcpy(field, value, strlen(value) + 1);
        return 0;
    case K_PORT:
    case K_INT:
    case K_INT0:
        errno = 0;
        v = strtol(value, &end, 10);
        if (errno || end == value || *end != '\0' || v < 0 ||
            v > f->max || (f->kind == K_INT && v == 0)) {
            fprintf(err, "treasury-server: %s %s: invalid value '%s'\n", origin, f->name, value);
            return -1;
        }
        *(int *)(void *)field = (int)v;
        return 0;
    case K_ONOFF:
        if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0) {
            *(bool *)(void *)field = strcmp(value, "on") == 0;
            return 0;
        }
        fprintf(err, "treasury-server: %s %s: expected on or off, got '%s'\n", origin, f->name,
                value);
        return -1;
    case K_LOGFMT:
        if (strcmp(value, "json") == 0)
            *(enum log_format *)(void *)field = LOG_FORMAT_JSON;
        else if (strcmp(value, "text") == 0)
            *(enum log_format *)(void *)field = LOG_FORMAT_TEXT;
        else {
            fprintf(err, "treasury-server: %s %s: expected json or text, got '%s'\n", origin,
                    f->name, value);
            return -1;
        }
        return 0;
    }
    return -1;
}

static const struct flag *find(const char *name, size_t len)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

/* The cores this process may run on (its CPU affinity: taskset, cgroup cpusets), not all the
 * machine's: more worker threads than that only preempt each other, which shows as latency. */
static int usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores : 2;
}

enum config_result config_parse(struct config *c, int argc, char **argv, FILE *out, FILE *err)
{
    memset(c, 0, sizeof *c);
    strcpy(c->data_dir, "./var");
    strcpy(c->listen, "127.0.0.1");
    c->https_port = 8443;
    c->http_port = 8080;
    c->threads = usable_cores();
    c->log_format = LOG_FORMAT_JSON;
    c->max_connections = 1024;
    c->max_connections_per_address = 128;
    c->head_timeout_ms = 10000;
    c->idle_timeout_ms = 30000;
    c->body_timeout_ms = 10000;
    c->body_min_rate = 1024;
    c->rate_limit = 1000;
    c->auth_rate_limit = 30;
    c->settlement_interval_ms = 1000;
    c->sandbox_rail_delay_ms = 5000;
    c->fx_market_interval_ms = 1000;
    c->fx_market_seed = 1;
    c->drain_timeout_ms = 10000;

    for (size_t i = 0; i < NFLAGS; i++) {
        const char *v = getenv(flags[i].env);
        if (v && *v && set(c, &flags[i], v, flags[i].env, err) != 0)
            return CONFIG_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "admin") == 0) {
            c->subcommand_argc = i;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(out);
            return CONFIG_EXIT_OK;
        }
        if (strcmp(a, "--version") == 0) {
            fprintf(out, "treasury-server %s\n", TREASURY_VERSION);
            return CONFIG_EXIT_OK;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(err, "treasury-server: unexpected argument '%s' (see --help)\n", a);
            return CONFIG_USAGE;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        const struct flag *f = find(name, eq ? (size_t)(eq - name) : strlen(name));
        if (!f) {
            fprintf(err, "treasury-server: unknown flag '%s' (see --help)\n", a);
            return CONFIG_USAGE;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc) {
                fprintf(err, "treasury-server: flag --%s needs a value\n", f->name);
                return CONFIG_USAGE;
            }
            value = argv[++i];
        }
        if (set(c, f, value, "flag", err) != 0)
            return CONFIG_USAGE;
    }
    if (c->https_port == 0) {
        fprintf(err, "treasury-server: --https-port must be 1..65535\n");
        return CONFIG_USAGE;
    }
    if ((c->tls_cert[0] == '\0') != (c->tls_key[0] == '\0')) {
        fprintf(err, "treasury-server: --tls-cert and --tls-key must be given together\n");
        return CONFIG_USAGE;
    }
    struct forwarded_proxies proxies;
    char why[160];
    if (forwarded_parse_list(c->trusted_proxy, &proxies, why, sizeof why) != 0) {
        fprintf(err, "treasury-server: --trusted-proxy: %s\n", why);
        return CONFIG_USAGE;
    }
    if (c->proxy_protocol && proxies.n == 0) {
        fprintf(err, "treasury-server: --proxy-protocol on needs --trusted-proxy: only the "
                     "proxies named there may send the header\n");
        return CONFIG_USAGE;
    }
    if (c->public_url[0] == '\0') {
        /* The first --listen address. */
        char first[sizeof c->listen];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(c->listen, ","), c->listen);
        const char *fmt = strchr(first, ':') ? "https://[%s]:%d" : "https://%s:%d";
        const char *host = strcmp(first, "0.0.0.0") == 0 ? "127.0.0.1" : first;
        snprintf(c->public_url, sizeof c->public_url, fmt, host, c->https_port);
    }
    return CONFIG_OK;
}
