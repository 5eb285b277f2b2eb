// SPDX-License-Identifier: Apache-2.0
/* The SQLite backend's insides, shared by sqlite.c (opening, checkpoints,
 * reads, retention, terms: the driver), sqlite_write.c (its writes) and
 * sqlite_err.c (errors, helpers). */
#ifndef TENQ_STORE_SQLITE_H
#define TENQ_STORE_SQLITE_H

#include "internal.h"
#include "sqlite_vfs.h"

#include <pthread.h>
#include <sqlite3.h>

enum {
    ST_INS_JOB,
    ST_UPD_JOB,
    ST_UPD_HOT,
    ST_INS_ROWS, /* the same three, JOB_ROWS rows a statement (job_sql) */
    ST_UPD_ROWS,
    ST_HOT_ROWS,
    ST_DEL_JOB,
    ST_ID_FLOOR,
    ST_TENANT,
    ST_QUEUE,
    ST_IDEM,
    ST_TOKEN,
    ST_REVOKE,
    ST_REQUEST,
    ST_PAUSE,
    ST_AUDIT,
    ST_ATTEMPT,
    ST_SCHEDULE,
    ST_SCHEDULE_TICK,
    ST_SCHEDULE_DELETE,
    ST_DEP,
    ST_BATCH,
    ST_BATCH_JOB,
    ST_STEP,
    ST_STEP_DONE,
    ST_EVENT,
    ST_EVENT_DEL,
    ST_KEY_SET,
    ST_KEY_DEL,
    ST_BEGIN, /* prepared once: sqlite3_exec parses its text at every commit */
    ST_COMMIT,
    ST_N
};

typedef struct sq {
    sqlite3 *db, *rdb, *cdb; /* writes; reads; checkpoints */
    pthread_t ckpt_thread;
    pthread_mutex_t ckpt_lock;
    pthread_cond_t ckpt_cond;
    bool ckpt_wanted, ckpt_stop, ckpt_running;
    fault_vfs vfs;
    int lock_fd; /* holds the file's one-server lock (sqlite_lock.c) */
    sqlite3_stmt *st[ST_N];
    char path[4096];
} sq;

/* sqlite_err.c: SQLite's result code as a TENQ_E* code; the store's message
 * set from SQLite's (what: the step that failed) and rc mapped. */
int sq_map_rc(int rc);
int sq_fail(store_t *s, sqlite3 *db, int rc, const char *what);
int sq_exec(sqlite3 *db, const char *sql);
int64_t sq_now_ms(void);
/* sqlite_write.c: the write statements prepared (once); the store_driver's
 * apply and abandon. */
int sq_prepare_all(store_t *s, sq *q);
int sq_apply(store_t *s, const store_group *g, bool begin, bool commit);
void sq_abandon(store_t *s);

#endif
