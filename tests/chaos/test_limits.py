# SPDX-License-Identifier: Apache-2.0
"""Concurrency and rate keys across PostgreSQL takeovers: two servers on
one store, workers leasing and acking keyed jobs while the leader is killed
(kill -9) again and again. After every takeover, once the new leader
serves, no key runs more jobs than its limit (its first leases see the
leases the old leader stored); after the run, the store's record of every
attempt (the jobs' own lease fields and the attempts table) shows no moment
at which a key had more attempts under lease than its limit, and no window
in which a rate key's starts took more units than its rate allows.

Run under tests/with-pg.sh (ctest does); a missing PostgreSQL is a
failure, never a skip. TENQ_CHAOS_ROUNDS scales the rounds."""
import json
import os
import random
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster  # noqa: E402
from cluster import Cluster, get_json, psql  # noqa: E402
from load import Client, GaveUp, Unknown  # noqa: E402

SCALE = max(1, int(os.environ.get("TENQ_CHAOS_ROUNDS", "1")))
SEED = int(os.environ.get("TENQ_CHAOS_SEED", str(int(time.time()))))
TENANT = "kt"
ACCOUNTS = 6  # acct:N, limit 2 by a prefix setting
USERS = 6  # user:N, limit 1 given by the jobs
QUEUES = ("k1", "k2")
RATE, PERIOD_MS, BURST = 10, 1000, 4  # the rate key "api": 10 units a second


def key_limit(key):
    return 2 if key.startswith("acct:") else 1


class KeysAcrossTakeovers(unittest.TestCase):
    def setUp(self):
        cluster.require_pg()
        self.rnd = random.Random(SEED)
        self.c = Cluster(2)
        self.stop = threading.Event()
        self.errors = []

    def tearDown(self):
        self.stop.set()
        if getattr(self, "_failed", True):
            sys.stderr.write("seed %d\n%s\n" % (SEED, self.c.logs()[-8000:]))
        self.c.cleanup()

    def worker(self, name):
        cl = Client(self.c.urls, budget=60, stop=self.stop)
        rnd = random.Random("%d-%s" % (SEED, name))
        while not self.stop.is_set():
            try:
                st, ans = cl.request("POST", "/v1/lease", {"worker": name, "queues": list(QUEUES),
                                                           "max": 2, "wait_ms": 300})
                for j in (ans or {}).get("jobs", []) if st == 200 else []:
                    # long enough that its lease is stored (--lease-write-delay) before
                    # the leader may die: the next leader must count it
                    time.sleep(rnd.uniform(0.05, 0.4))
                    # an ack refused (409: the lease was lost with a leader) is fine
                    cl.request("POST", "/v1/jobs/%d/ack" % j["id"], {"token": j["token"]})
            except (GaveUp, Unknown):
                pass
            except Exception as e:  # noqa: BLE001 (a worker's bug fails the test)
                self.errors.append(repr(e))
                return
        cl.close()

    def keys_now(self, i):
        st, ans = get_json(self.c.urls[i] + "/v1/keys?tenant=%s&limit=1000" % TENANT, timeout=10)
        self.assertEqual(st, 200, ans)
        return ans["keys"]

    def test_no_key_goes_over_its_limit_across_leader_kills(self):
        cl = Client(self.c.urls, budget=60)
        st, _ = cl.request("PUT", "/v1/key-settings",
                           {"tenant": TENANT, "key": "acct:*", "concurrency": 2})
        self.assertEqual(st, 200)
        for q in QUEUES:  # a lease lost with a leader comes back within 2 s
            self.assertEqual(cl.request("PUT", "/v1/queues/" + q, {"lease_ms": 2000})[0], 200)
        total = 0
        for b in range(3):
            jobs = []
            for _ in range(100):
                keys = [{"key": "acct:%d" % self.rnd.randrange(ACCOUNTS)}]
                if self.rnd.random() < 0.5:
                    keys.append({"key": "user:%d" % self.rnd.randrange(USERS), "limit": 1})
                job = {"tenant": TENANT, "queue": self.rnd.choice(QUEUES),
                       "type": self.rnd.choice(("A", "B")), "concurrency_keys": keys}
                if self.rnd.random() < 0.5:
                    job["rate_keys"] = [{"key": "api", "cost": self.rnd.choice((1, 2)),
                                         "rate": RATE, "rate_period_ms": PERIOD_MS,
                                         "rate_burst": BURST}]
                jobs.append(job)
            st, ans = cl.request("POST", "/v1/jobs", {"jobs": jobs})
            self.assertEqual(st, 201, ans)
            total += len(jobs)
        threads = [threading.Thread(target=self.worker, args=("w%d" % i,), daemon=True)
                   for i in range(6)]
        for t in threads:
            t.start()
        takeovers = 0
        for _ in range(3 * SCALE):
            time.sleep(self.rnd.uniform(0.6, 1.5))
            old = self.c.leader()
            if old is None:
                continue
            self.c.kill(old)
            new = self.c.wait_leader(30, not_in=(old,))
            takeovers += 1
            # from the new leader's first leases on: no key past its limit
            for _ in range(20):
                for k in self.keys_now(new):
                    if k["key"] == "api":  # the rate key: no concurrency limit
                        self.assertEqual(k["limit"], None, k)
                        continue
                    self.assertLessEqual(k["active"], k["limit"], k)
                    self.assertEqual(k["limit"], key_limit(k["key"]), k)
                time.sleep(0.02)
            self.c.restart(old)  # a standby now
        # drain
        deadline = time.time() + 120
        done = 0
        while time.time() < deadline:
            i = self.c.leader()
            st, ans = get_json(self.c.urls[i] + "/v1/stats", timeout=10) if i is not None else (0, None)
            if st == 200:
                t = ans["totals"]
                done = t["ready"] + t["leased"] + t["running"] + t["scheduled"]
                if done == 0:
                    break
            time.sleep(0.2)
        self.stop.set()
        for t in threads:
            t.join(60)
        self.assertEqual(self.errors, [])
        self.assertEqual(done, 0, "jobs left unfinished")
        self.assertGreaterEqual(takeovers, 2)
        self.check_store(total)
        self._failed = False

    def check_store(self, total):
        """Every attempt's lease interval, from the store: at no moment more
        of a key's attempts under lease than its limit."""
        url = self.c.store_url
        rows = psql(url, "SELECT id, options, state, leased_at, finished_at FROM tenq.jobs "
                         "WHERE tenant = '%s'" % TENANT)
        self.assertEqual(len(rows), total)
        keys_of, cost_of, spans = {}, {}, []
        for jid, opts, state, leased, finished in rows:
            self.assertEqual(state, "succeeded", (jid, state))
            o = json.loads(opts)
            keys_of[jid] = [k["key"] for k in o["concurrency_keys"]]
            for r in o.get("rate_keys", []):
                cost_of[jid] = r.get("cost", 1)
            spans.append((jid, int(leased), int(finished)))
        for jid, leased, finished in psql(url, "SELECT a.job_id, a.leased_at, a.finished_at FROM "
                                               "tenq.attempts a JOIN tenq.jobs j ON j.id = "
                                               "a.job_id WHERE j.tenant = '%s'" % TENANT):
            spans.append((jid, int(leased), int(finished)))
        events = {}
        for jid, a, b in spans:
            self.assertLessEqual(a, b)
            for k in keys_of[jid]:
                events.setdefault(k, []).extend([(a, 1), (b, -1)])
        for k, ev in events.items():
            ev.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same ms
            n = most = 0
            for _, d in ev:
                n += d
                most = max(most, n)
            self.assertLessEqual(most, key_limit(k), "key %s had %d attempts at once" % (k, most))
        self.assertEqual(len(events), ACCOUNTS + USERS)
        # the rate key: in any window of W ms, at most BURST + W / T units started
        starts = sorted((a, cost_of[jid]) for jid, a, _ in spans if jid in cost_of)
        self.assertGreater(len(starts), 50)
        t_ms = PERIOD_MS / RATE
        for w in (PERIOD_MS // 4, PERIOD_MS, 3 * PERIOD_MS):
            lo = units = 0
            for hi in range(len(starts)):
                units += starts[hi][1]
                while starts[lo][0] <= starts[hi][0] - w:
                    units -= starts[lo][1]
                    lo += 1
                self.assertLessEqual(units, BURST + w / t_ms,
                                     "rate key api: %d units in %d ms" % (units, w))


if __name__ == "__main__":
    unittest.main(verbosity=2)
