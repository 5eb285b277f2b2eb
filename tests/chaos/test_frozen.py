# SPDX-License-Identifier: Apache-2.0
"""A frozen worker: a load worker in a process of its own (load.py
worker) is stopped with SIGSTOP while it holds jobs, past their leases,
then continued with SIGCONT. Its late outcomes must be refused (409), its
jobs must have run again under a newer token elsewhere (or, at most once,
have died), and checker.py's counts must all be 0 (no stale ack accepted,
no job held under two valid leases). On SQLite and on PostgreSQL.

Run under tests/with-pg.sh (ctest does). TENQ_CHAOS_ROUNDS scales the
rounds (1: the bounded form `make test` runs; `make chaos` runs more).
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import cluster  # noqa: E402
from cluster import drained, harness, store_rows  # noqa: E402
from load import SLOTS, Load, Record, read_records  # noqa: E402

SCALE = max(1, int(os.environ.get("TENQ_CHAOS_ROUNDS", "1")))
SEED = int(os.environ.get("TENQ_CHAOS_SEED", str(int(time.time()))))
LEASE_S = 3.0  # the load's queues lease for 3 s (load.Load.setup)


class FrozenWorkerTest(unittest.TestCase):
    def setUp(self):
        self.rnd = random.Random(SEED)
        self.tmp = tempfile.mkdtemp(prefix="tenq-frozen-")
        self.srv = self.load = None
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
        if self.load:
            self.load.stop()
        if self.srv:
            if getattr(self, "_failed", True):
                sys.stderr.write(self.srv.log_text()[-6000:] + "\n")
            self.srv.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def frozen(self, store):
        if store == "postgres":
            cluster.require_pg()
            self.srv = harness.Server(store_url=harness.pg_url_for_new_database())
        else:
            self.srv = harness.Server(store_url="sqlite:%s/tenq.db" % self.tmp)
        url = self.srv.url()
        # two workers in this process, two in processes of their own that
        # run each batch up to 200 ms: a SIGSTOP almost always finds jobs
        # in their hands
        # (10 requests a second per submitter: about 340 jobs a second,
        # which the workers drain, the slotted tenant's 3 slots included)
        self.load = Load([url], workers=2, rate=10)
        self.load.start()
        files = [os.path.join(self.tmp, "worker-%d.jsonl" % i) for i in range(2)]
        for i, path in enumerate(files):
            self.procs.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "load.py"), "worker", url, "frozen-%d" % i,
                 path, "200"], stderr=subprocess.DEVNULL))
        deadline = time.time() + 30
        while time.time() < deadline and len(self.load.rec.grants) < 200:
            time.sleep(0.05)
        rounds = 3 * SCALE
        for r in range(rounds):
            p = self.procs[r % 2]
            time.sleep(self.rnd.uniform(0.5, 1.5))
            p.send_signal(signal.SIGSTOP)
            time.sleep(LEASE_S + self.rnd.uniform(1.0, 2.0))  # its leases expire meanwhile
            p.send_signal(signal.SIGCONT)
        time.sleep(1.0)  # the thawed workers report what they held
        self.load.wait_submitters()  # (a submit retried through a restart lands late)
        deadline = time.time() + 120
        while time.time() < deadline and not drained(self.srv):
            time.sleep(0.2)
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(60), 0)
        self.load.stop()
        self.srv.stop()

        own = read_records(files, Record())
        rec = read_records(files, self.load.rec)
        rows = store_rows(self.srv, store)
        counts, totals, detail = checker.check(rec, rows, SLOTS)
        # what the frozen workers were told of their late outcomes, and
        # whether each of those jobs ran again under a newer token
        refused = [(jid, tok) for jid, tok, ok, _, _ in own.outcomes if not ok]
        grants = {}
        for jid, tok, tenant, queue, lane, t, worker in rec.grants:
            grants.setdefault(jid, []).append((tok, worker, queue))
        again = sum(1 for jid, tok in refused
                    if any(t > tok for t, _, _ in grants.get(jid, ())))
        died = sum(1 for jid, tok in refused if rows.get(jid, {}).get("state") == "dead" and
                   not any(t > tok for t, _, _ in grants.get(jid, ())))
        sys.stderr.write(
            "\n  %s, %d freezes of %.0f s+ (seed %d): %s\n  totals: %s\n  the frozen workers' "
            "late outcomes refused: %d (ran again under a newer token: %d, at most once and "
            "dead: %d); their outcomes accepted: %d\n" % (
                store, rounds, LEASE_S + 1, SEED, counts, totals, len(refused), again, died,
                sum(1 for o in own.outcomes if o[2])))
        self.assertEqual(counts, {k: 0 for k in counts}, detail)
        self.assertEqual(rec.errors, [])
        self.assertGreater(len(refused), 0)  # a freeze past the lease met held jobs
        refused_answers = [o[4] for o in own.outcomes if not o[2]]
        for a in refused_answers:
            self.assertEqual((a["error"]["code"], a["error"]["field"]), ("conflict", "token"), a)
        self.assertEqual(again + died, len(refused), (refused, grants))
        self.assertGreater(totals["accepted_outcomes"], 500)
        self._failed = False

    def test_a_worker_frozen_past_its_leases_on_sqlite(self):
        self.frozen("sqlite")

    def test_a_worker_frozen_past_its_leases_on_postgres(self):
        self.frozen("postgres")


if __name__ == "__main__":
    unittest.main(verbosity=2)
