// SPDX-License-Identifier: Apache-2.0
/* One job answered as GET /v1/jobs/{id} answers it (job_reply.c). */
#ifndef TENQ_API_JOB_REPLY_H
#define TENQ_API_JOB_REPLY_H

#include "auth.h"
#include "http.h"

#include <stdint.h>

typedef struct server server;

/* Job id as who sees it: from memory, with why it waits (its args read back
 * first when they are out of memory), or, finished, from the store; 404
 * when there is none who may see. */
void srv_reply_job(server *s, http_req *req, const principal *who, uint64_t id);

#endif
