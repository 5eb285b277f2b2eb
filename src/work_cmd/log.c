// SPDX-License-Identifier: Apache-2.0
/* The worker's log: one line per event on stderr, with the time. */
#include "work_cmd/work_cmd.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_int min_level = TENQ_LOG_INFO;

static const char *const names[] = {"debug", "info", "warn", "error"};

void work_log_set_level(tenq_log_level level)
{
    atomic_store(&min_level, (int)level);
}

static void emit(tenq_log_level level, const char *msg)
{
    if ((int)level < atomic_load(&min_level)) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    /* one call per line: stdio's lock keeps the lines of threads whole */
    fprintf(stderr, "%s.%03ldZ %s %s\n", when, ts.tv_nsec / 1000000, names[level], msg);
}

void work_log(tenq_log_level level, const char *fmt, ...)
{
    char msg[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(level, msg);
}

void work_log_sink(void *ctx, tenq_log_level level, const char *line)
{
    (void)ctx;
    emit(level, line);
}

/* Logs one line, made printable: a handler's bytes must not forge lines of
 * our own (a carriage return, escape sequences). */
static void log_line(work_lines *l, const char *prefix, const char *s, size_t n)
{
    char clean[sizeof l->buf + 1];
    size_t k = 0;
    for (size_t i = 0; i < n && k < sizeof clean - 1; i++) {
        unsigned char ch = (unsigned char)s[i];
        clean[k++] = ch < 0x20 && ch != '\t' ? '?' : ch == 0x7f ? '?' : (char)ch;
    }
    clean[k] = 0;
    if (k && clean[k - 1] == '\r') clean[--k] = 0;
    /* the last line, cut to fit: why a handler failed */
    size_t keep = k < sizeof l->last - 1 ? k : sizeof l->last - 1;
    memcpy(l->last, clean, keep);
    l->last[keep] = 0;
    work_log(TENQ_LOG_INFO, "%s: %s", prefix, clean);
}

void work_lines_feed(work_lines *l, const char *prefix, const char *data, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        size_t room = sizeof l->buf - l->len;
        if (take > room) take = room;
        memcpy(l->buf + l->len, data, take);
        l->len += take;
        data += take;
        n -= take;
        if (nl && data == nl) {
            /* the end of a line */
            log_line(l, prefix, l->buf, l->len);
            l->len = 0;
            data++;
            n--;
        } else if (l->len == sizeof l->buf) {
            /* a very long line goes out in pieces */
            log_line(l, prefix, l->buf, l->len);
            l->len = 0;
        }
    }
}

void work_lines_flush(work_lines *l, const char *prefix)
{
    if (l->len) log_line(l, prefix, l->buf, l->len);
    l->len = 0;
}
