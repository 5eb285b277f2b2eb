// SPDX-License-Identifier: Apache-2.0
/* tenq schedule set, ls, show, rm, pause, resume: periodic jobs. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static void fmt_tick(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v))
        cli_fmt_time(json_integer_value(v), buf, n);
    else
        snprintf(buf, n, "-");
}

static void print_schedule(const json_t *o)
{
    const json_t *job = json_object_get(o, "job");
    char t[64];
    cli_kv(stdout, "name", "%s", cli_str(o, "name"));
    cli_kv(stdout, "cron", "%s", cli_str(o, "cron"));
    cli_kv(stdout, "timezone", "%s", cli_str(o, "timezone"));
    cli_kv(stdout, "missed", "%s", cli_str(o, "missed"));
    cli_kv(stdout, "paused", "%s", json_is_true(json_object_get(o, "paused")) ? "yes" : "no");
    cli_kv(stdout, "tenant", "%s", cli_str(job, "tenant"));
    cli_kv(stdout, "queue", "%s", cli_str(job, "queue"));
    cli_kv(stdout, "type", "%s", cli_str(job, "type"));
    char *args = json_dumps(json_object_get(job, "args"), JSON_COMPACT | JSON_SORT_KEYS);
    cli_kv(stdout, "args", "%s", args ? args : "{}");
    free(args);
    if (json_object_get(job, "key")) cli_kv(stdout, "key", "%s", cli_str(job, "key"));
    cli_kv(stdout, "priority", "%lld",
           (long long)json_integer_value(json_object_get(job, "priority")));
    fmt_tick(json_object_get(o, "last_tick"), t, sizeof t);
    cli_kv(stdout, "last tick", "%s", t);
    if (json_object_get(o, "last_error"))
        cli_kv(stdout, "last error", "%s", cli_str(o, "last_error"));
    const json_t *runs = json_object_get(o, "next_runs");
    size_t i;
    const json_t *r;
    json_array_foreach(runs, i, r)
    {
        fmt_tick(r, t, sizeof t);
        cli_kv(stdout, i == 0 ? "next runs" : "", "%s", t);
    }
    if (json_array_size(runs) == 0) cli_kv(stdout, "next runs", "-");
}

static int sched_set(cli *c, int argc, char **argv)
{
    const char *cron = NULL, *tz = NULL, *missed = NULL, *tenant = NULL, *queue = NULL,
               *type = NULL, *args = NULL, *key = NULL, *priority = NULL, *unique_key = NULL,
               *max_attempts = NULL, *timeout = NULL;
    bool paused = false, unique = false;
    const cli_opt opts[] = {
        {"cron", "EXPR",
         "when: five fields (minute hour day month weekday), @hourly, @daily, @weekly, "
         "@monthly, @yearly, or '@every 30s'",
         &cron, NULL},
        {"timezone", "ZONE", "the zone of its wall-clock times, e.g. Europe/Berlin (default UTC)",
         &tz, NULL},
        {"missed", "skip|once|each",
         "ticks missed while no server led or it was paused: none made up (default), one job, "
         "or one each (at most 100)",
         &missed, NULL},
        {"paused", NULL, "created paused", NULL, &paused},
        {"tenant", "NAME", "the job's tenant (a tenant token's own when left out)", &tenant, NULL},
        {"queue", "NAME", "the job's queue", &queue, NULL},
        {"type", "TYPE", "the job's type", &type, NULL},
        {"args", "JSON", "the job's args (default {})", &args, NULL},
        {"key", "KEY", "the job's lane", &key, NULL},
        {"priority", "N", "the job's priority, -32768..32767", &priority, NULL},
        {"unique-key", "KEY", "the job's unique key", &unique_key, NULL},
        {"unique", NULL, "a tick finding the last job unfinished makes none (unique: true)", NULL,
         &unique},
        {"max-attempts", "N", "the job's attempts (default: the queue's)", &max_attempts, NULL},
        {"timeout", "DURATION", "the job's own timeout, e.g. 10m", &timeout, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "schedule set NAME --cron EXPR --queue Q --type T [--tenant T] [--timezone ZONE] "
        "[--missed skip|once|each] [--args JSON] [--paused] [job flags]",
        "Creates or replaces a schedule: a job submitted at every tick of its cron\n"
        "expression, in its time zone.  Each tick is submitted once, across restarts\n"
        "and takeovers.",
        opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    if (!cron) return cli_usage(c, "--cron is required");
    if (!queue || !type) return cli_usage(c, "--queue and --type are required");
    json_t *job = json_object();
    if (tenant) json_object_set_new(job, "tenant", json_string(tenant));
    json_object_set_new(job, "queue", json_string(queue));
    json_object_set_new(job, "type", json_string(type));
    if (args) {
        json_t *a;
        if (!cli_json(c, "args", args, &a)) {
            json_decref(job);
            return CLI_USAGE;
        }
        json_object_set_new(job, "args", a);
    }
    if (key) json_object_set_new(job, "key", json_string(key));
    if (unique_key) json_object_set_new(job, "unique_key", json_string(unique_key));
    if (unique) json_object_set_new(job, "unique", json_true());
    long long n;
    if (priority) {
        if (!cli_int(c, "priority", priority, -32768, 32767, &n)) goto usage;
        json_object_set_new(job, "priority", json_integer(n));
    }
    if (max_attempts) {
        if (!cli_int(c, "max-attempts", max_attempts, 1, 1000000, &n)) goto usage;
        json_object_set_new(job, "max_attempts", json_integer(n));
    }
    if (timeout) {
        int64_t ms;
        if (!cli_duration(c, "timeout", timeout, &ms)) goto usage;
        json_object_set_new(job, "timeout_ms", json_integer(ms));
    }
    json_t *body = json_object();
    json_object_set_new(body, "cron", json_string(cron));
    if (tz) json_object_set_new(body, "timezone", json_string(tz));
    if (missed) json_object_set_new(body, "missed", json_string(missed));
    if (paused) json_object_set_new(body, "paused", json_true());
    json_object_set_new(body, "job", job);
    char path[512];
    cli_path(path, sizeof path, "/v1/schedules/", pos[0]);
    json_t *a;
    if ((rc = cli_call(c, "PUT", path, body, &a)) != 0) return rc;
    if (c->json)
        cli_print_answer(c);
    else
        print_schedule(a);
    json_decref(a);
    return 0;
usage:
    json_decref(job);
    return CLI_USAGE;
}

/* A schedule as a row: name, cron, zone, its job's tenant, queue and
 * type, its last and next ticks, whether it is active. */
static void schedule_row(cli_table *t, const json_t *o)
{
    const json_t *job = json_object_get(o, "job");
    char last[64], next[64];
    fmt_tick(json_object_get(o, "last_tick"), last, sizeof last);
    fmt_tick(json_object_get(o, "next_tick"), next, sizeof next);
    cli_table_cell(t, "%s", cli_str(o, "name"));
    cli_table_cell(t, "%s", cli_str(o, "cron"));
    cli_table_cell(t, "%s", cli_str(o, "timezone"));
    cli_table_cell(t, "%s", cli_str(job, "tenant"));
    cli_table_cell(t, "%s", cli_str(job, "queue"));
    cli_table_cell(t, "%s", cli_str(job, "type"));
    cli_table_cell(t, "%s", last);
    cli_table_cell(t, "%s", next);
    cli_table_cell(t, "%s",
                   json_object_get(o, "last_error")             ? "error"
                   : json_is_true(json_object_get(o, "paused")) ? "paused"
                                                                : "active");
}

static int sched_ls(cli *c, int argc, char **argv)
{
    static const char *const head[] = {"NAME", "CRON",      "TIMEZONE",  "TENANT", "QUEUE",
                                       "TYPE", "LAST TICK", "NEXT TICK", "STATE"};
    const char *tenant = NULL;
    const cli_opt opts[] = {{"tenant", "NAME", "only this tenant's schedules", &tenant, NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"schedule ls [--tenant T]", "Lists schedules.", opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512] = "/v1/schedules";
    cli_query(path, sizeof path, "tenant", tenant);
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "schedules");
    if (c->json) {
        cli_print_answer(c);
    } else if (!cli_print_rows(list, "lllllllll", head, schedule_row)) {
        printf("no schedules\n");
    }
    json_decref(a);
    return 0;
}

/* show, rm, pause, resume: one schedule by name. */
static int sched_one(cli *c, int argc, char **argv, const char *method, const char *suffix,
                     const char *usage, const char *about)
{
    const cli_opt opts[] = {{NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {usage, about, opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512];
    cli_path(path, sizeof path, "/v1/schedules/", pos[0]);
    strncat(path, suffix, sizeof path - strlen(path) - 1);
    json_t *a;
    if ((rc = cli_call(c, method, path, NULL, &a)) != 0) return rc;
    if (c->json)
        cli_print_answer(c);
    else if (strcmp(method, "DELETE") == 0)
        printf("schedule %s deleted\n", pos[0]);
    else
        print_schedule(a);
    json_decref(a);
    return 0;
}

static int sched_show(cli *c, int argc, char **argv)
{
    return sched_one(c, argc, argv, "GET", "", "schedule show NAME",
                     "Shows a schedule, its last tick and its next runs.");
}

static int sched_rm(cli *c, int argc, char **argv)
{
    return sched_one(c, argc, argv, "DELETE", "", "schedule rm NAME",
                     "Deletes a schedule (the jobs it made stay).");
}

static int sched_pause(cli *c, int argc, char **argv)
{
    return sched_one(c, argc, argv, "POST", "/pause", "schedule pause NAME",
                     "Pauses a schedule: no tick is submitted until it is resumed.");
}

static int sched_resume(cli *c, int argc, char **argv)
{
    return sched_one(c, argc, argv, "POST", "/resume", "schedule resume NAME",
                     "Resumes a schedule; the ticks missed while paused are made up as its\n"
                     "missed policy says (skip: none, once: one job, each: one each, at most "
                     "100).");
}

int cmd_schedule(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {{"set", sched_set, "create or replace a schedule"},
                                    {"ls", sched_ls, "list schedules"},
                                    {"show", sched_show, "show a schedule and its next runs"},
                                    {"rm", sched_rm, "delete a schedule"},
                                    {"pause", sched_pause, "pause a schedule"},
                                    {"resume", sched_resume, "resume a schedule"},
                                    {NULL, NULL, NULL}};
    return cli_dispatch(c, "schedule", table, argc, argv);
}
