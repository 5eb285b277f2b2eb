# SPDX-License-Identifier: Apache-2.0
"""Several servers on one PostgreSQL, broken under load: the leader killed
(kill -9), paused past its TTL (SIGSTOP), cut off (pg_terminate_backend),
stopped (SIGTERM); PostgreSQL itself restarted in immediate mode. After
each run, checker.py counts what must never happen; every count is 0.

Run under tests/with-pg.sh (ctest does). TENQ_CHAOS_ROUNDS scales the
rounds (1: the bounded form `make test` runs; `make chaos` runs more).
"""
import os
import random
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import cluster  # noqa: E402
from cluster import Cluster, get_json, psql  # noqa: E402
from load import SLOTS, Client, Load  # noqa: E402

SCALE = max(1, int(os.environ.get("TENQ_CHAOS_ROUNDS", "1")))
SEED = int(os.environ.get("TENQ_CHAOS_SEED", str(int(time.time()))))


def db_of(url):
    return url


class ChaosTest(unittest.TestCase):
    def setUp(self):
        cluster.require_pg()
        self.rnd = random.Random(SEED)
        self.cl = None
        self.load = None

    def tearDown(self):
        if self.load:
            self.load.stop()
        if self.cl:
            if self._outcome_failed():
                sys.stderr.write(self.cl.logs()[-12000:] + "\n")
            self.cl.cleanup()

    def _outcome_failed(self):
        res = getattr(self, "_outcome", None)
        result = getattr(res, "result", None)
        return bool(getattr(res, "errors", None) or getattr(result, "errors", None) or
                    getattr(result, "failures", None))

    # -- the parts every run shares ---------------------------------------------------
    def start(self, n, args=()):
        self.cl = Cluster(n, args=list(args))
        self.load = Load(self.cl.urls)
        self.load.start()
        self.wait_for(lambda: len(self.load.rec.grants) > 100, 30, "work to flow")

    def wait_for(self, cond, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            time.sleep(0.05)
        self.fail("timed out waiting for %s\n%s" % (what, self.cl.logs()[-6000:]))

    def unfinished(self):
        return int(psql(self.cl.store_url, "SELECT count(*) FROM tenq.jobs WHERE state NOT IN "
                                           "('succeeded', 'cancelled', 'merged', 'dead')")[0][0])

    def finish(self, label):
        """Stops the submits, lets the workers finish every job, then counts."""
        self.load.stop_submitting()
        self.cl.wait_leader(30)
        deadline = time.time() + 120
        while time.time() < deadline and self.unfinished() > 0:
            time.sleep(0.2)
        self.load.stop()
        rows = checker.store_rows(psql(self.cl.store_url, checker.job_rows_sql() % "tenq."))
        counts, totals, detail = checker.check(self.load.rec, rows, SLOTS)
        scounts, stotals, sdetail = checker.check_steps(
            self.load.rec, checker.step_rows(psql(self.cl.store_url, checker.step_rows_sql() % "tenq.")),
            psql(self.cl.store_url, checker.steps_job_rows_sql() % "tenq."))
        counts.update(scounts)
        totals.update(stotals)
        detail.update(sdetail)
        sys.stderr.write("\n  %s (seed %d): %s\n  totals: %s\n" % (label, SEED, counts, totals))
        self.assertEqual(counts, {k: 0 for k in counts}, "%s\n%s" % (detail, self.load.rec.errors[:5]))
        self.assertEqual(self.load.rec.errors, [])
        self.assertGreater(totals["submits"], 500)
        self.assertGreater(totals["accepted_outcomes"], 500)
        self.assertGreater(totals["steps_jobs_succeeded"], 10)
        return totals

    # -- the runs ---------------------------------------------------------------------
    def kill_leaders(self, n, kills):
        self.start(n)
        takeovers = []
        for _ in range(kills):
            time.sleep(self.rnd.uniform(0.2, 1.0))
            i = self.cl.wait_leader(30)
            t0 = time.monotonic()
            self.cl.kill(i)
            self.cl.wait_leader(30, not_in=(i,))
            takeovers.append(time.monotonic() - t0)
            self.cl.restart(i)
        takeovers.sort()
        sys.stderr.write("\n  takeover after kill -9, s: median %.3f, max %.3f\n" %
                         (takeovers[len(takeovers) // 2], takeovers[-1]))
        self.finish("%d servers, %d kills" % (n, kills))
        # with the standbys' campaign every 200 ms and a small store, a
        # takeover is well inside a second
        self.assertLess(takeovers[len(takeovers) // 2], 1.0)

    def test_two_servers_the_leader_killed_again_and_again(self):
        self.kill_leaders(2, 10 * SCALE)

    def test_three_servers_the_leader_killed_20_times(self):
        self.kill_leaders(3, 20 * SCALE)

    def test_a_leader_paused_past_its_ttl_is_replaced_and_writes_nothing_after(self):
        self.start(2, args=["--leader-ttl", "2s"])
        for _ in range(2 * SCALE):
            old = self.cl.wait_leader(30)
            term = self.cl.health(old)["term"]
            self.cl.kill(old, signal.SIGSTOP)
            t0 = time.monotonic()
            new = self.cl.wait_leader(30, not_in=(old,))
            took = time.monotonic() - t0
            self.assertLess(took, 2 + 1.5)  # the TTL and a campaign
            new_term = get_json(self.cl.urls[new] + "/healthz")[1]["term"]
            self.assertGreater(new_term, term)
            self.cl.kill(old, signal.SIGCONT)
            # at once: the old one refuses to write (its leadership lapsed
            # while it slept), then knows it is a standby
            st, body = self.cl.servers[old].req("POST", "/v1/jobs",
                                                {"tenant": "x", "queue": "q", "type": "T"})
            self.assertIn(st, (307, 503), body)
            self.wait_for(lambda: self.cl.health(old).get("role") == "standby", 10, "standby")
            # no row carries a token of the old term granted after the new one began
            late = psql(self.cl.store_url,
                        "SELECT count(*) FROM tenq.jobs WHERE lease_token >> 32 = %d AND "
                        "lease_token >> 32 < %d AND leased_at > (SELECT elected_at FROM "
                        "tenq.leader)" % (term, new_term))
            self.assertEqual(late[0][0], "0")
            time.sleep(0.5)
        self.finish("SIGSTOP past the TTL")

    def test_a_leader_whose_connections_are_ended_steps_down_or_takes_over_again(self):
        self.start(2)
        for _ in range(3 * SCALE):
            time.sleep(self.rnd.uniform(0.3, 1.0))
            i = self.cl.wait_leader(30)
            ended = self.cl.terminate_backends(self.cl.node(i))
            self.assertNotEqual(ended, "0")
            self.cl.wait_leader(5)
        self.finish("pg_terminate_backend on the leader")

    def test_postgresql_restarted_under_load_serves_again_within_2s(self):
        self.start(2)
        back = []
        for _ in range(10 * SCALE):
            time.sleep(self.rnd.uniform(0.3, 1.0))
            cluster.pgctl("crash")
            time.sleep(self.rnd.uniform(0.5, 2.0))
            # reads that need only memory go on while it is away
            i = next(k for k in range(2) if self.cl.health(k).get("role") == "leader")
            st, _ = get_json(self.cl.urls[i] + "/v1/stats")
            self.assertEqual(st, 200)
            cluster.pgctl("resume")
            t0 = time.monotonic()
            self.cl.wait_leader(10)
            back.append(time.monotonic() - t0)
        back.sort()
        sys.stderr.write("\n  serving again after PostgreSQL is back, s: median %.3f, max %.3f\n"
                         % (back[len(back) // 2], back[-1]))
        self.assertLess(back[-1], 2.0)
        self.finish("PostgreSQL restarted %d times" % len(back))

    def test_a_leader_stopped_with_sigterm_hands_over_at_once(self):
        self.start(2)
        for _ in range(3 * SCALE):
            time.sleep(self.rnd.uniform(0.3, 1.0))
            i = self.cl.wait_leader(30)
            t0 = time.monotonic()
            self.cl.kill(i, signal.SIGTERM)
            self.assertEqual(self.cl.servers[i].proc.returncode, 0)
            self.cl.wait_leader(30, not_in=(i,))
            self.assertLess(time.monotonic() - t0, 1.5)
            self.cl.restart(i)
        totals = self.finish("SIGTERM handovers")
        # a clean stop keeps every lease it granted: no worker's outcome is
        # refused, no job runs twice
        self.assertEqual(totals["refused_outcomes"], 0)
        self.assertEqual(totals["unknown_submits"], 0)


class StandbyTest(unittest.TestCase):
    """What a standby answers, and clients that find the leader."""

    @classmethod
    def setUpClass(cls):
        cluster.require_pg()
        cls.cl = Cluster(2)
        cls.leader = cls.cl.wait_leader(30)
        cls.standby = 1 - cls.leader

    @classmethod
    def tearDownClass(cls):
        cls.cl.cleanup()

    def test_health_readiness_and_the_leaders_address(self):
        cl, ld, sb = self.cl, self.leader, self.standby
        st, h = get_json(cl.urls[sb] + "/healthz")
        self.assertEqual(st, 200)
        self.assertEqual((h["role"], h["leader"], h["advertise"]),
                         ("standby", cl.urls[ld], cl.urls[sb]))
        self.assertEqual(get_json(cl.urls[sb] + "/readyz")[0], 503)
        st, h = get_json(cl.urls[ld] + "/healthz")
        self.assertEqual((st, h["role"], h["leader"]), (200, "leader", cl.urls[ld]))
        self.assertGreater(h["term"], 0)
        self.assertEqual(get_json(cl.urls[ld] + "/readyz")[0], 200)

    def test_a_standby_redirects_every_api_request_to_the_leader(self):
        cl, ld, sb = self.cl, self.leader, self.standby
        srv = cl.servers[sb]
        for method, path, body in [("POST", "/v1/jobs", {"tenant": "a", "queue": "q", "type": "T"}),
                                   ("GET", "/v1/stats?x=1", None), ("GET", "/", None),
                                   ("POST", "/v1/lease", {"queues": ["q"]})]:
            st, ans, hdrs = srv.raw(method, path, body)
            self.assertEqual(st, 307, path)
            self.assertEqual(hdrs.get("Tenq-Leader"), cl.urls[ld])
            self.assertEqual(hdrs.get("Location"), cl.urls[ld] + path)
            self.assertEqual((ans["error"]["code"], ans["error"]["leader"]),
                             ("not_leader", cl.urls[ld]))

    def test_the_cli_and_a_client_find_the_leader_from_any_server(self):
        import subprocess
        env = dict(os.environ, TENQ_SERVER="%s,%s" % (self.cl.urls[self.standby],
                                                      self.cl.urls[self.leader]))
        r = subprocess.run([cluster.harness.BIN, "submit", "--tenant", "cli", "--queue", "q",
                            "--type", "T"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        env["TENQ_SERVER"] = self.cl.urls[self.standby]  # only the standby: it names the leader
        r = subprocess.run([cluster.harness.BIN, "stats"], env=env, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        c = Client([self.cl.urls[self.standby]])
        st, ans = c.request("POST", "/v1/jobs", {"tenant": "a", "queue": "q", "type": "T"})
        self.assertEqual(st, 201)
        self.assertEqual(c.urls[c.cur], self.cl.urls[self.leader])
        c.close()


class WorkerTest(unittest.TestCase):
    """`tenq work` (libtenq's worker) and the CLI through takeovers."""

    def test_tenq_work_and_the_cli_follow_takeovers(self):
        import subprocess
        cluster.require_pg()
        cl = Cluster(2)
        servers = ",".join(cl.urls)
        env = dict(os.environ, TENQ_SERVER=servers)
        work = None
        try:
            def cli(*args):
                return subprocess.run([cluster.harness.BIN] + list(args), env=env,
                                      capture_output=True, text=True, timeout=60)
            r = cli("queue", "set", "wq", "--lease", "2s", "--backoff", "fixed",
                    "--backoff-base", "100ms")
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = "".join('{"args": {"n": %d}}\n' % i for i in range(400))
            r = subprocess.run([cluster.harness.BIN, "submit", "--tenant", "w", "--queue", "wq",
                                "--type", "T", "-"], input=lines, env=env, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            work = subprocess.Popen([cluster.harness.BIN, "work", "--queue", "wq",
                                     "--concurrency", "4", "--", "sh", "-c",
                                     "cat >/dev/null; sleep 0.02; echo 1"],
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            for _ in range(3):
                time.sleep(1.0)
                i = cl.wait_leader(30)
                cl.kill(i)
                cl.wait_leader(30, not_in=(i,))
                cl.restart(i)
                # the CLI finds the new leader from the same list
                self.assertEqual(cli("stats").returncode, 0)
            deadline = time.time() + 120
            left = None
            while time.time() < deadline:
                left = psql(cl.store_url, "SELECT count(*) FROM tenq.jobs WHERE queue = 'wq' "
                                          "AND state <> 'succeeded'")[0][0]
                if left == "0":
                    break
                time.sleep(0.3)
            self.assertEqual(left, "0", cl.logs()[-4000:])
            self.assertIsNone(work.poll())  # the worker lived through every takeover
            work.terminate()
            self.assertEqual(work.wait(60), 0, work.stderr.read()[-3000:])
        finally:
            if work and work.poll() is None:
                work.kill()
            cl.cleanup()


class SqliteTest(unittest.TestCase):
    def test_a_second_server_on_one_file_refuses_naming_the_first(self):
        import subprocess
        import tempfile
        tmp = tempfile.mkdtemp(prefix="tenq-one-file-")
        first = cluster.harness.Server(store_url="sqlite:%s/tenq.db" % tmp, tmp=tmp)
        try:
            r = subprocess.run([cluster.harness.BIN, "serve", "--listen", "127.0.0.1:0",
                                "--store", first.store_url], capture_output=True, text=True,
                               timeout=30)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("in use by process %d" % first.proc.pid, r.stderr)
            self.assertIn("one tenq server per SQLite file", r.stderr)
            self.assertEqual(first.req("GET", "/healthz")[0], 200)
        finally:
            first.cleanup()
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
