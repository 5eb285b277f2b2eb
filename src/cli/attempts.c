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
    cli_fmt_cut(error, sizeof error, json_string_value(json_object_get(a, "error")));
    error[strcspn(error, "\r\n")] = 0;
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
    static const char *const head[] = {"ATTEMPT", "OUTCOME", "JOB",  "WORKER",
                                       "LEASED",  "TOOK",    "ERROR"};
    static const cli_job_list what = {"attempts", "rllllrl", head, attempt_row, "had no attempt"};
    return cli_show_job_list(c, &spec, &what, argc, argv);
}
