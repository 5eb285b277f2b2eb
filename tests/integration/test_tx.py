# SPDX-License-Identifier: Apache-2.0
"""Jobs submitted and completed in an application's own PostgreSQL
transaction (tenq.submit, tenq.submit_many, tenq.complete, tenq.fail;
docs/transactions.md), against real servers and a real PostgreSQL.

The "applications" are psql processes: each runs one transaction, and the
tests kill them (kill -9) where it matters. Run under tests/with-pg.sh; a
missing PostgreSQL is a failure, never a skip."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chaos"))
import harness  # noqa: E402
from harness import Server, main  # noqa: E402


def psql(url, sql, check=True):
    """Runs sql (one transaction if it says BEGIN ... COMMIT); (rc, out, err)."""
    p = subprocess.run(["psql", url, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError("psql failed: %s\n%s" % (sql, p.stderr))
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def q1(url, sql):
    return psql(url, sql)[1]


class TxTest(unittest.TestCase):
    def setUp(self):
        if not os.environ.get("TENQ_TEST_PG_URL"):
            self.fail("needs PostgreSQL: run under tests/with-pg.sh")
        self.srv = Server(store_url=harness.pg_url_for_new_database())
        self.db = self.srv.store_url
        psql(self.db, "CREATE TABLE biz (id serial PRIMARY KEY, note text, job bigint)")

    def tearDown(self):
        self.srv.cleanup()

    def lease(self, queue, wait_ms=0, max=10):
        return self.srv.lease([queue], max=max, wait_ms=wait_ms)

    def settle(self):
        """Until the leader has taken in everything committed."""
        deadline = time.time() + 10
        while time.time() < deadline:
            if q1(self.db, "SELECT (SELECT count(*) FROM tenq.inbox) + "
                           "(SELECT count(*) FROM tenq.tx_outcomes)") == "0":
                return
            time.sleep(0.02)
        self.fail("the inbox was not taken in")


class Submit(TxTest):
    def test_a_committed_submit_runs_once_with_the_id_the_transaction_got(self):
        out = q1(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('order 7'); "
                          "SELECT tenq.submit('acme', 'tx', 'Mail.send', '{\"order\": 7}'); COMMIT;")
        jid = int(out)
        self.assertEqual(jid % 2, 1)  # a transaction's ids are odd
        got = self.lease("tx", wait_ms=5000)
        self.assertEqual([j["id"] for j in got], [jid])
        self.assertEqual(got[0]["args"], {"order": 7})
        self.srv.ack(got[0])
        self.assertEqual(self.srv.job(jid)["state"], "succeeded")
        self.settle()
        self.assertEqual(self.lease("tx"), [])

    def test_a_rolled_back_submit_leaves_no_job_and_nothing_runs(self):
        out = q1(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('gone'); "
                          "SELECT tenq.submit('acme', 'tx', 'Mail.send'); ROLLBACK;")
        jid = int(out)
        time.sleep(0.5)
        self.assertEqual(self.lease("tx"), [])
        self.assertEqual(self.srv.req("GET", "/v1/jobs/%d" % jid)[0], 404)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "0")

    def test_submit_many_gives_ids_in_order_and_every_field_arrives(self):
        out = q1(self.db, "SELECT tenq.submit_many('[" +
                 '{"tenant":"acme","queue":"txm","type":"A","args":{"n":1},"priority":5},'
                 '{"tenant":"acme","queue":"txm","type":"B","key":"lane-1",'
                 '"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",'
                 '"max_attempts":3},'
                 '{"tenant":"acme","queue":"txm","type":"C","run_at":"2030-01-01T00:00:00Z"}' +
                 "]')")
        ids = [int(x) for x in out.strip("{}").split(",")]
        self.assertEqual(ids, sorted(ids))
        self.settle()
        a, b, c = (self.srv.job(i) for i in ids)
        self.assertEqual((a["type"], a["args"], a["priority"]), ("A", {"n": 1}, 5))
        self.assertEqual((b["key"], b["max_attempts"]), ("lane-1", 3))
        self.assertEqual(b["traceparent"],
                         "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        self.assertEqual(c["state"], "scheduled")
        self.assertEqual(c["run_at"], 1893456000000)

    def test_a_duplicate_ends_merged_into_the_job_that_holds_its_key(self):
        first = int(q1(self.db, "SELECT tenq.submit('acme', 'txd', 'T', unique_key => 'u-1')"))
        second = int(q1(self.db, "SELECT tenq.submit('acme', 'txd', 'T', unique_key => 'u-1')"))
        self.settle()
        self.assertEqual(self.srv.job(first)["state"], "ready")
        dup = self.srv.job(second)
        self.assertEqual((dup["state"], dup["merged_into"]), ("merged", first))
        # a wait on the duplicate's id follows it to the job that runs
        self.srv.ack(self.lease("txd")[0])
        got = self.srv.ok("GET", "/v1/jobs/%d/wait?timeout_ms=100" % second)
        self.assertEqual(got["merged_into"], first)
        # the idempotency key replays the same way
        k1 = int(q1(self.db, "SELECT tenq.submit('acme', 'txd', 'T', idempotency_key => 'i-9')"))
        k2 = int(q1(self.db, "SELECT tenq.submit('acme', 'txd', 'T', idempotency_key => 'i-9')"))
        self.settle()
        self.assertEqual(self.srv.job(k2)["merged_into"], k1)

    def test_a_lanes_jobs_from_transactions_run_in_commit_order(self):
        # three transactions take their ids in one order and commit in another
        procs = []
        for n in range(3):
            sql = ("BEGIN; SELECT tenq.submit('acme', 'txl', 'T', '{\"n\": %d}', key => 'k'); "
                   "SELECT pg_sleep(%s); COMMIT;" % (n, [1.5, 0.1, 0.5][n]))
            procs.append(subprocess.Popen(["psql", self.db, "-X", "-q", "-At", "-c", sql],
                                          stdout=subprocess.PIPE, text=True))
            time.sleep(0.3)  # each takes its id before the next starts
        ids = [int(p.communicate()[0].split()[0]) for p in procs]
        self.assertEqual(ids, sorted(ids))
        order = []
        for _ in range(3):
            got = self.lease("txl", wait_ms=5000)
            order.append(got[0]["args"]["n"])
            self.srv.ack(got[0])
        self.assertEqual(order, [1, 2, 0])  # commit order: at 0.4 s, 1.1 s, 1.5 s

    def test_an_application_killed_before_its_commit_leaves_neither_its_rows_nor_its_job(self):
        sql = ("BEGIN; INSERT INTO biz (note) VALUES ('half'); "
               "SELECT tenq.submit('acme', 'txk', 'T'); SELECT pg_sleep(30); COMMIT;")
        p = subprocess.Popen(["psql", self.db, "-X", "-q", "-At", "-c", sql],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.time() + 10
        while time.time() < deadline and q1(
                self.db, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' "
                         "AND pid <> pg_backend_pid()") == "0":
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.time() + 10  # the backend notices its client is gone and rolls back
        while time.time() < deadline and q1(
                self.db, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' "
                         "AND pid <> pg_backend_pid()") != "0":
            psql(self.db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query "
                          "LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()")
            time.sleep(0.05)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "0")
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")
        time.sleep(0.3)
        self.assertEqual(self.lease("txk"), [])
        # and the same transaction let through commits both
        q1(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('whole'); "
                    "SELECT tenq.submit('acme', 'txk', 'T'); COMMIT;")
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "1")
        self.assertEqual(len(self.lease("txk", wait_ms=5000)), 1)

    def test_bad_arguments_raise_and_store_nothing(self):
        bad = [
            ("SELECT tenq.submit('bad tenant', 'q', 'T')", "tenant"),
            ("SELECT tenq.submit(NULL, 'q', 'T')", "tenant is required"),
            ("SELECT tenq.submit('acme', 'q/x', 'T')", "queue"),
            # names: 1-64 of A-Z a-z 0-9 . _ - (schema 16 checks them by length and a search)
            ("SELECT tenq.submit(repeat('a', 65), 'q', 'T')", "tenant: names are 1-64"),
            ("SELECT tenq.submit('acme', '', 'T')", "queue: names are 1-64"),
            ("SELECT tenq.submit('t\u00e9nant', 'q', 'T')", "tenant: names are 1-64"),
            ("SELECT tenq.submit('acme', E'q\\n', 'T')", "queue: names are 1-64"),
            ("SELECT tenq.submit_many('[{\"tenant\":\"acme\",\"queue\":\"q\",\"type\":\"T\"},"
             "{\"tenant\":\"acme\",\"queue\":\"q q\",\"type\":\"T\"}]')",
             "job 1: queue: names are 1-64"),
            ("SELECT tenq.submit('acme', 'q', 'has space')", "type"),
            ("SELECT tenq.submit('acme', 'q', 'T', priority => 40000)", "priority"),
            ("SELECT tenq.submit('acme', 'q', 'T', max_attempts => 0)", "max_attempts"),
            ("SELECT tenq.submit('acme', 'q', 'T', run_at => now() + interval '20 years')",
             "run_at"),
            ("SELECT tenq.submit('acme', 'q', 'T', traceparent => 'nope')", "traceparent"),
            ("SELECT tenq.submit('acme', 'q', 'T', score => 'NaN')", "score"),
            ("SELECT tenq.submit('acme', 'q', 'T', args => NULL)", "args"),
            ("SELECT tenq.submit('acme', 'q', 'T', key => repeat('k', 300))", "key"),
            ("SELECT tenq.submit('acme', 'q', 'T', args => jsonb_build_object('x', "
             "repeat('y', 1100000)))", "args are"),
            ("SELECT tenq.submit_many('{}')", "JSON array"),
            ("SELECT tenq.submit_many('[{\"tenant\":\"acme\",\"queue\":\"q\",\"type\":\"T\"},"
             "{\"tenant\":\"acme\",\"queue\":\"q\",\"type\":\"T\",\"colour\":1}]')",
             "job 1: unknown field colour"),
            ("SELECT tenq.submit_many('[1]')", "job 0: a job is a JSON object"),
            # a job's own timeout: from a third of the queue's lease (300000 by default)
            ("SELECT tenq.submit('acme', 'q', 'T', timeout_ms => 99999)", "timeout_ms must be"),
            ("SELECT tenq.submit('acme', 'q', 'T', timeout_ms => -1)", "timeout_ms must be"),
            ("SELECT tenq.submit('acme', 'q', 'T', timeout_ms => 700000000)", "timeout_ms"),
            ("SELECT tenq.submit_many('[{\"tenant\":\"acme\",\"queue\":\"q\",\"type\":\"T\","
             "\"timeout_ms\":5}]')", "job 0: timeout_ms must be"),
            ("SELECT tenq.complete(999999, 1)", "no job"),
            ("SELECT tenq.fail(999999, 1, 'x', -5)", "retry_in_ms"),
        ]
        for sql, word in bad:
            rc, _, err = psql(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('x'); %s; COMMIT;"
                              % sql, check=False)
            self.assertNotEqual(rc, 0, sql)
            self.assertIn(word, err, sql)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "0")
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.jobs"), "0")
        # the longest names, of every character a name may have, pass
        rc, _, err = psql(self.db, "BEGIN; SELECT tenq.submit(repeat('a', 64), "
                          "'AZaz09._-' || repeat('q', 55), 'T'); ROLLBACK;", check=False)
        self.assertEqual(rc, 0, err)

    def test_a_submit_past_a_quota_raises_and_rolls_back_the_transaction(self):
        self.srv.ok("PUT", "/v1/tenants/txq", {"max_queued": 3})
        self.srv.ok("PUT", "/v1/queues/txqq", {"max_queued_bytes": 60})
        ids = q1(self.db, "BEGIN; SELECT tenq.submit_many('[" + ",".join(
            ['{"tenant":"txq","queue":"txq1","type":"T"}'] * 2) + "]'); COMMIT;")
        self.assertEqual(len(ids.strip("{}").split(",")), 2)
        # the leader takes them in and writes what the tenant holds
        deadline = time.time() + 10
        while q1(self.db, "SELECT coalesce((SELECT queued FROM tenq.queued_usage WHERE kind = "
                          "'tenant' AND name = 'txq'), 0)") != "2":
            self.assertLess(time.time(), deadline, "the leader never wrote the tenant's usage")
            time.sleep(0.05)
        over = [
            ("SELECT tenq.submit_many('[" + ",".join(
                ['{"tenant":"txq","queue":"txq1","type":"T"}'] * 2) + "]')",
             "tenant txq would hold 4 unfinished jobs, past its max_queued 3"),
            ("SELECT tenq.submit('other', 'txqq', 'T', jsonb_build_object('p', repeat('x', 60)))",
             "queue txqq would hold 69 bytes of args, past its max_queued_bytes 60"),
        ]
        for sql, words in over:
            rc, _, err = psql(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('q'); %s; COMMIT;"
                              % sql, check=False)
            self.assertNotEqual(rc, 0, sql)
            self.assertIn("quota_exceeded", err)
            self.assertIn(words, err)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "0")  # rolled back
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")
        # the SQLSTATE an application catches
        rc, out, err = psql(self.db, "DO $$ BEGIN PERFORM tenq.submit('txq', 'txq1', 'T'); "
                            "PERFORM tenq.submit('txq', 'txq1', 'T'); EXCEPTION WHEN SQLSTATE "
                            "'TQ429' THEN RAISE NOTICE 'refused'; END $$;", check=False)
        self.assertEqual(rc, 0, err)
        self.assertIn("refused", err)
        # within the quota, a transaction's job is made
        q1(self.db, "BEGIN; SELECT tenq.submit('txq', 'txq1', 'T'); COMMIT;")
        self.settle()
        self.assertEqual(len(self.lease("txq1")), 3)

    def test_concurrency_keys_arrive_checked_as_the_server_checks_them(self):
        jid = int(q1(self.db, "SELECT tenq.submit('acme', 'txk', 'T', concurrency_keys => "
                              "'[{\"key\": \"acct:1\", \"limit\": 1}, \"user:2\"]')"))
        many = q1(self.db, "SELECT tenq.submit_many('[{\"tenant\":\"acme\",\"queue\":\"txk\","
                           "\"type\":\"T\",\"concurrency_keys\":[{\"key\":\"acct:1\","
                           "\"limit\":1}]}]')")
        other = int(many.strip("{}"))
        self.settle()
        self.assertEqual(self.srv.job(jid)["concurrency_keys"],
                         [{"key": "acct:1", "limit": 1}, {"key": "user:2"}])
        got = self.lease("txk", wait_ms=5000)
        self.assertEqual([j["id"] for j in got], [jid])  # the key lets one run
        w = self.srv.job(other)["waiting"]
        self.assertEqual((w["reason"], w["key"], w["held_by"]), ("concurrency_key", "acct:1", jid))
        for keys, want in (("[{\"key\": \"a\", \"limit\": 0}]",
                            "concurrency_keys[0].limit must be an integer from 1 to 1000000"),
                           ("[\"a\", \"b\", \"c\", \"d\", \"e\"]",
                            "concurrency_keys: a job names at most 4 concurrency keys, not 5"),
                           ("[\"a\", \"a\"]", "concurrency_keys[1].key: the job names key"),
                           ("[\"%s\"]" % ("k" * 257),
                            "concurrency_keys[0].key: 1-256 bytes without control characters"),
                           ("[{\"key\": \"a\", \"lim\": 2}]",
                            "concurrency_keys[0]: unknown field \"lim\"")):
            rc, _, err = psql(self.db, "SELECT tenq.submit('acme', 'txk', 'T', concurrency_keys "
                                       "=> '%s')" % keys, check=False)
            self.assertNotEqual(rc, 0)
            self.assertIn(want, err)
            rc, _, err = psql(self.db, "SELECT tenq.submit_many('[{\"tenant\":\"acme\","
                                       "\"queue\":\"txk\",\"type\":\"T\","
                                       "\"concurrency_keys\":%s}]')" % keys, check=False)
            self.assertNotEqual(rc, 0)
            self.assertIn("job 0: " + want, err)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")

    def test_rate_keys_arrive_checked_against_their_settings_too(self):
        self.srv.ok("PUT", "/v1/key-settings", {"tenant": "acme", "key": "api:*", "rate": 5,
                                                 "rate_burst": 2})
        jid = int(q1(self.db, "SELECT tenq.submit('acme', 'txr', 'T', rate_keys => "
                              "'[{\"key\": \"api:1\", \"cost\": 2}, {\"key\": \"own\", "
                              "\"rate\": 3, \"rate_period_ms\": 60000}]')"))
        self.settle()
        self.assertEqual(self.srv.job(jid)["rate_keys"],
                         [{"key": "api:1", "cost": 2},
                          {"key": "own", "cost": 1, "rate": 3, "rate_period_ms": 60000}])
        for keys, want in (("[{\"key\": \"api:1\", \"cost\": 3}]",
                            "rate_keys[0].cost: a start of cost 3 can never fit the burst of 2 "
                            "that key api:1's setting (api:*) gives it"),
                           ("[{\"key\": \"a\", \"cost\": 4, \"rate\": 3}]",
                            "rate_keys[0].cost: a start of cost 4 can never fit the key's burst "
                            "of 3"),
                           ("[{\"key\": \"a\", \"rate_burst\": 3}]",
                            "rate_keys[0].rate is required with rate_period_ms or rate_burst"),
                           ("[{\"key\": \"a\", \"cost\": 0}]",
                            "rate_keys[0].cost must be an integer from 1 to 1000000")):
            rc, _, err = psql(self.db, "SELECT tenq.submit('acme', 'txr', 'T', rate_keys => "
                                       "'%s')" % keys, check=False)
            self.assertNotEqual(rc, 0)
            self.assertIn(want, err)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")

    def test_expiry_and_debounce_arrive_checked_as_the_server_checks_them(self):
        self.srv.ok("PUT", "/v1/queues/txd", {"paused": True})
        x = int(q1(self.db, "SELECT tenq.submit('acme', 'txd', 'T', start_within_ms => 600000)"))
        d = int(q1(self.db, "SELECT tenq.submit('acme', 'txd', 'T', key => 'doc', "
                            "args => '{\"v\": 1}', debounce_ms => 60000)"))
        self.settle()
        d2 = int(q1(self.db, "SELECT (tenq.submit_many('[{\"tenant\":\"acme\",\"queue\":"
                             "\"txd\",\"type\":\"T\",\"key\":\"doc\",\"args\":{\"v\":2},"
                             "\"debounce_ms\":60000}]'))[1]"))
        self.settle()
        xj = self.srv.job(x)
        self.assertEqual(xj["expire_at"] // 1000, (xj["created_at"] + 600000) // 1000)
        self.assertEqual(self.srv.job(d)["args"], {"v": 2})  # the later one replaced it
        self.assertEqual((self.srv.job(d2)["state"], self.srv.job(d2)["merged_into"]), ("merged", d))
        for call, want in (("debounce_ms => 100", "debounce_ms needs a key"),
                           ("key => 'k', debounce_ms => 100, debounce_max_ms => 50",
                            "debounce_max_ms must be from debounce_ms to 7 days"),
                           ("expire_at => now(), start_within_ms => 10",
                            "give expire_at or start_within_ms, not both")):
            rc, _, err = psql(self.db, "SELECT tenq.submit('acme', 'txd', 'T', %s)" % call,
                              check=False)
            self.assertNotEqual(rc, 0)
            self.assertIn(want, err)

    def test_a_jobs_own_timeout_arrives_and_the_server_times_the_attempt_out(self):
        self.srv.ok("PUT", "/v1/queues/txt", {"lease_ms": 1500})
        # checked against the queue's lease: a third of 1500 ms is 500
        rc, _, err = psql(self.db, "SELECT tenq.submit('acme', 'txt', 'T', timeout_ms => 400)",
                          check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("timeout_ms must be from a third of the queue's lease (500 ms", err)
        # with SQLSTATE 22023, as every bad argument
        self.assertEqual(q1(self.db, "DO $$ BEGIN PERFORM tenq.submit('acme', 'txt', 'T', "
                                     "timeout_ms => 400); EXCEPTION WHEN SQLSTATE '22023' THEN "
                                     "RAISE NOTICE 'refused'; END $$; SELECT 'ok'"), "ok")
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")
        # 3 s: the start below must come within it, on a busy machine too
        jid = int(q1(self.db, "SELECT tenq.submit('acme', 'txt', 'T', max_attempts => 1, "
                              "timeout_ms => 3000)"))
        many = q1(self.db, "SELECT tenq.submit_many('[{\"tenant\":\"acme\",\"queue\":\"txt\","
                           "\"type\":\"U\",\"timeout_ms\":900}]')")
        other = int(many.strip("{}"))
        self.settle()
        self.assertEqual(self.srv.job(jid)["timeout_ms"], 3000)
        self.assertEqual(self.srv.job(other)["timeout_ms"], 900)
        # taken in: now a long lease, so that only the job's timeout ends the
        # attempt, however far apart the heartbeats come
        self.srv.ok("PUT", "/v1/queues/txt", {"lease_ms": 60000})
        t0 = time.time()
        got = self.lease("txt", wait_ms=5000, max=1)
        self.assertEqual([j["id"] for j in got], [jid])
        self.srv.ok("POST", "/v1/jobs/%d/start" % jid, {"token": got[0]["token"]})
        deadline = t0 + 30
        while time.time() < deadline:
            # heartbeats keep the lease; the job's own timeout ends the attempt anyway
            self.srv.req("POST", "/v1/jobs/%d/heartbeat" % jid, {"token": got[0]["token"]})
            job = self.srv.job(jid)
            if job["state"] == "dead":
                break
            time.sleep(0.1)
        self.assertEqual(job["state"], "dead")
        self.assertGreaterEqual(time.time() - t0, 2.9)  # not before its timeout
        att = self.srv.ok("GET", "/v1/jobs/%d/attempts" % jid)["attempts"]
        self.assertEqual([a["outcome"] for a in att], ["timed_out"])


def psql_script(url, sql):
    """A psql process running sql (many transactions), started now."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(sql)
    p = subprocess.Popen(["psql", url, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-f", f.name],
                         stdout=subprocess.PIPE, text=True)
    p.script = f.name
    return p


def finish(p):
    """The output lines of a psql_script, once it ended well."""
    out = p.communicate()[0]
    os.unlink(p.script)
    assert p.returncode == 0, "psql failed: %s" % out
    return out.split()


class Notifications(unittest.TestCase):
    """A transaction notifies the leader only while it is not reading the
    inbox already (tenq.inbox_hot, schema 15). The servers here poll the
    inbox every 10 minutes: a job that came with no notification and that
    the leader did not read for itself would wait that long."""

    def setUp(self):
        if not os.environ.get("TENQ_TEST_PG_URL"):
            self.fail("needs PostgreSQL: run under tests/with-pg.sh")
        self.srv = Server(store_url=harness.pg_url_for_new_database(),
                          args=["--inbox-poll", "10m"])
        self.db = self.srv.store_url

    def tearDown(self):
        self.srv.cleanup()

    def leased_within(self, queue, ids, seconds):
        seen, deadline = set(), time.time() + seconds
        while ids - seen and time.time() < deadline:
            seen |= {j["id"] for j in self.srv.lease([queue], max=100, wait_ms=200)}
        self.assertEqual(ids - seen, set(), "not leased within %s s" % seconds)

    def test_a_transaction_that_saw_the_leader_reading_is_taken_in_when_it_commits_late(self):
        # two applications keep the leader reading: it sets the flag
        stream = "".join("BEGIN; SELECT tenq.submit('acme', 'txs', 'T'); COMMIT;\n"
                         for _ in range(3000))
        apps = [psql_script(self.db, stream) for _ in range(2)]
        # transactions that take their id now and commit 0.4 s later, when
        # the stream may be over and the leader idle
        late = []
        for _ in range(25):
            late.append(psql_script(self.db, (
                "BEGIN; SELECT tenq.submit('acme', 'txlate', 'T'); "
                "SELECT last_value FROM tenq.inbox_hot; SELECT pg_sleep(0.4); COMMIT;")))
            time.sleep(0.03)
        for p in apps:
            finish(p)
        outs = [finish(p) for p in late]
        saw_hot = [int(o[0]) for o in outs if o[1] == "1"]
        self.assertTrue(saw_hot, "no transaction saw the leader reading: %s" % outs)
        self.leased_within("txlate", {int(o[0]) for o in outs}, 5)
        # the stream is taken in whole, and the leader goes back to notifications
        deadline = time.time() + 5
        while time.time() < deadline and (
                q1(self.db, "SELECT count(*) FROM tenq.inbox") != "0" or
                q1(self.db, "SELECT last_value FROM tenq.inbox_hot") != "0"):
            time.sleep(0.02)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.inbox"), "0")
        self.assertEqual(q1(self.db, "SELECT last_value FROM tenq.inbox_hot"), "0")
        self.assertEqual(self.srv.ok("GET", "/v1/queues/txs")["ready"], 6000)
        one = int(q1(self.db, "SELECT tenq.submit('acme', 'txone', 'T')"))
        self.leased_within("txone", {one}, 2)

    def test_a_leader_that_died_reading_leaves_the_flag_to_the_next_which_clears_it(self):
        self.srv.kill()
        # as a leader killed while it read leaves it: set, so that commits
        # meanwhile send nothing
        q1(self.db, "SELECT setval('tenq.inbox_hot', 1, true)")
        before = int(q1(self.db, "BEGIN; SELECT tenq.submit('acme', 'txk', 'T'); COMMIT;"))
        self.srv.start()
        self.leased_within("txk", {before}, 5)
        deadline = time.time() + 5
        while time.time() < deadline and q1(
                self.db, "SELECT last_value FROM tenq.inbox_hot") != "0":
            time.sleep(0.02)
        self.assertEqual(q1(self.db, "SELECT last_value FROM tenq.inbox_hot"), "0")
        after = int(q1(self.db, "BEGIN; SELECT tenq.submit('acme', 'txk', 'T'); COMMIT;"))
        self.leased_within("txk", {after}, 2)


class Complete(TxTest):
    def setUp(self):
        super().setUp()
        self.srv.ok("PUT", "/v1/queues/xo", {"delivery": "exactly-once", "lease_ms": 60000})

    def leased(self):
        self.srv.submit(queue="xo")
        return self.lease("xo", wait_ms=5000)[0]

    def test_completed_with_the_applications_writes_and_never_delivered_again(self):
        j = self.leased()
        psql(self.db, "BEGIN; INSERT INTO biz (note, job) VALUES ('done', %d); "
                      "SELECT tenq.complete(%d, %d, '{\"rows\": 3}'); COMMIT;"
             % (j["id"], j["id"], j["token"]))
        self.settle()
        got = self.srv.job(j["id"])
        self.assertEqual((got["state"], got["result"]), ("succeeded", {"rows": 3}))
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz WHERE job = %d" % j["id"]), "1")
        self.assertEqual(self.lease("xo", wait_ms=300), [])
        # the worker's own ack of the same lease, sent as well, is answered as applied
        self.assertEqual(self.srv.req("POST", "/v1/jobs/%d/ack" % j["id"],
                                      {"token": j["token"]})[0], 200)
        # a restart loads it finished
        self.srv.stop()
        self.srv.start()
        self.assertEqual(self.srv.job(j["id"])["state"], "succeeded")
        self.assertEqual(self.lease("xo", wait_ms=300), [])

    def test_a_stale_token_raises_and_the_applications_writes_roll_back(self):
        j = self.leased()
        rc, _, err = psql(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('x'); "
                                   "SELECT tenq.complete(%d, %d); COMMIT;"
                          % (j["id"], j["token"] - 1), check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("is not leased under token", err)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "0")
        self.assertEqual(self.srv.job(j["id"])["state"], "leased")
        # completing twice: the second raises
        psql(self.db, "SELECT tenq.complete(%d, %d)" % (j["id"], j["token"]))
        rc, _, err = psql(self.db, "SELECT tenq.complete(%d, %d)" % (j["id"], j["token"]),
                          check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("not leased", err)

    def test_a_late_completion_after_another_worker_took_the_job_is_refused(self):
        self.srv.ok("PUT", "/v1/queues/xo", {"delivery": "exactly-once", "lease_ms": 500,
                                             "backoff": "fixed", "backoff_base_ms": 0})
        j = self.leased()
        time.sleep(1.0)  # its lease runs out; the job is retried at once
        self.srv.ok("PUT", "/v1/queues/xo", {"lease_ms": 60000})  # for the second lease
        again = self.lease("xo", wait_ms=20000)[0]
        self.assertEqual(again["id"], j["id"])
        self.assertGreater(again["token"], j["token"])
        rc, _, err = psql(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('late'); "
                                   "SELECT tenq.complete(%d, %d); COMMIT;" % (j["id"], j["token"]),
                          check=False)
        self.assertNotEqual(rc, 0)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM biz"), "0")
        # the second holder completes it
        psql(self.db, "SELECT tenq.complete(%d, %d)" % (again["id"], again["token"]))
        self.settle()
        self.assertEqual(self.srv.job(j["id"])["state"], "succeeded")

    def test_an_expired_lease_cannot_be_completed(self):
        self.srv.ok("PUT", "/v1/queues/xo", {"delivery": "exactly-once", "lease_ms": 300})
        j = self.leased()
        time.sleep(0.6)
        rc, _, err = psql(self.db, "SELECT tenq.complete(%d, %d)" % (j["id"], j["token"]),
                          check=False)
        self.assertNotEqual(rc, 0)
        self.assertRegex(err, "expired|not leased")

    def test_a_lease_kept_alive_by_heartbeats_can_be_completed_after_its_first_deadline(self):
        # heartbeats 0.5 s apart keep a 2 s lease (1.5 s to spare on a busy
        # machine, where 0.2 s apart on a 400 ms lease left 0.2 s)
        self.srv.ok("PUT", "/v1/queues/xo", {"delivery": "exactly-once", "lease_ms": 2000})
        j = self.leased()
        for _ in range(6):  # 3 s: past the first deadline
            time.sleep(0.5)
            self.srv.ok("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": j["token"]})
        psql(self.db, "SELECT tenq.complete(%d, %d)" % (j["id"], j["token"]))
        self.settle()
        self.assertEqual(self.srv.job(j["id"])["state"], "succeeded")

    def test_only_an_exactly_once_queues_jobs_can_be_completed_in_a_transaction(self):
        self.srv.submit(queue="plain")
        j = self.lease("plain", wait_ms=5000)[0]
        time.sleep(0.4)  # stored by now (a lease is written 200 ms late on such queues)
        rc, _, err = psql(self.db, "SELECT tenq.complete(%d, %d)" % (j["id"], j["token"]),
                          check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("exactly-once", err)

    def test_a_failure_in_a_transaction_retries_the_job(self):
        j = self.leased()
        psql(self.db, "SELECT tenq.fail(%d, %d, 'no stock', 0)" % (j["id"], j["token"]))
        self.settle()
        again = self.lease("xo", wait_ms=5000)
        self.assertEqual([x["id"] for x in again], [j["id"]])
        got = self.srv.job(j["id"])
        self.assertEqual((got["attempts"], got["error"]), (2, "no stock"))


class SendEvent(TxTest):
    """tenq.send_event: an event sent if and only if the transaction commits,
    taken in once (SEMANTICS.md, "Durable steps")."""

    def park(self, queue, key):
        j = self.srv.submit(queue=queue)
        got = self.lease(queue)[0]
        self.assertEqual(got["id"], j["id"])
        ans = self.srv.ok("POST", "/v1/jobs/%d/steps" % j["id"],
                          {"token": got["token"], "name": "w", "kind": "event", "event": key})
        self.assertTrue(ans["parked"])
        return j

    def test_an_event_committed_with_the_application_wakes_its_job(self):
        j = self.park("ev1", "order-7/paid")
        psql(self.db, "BEGIN; INSERT INTO biz (note) VALUES ('paid');"
                      "SELECT tenq.send_event('acme', 'order-7/paid', '{\"amount\": 120}');"
                      "COMMIT;")
        got = self.lease("ev1", wait_ms=10000)
        self.assertEqual([x["id"] for x in got], [j["id"]])
        steps = self.srv.ok("GET", "/v1/jobs/%d/steps" % j["id"])["steps"]
        self.assertEqual(steps[0]["result"], {"amount": 120})
        self.settle_events()

    def test_a_rolled_back_event_is_never_sent(self):
        j = self.park("ev2", "never")
        psql(self.db, "BEGIN; SELECT tenq.send_event('acme', 'never', '1'); ROLLBACK;")
        # one committed later for another key shows the inbox was read meanwhile
        k = self.park("ev2b", "later")
        psql(self.db, "SELECT tenq.send_event('acme', 'later', '2')")
        self.assertEqual([x["id"] for x in self.lease("ev2b", wait_ms=10000)], [k["id"]])
        self.assertEqual(self.srv.job(j["id"])["state"], "waiting")

    def test_an_event_before_the_wait_is_kept_and_taken_once(self):
        psql(self.db, "SELECT tenq.send_event('acme', 'early', '[1]')")
        self.settle_events()
        j = self.srv.submit(queue="ev3")
        got = self.lease("ev3")[0]
        ans = self.srv.ok("POST", "/v1/jobs/%d/steps" % j["id"],
                          {"token": got["token"], "name": "w", "kind": "event", "event": "early"})
        self.assertEqual((ans["done"], ans["result"]), (True, [1]))

    def test_bad_arguments_raise_and_send_nothing(self):
        for sql, word in [("SELECT tenq.send_event('bad tenant', 'k')", "tenant"),
                          ("SELECT tenq.send_event('acme', '')", "key"),
                          ("SELECT tenq.send_event('acme', NULL)", "key"),
                          ("SELECT tenq.send_event('acme', 'k', to_jsonb(repeat('x', 1100000)))",
                           "payload")]:
            rc, out, err = psql(self.db, sql, check=False)
            self.assertNotEqual(rc, 0, sql)
            self.assertIn("tenq.send_event: " + word, err)
        self.assertEqual(q1(self.db, "SELECT count(*) FROM tenq.event_inbox"), "0")

    def settle_events(self):
        deadline = time.time() + 10
        while time.time() < deadline:
            if q1(self.db, "SELECT count(*) FROM tenq.event_inbox") == "0":
                return
            time.sleep(0.02)
        self.fail("the event inbox was not taken in")


class Takeover(unittest.TestCase):
    def test_jobs_committed_while_the_leader_is_gone_are_taken_in_once_by_the_next(self):
        if not os.environ.get("TENQ_TEST_PG_URL"):
            self.fail("needs PostgreSQL: run under tests/with-pg.sh")
        import cluster
        cl = cluster.Cluster(2)
        try:
            db = cl.store_url
            leader = cl.wait_leader(30)
            cl.kill(leader, signal.SIGSTOP)  # it takes nothing in now
            out = q1(db, "SELECT tenq.submit_many((SELECT jsonb_agg(jsonb_build_object("
                         "'tenant', 'acme', 'queue', 'tko', 'type', 'T', 'args', "
                         "jsonb_build_object('n', g))) FROM generate_series(1, 500) g))")
            ids = sorted(int(x) for x in out.strip("{}").split(","))
            cl.kill(leader, signal.SIGKILL)
            other = cl.wait_leader(30, not_in=(leader,))
            srv = cl.servers[other]
            deadline = time.time() + 20
            while time.time() < deadline and q1(db, "SELECT count(*) FROM tenq.inbox") != "0":
                time.sleep(0.05)
            rows = q1(db, "SELECT id FROM tenq.jobs WHERE queue = 'tko' ORDER BY id")
            self.assertEqual([int(x) for x in rows.split()], ids)  # each once, with its id
            seen = []
            while len(seen) < 500:
                got = srv.lease(["tko"], max=100, wait_ms=2000)
                self.assertTrue(got)
                seen += [j["id"] for j in got]
                srv.ok("POST", "/v1/outcomes",
                       {"outcomes": [{"id": j["id"], "token": j["token"], "ok": True}
                                     for j in got]})
            self.assertEqual(sorted(seen), ids)
        finally:
            cl.cleanup()


if __name__ == "__main__":
    main()
