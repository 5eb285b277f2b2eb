// SPDX-License-Identifier: Apache-2.0
/* tenq token create, ls, revoke. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static void queues_text(const json_t *o, char *buf, size_t n)
{
    json_t *q = json_object_get(o, "queues");
    size_t len = 0, i;
    json_t *v;
    buf[0] = 0;
    if (!json_is_array(q)) {
        snprintf(buf, n, "all");
        return;
    }
    json_array_foreach(q, i, v) if (len < n) len += (size_t)snprintf(
        buf + len, n - len, "%s%s", i ? "," : "", json_string_value(v) ? json_string_value(v) : "");
}

static int token_create(cli *c, int argc, char **argv)
{
    const char *role = NULL, *queues = NULL;
    bool hide = false;
    const cli_opt opts[] = {
        {"role", "ROLE", "admin, worker, tenant:NAME, viewer or viewer:NAME", &role, NULL},
        {"queues", "A,B", "limit the token to these queues", &queues, NULL},
        {"hide-data", NULL, "a viewer that sees jobs without their args and results", NULL, &hide},
        {NULL, NULL, NULL, NULL, NULL}};
    const cli_spec spec = {
        "token create --role admin|worker|tenant:NAME|viewer|viewer:NAME [--queues a,b] "
        "[--hide-data]",
        "Creates a token and prints its secret on stdout (it is shown only\n"
        "once; the server keeps a hash).  A viewer reads what an admin (viewer)\n"
        "or its tenant (viewer:NAME) reads, and changes nothing.",
        opts, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    if (!role) return cli_usage(c, "--role is required");
    json_t *body = json_pack("{s:s}", "role", role);
    if (!body) return cli_usage(c, "--role is not UTF-8");
    if (queues) {
        json_t *list = json_array();
        char *copy = strdup(queues);
        for (char *save = NULL, *q = copy ? strtok_r(copy, ",", &save) : NULL; q;
             q = strtok_r(NULL, ",", &save)) {
            json_t *s = *q ? json_string(q) : NULL;
            if (s) json_array_append_new(list, s);
        }
        free(copy);
        json_object_set_new(body, "queues", list);
    }
    if (hide) json_object_set_new(body, "hide_data", json_true());
    json_t *a;
    if ((rc = cli_call(c, "POST", "/v1/tokens", body, &a)) != 0) return rc;
    if (c->json) {
        cli_print_answer(c);
    } else {
        char q[1024];
        queues_text(a, q, sizeof q);
        printf("%s\n", cli_str(a, "token"));
        fprintf(stderr,
                "tenq: token %lld created (role %s, queues %s); the secret above is shown "
                "only once\n",
                (long long)json_integer_value(json_object_get(a, "id")), cli_str(a, "role"), q);
    }
    json_decref(a);
    return 0;
}

/* A token as a row: id, role, queues, whether it hides data, when it was
 * made (never its secret). */
static void token_row(cli_table *t, const json_t *o)
{
    char q[1024], created[64];
    queues_text(o, q, sizeof q);
    cli_fmt_time(json_integer_value(json_object_get(o, "created_at")), created, sizeof created);
    cli_table_cell(t, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
    cli_table_cell(t, "%s", cli_str(o, "role"));
    cli_table_cell(t, "%s", q);
    cli_table_cell(t, "%s", json_is_true(json_object_get(o, "hide_data")) ? "hidden" : "-");
    cli_table_cell(t, "%s", created);
}

static int token_ls(cli *c, int argc, char **argv)
{
    static const char *const head[] = {"ID", "ROLE", "QUEUES", "DATA", "CREATED"};
    static const cli_spec spec = {"token ls", "Lists tokens (never their secrets).", NULL, 0, 0};
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, &spec, argc, argv, pos, &np);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    json_t *a;
    if ((rc = cli_call(c, "GET", "/v1/tokens", NULL, &a)) != 0) return rc;
    json_t *list = json_object_get(a, "tokens");
    if (c->json) {
        cli_print_answer(c);
    } else if (!cli_print_rows(list, "rllll", head, token_row)) {
        printf("no tokens (the server accepts every request from loopback)\n");
    }
    json_decref(a);
    return 0;
}

static int token_revoke(cli *c, int argc, char **argv)
{
    static const cli_spec spec = {"token revoke ID", "Revokes a token: it stops working at once.",
                                  NULL, 1, 1};
    uint64_t id;
    char path[64];
    int rc = cli_parse_id(c, &spec, argc, argv, "/v1/tokens/", "", &id, path, sizeof path);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    if ((rc = cli_call(c, "DELETE", path, NULL, NULL)) != 0) return rc;
    if (c->json)
        cli_print_answer(c);
    else
        printf("token %llu revoked\n", (unsigned long long)id);
    return 0;
}

int cmd_token(cli *c, int argc, char **argv)
{
    static const cli_cmd table[] = {
        {"create", token_create, "create a token (its secret is shown once)"},
        {"ls", token_ls, "list tokens"},
        {"revoke", token_revoke, "revoke a token"},
        {NULL, NULL, NULL}};
    return cli_dispatch(c, "token", table, argc, argv);
}
