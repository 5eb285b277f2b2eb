// SPDX-License-Identifier: Apache-2.0
/* tenq bulk: an action on every job a filter matches (POST /v1/jobs/bulk). */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_bulk(cli *c, int argc, char **argv)
{
    const char *tenant = NULL, *queue = NULL, *type = NULL, *key = NULL, *state = NULL;
    const char *after = NULL, *before = NULL, *priority = NULL, *limit = NULL;
    bool dry_run = false, all = false;
    const cli_opt opts[] = {
        {"tenant", "NAME", "this tenant's jobs (a tenant token: its own, always)", &tenant, NULL},
        {"queue", "NAME", "this queue's", &queue, NULL},
        {"type", "TYPE", "this type's", &type, NULL},
        {"key", "KEY", "this lane's", &key, NULL},
        {"state", "STATE",
         "this state's, one its action applies to (cancel: waiting, scheduled, blocked, "
         "ready, leased or running; retry_now: scheduled; set_priority: waiting, scheduled, "
         "blocked or ready; delete: succeeded, cancelled or merged)",
         &state, NULL},
        {"created-after", "TIME", "made at or after (ms since the epoch, or RFC 3339)", &after,
         NULL},
        {"created-before", "TIME", "made before", &before, NULL},
        {"priority", "N", "set_priority: the new priority", &priority, NULL},
        {"limit", "N", "at most N jobs, lowest ids first (default and most: 100000)", &limit, NULL},
        {"dry-run", NULL, "only count the jobs it would change", NULL, &dry_run},
        {"all", NULL, "no filter: every job (that this token may see)", NULL, &all},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "bulk cancel|retry_now|set_priority|delete [filters] [--priority N] [--dry-run]",
        "Acts on every job the filters match: cancel (unfinished jobs; a leased one is\n"
        "asked to stop), retry_now (a job in backoff or scheduled runs now),\n"
        "set_priority (jobs not yet leased), delete (finished jobs, from the store).\n"
        "Give at least one filter, or --all.",
        opts, 1, 1};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    if (!(tenant || queue || type || key || state || after || before) && !all)
        return cli_usage(c, "give filters (--tenant, --queue, --type, ...) or --all");
    json_t *body = json_pack("{s:s, s:b}", "action", pos[0], "dry_run", dry_run);
    const struct {
        const char *name, *v;
    } strs[] = {
        {"tenant", tenant}, {"queue", queue}, {"type", type}, {"key", key}, {"state", state}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (strs[i].v) json_object_set_new(body, strs[i].name, json_string(strs[i].v));
    int64_t ms;
    long long n;
    bool ok = true;
    if (ok && after && (ok = cli_time(c, "created-after", after, &ms)))
        json_object_set_new(body, "created_after", json_integer(ms));
    if (ok && before && (ok = cli_time(c, "created-before", before, &ms)))
        json_object_set_new(body, "created_before", json_integer(ms));
    if (ok && priority && (ok = cli_int(c, "priority", priority, -32768, 32767, &n)))
        json_object_set_new(body, "priority", json_integer(n));
    if (ok && limit && (ok = cli_int(c, "limit", limit, 1, 100000, &n)))
        json_object_set_new(body, "limit", json_integer(n));
    if (!ok) {
        json_decref(body);
        return CLI_USAGE;
    }
    json_t *a;
    if ((rc = cli_call(c, "POST", "/v1/jobs/bulk", body, &a)) != 0) return rc;
    if (c->json)
        cli_print_answer(c);
    else if (dry_run)
        printf("%s: %lld job%s would change\n", pos[0],
               (long long)json_integer_value(json_object_get(a, "matched")),
               json_integer_value(json_object_get(a, "matched")) == 1 ? "" : "s");
    else
        printf("%s: %lld matched, %lld changed\n", pos[0],
               (long long)json_integer_value(json_object_get(a, "matched")),
               (long long)json_integer_value(json_object_get(a, "changed")));
    json_decref(a);
    return 0;
}
