// SPDX-License-Identifier: Apache-2.0
/* tenq steps: a job's durable steps as a table; tenq event send. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

/* A step as a row: position, name, kind, done, attempt, its result or
 * error (cut short), and what it waits for. */
static void step_row(cli_table *t, const json_t *x)
{
    char result[96] = "-", when[64] = "-";
    const char *e = json_string_value(json_object_get(x, "error"));
    json_t *r = json_object_get(x, "result");
    if (e) {
        snprintf(result, sizeof result, "error: %s", e);
    } else if (r && !json_is_null(r)) {
        char *text = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
        cli_fmt_cut(result, sizeof result, text ? text : "?");
        free(text);
    }
    result[strcspn(result, "\r\n")] = 0;
    const char *kind = cli_str(x, "kind");
    char waits[160] = "";
    if (!strcmp(kind, "event"))
        snprintf(waits, sizeof waits, "event %s", cli_str(x, "event"));
    else if (!strcmp(kind, "child"))
        snprintf(waits, sizeof waits, "job %lld",
                 (long long)json_integer_value(json_object_get(x, "child")));
    json_t *u = json_object_get(x, "until");
    if (json_is_integer(u)) cli_fmt_time(json_integer_value(u), when, sizeof when);
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(x, "pos")));
    cli_table_cell(t, "%s", cli_str(x, "name"));
    cli_table_cell(t, "%s", kind);
    cli_table_cell(t, "%s", json_is_true(json_object_get(x, "done")) ? "done" : "waiting");
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(x, "attempt")));
    cli_table_cell(t, "%s", *waits ? waits : "-");
    cli_table_cell(t, "%s", when);
    cli_table_cell(t, "%s", result);
}

int cmd_steps(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {
        "steps ID",
        "Shows the durable steps a job's handler stored, in order: kind (step, sleep,\n"
        "event, child), done or waiting, the attempt that stored it, what it waits\n"
        "for and until when, its result or error.  --json prints the server's answer,\n"
        "results whole.",
        NULL, 1, 1};
    static const char *const head[] = {"POS",     "NAME",  "KIND",  "DONE",
                                       "ATTEMPT", "WAITS", "UNTIL", "RESULT"};
    static const cli_job_list what = {"steps", "rlllrlll", head, step_row, "stored no step"};
    return cli_show_job_list(c, &spec, &what, argc, argv);
}

static int event_send(cli *c, int argc, char **argv)
{
    const char *tenant = NULL;
    const cli_opt opts[] = {{"tenant", "NAME",
                             "the event's tenant (a tenant token's own when left out)", &tenant,
                             NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "event send [--tenant T] KEY [PAYLOAD]",
        "Sends an event: every job of the tenant whose handler waits for KEY goes on,\n"
        "with PAYLOAD (JSON; null when left out) as the result of its wait; when none\n"
        "waits, the server keeps it for its --event-window.  Prints how many jobs it\n"
        "woke.  Sent again after a lost answer, it delivers nothing twice.",
        opts, 1, 2};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    tenq_client *cl = cli_client(c);
    if (!cl) return CLI_ERR;
    size_t delivered = 0;
    bool kept = false;
    rc = tenq_send_event(cl, tenant, pos[0], np > 1 ? pos[1] : NULL, &delivered, &kept);
    if (rc) return cli_error(c, rc);
    if (c->json)
        printf("{\"delivered\":%zu,\"kept\":%s}\n", delivered, kept ? "true" : "false");
    else if (kept)
        printf("no job waits for %s: kept for a later wait\n", pos[0]);
    else
        printf("woke %zu job%s\n", delivered, delivered == 1 ? "" : "s");
    return CLI_OK;
}

int cmd_event(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {
        {"send", event_send, "send an event: the jobs waiting for its key go on"},
        {NULL, NULL, NULL}};
    return cli_dispatch(c, "event", table, argc, argv);
}
