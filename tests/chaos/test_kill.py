# SPDX-License-Identifier: Apache-2.0
"""One server killed with kill -9 under load, again and again, and
restarted on the same store each time: the load (load.py: keyed, unkeyed
and batched submits, a laned queue, a slotted tenant, at-most-once jobs,
jobs of durable steps with sleeps and event waits, workers reporting with
their next lease) goes on through every round, then drains; checker.py's
counts (check and check_steps) must all be 0. On SQLite (the same file) and on
PostgreSQL (one server alone: no standby takes over, the restart leads
again; test_cluster.py kills leaders that standbys replace).

Run under tests/with-pg.sh (ctest does). TENQ_CHAOS_ROUNDS scales the
rounds (1: the bounded form `make test` runs; `make chaos` runs more).
"""
import os
import random
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import cluster  # noqa: E402
from cluster import drained, get_json, harness, steps_rows, store_rows  # noqa: E402
from load import SLOTS, Load  # noqa: E402

SCALE = max(1, int(os.environ.get("TENQ_CHAOS_ROUNDS", "1")))
SEED = int(os.environ.get("TENQ_CHAOS_SEED", str(int(time.time()))))


class KillTest(unittest.TestCase):
    def setUp(self):
        self.rnd = random.Random(SEED)
        self.tmp = tempfile.mkdtemp(prefix="tenq-kill-")
        self.srv = self.load = None

    def tearDown(self):
        if self.load:
            self.load.stop()
        if self.srv:
            if getattr(self, "_failed", True):
                sys.stderr.write(self.srv.log_text()[-6000:] + "\n")
            self.srv.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def killed(self, store, rounds):
        port = harness.free_port()  # the restart listens where the clients look
        if store == "postgres":
            cluster.require_pg()
            # alone on its store, a restart waits out the dead leader's TTL
            self.srv = harness.Server(store_url=harness.pg_url_for_new_database(), port=port,
                                      args=["--leader-ttl", "1s"])
        else:
            self.srv = harness.Server(store_url="sqlite:%s/tenq.db" % self.tmp, port=port)
        url = self.srv.url()
        self.load = Load([url], workers=4, rate=10)
        self.load.start()
        deadline = time.time() + 30
        while time.time() < deadline and len(self.load.rec.grants) < 200:
            time.sleep(0.05)
        back = []
        for _ in range(rounds):
            time.sleep(self.rnd.uniform(0.5, 1.5))
            grants = len(self.load.rec.grants)
            self.srv.kill()  # kill -9
            t0 = time.monotonic()
            self.srv.start()
            while get_json(url + "/readyz")[0] != 200:
                self.assertLess(time.monotonic() - t0, 30, self.srv.log_text())
                time.sleep(0.01)
            back.append(time.monotonic() - t0)
            # the load goes on: work is handed out again after each restart
            deadline = time.time() + 30
            while time.time() < deadline and len(self.load.rec.grants) < grants + 50:
                time.sleep(0.05)
            self.assertGreaterEqual(len(self.load.rec.grants), grants + 50)
        self.load.wait_submitters()  # (a submit retried through a restart lands late)
        deadline = time.time() + 120
        while time.time() < deadline and not drained(self.srv):
            time.sleep(0.2)
        self.load.stop()
        self.srv.stop()
        rows = store_rows(self.srv, store)
        counts, totals, detail = checker.check(self.load.rec, rows, SLOTS)
        scounts, stotals, sdetail = checker.check_steps(self.load.rec, *steps_rows(self.srv, store))
        counts.update(scounts)
        totals.update(stotals)
        detail.update(sdetail)
        back.sort()
        sys.stderr.write(
            "\n  %s, %d kill -9 and restarts (seed %d): %s\n  totals: %s\n  ready again "
            "after the kill, s: median %.3f, max %.3f; outcomes accepted when sent again "
            "after their answer was lost: %d\n" % (
                store, rounds, SEED, counts, totals, back[len(back) // 2], back[-1],
                self.load.rec.after_loss))
        self.assertEqual(counts, {k: 0 for k in counts}, detail)
        self.assertEqual(self.load.rec.errors, [])
        self.assertGreater(totals["accepted_outcomes"], 500)
        self.assertGreater(totals["steps_jobs_succeeded"], 10)
        self.assertGreater(totals["parks"], 10)
        self._failed = False

    def test_one_sqlite_server_killed_under_load_and_restarted_on_its_file(self):
        self.killed("sqlite", 12 * SCALE)

    def test_one_postgres_server_killed_under_load_and_restarted_alone(self):
        self.killed("postgres", 6 * SCALE)


if __name__ == "__main__":
    unittest.main(verbosity=2)
