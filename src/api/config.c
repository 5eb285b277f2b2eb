// SPDX-License-Identifier: Apache-2.0
/* Settings of `tenq serve`: one table drives the flags, the TENQ_*
 * environment, the config file and --help. */
#include "api.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { T_STR, T_INT, T_MS, T_BYTES, T_BOOL, T_SLOTS } vtype;

typedef struct setting {
    const char *name; /* the flag is --name; the variable TENQ_NAME */
    vtype type;
    size_t off, size;
    const char *deflt;
    bool env_only; /* secrets: never on the command line */
    const char *help;
} setting;

#define F(field) offsetof(api_config, field), sizeof(((api_config *)0)->field)

static const setting settings[] = {
    {"listen", T_STR, F(listen), "127.0.0.1:7070", false,
     "address:port to listen on (port 0: any free port)"},
    {"store", T_STR, F(store), "", false, "sqlite:PATH, or a postgresql:// connection string"},
    {"data-dir", T_STR, F(data_dir), "", false,
     "the folder of the embedded store (tenq.db) when --store is not given: created if "
     "missing, refused if it cannot be written; logged as an absolute path at start"},
    {"sqlite-sync", T_STR, F(sqlite_sync), "full", false,
     "full: fsync every commit (survives power loss); normal: fsync at checkpoints "
     "(survives a crash of tenq, not of the machine)"},
    {"default-slots", T_SLOTS, F(default_slots), "unlimited", false,
     "slots of a tenant created on first use (a number, or unlimited)"},
    {"default-weight", T_INT, F(default_weight), "1", false,
     "weight of a tenant created on first use"},
    {"default-max-queued", T_SLOTS, F(default_max_queued), "unlimited", false,
     "max_queued of a tenant created on first use: the unfinished jobs it may hold (a number, "
     "or unlimited)"},
    {"default-max-queued-bytes", T_BYTES, F(default_max_queued_bytes), "0", false,
     "max_queued_bytes of a tenant created on first use: the bytes of args its unfinished jobs "
     "may hold (0: no limit)"},
    {"args-memory", T_BYTES, F(args_memory), "0", false,
     "jobs' args kept in memory at most: past three quarters of it, new jobs' args stay in "
     "the store and are read back ahead of their leases (a cache takes the rest); 0: a "
     "quarter of the memory budget"},
    {"memory-budget", T_BYTES, F(memory_budget), "0", false,
     "the memory this server may use: past 80% of it taken by jobs, submits are refused (429 "
     "overloaded) while leases and outcomes go on; 0: chosen at start, logged"},
    {"strict-tenants", T_BOOL, F(strict_tenants), "false", false,
     "refuse jobs for tenants that were not created first"},
    {"max-job-bytes", T_BYTES, F(max_job_bytes), "1MiB", false,
     "largest body of a single-job submit"},
    {"max-batch-bytes", T_BYTES, F(max_batch_bytes), "32MiB", false, "largest request body"},
    {"max-header-bytes", T_BYTES, F(max_header_bytes), "16KiB", false,
     "largest request line and headers"},
    {"max-headers", T_INT, F(max_headers), "100", false, "most headers in a request"},
    {"header-timeout", T_MS, F(header_timeout_ms), "10s", false,
     "time to receive a whole request head"},
    {"body-timeout", T_MS, F(body_timeout_ms), "60s", false, "time to receive a whole body"},
    {"idle-timeout", T_MS, F(idle_timeout_ms), "60s", false,
     "keep-alive connections idle this long are closed"},
    {"write-timeout", T_MS, F(write_timeout_ms), "30s", false,
     "a client that reads nothing of its reply this long is dropped"},
    {"max-connections", T_INT, F(max_connections), "10000", false, "open connections at most"},
    {"max-wait", T_MS, F(max_wait_ms), "60s", false, "longest long poll (lease, wait)"},
    {"lease-write-delay", T_MS, F(lease_write_delay_ms), "200ms", false,
     "a lease (or a job becoming ready) is stored this long after it happens, unless the "
     "job changed again first (then only the later row is written); 0 stores them at once"},
    {"writer-priority", T_STR, F(writer_priority), "auto", false,
     "auto: the thread that commits waits and commits at idle priority while the server is "
     "quiet (needs CAP_SYS_NICE or RLIMIT_NICE 20, else normal); normal: always normal"},
    {"idle-yield", T_BOOL, F(idle_yield), "true", false,
     "a request that wakes an idle server yields the CPU once before and once after waking "
     "a long poll, so the woken worker runs on this CPU at once (stops for a second when "
     "the CPU is busy)"},
    {"log-format", T_STR, F(log_format), "text", false, "text or json"},
    {"log-level", T_STR, F(log_level), "info", false, "debug, info, warn or error"},
    {"admin-token", T_STR, F(admin_token), "", true,
     "creates (or keeps) an admin token with this secret"},
    {"port-file", T_STR, F(port_file), "", false,
     "write the port listened on to this file once listening"},
    {"allow-open-network", T_BOOL, F(allow_open_network), "false", false,
     "listen beyond loopback even with no tokens (anyone can do anything)"},
    {"tls-cert", T_STR, F(tls_cert), "", false,
     "PEM file of the server's certificate (then its chain): clients speak https; read again "
     "on SIGHUP"},
    {"tls-key", T_STR, F(tls_key), "", false,
     "PEM file of the certificate's private key (no passphrase); read again on SIGHUP"},
    {"tls-client-ca", T_STR, F(tls_client_ca), "", false,
     "PEM file of the CAs whose client certificates are accepted (mutual TLS): a certificate "
     "whose common name is token:ID authenticates as the token ID (docs/operations.md)"},
    {"tls-client-auth", T_STR, F(tls_client_auth), "optional", false,
     "with --tls-client-ca: optional (a client without a certificate sends a bearer token) or "
     "require (the handshake fails without one)"},
    {"tls-ciphers", T_STR, F(tls_ciphers), "", false,
     "TLS 1.2's cipher list in OpenSSL's syntax (default: ECDHE with AES-GCM or "
     "ChaCha20-Poly1305; TLS 1.3 uses OpenSSL's suites)"},
    {"allow-plaintext", T_BOOL, F(allow_plaintext), "false", false,
     "listening beyond loopback without TLS (a proxy in front terminates it) is logged once "
     "at start as such, rather than as a warning"},
    {"advertise", T_STR, F(advertise), "", false,
     "the URL clients reach this server at, which standbys send them to when it leads "
     "(default: http://<listen address>, the host's name for 0.0.0.0)"},
    {"leader-ttl", T_MS, F(leader_ttl_ms), "5s", false,
     "PostgreSQL: a leader that stops renewing (a pause, a stall) is replaced this long after "
     "its last renewal; one that dies is replaced at once.  Shorter: faster takeovers after a "
     "stall; longer: fewer leaderships lost to a slow database (1s at least)"},
    {"request-key-ttl", T_MS, F(request_key_ttl_ms), "10m", false,
     "how long a submit sent with an Idempotency-Key header is remembered: the same request sent "
     "again within it is answered as the first was and makes nothing"},
    {"audit-retention", T_MS, F(audit_retention_ms), "90d", false,
     "rows of the audit log (every change made through the API: GET /v1/audit) are kept "
     "this long"},
    {"inbox-poll", T_MS, F(inbox_poll_ms), "1s", false,
     "PostgreSQL: the leader reads what applications' transactions committed (tenq.submit, "
     "tenq.complete) as soon as they notify it, and this often besides, in case a notification "
     "was lost"},
    {"event-window", T_MS, F(event_window_ms), "10m", false,
     "an event (POST /v1/events) that finds no job waiting for its key is kept this long, for "
     "the first job of its tenant that waits for it (so that none is lost to a race); 0 keeps "
     "none"},
    {"stop-linger", T_MS, F(stop_linger_ms), "500ms", false,
     "a stopping server, once its work is committed and its leadership handed over, still "
     "answers requests on open connections this long (with the new leader, or 503), so "
     "that a client's request is answered rather than cut off; 0 exits at once"},
    {"config", T_STR, F(config_file), "", false, "a file of name = value lines"},
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

/* Text settings that take one of a few words: anything else is refused. */
static const struct {
    const char *name, *choices;
} choice_list[] = {
    {"sqlite-sync", "full|normal"},          {"writer-priority", "auto|normal"},
    {"tls-client-auth", "optional|require"}, {"log-format", "text|json"},
    {"log-level", "debug|info|warn|error"},
};

/* Defaults that depend on where the server runs: --help says how. */
static const struct {
    const char *name, *shown;
} shown_defaults[] = {
    {"store", "sqlite:DATA-DIR/tenq.db"},
    {"data-dir", "$STATE_DIRECTORY (systemd's StateDirectory=), else ./tenq-data"},
    {"memory-budget",
     "the least of half the RAM, 80% of the cgroup's memory.max and 60% of RLIMIT_AS"},
    {"args-memory", "a quarter of the memory budget"},
};

static const char *shown_default(const setting *st)
{
    for (size_t i = 0; i < sizeof shown_defaults / sizeof shown_defaults[0]; i++)
        if (!strcmp(shown_defaults[i].name, st->name)) return shown_defaults[i].shown;
    return *st->deflt ? st->deflt : "(none)";
}

static const char *choices_of(const setting *st)
{
    for (size_t i = 0; i < sizeof choice_list / sizeof choice_list[0]; i++)
        if (!strcmp(choice_list[i].name, st->name)) return choice_list[i].choices;
    return NULL;
}

static void env_name(const setting *st, char *out, size_t len)
{
    snprintf(out, len, "TENQ_");
    size_t k = strlen(out);
    for (const char *p = st->name; *p && k + 1 < len; p++)
        out[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[k] = 0;
}

static int parse_ll(const char *v, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v) return -1;
    *out = n;
    return (int)(end - v);
}

/* Is v one of "a|b|c"? */
static bool is_choice(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static int set_value(api_config *c, const setting *st, const char *v, char *why, size_t wl)
{
    void *dst = (char *)c + st->off;
    const char *choices = choices_of(st);
    switch (st->type) {
    case T_STR:
        if (choices && !is_choice(choices, v)) {
            snprintf(why, wl, "expected one of %s", choices);
            return -1;
        }
        if (strlen(v) >= st->size) {
            snprintf(why, wl, "too long");
            return -1;
        }
        memcpy(dst, v, strlen(v) + 1);
        return 0;
    case T_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on"))
            *(bool *)dst = true;
        else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off"))
            *(bool *)dst = false;
        else {
            snprintf(why, wl, "expected true or false");
            return -1;
        }
        return 0;
    case T_SLOTS:
        if (!strcmp(v, "unlimited")) {
            *(long long *)dst = -1;
            return 0;
        }
        /* fall through */
    case T_INT: {
        long long n = 0;
        int used = parse_ll(v, &n);
        if (used < 0 || v[used] || n < 0) {
            snprintf(why, wl, "expected a number >= 0");
            return -1;
        }
        *(long long *)dst = n;
        return 0;
    }
    case T_MS: {
        long long n = 0;
        int used = parse_ll(v, &n);
        const char *u = v + (used > 0 ? used : 0);
        long long mul = !*u || !strcmp(u, "ms") ? 1
                        : !strcmp(u, "s")       ? 1000
                        : !strcmp(u, "m")       ? 60000
                        : !strcmp(u, "h")       ? 3600000
                        : !strcmp(u, "d")       ? 86400000
                                                : 0;
        if (used < 0 || !mul || n < 0 || n > INT64_MAX / mul) {
            snprintf(why, wl, "expected a duration such as 500ms, 10s, 2m, 1h or 90d");
            return -1;
        }
        *(long long *)dst = n * mul;
        return 0;
    }
    case T_BYTES: {
        long long n = 0;
        int used = parse_ll(v, &n);
        const char *u = v + (used > 0 ? used : 0);
        long long mul = 0;
        if (!*u || !strcmp(u, "B"))
            mul = 1;
        else if (!strcasecmp(u, "k") || !strcmp(u, "KiB") || !strcmp(u, "KB"))
            mul = 1024;
        else if (!strcasecmp(u, "m") || !strcmp(u, "MiB") || !strcmp(u, "MB"))
            mul = 1024 * 1024;
        else if (!strcasecmp(u, "g") || !strcmp(u, "GiB") || !strcmp(u, "GB"))
            mul = 1024LL * 1024 * 1024;
        if (used < 0 || !mul || n < 0) {
            snprintf(why, wl, "expected a size such as 512KiB or 32MiB");
            return -1;
        }
        *(long long *)dst = n * mul;
        return 0;
    }
    }
    return -1;
}

void api_config_defaults(api_config *c)
{
    memset(c, 0, sizeof(*c));
    char why[128];
    for (size_t i = 0; i < NSETTINGS; i++)
        set_value(c, &settings[i], settings[i].deflt, why, sizeof why);
}

static const setting *find(const char *name, size_t len)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strlen(settings[i].name) == len && strncmp(settings[i].name, name, len) == 0)
            return &settings[i];
    return NULL;
}

static int load_file(api_config *c, const char *path, FILE *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "tenq: cannot read the config file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[2048];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            fprintf(err, "tenq: %s:%d: expected name = value\n", path, lineno);
            rc = -1;
            break;
        }
        char *ne = eq;
        while (ne > p && isspace((unsigned char)ne[-1])) ne--;
        char *v = eq + 1;
        while (isspace((unsigned char)*v)) v++;
        char *ve = v + strlen(v);
        while (ve > v && isspace((unsigned char)ve[-1])) *--ve = 0;
        const setting *st = find(p, (size_t)(ne - p));
        char why[128];
        if (!st || !strcmp(st->name, "config")) {
            fprintf(err, "tenq: %s:%d: unknown setting %.*s\n", path, lineno, (int)(ne - p), p);
            rc = -1;
            break;
        }
        if (set_value(c, st, v, why, sizeof why) != 0) {
            fprintf(err, "tenq: %s:%d: %s: %s\n", path, lineno, st->name, why);
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* mkdir -p, new folders 0700 (they hold the jobs and the tokens' hashes). */
static int make_dirs(const char *dir)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(buf, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* The embedded store's folder, when --store names none: --data-dir (or
 * TENQ_DATA_DIR, or the config file), else $STATE_DIRECTORY (set by
 * systemd's StateDirectory=; the first when it names several), else
 * ./tenq-data.  Created if missing, checked writable by making a file in
 * it, and made absolute; the store is then sqlite:<it>/tenq.db. */
static int resolve_data_dir(api_config *c, FILE *err)
{
    if (*c->store) return 0; /* --store wins; the folder is not touched */
    char dir[PATH_MAX];
    const char *from = "--data-dir", *sd = getenv("STATE_DIRECTORY");
    if (*c->data_dir) {
        snprintf(dir, sizeof dir, "%s", c->data_dir);
    } else if (sd && *sd) {
        snprintf(dir, sizeof dir, "%.*s", (int)strcspn(sd, ":"), sd);
        from = "STATE_DIRECTORY";
    } else {
        snprintf(dir, sizeof dir, "./tenq-data");
        from = "--data-dir (default)";
    }
    if (make_dirs(dir) != 0) {
        fprintf(err, "tenq serve: %s %s: cannot create the folder: %s\n", from, dir,
                strerror(errno));
        return -1;
    }
    char abs[PATH_MAX], probe[PATH_MAX + 32];
    if (!realpath(dir, abs)) {
        fprintf(err, "tenq serve: %s %s: %s\n", from, dir, strerror(errno));
        return -1;
    }
    snprintf(probe, sizeof probe, "%s/.tenq-write-test-XXXXXX", abs);
    int fd = mkstemp(probe);
    if (fd < 0) {
        fprintf(err, "tenq serve: %s %s: cannot write in the folder: %s\n", from, abs,
                strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    if (strlen(abs) >= sizeof c->data_dir ||
        snprintf(c->store, sizeof c->store, "sqlite:%s/tenq.db", abs) >= (int)sizeof c->store) {
        fprintf(err, "tenq serve: %s %s: too long\n", from, abs);
        c->store[0] = 0;
        return -1;
    }
    memcpy(c->data_dir, abs, strlen(abs) + 1); /* fits: checked above */
    c->data_dir_used = true;
    return 0;
}

int api_config_load(api_config *c, int argc, char **argv, FILE *err)
{
    api_config_defaults(c);
    /* The config file is named first by flag or environment. */
    const char *file = getenv("TENQ_CONFIG");
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) file = argv[i + 1];
        if (!strncmp(argv[i], "--config=", 9)) file = argv[i] + 9;
    }
    if (file && *file && load_file(c, file, err) != 0) return -1;
    char why[128];
    for (size_t i = 0; i < NSETTINGS; i++) {
        char env[64];
        env_name(&settings[i], env, sizeof env);
        const char *v = getenv(env);
        if (!v) continue;
        if (set_value(c, &settings[i], v, why, sizeof why) != 0) {
            fprintf(err, "tenq: %s=%s: %s\n", env, v, why);
            return -1;
        }
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            api_config_help(stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(err, "tenq serve: unexpected argument %s (see --help)\n", a);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        const setting *st = find(name, nl);
        if (!st || st->env_only) {
            fprintf(err, "tenq serve: unknown flag --%.*s (see --help)%s\n", (int)nl, name,
                    st ? "; set it in the environment" : "");
            return -1;
        }
        const char *v;
        if (eq)
            v = eq + 1;
        else if (st->type == T_BOOL)
            v = "true";
        else if (i + 1 < argc)
            v = argv[++i];
        else {
            fprintf(err, "tenq serve: --%s needs a value\n", st->name);
            return -1;
        }
        if (set_value(c, st, v, why, sizeof why) != 0) {
            fprintf(err, "tenq serve: --%s %s: %s\n", st->name, v, why);
            return -1;
        }
    }
    /* what one setting's type cannot say */
    if (c->leader_ttl_ms < 1000) {
        fprintf(err, "tenq serve: --leader-ttl %lldms: at least 1s\n", c->leader_ttl_ms);
        return -1;
    }
    if (*c->advertise && strncmp(c->advertise, "http://", 7) != 0 &&
        strncmp(c->advertise, "https://", 8) != 0) {
        fprintf(err, "tenq serve: --advertise %s: expected a URL such as http://host:7070\n",
                c->advertise);
        return -1;
    }
    if (!*c->tls_cert != !*c->tls_key) {
        fprintf(err, "tenq serve: TLS needs both --tls-cert and --tls-key\n");
        return -1;
    }
    if (!*c->tls_cert && (*c->tls_client_ca || *c->tls_ciphers)) {
        fprintf(err, "tenq serve: --%s needs --tls-cert and --tls-key\n",
                *c->tls_client_ca ? "tls-client-ca" : "tls-ciphers");
        return -1;
    }
    return resolve_data_dir(c, err);
}

void api_config_help(FILE *out)
{
    fprintf(out, "usage: tenq serve [--setting value ...]\n\n"
                 "Every setting can also come from the environment (TENQ_NAME) or a config\n"
                 "file (name = value lines, --config FILE); flags win over the environment,\n"
                 "which wins over the file.\n\n");
    for (size_t i = 0; i < NSETTINGS; i++) {
        const setting *st = &settings[i];
        char env[64];
        env_name(st, env, sizeof env);
        const char *choices = choices_of(st);
        const char *kind = choices               ? choices
                           : st->type == T_MS    ? "DURATION"
                           : st->type == T_BYTES ? "SIZE"
                           : st->type == T_BOOL  ? ""
                           : st->type == T_STR   ? "TEXT"
                                                 : "N";
        if (st->env_only)
            fprintf(out, "  %-28s %s\n", env, st->help);
        else
            fprintf(out, "  --%s %-*s %s\n", st->name, (int)(24 - strlen(st->name)), kind,
                    st->help);
        fprintf(out, "  %-28s default: %s%s%s\n", "", shown_default(st),
                st->env_only ? "" : "; env ", st->env_only ? "" : env);
    }
}
