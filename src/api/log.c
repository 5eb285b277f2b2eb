// SPDX-License-Identifier: Apache-2.0
/* Logging: one line per event on stderr, as text or JSON. */
#include "api.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

static bool as_json;
static log_level min_level = LOG_INFO;

void log_setup(const char *format, const char *level)
{
    as_json = format && strcmp(format, "json") == 0;
    if (!level) return;
    if (!strcmp(level, "debug")) min_level = LOG_DEBUG;
    if (!strcmp(level, "info")) min_level = LOG_INFO;
    if (!strcmp(level, "warn")) min_level = LOG_WARN;
    if (!strcmp(level, "error")) min_level = LOG_ERROR;
}

static void json_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
}

void log_event(log_level lvl, const char *event, const char *fmt, ...)
{
    if (lvl < min_level) return;
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    if (as_json) {
        fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"event\":\"", when,
                ts.tv_nsec / 1000000, names[lvl]);
        json_escape(stderr, event);
        fputs("\",\"msg\":\"", stderr);
        json_escape(stderr, msg);
        fputs("\"}\n", stderr);
    } else {
        fprintf(stderr, "%s.%03ldZ %-5s %s %s\n", when, ts.tv_nsec / 1000000, names[lvl], event,
                msg);
    }
}
