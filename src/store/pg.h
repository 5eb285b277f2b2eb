// SPDX-License-Identifier: Apache-2.0
/* The PostgreSQL backend's insides, shared by postgres.c (the driver),
 * pg_conn.c (connections, errors), pg_write.c (writes), pg_copyout.c (a
 * load's jobs) and pg_leader.c (elections).  Three connections, each used
 * by one thread only: w (the writer thread's commits, retention; the
 * leadership thread's loads; always under db_lock), r (the reader thread),
 * c (the leadership thread: the advisory lock, the leader row,
 * notifications). */
#ifndef TENQ_STORE_PG_H
#define TENQ_STORE_PG_H

#include "internal.h"

#include <libpq-fe.h>

typedef struct pg {
    PGconn *w, *r, *c;
    bool prepared;
    char url[1024];
    char app[64];    /* application_name of every connection: "tenq:<node>" */
    bool inbox_news; /* tenq_inbox was notified (the leadership thread's) */
} pg;

/* pg_conn.c: a connection to p's database (connect timeout, TCP keepalives and a TCP
 * user timeout set unless the URL says otherwise; application_name app),
 * or NULL with the reason in errbuf. */
PGconn *pg_connect(const pg *p, char *errbuf, size_t errlen);
/* Runs SQL with no parameters: 0, or the error (store's message set). */
int pg_run(store_t *s, PGconn *c, const char *sql, const char *what);
/* Sets the store's message from a failed result (or the connection) and
 * maps it to a TENQ_E* code. */
int pg_fail(store_t *s, PGconn *c, const PGresult *res, const char *what);

/* The write connection, connected again if it was lost (under db_lock). */
int pg_ensure_connected(store_t *s, pg *p);
int64_t pg_now_ms(void);

/* Writes (pg_write.c): the statements prepared on the write connection
 * (once a connection), by name; the fence alone in a transaction already
 * begun (0, or TENQ_ENOT_LEADER when the term is over); the driver's
 * apply. */
enum {
    PG_ST_TENANT,
    PG_ST_QUEUE,
    PG_ST_IDEM,
    PG_ST_TOKEN,
    PG_ST_REVOKE,
    PG_ST_FENCE,
    PG_ST_ID_FLOOR,
    PG_ST_REQUEST,
    PG_ST_PAUSE,
    PG_ST_ATTEMPT,
    PG_ST_SCHEDULE,
    PG_ST_SCHEDULE_TICK,
    PG_ST_SCHEDULE_DELETE,
    PG_ST_DEP,
    PG_ST_BATCH,
    PG_ST_BATCH_JOB,
    PG_ST_USAGE,
    PG_ST_AUDIT,
    PG_ST_STEP,
    PG_ST_STEP_DONE,
    PG_ST_EVENT,
    PG_ST_EVENT_DEL,
    PG_ST_EVENT_INBOX_DONE,
    PG_ST_KEY_SET,
    PG_ST_KEY_DEL,
    PG_ST_N
};
extern const char *const pg_stmt_name[PG_ST_N];
int pg_prepare_all(store_t *s, pg *p);
int pg_fence(store_t *s, pg *p, const char *term);
int pg_apply(store_t *s, const store_group *g, bool begin, bool commit);
/* The statement that inserts (or updates) job rows from one array per
 * column, made from the table once (columns.h). */
const char *pg_job_sql(bool insert);

/* A load's jobs, every live one in lane order, into the engine by binary
 * COPY on c (pg_copyout.c); *count counts them.  0 or an error. */
int pg_copy_jobs(store_t *s, PGconn *c, engine_t *e, int64_t now, size_t *count);

/* Elections (pg_leader.c): the store_driver's leadership functions. */
int pg_campaign(store_t *s, const store_node *me, uint64_t *term, store_leader *who);
int pg_new_term(store_t *s, const store_node *me, uint64_t term, uint64_t *next);
int pg_renew(store_t *s, const store_node *me, uint64_t term);
void pg_resign(store_t *s, const store_node *me, uint64_t term);
int pg_leader_wait(store_t *s, int wake_fd, int ms);
bool pg_inbox_news(store_t *s);

#endif
