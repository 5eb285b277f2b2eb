// SPDX-License-Identifier: Apache-2.0
/* tenq status, wait, cancel, jobs: reading and cancelling jobs; a job's
 * lists (tenq attempts, tenq steps). */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

/* ---- printing a job ----------------------------------------------------------------------------
 */

static void kv_field(const json_t *job, const char *key, const char *label, bool always)
{
    json_t *v = json_object_get(job, key);
    if (!always && (!v || json_is_null(v))) return;
    char buf[4096];
    cli_fmt_field(job, key, buf, sizeof buf);
    cli_kv(stdout, label, "%s", buf);
}

static void kv_time(const json_t *job, const char *key, const char *label)
{
    json_t *v = json_object_get(job, key);
    if (!json_is_integer(v)) return;
    char buf[64];
    cli_fmt_time(json_integer_value(v), buf, sizeof buf);
    cli_kv(stdout, label, "%s", buf);
}

void cli_print_job(const json_t *job)
{
    kv_field(job, "id", "id", true);
    kv_field(job, "state", "state", true);
    /* why it is not running yet, in the server's words, with the time it waits for */
    json_t *w = json_object_get(job, "waiting");
    if (json_is_object(w)) {
        const char *msg = json_string_value(json_object_get(w, "message"));
        json_t *until = json_object_get(w, "until");
        char at[64] = "";
        if (json_is_integer(until)) {
            char t[48];
            cli_fmt_time(json_integer_value(until), t, sizeof t);
            snprintf(at, sizeof at, " (%s)", t);
        }
        cli_kv(stdout, "waiting", "%s%s", msg ? msg : "?", at);
    }
    kv_field(job, "tenant", "tenant", true);
    kv_field(job, "queue", "queue", true);
    kv_field(job, "type", "type", true);
    kv_field(job, "key", "key", false);
    for (int kind = 0; kind < 2; kind++) {
        const char *field = kind ? "rate_keys" : "concurrency_keys";
        json_t *ck = json_object_get(job, field);
        if (!json_array_size(ck)) continue;
        char line[1200] = "";
        size_t at = 0, i;
        json_t *k;
        json_array_foreach(ck, i, k)
        {
            json_t *l = json_object_get(k, kind ? "cost" : "limit");
            int w = snprintf(line + at, sizeof line - at, "%s%s", i ? ", " : "", cli_str(k, "key"));
            at += w > 0 && (size_t)w < sizeof line - at ? (size_t)w : 0;
            if (json_is_integer(l)) {
                w = snprintf(line + at, sizeof line - at, " (%s %lld)", kind ? "cost" : "limit",
                             (long long)json_integer_value(l));
                at += w > 0 && (size_t)w < sizeof line - at ? (size_t)w : 0;
            }
        }
        cli_kv(stdout, field, "%s", line);
    }
    kv_time(job, "expire_at", "expire_at");
    if (json_is_true(json_object_get(job, "debounced"))) {
        char t[64] = "no latest start";
        json_t *u = json_object_get(job, "debounce_until");
        if (json_is_integer(u)) cli_fmt_time(json_integer_value(u), t, sizeof t);
        cli_kv(stdout, "debounced", "yes (latest start %s)", t);
    }
    kv_field(job, "batch", "batch", false);
    kv_field(job, "batch_callback", "batch_callback", false);
    kv_field(job, "priority", "priority", true);
    cli_kv(stdout, "attempts", "%lld of %lld",
           (long long)json_integer_value(json_object_get(job, "attempts")),
           (long long)json_integer_value(json_object_get(job, "max_attempts")));
    kv_time(job, "run_at", "run_at");
    kv_time(job, "created_at", "created");
    kv_time(job, "ready_at", "ready");
    kv_time(job, "leased_at", "leased");
    kv_time(job, "started_at", "started");
    kv_time(job, "finished_at", "finished");
    kv_time(job, "lease_until", "lease_until");
    kv_field(job, "worker", "worker", false);
    if (json_is_true(json_object_get(job, "cancel_requested")))
        cli_kv(stdout, "cancel_requested", "true");
    kv_field(job, "merged_into", "merged_into", false);
    kv_field(job, "parents", "parents", false);
    kv_field(job, "on_parent_failure", "on_parent_failure", false);
    kv_field(job, "children", "children", false);
    kv_field(job, "steps", "steps", false);
    kv_field(job, "awaited_by", "awaited_by", false);
    kv_field(job, "unique_key", "unique_key", false);
    kv_field(job, "idempotency_key", "idempotency_key", false);
    kv_field(job, "error", "error", false);
    kv_field(job, "args", "args", false);
    kv_field(job, "payloads", "payloads", false);
    kv_field(job, "progress", "progress", false);
    kv_field(job, "result", "result", false);
    kv_field(job, "stats", "stats", false);
}

/* Prints a job from the library: its JSON, or the readable view. */
static int show_job(cli *c, const tenq_job *j)
{
    if (c->json) {
        printf("%s\n", j->json);
        return 0;
    }
    json_t *o = json_loads(j->json, 0, NULL);
    if (!o) {
        fprintf(stderr, "tenq: protocol: the job is not JSON\n");
        return CLI_ERR;
    }
    cli_print_job(o);
    json_decref(o);
    return 0;
}

/* ---- status ---------------------------------------------------------------------------------- */

int cmd_status(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {"status ID",
                                  "Shows a job: its state, attempts, times, args, "
                                  "result and last error (every attempt: tenq attempts ID).",
                                  NULL, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    uint64_t id;
    if (!cli_id(c, pos[0], &id)) return CLI_USAGE;
    tenq_client *tc = cli_client(c);
    if (!tc) return CLI_USAGE;
    tenq_job *j = NULL;
    if ((rc = tenq_status(tc, id, &j)) != 0) return cli_error(c, rc);
    rc = show_job(c, j);
    tenq_job_free(j);
    return rc;
}

/* ---- wait ------------------------------------------------------------------------------------ */

enum { WAIT_SUCCEEDED = 0, WAIT_FAILED = 1, WAIT_ERROR = 2, WAIT_TIMEOUT = 3 };

int cmd_wait(cli *c, int argc, char **argv)
{
    const char *timeout = "30s";
    const cli_opt opts[] = {
        {"timeout", "DURATION", "how long to wait (default 30s; 0: look once)", &timeout, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "wait ID [--timeout 30s]",
        "Waits for a job to finish and shows it.  A job whose payload merged into\n"
        "another is followed to that job.\n\n"
        "exit status: 0 succeeded; 1 dead or cancelled; 2 an error (usage, no such\n"
        "job, no server); 3 still unfinished when the timeout passed.",
        opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : WAIT_ERROR;
    uint64_t id;
    int64_t ms;
    if (!cli_id(c, pos[0], &id) || !cli_duration(c, "timeout", timeout, &ms)) return WAIT_ERROR;
    tenq_client *tc = cli_client(c);
    if (!tc) return WAIT_ERROR;
    int64_t end = cli_now_ms() + ms;
    tenq_job *j = NULL;
    for (int hops = 0;; hops++) {
        int64_t left = end - cli_now_ms();
        if ((rc = tenq_wait(tc, id, left > 0 ? left : 0, &j)) != 0) {
            cli_error(c, rc);
            return WAIT_ERROR;
        }
        if (j->state != TENQ_STATE_MERGED || !j->merged_into || hops >= 100) break;
        if (!c->json)
            fprintf(stderr, "tenq: job %llu merged into job %llu\n", (unsigned long long)id,
                    (unsigned long long)j->merged_into);
        id = j->merged_into;
        tenq_job_free(j);
        j = NULL;
    }
    tenq_state st = j->state;
    rc = show_job(c, j);
    tenq_job_free(j);
    if (rc) return WAIT_ERROR;
    if (st == TENQ_STATE_SUCCEEDED) return WAIT_SUCCEEDED;
    if (tenq_state_finished(st)) return WAIT_FAILED;
    return WAIT_TIMEOUT;
}

/* ---- cancel ---------------------------------------------------------------------------------- */

int cmd_cancel(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {
        "cancel ID",
        "Cancels a job.  A job not yet leased is cancelled at once; a leased or\n"
        "running one is marked, and its worker stops it at its next heartbeat.",
        NULL, 1, 1};
    uint64_t id;
    char path[64];
    int rc = cli_parse_id(c, &spec, argc, argv, "/v1/jobs/", "/cancel", &id, path, sizeof path);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *a;
    if ((rc = cli_call(c, "POST", path, NULL, &a)) != 0) return rc;
    if (c->json) {
        cli_print_answer(c);
    } else {
        const char *st = json_string_value(json_object_get(a, "state"));
        if (json_is_true(json_object_get(a, "cancel_requested")))
            printf("job %llu is %s: cancel requested (its worker stops it)\n",
                   (unsigned long long)id, st ? st : "?");
        else
            printf("job %llu %s\n", (unsigned long long)id, st ? st : "?");
    }
    json_decref(a);
    return 0;
}

/* ---- jobs ------------------------------------------------------------------------------------ */

#define PAGE_MAX 1000

static const char *const job_head[] = {"ID",   "STATE", "TENANT",   "QUEUE",
                                       "TYPE", "KEY",   "ATTEMPTS", "CREATED"};

static void job_row(cli_table *t, const json_t *j)
{
    char id[32], key[300], created[64];
    cli_fmt_field(j, "id", id, sizeof id);
    cli_fmt_field(j, "key", key, sizeof key);
    cli_fmt_time(json_integer_value(json_object_get(j, "created_at")), created, sizeof created);
    cli_table_cell(t, "%s", id);
    cli_table_cell(t, "%s", cli_str(j, "state"));
    cli_table_cell(t, "%s", cli_str(j, "tenant"));
    cli_table_cell(t, "%s", cli_str(j, "queue"));
    cli_table_cell(t, "%s", cli_str(j, "type"));
    cli_table_cell(t, "%s", key);
    cli_table_cell(t, "%lld/%lld", (long long)json_integer_value(json_object_get(j, "attempts")),
                   (long long)json_integer_value(json_object_get(j, "max_attempts")));
    cli_table_cell(t, "%s", created);
}

int cmd_jobs(cli *c, int argc, char **argv)
{
    const char *tenant = NULL, *queue = NULL, *type = NULL, *state = NULL, *key = NULL,
               *limit = "50", *after = NULL;
    const cli_opt opts[] = {
        {"tenant", "NAME", "only this tenant's jobs", &tenant, NULL},
        {"queue", "NAME", "only this queue's", &queue, NULL},
        {"type", "TYPE", "only this type", &type, NULL},
        {"state", "STATE",
         "waiting, scheduled, blocked, ready, leased, running, dead, succeeded, "
         "cancelled, merged",
         &state, NULL},
        {"key", "KEY", "only this lane", &key, NULL},
        {"limit", "N", "at most N jobs (default 50)", &limit, NULL},
        {"after", "ID", "the page after this cursor (the \"next\" of a page)", &after, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"jobs [--tenant T] [--queue Q] [--type T] [--state S] [--key K] "
                           "[--limit N] [--after ID]",
                           "Lists jobs, newest first.", opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    long long want;
    uint64_t cursor = 0;
    if (!cli_int(c, "limit", limit, 1, 1000000, &want)) return CLI_USAGE;
    if (after && !cli_id(c, after, &cursor)) return CLI_USAGE;
    if (state && tenq_state_parse(state) == TENQ_STATE_UNKNOWN)
        return cli_usage(c, "--state: unknown state \"%s\"", state);
    json_t *all = json_array();
    json_t *next = json_null();
    long long got = 0;
    while (got < want) {
        char path[2048] = "/v1/jobs", num[32];
        cli_query(path, sizeof path, "tenant", tenant);
        cli_query(path, sizeof path, "queue", queue);
        cli_query(path, sizeof path, "type", type);
        cli_query(path, sizeof path, "state", state);
        cli_query(path, sizeof path, "key", key);
        snprintf(num, sizeof num, "%lld", want - got > PAGE_MAX ? PAGE_MAX : want - got);
        cli_query(path, sizeof path, "limit", num);
        if (cursor) {
            snprintf(num, sizeof num, "%llu", (unsigned long long)cursor);
            cli_query(path, sizeof path, "after_id", num);
        }
        json_t *a;
        if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) goto out;
        json_t *page = json_object_get(a, "jobs");
        size_t i;
        json_t *j;
        json_array_foreach(page, i, j) json_array_append(all, j);
        got += (long long)json_array_size(page);
        json_decref(next);
        next = json_incref(json_object_get(a, "next"));
        if (!next) next = json_null();
        json_decref(a);
        if (!json_is_integer(next)) break;
        cursor = (uint64_t)json_integer_value(next);
    }
    if (c->json) {
        json_t *o = json_pack("{s:O,s:O}", "jobs", all, "next", next);
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s ? s : "");
        free(s);
        json_decref(o);
    } else if (!cli_print_rows(all, "rllllllr", job_head, job_row)) {
        printf("no jobs\n");
    } else if (json_is_integer(next)) {
        fprintf(stderr, "more: --after %lld\n", (long long)json_integer_value(next));
    }
out:
    json_decref(all);
    json_decref(next);
    return rc;
}

/* ---- a job's lists: attempts, steps ---------------------------------------------------------- */

int cli_show_job_list(cli *c, const cli_spec *spec, const cli_job_list *what, int argc, char **argv)
{
    uint64_t id;
    char tail[32], path[64];
    snprintf(tail, sizeof tail, "/%s", what->list);
    int rc = cli_parse_id(c, spec, argc, argv, "/v1/jobs/", tail, &id, path, sizeof path);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    if (c->json)
        cli_print_answer(c);
    else if (!cli_print_rows(json_object_get(a, what->list), what->align, what->header, what->row))
        printf("job %llu is %s and has %s\n", (unsigned long long)id, cli_str(a, "state"),
               what->none);
    json_decref(a);
    return 0;
}
