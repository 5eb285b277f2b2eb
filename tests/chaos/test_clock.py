# SPDX-License-Identifier: Apache-2.0
"""Steps of the wall clock, by libfaketime (Debian's `faketime`), on the
server and on a worker: ±1 h while jobs run and finished jobs wait for
retention, and at a restart. A test rewrites the offset file of a running
process (FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1), and its monotonic
clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC=1), as a real step of the
clock does.

What must hold (docs/SEMANTICS.md, "The clock"): checker.py's counts are
all 0 (nothing acknowledged lost, no job under two valid leases, no stale
ack accepted, every job finished); a job finished on a queue with 30
minutes of retention is still there after +1 h; a stepped worker sends a
bounded number of heartbeats a job a second after +1 h and runs no job
twice after -1 h; after a restart at -1 h a loaded lease expires within
its lease length and a scheduled job runs at its time, not an hour late;
after a restart at +1 h retention deletes nothing early.

Runs on SQLite and on PostgreSQL (under tests/with-pg.sh, which ctest
uses; a missing PostgreSQL is a failure). The worker's part runs once: its
code does not depend on the store.
"""
import collections
import http.client
import http.server
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import cluster  # noqa: E402
from cluster import harness  # noqa: E402
from load import SLOTS, Load  # noqa: E402

HOUR = 3600


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split()


class Clock:
    """The wall clock of the processes started with env(): an offset in
    seconds from the real one, changed while they run."""

    def __init__(self, tmp):
        self.path = os.path.join(tmp, "faketime")
        self.set(0)

    def set(self, seconds):
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write("%+d\n" % seconds)
        os.replace(tmp, self.path)

    def env(self):
        return harness.faketime_env(FAKETIME_TIMESTAMP_FILE=self.path, FAKETIME_NO_CACHE="1")


class CountingProxy:
    """An HTTP/1.1 proxy in front of a server that counts heartbeats by job
    and time (time.monotonic())."""

    def __init__(self, upstream_port):
        self.beats = []  # (job id, t)
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_any(self):
                m = re.match(r"/v1/jobs/(\d+)/heartbeat$", self.path)
                if m:
                    with proxy.lock:
                        proxy.beats.append((int(m.group(1)), time.monotonic()))
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("host", "content-length", "connection")}
                for attempt in range(2):
                    up = getattr(self, "up", None)
                    if up is None:
                        up = self.up = http.client.HTTPConnection("127.0.0.1", upstream_port,
                                                                  timeout=60)
                    try:
                        up.request(self.command, self.path, body=body, headers=hdrs)
                        r = up.getresponse()
                        data = r.read()
                        break
                    except (OSError, http.client.HTTPException):
                        up.close()  # the server closed an idle connection: once more
                        self.up = None
                        if attempt:
                            self.close_connection = True
                            return
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding",
                                         "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_any

            def finish(self):
                if getattr(self, "up", None):
                    self.up.close()
                super().finish()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def rate(self, jobs, t_from, t_to):
        """Heartbeats a job a second, the most of any job of `jobs`."""
        with self.lock:
            n = collections.Counter(j for j, t in self.beats if t_from <= t < t_to and j in jobs)
        return max((n[j] for j in jobs), default=0) / (t_to - t_from)

    def count(self, jobs, t_from):
        with self.lock:
            return sum(1 for j, t in self.beats if t >= t_from and j in jobs)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class ClockBase:
    store = "sqlite"

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tenq-clock-")
        self.clock = Clock(self.tmp)
        if self.store == "sqlite":
            self.store_url = "sqlite:%s/tenq.db" % self.tmp
        else:
            cluster.require_pg()
            self.store_url = harness.pg_url_for_new_database()
        self.srv = None
        self.load = None
        self.procs = []
        self.proxy = None
        self._failed = True

    def tearDown(self):
        if self.load:
            self.load.stop()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if self.proxy:
            self.proxy.close()
        if self.srv:
            if self._failed:
                sys.stderr.write(self.srv.log_text())
            self.srv.kill()
            self.srv.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------
    def serve(self, stepped=True, port=0):
        env = self.clock.env() if stepped else None
        self.srv = harness.Server(self.store_url, env=env, tmp=self.tmp, port=port)
        return self.srv

    def finished_job(self, queue):
        """A job of `queue`, leased and acked now: its id."""
        j = self.srv.submit(tenant="hist", queue=queue)
        got = self.srv.lease(queues=(queue,))
        self.assertEqual([x["id"] for x in got], [j["id"]])
        self.srv.ack(got[0])
        return j["id"]

    def store_has(self, jid):
        """Whether the store holds job jid (read while the server runs)."""
        if self.store == "sqlite":
            c = sqlite3.connect(self.store_url[len("sqlite:"):], timeout=30)
            try:
                return c.execute("SELECT count(*) FROM jobs WHERE id = ?", (jid,)).fetchone()[0] == 1
            finally:
                c.close()
        return cluster.psql(self.store_url,
                            "SELECT count(*) FROM tenq.jobs WHERE id = %d" % jid)[0][0] == "1"

    def rows(self):
        sql = checker.job_rows_sql() % ("" if self.store == "sqlite" else "tenq.")
        if self.store == "sqlite":
            c = sqlite3.connect(self.store_url[len("sqlite:"):], timeout=30)
            try:
                got = [[str(v) for v in r] for r in c.execute(sql)]
            finally:
                c.close()
        else:
            got = cluster.psql(self.store_url, sql)
        return checker.store_rows(got)

    def drain_and_check(self, what):
        """Stops submitting, waits until every job finished, stops the load
        and the server, and checks what the clients saw against the store."""
        self.load.stop_submitting()
        deadline = time.time() + 60
        while time.time() < deadline:
            if cluster.drained(self.srv):
                break
            time.sleep(0.2)
        self.load.stop()
        self.srv.stop()
        self.srv.assert_clean()
        counts, totals, detail = checker.check(self.load.rec, self.rows(), SLOTS)
        sys.stderr.write("\n  %s (%s): %s\n  totals: %s\n" % (what, self.store, counts, totals))
        self.assertEqual(counts, {k: 0 for k in counts}, detail)
        self.assertEqual(self.load.rec.errors, [])
        self.assertGreater(totals["accepted_outcomes"], 100)

    def wait_grants(self, n, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline and len(self.load.rec.grants) < n:
            time.sleep(0.05)
        self.assertGreaterEqual(len(self.load.rec.grants), n)

    def lease_when(self, queue, timeout):
        """Polls for a lease of queue: (the job, monotonic time it came)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.srv.lease(queues=(queue,), wait_ms=100)
            if got:
                return got[0], time.monotonic()
        return None, time.monotonic()

    # -- the server's clock steps while it runs ---------------------------
    def test_server_steps_while_running(self):
        self.serve()
        self.srv.ok("PUT", "/v1/queues/keep", {"retention_ms": 30 * 60 * 1000})
        self.srv.ok("PUT", "/v1/queues/short", {"retention_ms": 1000})
        keep = self.finished_job("keep")
        short = self.finished_job("short")
        url = self.srv.url()
        self.load = Load([url], budget=60)
        self.load.start()
        self.wait_grants(200)
        for offset in (HOUR, 0, -HOUR, 0):
            self.clock.set(offset)
            n = len(self.load.rec.grants)
            self.wait_grants(n + 100)
            time.sleep(1.0)
        # retention runs while the writer is idle: with the clock an hour
        # ahead, the job finished seconds ago on a 30-minute queue stays, the
        # one on a 1-second queue goes (retention did run)
        self.load.stop_submitting()
        self.clock.set(HOUR)
        deadline = time.time() + 20
        while time.time() < deadline and self.store_has(short):
            time.sleep(0.2)
        self.assertFalse(self.store_has(short), "retention never ran")
        self.assertTrue(self.store_has(keep), "a job finished seconds ago was pruned")
        self.assertEqual(self.srv.job(keep)["state"], "succeeded")
        self.drain_and_check("the server's clock stepped +1 h, back, -1 h, back")
        self.assertTrue(self.store_has(keep))
        self._failed = False

    # -- restarts under a stepped clock ------------------------------------
    def test_restart_an_hour_back(self):
        """A dead worker's lease, and a job scheduled 8 s ahead, across a
        restart whose wall clock is an hour behind the one that stopped."""
        self.serve(port=harness.free_port())
        # an expired lease is a failed attempt: retried at once
        self.srv.ok("PUT", "/v1/queues/lq", {"lease_ms": 6000, "backoff": "fixed",
                                              "backoff_base_ms": 1})
        self.srv.ok("PUT", "/v1/queues/later", {"lease_ms": 6000})
        self.load = Load([self.srv.url()], budget=60)
        self.load.start()
        self.wait_grants(200)
        j = self.srv.submit(tenant="t", queue="lq")
        dead = self.srv.lease(queues=("lq",))  # its worker dies: it never reports
        self.assertEqual(dead[0]["id"], j["id"])
        now = self.srv.job(j["id"])["created_at"]  # the server's clock
        sched = self.srv.submit(tenant="t", queue="later", run_at=now + 8000)
        t_due = time.monotonic() + 8.0
        time.sleep(0.5)  # the lease is stored (--lease-write-delay)
        self.srv.stop()  # a clean stop keeps the clock's time
        t_down = time.monotonic()
        self.clock.set(-HOUR)
        self.srv.start()
        t_up = time.monotonic()
        got, t_got = self.lease_when("lq", 30)
        self.assertIsNotNone(got, "the dead worker's job stayed leased")
        self.assertEqual(got["id"], j["id"])
        self.assertGreater(got["token"], dead[0]["token"])
        self.assertLess(t_got - t_up, 6.0 + 1.5, "a loaded lease ran past its length")
        self.srv.ack(got)
        # the scheduled job: on the clock it was scheduled by, which stood
        # still while no server ran
        got, t_got = self.lease_when("later", 20)
        self.assertIsNotNone(got, "the scheduled job did not run within 20 s")
        self.assertEqual(got["id"], sched["id"])
        due = t_due + (t_up - t_down)
        self.assertGreater(t_got, due - 1.5, "the scheduled job ran early")
        self.assertLess(t_got, due + 2.0, "the scheduled job ran late")
        self.srv.ack(got)
        self.assertIn("behind the time the store last knew", self.srv.log_text())
        self.wait_grants(len(self.load.rec.grants) + 100)
        self.drain_and_check("a restart an hour back")
        self._failed = False

    def test_restart_an_hour_ahead(self):
        """Retention across a restart whose wall clock is an hour ahead, and
        leases that run out at once then (retried, never lost)."""
        self.serve(port=harness.free_port())
        self.srv.ok("PUT", "/v1/queues/keep", {"retention_ms": 30 * 60 * 1000})
        self.srv.ok("PUT", "/v1/queues/short", {"retention_ms": 1000})
        keep = self.finished_job("keep")
        short = self.finished_job("short")
        self.load = Load([self.srv.url()], budget=60)
        self.load.start()
        self.wait_grants(200)
        self.srv.kill()  # a crash: the clock's time kept is up to 10 s old
        self.clock.set(HOUR)
        self.srv.start()
        self.wait_grants(len(self.load.rec.grants) + 200)
        self.load.stop_submitting()
        deadline = time.time() + 20
        while time.time() < deadline and self.store_has(short):
            time.sleep(0.2)
        self.assertFalse(self.store_has(short), "retention never ran")
        self.assertTrue(self.store_has(keep), "a job finished seconds ago was pruned")
        self.assertEqual(self.srv.job(keep)["state"], "succeeded")
        self.drain_and_check("a crash and a restart an hour ahead")
        self._failed = False


class ClockSqlite(ClockBase, unittest.TestCase):
    store = "sqlite"

    # -- a worker's clock steps (the store plays no part) --------------------
    def test_worker_steps(self):
        """tenq work under a stepped clock, beside a healthy one: heartbeats
        keep their pace after +1 h, and after -1 h its leases do not lapse
        (no job runs twice)."""
        self.serve(stepped=False)
        # a lapsed lease would be retried at once, by the healthy worker
        self.srv.ok("PUT", "/v1/queues/slow", {"lease_ms": 3000, "backoff": "fixed",
                                                "backoff_base_ms": 1})
        runs = os.path.join(self.tmp, "runs")
        handler = os.path.join(self.tmp, "handler.sh")
        with open(handler, "w") as f:
            f.write("#!/bin/sh\nread -r args\necho \"$TENQ_JOB_ID\" >> %s\nsleep 12\n"
                    "echo '{}'\n" % runs)
        os.chmod(handler, 0o755)
        self.proxy = CountingProxy(self.srv.port)
        # the handler runs on the real clock: only the worker's is stepped
        cmd = ["env", "-u", "LD_PRELOAD", handler]

        def work(url, env, name):
            with open(os.path.join(self.tmp, name + ".log"), "wb") as log:
                p = subprocess.Popen([harness.BIN, "work", "--server", url, "--queue", "slow",
                                      "--concurrency", "4", "--worker-name", name, "--"] + cmd,
                                     env=dict(os.environ, **(env or {})), stdout=log,
                                     stderr=log)
            self.procs.append(p)
            return p

        stepped = work("http://127.0.0.1:%d" % self.proxy.port, self.clock.env(), "stepped")
        ids = [self.srv.submit(tenant="t", queue="slow", args={"n": i})["id"] for i in range(4)]
        deadline = time.time() + 20
        while time.time() < deadline:
            if len(lines(runs)) == 4:
                break
            time.sleep(0.05)
        self.assertEqual(sorted(int(x) for x in lines(runs)), ids)
        healthy = work(self.srv.url(), None, "healthy")  # free to take a lapsed lease
        self.clock.set(HOUR)
        t0 = time.monotonic()
        time.sleep(4.0)
        t1 = time.monotonic()
        rate = self.proxy.rate(set(ids), t0 + 0.5, t1)
        sys.stderr.write("\n  stepped worker: %.2f heartbeats a job a second after +1 h\n" % rate)
        # a third of the lease's 3 s: 1 a second (before, 10: the spacing went negative)
        self.assertLessEqual(rate, 2.0, "heartbeats after +1 h come too fast")
        self.assertGreater(rate, 0.3, "no heartbeats after +1 h")
        self.clock.set(-HOUR)
        t2 = time.monotonic()
        for jid in ids:
            self.srv.req("GET", "/v1/jobs/%d/wait?timeout_ms=30000" % jid)
        after_back = self.proxy.count(set(ids), t2)
        ran = collections.Counter(int(x) for x in lines(runs))
        self.assertEqual(ran, {i: 1 for i in ids}, "a job ran twice")
        sys.stderr.write("  and %d heartbeats of its %d jobs after -1 h\n" % (after_back, len(ids)))
        # a lease of 3 s, jobs of 12 s: the leases stayed alive by heartbeats
        self.assertGreaterEqual(after_back, len(ids) * 2)
        for jid in ids:
            job = self.srv.job(jid)
            self.assertEqual((job["state"], job["attempts"]), ("succeeded", 1))
        for p in (stepped, healthy):
            p.terminate()
            self.assertEqual(p.wait(30), 0)
        for name in ("stepped", "healthy"):
            with open(os.path.join(self.tmp, name + ".log"), errors="replace") as f:
                log = f.read()
            for word in harness.SANITIZER_WORDS:
                self.assertNotIn(word, log, "%s worker: %s" % (name, log[-3000:]))
        self.srv.stop()
        self.srv.assert_clean()
        self._failed = False


class ClockPostgres(ClockBase, unittest.TestCase):
    store = "postgres"


if __name__ == "__main__":
    unittest.main(verbosity=2)
