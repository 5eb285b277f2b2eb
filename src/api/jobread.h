// SPDX-License-Identifier: Apache-2.0
/* Reading one job, one lease request or one outcome (jobread.c): from the
 * body's text in place, or from a jansson tree, which reads anything
 * unusual and words every refusal.  Pure: tests/unit/test_api_text.c and
 * tests/fuzz call them alone. */
#ifndef TENQ_API_JOBREAD_H
#define TENQ_API_JOBREAD_H

#include "auth.h"

#include "base/jscan.h"
#include "engine/engine.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A submitted job's fields into r.  read_job reads a jansson tree: strings
 * point into it or into *args_out (the canonical args, malloc'd); on a
 * refusal it fills err and returns false.  read_job_text reads the
 * object's text in place and gives what read_job would, or declines
 * (false, nothing to free): then read_job must read the job, and words any
 * refusal.  Its strings and args point into *mem (free it). */
bool read_job(json_t *o, const principal *who, engine_submit_req *r, char **args_out,
              engine_err *err);
bool read_job_text(tq_iter *obj, const principal *who, engine_submit_req *r, char **mem);

/* canonical_json's text for a checked value read in place (malloc'd), or
 * NULL when jansson must write it (escapes, deep nesting, big numbers). */
char *canonical_text(tq_span v);
/* An integer token of at most 18 digits (it fits whatever they are). */
bool text_int(tq_span v, long long *out);

/* An outcome's fields once read. */
typedef struct outcome_in {
    uint64_t token;
    bool ok;
    char *result, *stats; /* canonical JSON (malloc'd), or NULL */
    char *error;          /* malloc'd, or NULL */
    engine_fail_req f;    /* retry_in_ms, retry, cancelled (error and stats set at the end) */
} outcome_in;
void outcome_in_free(outcome_in *in);
/* From a JSON object (an ack when ok, else a failure), checked in the order
 * that picks which refusal a bad outcome gets; 0, or an error in err and
 * nothing to free.  The caller checked id and ok, and that every key is an
 * outcome's. */
int outcome_read(json_t *o, bool ok, outcome_in *in, engine_err *err);
/* From an outcome's text in place, with its id; false when outcome_read
 * must read it instead (anything unusual, and every refusal).  Both text
 * readers read the object obj/o stands at (tq_iter_at, or a step of a
 * walk), checking it as they go, and leave it past the object. */
bool outcome_read_text(tq_iter *o, outcome_in *in, uint64_t *id);

/* A lease request's fields (POST /v1/lease). */
#define LEASE_MAX  1000 /* jobs a lease may ask for */
#define MAX_QUEUES 64   /* names in queues and in types */
typedef struct lease_in {
    char *worker;           /* malloc'd, or NULL (not given) */
    char **queues, **types; /* malloc'd lists of malloc'd names */
    size_t nq, nt;
    long long max, wait_ms;
    bool has_outcomes; /* outcomes to report first (not null) */
    bool columns;      /* the jobs answered as columns */
    tq_span outcomes;  /* lease_read_text: their list, in the body's text */
} lease_in;
void lease_in_free(lease_in *in);
/* From a jansson tree: 0, or the refusal in err (nothing to free). */
int lease_read(json_t *body, lease_in *in, engine_err *err);
/* From the body's text in place: what lease_read gives, or false (nothing
 * to free) when lease_read must read it (anything unusual, and every
 * refusal). */
bool lease_read_text(const char *text, size_t n, lease_in *in);

#endif
