// SPDX-License-Identifier: Apache-2.0
/* tenq audit: the audit log (GET /v1/audit) as a table, newest first. */
#include "cli/cli.h"

#include <stdlib.h>

/* Appends key=N to the query q for a flag's number N (1 to hi), when the
 * flag was given; false after a usage error. */
static bool query_int(cli *c, char *q, size_t cap, const char *flag, const char *key, const char *v,
                      long long hi)
{
    long long n;
    char num[32];
    if (!v) return true;
    if (!cli_int(c, flag, v, 1, hi, &n)) return false;
    snprintf(num, sizeof num, "%lld", n);
    cli_query(q, cap, key, num);
    return true;
}

/* An entry as a row: id, when, the token and its role, the request, its
 * status, where it came from, its detail (cut short). */
static void entry_row(cli_table *t, const json_t *o)
{
    char when[64], detail[64];
    cli_fmt_time(json_integer_value(json_object_get(o, "at")), when, sizeof when);
    cli_fmt_cut(detail, sizeof detail, json_string_value(json_object_get(o, "detail")));
    json_t *tok = json_object_get(o, "token_id");
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
    cli_table_cell(t, "%s", when);
    if (json_is_integer(tok))
        cli_table_cell(t, "%lld", (long long)json_integer_value(tok));
    else
        cli_table_cell(t, "-");
    cli_table_cell(t, "%s", cli_str(o, "role"));
    cli_table_cell(t, "%s %s", cli_str(o, "method"), cli_str(o, "path"));
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "status")));
    cli_table_cell(t, "%s", cli_str(o, "peer"));
    cli_table_cell(t, "%s", detail);
}

int cmd_audit(cli *c, int argc, char **argv)
{
    static const char *const head[] = {"ID",      "WHEN",   "TOKEN", "ROLE",
                                       "REQUEST", "STATUS", "FROM",  "DETAIL"};
    const char *token = NULL, *tenant = NULL, *method = NULL, *path = NULL, *since = NULL,
               *until = NULL, *limit = NULL, *before = NULL;
    const cli_opt opts[] = {
        {"token-id", "ID", "changes made with this token", &token, NULL},
        {"tenant", "NAME", "changes made by this tenant's tokens (admin)", &tenant, NULL},
        {"method", "METHOD", "PUT, POST or DELETE", &method, NULL},
        {"path", "PREFIX", "requests whose path starts so (/v1/queues/reports)", &path, NULL},
        {"since", "TIME", "at or after (ms since the epoch, or RFC 3339)", &since, NULL},
        {"until", "TIME", "before", &until, NULL},
        {"limit", "N", "entries at most (default 100, at most 1000)", &limit, NULL},
        {"before", "ID", "entries older than this one (the next page)", &before, NULL},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "audit [--token-id ID] [--tenant NAME] [--method M] [--path PREFIX] [--since TIME] "
        "[--until TIME] [--limit N] [--before ID]",
        "Lists the audit log, newest first: every change made through the API\n"
        "(settings, pauses, tokens, bulk actions, cancels, the morgue's requeues\n"
        "and deletes, schedules), who made it (token, role), when, from where,\n"
        "and the request.  A tenant token sees its own tenant's entries.",
        opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char q[1600] = "/v1/audit", num[32];
    int64_t ms;
    if (!query_int(c, q, sizeof q, "--token-id", "token_id", token, INT64_MAX)) return CLI_USAGE;
    cli_query(q, sizeof q, "tenant", tenant);
    cli_query(q, sizeof q, "method", method);
    cli_query(q, sizeof q, "path", path);
    const char *const times[2][2] = {{"since", since}, {"until", until}};
    for (int i = 0; i < 2; i++) {
        if (!times[i][1]) continue;
        char flag[16];
        snprintf(flag, sizeof flag, "--%s", times[i][0]);
        if (!cli_time(c, flag, times[i][1], &ms)) return CLI_USAGE;
        snprintf(num, sizeof num, "%lld", (long long)ms);
        cli_query(q, sizeof q, times[i][0], num);
    }
    if (!query_int(c, q, sizeof q, "--limit", "limit", limit, 1000) ||
        !query_int(c, q, sizeof q, "--before", "before", before, INT64_MAX))
        return CLI_USAGE;
    json_t *a;
    if ((rc = cli_call(c, "GET", q, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "entries"), *next = json_object_get(a, "next_before");
    if (c->json) {
        cli_print_answer(c);
    } else if (!cli_print_rows(list, "rlrllrll", head, entry_row)) {
        printf("no entries\n");
    } else if (json_is_integer(next)) {
        printf("(more: tenq audit --before %lld)\n", (long long)json_integer_value(next));
    }
    json_decref(a);
    return 0;
}
