// SPDX-License-Identifier: Apache-2.0
/* What the CLI prints: times, durations, aligned tables, key/value lines and
 * usage errors. */
#include "cli/cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Appends val percent-escaped at path[len]; the CLI links only libtenq's
 * public API, so it escapes on its own.  A value that does not fit is
 * never cut or left out (a filter cut short, or dropped, would match more
 * than was asked): the command stops with a usage error. */
static void escape_into(char *path, size_t cap, size_t len, const char *what, const char *val)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *v = (const unsigned char *)val; *v; v++) {
        if (len + 4 >= cap) {
            fprintf(stderr, "tenq: %s: too long (%zu bytes)\n", what, strlen(val));
            exit(CLI_USAGE);
        }
        if (isalnum(*v) || strchr("-_.~", *v)) {
            path[len++] = (char)*v;
        } else {
            path[len++] = '%';
            path[len++] = hex[*v >> 4];
            path[len++] = hex[*v & 15];
        }
    }
    path[len] = 0;
}

void cli_query(char *path, size_t cap, const char *key, const char *val)
{
    if (!val) return;
    size_t len = strlen(path), kl = strlen(key);
    if (len + kl + 3 > cap) {
        fprintf(stderr, "tenq: %s: the request's path is too long\n", key);
        exit(CLI_USAGE);
    }
    path[len++] = strchr(path, '?') ? '&' : '?';
    memcpy(path + len, key, kl);
    len += kl;
    path[len++] = '=';
    escape_into(path, cap, len, key, val);
}

void cli_path(char *path, size_t cap, const char *prefix, const char *segment)
{
    snprintf(path, cap, "%s", prefix);
    escape_into(path, cap, strlen(path), "name", segment);
}

void cli_fmt_time(int64_t ms, char *buf, size_t n)
{
    if (ms <= 0) {
        snprintf(buf, n, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, n, "%s.%03dZ", b, (int)(ms % 1000));
}

void cli_fmt_duration(int64_t ms, char *buf, size_t n)
{
    if (ms < 0) ms = 0;
    long long s = ms / 1000;
    if (ms < 1000)
        snprintf(buf, n, "%lldms", (long long)ms);
    else if (s < 60)
        snprintf(buf, n, "%.1fs", (double)ms / 1000);
    else if (s < 3600)
        snprintf(buf, n, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, n, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, n, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
}

const char *cli_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

void cli_fmt_field(const json_t *o, const char *key, char *buf, size_t n)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        snprintf(buf, n, "-");
    else if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%.2f", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(buf, n, "%s", s ? s : "?");
        free(s);
    }
}

void cli_fmt_cut(char *buf, size_t n, const char *text)
{
    if (!text) text = "-";
    snprintf(buf, n, "%s", text);
    if (n >= 4 && strlen(text) >= n) memcpy(buf + n - 4, "...", 4);
}

/* ---- tables ---------------------------------------------------------------------------------- */

void cli_table_init(cli_table *t, const char *align, const char *const *header)
{
    memset(t, 0, sizeof(*t));
    t->align = align;
    t->ncols = strlen(align);
    for (size_t i = 0; i < t->ncols; i++) cli_table_cell(t, "%s", header[i]);
}

void cli_table_cell(cli_table *t, const char *fmt, ...)
{
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **cells = realloc(t->cells, cap * sizeof(char *));
        if (!cells) return; /* the cell is lost; the table prints what it has */
        t->cells = cells;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    /* control characters would break the alignment (and the terminal) */
    for (char *p = s; p && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
    t->cells[t->ncells++] = s;
}

/* Columns on a terminal: UTF-8 continuation bytes take none. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; s && *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) w++;
    return w;
}

void cli_table_print(cli_table *t, FILE *out)
{
    size_t *w = calloc(t->ncols, sizeof(size_t));
    if (!w) return;
    for (size_t i = 0; i < t->ncells; i++) {
        size_t l = width(t->cells[i]);
        if (l > w[i % t->ncols]) w[i % t->ncols] = l;
    }
    for (size_t i = 0; i < t->ncells; i++) {
        size_t col = i % t->ncols;
        const char *s = t->cells[i] ? t->cells[i] : "";
        size_t pad = w[col] - width(s);
        bool last = col == t->ncols - 1 || i == t->ncells - 1;
        if (t->align[col] == 'r') fprintf(out, "%*s", (int)pad, "");
        fputs(s, out);
        if (last) {
            fputc('\n', out);
        } else {
            if (t->align[col] != 'r') fprintf(out, "%*s", (int)pad, "");
            fputs("  ", out);
        }
    }
    free(w);
}

void cli_table_free(cli_table *t)
{
    for (size_t i = 0; i < t->ncells; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

bool cli_print_rows(const json_t *list, const char *align, const char *const *header,
                    cli_row_fn row)
{
    if (json_array_size(list) == 0) return false;
    cli_table t;
    cli_table_init(&t, align, header);
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) row(&t, x);
    cli_table_print(&t, stdout);
    cli_table_free(&t);
    return true;
}

void cli_kv(FILE *out, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(out, "%-18s ", key);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
}

int cli_usage(cli *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->cmd[0])
        fprintf(stderr, "tenq %s: %s (see tenq %s --help)\n", c->cmd, msg, c->cmd);
    else
        fprintf(stderr, "tenq: %s (see tenq --help)\n", msg);
    return CLI_USAGE;
}
