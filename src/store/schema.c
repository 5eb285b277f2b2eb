// SPDX-License-Identifier: Apache-2.0
/* The schema, once for both backends.  docs/schema.md documents it.
 *
 * Templates use $ID (the id column type), $I64 (64-bit integers), $BOOL,
 * and $S (the schema prefix: "" in SQLite, "tenq." in PostgreSQL).  Each
 * migration runs in its own transaction and records its version. */
#include "schema.h"
#include "internal.h"
#include "pg_txapi.h"

#include "base/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const migrations[] = {
    /* 1: the first layout */
    "CREATE TABLE $Stenq_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
    "INSERT INTO $Stenq_info (key, value) VALUES ('application', 'tenq');\n"
    "CREATE TABLE $Sschema_version (version $I64 PRIMARY KEY, applied_at $I64 NOT NULL);\n"
    "CREATE TABLE $Stenants (\n"
    "  name TEXT PRIMARY KEY,\n"
    "  slots $I64,\n" /* NULL: unlimited */
    "  weight $I64 NOT NULL,\n"
    "  updated_at $I64 NOT NULL);\n"
    "CREATE TABLE $Squeues (\n"
    "  name TEXT PRIMARY KEY,\n"
    "  \"order\" TEXT NOT NULL,\n"
    "  delivery TEXT NOT NULL,\n"
    "  lease_ms $I64 NOT NULL,\n"
    "  max_attempts $I64 NOT NULL,\n"
    "  backoff TEXT NOT NULL,\n"
    "  backoff_base_ms $I64 NOT NULL,\n"
    "  backoff_max_ms $I64 NOT NULL,\n"
    "  merge $BOOL NOT NULL,\n"
    "  dedup_window_ms $I64 NOT NULL,\n"
    "  retention_ms $I64 NOT NULL,\n"
    "  max_payload_bytes $I64 NOT NULL,\n"
    "  tenant_cap $I64,\n" /* NULL: none */
    "  updated_at $I64 NOT NULL);\n"
    "CREATE TABLE $Sjobs (\n"
    "  id $ID PRIMARY KEY,\n"
    "  tenant TEXT NOT NULL,\n"
    "  queue TEXT NOT NULL,\n"
    "  type TEXT NOT NULL,\n"
    "  key TEXT,\n"
    "  args TEXT,\n"
    "  payloads TEXT,\n"
    "  priority $I64 NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  attempts $I64 NOT NULL,\n"
    "  max_attempts $I64 NOT NULL,\n"
    "  run_at $I64 NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  ready_at $I64,\n"
    "  leased_at $I64,\n"
    "  started_at $I64,\n"
    "  finished_at $I64,\n"
    "  worker TEXT,\n"
    "  error TEXT,\n"
    "  result TEXT,\n"
    "  stats TEXT,\n"
    "  progress TEXT,\n"
    "  unique_key TEXT,\n"
    "  idempotency_key TEXT,\n"
    "  lease_token $I64 NOT NULL DEFAULT 0,\n"
    "  lease_until $I64,\n"
    "  cancel_requested $BOOL NOT NULL DEFAULT $FALSE);\n"
    "CREATE INDEX jobs_live ON $Sjobs (id)\n"
    "  WHERE state IN ('scheduled', 'blocked', 'ready', 'leased', 'running', 'dead');\n"
    "CREATE INDEX jobs_tenant ON $Sjobs (tenant, id);\n"
    "CREATE TABLE $Sidempotency (\n"
    "  tenant TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  job_id $I64 NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  duplicate $BOOL NOT NULL,\n"
    "  merged $BOOL NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  PRIMARY KEY (tenant, key));\n"
    "CREATE TABLE $Stokens (\n"
    "  id $ID PRIMARY KEY,\n"
    "  hash TEXT NOT NULL UNIQUE,\n"
    "  role TEXT NOT NULL,\n"
    "  queues TEXT,\n"
    "  created_at $I64 NOT NULL,\n"
    "  revoked_at $I64);\n",

    /* 2: merging (merged_into), lane order after requeue (lane_seq),
     * recovery in lane order, and indexes for retention. */
    "ALTER TABLE $Sjobs ADD COLUMN merged_into $I64;\n"
    "ALTER TABLE $Sjobs ADD COLUMN lane_seq $I64;\n"
    "UPDATE $Sjobs SET lane_seq = id;\n"
    "DROP INDEX $Sjobs_live;\n"
    "CREATE INDEX jobs_live ON $Sjobs (lane_seq) WHERE state <> 'succeeded' AND "
    "state <> 'cancelled' AND state <> 'merged';\n"
    "CREATE INDEX jobs_finished ON $Sjobs (queue, finished_at) WHERE state = 'succeeded' OR "
    "state = 'cancelled' OR state = 'merged';\n"
    "CREATE INDEX idempotency_created ON $Sidempotency (created_at);\n",

    /* 3: the partial indexes hang on `live` (1 while a job is unfinished or
     * dead, NULL once final) instead of `state`: most updates change the state
     * but keep a job live, and an index whose predicate reads a column that an
     * UPDATE sets must be rewritten (SQLite), or rules out a HOT update
     * (PostgreSQL).  Room left in pages for those HOT updates. */
    "ALTER TABLE $Sjobs ADD COLUMN live $I64;\n"
    "UPDATE $Sjobs SET live = 1 WHERE state <> 'succeeded' AND state <> 'cancelled' AND "
    "state <> 'merged';\n"
    "DROP INDEX $Sjobs_live;\n"
    "DROP INDEX $Sjobs_finished;\n"
    "CREATE INDEX jobs_live ON $Sjobs (lane_seq) WHERE (state <> 'succeeded' AND state <> "
    "'cancelled' AND state <> 'merged');\n"
    "CREATE INDEX jobs_finished ON $Sjobs (queue, finished_at) WHERE (state = 'succeeded' OR "
    "state = 'cancelled' OR state = 'merged');\n"
    "$FILLFACTOR",

    /* 4: what 3 meant: its indexes still read `state` in their predicates, so
     * every update that set the state rewrote both index entries (SQLite's
     * EXPLAIN showed IdxDelete and IdxInsert on each) and none was a HOT
     * update (PostgreSQL).  Now they read `live` only. */
    "DROP INDEX $Sjobs_live;\n"
    "DROP INDEX $Sjobs_finished;\n"
    "CREATE INDEX jobs_live ON $Sjobs (lane_seq) WHERE live = 1;\n"
    "CREATE INDEX jobs_finished ON $Sjobs (queue, finished_at) WHERE live IS NULL;\n",

    /* 5: one leader per store.  The term (the start count that was
     * tenq_info's 'epoch') moves to a row of its own, with who leads under
     * it and until when (PostgreSQL: several servers share a database; the
     * times are the database's clock, in ms).  tenq.fence(term), called
     * first in every write transaction, refuses the transaction unless the
     * term is still current, holding the row (FOR KEY SHARE) so that a new
     * term waits for writes already under way. */
    "CREATE TABLE $Sleader (\n"
    "  id $I64 PRIMARY KEY,\n"
    "  term $I64 NOT NULL,\n"
    "  node TEXT,\n"
    "  advertise TEXT,\n"
    "  host TEXT,\n"
    "  pid $I64,\n"
    "  elected_at $I64,\n"
    "  renewed_at $I64,\n"
    "  expires_at $I64);\n"
    "INSERT INTO $Sleader (id, term) VALUES (1, coalesce((SELECT CAST(value AS $I64) FROM "
    "$Stenq_info WHERE key = 'epoch'), 0));\n"
    "DELETE FROM $Stenq_info WHERE key = 'epoch';\n"
    "$FENCE",

    /* 6: the submitter's W3C trace context, handed out with the job. */
    "ALTER TABLE $Sjobs ADD COLUMN traceparent TEXT;\n",

    /* 7: requests made safe to send again (the Idempotency-Key header): the
     * first answer of each, kept --request-key-ttl. */
    "CREATE TABLE $Srequests (\n"
    "  scope TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  fingerprint $I64 NOT NULL,\n"
    "  status $I64 NOT NULL,\n"
    "  answer TEXT NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  PRIMARY KEY (scope, key))$NOROWID;\n"
    "CREATE INDEX requests_created ON $Srequests (created_at);\n",

    /* 8: jobs submitted and completed in an application's own transaction
     * (PostgreSQL only: pg_txapi.h; SQLite records the version alone). */
    "$TXAPI",

    /* 9: operations: a queue's timeout and pause (settings), a job's own
     * timeout, a queue paused for one tenant, and rate limits (settings of
     * queues and of tenants; null: none). */
    "ALTER TABLE $Squeues ADD COLUMN timeout_ms $I64 NOT NULL DEFAULT 0;\n"
    "ALTER TABLE $Squeues ADD COLUMN paused $BOOL NOT NULL DEFAULT $FALSE;\n"
    "ALTER TABLE $Squeues ADD COLUMN rate $I64;\n"
    "ALTER TABLE $Squeues ADD COLUMN tenant_rate $I64;\n"
    "ALTER TABLE $Squeues ADD COLUMN rate_period_ms $I64 NOT NULL DEFAULT 1000;\n"
    "ALTER TABLE $Squeues ADD COLUMN rate_burst $I64;\n"
    "ALTER TABLE $Stenants ADD COLUMN rate $I64;\n"
    "ALTER TABLE $Stenants ADD COLUMN rate_period_ms $I64 NOT NULL DEFAULT 1000;\n"
    "ALTER TABLE $Stenants ADD COLUMN rate_burst $I64;\n"
    "ALTER TABLE $Sjobs ADD COLUMN timeout_ms $I64;\n"
    "CREATE TABLE $Squeue_pauses (\n"
    "  queue TEXT NOT NULL,\n"
    "  tenant TEXT NOT NULL,\n"
    "  paused $BOOL NOT NULL,\n"
    "  updated_at $I64 NOT NULL,\n"
    "  PRIMARY KEY (queue, tenant));\n",

    /* attempt history: a row for every attempt that ended without its job
     * succeeding (failed, expired, timed out, cancelled), by (job, token);
     * deleting a job (retention, the morgue) deletes its attempts, by a
     * trigger (STORE_ATTEMPTS_GONE_*). */
    "CREATE TABLE $Sattempts (\n"
    "  job_id $I64 NOT NULL,\n"
    "  token $I64 NOT NULL,\n"
    "  attempt $I64 NOT NULL,\n"
    "  worker TEXT,\n"
    "  leased_at $I64,\n"
    "  started_at $I64,\n"
    "  finished_at $I64 NOT NULL,\n"
    "  outcome TEXT NOT NULL,\n"
    "  job_state TEXT NOT NULL,\n"
    "  error TEXT,\n"
    "  stats TEXT,\n"
    "  PRIMARY KEY (job_id, token))$NOROWID;\n"
    "$ATTEMPTS_GONE",

    /* cron: periodic jobs (api/cron.c).  A schedule, the job it makes, and
     * how far it has ticked: every tick before next_tick was submitted (in
     * the transaction that moved next_tick past it) or given up by the
     * missed-tick policy; last_tick is the last one submitted (0: none). */
    "CREATE TABLE $Sschedules (\n"
    "  name TEXT PRIMARY KEY,\n"
    "  tenant TEXT NOT NULL,\n"
    "  cron TEXT NOT NULL,\n"
    "  timezone TEXT NOT NULL,\n"
    "  missed TEXT NOT NULL,\n"
    "  queue TEXT NOT NULL,\n"
    "  type TEXT NOT NULL,\n"
    "  args TEXT NOT NULL,\n"
    "  key TEXT,\n"
    "  priority $I64 NOT NULL,\n"
    "  unique_key TEXT,\n"
    "  is_unique $BOOL NOT NULL,\n"
    "  max_attempts $I64 NOT NULL,\n"
    "  timeout_ms $I64 NOT NULL,\n"
    "  paused $BOOL NOT NULL,\n"
    "  last_tick $I64 NOT NULL,\n"
    "  next_tick $I64 NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  updated_at $I64 NOT NULL);\n"
    "CREATE INDEX schedules_tenant ON $Sschedules (tenant);\n",

    /* 12: a job's own timeout_ms in an application's transaction (PostgreSQL
     * only: pg_txapi.h; SQLite records the version alone). */
    "$TXTIMEOUT",

    /* 13: dependencies: a job's parents (depends_on), in the order it named
     * them, with its policy; written in the commit of the child's submit.
     * Whether a child still waits is worked out at a load from its
     * parents' rows (store_load).  Deleting a child (retention, the morgue)
     * deletes its edges, by a trigger; a parent's deletion keeps them (the
     * child shows the parent as gone). */
    "CREATE TABLE $Sjob_deps (\n"
    "  child_id $I64 NOT NULL,\n"
    "  parent_id $I64 NOT NULL,\n"
    "  pos $I64 NOT NULL,\n"
    "  on_parent_failure TEXT NOT NULL,\n"
    "  PRIMARY KEY (child_id, parent_id))$NOROWID;\n"
    "CREATE INDEX job_deps_parent ON $Sjob_deps (parent_id);\n"
    "$DEPS_GONE",
    /* 14: batches: groups of jobs with callbacks (engine/batches.c).  A batch's
     * row holds the counters that outlive its jobs (jobs ever added, those
     * that ended succeeded, cancelled or merged, dead ones deleted), when it
     * closed (0: open), its callbacks' specs (JSON) and the jobs they made
     * (0: none yet), written in the transaction of the outcome that changed
     * them.  batch_jobs links a job to its batch (role 0: one of its jobs;
     * 1, 2, 3: its on_complete, on_success, on_death), written with the
     * job; a job's deletion deletes its link (STORE_BATCH_JOBS_GONE_*). */
    "CREATE TABLE $Sbatches (\n"
    "  id $I64 PRIMARY KEY,\n"
    "  tenant TEXT NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  closed_at $I64 NOT NULL,\n"
    "  total $I64 NOT NULL,\n"
    "  succeeded $I64 NOT NULL,\n"
    "  cancelled $I64 NOT NULL,\n"
    "  merged $I64 NOT NULL,\n"
    "  deleted $I64 NOT NULL,\n"
    "  callbacks TEXT NOT NULL,\n"
    "  on_complete_job $I64 NOT NULL,\n"
    "  on_success_job $I64 NOT NULL,\n"
    "  on_death_job $I64 NOT NULL);\n"
    "CREATE INDEX batches_tenant ON $Sbatches (tenant, id);\n"
    "CREATE TABLE $Sbatch_jobs (\n"
    "  job_id $I64 PRIMARY KEY,\n"
    "  batch_id $I64 NOT NULL,\n"
    "  role $I64 NOT NULL);\n"
    "CREATE INDEX batch_jobs_batch ON $Sbatch_jobs (batch_id);\n"
    "$BATCH_JOBS_GONE",

    /* 15: a notification from an application's transaction only while the
     * leader is not reading the inbox already (PostgreSQL only: pg_txapi.h;
     * SQLite records the version alone). */
    "$TXHOT",

    /* 16: tenq.problem checks names without a bounded repetition, 3 times
     * faster (PostgreSQL only: pg_txapi.h; SQLite records the version alone). */
    "$TXNAMES",

    /* 17: a batch remembers its deaths (engine/batches.c): a job requeued
     * from the morgue keeps its death there, so that a batch that had one
     * never fires on_success, across restarts and takeovers; written in the
     * commit of each death.  Batches made before count what the store still
     * shows: the deaths in the attempts of their jobs (each death ends an
     * attempt), the dead jobs deleted from the morgue, and at least one
     * when their on_death was made. */
    "ALTER TABLE $Sbatches ADD COLUMN deaths $I64 NOT NULL DEFAULT 0;\n"
    "UPDATE $Sbatches SET deaths = deleted + (SELECT count(*) FROM $Sattempts a JOIN "
    "$Sbatch_jobs j ON j.job_id = a.job_id WHERE j.batch_id = $Sbatches.id AND j.role = 0 AND "
    "a.job_state = 'dead');\n"
    "UPDATE $Sbatches SET deaths = 1 WHERE deaths = 0 AND on_death_job <> 0;\n",

    /* 18: quotas: unfinished jobs and bytes of args a tenant or a queue
     * holds at most (settings; max_queued null: none, max_queued_bytes 0:
     * none). */
    "ALTER TABLE $Stenants ADD COLUMN max_queued $I64;\n"
    "ALTER TABLE $Stenants ADD COLUMN max_queued_bytes $I64 NOT NULL DEFAULT 0;\n"
    "ALTER TABLE $Squeues ADD COLUMN max_queued $I64;\n"
    "ALTER TABLE $Squeues ADD COLUMN max_queued_bytes $I64 NOT NULL DEFAULT 0;\n",

    /* 19: quotas checked in applications' transactions: what the leader
     * counts, and a trigger on the inbox (PostgreSQL only: pg_txapi.h;
     * SQLite records the version alone). */
    "$TXQUOTA",

    /* 20: plain jobs waiting in line (no key, unique key, batch, payloads
     * or edges; ready or scheduled) are live = 2, loaded after the server
     * began to serve (STORE_SQL_LOAD_REST); every other unfinished or dead
     * job stays live = 1, loaded first. */
    "UPDATE $Sjobs SET live = 2 WHERE live = 1 AND state IN ('ready', 'scheduled') AND key IS "
    "NULL AND unique_key IS NULL AND payloads IS NULL AND id NOT IN (SELECT job_id FROM "
    "$Sbatch_jobs) AND id NOT IN (SELECT child_id FROM $Sjob_deps) AND id NOT IN (SELECT "
    "parent_id FROM $Sjob_deps);\n"
    "$PLAIN",

    /* 21: viewer tokens that see jobs without their args and results. */
    "ALTER TABLE $Stokens ADD COLUMN hide_data $BOOL NOT NULL DEFAULT $FALSE;\n",

    /* 22: the audit log: a row for every change made through the API (who:
     * token_id, role, tenant; what: method, path, status, detail; when; from
     * where), written in the commit of the change; ids by the database,
     * never used twice; kept --audit-retention. */
    "CREATE TABLE $Saudit (\n"
    "  id $AUTOID,\n"
    "  at $I64 NOT NULL,\n"
    "  token_id $I64,\n"
    "  role TEXT NOT NULL,\n"
    "  tenant TEXT,\n"
    "  method TEXT NOT NULL,\n"
    "  path TEXT NOT NULL,\n"
    "  status $I64 NOT NULL,\n"
    "  peer TEXT,\n"
    "  detail TEXT);\n"
    "CREATE INDEX audit_at ON $Saudit (at);\n"
    "CREATE INDEX audit_tenant ON $Saudit (tenant, id);\n",

    /* 23: durable steps (engine/steps.c): each step a job's handler stored,
     * in order (pos), under the lease token it was stored with; a wait
     * under way (done false: an event, a child) is completed in the commit
     * of its end.  A job's deletion deletes its steps, by a trigger.  Events
     * that woke no job are kept until expires_at for a later wait, and
     * deleted in the commit of the wait that took them (or by retention). */
    "CREATE TABLE $Sjob_steps (\n"
    "  job_id $I64 NOT NULL,\n"
    "  pos $I64 NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  done $BOOL NOT NULL,\n"
    "  result TEXT,\n"
    "  size $I64 NOT NULL,\n"
    "  error TEXT,\n"
    "  token $I64 NOT NULL,\n"
    "  attempt $I64 NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  finished_at $I64,\n"
    "  event_key TEXT,\n"
    "  wait_until $I64,\n"
    "  child_id $I64,\n"
    "  child_state TEXT,\n"
    "  PRIMARY KEY (job_id, pos))$NOROWID;\n"
    "$STEPS_GONE"
    "CREATE TABLE $Sevents (\n"
    "  id $I64 PRIMARY KEY,\n"
    "  tenant TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  payload TEXT NOT NULL,\n"
    "  created_at $I64 NOT NULL,\n"
    "  expires_at $I64 NOT NULL);\n"
    "CREATE INDEX events_expires ON $Sevents (expires_at);\n",

    /* 24: events sent in an application's transaction (PostgreSQL only:
     * pg_txapi.h; SQLite records the version alone). */
    "$TXEVENTS",

    /* 25: tenq.problem with every limit the server's: the run_at horizon
     * was 10 days short (PostgreSQL only: pg_txapi.h; SQLite records the
     * version alone). */
    "$TXLIMITS",

    /* 26: keyed limits (engine/keys.c): the keys a job names (its options,
     * JSON; NULL: none), the queue's concurrency_limit and priority aging
     * (engine/aging.c), and the settings of
     * a tenant's keys or key prefixes ("account:*"), a column per setting
     * (TQ_KEY_SETTINGS; NULL: left to the jobs). */
    "ALTER TABLE $Sjobs ADD COLUMN options TEXT;\n"
    "ALTER TABLE $Squeues ADD COLUMN concurrency_limit $I64 NOT NULL DEFAULT 1;\n"
    "ALTER TABLE $Squeues ADD COLUMN aging_ms $I64 NOT NULL DEFAULT 0;\n"
    "ALTER TABLE $Squeues ADD COLUMN aging_cap $I64 NOT NULL DEFAULT 32767;\n"
    "CREATE TABLE $Skey_settings (\n"
    "  tenant TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  concurrency $I64,\n"
    "  rate $I64,\n"
    "  rate_period_ms $I64 NOT NULL,\n"
    "  rate_burst $I64,\n"
    "  updated_at $I64 NOT NULL,\n"
    "  PRIMARY KEY (tenant, key));\n"
    "ALTER TABLE $Sbatches ADD COLUMN expired $I64 NOT NULL DEFAULT 0;\n"
    "$TXKEYS",
};

int store_schema_versions(void)
{
    return (int)(sizeof(migrations) / sizeof(migrations[0]));
}

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        while (*len + n + 1 > *cap) *cap = *cap ? *cap * 2 : 1024;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
}

static char *expand(const char *t, bool pg);

/* The limits the SQL of applications' transactions checks (pg_txapi.h:
 * $NAME_MAX ...), from the server's own constants and defaults, so that
 * the two cannot differ (test_store tries each function at each limit).
 * The length of the variable at t with its value in out, or 0. */
static size_t limit_text(const char *t, char *out, size_t n)
{
    engine_queue_settings qs;
    engine_queue_settings_defaults(&qs);
    const struct {
        const char *var;
        long long v;
        const char *rule; /* a wording, else the number */
    } limits[] = {
        {"$NAME_MAX", ENGINE_NAME_MAX, NULL},
        {"$NAME_RULE", 0, ENGINE_NAME_RULE},
        {"$TYPE_MAX", ENGINE_TYPE_MAX, NULL},
        {"$TYPE_RULE", 0, ENGINE_TYPE_RULE},
        {"$KEY_MAX", ENGINE_KEY_MAX, NULL},
        {"$KEY_RULE", 0, ENGINE_KEY_RULE},
        {"$PRIORITY_MIN", ENGINE_PRIORITY_MIN, NULL},
        {"$PRIORITY_MAX", ENGINE_PRIORITY_MAX, NULL},
        {"$ATTEMPTS_MAX", ENGINE_ATTEMPTS_MAX, NULL},
        {"$RUN_AT_HORIZON_MS", ENGINE_RUN_AT_HORIZON_MS, NULL},
        {"$ARGS_MAX", qs.max_payload_bytes, NULL}, /* a queue's default */
        {"$LEASE_MS", qs.lease_ms, NULL},          /* a queue's default */
        {"$TIMEOUT_MAX", ENGINE_TIMEOUT_MAX_MS, NULL},
        {"$EVENT_MAX", ENGINE_EVENT_MAX_BYTES, NULL},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        size_t vl = strlen(limits[i].var);
        if (strncmp(t, limits[i].var, vl) != 0) continue;
        if (limits[i].rule)
            snprintf(out, n, "%s", limits[i].rule);
        else
            snprintf(out, n, "%lld", limits[i].v);
        return vl;
    }
    return 0;
}

char *store_schema_sql(int version, bool pg)
{
    if (version < 1 || version > store_schema_versions()) return NULL;
    return expand(migrations[version - 1], pg);
}

char *store_sql(const char *tmpl, bool pg)
{
    return expand(tmpl, pg);
}

static char *expand(const char *t, bool pg)
{
    static const struct {
        const char *var, *sqlite, *pg;
    } subst[] = {
        {"$AUTOID", "INTEGER PRIMARY KEY AUTOINCREMENT",
         "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"},
        {"$ID", "INTEGER", "BIGINT"},
        {"$I64", "INTEGER", "BIGINT"},
        {"$BOOL", "INTEGER", "BOOLEAN"},
        {"$FALSE", "0", "false"},
        {"$FILLFACTOR", "", "ALTER TABLE tenq.jobs SET (fillfactor = 85);\n"},
        {"$FENCE", "", STORE_PG_FENCE},
        {"$GREATEST", "max", "greatest"},
        {"$NOROWID", " WITHOUT ROWID", ""},
        {"$PLAIN", STORE_PLAIN_SQLITE, STORE_PLAIN_PG},
        {"$ARGS_BYTES", "length(CAST(args AS BLOB))", "octet_length(args)"},
        {"$ATTEMPTS_GONE", STORE_ATTEMPTS_GONE_SQLITE, STORE_ATTEMPTS_GONE_PG},
        {"$DEPS_GONE", STORE_DEPS_GONE_SQLITE, STORE_DEPS_GONE_PG},
        {"$BATCH_JOBS_GONE", STORE_BATCH_JOBS_GONE_SQLITE, STORE_BATCH_JOBS_GONE_PG},
        {"$STEPS_GONE", STORE_STEPS_GONE_SQLITE, STORE_STEPS_GONE_PG},
        {"$S", "", "tenq."},
    };
    /* PostgreSQL's SQL of applications' transactions (pg_txapi.h; nothing
     * on SQLite): templates of their own, for their limits (limit_text). */
    static const struct {
        const char *var, *pg;
    } txapi[] = {
        {"$TXAPI", STORE_PG_TXAPI},           {"$TXTIMEOUT", STORE_PG_TXAPI_TIMEOUT},
        {"$TXHOT", STORE_PG_TXAPI_HOT},       {"$TXNAMES", STORE_PG_TXAPI_NAMES},
        {"$TXQUOTA", STORE_PG_TXAPI_QUOTA},   {"$TXEVENTS", STORE_PG_TXAPI_EVENTS},
        {"$TXLIMITS", STORE_PG_TXAPI_LIMITS}, {"$TXKEYS", STORE_PG_TXAPI_KEYS},
    };
    char *out = NULL;
    size_t len = 0, cap = 0;
    append(&out, &len, &cap, "", 0);
    while (*t) {
        bool done = false;
        if (*t == '$') {
            for (size_t i = 0; i < sizeof(subst) / sizeof(subst[0]); i++) {
                size_t vl = strlen(subst[i].var);
                if (strncmp(t, subst[i].var, vl) == 0) {
                    const char *r = pg ? subst[i].pg : subst[i].sqlite;
                    append(&out, &len, &cap, r, strlen(r));
                    t += vl;
                    done = true;
                    break;
                }
            }
            for (size_t i = 0; !done && i < sizeof(txapi) / sizeof(txapi[0]); i++) {
                size_t vl = strlen(txapi[i].var);
                if (strncmp(t, txapi[i].var, vl) != 0) continue;
                char *x = pg ? expand(txapi[i].pg, pg) : NULL;
                if (x) append(&out, &len, &cap, x, strlen(x));
                free(x);
                t += vl;
                done = true;
            }
        }
        char num[128];
        size_t vl;
        if (!done && *t == '$' && (vl = limit_text(t, num, sizeof num)) > 0) {
            append(&out, &len, &cap, num, strlen(num));
            t += vl;
            done = true;
        }
        if (!done && *t == '?' && pg) {
            append(&out, &len, &cap, "$", 1); /* ?N -> $N */
            t++;
            done = true;
        }
        if (!done) append(&out, &len, &cap, t++, 1);
    }
    return out;
}

/* ---- the settings of tenants and queues ------------------------------------------------ */

static const tq_setting *settings_rows(store_settings_kind k, size_t *n, const char **table)
{
    switch (k) {
    case STORE_TENANTS:
        *n = engine_tenant_setting_count;
        *table = "tenants";
        return engine_tenant_setting_rows;
    case STORE_QUEUES:
        *n = engine_queue_setting_count;
        *table = "queues";
        return engine_queue_setting_rows;
    default:
        *n = engine_key_setting_count;
        *table = "key_settings";
        return engine_key_setting_rows;
    }
}

/* A table's own columns before the settings': its name, or (key settings)
 * the tenant and the key. */
static const char *settings_names(store_settings_kind k)
{
    return k == STORE_KEYS ? "tenant, key" : "name";
}

static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    append(buf, len, cap, tmp, (size_t)n);
}

char *store_settings_upsert_sql(store_settings_kind k, bool pg)
{
    size_t n, len = 0, cap = 0;
    const char *table;
    const tq_setting *rows = settings_rows(k, &n, &table);
    char *t = NULL;
    size_t first = k == STORE_KEYS ? 3 : 2; /* the first setting's parameter */
    appendf(&t, &len, &cap, "INSERT INTO $S%s (%s", table, settings_names(k));
    for (size_t i = 0; i < n; i++) appendf(&t, &len, &cap, ", \"%s\"", rows[i].name);
    appendf(&t, &len, &cap, ", updated_at) VALUES (?1%s", k == STORE_KEYS ? ", ?2" : "");
    for (size_t i = 0; i <= n; i++) appendf(&t, &len, &cap, ", ?%zu", i + first);
    appendf(&t, &len, &cap, ") ON CONFLICT (%s) DO UPDATE SET ", settings_names(k));
    for (size_t i = 0; i < n; i++)
        appendf(&t, &len, &cap, "\"%s\" = excluded.\"%s\", ", rows[i].name, rows[i].name);
    appendf(&t, &len, &cap, "updated_at = excluded.updated_at");
    char *sql = expand(t, pg);
    free(t);
    return sql;
}

char *store_settings_select_tmpl(store_settings_kind k)
{
    size_t n, len = 0, cap = 0;
    const char *table;
    const tq_setting *rows = settings_rows(k, &n, &table);
    char *t = NULL;
    appendf(&t, &len, &cap, "SELECT %s", settings_names(k));
    for (size_t i = 0; i < n; i++) appendf(&t, &len, &cap, ", \"%s\"", rows[i].name);
    appendf(&t, &len, &cap, " FROM $S%s", table);
    return t;
}

char *store_settings_select_sql(store_settings_kind k, bool pg)
{
    char *t = store_settings_select_tmpl(k);
    char *sql = expand(t, pg);
    free(t);
    return sql;
}

void store_settings_params(store_settings_kind k, const void *settings, const store_param_sink *out)
{
    size_t n;
    const char *table;
    const tq_setting *rows = settings_rows(k, &n, &table);
    for (size_t i = 0; i < n; i++) {
        long long v = engine_setting_get(&rows[i], settings);
        switch (rows[i].kind) {
        case TQ_SET_CHOICE: out->text(out->ctx, tq_setting_word(&rows[i], v)); break;
        case TQ_SET_BOOL: out->boolean(out->ctx, v != 0); break;
        case TQ_SET_LIMIT:
            if (v == TQ_UNLIMITED) {
                out->text(out->ctx, NULL);
                break;
            }
            /* fall through */
        default: out->i64(out->ctx, v);
        }
    }
}

int store_settings_from_row(store_settings_kind k, const store_rowacc *acc, void *row,
                            void *settings, char *err, size_t errlen)
{
    size_t n;
    const char *table;
    const tq_setting *rows = settings_rows(k, &n, &table);
    for (size_t i = 0; i < n; i++) {
        const tq_setting *r = &rows[i];
        int col = (int)i + (k == STORE_KEYS ? 2 : 1);
        long long v;
        if (r->kind == TQ_SET_CHOICE) {
            v = tq_setting_word_index(r, acc->is_null(row, col) ? NULL : acc->text(row, col));
            if (v < 0) {
                snprintf(err, errlen, "%s.%s holds an unknown word", table, r->name);
                return TENQ_ECORRUPT;
            }
        } else if (r->kind == TQ_SET_LIMIT && acc->is_null(row, col)) {
            v = TQ_UNLIMITED;
        } else {
            v = acc->i64(row, col);
        }
        engine_setting_set(r, settings, v);
    }
    return 0;
}
