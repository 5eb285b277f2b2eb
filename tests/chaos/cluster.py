# SPDX-License-Identifier: Apache-2.0
"""Several `tenq serve` processes on one store, and the store itself, for
the chaos tests: start, kill -9, SIGSTOP/SIGCONT, SIGTERM any of them; find
the leader; stop and restart the private PostgreSQL (tests/with-pg.sh) in
immediate mode; end a server's connections with pg_terminate_backend.

Environment: TENQ_BIN, TENQ_TEST_PG_URL and TENQ_TEST_PG_DIR (with-pg.sh).
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import harness  # noqa: E402  (the one way the suites start a server)

PG_URL = os.environ.get("TENQ_TEST_PG_URL")
PG_DIR = os.environ.get("TENQ_TEST_PG_DIR")


def require_pg():
    if not PG_URL or not PG_DIR:
        raise RuntimeError("the chaos tests need PostgreSQL: run them under tests/with-pg.sh "
                           "(ctest does); a missing PostgreSQL is a failure, never a skip")


def psql(url, sql):
    """Rows of a query as lists of strings (psql -At, fields split on |)."""
    out = subprocess.run(["psql", url, "-X", "-q", "-At", "-F", "|", "-c", sql], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return [line.split("|") for line in out.splitlines() if line]


def pgctl(action):
    """stop (immediate: as a crash would) or resume the private PostgreSQL."""
    script = os.path.join(ROOT, "scripts", "pgtmp.sh")
    subprocess.run([script, action, PG_DIR], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)


def get_json(url, timeout=1.0):
    """(status, parsed body) of a GET, or (0, None) when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"null")
        except ValueError:
            return e.code, None
    except (OSError, ValueError):
        return 0, None


def store_rows(srv, store):
    """The job rows for checker.py of one server's store (sqlite or
    postgres), read while it runs or after it stopped."""
    import checker  # (beside this file)
    if store == "postgres":
        return checker.store_rows(psql(srv.store_url, checker.job_rows_sql() % "tenq."))
    db = sqlite3.connect("file:%s?mode=ro" % srv.store_url[len("sqlite:"):], uri=True)
    try:
        return checker.store_rows([[str(v) for v in r]
                                   for r in db.execute(checker.job_rows_sql() % "")])
    finally:
        db.close()


def steps_rows(srv, store):
    """(step rows, steps jobs' rows) for checker.check_steps of one server's
    store, read while it runs or after it stopped."""
    import checker  # (beside this file)
    if store == "postgres":
        return (checker.step_rows(psql(srv.store_url, checker.step_rows_sql() % "tenq.")),
                psql(srv.store_url, checker.steps_job_rows_sql() % "tenq."))
    db = sqlite3.connect("file:%s?mode=ro" % srv.store_url[len("sqlite:"):], uri=True)
    try:
        text = lambda rows: [["" if v is None else str(v) for v in r] for r in rows]  # noqa: E731
        return (checker.step_rows(text(db.execute(checker.step_rows_sql() % ""))),
                text(db.execute(checker.steps_job_rows_sql() % "")))
    finally:
        db.close()


def drained(srv):
    """Whether a server holds no unfinished job (its counts say): none in any
    state the engine counts but dead (its states: harness.counted_states)."""
    st, ans = srv.req("GET", "/v1/stats")
    t = ans["totals"] if st == 200 else None
    return bool(t) and sum(t[s] for s in harness.counted_states() if s != "dead") == 0


class Cluster:
    """n servers sharing store_url (a fresh PostgreSQL database when None),
    each on a fixed port so that a restarted one is found where it was."""

    def __init__(self, n, store_url=None, args=(), env=None):
        if store_url is None:
            require_pg()
            store_url = harness.pg_url_for_new_database()
        self.store_url = store_url
        self.ports = [harness.free_port() for _ in range(n)]
        self.urls = ["http://127.0.0.1:%d" % p for p in self.ports]
        self.args = list(args)
        self.servers = []
        for i, port in enumerate(self.ports):
            self.servers.append(harness.Server(
                store_url, args=self.args + ["--advertise", self.urls[i]], env=env, port=port))
            if i == 0:
                self.wait_leader(30)  # the first leads: the others stand by

    def health(self, i):
        return get_json(self.urls[i] + "/healthz")[1] or {}

    def leader(self):
        """The index of the server that leads and serves now, or None."""
        for i in range(len(self.servers)):
            if self.servers[i].proc.poll() is None and get_json(self.urls[i] + "/readyz")[0] == 200:
                return i
        return None

    def wait_leader(self, timeout=30.0, not_in=()):
        deadline = time.time() + timeout
        while time.time() < deadline:
            i = self.leader()
            if i is not None and i not in not_in:
                return i
            time.sleep(0.01)
        raise AssertionError("no leader within %.0f s: %s" % (timeout, self.logs()))

    def kill(self, i, sig=signal.SIGKILL):
        srv = self.servers[i]
        if srv.proc.poll() is None:
            srv.proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM):
                srv.proc.wait(60)
        srv.close_conns()

    def restart(self, i):
        self.servers[i].start()

    def node(self, i):
        return self.health(i).get("node")

    def terminate_backends(self, node):
        """Ends every connection of one server to PostgreSQL."""
        return psql(PG_URL, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                            "pg_stat_activity WHERE application_name = 'tenq:%s'" % node)[0][0]

    def logs(self):
        return "\n".join("--- server %d (port %d)\n%s" % (i, s.port or 0, s.log_text()[-3000:])
                         for i, s in enumerate(self.servers))

    def cleanup(self):
        for s in self.servers:
            if s.proc and s.proc.poll() is None:
                try:
                    s.proc.send_signal(signal.SIGCONT)
                except OSError:
                    pass
            s.cleanup()
