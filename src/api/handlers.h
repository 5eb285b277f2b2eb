// SPDX-License-Identifier: Apache-2.0
/* The handlers of the routes (router.c's table), by resource: the file that
 * defines each.  A handler answers its request, now or later (after a
 * commit: commit.h; after a read: read_ctx.h), and changes the engine only
 * through its calls. */
#ifndef TENQ_API_HANDLERS_H
#define TENQ_API_HANDLERS_H

#include "auth.h"
#include "http.h"
#include "jbuf.h"

#include "base/settings.h"
#include "engine/engine.h"

#include <jansson.h>

typedef struct server server;

/* api_jobs.c: jobs */
void h_submit(server *s, http_req *req, const principal *who, const char **args);
void h_get_job(server *s, http_req *req, const principal *who, const char **args);
void h_list_jobs(server *s, http_req *req, const principal *who, const char **args);
void h_wait_job(server *s, http_req *req, const principal *who, const char **args);
void h_cancel(server *s, http_req *req, const principal *who, const char **args);
/* api_bulk.c: bulk actions */
void h_jobs_bulk(server *s, http_req *req, const principal *who, const char **args);
/* api_attempts.c, api_deps.c, api_steps.c: a job's attempts, parents and
 * children, durable steps */
void h_job_attempts(server *s, http_req *req, const principal *who, const char **args);
void h_job_parents(server *s, http_req *req, const principal *who, const char **args);
void h_step(server *s, http_req *req, const principal *who, const char **args);
void h_steps_batch(server *s, http_req *req, const principal *who, const char **args);
void h_job_steps(server *s, http_req *req, const principal *who, const char **args);
/* api_events.c: events that wake waiting jobs */
void h_event_send(server *s, http_req *req, const principal *who, const char **args);
/* api_batches.c: batches */
void h_batch_create(server *s, http_req *req, const principal *who, const char **args);
void h_batch_add(server *s, http_req *req, const principal *who, const char **args);
void h_batch_get(server *s, http_req *req, const principal *who, const char **args);
void h_batches(server *s, http_req *req, const principal *who, const char **args);
/* api_work.c: workers' calls */
void h_lease(server *s, http_req *req, const principal *who, const char **args);
void h_start(server *s, http_req *req, const principal *who, const char **args);
void h_heartbeat(server *s, http_req *req, const principal *who, const char **args);
void h_ack(server *s, http_req *req, const principal *who, const char **args);
void h_fail(server *s, http_req *req, const principal *who, const char **args);
void h_outcomes(server *s, http_req *req, const principal *who, const char **args);
/* api_settings.c: tenants, queues, settings */
void h_settings(server *s, http_req *req, const principal *who, const char **args);
/* The settings of queues and tenants as GET /v1/settings shows them (an
 * object: queue, tenant). */
void api_json_settings(jbuf *b);
/* Settings by their rows (base/settings.h): a struct's as JSON members; a
 * body's members read into one (false once a refusal naming the field is
 * sent); the rows' names then NULL (made once into *cache), for
 * req_only_fields. */
void api_settings_json(jbuf *b, const tq_setting *rows, size_t n, const void *settings);
bool api_settings_read(http_req *req, json_t *body, const tq_setting *rows, size_t n,
                       void *settings);
const char *const *api_settings_fields(const tq_setting *rows, size_t n, const char *const **cache);
/* api_keys.c: keyed limits */
void h_keys(server *s, http_req *req, const principal *who, const char **args);
void h_key_settings(server *s, http_req *req, const principal *who, const char **args);
void h_key_setting_put(server *s, http_req *req, const principal *who, const char **args);
void h_key_setting_delete(server *s, http_req *req, const principal *who, const char **args);
void h_tenants(server *s, http_req *req, const principal *who, const char **args);
void h_tenant_get(server *s, http_req *req, const principal *who, const char **args);
void h_tenant_put(server *s, http_req *req, const principal *who, const char **args);
void h_queues(server *s, http_req *req, const principal *who, const char **args);
void h_queue_get(server *s, http_req *req, const principal *who, const char **args);
void h_queue_put(server *s, http_req *req, const principal *who, const char **args);
void h_queue_pause(server *s, http_req *req, const principal *who, const char **args);
void h_queue_resume(server *s, http_req *req, const principal *who, const char **args);
/* api_spec.c: the protocol from the server's tables */
void h_spec(server *s, http_req *req, const principal *who, const char **args);
/* The dashboard's states.js: STATES, LIVE and UNFINISHED. */
void api_spec_states_js(jbuf *b);
/* api_schedules.c: periodic jobs */
void h_schedules(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_get(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_put(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_delete(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_pause(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_resume(server *s, http_req *req, const principal *who, const char **args);
/* api_morgue.c: dead jobs */
void h_morgue(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_requeue(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_delete(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_requeue_where(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_delete_where(server *s, http_req *req, const principal *who, const char **args);
/* api_tokens.c: tokens, and who am I */
void h_tokens(server *s, http_req *req, const principal *who, const char **args);
void h_token_create(server *s, http_req *req, const principal *who, const char **args);
void h_token_revoke(server *s, http_req *req, const principal *who, const char **args);
void h_whoami(server *s, http_req *req, const principal *who, const char **args);
/* api_stats.c: stats, lanes, metrics, health */
void h_stats(server *s, http_req *req, const principal *who, const char **args);
void h_lanes(server *s, http_req *req, const principal *who, const char **args);
void h_metrics(server *s, http_req *req, const principal *who, const char **args);
void h_healthz(server *s, http_req *req, const principal *who, const char **args);
void h_readyz(server *s, http_req *req, const principal *who, const char **args);
/* history.c, workers.c: the last hour, the workers seen */
void h_stats_history(server *s, http_req *req, const principal *who, const char **args);
void h_workers(server *s, http_req *req, const principal *who, const char **args);
/* api_audit.c: the audit log */
void h_audit(server *s, http_req *req, const principal *who, const char **args);
/* dashboard.c: the web page */
void h_dashboard(server *s, http_req *req, const principal *who, const char **args);

/* What the engine's foreach callbacks of the list endpoints write into. */
typedef struct api_list_ctx {
    server *s;
    jbuf *b;
    const principal *who;
} api_list_ctx;

/* A tenant as GET /v1/tenants lists it, for engine_foreach_tenant with an
 * api_list_ctx (api_settings.c; GET /v1/stats lists them too; a tenant
 * token sees its own only). */
void api_list_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                     const engine_counts *c);

#endif
