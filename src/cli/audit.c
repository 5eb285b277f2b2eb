// SPDX-License-Identifier: Apache-2.0
/* tenq audit: the audit log (GET /v1/audit) as a table, newest first. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_audit(cli *c, int argc, char **argv)
{
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
    long long n;
    if (token) {
        if (!cli_int(c, "--token-id", token, 1, INT64_MAX, &n)) return CLI_USAGE;
        snprintf(num, sizeof num, "%lld", n);
        cli_query(q, sizeof q, "token_id", num);
    }
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
    if (limit) {
        if (!cli_int(c, "--limit", limit, 1, 1000, &n)) return CLI_USAGE;
        snprintf(num, sizeof num, "%lld", n);
        cli_query(q, sizeof q, "limit", num);
    }
    if (before) {
        if (!cli_int(c, "--before", before, 1, INT64_MAX, &n)) return CLI_USAGE;
        snprintf(num, sizeof num, "%lld", n);
        cli_query(q, sizeof q, "before", num);
    }
    json_t *a;
    if ((rc = cli_call(c, "GET", q, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "entries");
    if (c->json) {
        cli_print_answer(c);
    } else if (json_array_size(list) == 0) {
        printf("no entries\n");
    } else {
        static const char *const head[] = {"ID",      "WHEN",   "TOKEN", "ROLE",
                                           "REQUEST", "STATUS", "FROM",  "DETAIL"};
        cli_table t;
        cli_table_init(&t, "rlrllrll", head);
        size_t i;
        json_t *o;
        json_array_foreach(list, i, o)
        {
            char when[64], detail[64];
            cli_fmt_time(json_integer_value(json_object_get(o, "at")), when, sizeof when);
            const char *d = json_string_value(json_object_get(o, "detail"));
            snprintf(detail, sizeof detail, "%s", d ? d : "-");
            if (d && strlen(d) >= sizeof detail - 1) memcpy(detail + sizeof detail - 4, "...", 4);
            json_t *tok = json_object_get(o, "token_id");
            cli_table_cell(&t, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
            cli_table_cell(&t, "%s", when);
            if (json_is_integer(tok))
                cli_table_cell(&t, "%lld", (long long)json_integer_value(tok));
            else
                cli_table_cell(&t, "-");
            cli_table_cell(&t, "%s", cli_str(o, "role"));
            cli_table_cell(&t, "%s %s", cli_str(o, "method"), cli_str(o, "path"));
            cli_table_cell(&t, "%lld", (long long)json_integer_value(json_object_get(o, "status")));
            cli_table_cell(&t, "%s", cli_str(o, "peer"));
            cli_table_cell(&t, "%s", detail);
        }
        cli_table_print(&t, stdout);
        cli_table_free(&t);
        json_t *next = json_object_get(a, "next_before");
        if (json_is_integer(next))
            printf("(more: tenq audit --before %lld)\n", (long long)json_integer_value(next));
    }
    json_decref(a);
    return 0;
}
