/* Server configuration: command-line flags, each with a TREASURY_* environment equivalent
 * (flag wins over environment, environment over default). */
#ifndef RUNTIME_CONFIG_H
#define RUNTIME_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/log.h"

#define CONFIG_PATH_MAX 1024

struct config {
    char data_dir[CONFIG_PATH_MAX];
    char database[CONFIG_PATH_MAX]; /* a SQLite file or a postgresql:// URL; empty:
                                       <data_dir>/treasury.db */
    char listen[256];        /* one address, or several separated by commas */
    int https_port;
    int http_port; /* 0 disables the plain-HTTP "use HTTPS" listener */
    int threads;
    char tls_cert[CONFIG_PATH_MAX]; /* empty: <data_dir>/tls.crt, created on first start */
    char tls_key[CONFIG_PATH_MAX];
    enum log_format log_format;
    char public_url[256];    /* token issuer; default https://<listen>:<https_port> */
    char trusted_proxy[256]; /* reverse proxies (comma-separated addresses): their
                                X-Forwarded-Proto and X-Forwarded-For are believed */
    bool proxy_protocol;     /* the HTTPS port: trusted proxies' connections begin with a
                                PROXY protocol header (runtime/proxy_listen.h) */
    int max_connections;
    int max_connections_per_address; /* one IPv4 address or IPv6 /64 */
    int head_timeout_ms;     /* TLS handshake + request head (runtime/conn_guard.h) */
    int idle_timeout_ms;     /* a kept-alive connection's wait for its next request */
    int body_timeout_ms;     /* the body, from the end of the head ... */
    int body_min_rate;       /* ... plus a second per this many bytes received */
    int rate_limit;          /* default requests per minute per workspace */
    int auth_rate_limit;     /* x-rate-limit-class auth: attempts per minute per client address */
    int settlement_interval_ms; /* how often the settlement worker looks for due payments */
    int sandbox_rail_delay_ms;  /* each step of the sandbox settlement rail */
    int fx_market_interval_ms;  /* how often the sandbox FX market ticks; 0: off */
    int fx_market_seed;         /* the sandbox FX market's seed (handlers/rates_market.c) */
    int drain_timeout_ms;       /* on SIGTERM: how long the requests under way may take */
    char smtp_url[1024];     /* the SMTP relay (smtp:// or smtps://); empty: the mail spool */
    char mail_from[256];     /* the sender of the server's e-mail */
    int subcommand_argc;     /* argv index where "admin ..." starts, 0 when none */
};

enum config_result { CONFIG_OK = 0, CONFIG_EXIT_OK = 1, CONFIG_USAGE = 2 };

/* Fills c from defaults, environment and argv. Prints --help / --version to out and errors to
 * err. CONFIG_EXIT_OK: help or version was printed; CONFIG_USAGE: bad flag (exit 2). */
enum config_result config_parse(struct config *c, int argc, char **argv, FILE *out, FILE *err);

#endif
