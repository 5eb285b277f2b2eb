// SPDX-License-Identifier: Apache-2.0
/* tenq key ls, set, rm, settings: keyed limits (docs/SEMANTICS.md, "Keyed
 * limits"). */
#include "cli/cli.h"

#include "base/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tenq key ls: a key, its jobs and its rate. */
static const char *const key_head[] = {"TENANT", "KEY",     "ACTIVE", "LIMIT", "READY",
                                       "HELD",   "SETTING", "RATE",   NULL};

static void key_row(cli_table *t, const json_t *o)
{
    char buf[64];
    cli_table_cell(t, "%s", cli_str(o, "tenant"));
    cli_table_cell(t, "%s", cli_str(o, "key"));
    static const char *const nums[] = {"active", "limit", "ready", "held"};
    for (size_t k = 0; k < 4; k++) {
        cli_fmt_field(o, nums[k], buf, sizeof buf);
        cli_table_cell(t, "%s", buf);
    }
    cli_table_cell(t, "%s", cli_str(o, "setting"));
    json_t *r = json_object_get(o, "rate");
    if (json_is_object(r)) {
        char per[32];
        cli_fmt_duration(json_integer_value(json_object_get(r, "rate_period_ms")), per, sizeof per);
        cli_table_cell(t, "%lld/%s burst %lld%s",
                       (long long)json_integer_value(json_object_get(r, "rate")), per,
                       (long long)json_integer_value(json_object_get(r, "rate_burst")),
                       json_is_integer(json_object_get(r, "until")) ? " (held)" : "");
    } else {
        cli_table_cell(t, "-");
    }
}

static int key_ls(cli *c, int argc, char **argv)
{
    const char *tenant = NULL, *key = NULL, *limit = NULL;
    bool at_limit = false;
    const cli_opt opts[] = {{"tenant", "NAME", "only this tenant's keys", &tenant, NULL},
                            {"key", "KEY", "this key alone (with --tenant)", &key, NULL},
                            {"at-limit", NULL, "only the keys at their limit", NULL, &at_limit},
                            {"limit", "N", "at most N (default 100)", &limit, NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"key ls [--tenant T] [--key K] [--at-limit] [--limit N]",
                           "Lists the keys jobs name now, those at their limit first: how many\n"
                           "of their jobs run (ACTIVE) of LIMIT, and how many ready jobs they\n"
                           "hold back (HELD).",
                           opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[1024] = "/v1/keys";
    cli_query(path, sizeof path, "tenant", tenant);
    cli_query(path, sizeof path, "key", key);
    cli_query(path, sizeof path, "limit", limit);
    if (at_limit) cli_query(path, sizeof path, "at_limit", "true");
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "keys");
    if (c->json) {
        cli_print_answer(c);
    } else if (!cli_print_rows(list, "llrrrrll", key_head, key_row)) {
        printf("no keys\n");
    } else {
        long long total = json_integer_value(json_object_get(a, "total"));
        if ((size_t)total > json_array_size(list))
            printf("(%zu of %lld keys)\n", json_array_size(list), total);
    }
    json_decref(a);
    return 0;
}

static const tq_setting key_rows[] = {TQ_KEY_SETTINGS(TQ_SETTING_ROW)};

static int key_set(cli *c, int argc, char **argv)
{
    return cli_settings_set(
        c, argc, argv, key_rows, sizeof key_rows / sizeof key_rows[0],
        "key set TENANT KEY [--concurrency N|none] [--rate N|none] [--rate-period 1s] "
        "[--rate-burst N|none]",
        "Sets the settings of a tenant's key, or of every key that begins with a\n"
        "prefix (KEY ends with *: account:*), whole: a setting left out is none,\n"
        "and the jobs' own counts.  The key's own setting wins, then the longest\n"
        "prefix's.  They take effect at once.",
        "/v1/key-settings", 2);
}

static int key_rm(cli *c, int argc, char **argv)
{
    const cli_spec spec = {"key rm TENANT KEY",
                           "Deletes a key's (or a prefix's) settings: its keys go back to the\n"
                           "next setting, or to what their jobs say.",
                           NULL, 2, 2};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[1024] = "/v1/key-settings";
    cli_query(path, sizeof path, "tenant", pos[0]);
    cli_query(path, sizeof path, "key", pos[1]);
    json_t *a;
    if ((rc = cli_call(c, "DELETE", path, NULL, &a)) != 0) return rc;
    if (c->json) cli_print_answer(c);
    json_decref(a);
    return 0;
}

/* tenq key settings: a key's (or a prefix's) settings, a column each. */
static void setting_row(cli_table *t, const json_t *o)
{
    char buf[64];
    cli_table_cell(t, "%s", cli_str(o, "tenant"));
    cli_table_cell(t, "%s", cli_str(o, "key"));
    for (size_t k = 0; k < sizeof key_rows / sizeof key_rows[0]; k++) {
        cli_fmt_field(o, key_rows[k].name, buf, sizeof buf);
        cli_table_cell(t, "%s", buf);
    }
}

static int key_settings(cli *c, int argc, char **argv)
{
    const char *tenant = NULL;
    const cli_opt opts[] = {{"tenant", "NAME", "only this tenant's settings", &tenant, NULL},
                            {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {"key settings [--tenant T]", "Lists the settings of keys and prefixes.",
                           opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    char path[512] = "/v1/key-settings";
    cli_query(path, sizeof path, "tenant", tenant);
    json_t *a;
    if ((rc = cli_call(c, "GET", path, NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "settings");
    if (c->json) {
        cli_print_answer(c);
    } else {
        size_t nrows = sizeof key_rows / sizeof key_rows[0];
        const char *head[2 + sizeof key_rows / sizeof key_rows[0] + 1];
        char align[sizeof head / sizeof head[0]];
        head[0] = "TENANT";
        head[1] = "KEY";
        align[0] = align[1] = 'l';
        for (size_t k = 0; k < nrows; k++) {
            head[2 + k] = key_rows[k].name;
            align[2 + k] = 'r';
        }
        head[2 + nrows] = NULL;
        align[2 + nrows] = 0;
        if (!cli_print_rows(list, align, head, setting_row)) printf("no key settings\n");
    }
    json_decref(a);
    return 0;
}

int cmd_key(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {
        {"ls", key_ls, "the keys jobs name now, those at their limit first"},
        {"set", key_set, "set a key's (or a prefix's) settings"},
        {"rm", key_rm, "delete a key's settings"},
        {"settings", key_settings, "list the settings of keys and prefixes"},
        {NULL, NULL, NULL}};
    return cli_dispatch(c, "key", table, argc, argv);
}
