// SPDX-License-Identifier: Apache-2.0
/* A lease's jobs in its answer (lease_json.c). */
#ifndef TENQ_API_LEASE_JSON_H
#define TENQ_API_LEASE_JSON_H

#include "jbuf.h"

#include "engine/engine.h"

#include <stdbool.h>
#include <stddef.h>

/* A lease's n jobs, as api_json_items writes them (json_fields.h). */
void api_json_leased(jbuf *b, const engine_job_info *jobs, size_t n, bool columns);
/* A merging queue's job's payloads: [{"payload": ..., "score": ...}, ...]. */
void api_json_payloads(jbuf *b, const engine_job_info *j);

#endif
