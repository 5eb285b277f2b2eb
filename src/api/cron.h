// SPDX-License-Identifier: Apache-2.0
/* Periodic jobs (cron.c; their API in api_schedules.c): the leader's
 * schedules and their ticks. */
#ifndef TENQ_API_CRON_H
#define TENQ_API_CRON_H

#include "base/cron.h"
#include "base/tzif.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server server;

typedef enum { MISSED_SKIP, MISSED_ONCE, MISSED_EACH } cron_missed;
#define CRON_EACH_MAX 100 /* missed ticks the policy "each" makes up, at most */

/* The schedules (server.cron). */
typedef struct cron_set cron_set;

typedef struct schedule {
    char *name, *tenant, *cron_text, *timezone;
    char *queue, *type, *args, *key, *unique_key; /* the job; key, unique_key may be NULL */
    tq_cron cron;
    const tq_zone *zone; /* the server's, shared */
    cron_missed missed;
    int32_t priority;
    uint32_t max_attempts; /* 0: the queue's */
    bool unique, paused;
    bool broken; /* loaded, but its expression or zone no longer reads: never ticks */
    int64_t timeout_ms, last_tick, next_tick, created_at, updated_at;
    char *last_error;  /* why the last tick was refused, or NULL */
    uint64_t last_job; /* the job the last tick made here (0: none since this load) */
    uint32_t hidx;
} schedule;

/* The loader thread collects the store's schedules (cron_load_new,
 * cron_collect as a store_schedule_fn); the loop installs them with the
 * engine (srv_cron_install, which takes what was loaded, and submits the
 * ticks missed meanwhile by each schedule's policy) and drops them when it
 * stops leading (srv_cron_clear).  srv_cron_put takes x (compiled:
 * cron_compile) and replaces any schedule of its name; put, delete and
 * pause write the row into the batch being built (the caller answers with
 * srv_commit_reply). */
int srv_cron_start(server *s);
void srv_cron_free(server *s);
void srv_cron_clear(server *s);
void *cron_load_new(void);
void cron_collect(void *ctx, const store_schedule *x);
void cron_load_free(void *loaded);
void srv_cron_install(server *s, void *loaded);
extern const char *const cron_missed_words[]; /* "skip", "once", "each", NULL */
int cron_missed_parse(const char *w);         /* -1: none of them */
/* Parses x->cron_text and finds x->timezone: 0, or -1 with the reason. */
int cron_compile(server *s, schedule *x, char *err, size_t errlen);
const tq_zone *srv_cron_zone(server *s, const char *name, char *err, size_t errlen);
int64_t cron_next(const schedule *x, int64_t after); /* the first tick after; -1: none */
void cron_schedule_free(schedule *x);
schedule *srv_cron_find(server *s, const char *name);
/* Every schedule (malloc'd array, in no order): how many. */
size_t srv_cron_all(server *s, schedule ***out);
void srv_cron_counters(server *s, size_t *schedules, uint64_t *ticks, uint64_t *refused);
void srv_cron_put(server *s, schedule *x, int64_t now);
void srv_cron_delete(server *s, schedule *x);
void srv_cron_pause(server *s, schedule *x, bool paused, int64_t now);

#endif
