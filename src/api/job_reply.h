// SPDX-License-Identifier: Apache-2.0
/* One job answered as GET /v1/jobs/{id} answers it (job_reply.c). */
#ifndef TENQ_API_JOB_REPLY_H
#define TENQ_API_JOB_REPLY_H

#include "auth.h"
#include "http.h"

#include "engine/engine.h"

#include <stdint.h>

typedef struct server server;

/* Job id as who sees it: from memory, with why it waits (its args read back
 * first when they are out of memory), or, finished, from the store; 404
 * when there is none who may see. */
void srv_reply_job(server *s, http_req *req, const principal *who, uint64_t id);

/* The id in a job's path (/v1/jobs/{id}/...) for a read of its rows: 0 when
 * answered already (not an id; a job in memory that who may not see:
 * 404).  A job not in memory is looked for by the read. */
uint64_t srv_job_path_id(server *s, http_req *req, const principal *who, const char *arg);

/* The job a store read about job id answers for, as who may see it: the
 * engine's when in memory (written into *buf), else the read's row
 * (stored).  When the read failed (rc: "reading WHAT failed") or who may
 * see no such job (404), replies and returns NULL. */
const engine_job_info *srv_read_job(server *s, http_req *req, int rc, const char *what, uint64_t id,
                                    const principal *who, const engine_job_info *stored,
                                    engine_job_info *buf);

#endif
