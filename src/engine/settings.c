// SPDX-License-Identifier: Apache-2.0
/* The settings tables of the engine (base/settings.h): each row placed in
 * engine_queue_settings or engine_tenant_settings, their defaults and their
 * checks. */
#include "engine.h"

#include <string.h>

#define ROW(T, f, fl, k, d, lo, hi, w, lab, h)                                                     \
    {#f,                                                                                           \
     fl,                                                                                           \
     TQ_SET_##k,                                                                                   \
     (long long)(d),                                                                               \
     (long long)(lo),                                                                              \
     (long long)(hi),                                                                              \
     w,                                                                                            \
     lab,                                                                                          \
     h,                                                                                            \
     offsetof(T, f),                                                                               \
     (unsigned char)sizeof(((T *)0)->f)},
#define QROW(...) ROW(engine_queue_settings, __VA_ARGS__)
#define TROW(...) ROW(engine_tenant_settings, __VA_ARGS__)
#define KROW(...) ROW(engine_key_settings, __VA_ARGS__)

const tq_setting engine_queue_setting_rows[] = {TQ_QUEUE_SETTINGS(QROW)};
const size_t engine_queue_setting_count =
    sizeof engine_queue_setting_rows / sizeof engine_queue_setting_rows[0];
const tq_setting engine_tenant_setting_rows[] = {TQ_TENANT_SETTINGS(TROW)};
const size_t engine_tenant_setting_count =
    sizeof engine_tenant_setting_rows / sizeof engine_tenant_setting_rows[0];
const tq_setting engine_key_setting_rows[] = {TQ_KEY_SETTINGS(KROW)};
const size_t engine_key_setting_count =
    sizeof engine_key_setting_rows / sizeof engine_key_setting_rows[0];

long long engine_setting_get(const tq_setting *s, const void *settings)
{
    const char *p = (const char *)settings + s->off;
    switch (s->size) {
    case 1: return *(const bool *)p;
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

void engine_setting_set(const tq_setting *s, void *settings, long long v)
{
    char *p = (char *)settings + s->off;
    switch (s->size) {
    case 1: *(bool *)p = v != 0; break;
    case 4: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default: {
        int64_t x = v;
        memcpy(p, &x, 8);
    }
    }
}

static void defaults(const tq_setting *rows, size_t n, void *settings)
{
    for (size_t i = 0; i < n; i++) engine_setting_set(&rows[i], settings, rows[i].def);
}

static int check(const tq_setting *rows, size_t n, const void *settings, engine_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (tq_setting_in_range(&rows[i], engine_setting_get(&rows[i], settings))) continue;
        char msg[sizeof err->message];
        tq_setting_range_text(&rows[i], msg, sizeof msg);
        engine_errf(err, TENQ_EINVALID, rows[i].name, "%s", msg);
        return TENQ_EINVALID;
    }
    return 0;
}

void engine_queue_settings_defaults(engine_queue_settings *s)
{
    memset(s, 0, sizeof(*s));
    defaults(engine_queue_setting_rows, engine_queue_setting_count, s);
}

void engine_tenant_settings_defaults(engine_tenant_settings *s)
{
    memset(s, 0, sizeof(*s));
    defaults(engine_tenant_setting_rows, engine_tenant_setting_count, s);
}

int engine_queue_settings_check(const engine_queue_settings *s, engine_err *err)
{
    int rc = check(engine_queue_setting_rows, engine_queue_setting_count, s, err);
    if (rc == 0 && s->backoff_max_ms < s->backoff_base_ms) {
        engine_errf(err, TENQ_EINVALID, "backoff_max_ms",
                    "backoff_max_ms must be at least backoff_base_ms");
        rc = TENQ_EINVALID;
    }
    if (rc == 0 && s->timeout_ms && s->timeout_ms < s->lease_ms / 3) {
        engine_errf(err, TENQ_EINVALID, "timeout_ms",
                    "timeout_ms must be 0 or at least a third of lease_ms (%lld ms): workers "
                    "heartbeat that often, and learn of a timeout from a heartbeat",
                    (long long)(s->lease_ms / 3));
        rc = TENQ_EINVALID;
    }
    return rc;
}

int engine_tenant_settings_check(const engine_tenant_settings *s, engine_err *err)
{
    return check(engine_tenant_setting_rows, engine_tenant_setting_count, s, err);
}

void engine_key_settings_defaults(engine_key_settings *s)
{
    memset(s, 0, sizeof(*s));
    defaults(engine_key_setting_rows, engine_key_setting_count, s);
}

int engine_key_settings_check(const engine_key_settings *s, engine_err *err)
{
    return check(engine_key_setting_rows, engine_key_setting_count, s, err);
}
