// SPDX-License-Identifier: Apache-2.0
/* cli — what the `tenq` subcommands share: global options, a table-driven
 * flag parser, error reporting, value parsers and aligned output.
 *
 * Exit statuses: 0 success, 1 an error (the server refused, or could not be
 * reached), 2 a usage error.  `tenq wait` adds its own (see jobs.c). */
#ifndef TENQ_CLI_H
#define TENQ_CLI_H

#include "tenq/tenq.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2 };
/* cli_parse: --help was printed; the command exits 0 */
#define CLI_HELP (-1)

#define CLI_MAX_SERVERS 16
#define CLI_MAX_POS     8

typedef struct cli {
    char cmd[64]; /* "submit", "morgue requeue": for messages and help */
    const char *servers[CLI_MAX_SERVERS];
    size_t nservers;
    char *server_copies[CLI_MAX_SERVERS]; /* owned: split copies of flags/TENQ_SERVER */
    size_t ncopies;
    bool servers_from_flags; /* a --server flag replaced TENQ_SERVER */
    const char *token;       /* borrowed from argv or the environment */
    /* https: trusted CAs, a client certificate and its key (borrowed from
     * argv or TENQ_CA_FILE, TENQ_CLIENT_CERT, TENQ_CLIENT_KEY) */
    const char *ca_file, *cert_file, *key_file;
    bool json;
    tenq_client *client; /* made by cli_client on first use; owned */
    char *answer;        /* the text of the last answer cli_call read; owned */
} cli;

/* One flag of a command.  Value flags store the (last) argument in *val;
 * switches set *on.  Tables end with a row whose name is NULL. */
typedef struct cli_opt {
    const char *name; /* without "--" */
    const char *metavar;
    const char *help;
    const char **val;
    bool *on;
} cli_opt;

typedef struct cli_spec {
    const char *usage; /* what follows "tenq ", e.g. "status ID" */
    const char *about; /* a paragraph for --help */
    const cli_opt *opts;
    int min_pos, max_pos; /* positional arguments */
} cli_spec;

/* A subcommand; the table in main.c holds one row per command. */
typedef int (*cli_fn)(cli *c, int argc, char **argv);
typedef struct cli_cmd {
    const char *name;
    cli_fn run;
    const char *help;
} cli_cmd;

/* ---- cli.c ---- */
/* Reads TENQ_SERVER, TENQ_TOKEN, TENQ_CA_FILE, TENQ_CLIENT_CERT and
 * TENQ_CLIENT_KEY; flags given later override them. */
void cli_init(cli *c);
void cli_free(cli *c);
/* Fills the connection options every command shares (servers, token, TLS). */
void cli_options(const cli *c, tenq_options *o);
/* The global flags' help lines (after the command's own). */
void cli_global_help(FILE *out, int width);
/* Applies a global flag (--server, --token, --json, --ca-file,
 * --client-cert, --client-key) at argv[*i]; returns 1
 * when it was one (and *i moved past its value), 0 when not, CLI_USAGE
 * after printing an error. */
int cli_global_flag(cli *c, int argc, char **argv, int *i);
/* Parses argv[1..] (argv[0] is the command word) against spec and the
 * global flags; positional arguments go to pos (borrowed from argv).
 * Returns 0, CLI_HELP after printing help, or CLI_USAGE after an error. */
int cli_parse(cli *c, const cli_spec *spec, int argc, char **argv, char **pos, int *npos);
/* cli_parse for a command whose one positional argument is an ID: then
 * *id, and path (cap bytes) made of prefix, the id and suffix
 * ("/v1/jobs/" 42 "/steps").  Returns what cli_parse does, or CLI_USAGE
 * after an error about the ID. */
int cli_parse_id(cli *c, const cli_spec *spec, int argc, char **argv, const char *prefix,
                 const char *suffix, uint64_t *id, char *path, size_t cap);
/* Runs the row of table named by argv[1] (a group such as `tenq morgue`). */
int cli_dispatch(cli *c, const char *group, const cli_cmd *table, int argc, char **argv);
/* The client handle, made on first use; NULL after printing an error. */
tenq_client *cli_client(cli *c);
/* Prints "tenq: WORD: MESSAGE" for a library error; returns CLI_ERR. */
int cli_error(cli *c, int rc);
/* Prints "tenq CMD: MESSAGE (see tenq CMD --help)"; returns CLI_USAGE. */
int cli_usage(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A request whose answer is JSON.  Returns 0 with *answer (the caller
 * json_decref's it; may be NULL when only success matters), or CLI_ERR
 * after printing the error.  body (may be NULL) is sent as JSON and
 * released.  The answer's text stays in c->answer until the next call. */
int cli_call(cli *c, const char *method, const char *path, json_t *body, json_t **answer);
/* --json: prints c->answer (the server's JSON) and a newline. */
void cli_print_answer(cli *c);

/* ---- values.c: flag values; each prints a usage error and returns false when bad ---- */
/* 500ms, 10s, 1.5m, 2h, 1d; a bare number is seconds. */
bool cli_duration(cli *c, const char *flag, const char *v, int64_t *ms);
bool cli_int(cli *c, const char *flag, const char *v, long long lo, long long hi, long long *out);
bool cli_number(cli *c, const char *flag, const char *v, double *out);
/* 1024, 64KiB, 1MiB, 1GiB. */
bool cli_bytes(cli *c, const char *flag, const char *v, long long *out);
bool cli_bool(cli *c, const char *flag, const char *v, bool *out);
/* Milliseconds since the epoch, or RFC 3339 (2026-01-01T09:00:00Z, +02:00). */
bool cli_time(cli *c, const char *flag, const char *v, int64_t *ms);
bool cli_id(cli *c, const char *v, uint64_t *id);
/* JSON text of a flag, parsed (a new reference). */
bool cli_json(cli *c, const char *flag, const char *v, json_t **out);
int64_t cli_now_ms(void);

/* ---- output.c ---- */
/* Appends key=value (escaped) to a path's query; "&" or "?" as needed.
 * A value that does not fit ends the command (a usage error): never cut,
 * never left out. */
void cli_query(char *path, size_t cap, const char *key, const char *val);
/* prefix followed by segment, escaped ("/v1/queues/" + name); the same. */
void cli_path(char *path, size_t cap, const char *prefix, const char *segment);
/* "2026-11-21 23:40:32.123Z", or "-" for 0. */
void cli_fmt_time(int64_t ms, char *buf, size_t n);
/* "850ms", "12s", "3m04s", "2h05m", "3d04h". */
void cli_fmt_duration(int64_t ms, char *buf, size_t n);
/* The string at o[key], or "-". */
const char *cli_str(const json_t *o, const char *key);
/* o[key] as text for a table cell: numbers, strings, "-" for null. */
void cli_fmt_field(const json_t *o, const char *key, char *buf, size_t n);
/* text (NULL: "-") cut to fit buf; when it does not fit (n bytes or
 * more), "..." stands for the last three bytes kept. */
void cli_fmt_cut(char *buf, size_t n, const char *text);

/* An aligned table: cells fill rows left to right. */
typedef struct cli_table {
    size_t ncols;
    const char *align; /* per column: 'l' or 'r' */
    char **cells;      /* owned */
    size_t ncells, cap;
} cli_table;
void cli_table_init(cli_table *t, const char *align, const char *const *header);
void cli_table_cell(cli_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_table_print(cli_table *t, FILE *out);
void cli_table_free(cli_table *t);
/* One row of a table: the cells of one element of a list. */
typedef void (*cli_row_fn)(cli_table *t, const json_t *item);
/* Prints list (a JSON array) as a table under header, aligned as align,
 * a row per element made by row; false, printing nothing, when the list
 * is empty (or not an array). */
bool cli_print_rows(const json_t *list, const char *align, const char *const *header,
                    cli_row_fn row);
/* "key  value" lines, keys aligned; values of NULL are skipped. */
void cli_kv(FILE *out, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- the commands (jobs.c, submit.c, morgue.c, admin.c, schedules.c, tokens.c; health:
 * admin.c) ---- */
int cmd_submit(cli *c, int argc, char **argv);
int cmd_status(cli *c, int argc, char **argv);
int cmd_attempts(cli *c, int argc, char **argv); /* attempts.c */
int cmd_steps(cli *c, int argc, char **argv);    /* steps.c */
int cmd_event(cli *c, int argc, char **argv);    /* steps.c */
int cmd_wait(cli *c, int argc, char **argv);
int cmd_cancel(cli *c, int argc, char **argv);
int cmd_jobs(cli *c, int argc, char **argv);
int cmd_stats(cli *c, int argc, char **argv);
int cmd_morgue(cli *c, int argc, char **argv);
int cmd_bulk(cli *c, int argc, char **argv);
int cmd_tenant(cli *c, int argc, char **argv);
int cmd_queue(cli *c, int argc, char **argv);
int cmd_schedule(cli *c, int argc, char **argv);
int cmd_batch(cli *c, int argc, char **argv); /* batches.c */
int cmd_token(cli *c, int argc, char **argv);
int cmd_audit(cli *c, int argc, char **argv); /* audit.c */
int cmd_health(cli *c, int argc, char **argv);

int cmd_key(cli *c, int argc, char **argv); /* keys.c */

/* Settings by their rows (admin.c): a flag per row, PUT to base + the one
 * positional name (npos 1), or to base with the tenant and the key of the
 * two positionals in the body (npos 2: a key's settings). */
struct tq_setting;
int cli_settings_set(cli *c, int argc, char **argv, const struct tq_setting *rows, size_t n,
                     const char *usage, const char *what, const char *base, int npos);

/* Prints a job (an object of the jobs API) as aligned "key value" lines. */
void cli_print_job(const json_t *job);
/* A command showing one of a job's lists (jobs.c; tenq attempts, tenq
 * steps): GET /v1/jobs/ID/<list>, then its array <list> as a table
 * (--json: the answer), or "job ID is STATE and has <none>". */
typedef struct cli_job_list {
    const char *list; /* "attempts": the path's last segment and the answer's key */
    const char *align;
    const char *const *header;
    cli_row_fn row;
    const char *none; /* "had no attempt" */
} cli_job_list;
int cli_show_job_list(cli *c, const cli_spec *spec, const cli_job_list *what, int argc,
                      char **argv);

#endif
