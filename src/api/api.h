// SPDX-License-Identifier: Apache-2.0
/* api — `tenq serve`: the HTTP/JSON server around the engine and the store.
 *
 * One event-loop thread runs the HTTP layer and the engine; the store's
 * writer and reader threads sit beside it.  A request that changes anything
 * is answered only once the store has committed its changes ("acknowledged
 * means durable"); requests that arrive together share one commit.
 */
#ifndef TENQ_API_H
#define TENQ_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every setting, from one table that drives flags, TENQ_* environment
 * variables and the config file (see config.c). */
typedef struct api_config {
    char listen[256];
    char store[1024];        /* set from data_dir when not given */
    char data_dir[1024];     /* absolute once loaded, when data_dir_used */
    bool data_dir_used;      /* the store is sqlite:<data_dir>/tenq.db */
    char sqlite_sync[16];    /* full | normal */
    long long default_slots; /* -1: unlimited */
    long long default_weight;
    long long default_max_queued;       /* -1: unlimited */
    long long default_max_queued_bytes; /* 0: none */
    long long memory_budget;            /* 0: chosen from the machine (admit.c) */
    long long args_memory;              /* 0: a quarter of the memory budget */
    bool strict_tenants;
    long long max_job_bytes;   /* a single-job request body */
    long long max_batch_bytes; /* any request body */
    long long max_header_bytes;
    long long max_headers;
    long long header_timeout_ms, body_timeout_ms, idle_timeout_ms, write_timeout_ms;
    long long max_connections;
    long long max_wait_ms; /* longest long poll */
    long long lease_write_delay_ms;
    char writer_priority[16]; /* auto | normal */
    char log_format[16];      /* text | json */
    char log_level[16];       /* debug | info | warn | error */
    char admin_token[256];    /* TENQ_ADMIN_TOKEN */
    char config_file[1024];
    char port_file[1024]; /* write the bound port here (tests, supervisors) */
    bool allow_open_network;
    char tls_cert[1024], tls_key[1024], tls_client_ca[1024]; /* "": none */
    char tls_client_auth[16];                                /* optional | require */
    char tls_ciphers[512];                                   /* "": the default */
    bool allow_plaintext; /* beyond loopback without TLS: a proxy terminates it */
    bool idle_yield;
    char advertise[256];          /* the URL clients reach this server at */
    long long leader_ttl_ms;      /* PostgreSQL: how long a renewal keeps the leadership */
    long long request_key_ttl_ms; /* how long an Idempotency-Key's first answer is kept */
    long long stop_linger_ms;     /* after a stop's handover: requests still answered */
    long long inbox_poll_ms;      /* PostgreSQL: how often the inbox is read without news */
    long long event_window_ms;    /* an event that woke no job is kept this long (engine/steps.c) */
    long long audit_retention_ms; /* how long audit rows are kept */
} api_config;

void api_config_defaults(api_config *c);
/* Reads the file named by --config/TENQ_CONFIG, then TENQ_* variables, then
 * flags (each overriding the one before); with no --store, makes the data
 * folder (config.c, resolve_data_dir) and stores there.  Returns 0, 1 when
 * --help was printed, or -1 with a message printed to err. */
int api_config_load(api_config *c, int argc, char **argv, FILE *err);
void api_config_help(FILE *out);

/* Runs the server until SIGTERM/SIGINT; returns the exit status. */
int api_serve(const api_config *cfg);

/* Logging: one line per event, text or JSON. */
typedef enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;
void log_setup(const char *format, const char *level);
void log_event(log_level lvl, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
