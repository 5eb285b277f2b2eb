// SPDX-License-Identifier: Apache-2.0
/* The SQL an application calls inside its own PostgreSQL transaction
 * (schema 8): tenq.submit and tenq.submit_many write jobs to tenq.inbox,
 * which the leader takes in once the transaction commits; tenq.complete and
 * tenq.fail report an exactly-once job's outcome with the application's own
 * writes.  docs/transactions.md says what each promises.
 *
 * Ids: a job submitted in a transaction takes its id at once, from
 * tenq.tx_ids (odd numbers); the server numbers the jobs it makes with even
 * ones, so the two never meet.  Every check the server would make of a
 * submit is made here first (tenq.problem), so a job the server would refuse
 * fails the application's transaction instead.
 *
 * The limits are the server's own: $NAME_MAX, $KEY_RULE ... are filled in
 * from engine.h and a queue's defaults when a migration is made
 * (schema.c, limit_text), and test_store tries each function at each
 * limit against the engine's check.  A store keeps the functions its
 * migrations made: changing a limit takes a migration that makes the
 * functions checking it again (as 25 made tenq.problem). */
#ifndef TENQ_STORE_PG_TXAPI_H
#define TENQ_STORE_PG_TXAPI_H

/* One string: run once, by migration 8, on PostgreSQL only. */
#define STORE_PG_TXAPI                                                                             \
    "ALTER TABLE tenq.jobs ADD COLUMN done_in_tx BOOLEAN NOT NULL DEFAULT false;\n"                \
    "DO $d$ BEGIN EXECUTE format('CREATE SEQUENCE tenq.tx_ids INCREMENT BY 2 START WITH "          \
    "%s',   (greatest(coalesce((SELECT max(id) FROM tenq.jobs), 0), coalesce((SELECT "             \
    "CAST(value AS   bigint) FROM tenq.tenq_info WHERE key = 'id_floor'), 0)) / 2) * 2 + "         \
    "1001); END $d$;\n"                                                                            \
    "CREATE TABLE tenq.inbox (\n"                                                                  \
    "  id BIGINT PRIMARY KEY,\n"                                                                   \
    "  tenant TEXT NOT NULL,\n"                                                                    \
    "  queue TEXT NOT NULL,\n"                                                                     \
    "  type TEXT NOT NULL,\n"                                                                      \
    "  args TEXT NOT NULL,\n"                                                                      \
    "  key TEXT,\n"                                                                                \
    "  unique_key TEXT,\n"                                                                         \
    "  is_unique BOOLEAN NOT NULL,\n"                                                              \
    "  idempotency_key TEXT,\n"                                                                    \
    "  run_at BIGINT,\n"                                                                           \
    "  priority INTEGER NOT NULL,\n"                                                               \
    "  max_attempts INTEGER,\n"                                                                    \
    "  score DOUBLE PRECISION,\n"                                                                  \
    "  traceparent TEXT,\n"                                                                        \
    "  created_at BIGINT NOT NULL);\n"                                                             \
    "CREATE TABLE tenq.tx_outcomes (\n"                                                            \
    "  id BIGINT NOT NULL,\n"                                                                      \
    "  token BIGINT NOT NULL,\n"                                                                   \
    "  ok BOOLEAN NOT NULL,\n"                                                                     \
    "  result TEXT,\n"                                                                             \
    "  error TEXT,\n"                                                                              \
    "  retry_in_ms BIGINT,\n"                                                                      \
    "  created_at BIGINT NOT NULL,\n"                                                              \
    "  PRIMARY KEY (id, token));\n"                                                                \
    "-- now, in ms, by the database's clock\n"                                                     \
    "CREATE FUNCTION tenq.now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE AS $f$ SELECT "            \
    "(extract(epoch FROM clock_timestamp()) * 1000)::bigint $f$;\n"                                \
    "-- What the server would refuse in a submit, as a sentence naming the field; NULL when\n"     \
    "-- nothing (limit_bytes: the queue's max_payload_bytes). One SQL expression, which\n"         \
    "-- PostgreSQL inlines into the query that calls it.\n"                                        \
    "CREATE FUNCTION tenq.problem(tenant TEXT, queue TEXT, type TEXT, args JSONB, key TEXT,\n"     \
    "  unique_key TEXT, idempotency_key TEXT, run_at TIMESTAMPTZ, priority INTEGER,\n"             \
    "  max_attempts INTEGER, score DOUBLE PRECISION, traceparent TEXT, limit_bytes BIGINT)\n"      \
    "  RETURNS TEXT LANGUAGE sql VOLATILE AS $f$ SELECT CASE\n"                                    \
    "  WHEN tenant IS NULL THEN 'tenant is required'\n"                                            \
    "  WHEN tenant !~ '^[A-Za-z0-9._-]{1,$NAME_MAX}$' THEN 'tenant: $NAME_RULE'\n"                 \
    "  WHEN queue IS NULL THEN 'queue is required'\n"                                              \
    "  WHEN queue !~ '^[A-Za-z0-9._-]{1,$NAME_MAX}$' THEN 'queue: $NAME_RULE'\n"                   \
    "  WHEN type IS NULL THEN 'type is required'\n"                                                \
    "  WHEN octet_length(type) NOT BETWEEN 1 AND $TYPE_MAX OR type ~ '[\\x01-\\x20\\x7f]'\n"       \
    "    THEN 'type: $TYPE_RULE'\n"                                                                \
    "  WHEN octet_length(key) NOT BETWEEN 1 AND $KEY_MAX OR key ~ '[\\x01-\\x1f\\x7f]'\n"          \
    "    THEN 'key: $KEY_RULE'\n"                                                                  \
    "  WHEN octet_length(unique_key) NOT BETWEEN 1 AND $KEY_MAX OR unique_key ~ "                  \
    "'[\\x01-\\x1f\\x7f]'\n"                                                                       \
    "    THEN 'unique_key: $KEY_RULE'\n"                                                           \
    "  WHEN octet_length(idempotency_key) NOT BETWEEN 1 AND $KEY_MAX\n"                            \
    "    OR idempotency_key ~ '[\\x01-\\x1f\\x7f]'\n"                                              \
    "    THEN 'idempotency_key: $KEY_RULE'\n"                                                      \
    "  WHEN priority IS NULL OR priority NOT BETWEEN $PRIORITY_MIN AND $PRIORITY_MAX\n"            \
    "    THEN 'priority must be between $PRIORITY_MIN and $PRIORITY_MAX'\n"                        \
    "  WHEN max_attempts NOT BETWEEN 1 AND $ATTEMPTS_MAX THEN 'max_attempts must be between 1 "    \
    "and $ATTEMPTS_MAX'\n"                                                                         \
    "  WHEN run_at < 'epoch'::timestamptz OR run_at > clock_timestamp() + interval '3650 days'\n"  \
    "    THEN 'run_at must be after 1970 and at most 10 years ahead'\n"                            \
    "  WHEN score IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)\n"                   \
    "    THEN 'score must be a finite number'\n"                                                   \
    "  WHEN traceparent !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'\n"                         \
    "    OR substr(traceparent, 4, 32) = repeat('0', 32)\n"                                        \
    "    OR substr(traceparent, 37, 16) = repeat('0', 16)\n"                                       \
    "    THEN 'traceparent must be a W3C trace context: 00-<32 hex digits>-<16 hex "               \
    "digits>-<2 hex digits>, lowercase, ids not all 0'\n"                                          \
    "  WHEN args IS NULL THEN 'args must be JSON (not SQL NULL)'\n"                                \
    "  WHEN octet_length(args::text) > coalesce(limit_bytes, $ARGS_MAX)\n"                         \
    "    THEN format('args are %s bytes; queue %s takes at most %s', octet_length(args::text),\n"  \
    "      queue, coalesce(limit_bytes, $ARGS_MAX))\n"                                             \
    "  END $f$;\n"                                                                                 \
    "-- One job, in the caller's transaction: its id.\n"                                           \
    "CREATE FUNCTION tenq.submit(tenant TEXT, queue TEXT, type TEXT, args JSONB DEFAULT   "        \
    "'{}'::jsonb, key TEXT DEFAULT NULL, unique_key TEXT DEFAULT NULL, \"unique\" BOOLEAN   "      \
    "DEFAULT false, idempotency_key TEXT DEFAULT NULL, run_at TIMESTAMPTZ DEFAULT NULL,   "        \
    "priority INTEGER DEFAULT 0, max_attempts INTEGER DEFAULT NULL, score DOUBLE PRECISION "       \
    "  DEFAULT NULL, traceparent TEXT DEFAULT NULL) RETURNS BIGINT LANGUAGE plpgsql AS $f$\n"      \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE why TEXT; new_id BIGINT;\n"                                                           \
    "BEGIN\n"                                                                                      \
    "  why := tenq.problem(tenant, queue, type, args, key, unique_key, idempotency_key, "          \
    "run_at,     priority, max_attempts, score, traceparent, (SELECT q.max_payload_bytes "         \
    "FROM tenq.queues q     WHERE q.name = queue));\n"                                             \
    "  IF why IS NOT NULL THEN\n"                                                                  \
    "    RAISE EXCEPTION 'tenq.submit: %', why USING ERRCODE = '22023';\n"                         \
    "  END IF;\n"                                                                                  \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  new_id := nextval('tenq.tx_ids');\n"                                                        \
    "  INSERT INTO tenq.inbox (id, tenant, queue, type, args, key, unique_key, is_unique,  "       \
    "   idempotency_key, run_at, priority, max_attempts, score, traceparent, created_at)   "       \
    "VALUES (new_id, tenant, queue, type, args::text, key, unique_key, \"unique\",     "           \
    "idempotency_key, (extract(epoch FROM run_at) * 1000)::bigint, priority, max_attempts, "       \
    "    score, traceparent, tenq.now_ms());\n"                                                    \
    "  PERFORM pg_notify('tenq_inbox', '');\n"                                                     \
    "  RETURN new_id;\n"                                                                           \
    "END $f$;\n"                                                                                   \
    "-- Many jobs (a JSON array of objects with submit's fields): their ids, in order. One\n"      \
    "-- bad job fails them all, naming its index.\n"                                               \
    "CREATE FUNCTION tenq.submit_many(jobs JSONB) RETURNS BIGINT[] LANGUAGE plpgsql AS $f$\n"      \
    "DECLARE bad RECORD; ids BIGINT[];\n"                                                          \
    "BEGIN\n"                                                                                      \
    "  IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN\n"                                    \
    "    RAISE EXCEPTION 'tenq.submit_many: jobs must be a JSON array of job objects'\n"           \
    "      USING ERRCODE = '22023'; END IF;\n"                                                     \
    "  SELECT e.ord - 1 AS i, CASE WHEN jsonb_typeof(e.j) <> 'object' THEN 'a job is a "           \
    "JSON object'\n"                                                                               \
    "    WHEN e.j - ARRAY['tenant', 'queue', 'type', 'args', 'key', 'unique_key', 'unique',\n"     \
    "      'idempotency_key', 'run_at', 'priority', 'max_attempts', 'score', "                     \
    "'traceparent'] <> '{}'\n"                                                                     \
    "    THEN 'unknown field ' || (SELECT min(k) FROM jsonb_object_keys(e.j - ARRAY['tenant',\n"   \
    "      'queue', 'type', 'args', 'key', 'unique_key', 'unique', 'idempotency_key', "            \
    "'run_at',\n"                                                                                  \
    "      'priority', 'max_attempts', 'score', 'traceparent']) AS k)\n"                           \
    "    ELSE tenq.problem(e.j->>'tenant', e.j->>'queue', e.j->>'type',\n"                         \
    "      coalesce(e.j->'args', '{}'), e.j->>'key', e.j->>'unique_key', "                         \
    "e.j->>'idempotency_key',\n"                                                                   \
    "      (e.j->>'run_at')::timestamptz, coalesce((e.j->>'priority')::int, 0),\n"                 \
    "      (e.j->>'max_attempts')::int, (e.j->>'score')::float8, e.j->>'traceparent',\n"           \
    "      q.max_payload_bytes) END AS p\n"                                                        \
    "    INTO bad FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)\n"                  \
    "    LEFT JOIN tenq.queues q ON jsonb_typeof(e.j) = 'object' AND q.name = e.j->>'queue'\n"     \
    "    WHERE jsonb_typeof(e.j) <> 'object' OR e.j - ARRAY['tenant', 'queue', 'type', 'args',\n"  \
    "      'key', 'unique_key', 'unique', 'idempotency_key', 'run_at', 'priority', "               \
    "'max_attempts',\n"                                                                            \
    "      'score', 'traceparent'] <> '{}' OR tenq.problem(e.j->>'tenant', e.j->>'queue',\n"       \
    "      e.j->>'type', coalesce(e.j->'args', '{}'), e.j->>'key', e.j->>'unique_key',\n"          \
    "      e.j->>'idempotency_key', (e.j->>'run_at')::timestamptz,\n"                              \
    "      coalesce((e.j->>'priority')::int, 0), (e.j->>'max_attempts')::int,\n"                   \
    "      (e.j->>'score')::float8, e.j->>'traceparent', q.max_payload_bytes) IS NOT NULL\n"       \
    "    ORDER BY e.ord LIMIT 1;\n"                                                                \
    "  IF FOUND THEN\n"                                                                            \
    "    RAISE EXCEPTION 'tenq.submit_many: job %: %', bad.i, bad.p USING ERRCODE = '22023';\n"    \
    "  END IF;\n"                                                                                  \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  WITH src AS MATERIALIZED (SELECT e.ord, e.j, nextval('tenq.tx_ids') AS id\n"                \
    "    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)),\n"                         \
    "  ins AS (INSERT INTO tenq.inbox (id, tenant, queue, type, args, key, unique_key, "           \
    "is_unique,\n"                                                                                 \
    "    idempotency_key, run_at, priority, max_attempts, score, traceparent, created_at)\n"       \
    "    SELECT id, j->>'tenant', j->>'queue', j->>'type', coalesce(j->'args', '{}')::text,\n"     \
    "      j->>'key', j->>'unique_key', coalesce((j->>'unique')::boolean, false),\n"               \
    "      j->>'idempotency_key', (extract(epoch FROM (j->>'run_at')::timestamptz) * "             \
    "1000)::bigint,\n"                                                                             \
    "      coalesce((j->>'priority')::int, 0), (j->>'max_attempts')::int, "                        \
    "(j->>'score')::float8,\n"                                                                     \
    "      j->>'traceparent', tenq.now_ms() FROM src)\n"                                           \
    "  SELECT coalesce(array_agg(id ORDER BY ord), '{}') INTO ids FROM src;\n"                     \
    "  IF cardinality(ids) > 0 THEN PERFORM pg_notify('tenq_inbox', ''); END IF;\n"                \
    "  RETURN ids;\n"                                                                              \
    "END $f$;\n"                                                                                   \
    "-- The job's lease, checked and held: raises unless `token` is the current lease of an\n"     \
    "-- exactly-once job, unexpired.\n"                                                            \
    "CREATE FUNCTION tenq.held_lease(job BIGINT, token BIGINT, fn TEXT) RETURNS VOID   "           \
    "LANGUAGE plpgsql AS $f$\n"                                                                    \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE r RECORD; d TEXT;\n"                                                                  \
    "BEGIN\n"                                                                                      \
    "  SELECT j.state, j.lease_token, j.lease_until, j.queue INTO r FROM tenq.jobs j     "         \
    "WHERE j.id = job FOR UPDATE;\n"                                                               \
    "  IF NOT FOUND THEN\n"                                                                        \
    "    RAISE EXCEPTION '%: no job %', fn, job USING ERRCODE = 'TQ002'; END IF;\n"                \
    "  SELECT q.delivery INTO d FROM tenq.queues q WHERE q.name = r.queue;\n"                      \
    "  IF coalesce(d, 'at-least-once') <> 'exactly-once' THEN\n"                                   \
    "    RAISE EXCEPTION '%: job % is in queue %, whose delivery is %: a transaction may "         \
    "complete only the jobs of an exactly-once queue', fn, job, r.queue, coalesce(d, "             \
    "'at-least-once') USING ERRCODE = 'TQ002'; END IF;\n"                                          \
    "  IF r.state NOT IN ('leased', 'running') OR r.lease_token <> token THEN\n"                   \
    "    RAISE EXCEPTION '%: job % is not leased under token % (it is %, token %)', fn, "          \
    "job, token, r.state, r.lease_token USING ERRCODE = 'TQ002'; END IF;\n"                        \
    "  IF r.lease_until IS NULL OR r.lease_until <= tenq.now_ms() THEN\n"                          \
    "    RAISE EXCEPTION '%: the lease of job % under token % has expired', fn, job, token "       \
    "      USING ERRCODE = 'TQ002'; END IF;\n"                                                     \
    "END $f$;\n"                                                                                   \
    "-- The job succeeded, with the caller's writes: it never runs again.\n"                       \
    "CREATE FUNCTION tenq.complete(job BIGINT, token BIGINT, result JSONB DEFAULT NULL)   "        \
    "RETURNS VOID LANGUAGE plpgsql AS $f$\n"                                                       \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE at BIGINT := tenq.now_ms();\n"                                                        \
    "BEGIN\n"                                                                                      \
    "  PERFORM tenq.held_lease(job, token, 'tenq.complete');\n"                                    \
    "  INSERT INTO tenq.tx_outcomes (id, token, ok, result, created_at)     VALUES (job, "         \
    "token, true, result::text, at);\n"                                                            \
    "  UPDATE tenq.jobs SET state = 'succeeded', finished_at = at, result =     "                  \
    "coalesce(complete.result::text, tenq.jobs.result), lease_until = NULL, live = NULL,   "       \
    "  done_in_tx = true WHERE id = job;\n"                                                        \
    "  PERFORM pg_notify('tenq_inbox', '');\n"                                                     \
    "END $f$;\n"                                                                                   \
    "-- The attempt failed, with the caller's writes; the server retries it (after\n"              \
    "-- retry_in_ms, else by the queue's backoff) or it dies.\n"                                   \
    "CREATE FUNCTION tenq.fail(job BIGINT, token BIGINT, error TEXT, retry_in_ms BIGINT "          \
    "DEFAULT   NULL) RETURNS VOID LANGUAGE plpgsql AS $f$\n"                                       \
    "#variable_conflict use_variable\n"                                                            \
    "BEGIN\n"                                                                                      \
    "  IF retry_in_ms IS NOT NULL AND retry_in_ms < 0 THEN\n"                                      \
    "    RAISE EXCEPTION 'tenq.fail: retry_in_ms must be 0 or more' USING ERRCODE = '22023';\n"    \
    "  END IF;\n"                                                                                  \
    "  PERFORM tenq.held_lease(job, token, 'tenq.fail');\n"                                        \
    "  INSERT INTO tenq.tx_outcomes (id, token, ok, error, retry_in_ms, created_at)     "          \
    "VALUES (job, token, false, error, retry_in_ms, tenq.now_ms());\n"                             \
    "  PERFORM pg_notify('tenq_inbox', '');\n"                                                     \
    "END $f$;\n"                                                                                   \
    "-- The writer's check that every job row it updated was there to update (and not\n"           \
    "-- completed in a transaction meanwhile).\n"                                                  \
    "CREATE FUNCTION tenq.expect_rows(got BIGINT, want BIGINT) RETURNS VOID LANGUAGE "             \
    "plpgsql   AS $f$ BEGIN IF got <> want THEN RAISE EXCEPTION 'updated % of % job rows: "        \
    "a job is missing, or was completed in a transaction', got, want USING ERRCODE = "             \
    "'TQ003'; END IF; END $f$;\n"                                                                  \
    "-- The server keeps the transactions' ids near its own, when no transaction is taking\n"      \
    "-- one (an id handed out is never handed out again).\n"                                       \
    "CREATE FUNCTION tenq.raise_tx_ids(floor BIGINT) RETURNS VOID LANGUAGE plpgsql AS $f$\n"       \
    "BEGIN\n"                                                                                      \
    "  IF pg_try_advisory_xact_lock(7364748) THEN\n"                                               \
    "    PERFORM setval('tenq.tx_ids', (floor - 1) / 2 * 2 + 1) FROM tenq.tx_ids       "           \
    "WHERE last_value < (floor - 1) / 2 * 2 + 1;\n"                                                \
    "  END IF;\n"                                                                                  \
    "END $f$;\n"

/* Schema 12: a job's own timeout_ms in tenq.submit and tenq.submit_many, kept in
 * tenq.inbox and checked as an HTTP submit checks it (from a third of the queue's
 * lease_ms to 7 days; 0 or NULL: the queue's). One string, run once, on PostgreSQL
 * only. */
#define STORE_PG_TXAPI_TIMEOUT                                                                     \
    "ALTER TABLE tenq.inbox ADD COLUMN timeout_ms BIGINT;\n"                                       \
    "-- What the server would refuse in a job's own timeout_ms, naming the field; NULL when\n"     \
    "-- nothing (lease_ms: the queue's, NULL for a queue not made yet: the default $LEASE_MS).\n"  \
    "CREATE FUNCTION tenq.timeout_problem(timeout_ms BIGINT, lease_ms BIGINT) RETURNS TEXT\n"      \
    "  LANGUAGE sql STABLE AS $f$ SELECT CASE\n"                                                   \
    "  WHEN timeout_ms IS NULL OR timeout_ms = 0 THEN NULL\n"                                      \
    "  WHEN timeout_ms < coalesce(lease_ms, $LEASE_MS) / 3 OR timeout_ms > $TIMEOUT_MAX\n"         \
    "    THEN format('timeout_ms must be from a third of the queue''s lease (%s ms: workers '\n"   \
    "      'heartbeat that often) to 7 days, or 0 for the queue''s', coalesce(lease_ms, "          \
    "$LEASE_MS) "                                                                                  \
    "/ 3)\n"                                                                                       \
    "  END $f$;\n"                                                                                 \
    "DROP FUNCTION tenq.submit(TEXT, TEXT, TEXT, JSONB, TEXT, TEXT, BOOLEAN, TEXT, TIMESTAMPTZ,\n" \
    "  INTEGER, INTEGER, DOUBLE PRECISION, TEXT);\n"                                               \
    "-- One job, in the caller's transaction: its id.\n"                                           \
    "CREATE FUNCTION tenq.submit(tenant TEXT, queue TEXT, type TEXT, args JSONB DEFAULT "          \
    "'{}'::jsonb,\n"                                                                               \
    "  key TEXT DEFAULT NULL, unique_key TEXT DEFAULT NULL, \"unique\" BOOLEAN DEFAULT false,\n"   \
    "  idempotency_key TEXT DEFAULT NULL, run_at TIMESTAMPTZ DEFAULT NULL, priority INTEGER "      \
    "DEFAULT 0,\n"                                                                                 \
    "  max_attempts INTEGER DEFAULT NULL, score DOUBLE PRECISION DEFAULT NULL,\n"                  \
    "  traceparent TEXT DEFAULT NULL, timeout_ms BIGINT DEFAULT NULL) RETURNS BIGINT\n"            \
    "  LANGUAGE plpgsql AS $f$\n"                                                                  \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE why TEXT; new_id BIGINT;\n"                                                           \
    "BEGIN\n"                                                                                      \
    "  SELECT coalesce(tenq.problem(tenant, queue, type, args, key, unique_key, "                  \
    "idempotency_key,\n"                                                                           \
    "      run_at, priority, max_attempts, score, traceparent, q.max_payload_bytes),\n"            \
    "      tenq.timeout_problem(timeout_ms, q.lease_ms))\n"                                        \
    "    INTO why FROM (SELECT 1) AS one LEFT JOIN tenq.queues q ON q.name = queue;\n"             \
    "  IF why IS NOT NULL THEN\n"                                                                  \
    "    RAISE EXCEPTION 'tenq.submit: %', why USING ERRCODE = '22023';\n"                         \
    "  END IF;\n"                                                                                  \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  new_id := nextval('tenq.tx_ids');\n"                                                        \
    "  INSERT INTO tenq.inbox (id, tenant, queue, type, args, key, unique_key, is_unique,\n"       \
    "    idempotency_key, run_at, priority, max_attempts, score, traceparent, timeout_ms, "        \
    "created_at)\n"                                                                                \
    "    VALUES (new_id, tenant, queue, type, args::text, key, unique_key, \"unique\",\n"          \
    "    idempotency_key, (extract(epoch FROM run_at) * 1000)::bigint, priority, max_attempts,\n"  \
    "    score, traceparent, nullif(timeout_ms, 0), tenq.now_ms());\n"                             \
    "  PERFORM pg_notify('tenq_inbox', '');\n"                                                     \
    "  RETURN new_id;\n"                                                                           \
    "END $f$;\n"                                                                                   \
    "-- Many jobs (a JSON array of objects with submit's fields): their ids, in order. One\n"      \
    "-- bad job fails them all, naming its index.\n"                                               \
    "CREATE OR REPLACE FUNCTION tenq.submit_many(jobs JSONB) RETURNS BIGINT[] LANGUAGE plpgsql "   \
    "AS $f$\n"                                                                                     \
    "DECLARE bad RECORD; ids BIGINT[];\n"                                                          \
    "  known CONSTANT TEXT[] := ARRAY['tenant', 'queue', 'type', 'args', 'key', 'unique_key',\n"   \
    "    'unique', 'idempotency_key', 'run_at', 'priority', 'max_attempts', 'score', "             \
    "'traceparent',\n"                                                                             \
    "    'timeout_ms'];\n"                                                                         \
    "BEGIN\n"                                                                                      \
    "  IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN\n"                                    \
    "    RAISE EXCEPTION 'tenq.submit_many: jobs must be a JSON array of job objects'\n"           \
    "      USING ERRCODE = '22023'; END IF;\n"                                                     \
    "  SELECT c.i, c.p INTO bad FROM (SELECT e.ord - 1 AS i,\n"                                    \
    "    CASE WHEN jsonb_typeof(e.j) <> 'object' THEN 'a job is a JSON object'\n"                  \
    "    WHEN e.j - known <> '{}'\n"                                                               \
    "      THEN 'unknown field ' || (SELECT min(k) FROM jsonb_object_keys(e.j - known) AS k)\n"    \
    "    ELSE coalesce(tenq.problem(e.j->>'tenant', e.j->>'queue', e.j->>'type',\n"                \
    "      coalesce(e.j->'args', '{}'), e.j->>'key', e.j->>'unique_key', "                         \
    "e.j->>'idempotency_key',\n"                                                                   \
    "      (e.j->>'run_at')::timestamptz, coalesce((e.j->>'priority')::int, 0),\n"                 \
    "      (e.j->>'max_attempts')::int, (e.j->>'score')::float8, e.j->>'traceparent',\n"           \
    "      q.max_payload_bytes), tenq.timeout_problem((e.j->>'timeout_ms')::bigint, "              \
    "q.lease_ms))\n"                                                                               \
    "    END AS p\n"                                                                               \
    "    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)\n"                           \
    "    LEFT JOIN tenq.queues q ON jsonb_typeof(e.j) = 'object' AND q.name = e.j->>'queue') AS "  \
    "c\n"                                                                                          \
    "    WHERE c.p IS NOT NULL ORDER BY c.i LIMIT 1;\n"                                            \
    "  IF FOUND THEN\n"                                                                            \
    "    RAISE EXCEPTION 'tenq.submit_many: job %: %', bad.i, bad.p USING ERRCODE = '22023';\n"    \
    "  END IF;\n"                                                                                  \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  WITH src AS MATERIALIZED (SELECT e.ord, e.j, nextval('tenq.tx_ids') AS id\n"                \
    "    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)),\n"                         \
    "  ins AS (INSERT INTO tenq.inbox (id, tenant, queue, type, args, key, unique_key, "           \
    "is_unique,\n"                                                                                 \
    "    idempotency_key, run_at, priority, max_attempts, score, traceparent, timeout_ms, "        \
    "created_at)\n"                                                                                \
    "    SELECT id, j->>'tenant', j->>'queue', j->>'type', coalesce(j->'args', '{}')::text,\n"     \
    "      j->>'key', j->>'unique_key', coalesce((j->>'unique')::boolean, false),\n"               \
    "      j->>'idempotency_key', (extract(epoch FROM (j->>'run_at')::timestamptz) * "             \
    "1000)::bigint,\n"                                                                             \
    "      coalesce((j->>'priority')::int, 0), (j->>'max_attempts')::int, "                        \
    "(j->>'score')::float8,\n"                                                                     \
    "      j->>'traceparent', nullif((j->>'timeout_ms')::bigint, 0), tenq.now_ms() FROM src)\n"    \
    "  SELECT coalesce(array_agg(id ORDER BY ord), '{}') INTO ids FROM src;\n"                     \
    "  IF cardinality(ids) > 0 THEN PERFORM pg_notify('tenq_inbox', ''); END IF;\n"                \
    "  RETURN ids;\n"                                                                              \
    "END $f$;\n"

/* Schema 15: a notification only when the leader is not reading already.
 * A NOTIFY makes the transactions that send one commit one at a time (they
 * hold a lock of the database until their commit is flushed), which halves
 * what 8 connections of single-job transactions commit.  While the leader
 * reads the inbox again after every take-in (its last read found rows), it
 * keeps tenq.inbox_hot at 1, and a transaction that reads 1 sends nothing.
 * A sequence is read outside any snapshot, so a transaction sees the flag
 * as it is now, whatever its isolation level.  Before the leader waits for
 * notifications again it sets 0 and tries lock 7364748, which every
 * submit, complete and fail holds (shared) from before it reads the flag to
 * its end: taken, no transaction that read 1 is still open, so one more
 * read finds all they committed (src/api/ingest.c; decision 0025).
 * tenq.notify_inbox takes the place of the NOTIFY in the four functions,
 * rewritten in place (each must have exactly one).  One string, run once,
 * on PostgreSQL only. */
#define STORE_PG_TXAPI_HOT                                                                         \
    "CREATE SEQUENCE tenq.inbox_hot MINVALUE 0 MAXVALUE 1 START WITH 0 NO CYCLE;\n"                \
    "-- Wakes the leader unless it is reading the inbox already (called in the\n"                  \
    "-- transaction: the notification arrives on its commit).\n"                                   \
    "CREATE FUNCTION tenq.notify_inbox() RETURNS VOID LANGUAGE plpgsql AS $f$\n"                   \
    "BEGIN\n"                                                                                      \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  IF (SELECT last_value FROM tenq.inbox_hot) = 0 THEN\n"                                      \
    "    PERFORM pg_notify('tenq_inbox', '');\n"                                                   \
    "  END IF;\n"                                                                                  \
    "END $f$;\n"                                                                                   \
    "-- The leader, before it waits for notifications again: true when no transaction\n"           \
    "-- that read the flag as 1 is still open.\n"                                                  \
    "CREATE FUNCTION tenq.inbox_cool() RETURNS BOOLEAN LANGUAGE plpgsql AS $f$\n"                  \
    "BEGIN\n"                                                                                      \
    "  PERFORM setval('tenq.inbox_hot', 0, true);\n"                                               \
    "  RETURN pg_try_advisory_xact_lock(7364748);\n"                                               \
    "END $f$;\n"                                                                                   \
    "DO $d$ DECLARE f RECORD; def TEXT; n INT; done INT := 0;\n"                                   \
    "  old CONSTANT TEXT := 'pg_notify(''tenq_inbox'', '''')';\n"                                  \
    "BEGIN\n"                                                                                      \
    "  FOR f IN SELECT p.oid FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace\n"       \
    "    WHERE s.nspname = 'tenq' AND p.proname IN ('submit', 'submit_many', 'complete', "         \
    "'fail') LOOP\n"                                                                               \
    "    def := pg_get_functiondef(f.oid);\n"                                                      \
    "    n := (length(def) - length(replace(def, old, ''))) / length(old);\n"                      \
    "    IF n <> 1 THEN\n"                                                                         \
    "      RAISE EXCEPTION 'schema 15: % has % notifications, not 1', f.oid::regprocedure, n;\n"   \
    "    END IF;\n"                                                                                \
    "    EXECUTE replace(def, old, 'tenq.notify_inbox()');\n"                                      \
    "    done := done + 1;\n"                                                                      \
    "  END LOOP;\n"                                                                                \
    "  IF done <> 4 THEN RAISE EXCEPTION 'schema 15: % functions rewritten, not 4', done; END "    \
    "IF;\n"                                                                                        \
    "END $d$;\n"

/* Schema 16: tenq.problem checks a tenant's and a queue's name by its length and
 * a search for a character outside A-Z a-z 0-9 . _ -, the same rule as the
 * anchored pattern with a bounded repetition it replaces: PostgreSQL's regex
 * engine takes about 1 us a name on that one, a third of that on this (2 ms
 * of a 1,000-job submit_many; bench/RESULTS.md).  One string, run once, on
 * PostgreSQL only. */
#define STORE_PG_PROBLEM(horizon)                                                                  \
    "CREATE OR REPLACE FUNCTION tenq.problem(tenant TEXT, queue TEXT, type TEXT, args JSONB,\n"    \
    "  key TEXT, unique_key TEXT, idempotency_key TEXT, run_at TIMESTAMPTZ, priority INTEGER,\n"   \
    "  max_attempts INTEGER, score DOUBLE PRECISION, traceparent TEXT, limit_bytes BIGINT)\n"      \
    "  RETURNS TEXT LANGUAGE sql VOLATILE AS $f$ SELECT CASE\n"                                    \
    "  WHEN tenant IS NULL THEN 'tenant is required'\n"                                            \
    "  WHEN octet_length(tenant) NOT BETWEEN 1 AND $NAME_MAX OR tenant ~ '[^A-Za-z0-9._-]'\n"      \
    "    THEN 'tenant: $NAME_RULE'\n"                                                              \
    "  WHEN queue IS NULL THEN 'queue is required'\n"                                              \
    "  WHEN octet_length(queue) NOT BETWEEN 1 AND $NAME_MAX OR queue ~ '[^A-Za-z0-9._-]'\n"        \
    "    THEN 'queue: $NAME_RULE'\n"                                                               \
    "  WHEN type IS NULL THEN 'type is required'\n"                                                \
    "  WHEN octet_length(type) NOT BETWEEN 1 AND $TYPE_MAX OR type ~ '[\\x01-\\x20\\x7f]'\n"       \
    "    THEN 'type: $TYPE_RULE'\n"                                                                \
    "  WHEN octet_length(key) NOT BETWEEN 1 AND $KEY_MAX OR key ~ '[\\x01-\\x1f\\x7f]'\n"          \
    "    THEN 'key: $KEY_RULE'\n"                                                                  \
    "  WHEN octet_length(unique_key) NOT BETWEEN 1 AND $KEY_MAX OR unique_key ~ "                  \
    "'[\\x01-\\x1f\\x7f]'\n"                                                                       \
    "    THEN 'unique_key: $KEY_RULE'\n"                                                           \
    "  WHEN octet_length(idempotency_key) NOT BETWEEN 1 AND $KEY_MAX\n"                            \
    "    OR idempotency_key ~ '[\\x01-\\x1f\\x7f]'\n"                                              \
    "    THEN 'idempotency_key: $KEY_RULE'\n"                                                      \
    "  WHEN priority IS NULL OR priority NOT BETWEEN $PRIORITY_MIN AND $PRIORITY_MAX\n"            \
    "    THEN 'priority must be between $PRIORITY_MIN and $PRIORITY_MAX'\n"                        \
    "  WHEN max_attempts NOT BETWEEN 1 AND $ATTEMPTS_MAX THEN 'max_attempts must be between 1 "    \
    "and $ATTEMPTS_MAX'\n"                                                                         \
    "  WHEN run_at < 'epoch'::timestamptz OR run_at > clock_timestamp() + interval '" horizon      \
    "'\n"                                                                                          \
    "    THEN 'run_at must be after 1970 and at most 10 years ahead'\n"                            \
    "  WHEN score IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)\n"                   \
    "    THEN 'score must be a finite number'\n"                                                   \
    "  WHEN traceparent !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'\n"                         \
    "    OR substr(traceparent, 4, 32) = repeat('0', 32)\n"                                        \
    "    OR substr(traceparent, 37, 16) = repeat('0', 16)\n"                                       \
    "    THEN 'traceparent must be a W3C trace context: 00-<32 hex digits>-<16 hex "               \
    "digits>-<2 hex digits>, lowercase, ids not all 0'\n"                                          \
    "  WHEN args IS NULL THEN 'args must be JSON (not SQL NULL)'\n"                                \
    "  WHEN octet_length(args::text) > coalesce(limit_bytes, $ARGS_MAX)\n"                         \
    "    THEN format('args are %s bytes; queue %s takes at most %s', octet_length(args::text),\n"  \
    "      queue, coalesce(limit_bytes, $ARGS_MAX))\n"                                             \
    "  END $f$;\n"

/* Migrations 8 and 16 gave run_at a horizon of 3650 days, the server's is
 * ENGINE_RUN_AT_HORIZON_MS (10 years of 366 days). */
#define STORE_PG_TXAPI_NAMES STORE_PG_PROBLEM("3650 days")

/* Schema 19: quotas in applications' transactions.  The leader writes what
 * each tenant and queue with a quota holds into tenq.queued_usage (every
 * second, when it changed: admit.c); a trigger on the inbox adds the jobs
 * the inbox holds (the statement's own included) and refuses the statement,
 * and so the application's transaction, when a quota would be passed
 * (SQLSTATE TQ429, the message naming the limit as the server's 429 does).
 * No quota anywhere: the trigger returns at once.  One string, run once, on
 * PostgreSQL only. */
#define STORE_PG_TXAPI_QUOTA                                                                       \
    "CREATE TABLE tenq.queued_usage (\n"                                                           \
    "  kind TEXT NOT NULL,\n"                                                                      \
    "  name TEXT NOT NULL,\n"                                                                      \
    "  queued BIGINT NOT NULL,\n"                                                                  \
    "  queued_bytes BIGINT NOT NULL,\n"                                                            \
    "  updated_at BIGINT NOT NULL,\n"                                                              \
    "  PRIMARY KEY (kind, name));\n"                                                               \
    "CREATE FUNCTION tenq.inbox_quota() RETURNS trigger LANGUAGE plpgsql AS $f$\n"                 \
    "DECLARE bad RECORD;\n"                                                                        \
    "BEGIN\n"                                                                                      \
    "  IF NOT EXISTS (SELECT 1 FROM tenq.tenants WHERE max_queued IS NOT NULL\n"                   \
    "      OR max_queued_bytes > 0)\n"                                                             \
    "    AND NOT EXISTS (SELECT 1 FROM tenq.queues WHERE max_queued IS NOT NULL\n"                 \
    "      OR max_queued_bytes > 0) THEN\n"                                                        \
    "    RETURN NULL;\n"                                                                           \
    "  END IF;\n"                                                                                  \
    "  SELECT * INTO bad FROM (SELECT l.kind, l.name, l.max_queued, l.max_queued_bytes,\n"         \
    "      coalesce(u.queued, 0) + c.n AS held, coalesce(u.queued_bytes, 0) + c.b AS held_bytes\n" \
    "    FROM (SELECT 'tenant' AS kind, t.name, t.max_queued, t.max_queued_bytes\n"                \
    "        FROM tenq.tenants t WHERE t.name IN (SELECT a.tenant FROM added a)\n"                 \
    "          AND (t.max_queued IS NOT NULL OR t.max_queued_bytes > 0)\n"                         \
    "      UNION ALL SELECT 'queue', q.name, q.max_queued, q.max_queued_bytes\n"                   \
    "        FROM tenq.queues q WHERE q.name IN (SELECT a.queue FROM added a)\n"                   \
    "          AND (q.max_queued IS NOT NULL OR q.max_queued_bytes > 0)) l\n"                      \
    "    LEFT JOIN tenq.queued_usage u ON u.kind = l.kind AND u.name = l.name\n"                   \
    "    CROSS JOIN LATERAL (SELECT count(*) AS n, coalesce(sum(octet_length(i.args)), 0) AS b\n"  \
    "      FROM tenq.inbox i WHERE CASE l.kind WHEN 'tenant' THEN i.tenant ELSE i.queue END\n"     \
    "        = l.name) c) x\n"                                                                     \
    "    WHERE x.held > x.max_queued OR (x.max_queued_bytes > 0 AND x.held_bytes > "               \
    "x.max_queued_bytes)\n"                                                                        \
    "    LIMIT 1;\n"                                                                               \
    "  IF FOUND THEN\n"                                                                            \
    "    IF bad.held > bad.max_queued THEN\n"                                                      \
    "      RAISE EXCEPTION 'tenq.submit: quota_exceeded: % % would hold % unfinished jobs, past "  \
    "its '\n"                                                                                      \
    "        'max_queued % (jobs of transactions not yet taken in count)', bad.kind, bad.name,\n"  \
    "        bad.held, bad.max_queued USING ERRCODE = 'TQ429', COLUMN = 'max_queued';\n"           \
    "    END IF;\n"                                                                                \
    "    RAISE EXCEPTION 'tenq.submit: quota_exceeded: % % would hold % bytes of args, past its "  \
    "'\n"                                                                                          \
    "      'max_queued_bytes % (jobs of transactions not yet taken in count)', bad.kind, "         \
    "bad.name,\n"                                                                                  \
    "      bad.held_bytes, bad.max_queued_bytes USING ERRCODE = 'TQ429', COLUMN = "                \
    "'max_queued_bytes';\n"                                                                        \
    "  END IF;\n"                                                                                  \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "CREATE TRIGGER inbox_quota AFTER INSERT ON tenq.inbox REFERENCING NEW TABLE AS added\n"       \
    "  FOR EACH STATEMENT EXECUTE FUNCTION tenq.inbox_quota();\n"

/* Schema 24: events sent in an application's transaction (tenq.send_event):
 * written to tenq.event_inbox, which the leader takes in once the
 * transaction commits (inbox.c, api/ingest.c), exactly once, each deleted
 * in the commit that delivers it (engine/steps.c: the jobs waiting for its
 * key go on, or it is kept for --event-window).  Checked as POST /v1/events
 * checks it.  One string, run once, on PostgreSQL only. */
#define STORE_PG_TXAPI_EVENTS                                                                      \
    "CREATE TABLE tenq.event_inbox (\n"                                                            \
    "  id BIGINT PRIMARY KEY,\n"                                                                   \
    "  tenant TEXT NOT NULL,\n"                                                                    \
    "  key TEXT NOT NULL,\n"                                                                       \
    "  payload TEXT NOT NULL,\n"                                                                   \
    "  created_at BIGINT NOT NULL);\n"                                                             \
    "CREATE SEQUENCE tenq.event_ids;\n"                                                            \
    "-- An event of a tenant, sent if and only if the caller's transaction commits: its\n"         \
    "-- number in the inbox.\n"                                                                    \
    "CREATE FUNCTION tenq.send_event(tenant TEXT, key TEXT, payload JSONB DEFAULT 'null') "        \
    "RETURNS BIGINT LANGUAGE plpgsql AS $f$\n"                                                     \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE new_id BIGINT; body TEXT := coalesce(payload, 'null'::jsonb)::text;\n"                \
    "BEGIN\n"                                                                                      \
    "  IF tenant IS NULL OR octet_length(tenant) NOT BETWEEN 1 AND $NAME_MAX OR tenant ~ "         \
    "'[^A-Za-z0-9._-]' THEN\n"                                                                     \
    "    RAISE EXCEPTION 'tenq.send_event: tenant: $NAME_RULE'\n"                                  \
    "      USING ERRCODE = '22023';\n"                                                             \
    "  END IF;\n"                                                                                  \
    "  IF key IS NULL OR octet_length(key) NOT BETWEEN 1 AND $KEY_MAX OR key ~ "                   \
    "'[\\x01-\\x1f\\x7f]' THEN\n"                                                                  \
    "    RAISE EXCEPTION 'tenq.send_event: key: $KEY_RULE'\n"                                      \
    "      USING ERRCODE = '22023';\n"                                                             \
    "  END IF;\n"                                                                                  \
    "  IF octet_length(body) > $EVENT_MAX THEN\n"                                                  \
    "    RAISE EXCEPTION 'tenq.send_event: payload is % bytes; an event takes at most "            \
    "$EVENT_MAX',\n"                                                                               \
    "      octet_length(body) USING ERRCODE = '22023';\n"                                          \
    "  END IF;\n"                                                                                  \
    "  new_id := nextval('tenq.event_ids');\n"                                                     \
    "  INSERT INTO tenq.event_inbox (id, tenant, key, payload, created_at)\n"                      \
    "    VALUES (new_id, tenant, key, body, tenq.now_ms());\n"                                     \
    "  PERFORM tenq.notify_inbox();\n"                                                             \
    "  RETURN new_id;\n"                                                                           \
    "END $f$;\n"

/* Schema 25: tenq.problem again, every limit the server's (the run_at
 * horizon was 10 days short).  One string, run once, on PostgreSQL only. */
#define STORE_PG_TXAPI_LIMITS STORE_PG_PROBLEM("$RUN_AT_HORIZON_MS milliseconds")

/* Schema 26: keyed limits, expiry and debounce in applications' transactions:
 * tenq.submit and tenq.submit_many take a job's concurrency_keys and
 * rate_keys (JSON lists, as an HTTP submit), expire_at or start_within_ms,
 * debounce_ms and debounce_max_ms, checked as the server checks them
 * (tenq.keys_problem, tenq.timing_problem) and kept in tenq.inbox's options
 * (tenq.job_options).  One string, run once, on PostgreSQL only. */
#define STORE_PG_TXAPI_KEYS                                                                        \
    "ALTER TABLE tenq.inbox ADD COLUMN options TEXT;\n"                                            \
    "-- A list of keys as a job's row keeps them: keys alone become {\"key\": k}, nulls go.\n"     \
    "CREATE FUNCTION tenq.key_list(keys JSONB) RETURNS JSONB LANGUAGE sql IMMUTABLE\n"             \
    "  AS $f$ SELECT CASE WHEN jsonb_typeof(keys) IS DISTINCT FROM 'array'\n"                      \
    "    OR jsonb_array_length(keys) = 0 THEN NULL\n"                                              \
    "  ELSE (SELECT jsonb_agg(CASE WHEN jsonb_typeof(x) = 'string' THEN "                          \
    "jsonb_build_object('key', x)\n"                                                               \
    "    ELSE jsonb_strip_nulls(x) END ORDER BY o)\n"                                              \
    "    FROM jsonb_array_elements(keys) WITH ORDINALITY AS e(x, o)) END $f$;\n"                   \
    "-- A job's options as the inbox keeps them (JSON text: its keys as its row keeps them,\n"     \
    "-- its expire_at in ms, the debounce asked for), from tenq.submit's arguments; NULL when\n"   \
    "-- it has none.\n"                                                                            \
    "CREATE FUNCTION tenq.job_options(concurrency_keys JSONB, rate_keys JSONB, expire_at "         \
    "TIMESTAMPTZ,\n"                                                                               \
    "  start_within_ms BIGINT, debounce_ms BIGINT, debounce_max_ms BIGINT) RETURNS TEXT\n"         \
    "  LANGUAGE sql VOLATILE AS $f$ SELECT nullif(jsonb_strip_nulls(jsonb_build_object(\n"         \
    "    'concurrency_keys', tenq.key_list(concurrency_keys),\n"                                   \
    "    'rate_keys', tenq.key_list(rate_keys),\n"                                                 \
    "    'expire_at', coalesce((extract(epoch FROM expire_at) * 1000)::bigint,\n"                  \
    "      tenq.now_ms() + start_within_ms),\n"                                                    \
    "    'debounce_ms', debounce_ms, 'debounce_max_ms', nullif(debounce_max_ms, 0))),\n"           \
    "    '{}'::jsonb)::text $f$;\n"                                                                \
    "-- What the server would refuse in a job's expiry and debounce, naming the field; NULL "      \
    "when\n"                                                                                       \
    "-- nothing.\n"                                                                                \
    "CREATE FUNCTION tenq.timing_problem(key TEXT, expire_at TIMESTAMPTZ, start_within_ms "        \
    "BIGINT,\n"                                                                                    \
    "  debounce_ms BIGINT, debounce_max_ms BIGINT) RETURNS TEXT LANGUAGE sql VOLATILE AS $f$\n"    \
    "  SELECT CASE\n"                                                                              \
    "  WHEN expire_at IS NOT NULL AND start_within_ms IS NOT NULL\n"                               \
    "    THEN 'start_within_ms: give expire_at or start_within_ms, not both'\n"                    \
    "  WHEN expire_at < 'epoch'::timestamptz OR expire_at > clock_timestamp() + interval '3650 "   \
    "days'\n"                                                                                      \
    "    THEN 'expire_at must be after 1970 and at most 10 years ahead'\n"                         \
    "  WHEN start_within_ms NOT BETWEEN 1 AND 316224000000\n"                                      \
    "    THEN 'start_within_ms must be from 1 ms to 10 years'\n"                                   \
    "  WHEN debounce_ms NOT BETWEEN 1 AND 86400000 THEN 'debounce_ms must be from 1 ms to a "      \
    "day'\n"                                                                                       \
    "  WHEN debounce_max_ms IS NOT NULL AND debounce_max_ms <> 0 AND (debounce_max_ms\n"           \
    "    < coalesce(debounce_ms, 0) OR debounce_max_ms > 604800000)\n"                             \
    "    THEN 'debounce_max_ms must be from debounce_ms to 7 days, or 0 for none'\n"               \
    "  WHEN debounce_max_ms IS NOT NULL AND debounce_max_ms <> 0 AND debounce_ms IS NULL\n"        \
    "    THEN 'debounce_ms: debounce_max_ms needs debounce_ms'\n"                                  \
    "  WHEN debounce_ms IS NOT NULL AND key IS NULL\n"                                             \
    "    THEN 'debounce_ms needs a key: the pending job of the key''s lane is the one a later '\n" \
    "      'submit replaces'\n"                                                                    \
    "  END $f$;\n"                                                                                 \
    "-- What the server would refuse in a job's list of keys (field: concurrency_keys or\n"        \
    "-- rate_keys), as a sentence naming the field; NULL when nothing. A rate key's cost is\n"     \
    "-- checked against its own burst and against the burst a setting of the tenant's keys\n"      \
    "-- gives it (tenq.key_settings: the key's own, else the longest prefix's).\n"                 \
    "CREATE FUNCTION tenq.keys_problem(tenant TEXT, field TEXT, keys JSONB) RETURNS TEXT\n"        \
    "  LANGUAGE plpgsql STABLE AS $f$\n"                                                           \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE x JSONB; i INT := 0; k TEXT; seen TEXT[] := '{}'; f TEXT; m TEXT; v NUMERIC;\n"       \
    "  rate BOOLEAN := field = 'rate_keys';\n"                                                     \
    "  members TEXT[] := CASE WHEN field = 'rate_keys'\n"                                          \
    "    THEN ARRAY['key', 'cost', 'rate', 'rate_period_ms', 'rate_burst'] ELSE ARRAY['key', "     \
    "'limit'] END;\n"                                                                              \
    "  lo NUMERIC; hi NUMERIC; cost NUMERIC; burst NUMERIC; s RECORD;\n"                           \
    "BEGIN\n"                                                                                      \
    "  IF keys IS NULL OR jsonb_typeof(keys) = 'null' THEN RETURN NULL; END IF;\n"                 \
    "  IF jsonb_typeof(keys) <> 'array' THEN\n"                                                    \
    "    RETURN format('%s must be a list of {\"key\": k, ...} objects', field);\n"                \
    "  END IF;\n"                                                                                  \
    "  IF jsonb_array_length(keys) > 4 THEN\n"                                                     \
    "    RETURN format('%s: a job names at most 4 %s keys, not %s', field,\n"                      \
    "      CASE WHEN rate THEN 'rate' ELSE 'concurrency' END, jsonb_array_length(keys));\n"        \
    "  END IF;\n"                                                                                  \
    "  FOR x IN SELECT e FROM jsonb_array_elements(keys) AS e LOOP\n"                              \
    "    f := format('%s[%s]', field, i);\n"                                                       \
    "    IF jsonb_typeof(x) = 'string' THEN\n"                                                     \
    "      k := x #>> '{}';\n"                                                                     \
    "      x := jsonb_build_object('key', x);\n"                                                   \
    "    ELSIF jsonb_typeof(x) = 'object' THEN\n"                                                  \
    "      IF x - members <> '{}' THEN\n"                                                          \
    "        RETURN format('%s: unknown field \"%s\"', f,\n"                                       \
    "          (SELECT min(n) FROM jsonb_object_keys(x - members) AS n));\n"                       \
    "      END IF;\n"                                                                              \
    "      IF jsonb_typeof(x->'key') IS DISTINCT FROM 'string' THEN\n"                             \
    "        RETURN f || '.key must be a string';\n"                                               \
    "      END IF;\n"                                                                              \
    "      k := x->>'key';\n"                                                                      \
    "      FOREACH m IN ARRAY members[2:] LOOP\n"                                                  \
    "        IF jsonb_typeof(x->m) IS NULL OR jsonb_typeof(x->m) = 'null' THEN CONTINUE; END "     \
    "IF;\n"                                                                                        \
    "        lo := 1;\n"                                                                           \
    "        hi := CASE m WHEN 'rate' THEN 4294967294 WHEN 'rate_period_ms' THEN 86400000\n"       \
    "          ELSE 1000000 END;\n"                                                                \
    "        IF jsonb_typeof(x->m) <> 'number' OR (x->>m)::numeric NOT BETWEEN lo AND hi\n"        \
    "          OR (x->>m)::numeric <> trunc((x->>m)::numeric) THEN\n"                              \
    "          RETURN format('%s.%s must be an integer from %s to %s', f, m, lo, hi);\n"           \
    "        END IF;\n"                                                                            \
    "      END LOOP;\n"                                                                            \
    "    ELSE\n"                                                                                   \
    "      RETURN f || ' must be {\"key\": k, ...} or a key';\n"                                   \
    "    END IF;\n"                                                                                \
    "    IF octet_length(k) NOT BETWEEN 1 AND 256 OR k ~ '[\\x01-\\x1f\\x7f]' THEN\n"              \
    "      RETURN f || '.key: 1-256 bytes without control characters';\n"                          \
    "    END IF;\n"                                                                                \
    "    IF k = ANY(seen) THEN\n"                                                                  \
    "      RETURN format('%s.key: the job names key \"%s\" twice', f, k);\n"                       \
    "    END IF;\n"                                                                                \
    "    seen := seen || k;\n"                                                                     \
    "    IF rate THEN\n"                                                                           \
    "      cost := coalesce((x->>'cost')::numeric, 1);\n"                                          \
    "      IF x->'rate' IS NULL AND (x->'rate_period_ms' IS NOT NULL OR x->'rate_burst' IS NOT "   \
    "NULL) THEN\n"                                                                                 \
    "        RETURN f || '.rate is required with rate_period_ms or rate_burst';\n"                 \
    "      END IF;\n"                                                                              \
    "      burst := coalesce((x->>'rate_burst')::numeric, (x->>'rate')::numeric);\n"               \
    "      IF burst IS NOT NULL AND cost > burst THEN\n"                                           \
    "        RETURN format('%s.cost: a start of cost %s can never fit the key''s burst of %s', "   \
    "f,\n"                                                                                         \
    "          cost, burst);\n"                                                                    \
    "      END IF;\n"                                                                              \
    "      SELECT ks.key, coalesce(ks.rate_burst, ks.rate) AS burst INTO s FROM "                  \
    "tenq.key_settings ks\n"                                                                       \
    "        WHERE ks.tenant = tenant AND ks.rate IS NOT NULL AND (ks.key = k OR (right(ks.key, "  \
    "1) = '*'\n"                                                                                   \
    "          AND left(k, length(ks.key) - 1) = left(ks.key, -1)))\n"                             \
    "        ORDER BY ks.key = k DESC, length(ks.key) DESC LIMIT 1;\n"                             \
    "      IF FOUND AND cost > s.burst THEN\n"                                                     \
    "        RETURN format('%s.cost: a start of cost %s can never fit the burst of %s that key "   \
    "%s''s '\n"                                                                                    \
    "          'setting (%s) gives it', f, cost, s.burst, k, s.key);\n"                            \
    "      END IF;\n"                                                                              \
    "    END IF;\n"                                                                                \
    "    i := i + 1;\n"                                                                            \
    "  END LOOP;\n"                                                                                \
    "  RETURN NULL;\n"                                                                             \
    "END $f$;\n"                                                                                   \
    "DROP FUNCTION tenq.submit(TEXT, TEXT, TEXT, JSONB, TEXT, TEXT, BOOLEAN, TEXT, TIMESTAMPTZ,\n" \
    "  INTEGER, INTEGER, DOUBLE PRECISION, TEXT, BIGINT);\n"                                       \
    "-- One job, in the caller's transaction: its id.\n"                                           \
    "CREATE FUNCTION tenq.submit(tenant TEXT, queue TEXT, type TEXT, args JSONB DEFAULT "          \
    "'{}'::jsonb,\n"                                                                               \
    "  key TEXT DEFAULT NULL, unique_key TEXT DEFAULT NULL, \"unique\" BOOLEAN DEFAULT false,\n"   \
    "  idempotency_key TEXT DEFAULT NULL, run_at TIMESTAMPTZ DEFAULT NULL, priority INTEGER "      \
    "DEFAULT 0,\n"                                                                                 \
    "  max_attempts INTEGER DEFAULT NULL, score DOUBLE PRECISION DEFAULT NULL,\n"                  \
    "  traceparent TEXT DEFAULT NULL, timeout_ms BIGINT DEFAULT NULL,\n"                           \
    "  concurrency_keys JSONB DEFAULT NULL, rate_keys JSONB DEFAULT NULL,\n"                       \
    "  expire_at TIMESTAMPTZ DEFAULT NULL, start_within_ms BIGINT DEFAULT NULL,\n"                 \
    "  debounce_ms BIGINT DEFAULT NULL, debounce_max_ms BIGINT DEFAULT NULL) RETURNS BIGINT\n"     \
    "  LANGUAGE plpgsql AS $f$\n"                                                                  \
    "#variable_conflict use_variable\n"                                                            \
    "DECLARE why TEXT; new_id BIGINT;\n"                                                           \
    "BEGIN\n"                                                                                      \
    "  SELECT coalesce(tenq.problem(tenant, queue, type, args, key, unique_key, "                  \
    "idempotency_key,\n"                                                                           \
    "      run_at, priority, max_attempts, score, traceparent, q.max_payload_bytes),\n"            \
    "      tenq.timeout_problem(timeout_ms, q.lease_ms),\n"                                        \
    "      tenq.keys_problem(tenant, 'concurrency_keys', concurrency_keys),\n"                     \
    "      tenq.keys_problem(tenant, 'rate_keys', rate_keys),\n"                                   \
    "      tenq.timing_problem(key, expire_at, start_within_ms, debounce_ms, debounce_max_ms))\n"  \
    "    INTO why FROM (SELECT 1) AS one LEFT JOIN tenq.queues q ON q.name = queue;\n"             \
    "  IF why IS NOT NULL THEN\n"                                                                  \
    "    RAISE EXCEPTION 'tenq.submit: %', why USING ERRCODE = '22023';\n"                         \
    "  END IF;\n"                                                                                  \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  new_id := nextval('tenq.tx_ids');\n"                                                        \
    "  INSERT INTO tenq.inbox (id, tenant, queue, type, args, key, unique_key, is_unique,\n"       \
    "    idempotency_key, run_at, priority, max_attempts, score, traceparent, timeout_ms, "        \
    "options,\n"                                                                                   \
    "    created_at)\n"                                                                            \
    "    VALUES (new_id, tenant, queue, type, args::text, key, unique_key, \"unique\",\n"          \
    "    idempotency_key, (extract(epoch FROM run_at) * 1000)::bigint, priority, max_attempts,\n"  \
    "    score, traceparent, nullif(timeout_ms, 0), tenq.job_options(concurrency_keys, "           \
    "rate_keys,\n"                                                                                 \
    "    expire_at, start_within_ms, debounce_ms, debounce_max_ms), tenq.now_ms());\n"             \
    "  PERFORM tenq.notify_inbox();\n"                                                             \
    "  RETURN new_id;\n"                                                                           \
    "END $f$;\n"                                                                                   \
    "-- Many jobs (a JSON array of objects with submit's fields): their ids, in order. One\n"      \
    "-- bad job fails them all, naming its index.\n"                                               \
    "CREATE OR REPLACE FUNCTION tenq.submit_many(jobs JSONB) RETURNS BIGINT[] LANGUAGE plpgsql "   \
    "AS $f$\n"                                                                                     \
    "DECLARE bad RECORD; ids BIGINT[];\n"                                                          \
    "  known CONSTANT TEXT[] := ARRAY['tenant', 'queue', 'type', 'args', 'key', 'unique_key',\n"   \
    "    'unique', 'idempotency_key', 'run_at', 'priority', 'max_attempts', 'score', "             \
    "'traceparent',\n"                                                                             \
    "    'timeout_ms', 'concurrency_keys', 'rate_keys', 'expire_at', 'start_within_ms', "          \
    "'debounce_ms',\n"                                                                             \
    "    'debounce_max_ms'];\n"                                                                    \
    "BEGIN\n"                                                                                      \
    "  IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN\n"                                    \
    "    RAISE EXCEPTION 'tenq.submit_many: jobs must be a JSON array of job objects'\n"           \
    "      USING ERRCODE = '22023'; END IF;\n"                                                     \
    "  SELECT c.i, c.p INTO bad FROM (SELECT e.ord - 1 AS i,\n"                                    \
    "    CASE WHEN jsonb_typeof(e.j) <> 'object' THEN 'a job is a JSON object'\n"                  \
    "    WHEN e.j - known <> '{}'\n"                                                               \
    "      THEN 'unknown field ' || (SELECT min(k) FROM jsonb_object_keys(e.j - known) AS k)\n"    \
    "    ELSE coalesce(tenq.problem(e.j->>'tenant', e.j->>'queue', e.j->>'type',\n"                \
    "      coalesce(e.j->'args', '{}'), e.j->>'key', e.j->>'unique_key', "                         \
    "e.j->>'idempotency_key',\n"                                                                   \
    "      (e.j->>'run_at')::timestamptz, coalesce((e.j->>'priority')::int, 0),\n"                 \
    "      (e.j->>'max_attempts')::int, (e.j->>'score')::float8, e.j->>'traceparent',\n"           \
    "      q.max_payload_bytes), tenq.timeout_problem((e.j->>'timeout_ms')::bigint, "              \
    "q.lease_ms),\n"                                                                               \
    "      tenq.keys_problem(e.j->>'tenant', 'concurrency_keys', e.j->'concurrency_keys'),\n"      \
    "      tenq.keys_problem(e.j->>'tenant', 'rate_keys', e.j->'rate_keys'),\n"                    \
    "      tenq.timing_problem(e.j->>'key', (e.j->>'expire_at')::timestamptz,\n"                   \
    "        (e.j->>'start_within_ms')::bigint, (e.j->>'debounce_ms')::bigint,\n"                  \
    "        (e.j->>'debounce_max_ms')::bigint))\n"                                                \
    "    END AS p\n"                                                                               \
    "    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)\n"                           \
    "    LEFT JOIN tenq.queues q ON jsonb_typeof(e.j) = 'object' AND q.name = e.j->>'queue') AS "  \
    "c\n"                                                                                          \
    "    WHERE c.p IS NOT NULL ORDER BY c.i LIMIT 1;\n"                                            \
    "  IF FOUND THEN\n"                                                                            \
    "    RAISE EXCEPTION 'tenq.submit_many: job %: %', bad.i, bad.p USING ERRCODE = '22023';\n"    \
    "  END IF;\n"                                                                                  \
    "  PERFORM pg_advisory_xact_lock_shared(7364748);\n"                                           \
    "  WITH src AS MATERIALIZED (SELECT e.ord, e.j, nextval('tenq.tx_ids') AS id\n"                \
    "    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)),\n"                         \
    "  ins AS (INSERT INTO tenq.inbox (id, tenant, queue, type, args, key, unique_key, "           \
    "is_unique,\n"                                                                                 \
    "    idempotency_key, run_at, priority, max_attempts, score, traceparent, timeout_ms, "        \
    "options,\n"                                                                                   \
    "    created_at)\n"                                                                            \
    "    SELECT id, j->>'tenant', j->>'queue', j->>'type', coalesce(j->'args', '{}')::text,\n"     \
    "      j->>'key', j->>'unique_key', coalesce((j->>'unique')::boolean, false),\n"               \
    "      j->>'idempotency_key', (extract(epoch FROM (j->>'run_at')::timestamptz) * "             \
    "1000)::bigint,\n"                                                                             \
    "      coalesce((j->>'priority')::int, 0), (j->>'max_attempts')::int, "                        \
    "(j->>'score')::float8,\n"                                                                     \
    "      j->>'traceparent', nullif((j->>'timeout_ms')::bigint, 0),\n"                            \
    "      tenq.job_options(j->'concurrency_keys', j->'rate_keys', "                               \
    "(j->>'expire_at')::timestamptz,\n"                                                            \
    "        (j->>'start_within_ms')::bigint, (j->>'debounce_ms')::bigint,\n"                      \
    "        (j->>'debounce_max_ms')::bigint), tenq.now_ms() FROM src)\n"                          \
    "  SELECT coalesce(array_agg(id ORDER BY ord), '{}') INTO ids FROM src;\n"                     \
    "  IF cardinality(ids) > 0 THEN PERFORM tenq.notify_inbox(); END IF;\n"                        \
    "  RETURN ids;\n"                                                                              \
    "END $f$;\n"

#endif
