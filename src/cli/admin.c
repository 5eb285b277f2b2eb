/* tenq stats, tenant, queue: counts and settings. */
#include "cli/cli.h"

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

static void counts_cells(cli_table *t, const json_t *o)
{
    static const char *const keys[] = {"ready",  "scheduled", "blocked",
                                       "leased", "running",   "dead"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cell_field(t, o, keys[i]);
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
        static const char *const head[] = {"QUEUE",   "READY", "SCHEDULED", "BLOCKED", "LEASED",
                                           "RUNNING", "DEAD",  "LAG",       "DONE/S",  "FAILED/S"};
        cli_table t;
        cli_table_init(&t, "lrrrrrrrrr", head);
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
        static const char *const head[] = {"TENANT",    "SLOTS",   "IN_USE", "READY",
                                           "SCHEDULED", "BLOCKED", "LEASED", "RUNNING",
                                           "DEAD",      "LAG",     "DONE/S", "FAILED/S"};
        cli_table t;
        cli_table_init(&t, "lrrrrrrrrrrr", head);
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
        "Counts per queue and per tenant: jobs ready, scheduled, blocked, leased,\n"
        "running and dead; the lag (how long the next eligible job has been\n"
        "ready); jobs completed and failed per second over the last minute.",
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
    static const char *const head[] = {"TENANT",  "SLOTS",     "WEIGHT",  "IN_USE",
                                       "READY",   "SCHEDULED", "BLOCKED", "LEASED",
                                       "RUNNING", "DEAD",      "LAG"};
    cli_table t;
    cli_table_init(&t, "lrrrrrrrrrr", head);
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

static int tenant_set(cli *c, int argc, char **argv)
{
    const char *slots = NULL, *weight = NULL;
    const cli_opt opts[] = {{"slots", "N|unlimited",
                             "jobs leased or running at once, across queues (0 pauses)", &slots,
                             NULL},
                            {"weight", "N", "share in fair queues (default 1)", &weight, NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"tenant set NAME [--slots N|unlimited] [--weight N]",
                           "Changes a tenant's settings (creating it when missing).", opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *body = json_object();
    long long n;
    if (slots) {
        if (!strcmp(slots, "unlimited")) {
            json_object_set_new(body, "slots", json_null());
        } else if (cli_int(c, "slots", slots, 0, 4294967294LL, &n)) {
            json_object_set_new(body, "slots", json_integer(n));
        } else {
            json_decref(body);
            return CLI_USAGE;
        }
    }
    if (weight) {
        if (!cli_int(c, "weight", weight, 1, 1000000, &n)) {
            json_decref(body);
            return CLI_USAGE;
        }
        json_object_set_new(body, "weight", json_integer(n));
    }
    char path[512];
    cli_path(path, sizeof path, "/v1/tenants/", pos[0]);
    return call_show(c, "PUT", path, body, print_object);
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

typedef enum { Q_ENUM, Q_MS, Q_INT, Q_BOOL, Q_BYTES, Q_CAP } qkind;

/* Every queue setting of docs/API.md: one row drives the flag, its check
 * and the JSON field. */
static const struct qsetting {
    const char *flag, *field;
    qkind kind;
    const char *metavar, *help;
} qsettings[] = {
    {"order", "order", Q_ENUM, "fifo|fair",
     "fifo (default), or fair: tenants take turns by weight"},
    {"delivery", "delivery", Q_ENUM, "at-least-once|at-most-once",
     "retry failed and expired attempts (default), or never hand a job out twice"},
    {"lease", "lease_ms", Q_MS, "DURATION",
     "lease length before a silent worker's job retries (5m)"},
    {"max-attempts", "max_attempts", Q_INT, "N", "attempts before the morgue (default 25)"},
    {"backoff", "backoff", Q_ENUM, "default|fixed|exponential", "delay between attempts"},
    {"backoff-base", "backoff_base_ms", Q_MS, "DURATION", "fixed delay, or exponential's base"},
    {"backoff-max", "backoff_max_ms", Q_MS, "DURATION", "exponential's longest delay"},
    {"merge", "merge", Q_BOOL, "true|false", "merge payloads of a lane into its waiting job"},
    {"dedup-window", "dedup_window_ms", Q_MS, "DURATION", "how long unique keys hold (10m)"},
    {"retention", "retention_ms", Q_MS, "DURATION",
     "keep finished jobs this long (7d; 0: forever)"},
    {"max-payload", "max_payload_bytes", Q_BYTES, "BYTES", "largest args (1MiB)"},
    {"tenant-cap", "tenant_cap", Q_CAP, "N|none", "jobs of one tenant leased or running at once"},
};
#define NQSETTINGS (sizeof qsettings / sizeof qsettings[0])

/* The JSON value of a setting's flag; NULL after a usage error. */
static json_t *qsetting_value(cli *c, const struct qsetting *q, const char *v)
{
    long long n;
    int64_t ms;
    bool b;
    switch (q->kind) {
    case Q_ENUM: {
        /* the choices are the metavar's */
        size_t vl = strlen(v);
        for (const char *p = q->metavar; *p;) {
            size_t l = strcspn(p, "|");
            if (l == vl && !strncmp(p, v, l)) return json_string(v);
            p += l + (p[l] == '|');
        }
        cli_usage(c, "--%s: expected %s, not \"%s\"", q->flag, q->metavar, v);
        return NULL;
    }
    case Q_MS: return cli_duration(c, q->flag, v, &ms) ? json_integer(ms) : NULL;
    case Q_INT: return cli_int(c, q->flag, v, 0, 1LL << 50, &n) ? json_integer(n) : NULL;
    case Q_BOOL: return cli_bool(c, q->flag, v, &b) ? json_boolean(b) : NULL;
    case Q_BYTES: return cli_bytes(c, q->flag, v, &n) ? json_integer(n) : NULL;
    case Q_CAP:
        if (!strcmp(v, "none") || !strcmp(v, "unlimited")) return json_null();
        return cli_int(c, q->flag, v, 0, 4294967294LL, &n) ? json_integer(n) : NULL;
    }
    return NULL;
}

static void queues_show(const json_t *a)
{
    json_t *list = json_object_get(a, "queues");
    if (json_array_size(list) == 0) {
        printf("no queues yet\n");
        return;
    }
    static const char *const head[] = {"QUEUE",   "ORDER", "DELIVERY", "LEASE", "ATTEMPTS",
                                       "BACKOFF", "MERGE", "CAP",      "READY", "LEASED",
                                       "RUNNING", "DEAD",  "LAG"};
    cli_table t;
    cli_table_init(&t, "llllrllrrrrrr", head);
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

static int queue_set(cli *c, int argc, char **argv)
{
    const char *vals[NQSETTINGS] = {0};
    cli_opt opts[NQSETTINGS + 1];
    memset(opts, 0, sizeof opts);
    for (size_t i = 0; i < NQSETTINGS; i++) {
        opts[i].name = qsettings[i].flag;
        opts[i].metavar = qsettings[i].metavar;
        opts[i].help = qsettings[i].help;
        opts[i].val = &vals[i];
    }
    const cli_spec spec = {"queue set NAME [--order fifo|fair] [--lease 5m] [...]",
                           "Changes a queue's settings (creating it when missing); they take\n"
                           "effect at once.  Durations: 500ms, 10s, 5m, 2h, 7d.",
                           opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *body = json_object();
    for (size_t i = 0; i < NQSETTINGS; i++) {
        if (!vals[i]) continue;
        json_t *v = qsetting_value(c, &qsettings[i], vals[i]);
        if (!v) {
            json_decref(body);
            return CLI_USAGE;
        }
        json_object_set_new(body, qsettings[i].field, v);
    }
    char path[512];
    cli_path(path, sizeof path, "/v1/queues/", pos[0]);
    return call_show(c, "PUT", path, body, print_object);
}

int cmd_queue(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {{"ls", queue_ls, "list queues"},
                                    {"show", queue_show, "show one queue"},
                                    {"set", queue_set, "change a queue's settings"},
                                    {NULL, NULL, NULL}};
    return cli_dispatch(c, "queue", table, argc, argv);
}
