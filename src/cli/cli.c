// SPDX-License-Identifier: Apache-2.0
/* Global options, the flag parser, errors and requests of the CLI. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Adds the comma-separated URLs of v to the server list. */
static int add_servers(cli *c, const char *v)
{
    if (c->ncopies == CLI_MAX_SERVERS) return -1;
    char *copy = strdup(v);
    if (!copy) return -1;
    c->server_copies[c->ncopies++] = copy;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        if (c->nservers == CLI_MAX_SERVERS) return -1;
        c->servers[c->nservers++] = tok;
    }
    return 0;
}

void cli_init(cli *c)
{
    memset(c, 0, sizeof(*c));
    const char *env = getenv("TENQ_SERVER");
    if (env && *env) add_servers(c, env);
    const char *tok = getenv("TENQ_TOKEN");
    if (tok && *tok) c->token = tok;
    const char *v;
    if ((v = getenv("TENQ_CA_FILE")) && *v) c->ca_file = v;
    if ((v = getenv("TENQ_CLIENT_CERT")) && *v) c->cert_file = v;
    if ((v = getenv("TENQ_CLIENT_KEY")) && *v) c->key_file = v;
}

void cli_options(const cli *c, tenq_options *o)
{
    o->servers = c->nservers ? c->servers : NULL;
    o->nservers = c->nservers;
    o->token = c->token;
    o->ca_file = c->ca_file;
    o->cert_file = c->cert_file;
    o->key_file = c->key_file;
}

void cli_free(cli *c)
{
    tenq_client_free(c->client);
    for (size_t i = 0; i < c->ncopies; i++) free(c->server_copies[i]);
    free(c->answer);
    memset(c, 0, sizeof(*c));
}

/* "--name" or "--name=value" at argv[*i]: the value of a flag that takes one. */
static int flag_value(cli *c, const char *name, int argc, char **argv, int *i, const char **val)
{
    const char *a = argv[*i] + 2;
    size_t nl = strlen(name);
    if (a[nl] == '=') {
        *val = a + nl + 1;
        return 0;
    }
    if (*i + 1 >= argc) return cli_usage(c, "--%s needs a value", name);
    *val = argv[++*i];
    return 0;
}

static bool flag_is(const char *arg, const char *name)
{
    if (strncmp(arg, "--", 2) != 0) return false;
    size_t nl = strlen(name);
    return strncmp(arg + 2, name, nl) == 0 && (arg[2 + nl] == 0 || arg[2 + nl] == '=');
}

int cli_global_flag(cli *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v = NULL;
    if (flag_is(a, "json")) {
        if (strchr(a, '=')) return cli_usage(c, "--json takes no value");
        c->json = true;
        return 1;
    }
    if (flag_is(a, "server")) {
        if (flag_value(c, "server", argc, argv, i, &v) != 0) return CLI_USAGE;
        if (!c->servers_from_flags) {
            /* flags replace TENQ_SERVER rather than adding to it */
            c->servers_from_flags = true;
            c->nservers = 0;
        }
        if (add_servers(c, v) != 0) return cli_usage(c, "at most %d servers", CLI_MAX_SERVERS);
        return 1;
    }
    if (flag_is(a, "token")) {
        if (flag_value(c, "token", argc, argv, i, &v) != 0) return CLI_USAGE;
        c->token = v;
        return 1;
    }
    static const struct {
        const char *name;
        size_t off;
    } files[] = {{"ca-file", offsetof(cli, ca_file)},
                 {"client-cert", offsetof(cli, cert_file)},
                 {"client-key", offsetof(cli, key_file)}};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        if (!flag_is(a, files[k].name)) continue;
        if (flag_value(c, files[k].name, argc, argv, i, &v) != 0) return CLI_USAGE;
        *(const char **)((char *)c + files[k].off) = v;
        return 1;
    }
    return 0;
}

static void print_help(cli *c, const cli_spec *spec)
{
    printf("usage: tenq %s\n\n", spec->usage);
    if (spec->about) printf("%s\n\n", spec->about);
    size_t w = 0;
    for (const cli_opt *o = spec->opts; o && o->name; o++) {
        size_t l = strlen(o->name) + (o->metavar ? strlen(o->metavar) + 1 : 0);
        if (l > w) w = l;
    }
    if (w < 12) w = 12;
    if (spec->opts && spec->opts[0].name) {
        printf("flags:\n");
        for (const cli_opt *o = spec->opts; o->name; o++) {
            char left[128];
            snprintf(left, sizeof left, "%s%s%s", o->name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
            printf("  --%-*s  %s\n", (int)w, left, o->help);
        }
        printf("\n");
    }
    printf("global flags:\n");
    cli_global_help(stdout, (int)w);
    printf("  --%-*s  print the server's JSON answers (for scripts)\n"
           "  --%-*s  this help\n",
           (int)w, "json", (int)w, "help");
    (void)c;
}

void cli_global_help(FILE *out, int w)
{
    fprintf(out,
            "  --%-*s  server base URL, http:// or https://; repeat for failover (default:\n"
            "  %*s  TENQ_SERVER, comma-separated, else http://127.0.0.1:7070)\n"
            "  --%-*s  bearer token (default: TENQ_TOKEN)\n"
            "  --%-*s  https: PEM file of the CAs to trust instead of the system's\n"
            "  %*s  (default: TENQ_CA_FILE)\n"
            "  --%-*s  https: a client certificate (PEM) for mutual TLS (default:\n"
            "  %*s  TENQ_CLIENT_CERT)\n"
            "  --%-*s  its private key (PEM, no passphrase; default: TENQ_CLIENT_KEY)\n",
            w, "server URL", w + 2, "", w, "token TOKEN", w, "ca-file FILE", w + 2, "", w,
            "client-cert FILE", w + 2, "", w, "client-key FILE");
}

int cli_parse(cli *c, const cli_spec *spec, int argc, char **argv, char **pos, int *npos)
{
    *npos = 0;
    bool flags_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (flags_done || a[0] != '-' || !strcmp(a, "-")) {
            if (*npos >= spec->max_pos || *npos >= CLI_MAX_POS)
                return cli_usage(c, "unexpected argument \"%s\"", a);
            pos[(*npos)++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            flags_done = true;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(c, spec);
            return CLI_HELP;
        }
        int g = cli_global_flag(c, argc, argv, &i);
        if (g == CLI_USAGE) return g;
        if (g == 1) continue;
        const cli_opt *o = NULL;
        for (const cli_opt *k = spec->opts; k && k->name && !o; k++)
            if (flag_is(a, k->name)) o = k;
        if (!o) return cli_usage(c, "unknown flag %s", a);
        if (o->on) {
            if (strchr(a, '=')) return cli_usage(c, "--%s takes no value", o->name);
            *o->on = true;
        } else if (flag_value(c, o->name, argc, argv, &i, o->val) != 0) {
            return CLI_USAGE;
        }
    }
    if (*npos < spec->min_pos) {
        /* name what is missing from the usage line */
        return cli_usage(c, "missing argument (usage: tenq %s)", spec->usage);
    }
    return 0;
}

int cli_parse_id(cli *c, const cli_spec *spec, int argc, char **argv, const char *prefix,
                 const char *suffix, uint64_t *id, char *path, size_t cap)
{
    char *pos[CLI_MAX_POS];
    int np, rc = cli_parse(c, spec, argc, argv, pos, &np);
    if (rc) return rc;
    if (!cli_id(c, pos[0], id)) return CLI_USAGE;
    snprintf(path, cap, "%s%llu%s", prefix, (unsigned long long)*id, suffix);
    return 0;
}

int cli_dispatch(cli *c, const char *group, const cli_cmd *table, int argc, char **argv)
{
    int i = 1;
    /* global flags may sit between the group and its command */
    while (i < argc && !strncmp(argv[i], "--", 2) && strcmp(argv[i], "--help") != 0) {
        int g = cli_global_flag(c, argc, argv, &i);
        if (g == CLI_USAGE) return g;
        if (g == 0) return cli_usage(c, "unknown flag %s", argv[i]);
        i++;
    }
    const char *sub = i < argc ? argv[i] : NULL;
    if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        FILE *out = sub ? stdout : stderr;
        fprintf(out, "usage: tenq %s <command> [flags]\n\ncommands:\n", group);
        for (const cli_cmd *t = table; t->name; t++) fprintf(out, "  %-10s %s\n", t->name, t->help);
        fprintf(out, "\n'tenq %s <command> --help' tells more.\n", group);
        return sub ? CLI_OK : CLI_USAGE;
    }
    for (const cli_cmd *t = table; t->name; t++) {
        if (strcmp(t->name, sub) != 0) continue;
        snprintf(c->cmd, sizeof c->cmd, "%s %s", group, t->name);
        return t->run(c, argc - i, argv + i);
    }
    return cli_usage(c, "unknown command \"%s\"", sub);
}

tenq_client *cli_client(cli *c)
{
    if (c->client) return c->client;
    tenq_options o;
    tenq_options_init(&o);
    cli_options(c, &o);
    int rc = tenq_client_new(&o, &c->client);
    if (rc != 0) {
        if (rc == TENQ_EINVALID) {
            cli_usage(c, "%s", tenq_errmsg(c->client));
        } else {
            fprintf(stderr, "tenq: %s\n", tenq_err_message(rc));
        }
        tenq_client_free(c->client);
        c->client = NULL;
        return NULL;
    }
    return c->client;
}

int cli_error(cli *c, int rc)
{
    const char *msg = c->client ? tenq_errmsg(c->client) : "";
    fprintf(stderr, "tenq: %s: %s\n", tenq_err_word(rc), *msg ? msg : tenq_err_message(rc));
    return CLI_ERR;
}

int cli_call(cli *c, const char *method, const char *path, json_t *body, json_t **answer)
{
    if (answer) *answer = NULL;
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (!text) {
            fprintf(stderr, "tenq: out of memory\n");
            return CLI_ERR;
        }
    }
    tenq_client *tc = cli_client(c);
    if (!tc) {
        free(text);
        return CLI_USAGE;
    }
    free(c->answer);
    c->answer = NULL;
    int status = 0;
    int rc = tenq_request(tc, method, path, text, text ? strlen(text) : 0, &status, &c->answer);
    free(text);
    if (rc != 0) return cli_error(c, rc);
    if (!answer) return 0;
    json_error_t jerr;
    *answer = json_loads(c->answer ? c->answer : "", 0, &jerr);
    if (!json_is_object(*answer)) {
        json_decref(*answer);
        *answer = NULL;
        fprintf(stderr, "tenq: protocol: the server's answer is not a JSON object\n");
        return CLI_ERR;
    }
    return 0;
}

void cli_print_answer(cli *c)
{
    if (!c->answer) return;
    fputs(c->answer, stdout);
    size_t n = strlen(c->answer);
    if (!n || c->answer[n - 1] != '\n') fputc('\n', stdout);
}
