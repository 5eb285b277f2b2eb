// SPDX-License-Identifier: Apache-2.0
/* tenq batch create, add, show, ls: groups of jobs with callbacks. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_MAX 10000 /* the server's limit of jobs a request */

/* Jobs as JSON lines on stdin into a list; false when a line is not an
 * object (said on stderr). */
static bool read_jobs(cli *c, json_t *list)
{
    (void)c;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    bool ok = true;
    while (ok && (len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        size_t n = (size_t)len;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
        if (n == 0) continue;
        json_error_t e;
        json_t *o = json_loadb(line, n, 0, &e);
        if (!json_is_object(o)) {
            fprintf(stderr, "tenq: stdin line %ld: not a JSON object (%s)\n", lineno, e.text);
            json_decref(o);
            ok = false;
        } else if (json_array_size(list) >= BATCH_MAX) {
            fprintf(stderr, "tenq: more than %d jobs; add the rest with tenq batch add\n",
                    BATCH_MAX);
            json_decref(o);
            ok = false;
        } else {
            json_array_append_new(list, o);
        }
    }
    free(line);
    if (ok && json_array_size(list) == 0) {
        fprintf(stderr, "tenq: no jobs on stdin (one JSON object per line)\n");
        ok = false;
    }
    return ok;
}

static void print_batch(const json_t *o)
{
    char t[64];
    cli_kv(stdout, "batch", "%lld", (long long)json_integer_value(json_object_get(o, "id")));
    cli_kv(stdout, "tenant", "%s", cli_str(o, "tenant"));
    cli_kv(stdout, "status", "%s", cli_str(o, "status"));
    cli_fmt_time(json_integer_value(json_object_get(o, "created_at")), t, sizeof t);
    cli_kv(stdout, "created", "%s", t);
    json_t *closed = json_object_get(o, "closed_at");
    if (json_is_integer(closed)) {
        cli_fmt_time(json_integer_value(closed), t, sizeof t);
        cli_kv(stdout, "closed", "%s", t);
    }
    cli_kv(stdout, "progress", "%lld of %lld finished (%.1f%%), %lld pending",
           (long long)json_integer_value(json_object_get(o, "finished")),
           (long long)json_integer_value(json_object_get(o, "total")),
           100.0 * json_number_value(json_object_get(o, "progress")),
           (long long)json_integer_value(json_object_get(o, "pending")));
    const json_t *counts = json_object_get(o, "counts");
    const char *k;
    json_t *v;
    bool first = true;
    json_object_foreach((json_t *)counts, k, v)
    {
        if (json_integer_value(v) == 0) continue;
        cli_kv(stdout, first ? "counts" : "", "%s %lld", k, (long long)json_integer_value(v));
        first = false;
    }
    const json_t *cbs = json_object_get(o, "callbacks");
    json_object_foreach((json_t *)cbs, k, v)
    {
        json_t *job = json_object_get(v, "job");
        char what[160];
        if (json_is_integer(job))
            snprintf(what, sizeof what, "%s/%s: job %lld", cli_str(v, "queue"), cli_str(v, "type"),
                     (long long)json_integer_value(job));
        else
            snprintf(what, sizeof what, "%s/%s: not made", cli_str(v, "queue"), cli_str(v, "type"));
        cli_kv(stdout, k, "%s", what);
    }
}

static void print_made(const json_t *a, const char *idkey)
{
    size_t n = json_array_size(json_object_get(a, "jobs"));
    printf("batch %lld: %zu job%s %s\n", (long long)json_integer_value(json_object_get(a, idkey)),
           n, n == 1 ? "" : "s", strcmp(idkey, "id") == 0 ? "submitted" : "added");
}

static bool callback_opt(cli *c, json_t *body, const char *name, const char *text)
{
    if (!text) return true;
    json_t *v;
    if (!cli_json(c, name, text, &v)) return false;
    json_object_set_new(body, name, v);
    return true;
}

/* Reads the jobs from stdin into body, posts it to path and prints the
 * batch (its id under `key`) and its jobs; takes body. */
static int post_jobs(cli *c, json_t *body, const char *path, const char *key)
{
    json_t *list = json_array();
    json_object_set_new(body, "jobs", list);
    if (!read_jobs(c, list)) {
        json_decref(body);
        return CLI_USAGE;
    }
    json_t *a;
    int rc = cli_call(c, "POST", path, body, &a);
    if (rc) return rc;
    if (c->json)
        cli_print_answer(c);
    else
        print_made(a, key);
    json_decref(a);
    return 0;
}

static int batch_create(cli *c, int argc, char **argv)
{
    const char *tenant = NULL, *complete = NULL, *success = NULL, *death = NULL;
    const cli_opt opts[] = {
        {"tenant", "NAME", "the batch's tenant (a tenant token's own when left out)", &tenant,
         NULL},
        {"on-complete", "JSON",
         "a job to submit once every job has finished: {\"queue\", "
         "\"type\", \"args\", ...}",
         &complete, NULL},
        {"on-success", "JSON", "a job to submit once every job has succeeded", &success, NULL},
        {"on-death", "JSON", "a job to submit when the first job dies", &death, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "batch create [--tenant T] [--on-complete JSON] [--on-success JSON] [--on-death JSON]",
        "Submits a batch: its jobs from stdin, one JSON object per line (the fields of a\n"
        "submit; at most 10,000), and its callbacks, jobs the server submits itself\n"
        "when the batch is done.  Prints the batch's id.",
        opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *body = json_object();
    if (tenant) json_object_set_new(body, "tenant", json_string(tenant));
    if (!callback_opt(c, body, "on_complete", complete) ||
        !callback_opt(c, body, "on_success", success) ||
        !callback_opt(c, body, "on_death", death)) {
        json_decref(body);
        return CLI_USAGE;
    }
    return post_jobs(c, body, "/v1/batches", "id");
}

static int batch_add(cli *c, int argc, char **argv)
{
    const cli_opt opts[] = {{NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"batch add ID",
                           "Adds jobs to an open batch, from stdin, one JSON object per line\n"
                           "(at most 10,000).  A closed batch refuses them (batch_closed).",
                           opts, 1, 1};
    uint64_t id;
    char path[64];
    int rc = cli_parse_id(c, &spec, argc, argv, "/v1/batches/", "/jobs", &id, path, sizeof path);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    return post_jobs(c, json_object(), path, "batch");
}

static int batch_show(cli *c, int argc, char **argv)
{
    const cli_opt opts[] = {{NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"batch show ID",
                           "Shows a batch: open or closed, its progress, its jobs by state and\n"
                           "the jobs its callbacks made.",
                           opts, 1, 1};
    uint64_t id;
    char path[64];
    int rc = cli_parse_id(c, &spec, argc, argv, "/v1/batches/", "", &id, path, sizeof path);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    if (c->json)
        cli_print_answer(c);
    else
        print_batch(a);
    json_decref(a);
    return 0;
}

/* A batch as a row: id, tenant, status, its jobs, those pending and dead,
 * when it was made. */
static void batch_row(cli_table *t, const json_t *o)
{
    char created[64];
    cli_fmt_time(json_integer_value(json_object_get(o, "created_at")), created, sizeof created);
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
    cli_table_cell(t, "%s", cli_str(o, "tenant"));
    cli_table_cell(t, "%s", cli_str(o, "status"));
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "total")));
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "pending")));
    cli_table_cell(
        t, "%lld",
        (long long)json_integer_value(json_object_get(json_object_get(o, "counts"), "dead")));
    cli_table_cell(t, "%s", created);
}

static int batch_ls(cli *c, int argc, char **argv)
{
    static const char *const head[] = {"BATCH",   "TENANT", "STATUS", "TOTAL",
                                       "PENDING", "DEAD",   "CREATED"};
    const char *tenant = NULL, *limit = NULL;
    const cli_opt opts[] = {{"tenant", "NAME", "only this tenant's batches", &tenant, NULL},
                            {"limit", "N", "at most N (default 100)", &limit, NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"batch ls [--tenant T] [--limit N]", "Lists batches, newest first.",
                           opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512] = "/v1/batches";
    cli_query(path, sizeof path, "tenant", tenant);
    cli_query(path, sizeof path, "limit", limit);
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "batches");
    if (c->json) {
        cli_print_answer(c);
    } else if (!cli_print_rows(list, "rllrrrl", head, batch_row)) {
        printf("no batches\n");
    }
    json_decref(a);
    return 0;
}

int cmd_batch(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {
        {"create", batch_create, "submit a batch of jobs (stdin) with callbacks"},
        {"add", batch_add, "add jobs (stdin) to an open batch"},
        {"show", batch_show, "show a batch's progress, counts and callbacks"},
        {"ls", batch_ls, "list batches"},
        {NULL, NULL, NULL}};
    return cli_dispatch(c, "batch", table, argc, argv);
}
