// SPDX-License-Identifier: Apache-2.0
/* tenq morgue ls, requeue, rm: dead jobs, one by id or in bulk by filter. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#define BULK_MAX 100000 /* the server's most per request */

/* A dead job as a row: id, tenant, queue, type, attempts, when it died,
 * its error. */
static void dead_row(cli_table *t, const json_t *o)
{
    char died[64], err[64];
    cli_fmt_time(json_integer_value(json_object_get(o, "finished_at")), died, sizeof died);
    /* errors can be long: the table keeps their start */
    cli_fmt_cut(err, sizeof err, cli_str(o, "error"));
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
    cli_table_cell(t, "%s", cli_str(o, "tenant"));
    cli_table_cell(t, "%s", cli_str(o, "queue"));
    cli_table_cell(t, "%s", cli_str(o, "type"));
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "attempts")));
    cli_table_cell(t, "%s", died);
    cli_table_cell(t, "%s", err);
}

static int morgue_ls(cli *c, int argc, char **argv)
{
    static const char *const head[] = {"ID",       "TENANT", "QUEUE", "TYPE",
                                       "ATTEMPTS", "DIED",   "ERROR"};
    const char *tenant = NULL, *queue = NULL, *type = NULL, *sort = NULL, *limit = "50",
               *after = NULL;
    const cli_opt opts[] = {
        {"tenant", "NAME", "only this tenant's dead jobs", &tenant, NULL},
        {"queue", "NAME", "only this queue's", &queue, NULL},
        {"type", "TYPE", "only this type", &type, NULL},
        {"sort", "finished|id", "newest death first (default), or by id", &sort, NULL},
        {"limit", "N", "at most N jobs, 1..1000 (default 50)", &limit, NULL},
        {"after", "CURSOR", "the page after this cursor (the \"next\" of a page)", &after, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"morgue ls [--tenant T] [--queue Q] [--type T] [--sort finished|id] "
                           "[--limit N] [--after CURSOR]",
                           "Lists dead jobs.", opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    long long n;
    if (!cli_int(c, "limit", limit, 1, 1000, &n)) return CLI_USAGE;
    if (sort && strcmp(sort, "finished") != 0 && strcmp(sort, "id") != 0)
        return cli_usage(c, "--sort: expected finished or id, not \"%s\"", sort);
    char path[2048] = "/v1/morgue";
    cli_query(path, sizeof path, "tenant", tenant);
    cli_query(path, sizeof path, "queue", queue);
    cli_query(path, sizeof path, "type", type);
    cli_query(path, sizeof path, "sort", sort);
    cli_query(path, sizeof path, "limit", limit);
    cli_query(path, sizeof path, "after", after);
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "jobs"), *next = json_object_get(a, "next");
    if (c->json) {
        cli_print_answer(c);
    } else if (!cli_print_rows(list, "rllllll", head, dead_row)) {
        printf("the morgue is empty\n");
    } else if (json_is_string(next)) {
        fprintf(stderr, "more: --after %s\n", json_string_value(next));
    }
    json_decref(a);
    return 0;
}

/* requeue and rm: one job by id, or every dead job matching the filters. */
static int morgue_act(cli *c, int argc, char **argv, bool requeue)
{
    const char *tenant = NULL, *queue = NULL, *type = NULL, *limit = NULL;
    bool all = false;
    const cli_opt opts[] = {
        {"tenant", "NAME", "bulk: this tenant's dead jobs", &tenant, NULL},
        {"queue", "NAME", "bulk: this queue's", &queue, NULL},
        {"type", "TYPE", "bulk: this type's", &type, NULL},
        {"limit", "N", "bulk: at most N jobs", &limit, NULL},
        {"all", NULL, "bulk with no filter: every dead job (that this token may see)", NULL, &all},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec_requeue = {
        "morgue requeue ID | --tenant T --queue Q --type T [--limit N] | --all",
        "Puts dead jobs back in their queue (attempts reset, run now).", opts, 0, 1};
    const cli_spec spec_rm = {"morgue rm ID | --tenant T --queue Q --type T [--limit N] | --all",
                              "Deletes dead jobs (from the store too).", opts, 0, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, requeue ? &spec_requeue : &spec_rm, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    bool filtered = tenant || queue || type;
    if (np == 1) {
        if (filtered || limit || all) return cli_usage(c, "give an ID or filters, not both");
        uint64_t id;
        if (!cli_id(c, pos[0], &id)) return CLI_USAGE;
        char path[96];
        snprintf(path, sizeof path, requeue ? "/v1/morgue/%llu/requeue" : "/v1/morgue/%llu",
                 (unsigned long long)id);
        json_t *a;
        if ((rc = cli_call(c, requeue ? "POST" : "DELETE", path, NULL, &a)) != 0) return rc;
        if (c->json) {
            cli_print_answer(c);
        } else if (!requeue) {
            printf("job %llu deleted\n", (unsigned long long)id);
        } else if (json_is_integer(json_object_get(a, "merged_into"))) {
            printf("job %llu requeued: merged into job %lld\n", (unsigned long long)id,
                   (long long)json_integer_value(json_object_get(a, "merged_into")));
        } else {
            printf("job %llu requeued: %s\n", (unsigned long long)id, cli_str(a, "state"));
        }
        json_decref(a);
        return 0;
    }
    if (!filtered && !all)
        return cli_usage(c, "give a job ID, filters (--tenant, --queue, --type), or --all");
    long long want = -1, done = 0;
    if (limit && !cli_int(c, "limit", limit, 1, 1LL << 40, &want)) return CLI_USAGE;
    const char *word = requeue ? "requeued" : "deleted";
    /* the server acts on at most BULK_MAX per request: repeat until done */
    for (;;) {
        long long ask = want < 0 || want - done > BULK_MAX ? BULK_MAX : want - done;
        json_t *body = json_pack("{s:I}", "limit", (json_int_t)ask);
        if (tenant) json_object_set_new(body, "tenant", json_string(tenant));
        if (queue) json_object_set_new(body, "queue", json_string(queue));
        if (type) json_object_set_new(body, "type", json_string(type));
        json_t *a;
        rc = cli_call(c, "POST", requeue ? "/v1/morgue/requeue" : "/v1/morgue/delete", body, &a);
        if (rc) return rc;
        long long n = json_integer_value(json_object_get(a, word));
        json_decref(a);
        done += n;
        if (n < ask || (want >= 0 && done >= want)) break;
    }
    if (c->json)
        printf("{\"%s\":%lld}\n", word, done);
    else
        printf("%s %lld job%s\n", word, done, done == 1 ? "" : "s");
    return 0;
}

static int morgue_requeue(cli *c, int argc, char **argv)
{
    return morgue_act(c, argc, argv, true);
}

static int morgue_rm(cli *c, int argc, char **argv)
{
    return morgue_act(c, argc, argv, false);
}

int cmd_morgue(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {
        {"ls", morgue_ls, "list dead jobs"},
        {"requeue", morgue_requeue, "requeue dead jobs, one or in bulk"},
        {"rm", morgue_rm, "delete dead jobs, one or in bulk"},
        {NULL, NULL, NULL}};
    return cli_dispatch(c, "morgue", table, argc, argv);
}
