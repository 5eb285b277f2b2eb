// SPDX-License-Identifier: Apache-2.0
/* A job as the API shows it (job_json.c): GET /v1/jobs/{id}, lists, waits,
 * the morgue. */
#ifndef TENQ_API_JOB_JSON_H
#define TENQ_API_JOB_JSON_H

#include "auth.h"
#include "jbuf.h"

#include "engine/engine.h"

#include <stdint.h>

/* The waiting reason of a job that waits for a worker when none asked for
 * work lately, beside the engine's (engine_wait_name). */
#define API_WAIT_NO_WORKER "no_worker"

/* A job shows at most this many children's ids (the first, by id), with
 * children_count. */
#define API_CHILDREN_SHOWN 1000

/* How a job is shown to whom (api_job_view): with its lease token, without
 * its data (args, payloads, result, progress: "data_hidden": true). */
#define JOB_VIEW_TOKEN 1u
#define JOB_VIEW_HIDE  2u
unsigned api_job_view(const principal *who);
/* "concurrency_keys": [{"key", "limit"}...] and "rate_keys": [{"key",
 * "cost", ...}] of a job that names some. */
void api_json_ckeys(jbuf *b, const engine_job_info *j);
/* The job as an object.  wait: why the job is not handed out now
 * ("waiting"), or NULL to leave it out (a job read from the store). */
void api_json_job(jbuf *b, const engine_job_info *j, unsigned view, const engine_wait *wait,
                  int64_t now);

#endif
