// SPDX-License-Identifier: Apache-2.0
/* tenq: one binary, many subcommands.  `tenq serve` runs the server; every
 * other command is a client of it, on libtenq. */
#include "api/api.h"
#include "cli/cli.h"
#include "work_cmd/work_cmd.h"

#include <event2/event.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static int cmd_serve(cli *c, int argc, char **argv)
{
    (void)c;
    api_config cfg;
    int rc = api_config_load(&cfg, argc - 1, argv + 1, stderr);
    if (rc != 0) return rc > 0 ? 0 : 2;
    return api_serve(&cfg);
}

/* `tenq --version` is the first line; `tenq version` adds the libraries
 * as loaded (which may be newer than the headers the build saw). */
static void print_version(bool libraries)
{
    printf("tenq %s\n", TENQ_CLIENT_VERSION);
    if (!libraries) return;
    int pq = PQlibVersion(); /* 150014: 15.14 */
    printf("libevent %s\nsqlite %s\nlibpq %d.%d\njansson %s\n", event_get_version(),
           sqlite3_libversion(), pq / 10000, pq % 10000, jansson_version_str());
}

static int cmd_version(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {
        "version",
        "This tenq's version, then the libraries it runs on (libevent, SQLite, libpq,\n"
        "jansson), one \"name version\" a line.  `tenq --version`: the first line.",
        NULL, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    print_version(true);
    return CLI_OK;
}

static void usage(FILE *out);

static int cmd_help(cli *c, int argc, char **argv)
{
    (void)c;
    (void)argc;
    (void)argv;
    usage(stdout);
    return CLI_OK;
}

/* One row per command: the dispatch, `tenq --help` and nothing else. */
static const cli_cmd commands[] = {
    {"serve", cmd_serve, "run the server (tenq serve --help lists its settings)"},
    {"submit", cmd_submit, "submit a job, or many as JSON lines on stdin"},
    {"status", cmd_status, "show a job"},
    {"attempts", cmd_attempts, "a job's attempts: how each ended, worker, times, error"},
    {"steps", cmd_steps, "a job's durable steps: kind, done or waiting, result"},
    {"event", cmd_event, "events: send (the jobs waiting for its key go on)"},
    {"wait", cmd_wait, "wait for a job to finish"},
    {"cancel", cmd_cancel, "cancel a job"},
    {"jobs", cmd_jobs, "list jobs"},
    {"stats", cmd_stats, "counts per queue and per tenant"},
    {"morgue", cmd_morgue, "dead jobs: ls, requeue, rm"},
    {"bulk", cmd_bulk, "cancel, retry now, reprioritize or delete jobs by filter"},
    {"tenant", cmd_tenant, "tenants: ls, show, set"},
    {"queue", cmd_queue, "queues: ls, show, set, pause, resume"},
    {"key", cmd_key, "keyed limits: the keys at their limit (ls), settings (set, rm, settings)"},
    {"schedule", cmd_schedule, "periodic jobs: set, ls, show, rm, pause, resume"},
    {"batch", cmd_batch, "batches of jobs with callbacks: create, add, show, ls"},
    {"token", cmd_token, "tokens: create, ls, revoke"},
    {"audit", cmd_audit, "the audit log: who changed what, when, from where"},
    {"work", cmd_work, "run jobs: lease them and run a handler for each"},
    {"health", cmd_health, "is the server up? exit 0 when /healthz (--ready: /readyz) says so"},
    {"version", cmd_version, "the version of tenq and of its libraries"},
    {"help", cmd_help, "this list; `tenq help COMMAND` is `tenq COMMAND --help`"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: tenq [--server URL]... [--token TOKEN] [--json] <command> [flags]\n\n"
                 "commands:\n");
    for (const cli_cmd *t = commands; t->name; t++) fprintf(out, "  %-8s %s\n", t->name, t->help);
    fprintf(out, "\n'tenq <command> --help' tells more.  The server is TENQ_SERVER (comma-\n"
                 "separated URLs, tried in order) or http://127.0.0.1:7070; the token is\n"
                 "TENQ_TOKEN; for https, TENQ_CA_FILE, TENQ_CLIENT_CERT and TENQ_CLIENT_KEY\n"
                 "(or --ca-file, --client-cert, --client-key).  Exit status: 0 ok, 1 error,\n"
                 "2 usage error (tenq wait: see its help).\n");
}

int main(int argc, char **argv)
{
    /* `tenq serve` takes its own flags: hand them over untouched */
    if (argc > 1 && strcmp(argv[1], "serve") == 0) return cmd_serve(NULL, argc - 1, argv + 1);
    cli c;
    cli_init(&c);
    int i = 1, rc = CLI_USAGE;
    /* global flags may come before the command too */
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            rc = CLI_OK;
            goto out;
        }
        if (!strcmp(argv[i], "--version")) {
            print_version(false);
            rc = CLI_OK;
            goto out;
        }
        int g = cli_global_flag(&c, argc, argv, &i);
        if (g == CLI_USAGE) goto out;
        if (g == 0) {
            cli_usage(&c, "unknown flag %s", argv[i]);
            goto out;
        }
    }
    if (i >= argc) {
        usage(stderr);
        goto out;
    }
    if (!strcmp(argv[i], "help")) {
        if (i + 1 < argc) {
            /* `tenq help CMD` is `tenq CMD --help` */
            char *hargv[] = {argv[i + 1], "--help", NULL};
            for (const cli_cmd *t = commands; t->name; t++) {
                if (strcmp(t->name, argv[i + 1]) != 0) continue;
                snprintf(c.cmd, sizeof c.cmd, "%s", t->name);
                rc = t->run(&c, 2, hargv);
                goto out;
            }
            cli_usage(&c, "unknown command \"%s\"", argv[i + 1]);
            goto out;
        }
        usage(stdout);
        rc = CLI_OK;
        goto out;
    }
    for (const cli_cmd *t = commands; t->name; t++) {
        if (strcmp(t->name, argv[i]) != 0) continue;
        snprintf(c.cmd, sizeof c.cmd, "%s", t->name);
        rc = t->run(&c, argc - i, argv + i);
        goto out;
    }
    cli_usage(&c, "unknown command \"%s\"", argv[i]);
out:
    fflush(stdout);
    cli_free(&c);
    return rc;
}
