// SPDX-License-Identifier: Apache-2.0
/* The SQLite backend: one file, WAL mode, synchronous=FULL by default.
 * Every file is opened through the fault VFS (sqlite_vfs.c), so that tests
 * can make the disk full under SQLite's real error paths. */
#include "sqlite.h"
#include "schema.h"

#include "base/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void store_test_set_write_budget(store_t *s, long long bytes)
{
    if (strcmp(s->be->name, "sqlite") != 0) return;
    sq *q = s->impl;
    __atomic_store_n(&q->vfs.budget, bytes, __ATOMIC_RELAXED);
}

/* ---- opening and migrating ------------------------------------------------------ */

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return 0;
    *slash = 0;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* Returns the schema version (0 for an empty file) or a negative error. */
static int current_version(sqlite3 *db, char *errbuf, size_t errlen, const char *path)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        snprintf(errbuf, errlen, "%s is not a tenq database (%s)", path, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return (rc & 0xff) == SQLITE_NOTADB ? TENQ_ENOT_TENQ : sq_map_rc(rc);
    }
    int tables = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (tables == 0) return 0;
    rc = sqlite3_prepare_v2(db, "SELECT value FROM tenq_info WHERE key = 'application'", -1, &st,
                            NULL);
    bool ok = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(st, 0), "tenq") == 0;
    sqlite3_finalize(st);
    if (!ok) {
        snprintf(errbuf, errlen,
                 "%s is not a tenq database: it is an SQLite file with other tables; "
                 "point tenq at a new file",
                 path);
        return TENQ_ENOT_TENQ;
    }
    rc = sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &st, NULL);
    int v = -1;
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (v < 0) {
        snprintf(errbuf, errlen, "%s: cannot read its schema version (%s)", path,
                 sqlite3_errmsg(db));
        return TENQ_ECORRUPT;
    }
    return v;
}

static int migrate(sqlite3 *db, int from, int to, char *errbuf, size_t errlen)
{
    for (int v = from + 1; v <= to; v++) {
        char *sql = store_schema_sql(v, false);
        char ins[128];
        snprintf(ins, sizeof ins, "INSERT INTO schema_version VALUES (%d, %lld);", v,
                 (long long)sq_now_ms());
        int rc = sq_exec(db, "BEGIN IMMEDIATE");
        if (rc == SQLITE_OK) rc = sq_exec(db, sql);
        if (rc == SQLITE_OK) rc = sq_exec(db, ins);
        if (rc == SQLITE_OK) rc = sq_exec(db, "COMMIT");
        free(sql);
        if (rc != SQLITE_OK) {
            snprintf(errbuf, errlen, "migration to schema version %d failed: %s", v,
                     sqlite3_errmsg(db));
            sq_exec(db, "ROLLBACK");
            return sq_map_rc(rc);
        }
    }
    return 0;
}

/* ---- checkpoints ------------------------------------------------------------
 * The WAL is folded back into the database by a thread of its own with its own
 * connection (a PASSIVE checkpoint never blocks the writer), so a commit never
 * pays for a checkpoint.  Once a checkpoint has caught up, the next commit
 * starts the WAL over from its beginning: writes then overwrite blocks the
 * file already has, and fdatasync need not journal a new file size (here that
 * halves the cost of a commit). */

#define CKPT_PAGES 1000

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    sq *q = arg;
    if (pages >= CKPT_PAGES) {
        pthread_mutex_lock(&q->ckpt_lock);
        q->ckpt_wanted = true;
        pthread_cond_signal(&q->ckpt_cond);
        pthread_mutex_unlock(&q->ckpt_lock);
    }
    return SQLITE_OK;
}

static void *ckpt_main(void *arg)
{
    sq *q = arg;
    pthread_setname_np(pthread_self(), "tenq-checkpoint");
    pthread_mutex_lock(&q->ckpt_lock);
    for (;;) {
        while (!q->ckpt_wanted && !q->ckpt_stop) pthread_cond_wait(&q->ckpt_cond, &q->ckpt_lock);
        if (q->ckpt_stop) break;
        q->ckpt_wanted = false;
        pthread_mutex_unlock(&q->ckpt_lock);
        sqlite3_wal_checkpoint_v2(q->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        pthread_mutex_lock(&q->ckpt_lock);
    }
    pthread_mutex_unlock(&q->ckpt_lock);
    return NULL;
}

static int ckpt_start(sq *q, const char *path)
{
    int rc =
        sqlite3_open_v2(path, &q->cdb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, q->vfs.name);
    if (rc != SQLITE_OK) return rc;
    sqlite3_busy_timeout(q->cdb, 5000);
    /* connections open the file lazily: until then a checkpoint does nothing */
    rc = sq_exec(q->cdb, "SELECT count(*) FROM sqlite_master");
    if (rc != SQLITE_OK) {
        sqlite3_close(q->cdb);
        return rc;
    }
    pthread_mutex_init(&q->ckpt_lock, NULL);
    pthread_cond_init(&q->ckpt_cond, NULL);
    sq_exec(q->db, "PRAGMA wal_autocheckpoint=0");
    sqlite3_wal_hook(q->db, wal_hook, q);
    if (pthread_create(&q->ckpt_thread, NULL, ckpt_main, q) != 0) {
        sqlite3_wal_hook(q->db, NULL, NULL);
        pthread_mutex_destroy(&q->ckpt_lock);
        pthread_cond_destroy(&q->ckpt_cond);
        sqlite3_close(q->cdb);
        return SQLITE_NOMEM; /* no thread: as no memory */
    }
    q->ckpt_running = true;
    return SQLITE_OK;
}

static void ckpt_stop(sq *q)
{
    if (!q->ckpt_running) return;
    pthread_mutex_lock(&q->ckpt_lock);
    q->ckpt_stop = true;
    pthread_cond_signal(&q->ckpt_cond);
    pthread_mutex_unlock(&q->ckpt_lock);
    pthread_join(q->ckpt_thread, NULL);
    sqlite3_close(q->cdb);
    pthread_mutex_destroy(&q->ckpt_lock);
    pthread_cond_destroy(&q->ckpt_cond);
    q->ckpt_running = false;
}

static const store_driver sqlite_backend;

/* Before SQLite starts (once a process): no global memory statistics.  With
 * them on, every allocation SQLite makes takes a process-wide mutex to count
 * itself, for figures nothing here reads. */
static void sqlite_setup(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); /* refused if SQLite already started: harmless */
}

int store_sqlite_open(store_t *s, const char *path, char *errbuf, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_setup);
    if (!*path) {
        snprintf(errbuf, errlen, "sqlite: empty path");
        return TENQ_EINVALID;
    }
    sq *q = xcalloc(1, sizeof(*q));
    snprintf(q->path, sizeof q->path, "%s", path);
    snprintf(s->where, sizeof s->where, "%s", path);
    int rc = 0;
    if (mkdirs(path) != 0) {
        snprintf(errbuf, errlen, "cannot create the folder for %s: %s", path, strerror(errno));
        free(q);
        return TENQ_EIO;
    }
    if ((rc = store_sqlite_lock(path, &q->lock_fd, errbuf, errlen)) != 0) {
        free(q);
        return rc;
    }
    if (fault_vfs_register(&q->vfs) != SQLITE_OK) {
        snprintf(errbuf, errlen, "sqlite: cannot register the VFS");
        close(q->lock_fd);
        free(q);
        return TENQ_EIO;
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int src = sqlite3_open_v2(path, &q->db, flags, q->vfs.name);
    if (src != SQLITE_OK) {
        snprintf(errbuf, errlen, "cannot open %s: %s", path,
                 q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(src));
        rc = sq_map_rc(src);
        goto fail;
    }
    sqlite3_busy_timeout(q->db, 5000);
    int v = current_version(q->db, errbuf, errlen, path);
    if (v < 0) {
        rc = v;
        goto fail;
    }
    int known = store_schema_versions();
    if (v > known) {
        snprintf(errbuf, errlen,
                 "%s is from a newer tenq (schema version %d; this tenq knows up to %d): "
                 "upgrade tenq",
                 path, v, known);
        rc = TENQ_EVERSION;
        goto fail;
    }
    /* A 4 MiB page cache: the writer touches the right edges of its b-trees
     * and rows in lease order, which fit; a larger cache only held more of
     * the table in our memory (and made each commit's walk of the cache
     * longer). Measured: docs/decisions/0007. */
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA cache_size=-4096;"
             "PRAGMA temp_store=MEMORY; PRAGMA mmap_size=0;",
             s->opts.sync == STORE_SYNC_NORMAL ? "NORMAL" : "FULL");
    src = sq_exec(q->db, pragmas);
    if (src != SQLITE_OK) {
        snprintf(errbuf, errlen, "%s: %s", path, sqlite3_errmsg(q->db));
        rc = sq_map_rc(src);
        goto fail;
    }
    int target = s->opts.max_version > 0 ? s->opts.max_version : known;
    if (target > v && (rc = migrate(q->db, v, target, errbuf, errlen)) != 0) goto fail;
    src = sqlite3_open_v2(path, &q->rdb, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, q->vfs.name);
    if (src != SQLITE_OK) {
        snprintf(errbuf, errlen, "cannot open %s for reading: %s", path, sqlite3_errstr(src));
        rc = sq_map_rc(src);
        goto fail;
    }
    sqlite3_busy_timeout(q->rdb, 5000);
    src = ckpt_start(q, path);
    if (src != SQLITE_OK) {
        snprintf(errbuf, errlen, "cannot open %s for checkpoints: %s", path, sqlite3_errstr(src));
        rc = sq_map_rc(src);
        goto fail;
    }
    s->be = &sqlite_backend;
    s->impl = q;
    return 0;
fail:
    sqlite3_close(q->rdb);
    sqlite3_close(q->db);
    fault_vfs_unregister(&q->vfs);
    close(q->lock_fd); /* after every connection: see sqlite_lock.c */
    free(q);
    return rc;
}

static void sq_close(store_t *s)
{
    sq *q = s->impl;
    ckpt_stop(q);
    for (int i = 0; i < ST_N; i++) sqlite3_finalize(q->st[i]);
    /* Fold the WAL into the file so the next start reads one file. */
    sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_close(q->rdb);
    sqlite3_close(q->db);
    fault_vfs_unregister(&q->vfs);
    close(q->lock_fd);
    free(q);
}

/* ---- reading rows ------------------------------------------------------------------- */

static bool acc_null(void *row, int c)
{
    return sqlite3_column_type(row, c) == SQLITE_NULL;
}
static long long acc_i64(void *row, int c)
{
    return sqlite3_column_int64(row, c);
}
static const char *acc_text(void *row, int c)
{
    return (const char *)sqlite3_column_text(row, c);
}
static const store_rowacc sq_acc = {acc_null, acc_i64, acc_text};

/* Every tenant's and queue's settings into the engine. */
static int load_settings(store_t *s, sq *q, engine_t *e, int64_t now, store_load_stats *st)
{
    for (int k = STORE_TENANTS; k <= STORE_QUEUES; k++) {
        char *sql = store_settings_select_sql((store_settings_kind)k, false);
        sqlite3_stmt *t = NULL;
        int src = sqlite3_prepare_v2(q->db, sql, -1, &t, NULL);
        free(sql);
        char msg[200] = "";
        int rc = 0;
        if (src != SQLITE_OK) return sq_fail(s, q->db, src, "loading settings");
        while (!rc && (src = sqlite3_step(t)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(t, 0);
            engine_err err = {0};
            if (k == STORE_TENANTS) {
                engine_tenant_settings ts;
                rc = store_settings_from_row(STORE_TENANTS, &sq_acc, t, &ts, msg, sizeof msg);
                if (!rc && engine_tenant_set(e, now, name, &ts, &err) != 0) rc = TENQ_ECORRUPT;
                st->tenants += !rc;
            } else {
                engine_queue_settings qs;
                engine_queue_settings_defaults(&qs);
                rc = store_settings_from_row(STORE_QUEUES, &sq_acc, t, &qs, msg, sizeof msg);
                if (!rc && engine_queue_set(e, now, name, &qs, &err) != 0) rc = TENQ_ECORRUPT;
                st->queues += !rc;
            }
            if (rc)
                store_set_err(s, "%s %s: %s", k == STORE_TENANTS ? "tenant" : "queue", name,
                              msg[0] ? msg : err.message);
        }
        sqlite3_finalize(t);
        if (rc) return rc;
        if (src != SQLITE_DONE) return sq_fail(s, q->db, src, "loading settings");
    }
    return 0;
}

static int sq_load(store_t *s, engine_t *e, int64_t now, store_load_stats *st)
{
    sq *q = s->impl;
    int rc = load_settings(s, q, e, now, st);
    if (rc) return rc;
    sqlite3_stmt *t = NULL;
    char *sql = store_sql(STORE_SQL_LOAD_JOBS, false);
    int src = sqlite3_prepare_v2(q->db, sql, -1, &t, NULL);
    free(sql);
    if (src != SQLITE_OK) return sq_fail(s, q->db, src, "loading jobs");
    char msg[256];
    while ((src = sqlite3_step(t)) == SQLITE_ROW) {
        engine_job_info in;
        store_row_mem m;
        rc = store_row_to_job(&sq_acc, t, &in, &m, msg, sizeof msg);
        engine_err err;
        if (rc == 0 && engine_load_job(e, now, &in, &err) != 0) {
            snprintf(msg, sizeof msg, "job %llu: %s", (unsigned long long)in.id, err.message);
            rc = TENQ_ECORRUPT;
        }
        store_row_mem_free(&m);
        if (rc) {
            store_set_err(s, "loading: %s", msg);
            sqlite3_finalize(t);
            return rc;
        }
        st->jobs++;
    }
    sqlite3_finalize(t);
    if (src != SQLITE_DONE) return sq_fail(s, q->db, src, "loading jobs");

    src = sqlite3_prepare_v2(q->db,
                             "SELECT tenant, key, job_id, state, duplicate, merged, created_at "
                             "FROM idempotency WHERE created_at > ?",
                             -1, &t, NULL);
    if (src != SQLITE_OK) return sq_fail(s, q->db, src, "loading idempotency keys");
    sqlite3_bind_int64(t, 1, now - 24LL * 3600 * 1000);
    while ((src = sqlite3_step(t)) == SQLITE_ROW) {
        int state = engine_state_parse((const char *)sqlite3_column_text(t, 3));
        engine_idem_info ii = {(const char *)sqlite3_column_text(t, 0),
                               (const char *)sqlite3_column_text(t, 1),
                               (uint64_t)sqlite3_column_int64(t, 2),
                               state < 0 ? ENGINE_READY : (engine_state)state,
                               sqlite3_column_int64(t, 4) != 0,
                               sqlite3_column_int64(t, 5) != 0,
                               sqlite3_column_int64(t, 6)};
        if (engine_load_idem(e, &ii, NULL) == 0) st->idem++;
    }
    sqlite3_finalize(t);
    if (src != SQLITE_DONE) return sq_fail(s, q->db, src, "loading idempotency keys");

    sql = store_sql(STORE_SQL_MAX_ID, false);
    src = sqlite3_prepare_v2(q->db, sql, -1, &t, NULL);
    free(sql);
    if (src == SQLITE_OK) src = sqlite3_step(t);
    if (src == SQLITE_ROW) engine_set_next_id(e, (uint64_t)sqlite3_column_int64(t, 0) + 1);
    sqlite3_finalize(t);
    return src == SQLITE_ROW ? 0 : sq_fail(s, q->db, src, "reading the highest id");
}

static int sq_select(store_t *s, bool read, const char *tmpl, int n, const char *const *params,
                     void (*row)(void *ctx, const store_rowacc *acc, void *row), void *ctx)
{
    sq *q = s->impl;
    sqlite3 *db = read ? q->rdb : q->db;
    char *sql = store_sql(tmpl, false);
    sqlite3_stmt *t = NULL;
    int src = sqlite3_prepare_v2(db, sql, -1, &t, NULL);
    free(sql);
    if (src != SQLITE_OK) return sq_fail(s, db, src, "query");
    for (int i = 0; i < n; i++) sqlite3_bind_text(t, i + 1, params[i], -1, SQLITE_STATIC);
    while ((src = sqlite3_step(t)) == SQLITE_ROW) row(ctx, &sq_acc, t);
    sqlite3_finalize(t);
    return src == SQLITE_DONE ? 0 : sq_fail(s, db, src, "query");
}

static int sq_query(store_t *s, uint64_t id, const store_job_query *jq, rows_builder *rows)
{
    sq *q = s->impl;
    char sql[1024];
    const char *binds[8];
    int nb = 0;
    if (id) {
        snprintf(sql, sizeof sql, "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE id = ?");
    } else {
        int n = snprintf(sql, sizeof sql, "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE 1=1");
        const char *cols[4] = {"tenant", "queue", "type", "key"};
        const char *vals[4] = {jq->tenant, jq->queue, jq->type, jq->key};
        for (int i = 0; i < 4; i++) {
            if (!vals[i]) continue;
            n += snprintf(sql + n, sizeof sql - (size_t)n, " AND %s = ?", cols[i]);
            binds[nb++] = vals[i];
        }
        if (jq->state >= 0) {
            n += snprintf(sql + n, sizeof sql - (size_t)n, " AND state = ?");
            binds[nb++] = engine_state_name((engine_state)jq->state);
        }
        if (jq->args) {
            n += snprintf(sql + n, sizeof sql - (size_t)n,
                          " AND instr(coalesce(args, payloads), ?) > 0");
            binds[nb++] = jq->args;
        }
        if (jq->before_id) n += snprintf(sql + n, sizeof sql - (size_t)n, " AND id < ?");
        snprintf(sql + n, sizeof sql - (size_t)n, " ORDER BY id DESC LIMIT ?");
    }
    sqlite3_stmt *t = NULL;
    int src = sqlite3_prepare_v2(q->rdb, sql, -1, &t, NULL);
    if (src != SQLITE_OK) return sq_fail(s, q->rdb, src, "query");
    int bi = 1;
    if (id) {
        sqlite3_bind_int64(t, bi++, (long long)id);
    } else {
        for (int i = 0; i < nb; i++) sqlite3_bind_text(t, bi++, binds[i], -1, SQLITE_STATIC);
        if (jq->before_id) sqlite3_bind_int64(t, bi++, (long long)jq->before_id);
        sqlite3_bind_int64(t, bi++, jq->limit ? jq->limit : 100);
    }
    int rc = 0;
    while (!rc && (src = sqlite3_step(t)) == SQLITE_ROW) rc = rows_add_row(s, rows, &sq_acc, t);
    sqlite3_finalize(t);
    if (rc) return rc;
    return src == SQLITE_DONE ? 0 : sq_fail(s, q->rdb, src, "query");
}

static int sq_tx_begin(store_t *s, uint64_t term)
{
    (void)term; /* the file's lock fences every write */
    sq *q = s->impl;
    int src = sq_exec(q->db, "BEGIN IMMEDIATE");
    return src == SQLITE_OK ? 0 : sq_fail(s, q->db, src, "begin");
}

static long sq_tx_exec(store_t *s, const char *tmpl, int n, const char *const *params)
{
    sq *q = s->impl;
    char *sql = store_sql(tmpl, false);
    sqlite3_stmt *t = NULL;
    int src = sqlite3_prepare_v2(q->db, sql, -1, &t, NULL);
    free(sql);
    for (int i = 0; src == SQLITE_OK && i < n; i++)
        sqlite3_bind_text(t, i + 1, params[i], -1, SQLITE_STATIC);
    if (src == SQLITE_OK) src = sqlite3_step(t);
    sqlite3_finalize(t);
    return src == SQLITE_DONE ? sqlite3_changes(q->db) : sq_fail(s, q->db, src, "writing");
}

static int sq_tx_end(store_t *s, bool commit)
{
    sq *q = s->impl;
    int src = sq_exec(q->db, commit ? "COMMIT" : "ROLLBACK");
    if (src == SQLITE_OK) return 0;
    int rc = sq_fail(s, q->db, src, "commit");
    sq_exec(q->db, "ROLLBACK");
    return rc;
}

/* ---- leadership ----------------------------------------------------------------------
 * The server that holds the file's lock leads it (sqlite_lock.c); a campaign
 * wins at once and, like a reload, only counts a new term. */

/* The term above every earlier one, committed (a disk too full to take it
 * refuses it: then no lease goes out under a term that could repeat). */
static int sq_bump_term(store_t *s, uint64_t *term)
{
    sq *q = s->impl;
    pthread_mutex_lock(&s->db_lock);
    char *sql = store_sql(STORE_SQL_NEXT_TERM, false);
    sqlite3_stmt *st = NULL;
    int src = sq_exec(q->db, "BEGIN IMMEDIATE");
    if (src == SQLITE_OK) src = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);
    free(sql);
    if (src == SQLITE_OK) src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        *term = (uint64_t)sqlite3_column_int64(st, 0);
        src = sqlite3_step(st);
    }
    int fin = st ? sqlite3_finalize(st) : SQLITE_OK;
    if (src == SQLITE_DONE && fin == SQLITE_OK)
        src = sq_exec(q->db, "COMMIT");
    else if (src == SQLITE_DONE)
        src = fin;
    int rc = src == SQLITE_OK ? 0 : sq_fail(s, q->db, src, "counting a new term");
    if (rc) sq_exec(q->db, "ROLLBACK");
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

static int sq_campaign(store_t *s, const store_node *me, uint64_t *term, store_leader *who)
{
    (void)me;
    (void)who;
    int rc = sq_bump_term(s, term);
    return rc ? rc : 1;
}

static int sq_new_term(store_t *s, const store_node *me, uint64_t term, uint64_t *next)
{
    (void)me;
    (void)term;
    return sq_bump_term(s, next);
}

static int sq_renew(store_t *s, const store_node *me, uint64_t term)
{
    (void)s;
    (void)me;
    (void)term;
    return 0;
}

static void sq_resign(store_t *s, const store_node *me, uint64_t term)
{
    (void)s;
    (void)me;
    (void)term;
}

static int sq_leader_wait(store_t *s, int wake_fd, int ms)
{
    (void)s;
    struct pollfd p = {wake_fd, POLLIN, 0};
    poll(&p, wake_fd >= 0 ? 1 : 0, ms);
    return 0;
}

static const store_driver sqlite_backend = {
    .name = "sqlite",
    .apply = sq_apply,
    .abandon = sq_abandon,
    .load = sq_load,
    .select = sq_select,
    .query = sq_query,
    .tx_begin = sq_tx_begin,
    .tx_exec = sq_tx_exec,
    .tx_end = sq_tx_end,
    .campaign = sq_campaign,
    .new_term = sq_new_term,
    .renew = sq_renew,
    .resign = sq_resign,
    .leader_wait = sq_leader_wait,
    .close = sq_close,
};
