// SPDX-License-Identifier: Apache-2.0
/* The schema shared by both backends: its migrations, the statements
 * written once for both, and reading a jobs row into an engine_job_info
 * whatever the backend (the columns of jobs: columns.h). */
#ifndef TENQ_STORE_SCHEMA_H
#define TENQ_STORE_SCHEMA_H

#include "columns.h"
#include "engine/engine.h"

#include <stdbool.h>

int store_schema_versions(void);
/* The SQL of one migration for a backend (malloc'd), or NULL. */
char *store_schema_sql(int version, bool pg);

/* Statements, written once for both backends: $S is the schema prefix and
 * ?N the N-th parameter (store_sql turns them into each backend's form). */

#define STORE_SQL_DELETE_JOB "DELETE FROM $Sjobs WHERE id = ?1"
#define STORE_SQL_UPSERT_IDEM                                                                      \
    "INSERT INTO $Sidempotency (tenant, key, job_id, state, duplicate, merged, created_at) "       \
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (tenant, key) DO UPDATE SET job_id = "        \
    "excluded.job_id, state = excluded.state, duplicate = excluded.duplicate, merged = "           \
    "excluded.merged, created_at = excluded.created_at"
#define STORE_SQL_INSERT_TOKEN                                                                     \
    "INSERT INTO $Stokens (id, hash, role, queues, created_at, revoked_at, hide_data) VALUES "     \
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
#define STORE_SQL_UPSERT_PAUSE                                                                     \
    "INSERT INTO $Squeue_pauses (queue, tenant, paused, updated_at) VALUES (?1, ?2, ?3, ?4) "      \
    "ON CONFLICT (queue, tenant) DO UPDATE SET paused = excluded.paused, updated_at = "            \
    "excluded.updated_at"
/* PostgreSQL only (schema 19, pg_txapi.h): what a tenant or queue with a
 * quota holds, as the leader last wrote it. */
#define STORE_SQL_UPSERT_USAGE                                                                     \
    "INSERT INTO tenq.queued_usage (kind, name, queued, queued_bytes, updated_at) VALUES (?1, "    \
    "?2, ?3, ?4, ?5) ON CONFLICT (kind, name) DO UPDATE SET queued = excluded.queued, "            \
    "queued_bytes = excluded.queued_bytes, updated_at = excluded.updated_at"
#define STORE_SCHEDULE_COLUMNS                                                                     \
    "name, tenant, cron, timezone, missed, queue, type, args, key, priority, unique_key, "         \
    "is_unique, max_attempts, timeout_ms, paused, last_tick, next_tick, created_at, updated_at"
#define STORE_SQL_UPSERT_SCHEDULE                                                                  \
    "INSERT INTO $Sschedules (" STORE_SCHEDULE_COLUMNS                                             \
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "  \
    "?19) ON CONFLICT (name) DO UPDATE SET tenant = excluded.tenant, cron = excluded.cron, "       \
    "timezone = excluded.timezone, missed = excluded.missed, queue = excluded.queue, type = "      \
    "excluded.type, args = excluded.args, key = excluded.key, priority = excluded.priority, "      \
    "unique_key = excluded.unique_key, is_unique = excluded.is_unique, max_attempts = "            \
    "excluded.max_attempts, timeout_ms = excluded.timeout_ms, paused = excluded.paused, "          \
    "last_tick = excluded.last_tick, next_tick = excluded.next_tick, updated_at = "                \
    "excluded.updated_at"
#define STORE_SQL_TICK_SCHEDULE                                                                    \
    "UPDATE $Sschedules SET last_tick = ?2, next_tick = ?3 WHERE name = ?1"
#define STORE_SQL_DELETE_SCHEDULE "DELETE FROM $Sschedules WHERE name = ?1"
#define STORE_SQL_LOAD_SCHEDULES  "SELECT " STORE_SCHEDULE_COLUMNS " FROM $Sschedules ORDER BY name"
#define STORE_SQL_LOAD_PAUSES     "SELECT queue, tenant FROM $Squeue_pauses WHERE paused"
#define STORE_SQL_REVOKE_TOKEN    "UPDATE $Stokens SET revoked_at = ?2 WHERE id = ?1"
#define STORE_SQL_INSERT_AUDIT                                                                     \
    "INSERT INTO $Saudit (at, token_id, role, tenant, method, path, status, peer, detail) "        \
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
#define STORE_SQL_PRUNE_AUDIT                                                                      \
    "DELETE FROM $Saudit WHERE id IN (SELECT id FROM $Saudit WHERE at < ?1 ORDER BY id LIMIT ?2)"
#define STORE_AUDIT_COLUMNS "id, at, token_id, role, tenant, method, path, status, peer, detail"
#define STORE_SQL_INSERT_REQUEST                                                                   \
    "INSERT INTO $Srequests (scope, key, fingerprint, status, answer, created_at) VALUES (?1, "    \
    "?2, "                                                                                         \
    "?3, ?4, ?5, ?6) ON CONFLICT (scope, key) DO NOTHING"
#define STORE_SQL_LOAD_REQUESTS                                                                    \
    "SELECT scope, key, fingerprint, created_at FROM $Srequests WHERE created_at > ?1"
#define STORE_SQL_GET_REQUEST                                                                      \
    "SELECT status, answer, fingerprint FROM $Srequests WHERE scope = ?1 AND key = ?2"
#define STORE_SQL_PRUNE_REQUESTS                                                                   \
    "DELETE FROM $Srequests WHERE (scope, key) IN (SELECT scope, key FROM $Srequests WHERE "       \
    "created_at < ?1 LIMIT ?2)"
#define STORE_SQL_LOAD_JOBS                                                                        \
    "SELECT " STORE_JOB_COLUMNS " FROM $Sjobs WHERE live = 1 ORDER BY lane_seq"
#define STORE_SQL_PRUNE_JOBS                                                                       \
    "DELETE FROM $Sjobs WHERE id IN (SELECT id FROM $Sjobs WHERE queue = ?1 AND live IS NULL "     \
    "AND finished_at < ?2 LIMIT ?3)"
#define STORE_SQL_PRUNE_IDEM                                                                       \
    "DELETE FROM $Sidempotency WHERE (tenant, key) IN (SELECT tenant, key FROM $Sidempotency "     \
    "WHERE created_at < ?1 LIMIT ?2)"

/* Attempt history (the migration that made $Sattempts). */
#define STORE_ATTEMPT_COLUMNS                                                                      \
    "job_id, token, attempt, worker, leased_at, started_at, finished_at, outcome, job_state, "     \
    "error, stats"
#define STORE_SQL_INSERT_ATTEMPT                                                                   \
    "INSERT INTO $Sattempts (" STORE_ATTEMPT_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "  \
    "?9, ?10, ?11) ON CONFLICT (job_id, token) DO NOTHING"
#define STORE_SQL_GET_ATTEMPTS                                                                     \
    "SELECT " STORE_ATTEMPT_COLUMNS " FROM $Sattempts WHERE job_id = ?1 ORDER BY token"
/* A deleted job's attempts go with it, whatever deleted it: a row trigger
 * (SQLite), a statement trigger reading the deleted rows (PostgreSQL). */
#define STORE_ATTEMPTS_GONE_SQLITE                                                                 \
    "CREATE TRIGGER jobs_attempts_gone AFTER DELETE ON jobs BEGIN\n"                               \
    "  DELETE FROM attempts WHERE job_id = old.id;\n"                                              \
    "END;\n"
#define STORE_ATTEMPTS_GONE_PG                                                                     \
    "CREATE FUNCTION tenq.attempts_gone() RETURNS trigger LANGUAGE plpgsql AS $f$\n"               \
    "BEGIN\n"                                                                                      \
    "  DELETE FROM tenq.attempts a USING gone g WHERE a.job_id = g.id;\n"                          \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "CREATE TRIGGER jobs_attempts_gone AFTER DELETE ON tenq.jobs REFERENCING OLD TABLE AS gone "   \
    "FOR EACH STATEMENT EXECUTE PROCEDURE tenq.attempts_gone();\n"

/* Dependencies (the migration that made $Sjob_deps). */
#define STORE_SQL_INSERT_DEP                                                                       \
    "INSERT INTO $Sjob_deps (child_id, parent_id, pos, on_parent_failure) VALUES (?1, ?2, ?3, "    \
    "?4) ON CONFLICT (child_id, parent_id) DO NOTHING"
/* The edges a load needs: those of a live child (it may wait), and those of
 * a live parent (its children's ids, shown with it); a child's in order.
 * Found from the live jobs (the partial index on live) by the edges' own
 * indexes, so a load reads no edge of finished jobs alone. */
#define STORE_SQL_LOAD_DEPS                                                                        \
    "SELECT child_id, parent_id, on_parent_failure, pos FROM $Sjob_deps WHERE child_id IN "        \
    "(SELECT id FROM $Sjobs WHERE live = 1) UNION SELECT child_id, parent_id, "                    \
    "on_parent_failure, pos FROM $Sjob_deps WHERE parent_id IN (SELECT id FROM $Sjobs WHERE "      \
    "live = 1) ORDER BY 1, 4"
/* A job's parents, in order, with their state and result (NULL: gone). */
#define STORE_SQL_GET_PARENTS                                                                      \
    "SELECT d.parent_id, p.state, p.result FROM $Sjob_deps d LEFT JOIN $Sjobs p ON p.id = "        \
    "d.parent_id WHERE d.child_id = ?1 ORDER BY d.pos"
/* A job's children (those still kept), the first 1,000 by id, with their
 * state; and how many there are. */
#define STORE_SQL_GET_CHILDREN                                                                     \
    "SELECT d.child_id, c.state, NULL FROM $Sjob_deps d JOIN $Sjobs c ON c.id = d.child_id "       \
    "WHERE d.parent_id = ?1 ORDER BY d.child_id LIMIT 1000"
#define STORE_SQL_COUNT_CHILDREN "SELECT count(*) FROM $Sjob_deps WHERE parent_id = ?1"
/* A job's edges alone, for its row read from the store: parent ids (with
 * the policy) in order, and child ids. */
#define STORE_SQL_GET_PARENT_IDS                                                                   \
    "SELECT parent_id, on_parent_failure FROM $Sjob_deps WHERE child_id = ?1 ORDER BY pos"
#define STORE_SQL_GET_CHILD_IDS                                                                    \
    "SELECT child_id, NULL FROM $Sjob_deps WHERE parent_id = ?1 ORDER BY child_id"
#define STORE_DEPS_GONE_SQLITE                                                                     \
    "CREATE TRIGGER jobs_deps_gone AFTER DELETE ON jobs BEGIN\n"                                   \
    "  DELETE FROM job_deps WHERE child_id = old.id;\n"                                            \
    "END;\n"
#define STORE_DEPS_GONE_PG                                                                         \
    "CREATE FUNCTION tenq.deps_gone() RETURNS trigger LANGUAGE plpgsql AS $f$\n"                   \
    "BEGIN\n"                                                                                      \
    "  DELETE FROM tenq.job_deps d USING gone g WHERE d.child_id = g.id;\n"                        \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "CREATE TRIGGER jobs_deps_gone AFTER DELETE ON tenq.jobs REFERENCING OLD TABLE AS gone "       \
    "FOR EACH STATEMENT EXECUTE PROCEDURE tenq.deps_gone();\n"
/* Plain jobs waiting in line (live = 2, migration 20): a load brings them in
 * after the server began to serve, in fifo order (priority, then run_at,
 * then id), by the partial index jobs_plain (on SQLite the id is the rowid
 * every index entry ends with), a page at a time from the
 * last row read.  A job gaining a child is no longer plain: the edge's
 * insert makes its parent's row live = 1 (a trigger), in its commit. */
/* The fifo order as one number, as the engine's ready heap packs it
 * (engine/sched.c): (32767 - priority) * 2^47 + run_at, lowest first, then
 * id.  It stays below 2^63: priority is within +-32767 and the engine keeps
 * run_at within now + 10 years (2^47 ms is the year 6429).  One number
 * keeps the index's entries small and their comparisons short (W1: 850
 * fewer instructions a job in the writer than three columns; a clamp by
 * SQL functions would cost as much again); store_rest_after computes the
 * same in C.  A page is two ranges of the index after (K, I): the rest of
 * K's jobs by id, then the next keys (printf'd: an index on an expression
 * is used for a range only against numbers). */
#define STORE_FIFO_KEY         "((32767 - priority) * 140737488355328 + run_at)"
#define STORE_SQL_REST_COLUMNS "SELECT " STORE_JOB_COLUMNS " FROM $Sjobs WHERE live = 2 AND "
/* The same without the args but small ones and huge ones
 * (STORE_JOB_COLUMNS_NO_ARGS), and their length after the last column. */
#define STORE_SQL_REST_COLUMNS_NO_ARGS                                                             \
    "SELECT " STORE_JOB_COLUMNS_NO_ARGS ", $ARGS_BYTES FROM $Sjobs WHERE live = 2 AND "
#define STORE_SQL_REST_1 STORE_FIFO_KEY " = %lld AND id > %llu ORDER BY id LIMIT %zu"
#define STORE_SQL_REST_2 STORE_FIFO_KEY " > %lld ORDER BY " STORE_FIFO_KEY ", id LIMIT %zu"
#define STORE_PLAIN_SQLITE                                                                         \
    "CREATE INDEX jobs_plain ON jobs (" STORE_FIFO_KEY ") WHERE live = 2;\n"                       \
    "CREATE TRIGGER job_deps_parent_live AFTER INSERT ON job_deps BEGIN\n"                         \
    "  UPDATE jobs SET live = 1 WHERE id = new.parent_id AND live = 2;\n"                          \
    "END;\n"
#define STORE_PLAIN_PG                                                                             \
    "CREATE INDEX jobs_plain ON tenq.jobs (" STORE_FIFO_KEY ", id) WHERE live = 2;\n"              \
    "CREATE FUNCTION tenq.deps_parent_live() RETURNS trigger LANGUAGE plpgsql AS $f$\n"            \
    "BEGIN\n"                                                                                      \
    "  UPDATE tenq.jobs j SET live = 1 FROM added a WHERE j.id = a.parent_id AND j.live = 2;\n"    \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "CREATE TRIGGER job_deps_parent_live AFTER INSERT ON tenq.job_deps REFERENCING NEW TABLE AS "  \
    "added FOR EACH STATEMENT EXECUTE PROCEDURE tenq.deps_parent_live();\n"

/* Batches (the migration that made $Sbatches and $Sbatch_jobs). */
/* (deaths: the migration after, 17) */
#define STORE_BATCH_COLUMNS                                                                        \
    "id, tenant, created_at, closed_at, total, succeeded, cancelled, merged, deleted, callbacks, " \
    "on_complete_job, on_success_job, on_death_job, deaths, expired"
#define STORE_SQL_UPSERT_BATCH                                                                     \
    "INSERT INTO $Sbatches (" STORE_BATCH_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, " \
    "?10, ?11, ?12, ?13, ?14, ?15) ON CONFLICT (id) DO UPDATE SET closed_at = "                    \
    "excluded.closed_at, "                                                                         \
    "total = excluded.total, succeeded = excluded.succeeded, cancelled = excluded.cancelled, "     \
    "merged = excluded.merged, deleted = excluded.deleted, on_complete_job = "                     \
    "excluded.on_complete_job, on_success_job = excluded.on_success_job, on_death_job = "          \
    "excluded.on_death_job, deaths = excluded.deaths, expired = excluded.expired"
#define STORE_SQL_INSERT_BATCH_JOB                                                                 \
    "INSERT INTO $Sbatch_jobs (job_id, batch_id, role) VALUES (?1, ?2, ?3) ON CONFLICT (job_id) "  \
    "DO NOTHING"
#define STORE_SQL_GET_BATCH_JOB "SELECT batch_id, role FROM $Sbatch_jobs WHERE job_id = ?1"
#define STORE_SQL_LOAD_BATCHES  "SELECT " STORE_BATCH_COLUMNS " FROM $Sbatches ORDER BY id"
/* The links of resident jobs (unfinished or dead: live = 1). */
#define STORE_SQL_LOAD_BATCH_JOBS                                                                  \
    "SELECT b.job_id, b.batch_id, b.role FROM $Sbatch_jobs b JOIN $Sjobs j ON j.id = b.job_id "    \
    "WHERE j.live = 1"
#define STORE_BATCH_JOBS_GONE_SQLITE                                                               \
    "CREATE TRIGGER jobs_batch_jobs_gone AFTER DELETE ON jobs BEGIN\n"                             \
    "  DELETE FROM batch_jobs WHERE job_id = old.id;\n"                                            \
    "END;\n"
#define STORE_BATCH_JOBS_GONE_PG                                                                   \
    "CREATE FUNCTION tenq.batch_jobs_gone() RETURNS trigger LANGUAGE plpgsql AS $f$\n"             \
    "BEGIN\n"                                                                                      \
    "  DELETE FROM tenq.batch_jobs b USING gone g WHERE b.job_id = g.id;\n"                        \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "CREATE TRIGGER jobs_batch_jobs_gone AFTER DELETE ON tenq.jobs REFERENCING OLD TABLE AS gone " \
    "FOR EACH STATEMENT EXECUTE PROCEDURE tenq.batch_jobs_gone();\n"

/* Durable steps and kept events (the migration that made $Sjob_steps and
 * $Sevents; store/steps.c).  A step's row is written in the commit that
 * stored it, and a wait's end (an event, a timeout, its child's end)
 * completes it in the commit of that end; a job's deletion deletes its
 * steps (STORE_STEPS_GONE_*). */
#define STORE_STEP_COLUMNS                                                                         \
    "job_id, pos, name, kind, done, result, size, error, token, attempt, created_at, "             \
    "finished_at, event_key, wait_until, child_id, child_state"
#define STORE_SQL_INSERT_STEP                                                                      \
    "INSERT INTO $Sjob_steps (" STORE_STEP_COLUMNS                                                 \
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "                                               \
    "?10, ?11, ?12, ?13, ?14, ?15, ?16) ON CONFLICT (job_id, pos) DO NOTHING"
#define STORE_SQL_STEP_DONE                                                                        \
    "UPDATE $Sjob_steps SET done = ?3, result = ?4, size = ?5, error = ?6, finished_at = ?7, "     \
    "child_state = ?8 WHERE job_id = ?1 AND pos = ?2"
#define STORE_SQL_INSERT_EVENT                                                                     \
    "INSERT INTO $Sevents (id, tenant, key, payload, created_at, expires_at) VALUES (?1, ?2, ?3, " \
    "?4, ?5, ?6) ON CONFLICT (id) DO NOTHING"
#define STORE_SQL_DELETE_EVENT "DELETE FROM $Sevents WHERE id = ?1"
/* The steps a load needs: those of the live jobs loaded first (a job with
 * steps is never plain), without their results. */
#define STORE_SQL_LOAD_STEPS                                                                       \
    "SELECT job_id, pos, name, kind, done, size, event_key, wait_until, child_id, token FROM "     \
    "$Sjob_steps WHERE job_id IN (SELECT id FROM $Sjobs WHERE live = 1) ORDER BY job_id, pos"
#define STORE_SQL_LOAD_EVENTS                                                                      \
    "SELECT id, tenant, key, payload, created_at, expires_at FROM $Sevents WHERE expires_at > "    \
    "?1 ORDER BY expires_at, id"
#define STORE_SQL_MAX_EVENT "SELECT coalesce(max(id), 0) FROM $Sevents"
#define STORE_SQL_GET_STEPS                                                                        \
    "SELECT " STORE_STEP_COLUMNS " FROM $Sjob_steps WHERE job_id = ?1 ORDER BY pos"
/* A job's steps without their results (what each attempt ran). */
#define STORE_SQL_GET_STEP_NAMES                                                                   \
    "SELECT job_id, pos, name, kind, done, NULL, size, NULL, token, attempt, created_at, "         \
    "finished_at, event_key, wait_until, child_id, child_state FROM $Sjob_steps WHERE job_id = "   \
    "?1 ORDER BY pos"
#define STORE_SQL_PRUNE_EVENTS                                                                     \
    "DELETE FROM $Sevents WHERE id IN (SELECT id FROM $Sevents WHERE expires_at < ?1 LIMIT ?2)"
#define STORE_STEPS_GONE_SQLITE                                                                    \
    "CREATE TRIGGER jobs_steps_gone AFTER DELETE ON jobs BEGIN\n"                                  \
    "  DELETE FROM job_steps WHERE job_id = old.id;\n"                                             \
    "END;\n"
#define STORE_STEPS_GONE_PG                                                                        \
    "CREATE FUNCTION tenq.steps_gone() RETURNS trigger LANGUAGE plpgsql AS $f$\n"                  \
    "BEGIN\n"                                                                                      \
    "  DELETE FROM tenq.job_steps s USING gone g WHERE s.job_id = g.id;\n"                         \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "CREATE TRIGGER jobs_steps_gone AFTER DELETE ON tenq.jobs REFERENCING OLD TABLE AS gone "      \
    "FOR EACH STATEMENT EXECUTE PROCEDURE tenq.steps_gone();\n"

/* Job ids are never used twice: a transaction that deletes jobs (retention,
 * the morgue) first raises the floor to the highest id there is (writing
 * only when it rises), and a load starts numbering above both. */
#define STORE_SQL_ID_FLOOR                                                                         \
    "INSERT INTO $Stenq_info (key, value) SELECT 'id_floor', CAST(coalesce(max(id), 0) AS TEXT) "  \
    "FROM $Sjobs WHERE true ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE "         \
    "CAST($Stenq_info.value AS $I64) < CAST(excluded.value AS $I64)"
#define STORE_SQL_MAX_ID                                                                           \
    "SELECT $GREATEST(coalesce((SELECT max(id) FROM $Sjobs), 0), coalesce((SELECT CAST(value AS "  \
    "$I64) FROM $Stenq_info WHERE key = 'id_floor'), 0))"

/* A new term: the term above every earlier one (SQLite; PostgreSQL's
 * elections set the leader's columns too, in pg_leader.c). */
#define STORE_SQL_NEXT_TERM "UPDATE $Sleader SET term = term + 1 WHERE id = 1 RETURNING term"

/* PostgreSQL's fence (migration 5): raises SQLSTATE TQ001 unless t is the
 * current term, and holds the leader row until the transaction ends, so a
 * new term (which updates the row) waits for the write under the old one. */
#define STORE_PG_FENCE_STATE "TQ001"
#define STORE_PG_FENCE                                                                             \
    "CREATE FUNCTION tenq.fence(t BIGINT) RETURNS VOID LANGUAGE plpgsql AS $f$\n"                  \
    "BEGIN\n"                                                                                      \
    "  PERFORM 1 FROM tenq.leader WHERE id = 1 AND term = t FOR KEY SHARE;\n"                      \
    "  IF NOT FOUND THEN\n"                                                                        \
    "    RAISE EXCEPTION 'term % is over: another server leads this store', t\n"                   \
    "      USING ERRCODE = '" STORE_PG_FENCE_STATE "';\n"                                          \
    "  END IF;\n"                                                                                  \
    "END $f$;\n"

/* A statement for a backend (malloc'd). */
char *store_sql(const char *tmpl, bool pg);

/* How a backend hands over one result row. */
typedef struct store_rowacc {
    bool (*is_null)(void *row, int col);
    long long (*i64)(void *row, int col);
    const char *(*text)(void *row, int col);
} store_rowacc;

/* ---- the settings of tenants and queues, from their table (base/settings.h) ----
 * The tables tenants and queues have a column per setting, named as the
 * setting (each column a migration made).  Their statements and their
 * reading and writing come from the rows: a choice is stored as its word, a
 * bool as a bool, an unlimited limit as NULL. */
typedef enum { STORE_TENANTS, STORE_QUEUES, STORE_KEYS } store_settings_kind;
/* INSERT ... ON CONFLICT (name) DO UPDATE for a backend: ?1 the name, then
 * one parameter per setting, then updated_at (malloc'd).  Key settings
 * (key_settings) are named by ?1 the tenant and ?2 the key. */
char *store_settings_upsert_sql(store_settings_kind k, bool pg);
#define STORE_SQL_DELETE_KEY_SETTING "DELETE FROM $Skey_settings WHERE tenant = ?1 AND key = ?2"
/* SELECT name (key settings: tenant, key), <a column per setting> FROM the
 * table (malloc'd). */
char *store_settings_select_sql(store_settings_kind k, bool pg);
/* The same as a template (schema.h's $S form), for store_driver.select. */
char *store_settings_select_tmpl(store_settings_kind k);
/* Where a backend puts a statement's parameters, in order. */
typedef struct store_param_sink {
    void (*i64)(void *ctx, long long v);
    void (*text)(void *ctx, const char *v); /* NULL: SQL NULL */
    void (*boolean)(void *ctx, bool v);
    void *ctx;
} store_param_sink;
/* The parameters of the upsert after the name: one per setting. */
void store_settings_params(store_settings_kind k, const void *settings,
                           const store_param_sink *out);
/* A row of the SELECT into *settings (its defaults first); 0, or
 * TENQ_ECORRUPT with a message naming the column. */
int store_settings_from_row(store_settings_kind k, const store_rowacc *acc, void *row,
                            void *settings, char *err, size_t errlen);

/* What store_row_to_job allocates for a row: its payloads and its options
 * (the keys the job names: options.c). */
typedef struct store_row_mem {
    engine_payload *payloads;
    uint32_t n_payloads;
    void *options;
} store_row_mem;
void store_row_mem_free(store_row_mem *m);

/* Fills j from a row of STORE_JOB_COLUMNS (columns.c; strings point into
 * the row; payloads and options are
 * parsed into *m, which the caller frees with store_row_mem_free).
 * Returns 0, or TENQ_ECORRUPT with a message in err. */
int store_row_to_job(const store_rowacc *acc, void *row, engine_job_info *j, store_row_mem *m,
                     char *err, size_t errlen);

/* A job's options as its row keeps them (options.c): JSON text (malloc'd),
 * or NULL when the job names no key; and back, into j's fields (what they
 * point at in *mem, one block to free). */
char *store_options_text(const engine_job_info *j);
bool store_options_any(const engine_job_info *j);
int store_options_parse(const char *text, engine_job_info *j, void **mem);

#endif
