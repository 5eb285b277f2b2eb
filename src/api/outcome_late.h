// SPDX-License-Identifier: Apache-2.0
/* Outcomes of jobs no longer in hand, answered from the store
 * (outcome_late.c); outcomes sent again. */
#ifndef TENQ_API_OUTCOME_LATE_H
#define TENQ_API_OUTCOME_LATE_H

#include "auth.h"
#include "http.h"
#include "jbuf.h"
#include "jobread.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct server server;

/* late_note writes a placeholder for one outcome into the list being
 * written in b and returns the set (made when ls is NULL); late_resolve
 * waits for everything uncommitted, reads their rows, puts each answer in
 * its place in text (taken) and calls done with the whole (malloc'd, the
 * callee frees it), or with req and text NULL when the client left or the
 * commit failed (answered already).  late_resolve_one answers a single ack
 * or fail (POST /v1/jobs/{id}/ack) itself. */
typedef struct late_set late_set;
typedef void (*late_done)(server *s, http_req *req, char *text, void *ctx);
late_set *late_note(late_set *ls, jbuf *b, uint64_t id, const outcome_in *in);
void late_free(late_set *ls);
void late_resolve(server *s, http_req *req, const principal *who, late_set *ls, char *text,
                  late_done done, void *ctx);
void late_resolve_one(server *s, http_req *req, const principal *who, uint64_t id,
                      const outcome_in *in);
/* A start or heartbeat of a job not in hand: 409 when its row is there (its
 * lease ended), 404 when not. */
void late_refuse_call(server *s, http_req *req, const principal *who, uint64_t id, uint64_t token);
/* Is this outcome of a job in hand already applied (sent again: the same
 * token, and its lease ended with this outcome)? */
bool outcome_already_applied(server *s, uint64_t id, const outcome_in *in);

#endif
