// SPDX-License-Identifier: Apache-2.0
/* tenq attempts: a job's attempt history as a table. */
#include "cli/cli.h"

#include <string.h>

/* One attempt as a row: number, outcome, what became of the job, worker,
 * leased, how long, error (its first line, cut short). */
static void attempt_row(cli_table *t, const json_t *a)
{
    char leased[64], took[32] = "-", error[96];
    json_t *l = json_object_get(a, "leased_at"), *f = json_object_get(a, "finished_at");
    cli_fmt_time(json_is_integer(l) ? json_integer_value(l) : 0, leased, sizeof leased);
    if (json_is_integer(l) && json_is_integer(f))
        cli_fmt_duration(json_integer_value(f) - json_integer_value(l), took, sizeof took);
    const char *e = json_string_value(json_object_get(a, "error"));
    snprintf(error, sizeof error, "%s", e ? e : "-");
    error[strcspn(error, "\r\n")] = 0;
    if (e && strlen(e) >= sizeof error - 1) memcpy(error + sizeof error - 4, "...", 4);
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(a, "attempt")));
    cli_table_cell(t, "%s", cli_str(a, "outcome"));
    cli_table_cell(t, "%s", cli_str(a, "job_state"));
    cli_table_cell(t, "%s", cli_str(a, "worker"));
    cli_table_cell(t, "%s", leased);
    cli_table_cell(t, "%s", took);
    cli_table_cell(t, "%s", error);
}

int cmd_attempts(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {
        "attempts ID",
        "Shows every attempt of a job, oldest first: how it ended (failed, expired,\n"
        "timed_out, cancelled, succeeded; leased or running: the current one), what\n"
        "became of the job, the worker, when it was leased, how long it took, its\n"
        "error.  --json prints the server's answer, stats included.",
        NULL, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    uint64_t id;
    if (!cli_id(c, pos[0], &id)) return CLI_USAGE;
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu/attempts", (unsigned long long)id);
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "attempts");
    if (c->json) {
        cli_print_answer(c);
    } else if (json_array_size(list) == 0) {
        printf("job %llu is %s and has had no attempt\n", (unsigned long long)id,
               cli_str(a, "state"));
    } else {
        static const char *const head[] = {"ATTEMPT", "OUTCOME", "JOB",  "WORKER",
                                           "LEASED",  "TOOK",    "ERROR"};
        cli_table t;
        cli_table_init(&t, "rllllrl", head);
        size_t i;
        json_t *x;
        json_array_foreach(list, i, x) attempt_row(&t, x);
        cli_table_print(&t, stdout);
        cli_table_free(&t);
    }
    json_decref(a);
    return 0;
}
