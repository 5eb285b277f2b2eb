// SPDX-License-Identifier: Apache-2.0
/* tenq stats, tenant, queue: counts and settings. */
#include "cli/cli.h"

#include "base/settings.h"

#include <stdlib.h>
#include <string.h>

/* ---- shared ------------------------------------------------------------------------------------
 */

static void cell_field(cli_table *t, const json_t *o, const char *key)
{
    char buf[256];
    cli_fmt_field(o, key, buf, sizeof buf);
    cli_table_cell(t, "%s", buf);
}

static void cell_lag(cli_table *t, const json_t *o)
{
    json_t *v = json_object_get(o, "lag_ms");
    char buf[32] = "-";
    if (json_is_integer(v)) {
        if (json_integer_value(v) == 0)
            snprintf(buf, sizeof buf, "0");
        else
            cli_fmt_duration(json_integer_value(v), buf, sizeof buf);
    }
    cli_table_cell(t, "%s", buf);
}

static void cell_rate(cli_table *t, const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        cli_table_cell(t, "%.2f", json_number_value(v));
    else
        cli_table_cell(t, "-");
}

static void cell_slots(cli_table *t, const json_t *o, const char *key, const char *none)
{
    json_t *v = json_object_get(o, key);
    if (json_is_null(v))
        cli_table_cell(t, "%s", none);
    else
        cell_field(t, o, key);
}

/* The counts the server sends (docs/API.md), as columns: the LIVE states
 * of tenq/states.h, for the headers and the cells of every table that shows
 * them. */
static const struct {
    const char *key, *head;
} count_cols[] = {
#define COUNT_COL_(name, word, abi, kind, finished, help) TENQ_STATE_IF_LIVE(kind, {#word, #name}, )
    TENQ_STATE_TABLE(COUNT_COL_)
#undef COUNT_COL_
};
#define N_COUNT_COLS (sizeof count_cols / sizeof count_cols[0])
#define MAX_COLS     24

/* A table of `pre` columns, the counts and the lag, then `post` columns:
 * the first left-aligned, the rest right.  align (MAX_COLS + 1 bytes) must
 * outlive the table. */
static void counts_table(cli_table *t, char *align, const char *const *pre, size_t npre,
                         const char *const *post, size_t npost)
{
    const char *head[MAX_COLS];
    size_t n = 0;
    for (size_t i = 0; i < npre; i++) head[n++] = pre[i];
    for (size_t i = 0; i < N_COUNT_COLS; i++) head[n++] = count_cols[i].head;
    head[n++] = "LAG";
    for (size_t i = 0; i < npost; i++) head[n++] = post[i];
    for (size_t i = 0; i < n; i++) align[i] = i ? 'r' : 'l';
    align[n] = 0;
    cli_table_init(t, align, head);
}

static void counts_cells(cli_table *t, const json_t *o)
{
    for (size_t i = 0; i < N_COUNT_COLS; i++) cell_field(t, o, count_cols[i].key);
    cell_lag(t, o);
}

/* "key value" lines of every field of an object, in the server's order. */
static void print_object(const json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        char buf[1024];
        if (!strcmp(k, "lag_ms") && json_is_integer(v)) {
            cli_fmt_duration(json_integer_value(v), buf, sizeof buf);
        } else if (json_is_real(v)) {
            snprintf(buf, sizeof buf, "%.2f", json_real_value(v));
        } else if (json_is_null(v) && (!strcmp(k, "slots") || !strcmp(k, "tenant_cap"))) {
            snprintf(buf, sizeof buf, "%s", !strcmp(k, "slots") ? "unlimited" : "none");
        } else {
            cli_fmt_field(o, k, buf, sizeof buf);
        }
        cli_kv(stdout, strcmp(k, "lag_ms") ? k : "lag", "%s", buf);
    }
}

/* Calls method path with body (taken; may be NULL); prints the JSON
 * answer, or hands it to show. */
static int call_show(cli *c, const char *method, const char *path, json_t *body,
                     void (*show)(const json_t *))
{
    json_t *a;
    int rc = cli_call(c, method, path, body, &a);
    if (rc) return rc;
    if (c->json)
        cli_print_answer(c);
    else
        show(a);
    json_decref(a);
    return 0;
}

static int show(cli *c, const char *path, void (*fn)(const json_t *))
{
    return call_show(c, "GET", path, NULL, fn);
}

/* ---- settings (base/settings.h): a flag per setting --------------------------------------------
 */

#define MAX_SETTINGS 32

/* The JSON value of a setting's flag; NULL after a usage error. */
static json_t *setting_value(cli *c, const tq_setting *r, const char *v)
{
    long long n;
    int64_t ms;
    bool b;
    switch (r->kind) {
    case TQ_SET_CHOICE: {
        if (tq_setting_word_index(r, v) >= 0) return json_string(v);
        char words[128];
        tq_setting_words_text(r, words, sizeof words);
        cli_usage(c, "--%s: expected %s, not \"%s\"", r->flag, words, v);
        return NULL;
    }
    case TQ_SET_MS: return cli_duration(c, r->flag, v, &ms) ? json_integer(ms) : NULL;
    case TQ_SET_BOOL: return cli_bool(c, r->flag, v, &b) ? json_boolean(b) : NULL;
    case TQ_SET_BYTES: return cli_bytes(c, r->flag, v, &n) ? json_integer(n) : NULL;
    case TQ_SET_LIMIT:
        if (!strcmp(v, "none") || !strcmp(v, "unlimited")) return json_null();
        /* fall through */
    case TQ_SET_COUNT: return cli_int(c, r->flag, v, r->min, r->max, &n) ? json_integer(n) : NULL;
    }
    return NULL;
}

/* `tenant set`, `queue set` and `key set`: a flag per row; the server
 * checks the values against the same rows.  One positional (a name, put
 * after base), or two for a key's (tenant and key, in the body). */
int cli_settings_set(cli *c, int argc, char **argv, const tq_setting *rows, size_t n,
                     const char *usage, const char *what, const char *base, int npos)
{
    const char *vals[MAX_SETTINGS] = {0};
    char metavars[MAX_SETTINGS][160], helps[MAX_SETTINGS][320];
    cli_opt opts[MAX_SETTINGS + 1];
    memset(opts, 0, sizeof opts);
    for (size_t i = 0; i < n && i < MAX_SETTINGS; i++) {
        const tq_setting *r = &rows[i];
        static const char *const meta[] = {[TQ_SET_MS] = "DURATION",
                                           [TQ_SET_COUNT] = "N",
                                           [TQ_SET_BYTES] = "BYTES",
                                           [TQ_SET_BOOL] = "true|false",
                                           [TQ_SET_LIMIT] = "N|none"};
        if (r->kind == TQ_SET_CHOICE)
            tq_setting_words_text(r, metavars[i], sizeof metavars[i]);
        else
            snprintf(metavars[i], sizeof metavars[i], "%s", meta[r->kind]);
        char def[64];
        if (r->kind == TQ_SET_CHOICE)
            snprintf(def, sizeof def, "%s", tq_setting_word(r, r->def));
        else if (r->kind == TQ_SET_MS)
            cli_fmt_duration(r->def, def, sizeof def);
        else if (r->kind == TQ_SET_BOOL)
            snprintf(def, sizeof def, "%s", r->def ? "true" : "false");
        else if (r->kind == TQ_SET_LIMIT && r->def == TQ_UNLIMITED)
            snprintf(def, sizeof def, "none");
        else if (r->kind == TQ_SET_BYTES && r->def % 1048576 == 0)
            snprintf(def, sizeof def, "%lldMiB", r->def / 1048576);
        else
            snprintf(def, sizeof def, "%lld", r->def);
        snprintf(helps[i], sizeof helps[i], "%s (default %s)", r->help, def);
        opts[i] = (cli_opt){r->flag, metavars[i], helps[i], &vals[i], NULL};
    }
    const cli_spec spec = {usage, what, opts, npos, npos};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *body = json_object();
    if (npos == 2) {
        json_t *t = json_string(pos[0]), *k = json_string(pos[1]);
        if (!t || !k) {
            json_decref(t);
            json_decref(k);
            json_decref(body);
            return cli_usage(c, "the tenant and the key must be UTF-8");
        }
        json_object_set_new(body, "tenant", t);
        json_object_set_new(body, "key", k);
    }
    for (size_t i = 0; i < n && i < MAX_SETTINGS; i++) {
        if (!vals[i]) continue;
        json_t *v = setting_value(c, &rows[i], vals[i]);
        if (!v) {
            json_decref(body);
            return CLI_USAGE;
        }
        json_object_set_new(body, rows[i].name, v);
    }
    char path[512];
    if (npos == 2)
        snprintf(path, sizeof path, "%s", base);
    else
        cli_path(path, sizeof path, base, pos[0]);
    return call_show(c, "PUT", path, body, print_object);
}

/* ---- stats -------------------------------------------------------------------------------------
 */

static void stats_show(const json_t *a)
{
    json_t *queues = json_object_get(a, "queues"), *tenants = json_object_get(a, "tenants");
    json_t *totals = json_object_get(a, "totals");
    size_t i;
    json_t *o;
    if (json_array_size(queues) == 0) {
        printf("no queues yet\n");
    } else {
        static const char *const pre[] = {"QUEUE"}, *const post[] = {"DONE/S", "FAILED/S"};
        cli_table t;
        char align[MAX_COLS + 1];
        counts_table(&t, align, pre, 1, post, 2);
        json_array_foreach(queues, i, o)
        {
            cli_table_cell(&t, "%s", cli_str(o, "name"));
            counts_cells(&t, o);
            cell_rate(&t, o, "completed_per_s");
            cell_rate(&t, o, "failed_per_s");
        }
        if (json_is_object(totals) && json_array_size(queues) > 1) {
            cli_table_cell(&t, "(all)");
            counts_cells(&t, totals);
            double ok = 0, bad = 0;
            json_array_foreach(queues, i, o)
            {
                ok += json_number_value(json_object_get(o, "completed_per_s"));
                bad += json_number_value(json_object_get(o, "failed_per_s"));
            }
            cli_table_cell(&t, "%.2f", ok);
            cli_table_cell(&t, "%.2f", bad);
        }
        cli_table_print(&t, stdout);
        cli_table_free(&t);
    }
    if (json_array_size(tenants) > 0) {
        static const char *const pre[] = {"TENANT", "SLOTS", "IN_USE"}, *const post[] = {
                                                                            "DONE/S", "FAILED/S"};
        cli_table t;
        char align[MAX_COLS + 1];
        counts_table(&t, align, pre, 3, post, 2);
        json_array_foreach(tenants, i, o)
        {
            cli_table_cell(&t, "%s", cli_str(o, "name"));
            cell_slots(&t, o, "slots", "unlimited");
            cell_field(&t, o, "in_use");
            counts_cells(&t, o);
            cell_rate(&t, o, "completed_per_s");
            cell_rate(&t, o, "failed_per_s");
        }
        printf("\n");
        cli_table_print(&t, stdout);
        cli_table_free(&t);
    }
}

int cmd_stats(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {
        "stats",
        "Counts per queue and per tenant: jobs ready, scheduled, blocked, waiting\n"
        "(for their parents), leased, running and dead; the lag (how long the next\n"
        "eligible job has been ready); jobs completed and failed per second over\n"
        "the last minute.",
        NULL, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    return show(c, "/v1/stats", stats_show);
}

/* ---- tenants -----------------------------------------------------------------------------------
 */

static void tenants_show(const json_t *a)
{
    json_t *list = json_object_get(a, "tenants");
    if (json_array_size(list) == 0) {
        printf("no tenants yet\n");
        return;
    }
    static const char *const pre[] = {"TENANT", "SLOTS", "WEIGHT", "IN_USE"};
    cli_table t;
    char align[MAX_COLS + 1];
    counts_table(&t, align, pre, 4, NULL, 0);
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o)
    {
        cli_table_cell(&t, "%s", cli_str(o, "name"));
        cell_slots(&t, o, "slots", "unlimited");
        cell_field(&t, o, "weight");
        cell_field(&t, o, "in_use");
        counts_cells(&t, o);
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
}

static int tenant_ls(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {"tenant ls", "Lists tenants with their slots, weight and counts.",
                                  NULL, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    return show(c, "/v1/tenants", tenants_show);
}

static int tenant_show(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {"tenant show NAME", "Shows a tenant.", NULL, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512];
    cli_path(path, sizeof path, "/v1/tenants/", pos[0]);
    return show(c, path, print_object);
}

static const tq_setting tenant_rows[] = {TQ_TENANT_SETTINGS(TQ_SETTING_ROW)};

static int tenant_set(cli *c, int argc, char **argv)
{
    return cli_settings_set(c, argc, argv, tenant_rows, sizeof tenant_rows / sizeof tenant_rows[0],
                            "tenant set NAME [--slots N|unlimited] [--weight N]",
                            "Changes a tenant's settings (creating it when missing).",
                            "/v1/tenants/", 1);
}

int cmd_tenant(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {{"ls", tenant_ls, "list tenants"},
                                    {"show", tenant_show, "show one tenant"},
                                    {"set", tenant_set, "set a tenant's slots and weight"},
                                    {NULL, NULL, NULL}};
    return cli_dispatch(c, "tenant", table, argc, argv);
}

/* ---- queues ------------------------------------------------------------------------------------
 */

static void queues_show(const json_t *a)
{
    json_t *list = json_object_get(a, "queues");
    if (json_array_size(list) == 0) {
        printf("no queues yet\n");
        return;
    }
    static const char *const head[] = {"QUEUE",   "ORDER",   "DELIVERY", "LEASE",  "ATTEMPTS",
                                       "BACKOFF", "MERGE",   "CAP",      "PAUSED", "READY",
                                       "LEASED",  "RUNNING", "DEAD",     "LAG"};
    cli_table t;
    cli_table_init(&t, "llllrllrlrrrrr", head);
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o)
    {
        char lease[32];
        cli_fmt_duration(json_integer_value(json_object_get(o, "lease_ms")), lease, sizeof lease);
        cli_table_cell(&t, "%s", cli_str(o, "name"));
        cli_table_cell(&t, "%s", cli_str(o, "order"));
        cli_table_cell(&t, "%s", cli_str(o, "delivery"));
        cli_table_cell(&t, "%s", lease);
        cell_field(&t, o, "max_attempts");
        cli_table_cell(&t, "%s", cli_str(o, "backoff"));
        cell_field(&t, o, "merge");
        cell_slots(&t, o, "tenant_cap", "none");
        size_t np = json_array_size(json_object_get(o, "paused_tenants"));
        if (json_is_true(json_object_get(o, "paused")))
            cli_table_cell(&t, "yes");
        else if (np)
            cli_table_cell(&t, "%zu tenant%s", np, np == 1 ? "" : "s");
        else
            cli_table_cell(&t, "-");
        cell_field(&t, o, "ready");
        cell_field(&t, o, "leased");
        cell_field(&t, o, "running");
        cell_field(&t, o, "dead");
        cell_lag(&t, o);
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
}

static int queue_ls(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {"queue ls", "Lists queues with their settings and counts.", NULL,
                                  0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    return show(c, "/v1/queues", queues_show);
}

static int queue_show(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {"queue show NAME", "Shows a queue's settings and counts.", NULL,
                                  1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512];
    cli_path(path, sizeof path, "/v1/queues/", pos[0]);
    return show(c, path, print_object);
}

static const tq_setting queue_rows[] = {TQ_QUEUE_SETTINGS(TQ_SETTING_ROW)};

static int queue_set(cli *c, int argc, char **argv)
{
    return cli_settings_set(c, argc, argv, queue_rows, sizeof queue_rows / sizeof queue_rows[0],
                            "queue set NAME [--order fifo|fair] [--lease 5m] [...]",
                            "Changes a queue's settings (creating it when missing); they take\n"
                            "effect at once.  Durations: 500ms, 10s, 5m, 2h, 7d.",
                            "/v1/queues/", 1);
}

/* `queue pause` and `queue resume`: the whole queue, or one tenant's jobs in it. */
static int queue_pause(cli *c, int argc, char **argv, bool pause)
{
    const char *tenant = NULL;
    const cli_opt opts[] = {{"tenant", "NAME",
                             "only this tenant's jobs (a tenant token: its own, always)", &tenant,
                             NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {pause ? "queue pause NAME [--tenant T]"
                                 : "queue resume NAME [--tenant T]",
                           pause ? "Pauses a queue: none of its jobs (or none of one tenant's) is\n"
                                   "leased until it is resumed; submits are taken as always, and\n"
                                   "jobs already leased run to the end.  It survives restarts."
                                 : "Resumes a paused queue (or one tenant's jobs in it).",
                           opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512];
    cli_path(path, sizeof path, "/v1/queues/", pos[0]);
    strncat(path, pause ? "/pause" : "/resume", sizeof path - strlen(path) - 1);
    json_t *body = tenant ? json_pack("{ss}", "tenant", tenant) : NULL;
    return call_show(c, "POST", path, body, print_object);
}

static int queue_pause_cmd(cli *c, int argc, char **argv)
{
    return queue_pause(c, argc, argv, true);
}

static int queue_resume_cmd(cli *c, int argc, char **argv)
{
    return queue_pause(c, argc, argv, false);
}

int cmd_queue(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {
        {"ls", queue_ls, "list queues"},
        {"show", queue_show, "show one queue"},
        {"set", queue_set, "change a queue's settings"},
        {"pause", queue_pause_cmd, "pause a queue, whole or for a tenant"},
        {"resume", queue_resume_cmd, "resume a paused queue"},
        {NULL, NULL, NULL}};
    return cli_dispatch(c, "queue", table, argc, argv);
}

/* ---- health ------------------------------------------------------------------------------------
 */

int cmd_health(cli *c, int argc, char **argv)
{
    const char *timeout_s = NULL;
    bool ready = false;
    const cli_opt opts[] = {
        {"ready", NULL, "ask /readyz: ok only where a server serves (the leader)", NULL, &ready},
        {"timeout", "DURATION", "to connect and be answered, per server (default 5s)", &timeout_s,
         NULL},
        {NULL, NULL, NULL, NULL, NULL},
    };
    const cli_spec spec = {
        "health [--ready] [--timeout DURATION]",
        "Asks each server given (--server, TENQ_SERVER, else http://127.0.0.1:7070)\n"
        "GET /healthz, or /readyz with --ready, on its own: no leader followed, no\n"
        "retry, no token needed.  Prints a line per server (its JSON with --json).\n"
        "Exit status: 0 when every one answered 200, 1 when any did not.  /healthz\n"
        "is liveness: 200 whenever the server answers (its status says reloading\n"
        "while it waits for its store); /readyz is readiness: 200 only where a\n"
        "server takes writes.  For health checks of containers and supervisors.",
        opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    int64_t timeout_ms = 5000;
    if (timeout_s) {
        if (!cli_duration(c, "--timeout", timeout_s, &timeout_ms)) return CLI_USAGE;
        if (timeout_ms < 1 || timeout_ms > 3600000)
            return cli_usage(c, "--timeout: from 1ms to 1h");
    }
    static const char *const local[] = {"http://127.0.0.1:7070"};
    const char *const *servers = c->nservers ? c->servers : local;
    size_t n = c->nservers ? c->nservers : 1;
    const char *path = ready ? "/readyz" : "/healthz";
    rc = CLI_OK;
    for (size_t i = 0; i < n; i++) {
        tenq_options o;
        tenq_options_init(&o);
        cli_options(c, &o);
        o.servers = &servers[i];
        o.nservers = 1;
        o.connect_timeout_ms = (int)timeout_ms;
        o.request_timeout_ms = (int)timeout_ms;
        o.failover_ms = -1;
        tenq_client *tc = NULL;
        int status = 0;
        char *text = NULL;
        int e = tenq_client_new(&o, &tc);
        if (e == TENQ_EINVALID) {
            cli_usage(c, "%s", tenq_errmsg(tc));
            tenq_client_free(tc);
            return CLI_USAGE;
        }
        if (e == 0) e = tenq_request(tc, "GET", path, NULL, 0, &status, &text);
        json_t *a = text ? json_loads(text, 0, NULL) : NULL;
        if (c->json && text) {
            fputs(text, stdout);
            if (!*text || text[strlen(text) - 1] != '\n') fputc('\n', stdout);
        }
        if (e == 0 && status == 200) {
            char term[32];
            cli_fmt_field(a, "term", term, sizeof term);
            if (!c->json)
                printf("%s: %s, %s, term %s\n", servers[i], cli_str(a, "status"),
                       cli_str(a, "role"), term);
        } else {
            rc = CLI_ERR;
            if (status)
                fprintf(stderr, "tenq health: %s: %d %s%s%s\n", servers[i], status,
                        cli_str(a, "status"), a ? ", " : "", a ? cli_str(a, "role") : "");
            else
                fprintf(stderr, "tenq health: %s: %s: %s\n", servers[i], tenq_err_word(e),
                        tc && *tenq_errmsg(tc) ? tenq_errmsg(tc) : tenq_err_message(e));
        }
        json_decref(a);
        tenq_free(text);
        tenq_client_free(tc);
    }
    return rc;
}
