// SPDX-License-Identifier: Apache-2.0
/* The columns of jobs, in one table.  Every piece of code that names them
 * is made from it: the column lists of both stores' statements (SQLite's
 * inserts and updates, PostgreSQL's arrays and COPY), each store's binds of
 * a row, a row read back into a job (SQLite's rows, PostgreSQL's rows and
 * its binary COPY), a batch's rows and their folding into a group, the
 * strings a read keeps.  Adding a column is a row here and the migration
 * that makes it (schema.c); a new kind, its handling in each place that
 * switches on kinds (the compiler names them: each kind's macros).
 *
 * XX(column, type, kind, when, hot, field, flag)
 *   column  its name in the table (and in every statement)
 *   type    as the migrations declare it ($I64, $BOOL: schema.c's templates);
 *           a test checks it against both stores' own description
 *   kind    how a value is written and read:
 *             ID        the job's id: the first column, the key of every update
 *             NUM       a number
 *             TIME      a number, NULL for 0 ("not yet", "none")
 *             BOOL      true or false
 *             TEXT      text, or NULL
 *             STATE     the state's word (engine_state_name)
 *             ARGS      the args' JSON text (args_len kept with it)
 *             PAYLOADS  the payloads as stored: a JSON array (batch.c,
 *                       store_payloads_parse)
 *             OPTIONS   the keys a job names, its expiry and debounce, as
 *                       JSON (options.c; NULL: none), read back into the
 *                       job's fields
 *             LIVE      worked out from the state (group_row_live): written,
 *                       never read back
 *   when    which writes carry it:
 *             KEY       every one: the row's key
 *             NEW       the insert alone (fixed at submit)
 *             ALWAYS    every write, as the job is then
 *             KEPT      every write; NULL keeps the stored value (a change
 *                       sets it only when its fields have `flag`)
 *   hot     1 when an update that keeps the job live in its lane place (no
 *           index entry written: group_row_hot) sets it too
 *   field   the engine_job_info member (batch_row's and group_row's too)
 *   flag    KEPT: the ENGINE_JF_* of a change that sets it; else 0
 *
 * The order is the statements' order; `id` comes first. */
#ifndef TENQ_STORE_COLUMNS_H
#define TENQ_STORE_COLUMNS_H

#include "engine/engine.h"

#define STORE_JOB_COLUMNS_TABLE(XX)                                                                \
    XX(id, "$ID PRIMARY KEY", ID, KEY, 0, id, 0)                                                   \
    XX(tenant, "TEXT NOT NULL", TEXT, NEW, 0, tenant, 0)                                           \
    XX(queue, "TEXT NOT NULL", TEXT, NEW, 0, queue, 0)                                             \
    XX(type, "TEXT NOT NULL", TEXT, NEW, 0, type, 0)                                               \
    XX(key, "TEXT", TEXT, NEW, 0, key, 0)                                                          \
    XX(args, "TEXT", ARGS, KEPT, 0, args, ENGINE_JF_ARGS)                                          \
    XX(payloads, "TEXT", PAYLOADS, KEPT, 1, payloads, ENGINE_JF_PAYLOADS)                          \
    XX(priority, "$I64 NOT NULL", NUM, ALWAYS, 1, priority, 0)                                     \
    XX(state, "TEXT NOT NULL", STATE, ALWAYS, 1, state, 0)                                         \
    XX(attempts, "$I64 NOT NULL", NUM, ALWAYS, 1, attempts, 0)                                     \
    XX(max_attempts, "$I64 NOT NULL", NUM, ALWAYS, 1, max_attempts, 0)                             \
    XX(run_at, "$I64 NOT NULL", NUM, ALWAYS, 1, run_at, 0)                                         \
    XX(created_at, "$I64 NOT NULL", NUM, NEW, 0, created_at, 0)                                    \
    XX(ready_at, "$I64", TIME, ALWAYS, 1, ready_at, 0)                                             \
    XX(leased_at, "$I64", TIME, ALWAYS, 1, leased_at, 0)                                           \
    XX(started_at, "$I64", TIME, ALWAYS, 1, started_at, 0)                                         \
    XX(finished_at, "$I64", TIME, ALWAYS, 0, finished_at, 0)                                       \
    XX(worker, "TEXT", TEXT, ALWAYS, 1, worker, 0)                                                 \
    XX(error, "TEXT", TEXT, ALWAYS, 1, error, 0)                                                   \
    XX(result, "TEXT", TEXT, KEPT, 1, result, ENGINE_JF_RESULT)                                    \
    XX(stats, "TEXT", TEXT, KEPT, 1, stats, ENGINE_JF_RESULT)                                      \
    XX(progress, "TEXT", TEXT, ALWAYS, 1, progress, 0)                                             \
    XX(unique_key, "TEXT", TEXT, NEW, 0, unique_key, 0)                                            \
    XX(idempotency_key, "TEXT", TEXT, NEW, 0, idempotency_key, 0)                                  \
    XX(lease_token, "$I64 NOT NULL DEFAULT 0", NUM, ALWAYS, 1, token, 0)                           \
    XX(lease_until, "$I64", TIME, ALWAYS, 1, lease_until, 0)                                       \
    XX(cancel_requested, "$BOOL NOT NULL DEFAULT $FALSE", BOOL, ALWAYS, 1, cancel_requested, 0)    \
    XX(merged_into, "$I64", TIME, ALWAYS, 1, merged_into, 0)                                       \
    XX(lane_seq, "$I64", NUM, ALWAYS, 0, lane_seq, 0)                                              \
    XX(traceparent, "TEXT", TEXT, NEW, 0, traceparent, 0)                                          \
    XX(timeout_ms, "$I64", TIME, NEW, 0, timeout_ms, 0)                                            \
    XX(options, "TEXT", OPTIONS, NEW, 0, options, 0)                                               \
    XX(live, "$I64", LIVE, ALWAYS, 0, live, 0)

/* ---- the kinds and the `when`s ------------------------------------------------------------
 * STORE_JKIND_<kind>: (class, read, pgtype, number, first, spilled)
 *   class    N: a number in the engine's field, S: a string, X: none
 *   read     in a read's columns (STORE_JOB_COLUMNS)
 *   pgtype   PostgreSQL's element type for its arrays (pg_write.c)
 *   number   the store holds a number (else text)
 *   first    the first column (no comma before it in a list)
 *   spilled  left in the store by a read of plain jobs when large
 * STORE_JWHEN_<when>: (updated, kept)
 *   updated  carried by an update
 *   kept     NULL keeps the stored value */
#define STORE_JKIND_ID       (N, 1, "bigint", 1, 1, 0)
#define STORE_JKIND_NUM      (N, 1, "bigint", 1, 0, 0)
#define STORE_JKIND_TIME     (N, 1, "bigint", 1, 0, 0)
#define STORE_JKIND_BOOL     (N, 1, "boolean", 1, 0, 0)
#define STORE_JKIND_STATE    (N, 1, "text", 0, 0, 0)
#define STORE_JKIND_TEXT     (S, 1, "text", 0, 0, 0)
#define STORE_JKIND_ARGS     (S, 1, "text", 0, 0, 1)
#define STORE_JKIND_PAYLOADS (S, 1, "text", 0, 0, 0)
#define STORE_JKIND_OPTIONS  (S, 1, "text", 0, 0, 0)
#define STORE_JKIND_LIVE     (X, 0, "bigint", 1, 0, 0)
#define STORE_JWHEN_KEY      (1, 0)
#define STORE_JWHEN_NEW      (0, 0)
#define STORE_JWHEN_ALWAYS   (1, 0)
#define STORE_JWHEN_KEPT     (1, 1)

#define STORE_JC_APPLY(m, args)                       m args
#define STORE_JK_CLASS_(cls, rd, pgt, num, fst, sp)   cls
#define STORE_JK_READ_(cls, rd, pgt, num, fst, sp)    rd
#define STORE_JK_PGTYPE_(cls, rd, pgt, num, fst, sp)  pgt
#define STORE_JK_NUMBER_(cls, rd, pgt, num, fst, sp)  num
#define STORE_JK_FIRST_(cls, rd, pgt, num, fst, sp)   fst
#define STORE_JK_SPILLED_(cls, rd, pgt, num, fst, sp) sp
#define STORE_JW_UPDATED_(upd, kept)                  upd
#define STORE_JW_KEPT_(upd, kept)                     kept
#define STORE_JK_CLASS(kind)                          STORE_JC_APPLY(STORE_JK_CLASS_, STORE_JKIND_##kind)
#define STORE_JK_READ(kind)                           STORE_JC_APPLY(STORE_JK_READ_, STORE_JKIND_##kind)
#define STORE_JK_PGTYPE(kind)                         STORE_JC_APPLY(STORE_JK_PGTYPE_, STORE_JKIND_##kind)
#define STORE_JK_NUMBER(kind)                         STORE_JC_APPLY(STORE_JK_NUMBER_, STORE_JKIND_##kind)
#define STORE_JK_FIRST(kind)                          STORE_JC_APPLY(STORE_JK_FIRST_, STORE_JKIND_##kind)
#define STORE_JK_SPILLED(kind)                        STORE_JC_APPLY(STORE_JK_SPILLED_, STORE_JKIND_##kind)
#define STORE_JW_UPDATED(when)                        STORE_JC_APPLY(STORE_JW_UPDATED_, STORE_JWHEN_##when)
#define STORE_JW_KEPT(when)                           STORE_JC_APPLY(STORE_JW_KEPT_, STORE_JWHEN_##when)

/* Pasting after expansion, and a choice by a 0 or 1. */
#define STORE_JC_CAT_(a, b)      a##b
#define STORE_JC_CAT(a, b)       STORE_JC_CAT_(a, b)
#define STORE_JC_IF(on, yes, no) STORE_JC_CAT(STORE_JC_IF_, on)(yes, no)
#define STORE_JC_IF_0(yes, no)   no
#define STORE_JC_IF_1(yes, no)   yes

/* ---- positions --------------------------------------------------------------------------
 * STORE_JC_SEL_<column>: the column's place in STORE_JOB_COLUMNS (a read);
 * STORE_JC_INS_<column>: in STORE_JOB_INSERT_COLUMNS (every column);
 * STORE_JC_UPD_<column>: among the columns an update carries (the id
 * first).  A column a list leaves out has the next one's place, unused.
 * (Each column's second enumerator steps the count by 0 or 1.) */
#define STORE_JC_POS_(list, column, on)                                                            \
    STORE_JC_##list##_##column,                                                                    \
        STORE_JC_##list##_##column##_next = STORE_JC_##list##_##column + (on)-1,
#define STORE_JC_SEL_(column, type, kind, when, hot, field, flag)                                  \
    STORE_JC_POS_(SEL, column, STORE_JK_READ(kind))
#define STORE_JC_INS_(column, type, kind, when, hot, field, flag) STORE_JC_POS_(INS, column, 1)
#define STORE_JC_UPD_(column, type, kind, when, hot, field, flag)                                  \
    STORE_JC_POS_(UPD, column, STORE_JW_UPDATED(when))
enum { STORE_JOB_COLUMNS_TABLE(STORE_JC_SEL_) STORE_JOB_NCOLS };
enum { STORE_JOB_COLUMNS_TABLE(STORE_JC_INS_) STORE_JOB_NINS };
enum { STORE_JOB_COLUMNS_TABLE(STORE_JC_UPD_) STORE_JOB_NUPD };
_Static_assert(STORE_JC_INS_id == 0 && STORE_JC_SEL_id == 0 && STORE_JC_UPD_id == 0,
               "id is the first column");

/* ---- column lists, as string literals --------------------------------------------------
 * STORE_JOB_COLUMNS: every column a read selects, in order ("id, tenant,
 * ..."); STORE_JOB_INSERT_COLUMNS: every column; STORE_JOB_COLUMNS_NO_ARGS:
 * a read's list with the args only when small (64 bytes at most) or huge
 * (16 MiB and more, whose length a spilled job cannot keep): the rest stay
 * in the store (engine/args.c reads them back ahead of need). */
#define STORE_JC_NAME(kind, name)                                     STORE_JC_IF(STORE_JK_FIRST(kind), "", ", ") name
#define STORE_JC_NAME_INS(column, type, kind, when, hot, field, flag) STORE_JC_NAME(kind, #column)
#define STORE_JC_NAME_SEL(column, type, kind, when, hot, field, flag)                              \
    STORE_JC_IF(STORE_JK_READ(kind), STORE_JC_NAME(kind, #column), )
#define STORE_JC_NAME_NO_ARGS(column, type, kind, when, hot, field, flag)                          \
    STORE_JC_IF(STORE_JK_READ(kind),                                                               \
                STORE_JC_NAME(kind, STORE_JC_IF(STORE_JK_SPILLED(kind),                            \
                                                STORE_JC_SMALL_ARGS(#column), #column)), )
#define STORE_JC_SMALL_ARGS(name)                                                                  \
    "CASE WHEN $ARGS_BYTES <= 64 OR $ARGS_BYTES >= 16777216 THEN " name " END"

#define STORE_JOB_COLUMNS         STORE_JOB_COLUMNS_TABLE(STORE_JC_NAME_SEL)
#define STORE_JOB_INSERT_COLUMNS  STORE_JOB_COLUMNS_TABLE(STORE_JC_NAME_INS)
#define STORE_JOB_COLUMNS_NO_ARGS STORE_JOB_COLUMNS_TABLE(STORE_JC_NAME_NO_ARGS)

/* ---- a row's members in batch_row and group_row (internal.h) ---------------------------
 * A number as the engine's field holds it; a string as an offset into the
 * batch's arena (batch_row) or a pointer (group_row); LIVE: nothing. */
#define STORE_JC_FIELD(cls, field, str) STORE_JC_CAT(STORE_JC_FIELD_, cls)(field, str)
#define STORE_JC_FIELD_N(field, str)    __typeof__(((engine_job_info *)0)->field) field;
#define STORE_JC_FIELD_S(field, str)    str field;
#define STORE_JC_FIELD_X(field, str)
#define STORE_JC_BATCH_FIELD(column, type, kind, when, hot, field, flag)                           \
    STORE_JC_FIELD(STORE_JK_CLASS(kind), field, soff)
#define STORE_JC_GROUP_FIELD(column, type, kind, when, hot, field, flag)                           \
    STORE_JC_FIELD(STORE_JK_CLASS(kind), field, const char *)

/* What the table says of one column (columns.c), for statements made at
 * run time and for the check against the stores' own description. */
typedef struct store_job_column {
    const char *name, *type, *pgtype;
    bool read;    /* in STORE_JOB_COLUMNS */
    bool updated; /* carried by an update (its `when` is not NEW) */
    bool kept;    /* KEPT: NULL keeps the stored value */
    bool hot;     /* set by an update that writes no index entry */
    bool number;  /* a number (else text): a placeholder's 0 or '' */
} store_job_column;
extern const store_job_column store_job_columns[STORE_JOB_NINS];

#endif
