# SPDX-License-Identifier: Apache-2.0
"""tenq serve as a process: start and stop, --data-dir, the writer thread's
priority, the yield of an idle loop."""
import http.client
import json
import sys
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import STORE, Server, main  # noqa: E402


class Lifecycle(unittest.TestCase):
    def test_sigterm_stops_cleanly_and_data_survives(self):
        srv = Server()
        try:
            r = srv.submit(queue="life")
            self.assertEqual(srv.stop(), 0)
            srv.start()
            self.assertEqual(srv.job(r["id"])["state"], "ready")
        finally:
            srv.cleanup()

    def test_a_stopping_server_answers_what_arrives_on_open_connections(self):
        # A client that sent a request on a kept-alive connection just as the
        # server stopped gets an answer that says nothing was done (and the
        # connection closed), not a reset that leaves it guessing.
        srv = Server()
        try:
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            c.request("GET", "/healthz")
            self.assertEqual(c.getresponse().read() and 200, 200)
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)  # the stop is under way: its work is done, its leadership given up
            c.request("POST", "/v1/jobs", json.dumps({"tenant": "acme", "queue": "linger",
                                                     "type": "T"}),
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            body = json.loads(r.read())
            self.assertEqual(r.status, 503, body)
            self.assertEqual(body["error"]["code"], "not_leader")
            self.assertEqual(r.getheader("Connection"), "close")
            self.assertEqual(srv.proc.wait(10), 0)
            srv.start()
            self.assertEqual(srv.ok("GET", "/v1/jobs?queue=linger")["jobs"], [])
        finally:
            srv.cleanup()

    def test_refuses_an_open_network_without_tokens(self):
        tmp = tempfile.mkdtemp()
        from harness import BIN
        p = subprocess.run([BIN, "serve", "--listen", "0.0.0.0:0", "--store",
                            "sqlite:%s/t.db" % tmp], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("TENQ_ADMIN_TOKEN", p.stderr)

    def test_help_lists_every_setting_and_bad_flags_fail(self):
        from harness import BIN
        p = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        for word in ["--listen", "--store", "TENQ_ADMIN_TOKEN", "--max-batch-bytes",
                     "--header-timeout"]:
            self.assertIn(word, p.stdout)
        p = subprocess.run([BIN, "serve", "--no-such-flag"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        p = subprocess.run([BIN, "serve", "--header-timeout", "soon"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("duration", p.stderr)

    def test_settings_from_a_config_file_and_the_environment(self):
        tmp = tempfile.mkdtemp()
        conf = os.path.join(tmp, "tenq.conf")
        with open(conf, "w") as f:
            f.write("# comment\nmax-wait = 1s\nlog-format = json\n")
        srv = Server(args=("--config", conf), env={"TENQ_DEFAULT_SLOTS": "3"})
        try:
            srv.submit(queue="cfg", tenant="newbie")
            self.assertEqual(srv.ok("GET", "/v1/tenants/newbie")["slots"], 3)
            t0 = time.time()
            srv.lease(["empty"], wait_ms=30000)  # capped at 1 s by the file
            self.assertLess(time.time() - t0, 5)
            self.assertIn('"event":"listen"', srv.log_text())
        finally:
            srv.cleanup()

    def test_wall_clock_jumps_neither_expire_leases_nor_fire_schedules_early(self):
        tmp = tempfile.mkdtemp()
        stamp = os.path.join(tmp, "faketime")
        with open(stamp, "w") as f:
            f.write("+0\n")
        lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        if not os.path.exists(lib):
            self.fail("libfaketime is missing (apt-get install faketime)")
        env = {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": stamp, "FAKETIME_NO_CACHE": "1",
               "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_DONT_RESET": "1",
               # under ASan the preloaded library comes first; that is fine here
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        srv = Server(env=env, tmp=tmp)
        try:
            # 20 s: the heartbeat after the leap comes well within it on a busy
            # machine too; a lease on the wall clock would lapse by two hours
            srv.ok("PUT", "/v1/queues/clock", {"lease_ms": 20000})
            srv.submit(queue="clock")
            later = srv.submit(queue="clock", run_at=int(time.time() * 1000) + 3600 * 1000)
            j = srv.lease(["clock"])[0]
            with open(stamp, "w") as f:
                f.write("+2h\n")  # the wall clock leaps two hours ahead
            time.sleep(1.0)
            hb = srv.req("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": j["token"]})
            self.assertEqual(hb[0], 200, hb)
            self.assertEqual(srv.job(later["id"])["state"], "scheduled")
            srv.ack(j)
        finally:
            srv.cleanup()


class DataDir(unittest.TestCase):
    """--data-dir: where the embedded store lives when --store names none."""
    NO_DIR_ENV = {"TENQ_DATA_DIR": None, "STATE_DIRECTORY": None, "TENQ_STORE": None}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tenq-datadir-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def serve(self, args=(), env=None):
        """A server with no --store, run from self.tmp."""
        e = dict(self.NO_DIR_ENV)
        e.update(env or {})
        run = tempfile.mkdtemp(prefix="run-", dir=self.tmp)  # its port file and log
        srv = Server(store_url="", args=args, env=e, cwd=self.tmp, tmp=run)
        self.addCleanup(srv.cleanup)
        return srv

    def refused(self, *args, env=None):
        from harness import BIN
        e = {k: v for k, v in os.environ.items() if k not in self.NO_DIR_ENV}
        e.update(env or {})
        p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0"] + list(args), cwd=self.tmp,
                           env=e, capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        return p.stderr

    def test_default_is_tenq_data_under_the_working_directory(self):
        srv = self.serve()
        where = os.path.join(self.tmp, "tenq-data")
        self.assertIn("data-dir=%s\n" % where, srv.log_text())
        self.assertTrue(os.path.exists(os.path.join(where, "tenq.db")))
        self.assertEqual(os.stat(where).st_mode & 0o777, 0o700)
        job = srv.submit(queue="dd")
        self.assertEqual(srv.stop(), 0)
        srv.start()  # the same folder again: the job is there
        self.assertEqual(srv.job(job["id"])["state"], "ready")
        self.assertEqual([n for n in os.listdir(where) if n.startswith(".tenq-write-test")], [])

    def test_flag_environment_and_systemd_state_directory(self):
        # a relative folder is made under the working directory and logged absolute
        srv = self.serve(args=("--data-dir", "a/b"))
        self.assertIn("data-dir=%s/a/b\n" % self.tmp, srv.log_text())
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "a/b/tenq.db")))
        srv.cleanup()
        # STATE_DIRECTORY (systemd's StateDirectory=; the first of several) is the fallback
        state = os.path.join(self.tmp, "state")
        srv = self.serve(env={"STATE_DIRECTORY": state + ":" + self.tmp + "/other"})
        self.assertIn("data-dir=%s\n" % state, srv.log_text())
        self.assertTrue(os.path.exists(os.path.join(state, "tenq.db")))
        self.assertFalse(os.path.exists(self.tmp + "/other"))
        srv.cleanup()
        # TENQ_DATA_DIR beats STATE_DIRECTORY, and the flag beats both
        srv = self.serve(env={"STATE_DIRECTORY": state, "TENQ_DATA_DIR": self.tmp + "/env"})
        self.assertIn("data-dir=%s/env\n" % self.tmp, srv.log_text())
        srv.cleanup()
        srv = self.serve(args=("--data-dir", self.tmp + "/flag"),
                         env={"STATE_DIRECTORY": state, "TENQ_DATA_DIR": self.tmp + "/env"})
        self.assertIn("data-dir=%s/flag\n" % self.tmp, srv.log_text())
        self.assertTrue(os.path.exists(self.tmp + "/flag/tenq.db"))
        self.assertFalse(os.path.exists(self.tmp + "/tenq-data"))

    def test_store_wins_and_the_data_dir_is_left_alone(self):
        db = os.path.join(self.tmp, "elsewhere.db")
        srv = self.serve(args=("--store", "sqlite:" + db, "--data-dir", self.tmp + "/unused"))
        self.assertTrue(os.path.exists(db))
        self.assertFalse(os.path.exists(self.tmp + "/unused"))
        self.assertNotIn("data-dir=", srv.log_text())

    def test_a_folder_that_cannot_be_made_or_written_is_refused(self):
        path = os.path.join(self.tmp, "a-file")
        open(path, "w").close()
        err = self.refused("--data-dir", path)
        self.assertIn("--data-dir %s: cannot create the folder: Not a directory" % path, err)
        err = self.refused("--data-dir", path + "/below")
        self.assertIn("cannot create the folder", err)
        err = self.refused(env={"TENQ_DATA_DIR": path})
        self.assertIn("Not a directory", err)
        err = self.refused(env={"STATE_DIRECTORY": path})
        self.assertIn("STATE_DIRECTORY %s" % path, err)
        # a folder this user may not write in (root may write anywhere: run as nobody)
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro, 0o555)
        wrap = []
        if os.geteuid() == 0:
            os.chmod(self.tmp, 0o755)
            wrap = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        from harness import BIN
        p = subprocess.run(wrap + [BIN, "serve", "--data-dir", ro], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--data-dir %s: cannot write in the folder: Permission denied" % ro,
                      p.stderr)
        self.assertEqual(os.listdir(ro), [])


class WriterPriority(unittest.TestCase):
    """The thread that commits waits and commits at idle priority while the
    server is quiet (--writer-priority auto), at normal priority when work
    comes faster, and gets normal priority back when busy CPUs starve it."""

    @staticmethod
    def writer_policy(srv):
        for tid in os.listdir("/proc/%d/task" % srv.proc.pid):
            with open("/proc/%d/task/%s/comm" % (srv.proc.pid, tid)) as f:
                if f.read().strip() == "tenq-writer":
                    return os.sched_getscheduler(int(tid))
        raise AssertionError("no tenq-writer thread")

    @staticmethod
    def metric(srv, name):
        return srv.metric(name)

    def quiet_until_idle(self, srv, queue):
        for _ in range(100):
            srv.submit(queue=queue)
            time.sleep(0.01)
            if self.writer_policy(srv) == os.SCHED_IDLE:
                return
        self.fail("the writer of a quiet server never went to idle priority: " +
                  srv.log_text())

    def test_quiet_at_idle_priority_busy_at_normal_and_back(self):
        if os.geteuid() != 0:
            self.fail("run as root (CI does): the test needs CAP_SYS_NICE")
        srv = Server()
        try:
            self.assertIn("writer=idle-when-quiet", srv.log_text())
            self.quiet_until_idle(srv, "wp")
            self.assertEqual(self.metric(srv, "tenq_store_writer_idle"), 1)
            # four submitters at once: batches queue up, the writer runs at
            # normal priority while they last
            seen, stop = set(), threading.Event()

            def submitter(k):
                job = {"tenant": "acme", "queue": "wp", "type": "T"}
                while not stop.is_set():
                    srv.ok("POST", "/v1/jobs", job, conn="submitter%d" % k)
            threads = [threading.Thread(target=submitter, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            deadline = time.time() + 20
            while time.time() < deadline and os.SCHED_OTHER not in seen:
                seen.add(self.writer_policy(srv))
                time.sleep(0.002)
            stop.set()
            for t in threads:
                t.join()
            self.assertIn(os.SCHED_OTHER, seen, "the writer stayed at idle priority under load")
            # and back once quiet again (the watchdog may have raised it
            # meanwhile: the submitters alone can keep both CPUs busy)
            self.quiet_until_idle(srv, "wp")
        finally:
            srv.cleanup()

    def test_a_writer_starved_by_busy_cpus_gets_normal_priority_back(self):
        if os.geteuid() != 0:
            self.fail("run as root (CI does): the test needs CAP_SYS_NICE")
        srv = Server()
        spinners = []
        try:
            self.quiet_until_idle(srv, "starve")
            # two busy processes per CPU at normal priority: a thread at idle
            # priority gets next to nothing of a CPU
            for _ in range(2 * os.cpu_count()):
                spinners.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
            time.sleep(0.2)
            took = []
            for _ in range(30):
                t0 = time.monotonic()
                srv.submit(queue="starve")
                took.append(time.monotonic() - t0)
                time.sleep(0.03)
            took.sort()
            # measured here: at most 16 ms with the watchdog on a quiet
            # machine, 0.10 s at the tenth with other builds beside (load
            # 7); without it the slowest tenth took 0.5-1.2 s
            self.assertLess(took[len(took) // 2], 0.1, took)
            self.assertLess(took[int(len(took) * 0.9)], 0.25, took)
            self.assertLess(took[-1], 0.45, took)
            self.assertGreaterEqual(self.metric(srv, "tenq_store_writer_raised_total"), 1)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
            srv.cleanup()

    def stays_normal(self, srv, log_says):
        try:
            for _ in range(30):
                srv.submit(queue="wn")
                time.sleep(0.005)
            self.assertEqual(self.writer_policy(srv), os.SCHED_OTHER)
            self.assertIn(log_says, srv.log_text())
        finally:
            srv.cleanup()

    def test_normal_priority_when_asked_or_when_it_could_not_be_undone(self):
        self.stays_normal(Server(args=["--writer-priority", "normal"]), "writer=normal")
        if STORE != "sqlite" or os.geteuid() != 0:
            return
        # without CAP_SYS_NICE (and RLIMIT_NICE 0) a thread cannot come back
        # from idle priority, so the writer never goes there
        tmp = tempfile.mkdtemp()
        os.chmod(tmp, 0o777)
        try:
            self.stays_normal(
                Server(tmp=tmp, wrap=["setpriv", "--reuid=nobody", "--regid=nogroup",
                                      "--clear-groups", "--inh-caps=-all",
                                      "--bounding-set=-all"]),
                "idle priority needs CAP_SYS_NICE")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_words_outside_a_settings_choices_are_refused(self):
        from harness import BIN
        tmp = tempfile.mkdtemp()
        try:
            for args, env, says in [
                    (["--sqlite-sync", "fuul"], {}, ["expected one of full|normal"]),
                    (["--writer-priority", "high"], {}, ["expected one of auto|normal"]),
                    ([], {"TENQ_LOG_LEVEL": "verbose"}, ["expected one of debug|info|warn|error"]),
                    (["--log-format", "xml"], {}, ["expected one of text|json"]),
                    (["--idle-yield=sometimes"], {}, ["idle-yield", "expected true or false"])]:
                p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--store",
                                    "sqlite:%s/t.db" % tmp] + args, capture_output=True,
                                   text=True, timeout=30, env=dict(os.environ, **env))
                self.assertEqual(p.returncode, 2, p.stderr)
                for text in says:
                    self.assertIn(text, p.stderr)
            self.assertEqual(os.listdir(tmp), [])  # nothing was made
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class IdleYield(unittest.TestCase):
    """A request that wakes an idle server yields the CPU once before its
    handler and once after the long poll it woke is answered (--idle-yield,
    on by default); a yield that finds the CPU busy stops them for a second."""

    metric = staticmethod(WriterPriority.metric)

    def pickups(self, srv, queue, n, gap):
        """n jobs submitted gap seconds apart to a worker that long-polls;
        the time from each submit to its job in the worker's hands."""
        took, got = [], threading.Event()

        def worker():
            for _ in range(n):
                jobs = srv.lease([queue], wait_ms=5000, conn="worker")
                self.assertEqual(len(jobs), 1)
                took.append(time.monotonic() - sent[0])
                srv.ok("POST", "/v1/jobs/%d/ack" % jobs[0]["id"], {"token": jobs[0]["token"]},
                       conn="worker")
                got.set()
        sent = [0.0]
        t = threading.Thread(target=worker)
        t.start()
        try:
            for _ in range(n):
                time.sleep(gap)  # the worker's long poll is waiting again
                got.clear()
                sent[0] = time.monotonic()
                srv.submit(queue=queue)
                self.assertTrue(got.wait(10), "a job was not picked up")
        finally:
            t.join(30)
        return sorted(took)

    def test_a_pickup_on_an_idle_server_yields_before_and_after(self):
        srv = Server()
        try:
            # each pickup yields twice (before the submit's handler, after
            # the woken lease's answer); a yield the host slows down pauses
            # them for a second, so this goes on until enough were seen
            deadline = time.monotonic() + 20
            yields = 0
            while yields < 20 and time.monotonic() < deadline:
                self.pickups(srv, "iy", 10, 0.02)
                yields = self.metric(srv, "tenq_http_idle_yields_total")
            self.assertGreaterEqual(yields, 20, srv.log_text())
        finally:
            srv.cleanup()

    def test_no_yields_when_turned_off(self):
        srv = Server(args=["--idle-yield=false"])
        try:
            self.pickups(srv, "iyoff", 5, 0.02)
            self.assertEqual(self.metric(srv, "tenq_http_idle_yields_total"), 0)
        finally:
            srv.cleanup()

    def test_busy_cpus_stop_the_yields(self):
        srv = Server()
        spinners = []
        try:
            for _ in range(2 * os.cpu_count()):
                spinners.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
            time.sleep(0.2)
            took = self.pickups(srv, "iybusy", 20, 0.02)
            yields = self.metric(srv, "tenq_http_idle_yields_total")
            slow = self.metric(srv, "tenq_http_idle_yields_slow_total")
            self.assertGreaterEqual(slow, 1, "no yield found the spinning CPUs busy")
            # a slow yield stops them for a second: the 20 pickups take under
            # two seconds, so few yields follow (without the pause every one
            # of them yields twice, 40 and more)
            self.assertLess(yields, 20, (yields, slow))
            self.assertLess(took[len(took) // 2], 0.05, took)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
            srv.cleanup()


if __name__ == "__main__":
    main()
