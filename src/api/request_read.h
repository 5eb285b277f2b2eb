// SPDX-License-Identifier: Apache-2.0
/* Request bodies read whole before anything is applied (request_read.c):
 * pure, so that tests and fuzzers call them alone. */
#ifndef TENQ_API_REQUEST_READ_H
#define TENQ_API_REQUEST_READ_H

#include "auth.h"
#include "jobread.h"

#include "base/jscan.h"
#include "engine/engine.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A submit's body (POST /v1/jobs): one job, or {"jobs": [...]}.  Each job's
 * strings point into mem[i] (read in place) or into the tree and mem[i]
 * (its canonical args), which the caller keeps until it is done. */
#define SUBMIT_BATCH_MAX 10000 /* jobs a submit holds at most */
typedef struct submit_in {
    size_t n;
    bool batch;
    bool columns; /* a batch's answer as columns */
    engine_submit_req *reqs;
    engine_submit_res *res; /* zeroed; from a tree, a job refused has code and err set */
    bool *ok;               /* from a tree: which jobs were read; NULL: all of them */
    char **mem;
} submit_in;
void submit_in_free(submit_in *in);
/* In place: true with every job read, or false (nothing to free) when
 * submit_read_tree must read it (anything unusual, and every refusal).  A
 * single job longer than max_job_bytes is left to it too. */
bool submit_read_text(const char *text, size_t len, long long max_job_bytes, const principal *who,
                      submit_in *in);
/* From the body's tree (an object; len: the body's bytes): SUBMIT_READ
 * with *in (a job refused has its answer in res), or why the whole request
 * is refused, nothing to free: a single job too large, a batch with a
 * member other than "jobs" and "columns" (*other_key, in the tree), jobs
 * not a list of 1 to 10,000, columns not true, false or null. */
typedef enum {
    SUBMIT_READ,
    SUBMIT_TOO_LARGE,
    SUBMIT_NOT_ONLY_JOBS,
    SUBMIT_BAD_JOBS,
    SUBMIT_BAD_COLUMNS
} submit_verdict;
submit_verdict submit_read_tree(json_t *body, size_t len, long long max_job_bytes,
                                const principal *who, submit_in *in, const char **other_key);

/* A list of outcomes (POST /v1/outcomes, a lease's "outcomes") read, not
 * applied yet. */
typedef struct outcome_set {
    size_t n, cap;
    outcome_in *ins;
    uint64_t *ids;     /* 0 where the item had no usable id */
    engine_err **errs; /* from a tree: why each item was refused (malloc'd), or NULL */
} outcome_set;
void outcome_set_free(outcome_set *os);
/* Every item of the list `list` walks (1 to 10,000 of them), read in place;
 * false when jansson must read the list (nothing to free). */
bool outcome_set_read(tq_iter *list, outcome_set *os);
/* The same from a tree: the refusal in err when list is not a list of 1 to
 * 10,000 (nothing to free); a bad item gets its own error in errs. */
int outcome_set_read_tree(json_t *list, outcome_set *os, engine_err *err);
/* A whole POST /v1/outcomes body in place ({"outcomes": [...]} and nothing
 * else); false when jansson must read it (nothing to free). */
bool outcomes_read_text(const char *text, size_t len, outcome_set *os);

#endif
