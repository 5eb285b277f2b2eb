// SPDX-License-Identifier: Apache-2.0
/* A submit's answer (submit_json.c). */
#ifndef TENQ_API_SUBMIT_JSON_H
#define TENQ_API_SUBMIT_JSON_H

#include "jbuf.h"

#include "engine/engine.h"

#include <stdbool.h>
#include <stddef.h>

/* One job's answer, {"id", "state", "duplicate", "merged"} or {"error"}. */
void srv_write_submit_result(jbuf *b, const engine_submit_res *res);
/* A batch's: the member "jobs" (a list of those) or "columns" (a list a
 * field). */
void api_json_submitted(jbuf *b, const engine_submit_res *res, size_t n, bool columns);

#endif
