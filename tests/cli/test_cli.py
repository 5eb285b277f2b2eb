#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The `tenq` command line against a real `tenq serve`.

One server (port 0, a private SQLite file, an admin token) serves the whole
suite; tests keep apart by using their own queue and tenant names.  The
binary comes from TENQ_BIN (ctest sets it) or the first argument.

    TENQ_BIN=build/tenq python3 tests/cli/test_cli.py [-v] [TestClass.test_name]
"""
import calendar
import json
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402

BIN = os.environ.get("TENQ_BIN") or (sys.argv.pop(1) if len(sys.argv) > 1 and
                                     not sys.argv[1].startswith("-") else None)
ADMIN = "admin-secret-for-cli-tests-0123"
SANITIZER_WORDS = harness.SANITIZER_WORDS

server = {}


def dead_url():
    """A URL where nothing listens (a port bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


def setUpModule():
    if not BIN:
        raise unittest.SkipTest("set TENQ_BIN to the tenq binary")
    tmp = tempfile.mkdtemp(prefix="tenq-cli-test-")
    srv = harness.Server(store_url="sqlite:%s/t.db" % tmp, args=["--sqlite-sync", "normal"],
                         env={"TENQ_ADMIN_TOKEN": ADMIN}, tmp=tmp)
    server.update(srv=srv, url=srv.url(), tmp=srv.tmp)


def tearDownModule():
    srv = server.get("srv")
    if srv:
        rc = srv.stop(timeout=20)
        try:
            srv.assert_clean()
            if rc != 0:
                raise AssertionError("the server failed (rc %s):\n%s" % (rc, srv.log_text()))
        finally:
            srv.cleanup()
            shutil.rmtree(srv.tmp, ignore_errors=True)


def run(*args, stdin=None, env=None, token=ADMIN, servers=None):
    """Runs tenq with TENQ_SERVER/TENQ_TOKEN set; returns (rc, stdout, stderr)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("TENQ_")}
    e["TENQ_SERVER"] = servers if servers is not None else server["url"]
    if token is not None:
        e["TENQ_TOKEN"] = token
    e.update(env or {})
    p = subprocess.run([BIN] + list(args), input=stdin, capture_output=True, text=True, env=e,
                       timeout=60)
    for w in SANITIZER_WORDS:
        assert w not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


def api(method, path, body=None, token=ADMIN):
    """A request straight to the server (for what the CLI does not do: leases)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server["url"] + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


class Case(unittest.TestCase):
    def ok(self, *args, **kw):
        rc, out, err = run(*args, **kw)
        self.assertEqual(rc, 0, "tenq %s: rc %d\nstdout: %s\nstderr: %s" %
                         (" ".join(args), rc, out, err))
        return out, err

    def fails(self, rc_want, *args, **kw):
        rc, out, err = run(*args, **kw)
        self.assertEqual(rc, rc_want, "tenq %s: rc %d (wanted %d)\nstdout: %s\nstderr: %s" %
                         (" ".join(args), rc, rc_want, out, err))
        self.assertEqual(len(err.strip().splitlines()), 1, "one line on stderr: %r" % err)
        return out, err

    def submit(self, *args, **kw):
        out, _ = self.ok("submit", *args, **kw)
        self.assertRegex(out, r"^\d+\n$")
        return int(out)

    def lease(self, queue, n=1):
        st, a = api("POST", "/v1/lease", {"queues": [queue], "max": n})
        self.assertEqual(st, 200, a)
        return a["jobs"]

    def kill_job(self, queue):
        """Leases the next job of queue and fails it for good."""
        jobs = self.lease(queue)
        self.assertEqual(len(jobs), 1)
        j = jobs[0]
        st, a = api("POST", "/v1/jobs/%d/fail" % j["id"],
                    {"token": j["token"], "error": "boom", "retry": False})
        self.assertEqual(a["state"], "dead", a)
        return j["id"]


class Help(Case):
    def test_top_level_help_and_usage_errors(self):
        out, _ = self.ok("--help")
        for cmd in ("serve", "submit", "status", "wait", "cancel", "jobs", "stats", "morgue",
                    "tenant", "queue", "token", "work", "health", "version", "help"):
            self.assertIn("  " + cmd + " ", out)
        self.assertEqual(self.ok("help")[0], out)
        self.assertEqual(self.ok("help", "help")[0], out)
        out, _ = self.ok("help", "wait")
        self.assertIn("exit status", out)
        rc, out, err = run()
        self.assertEqual(rc, 2)
        self.assertTrue(err.startswith("usage: tenq"), err)
        _, err = self.fails(2, "frobnicate")
        self.assertIn('unknown command "frobnicate"', err)
        _, err = self.fails(2, "--bogus", "stats")
        self.assertIn("unknown flag --bogus", err)
        self.fails(2, "help", "frobnicate")

    def test_every_command_has_help(self):
        for cmd in (["submit"], ["status"], ["wait"], ["cancel"], ["jobs"], ["stats"],
                    ["morgue", "ls"], ["morgue", "requeue"], ["morgue", "rm"], ["tenant", "ls"],
                    ["tenant", "show"], ["tenant", "set"], ["queue", "ls"], ["queue", "show"],
                    ["queue", "set"], ["token", "create"], ["token", "ls"], ["token", "revoke"]):
            out, _ = self.ok(*cmd, "--help")
            self.assertTrue(out.startswith("usage: tenq " + " ".join(cmd)), out)
            self.assertIn("--server URL", out)
        for group in ("morgue", "tenant", "queue", "token"):
            out, _ = self.ok(group, "--help")
            self.assertIn("commands:", out)
            rc, out, err = run(group)
            self.assertEqual(rc, 2)
            self.assertTrue(err.startswith("usage: tenq " + group), err)
            _, err = self.fails(2, group, "nope")
            self.assertIn('unknown command "nope"', err)

    def test_serve_is_untouched(self):
        out, err = self.ok("serve", "--help")
        self.assertIn("--listen", out + err)
        rc, out, err = run("serve", "--no-such-setting")
        self.assertEqual(rc, 2)

    def test_usage_errors_exit_2_with_one_line(self):
        cases = [
            (["status"], "missing argument"),
            (["status", "abc"], '"abc" is not an id'),
            (["status", "1", "2"], 'unexpected argument "2"'),
            (["submit", "--queue", "q", "--type", "t", "--args", "{bad"], "--args: not valid JSON"),
            (["submit", "--queue", "q", "--type", "t", "--priority", "high"], "--priority"),
            (["submit", "--queue", "q", "--type", "t", "--priority", "40000"], "--priority"),
            (["submit", "--queue", "q", "--type", "t", "--delay", "soon"], "not a duration"),
            (["submit", "--queue", "q", "--type", "t", "--run-at", "tomorrow"], "not a time"),
            (["submit", "--queue", "q", "--type", "t", "--delay", "1s", "--run-at", "1"],
             "not both"),
            (["submit", "--queue"], "--queue needs a value"),
            (["submit", "--unique=yes", "--type", "t"], "--unique takes no value"),
            (["wait", "1", "--timeout", "x"], "not a duration"),
            (["jobs", "--state", "sleeping"], "unknown state"),
            (["jobs", "--limit", "0"], "--limit"),
            (["morgue", "ls", "--sort", "random"], "--sort"),
            (["morgue", "requeue"], "give a job ID"),
            (["morgue", "rm", "5", "--queue", "q"], "not both"),
            (["tenant", "set", "acme", "--slots", "many"], "--slots"),
            (["queue", "set", "q", "--order", "lifo"], "--order: expected fifo|fair"),
            (["queue", "set", "q", "--merge", "maybe"], "--merge"),
            (["queue", "set", "q", "--lease", "5 minutes"], "not a duration"),
            (["queue", "set", "q", "--max-payload", "huge"], "not a size"),
            (["token", "create"], "--role is required"),
            (["token", "revoke", "x"], "not an id"),
            (["--server", "ftp://x", "stats"], "bad server URL"),
        ]
        for args, msg in cases:
            _, err = self.fails(2, *args)
            self.assertIn(msg, err, args)
            self.assertTrue(err.startswith("tenq"), err)


class Jobs(Case):
    def test_submit_one_and_status(self):
        jid = self.submit("--tenant", "t-one", "--queue", "one", "--type", "Report.run",
                          "--args", '{"b": 2, "a": [1]}', "--key", "r:1", "--priority", "5",
                          "--max-attempts", "3")
        out, _ = self.ok("status", str(jid))
        fields = dict(re.split(r"\s+", line, maxsplit=1) for line in out.strip().splitlines())
        self.assertEqual(fields["id"], str(jid))
        self.assertEqual(fields["state"], "ready")
        self.assertEqual(fields["tenant"], "t-one")
        self.assertEqual(fields["queue"], "one")
        self.assertEqual(fields["type"], "Report.run")
        self.assertEqual(fields["key"], "r:1")
        self.assertEqual(fields["priority"], "5")
        self.assertEqual(fields["attempts"], "0 of 3")
        self.assertEqual(fields["args"], '{"a":[1],"b":2}')
        self.assertRegex(fields["created"], r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$")
        # keys are aligned: every value starts in the same column
        starts = {len(line) - len(line[line.index(" "):].lstrip()) for line in
                  out.strip().splitlines()}
        self.assertEqual(len(starts), 1, out)
        out, _ = self.ok("status", str(jid), "--json")
        job = json.loads(out)
        self.assertEqual(job["id"], jid)
        self.assertEqual(job["args"], {"a": [1], "b": 2})
        out, _ = self.ok("--json", "status", str(jid))
        self.assertEqual(json.loads(out)["id"], jid)

    def test_submit_with_dependencies_and_status(self):
        parent = self.submit("--tenant", "t-deps", "--queue", "deps", "--type", "Build")
        child = self.submit("--tenant", "t-deps", "--queue", "deps", "--type", "Mail",
                            "--depends-on", str(parent), "--on-parent-failure", "run")
        out, _ = self.ok("status", str(child))
        fields = dict(re.split(r"\s+", line, maxsplit=1) for line in out.strip().splitlines())
        self.assertEqual(fields["state"], "waiting")
        self.assertEqual(fields["parents"], "[%d]" % parent)
        self.assertEqual(fields["on_parent_failure"], "run")
        self.assertIn("parent", fields["waiting"])
        out, _ = self.ok("status", str(parent))
        self.assertIn("children", out)
        self.fails(2, "submit", "--tenant", "t-deps", "--queue", "deps", "--type", "T",
                   "--depends-on", "x")
        rc, _, err = run("submit", "--tenant", "t-deps", "--queue", "deps", "--type", "T",
                         "--depends-on", "999999")
        self.assertNotEqual(rc, 0)
        self.assertIn("depends_on", err)

    def test_submit_flags_reach_the_server(self):
        q = "flags"
        jid = self.submit("--tenant", "t-flags", "--queue", q, "--type", "t", "--delay", "1h")
        job = json.loads(self.ok("status", str(jid), "--json")[0])
        self.assertEqual(job["state"], "scheduled")
        self.assertAlmostEqual(job["run_at"] - job["created_at"], 3600000, delta=5000)
        jid = self.submit("--tenant", "t-flags", "--queue", q, "--type", "t", "--run-at",
                          "2030-01-02T03:04:05Z")
        job = json.loads(self.ok("status", str(jid), "--json")[0])
        self.assertEqual(job["run_at"], calendar.timegm((2030, 1, 2, 3, 4, 5)) * 1000)
        jid = self.submit("--tenant", "t-flags", "--queue", q, "--type", "t", "--run-at",
                          "2030-01-02T05:04:05.250+02:00")
        job = json.loads(self.ok("status", str(jid), "--json")[0])
        self.assertEqual(job["run_at"], calendar.timegm((2030, 1, 2, 3, 4, 5)) * 1000 + 250)
        # duplicates and idempotent replays answer with the first id
        a = self.submit("--tenant", "t-flags", "--queue", q, "--type", "u", "--unique-key", "k1")
        b = self.submit("--tenant", "t-flags", "--queue", q, "--type", "u", "--unique-key", "k1")
        self.assertEqual(a, b)
        out, _ = self.ok("submit", "--tenant", "t-flags", "--queue", q, "--type", "u",
                         "--unique-key", "k1", "--json")
        self.assertEqual(json.loads(out), {"id": a, "state": "ready", "duplicate": True,
                                           "merged": False})
        a = self.submit("--tenant", "t-flags", "--queue", q, "--type", "v", "--args", '{"x":1}',
                        "--unique")
        b = self.submit("--tenant", "t-flags", "--queue", q, "--type", "v", "--args",
                        '{ "x" : 1 }', "--unique")
        self.assertEqual(a, b)
        a = self.submit("--tenant", "t-flags", "--queue", q, "--type", "w", "--idempotency-key",
                        "c-77")
        out, _ = self.ok("submit", "--tenant", "t-flags", "--queue", q, "--type", "w",
                         "--idempotency-key", "c-77", "--json")
        self.assertEqual(json.loads(out)["id"], a)
        self.assertTrue(json.loads(out)["replayed"])
        # merging queues take scores
        self.ok("queue", "set", "merging", "--merge", "true")
        a = self.submit("--tenant", "t-flags", "--queue", "merging", "--type", "m", "--key", "k",
                        "--args", "1", "--score", "2.5")
        b = self.submit("--tenant", "t-flags", "--queue", "merging", "--type", "m", "--key", "k",
                        "--args", "2", "--score", "1")
        self.assertEqual(a, b)
        job = json.loads(self.ok("status", str(a), "--json")[0])
        self.assertEqual([p["payload"] for p in job["payloads"]], [2, 1])

    def test_submit_refused_by_the_server(self):
        _, err = self.fails(1, "submit", "--tenant", "bad tenant!", "--queue", "q", "--type", "t")
        self.assertRegex(err, r"^tenq: invalid: ")
        _, err = self.fails(1, "submit", "--tenant", "x", "--type", "t", "--queue", "q",
                            "--max-attempts", "5000")
        self.assertIn("tenq: invalid:", err)
        self.assertIn("max_attempts", err)

    def test_status_wait_cancel_and_their_errors(self):
        _, err = self.fails(1, "status", "987654321")
        self.assertEqual(err, "tenq: not_found: no job 987654321\n")
        _, err = self.fails(2, "wait", "987654321", "--timeout", "1s")
        self.assertIn("tenq: not_found: no job 987654321", err)
        jid = self.submit("--tenant", "t-wait", "--queue", "waitq", "--type", "t")
        t0 = time.time()
        rc, out, _ = run("wait", str(jid), "--timeout", "300ms")
        self.assertEqual(rc, 3)
        self.assertGreater(time.time() - t0, 0.25)
        self.assertLess(time.time() - t0, 10)
        self.assertRegex(out, r"(?m)^state\s+ready$")
        out, _ = self.ok("cancel", str(jid))
        self.assertEqual(out, "job %d cancelled\n" % jid)
        rc, out, _ = run("wait", str(jid))
        self.assertEqual(rc, 1)
        self.assertIn("cancelled", out)
        _, err = self.fails(1, "cancel", str(jid))
        self.assertEqual(err, "tenq: conflict: job %d is cancelled and cannot be cancelled\n" % jid)
        # a running job is only marked
        jid = self.submit("--tenant", "t-wait", "--queue", "waitq", "--type", "t")
        [j] = self.lease("waitq")
        out, _ = self.ok("cancel", str(jid))
        self.assertIn("cancel requested", out)
        out, _ = self.ok("cancel", str(jid), "--json")
        self.assertEqual(json.loads(out),
                         {"id": jid, "state": "leased", "cancel_requested": True})
        api("POST", "/v1/jobs/%d/ack" % jid, {"token": j["token"], "result": {"ok": 1}})
        rc, out, _ = run("wait", str(jid), "--json")
        self.assertEqual(rc, 0)
        self.assertEqual(json.loads(out)["result"], {"ok": 1})
        # a dead job
        self.submit("--tenant", "t-wait", "--queue", "waitq2", "--type", "t")
        dead = self.kill_job("waitq2")
        rc, out, _ = run("wait", str(dead))
        self.assertEqual(rc, 1)
        self.assertIn("boom", out)

    def test_attempts_table_and_json(self):
        _, err = self.fails(1, "attempts", "987654321")
        self.assertEqual(err, "tenq: not_found: no job 987654321\n")
        self.fails(2, "attempts", "nope")
        jid = self.submit("--tenant", "t-att", "--queue", "attq", "--type", "t",
                          "--max-attempts", "3")
        out, _ = self.ok("attempts", str(jid))
        self.assertEqual(out, "job %d is ready and has had no attempt\n" % jid)
        [j] = self.lease("attq")
        api("POST", "/v1/jobs/%d/fail" % jid,
            {"token": j["token"], "error": "first line\nsecond line", "retry_in_ms": 0})
        [j] = self.lease("attq")
        out, _ = self.ok("attempts", str(jid))
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split(), ["ATTEMPT", "OUTCOME", "JOB", "WORKER", "LEASED",
                                            "TOOK", "ERROR"])
        self.assertRegex(lines[1], r"^\s*1\s+failed\s+ready\s+\S+\s+\S+ \S+\s+\S+\s+first line$")
        self.assertRegex(lines[2], r"^\s*2\s+leased\s+leased\s+.*\s-\s+-$")
        api("POST", "/v1/jobs/%d/ack" % jid, {"token": j["token"], "stats": {"rows": 2}})
        out, _ = self.ok("attempts", str(jid), "--json")
        a = json.loads(out)
        self.assertEqual([x["outcome"] for x in a["attempts"]], ["failed", "succeeded"])
        self.assertEqual(a["attempts"][1]["stats"], {"rows": 2})

    def test_a_cell_is_cut_only_when_its_text_does_not_fit(self):
        # the ERROR cell of attempts holds 95 bytes, the morgue's 63: text of
        # that length is shown whole; a byte more ends in "..."
        jid = self.submit("--tenant", "t-cut", "--queue", "cutq", "--type", "t",
                          "--max-attempts", "2")
        for err in ("x" * 95, "y" * 96):
            [j] = self.lease("cutq")
            st, a = api("POST", "/v1/jobs/%d/fail" % jid,
                        {"token": j["token"], "error": err, "retry_in_ms": 0})
            self.assertEqual(st, 200, a)
        lines = self.ok("attempts", str(jid))[0].strip().splitlines()
        self.assertTrue(lines[1].endswith(" " + "x" * 95), lines[1])
        self.assertTrue(lines[2].endswith(" " + "y" * 92 + "..."), lines[2])
        self.submit("--tenant", "t-cut", "--queue", "cutq", "--type", "t")
        [j] = self.lease("cutq")
        st, a = api("POST", "/v1/jobs/%d/fail" % j["id"],
                    {"token": j["token"], "error": "z" * 63, "retry": False})
        self.assertEqual(a["state"], "dead", a)
        out, _ = self.ok("morgue", "ls", "--queue", "cutq", "--sort", "id")
        rows = out.strip().splitlines()[1:]
        self.assertTrue(rows[0].endswith(" " + "y" * 60 + "..."), rows[0])
        self.assertTrue(rows[1].endswith(" " + "z" * 63), rows[1])

    def test_steps_table_json_and_event_send(self):
        _, err = self.fails(1, "steps", "987654321")
        self.assertEqual(err, "tenq: not_found: no job 987654321\n")
        self.fails(2, "steps", "nope")
        jid = self.submit("--tenant", "t-steps", "--queue", "stepq", "--type", "t")
        out, _ = self.ok("steps", str(jid))
        self.assertEqual(out, "job %d is ready and has stored no step\n" % jid)
        [j] = self.lease("stepq")
        api("POST", "/v1/jobs/%d/steps" % jid, {"token": j["token"], "name": "fetch",
                                                "result": {"rows": 3}})
        api("POST", "/v1/jobs/%d/steps" % jid, {"token": j["token"], "name": "paid",
                                                "kind": "event", "event": "order-9"})
        out, _ = self.ok("steps", str(jid))
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split(), ["POS", "NAME", "KIND", "DONE", "ATTEMPT", "WAITS",
                                            "UNTIL", "RESULT"])
        self.assertRegex(lines[1], r"^\s*0\s+fetch\s+step\s+done\s+1\s+-\s+-\s+\{\"rows\":3\}$")
        self.assertRegex(lines[2], r"^\s*1\s+paid\s+event\s+waiting\s+1\s+event order-9\s+-\s+-$")
        fields = dict(l.split(None, 1) for l in self.ok("status", str(jid))[0].splitlines()
                      if " " in l)
        self.assertEqual(fields["steps"], "2")
        self.assertIn("waits for event order-9", fields["waiting"])
        # the event wakes it; sent again (another request) it is kept
        out, _ = self.ok("event", "send", "--tenant", "t-steps", "order-9", '{"paid": true}')
        self.assertEqual(out, "woke 1 job\n")
        out, _ = self.ok("event", "send", "--tenant", "t-steps", "order-9", "--json")
        self.assertEqual(json.loads(out), {"delivered": 0, "kept": True})
        self.fails(1, "event", "send", "--tenant", "t-steps", "order-9", "{not json")
        out, _ = self.ok("steps", str(jid), "--json")
        s = json.loads(out)["steps"]
        self.assertEqual((s[1]["done"], s[1]["result"]), (True, {"paid": True}))

    def test_wait_returns_when_the_job_finishes(self):
        jid = self.submit("--tenant", "t-wait", "--queue", "waitq3", "--type", "t")
        p = subprocess.Popen([BIN, "wait", str(jid), "--timeout", "30s"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, TENQ_SERVER=server["url"], TENQ_TOKEN=ADMIN))
        time.sleep(0.3)
        [j] = self.lease("waitq3")
        t0 = time.time()
        api("POST", "/v1/jobs/%d/ack" % jid, {"token": j["token"]})
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertLess(time.time() - t0, 5)
        self.assertIn("succeeded", out)

    def test_wait_follows_a_merged_job(self):
        self.ok("queue", "set", "mergew", "--merge", "true")
        a = self.submit("--tenant", "t-mw", "--queue", "mergew", "--type", "m", "--key", "k",
                        "--args", "1")
        [j] = self.lease("mergew")
        # a second payload waits behind the leased head; the head fails and takes it
        b = self.submit("--tenant", "t-mw", "--queue", "mergew", "--type", "m", "--key", "k",
                        "--args", "2")
        self.assertNotEqual(a, b)
        api("POST", "/v1/jobs/%d/fail" % a, {"token": j["token"], "retry_in_ms": 0})
        st, job = api("GET", "/v1/jobs/%d" % b)
        if job["state"] != "merged":
            self.skipTest("the server did not merge (state %s)" % job["state"])
        [j] = self.lease("mergew")
        api("POST", "/v1/jobs/%d/ack" % j["id"], {"token": j["token"]})
        rc, out, err = run("wait", str(b))
        self.assertEqual(rc, 0, err)
        self.assertIn("merged into job %d" % a, err)

    def test_jobs_list_filters_and_paging(self):
        ids = [self.submit("--tenant", "t-list", "--queue", "listq", "--type", "A" if i % 2 else
                           "B", "--key", "k%d" % (i % 3)) for i in range(7)]
        out, _ = self.ok("jobs", "--queue", "listq")
        lines = out.strip().splitlines()
        self.assertRegex(lines[0], r"^ID\s+STATE\s+TENANT\s+QUEUE\s+TYPE\s+KEY\s+ATTEMPTS\s+CREATED$")
        self.assertEqual([int(line.split()[0]) for line in lines[1:]], ids[::-1])
        self.assertEqual(len({len(line) for line in lines}), 1, "aligned:\n" + out)
        out, _ = self.ok("jobs", "--queue", "listq", "--type", "A", "--json")
        page = json.loads(out)
        self.assertEqual([j["id"] for j in page["jobs"]], ids[1::2][::-1])
        out, _ = self.ok("jobs", "--queue", "listq", "--key", "k0", "--json")
        self.assertEqual([j["id"] for j in json.loads(out)["jobs"]], [ids[6], ids[3], ids[0]])
        self.ok("cancel", str(ids[2]))
        out, _ = self.ok("jobs", "--queue", "listq", "--state", "cancelled", "--json")
        self.assertEqual([j["id"] for j in json.loads(out)["jobs"]], [ids[2]])
        out, err = self.ok("jobs", "--queue", "listq", "--tenant", "t-list", "--limit", "3")
        self.assertEqual(len(out.strip().splitlines()), 4)
        m = re.search(r"more: --after (\d+)", err)
        self.assertTrue(m, err)
        out, _ = self.ok("jobs", "--queue", "listq", "--limit", "3", "--after", m.group(1),
                         "--json")
        self.assertEqual([j["id"] for j in json.loads(out)["jobs"]], ids[1:4][::-1])
        out, _ = self.ok("jobs", "--queue", "no-such-queue")
        self.assertEqual(out, "no jobs\n")


class SubmitMany(Case):
    def test_json_lines_from_stdin_in_batches(self):
        n = 2500
        lines = []
        for i in range(n):
            job = {"args": {"i": i}}
            if i % 5 == 0:
                job["type"] = "Special"
            if i % 7 == 0:
                job["priority"] = 3
            lines.append(json.dumps(job))
        text = "\n".join(lines[:1200]) + "\n\n" + "\n".join(lines[1200:]) + "\n"
        t0 = time.time()
        out, err = self.ok("submit", "--tenant", "t-bulk", "--queue", "bulk", "--type", "Plain",
                           "-", stdin=text)
        self.assertLess(time.time() - t0, 30)
        self.assertEqual(err, "")  # no progress bar off a terminal
        ids = [int(x) for x in out.split()]
        self.assertEqual(len(ids), n)
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(ids)), n)
        out, _ = self.ok("jobs", "--queue", "bulk", "--limit", "5000", "--json")
        jobs = {j["id"]: j for j in json.loads(out)["jobs"]}
        self.assertEqual(set(jobs), set(ids))
        for i in (0, 1, 5, 7, 1999, 2499):
            j = jobs[ids[i]]
            self.assertEqual(j["args"], {"i": i})
            self.assertEqual(j["type"], "Special" if i % 5 == 0 else "Plain")
            self.assertEqual(j["tenant"], "t-bulk")
            self.assertEqual(j["priority"], 3 if i % 7 == 0 else 0)

    def test_no_type_means_stdin_and_bad_lines_fail_alone(self):
        text = "\n".join([
            '{"tenant": "t-bad", "queue": "bulkbad", "type": "a"}',
            '{"tenant": "t-bad", "queue": "bulkbad"',              # malformed
            '{"tenant": "t-bad", "queue": "bulkbad", "type": "b", "priority": 99999}',  # refused
            '[1, 2]',                                              # not an object
            '{"tenant": "t-bad", "queue": "bulkbad", "type": "c", "nope": 1}',  # unknown field
            '{"tenant": "t-bad", "queue": "bulkbad", "type": "d"}',
        ]) + "\n"
        rc, out, err = run("submit", stdin=text)
        self.assertEqual(rc, 1)
        ids = out.split()
        self.assertEqual(len(ids), 2)
        errs = err.strip().splitlines()
        self.assertEqual(len(errs), 4, err)
        self.assertTrue(errs[0].startswith("tenq: line 2: invalid: malformed JSON"), errs[0])
        self.assertTrue(errs[1].startswith("tenq: line 3: invalid:") and "priority" in errs[1],
                        errs[1])
        self.assertTrue(errs[2].startswith("tenq: line 4: invalid:"), errs[2])
        self.assertTrue(errs[3].startswith("tenq: line 5: invalid:") and "nope" in errs[3],
                        errs[3])
        # --json: one answer per job, in input order
        rc, out, err = run("submit", "--json", stdin=text)
        self.assertEqual(rc, 1)
        answers = [json.loads(x) for x in out.strip().splitlines()]
        self.assertEqual(len(answers), 6)
        self.assertEqual([("error" in a) for a in answers],
                         [False, True, True, True, True, False])
        self.assertEqual(answers[2]["error"]["field"], "priority")
        self.assertEqual(answers[0]["state"], "ready")

    def test_empty_input(self):
        out, err = self.ok("submit", "-", stdin="")
        self.assertEqual(out, "")

    def test_progress_on_a_terminal(self):
        master, slave = pty.openpty()
        text = "".join('{"tenant":"t-pty","queue":"ptyq","type":"t","args":%d}\n' % i
                       for i in range(1500))
        e = {k: v for k, v in os.environ.items() if not k.startswith("TENQ_")}
        e.update(TENQ_SERVER=server["url"], TENQ_TOKEN=ADMIN)
        p = subprocess.Popen([BIN, "submit"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=slave, env=e, text=True)
        os.close(slave)
        out, _ = p.communicate(text, timeout=60)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        os.close(master)
        self.assertEqual(p.returncode, 0, shown)
        self.assertEqual(len(out.split()), 1500)
        self.assertIn(b"1500 jobs", shown)
        self.assertIn(b"jobs/s", shown)


class Admin(Case):
    def test_stats_tables(self):
        self.submit("--tenant", "t-stats", "--queue", "statsq", "--type", "t")
        out, _ = self.ok("stats")
        qtable, ttable = out.split("\n\n")
        qlines = qtable.splitlines()
        # a column per counted state, in the table's order (include/tenq/states.h)
        counted = [st.upper() for st in harness.counted_states()]
        self.assertEqual(counted[:4], ["SCHEDULED", "BLOCKED", "WAITING", "READY"])
        self.assertEqual(qlines[0].split(), ["QUEUE"] + counted + ["LAG", "DONE/S", "FAILED/S"])
        row = [line.split() for line in qlines if line.startswith("statsq ")][0]
        self.assertEqual(row[qlines[0].split().index("READY")], "1")
        self.assertEqual(row[qlines[0].split().index("SCHEDULED")], "0")
        self.assertEqual(len({len(line) for line in qlines}), 1, "aligned:\n" + qtable)
        tlines = ttable.strip().splitlines()
        self.assertEqual(tlines[0].split()[:3], ["TENANT", "SLOTS", "IN_USE"])
        self.assertTrue(any(line.startswith("t-stats ") for line in tlines))
        stats = json.loads(self.ok("stats", "--json")[0])
        self.assertIn("statsq", [q["name"] for q in stats["queues"]])
        self.assertIn("server", stats)

    def test_every_state_the_server_knows_is_a_state_and_a_count_here(self):
        # the states come from their one table (include/tenq/states.h): a
        # state added there and not known to the CLI (or libtenq) fails here
        parent = self.submit("--tenant", "t-every", "--queue", "everyq", "--type", "P")
        out, _ = self.ok("submit", "--json", "--tenant", "t-every", "--queue", "everyq",
                         "--type", "C", "--depends-on", str(parent))
        child = json.loads(out)
        self.assertEqual(child["state"], "waiting")
        for state in harness.engine_states():
            out, _ = self.ok("jobs", "--queue", "everyq", "--state", state, "--json")
            want = {"ready": [parent], "waiting": [child["id"]]}.get(state, [])
            self.assertEqual([j["id"] for j in json.loads(out)["jobs"]], want, state)
        self.fails(2, "jobs", "--state", "nonsense")
        counted = [st.upper() for st in harness.counted_states()]
        for args, first, name in ((["stats"], "QUEUE", "everyq"), (["stats"], "TENANT", "t-every"),
                                  (["tenant", "ls"], "TENANT", "t-every")):
            out, _ = self.ok(*args)
            table = [t for t in out.split("\n\n") if t.startswith(first)][0].splitlines()
            head = table[0].split()
            for col in counted:
                self.assertIn(col, head, "%s: %s" % (" ".join(args), table[0]))
            row = [line.split() for line in table if line.split()[0] == name][0]
            if first == "TENANT":  # SLOTS reads "unlimited": one word
                self.assertEqual(len(row), len(head), table)
            self.assertEqual(row[head.index("WAITING")], "1", table)
            self.assertEqual(row[head.index("READY")], "1", table)

    def test_tenants(self):
        out, _ = self.ok("tenant", "set", "t-admin", "--slots", "5", "--weight", "2")
        self.assertRegex(out, r"(?m)^slots\s+5$")
        self.assertRegex(out, r"(?m)^weight\s+2$")
        out, _ = self.ok("tenant", "set", "t-admin", "--slots", "unlimited", "--json")
        self.assertIsNone(json.loads(out)["slots"])
        out, _ = self.ok("tenant", "show", "t-admin")
        self.assertRegex(out, r"(?m)^slots\s+unlimited$")
        out, _ = self.ok("tenant", "ls")
        self.assertRegex(out, r"(?m)^t-admin\s+unlimited\s+2\s+0\s")
        names = [t["name"] for t in json.loads(self.ok("tenant", "ls", "--json")[0])["tenants"]]
        self.assertIn("t-admin", names)
        _, err = self.fails(1, "tenant", "show", "t-nobody")
        self.assertEqual(err, "tenq: not_found: no tenant t-nobody\n")
        _, err = self.fails(1, "tenant", "set", "bad name", "--weight", "1")
        self.assertIn("tenq: invalid:", err)

    def test_queues_every_setting(self):
        out, _ = self.ok("queue", "set", "q-admin", "--order", "fair", "--delivery",
                         "at-most-once", "--lease", "90s", "--max-attempts", "4", "--backoff",
                         "exponential", "--backoff-base", "2s", "--backoff-max", "1h",
                         "--merge", "true", "--dedup-window", "5m", "--retention", "0",
                         "--max-payload", "64KiB", "--tenant-cap", "3", "--timeout", "10m",
                         "--paused", "true", "--json")
        q = json.loads(out)
        self.assertEqual(
            {k: q[k] for k in ("order", "delivery", "lease_ms", "max_attempts", "backoff",
                               "backoff_base_ms", "backoff_max_ms", "merge", "dedup_window_ms",
                               "retention_ms", "max_payload_bytes", "tenant_cap", "timeout_ms",
                               "paused")},
            {"order": "fair", "delivery": "at-most-once", "lease_ms": 90000, "max_attempts": 4,
             "backoff": "exponential", "backoff_base_ms": 2000, "backoff_max_ms": 3600000,
             "merge": True, "dedup_window_ms": 300000, "retention_ms": 0,
             "max_payload_bytes": 65536, "tenant_cap": 3, "timeout_ms": 600000, "paused": True})
        self.ok("queue", "set", "q-admin", "--paused", "false")
        out, _ = self.ok("queue", "set", "q-admin", "--tenant-cap", "none", "--lease", "1m30s")
        self.assertRegex(out, r"(?m)^tenant_cap\s+none$")
        self.assertRegex(out, r"(?m)^lease_ms\s+90000$")
        out, _ = self.ok("queue", "show", "q-admin")
        self.assertRegex(out, r"(?m)^order\s+fair$")
        out, _ = self.ok("queue", "ls")
        self.assertRegex(out, r"(?m)^q-admin\s+fair\s+at-most-once\s+1m30s\s+4\s+exponential\s+"
                              r"true\s+none\s")
        _, err = self.fails(1, "queue", "show", "q-nobody")
        self.assertEqual(err, "tenq: not_found: no queue q-nobody\n")
        _, err = self.fails(1, "queue", "set", "q-admin", "--timeout", "1s")
        self.assertIn("tenq: invalid: timeout_ms must be 0 or at least a third of lease_ms", err)

    def test_bulk(self):
        for _ in range(3):
            self.submit("--tenant", "t-bulk", "--queue", "bulkq", "--type", "t")
        out, _ = self.ok("bulk", "cancel", "--queue", "bulkq", "--dry-run")
        self.assertEqual(out, "cancel: 3 jobs would change\n")
        out, _ = self.ok("bulk", "set_priority", "--queue", "bulkq", "--priority", "5")
        self.assertEqual(out, "set_priority: 3 matched, 3 changed\n")
        out, _ = self.ok("bulk", "cancel", "--queue", "bulkq", "--json")
        self.assertEqual(json.loads(out)["changed"], 3)
        _, err = self.fails(2, "bulk", "cancel")
        self.assertIn("give filters", err)
        _, err = self.fails(1, "bulk", "cancel", "--queue", "bulkq", "--state", "dead")
        self.assertIn("tenq: invalid:", err)

    def test_a_filter_too_long_to_send_stops_the_command_rather_than_being_cut(self):
        self.submit("--tenant", "t-long", "--queue", "q-long", "--type", "t")
        # the key fills the request's path: the state after it would be left out
        _, err = self.fails(2, "jobs", "--queue", "q-long", "--key", "%" * 700, "--state",
                            "dead")
        self.assertIn("too long", err)
        _, err = self.fails(2, "queue", "show", "q" * 3000)
        self.assertIn("too long", err)

    def test_queue_pause_and_resume(self):
        _, err = self.fails(1, "queue", "pause", "q-pause")  # a queue not made yet
        self.assertIn("tenq: not_found: no queue q-pause", err)
        self.ok("queue", "set", "q-pause")
        out, _ = self.ok("queue", "pause", "q-pause")
        self.assertRegex(out, r"(?m)^paused\s+true$")
        out, _ = self.ok("queue", "ls")
        self.assertRegex(out, r"(?m)^q-pause\s.*\syes\s")
        self.ok("queue", "resume", "q-pause")
        out, _ = self.ok("queue", "pause", "q-pause", "--tenant", "t-held", "--json")
        q = json.loads(out)
        self.assertEqual((q["paused"], q["paused_tenants"]), (False, ["t-held"]))
        out, _ = self.ok("queue", "ls")
        self.assertRegex(out, r"(?m)^q-pause\s.*\s1 tenant\s")
        out, _ = self.ok("queue", "resume", "q-pause", "--tenant", "t-held", "--json")
        self.assertEqual(json.loads(out)["paused_tenants"], [])
        _, err = self.fails(1, "queue", "pause", "q-pause", "--tenant", "bad name")
        self.assertIn("tenq: invalid:", err)

    def test_concurrency_keys_and_their_settings(self):
        a, _ = self.ok("submit", "--tenant", "t-key", "--queue", "q-key", "--type", "T",
                       "--concurrency-key", "acct:1=2,user:9")
        b, _ = self.ok("submit", "--tenant", "t-key", "--queue", "q-key", "--type", "T",
                       "--concurrency-key", "acct:1=2", "--json")
        self.assertIn('"id"', b)
        out, _ = self.ok("status", a.strip())
        self.assertRegex(out, r"(?m)^concurrency_keys\s+acct:1 \(limit 2\), user:9$")
        out, _ = self.ok("key", "set", "t-key", "acct:*", "--concurrency", "1")
        self.assertRegex(out, r"(?m)^concurrency\s+1$")
        out, _ = self.ok("key", "settings", "--tenant", "t-key")
        self.assertRegex(out, r"(?m)^t-key\s+acct:\*\s+1\s+-\s+1000\s+-$")
        self.ok("queue", "set", "q-key")
        out, _ = self.ok("key", "ls", "--tenant", "t-key")
        self.assertRegex(out, r"(?m)^t-key\s+acct:1\s+0\s+1\s+2\s+0\s+acct:\*\s+-$")
        self.ok("key", "rm", "t-key", "acct:*")
        out, _ = self.ok("key", "ls", "--tenant", "t-key", "--key", "acct:1", "--json")
        self.assertEqual(json.loads(out)["keys"][0]["limit"], 2)
        _, err = self.fails(2, "submit", "--tenant", "t-key", "--queue", "q-key", "--type", "T",
                            "--concurrency-key", "k=0")
        self.assertIn("--concurrency-key", err)
        _, err = self.fails(2, "key", "set", "t-key", "k", "--concurrency", "0")
        self.assertIn("--concurrency", err)
        _, err = self.fails(1, "key", "rm", "t-key", "none-set")
        self.assertIn("tenq: not_found:", err)
        # rate keys: the rate from the key's setting, the cost from the job
        out, _ = self.ok("key", "set", "t-key", "api:*", "--rate", "2", "--rate-period", "1h")
        self.assertRegex(out, r"(?m)^rate\s+2$")
        self.assertRegex(out, r"(?m)^rate_period_ms\s+3600000$")
        c, _ = self.ok("submit", "--tenant", "t-key", "--queue", "q-rate", "--type", "T",
                       "--rate-key", "api:1=2")
        out, _ = self.ok("status", c.strip())
        self.assertRegex(out, r"(?m)^rate_keys\s+api:1 \(cost 2\)$")
        self.assertRegex(out, r"(?m)^waiting\s+rate key api:1 allows its next start")
        out, _ = self.ok("key", "ls", "--tenant", "t-key", "--key", "api:1")
        self.assertRegex(out, r"(?m)^t-key\s+api:1\s.*\s2/1h00m burst 2 \(held\)$")
        _, err = self.fails(1, "submit", "--tenant", "t-key", "--queue", "q-rate", "--type", "T",
                            "--rate-key", "api:1=3")
        self.assertIn("burst of 2", err)
        # debounce and expiry
        d, _ = self.ok("submit", "--tenant", "t-key", "--queue", "q-deb", "--type", "T", "--key",
                       "doc", "--args", '{"v":1}', "--debounce", "1m", "--debounce-max", "5m")
        d2, _ = self.ok("submit", "--tenant", "t-key", "--queue", "q-deb", "--type", "T", "--key",
                        "doc", "--args", '{"v":2}', "--debounce", "1m", "--json")
        self.assertEqual(json.loads(d2)["id"], int(d))
        self.assertTrue(json.loads(d2)["debounced"])
        out, _ = self.ok("status", d.strip())
        self.assertRegex(out, r"(?m)^debounced\s+yes \(latest start \d{4}-")
        self.assertRegex(out, r'(?m)^args\s+\{"v":2\}$')
        x, _ = self.ok("submit", "--tenant", "t-key", "--queue", "q-deb", "--type", "T",
                       "--start-within", "10m")
        out, _ = self.ok("status", x.strip())
        self.assertRegex(out, r"(?m)^expire_at\s+\d{4}-")
        _, err = self.fails(1, "submit", "--tenant", "t-key", "--queue", "q-deb", "--type", "T",
                            "--debounce", "1s")
        self.assertIn("debounce_ms needs a key", err)

    def test_schedules(self):
        out, _ = self.ok("schedule", "set", "nightly", "--cron", "30 2 * * *", "--timezone",
                         "Europe/Berlin", "--missed", "once", "--tenant", "t-cron", "--queue",
                         "q-cron", "--type", "Report", "--args", '{"full":true}', "--priority",
                         "3", "--max-attempts", "2", "--timeout", "10m")
        self.assertRegex(out, r"(?m)^cron\s+30 2 \* \* \*$")
        self.assertRegex(out, r"(?m)^timezone\s+Europe/Berlin$")
        self.assertRegex(out, r"(?m)^args\s+\{\"full\":true\}$")
        self.assertRegex(out, r"(?m)^next runs\s+\d{4}-\d\d-\d\d \d\d:\d\d:00")
        out, _ = self.ok("schedule", "pause", "nightly", "--json")
        s = json.loads(out)
        self.assertEqual((s["paused"], s["missed"], s["job"]["priority"], s["job"]["max_attempts"],
                          s["job"]["timeout_ms"], s["next_runs"]), (True, "once", 3, 2, 600000, []))
        out, _ = self.ok("schedule", "ls")
        self.assertEqual(out.splitlines()[0].split()[:3], ["NAME", "CRON", "TIMEZONE"])
        self.assertRegex(out, r"(?m)^nightly\s+30 2 \* \* \*\s+Europe/Berlin\s+t-cron\s+q-cron"
                              r"\s+Report\s+-\s+-\s+paused$")
        out, _ = self.ok("schedule", "resume", "nightly")
        self.assertRegex(out, r"(?m)^paused\s+no$")
        _, err = self.fails(1, "schedule", "set", "bad", "--cron", "@daily", "--timezone",
                            "Nowhere/Land", "--tenant", "t", "--queue", "q", "--type", "T")
        self.assertIn("tenq: invalid: timezone: unknown time zone: Nowhere/Land", err)
        self.fails(2, "schedule", "set", "bad", "--queue", "q", "--type", "T")
        out, _ = self.ok("schedule", "rm", "nightly")
        self.assertEqual(out, "schedule nightly deleted\n")
        _, err = self.fails(1, "schedule", "show", "nightly")
        self.assertIn("tenq: not_found: no schedule named nightly", err)

    def test_batches(self):
        lines = "\n".join(json.dumps({"tenant": "t-batch", "queue": "q-batch", "type": "Row",
                                      "args": {"i": i}}) for i in range(3)) + "\n"
        out, _ = self.ok("batch", "create", "--tenant", "t-batch", "--on-complete",
                         '{"queue": "q-batch-cb", "type": "Done"}', "--json", stdin=lines)
        b = json.loads(out)
        self.assertEqual(len(b["jobs"]), 3)
        bid = b["id"]
        out, _ = self.ok("batch", "show", str(bid))
        self.assertRegex(out, r"(?m)^status\s+open$")
        self.assertRegex(out, r"(?m)^progress\s+0 of 3 finished \(0\.0%\), 3 pending$")
        self.assertRegex(out, r"(?m)^on_complete\s+q-batch-cb/Done: not made$")
        out, _ = self.ok("batch", "add", str(bid), stdin=json.dumps(
            {"queue": "q-batch", "type": "Row"}) + "\n")
        self.assertEqual(out, "batch %d: 1 job added\n" % bid)
        for j in self.lease("q-batch", 10):
            st, a = api("POST", "/v1/jobs/%d/ack" % j["id"], {"token": j["token"]})
            self.assertEqual(st, 200, a)
        out, _ = self.ok("batch", "show", str(bid))
        self.assertRegex(out, r"(?m)^status\s+closed$")
        self.assertRegex(out, r"(?m)^on_complete\s+q-batch-cb/Done: job \d+$")
        out, _ = self.ok("status", str(b["jobs"][0]["id"]))
        self.assertRegex(out, r"(?m)^batch\s+%d$" % bid)
        out, _ = self.ok("batch", "ls", "--tenant", "t-batch")
        self.assertEqual(out.splitlines()[0].split()[:3], ["BATCH", "TENANT", "STATUS"])
        self.assertRegex(out, r"(?m)^\s*%d\s+t-batch\s+closed\s+4\s+0\s+0\s" % bid)
        _, err = self.fails(1, "batch", "add", str(bid), stdin='{"queue": "q", "type": "T"}\n')
        self.assertIn("conflict: batch %d is closed" % bid, err)
        _, err = self.fails(2, "batch", "create", stdin="")
        self.assertIn("no jobs on stdin", err)
        _, err = self.fails(1, "batch", "create", "--tenant", "t-batch", stdin='{"queue": "q"}\n')
        self.assertIn("jobs[0].type", err)

    def test_morgue(self):
        for _ in range(4):
            self.submit("--tenant", "t-morgue", "--queue", "morgueq", "--type", "t")
        dead = [self.kill_job("morgueq") for _ in range(4)]
        out, _ = self.ok("morgue", "ls", "--queue", "morgueq")
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split(), ["ID", "TENANT", "QUEUE", "TYPE", "ATTEMPTS", "DIED",
                                            "ERROR"])
        self.assertEqual(sorted(int(line.split()[0]) for line in lines[1:]), dead)
        self.assertTrue(all(line.endswith("boom") for line in lines[1:]))
        out, err = self.ok("morgue", "ls", "--queue", "morgueq", "--sort", "id", "--limit", "2")
        first = [int(x.split()[0]) for x in out.strip().splitlines()[1:]]
        self.assertEqual(len(first), 2)
        m = re.search(r"more: --after (\S+)", err)
        self.assertTrue(m, err)
        page = json.loads(self.ok("morgue", "ls", "--queue", "morgueq", "--sort", "id",
                                  "--limit", "2", "--after", m.group(1), "--json")[0])
        self.assertEqual(sorted(first + [j["id"] for j in page["jobs"]]), dead)
        out, _ = self.ok("morgue", "requeue", str(dead[0]))
        self.assertEqual(out, "job %d requeued: ready\n" % dead[0])
        out, _ = self.ok("morgue", "rm", str(dead[1]))
        self.assertEqual(out, "job %d deleted\n" % dead[1])
        _, err = self.fails(1, "morgue", "rm", str(dead[1]))
        self.assertIn("tenq: not_found:", err)
        _, err = self.fails(1, "status", str(dead[1]))
        out, _ = self.ok("morgue", "requeue", "--queue", "morgueq", "--limit", "1")
        self.assertEqual(out, "requeued 1 job\n")
        out, _ = self.ok("morgue", "rm", "--tenant", "t-morgue", "--queue", "morgueq", "--json")
        self.assertEqual(json.loads(out), {"deleted": 1})
        out, _ = self.ok("morgue", "ls", "--queue", "morgueq")
        self.assertEqual(out, "the morgue is empty\n")
        self.submit("--tenant", "t-morgue", "--queue", "morgueq2", "--type", "t")
        self.kill_job("morgueq2")
        out, _ = self.ok("morgue", "requeue", "--all")
        self.assertRegex(out, r"^requeued [1-9]\d* jobs?\n$")


class Tokens(Case):
    def test_tokens_and_tenant_isolation(self):
        secret, err = self.ok("token", "create", "--role", "tenant:t-tok")
        secret = secret.strip()
        self.assertTrue(secret.startswith("tq_"), secret)
        self.assertIn("shown only once", err)
        m = re.search(r"token (\d+) created", err)
        tok_id = m.group(1)
        out, _ = self.ok("token", "ls")
        self.assertRegex(out, r"(?m)^\s*%s\s+tenant:t-tok\s+all\s" % tok_id)
        self.assertNotIn(secret, out)
        w = json.loads(self.ok("token", "create", "--role", "worker", "--queues", "a,b",
                               "--json")[0])
        self.assertEqual(w["queues"], ["a", "b"])
        self.assertIn(w["id"], [t["id"] for t in
                                json.loads(self.ok("token", "ls", "--json")[0])["tokens"]])
        # the tenant token submits for its tenant and sees only its jobs
        mine = self.submit("--queue", "tokq", "--type", "t", token=secret)
        other = self.submit("--tenant", "t-other", "--queue", "tokq", "--type", "t")
        self.ok("status", str(mine), token=secret)
        _, err = self.fails(1, "status", str(other), token=secret)
        self.assertEqual(err, "tenq: not_found: no job %d\n" % other)
        _, err = self.fails(1, "cancel", str(other), token=secret)
        self.assertEqual(err, "tenq: not_found: no job %d\n" % other)
        self.assertEqual(self.fails(2, "wait", str(other), "--timeout", "0", token=secret)[1],
                         "tenq: not_found: no job %d\n" % other)
        listed = json.loads(self.ok("jobs", "--queue", "tokq", "--json", token=secret)[0])
        self.assertEqual([j["id"] for j in listed["jobs"]], [mine])
        _, err = self.fails(1, "submit", "--tenant", "t-other", "--queue", "tokq", "--type", "t",
                            token=secret)
        self.assertIn("tenq: forbidden:", err)
        _, err = self.fails(1, "token", "ls", token=secret)
        self.assertIn("tenq: forbidden:", err)
        # revoked: it stops working at once
        out, _ = self.ok("token", "revoke", tok_id)
        self.assertEqual(out, "token %s revoked\n" % tok_id)
        _, err = self.fails(1, "status", str(mine), token=secret)
        self.assertEqual(err, "tenq: unauthenticated: unknown or revoked token\n")
        _, err = self.fails(1, "token", "revoke", "99999")
        self.assertIn("tenq: not_found:", err)
        _, err = self.fails(1, "token", "create", "--role", "root")
        self.assertIn("tenq: invalid:", err)

    def test_token_from_env_and_flag(self):
        _, err = self.fails(1, "stats", token=None)
        self.assertIn("tenq: unauthenticated:", err)
        self.ok("stats", "--token", ADMIN, token=None)
        self.ok("--token", ADMIN, "stats", token="wrong")
        self.fails(1, "stats", token="wrong")


class Version(Case):
    def test_version_and_the_libraries(self):
        short, _ = self.ok("--version")
        self.assertRegex(short, r"^tenq \d+\.\d+\.\d+\n$")
        out, _ = self.ok("version", token=None, servers="")
        lines = out.splitlines()
        self.assertEqual(lines[0] + "\n", short)
        self.assertEqual([ln.split(" ")[0] for ln in lines[1:]],
                         ["libevent", "sqlite", "libpq", "jansson"])
        for ln in lines[1:]:
            self.assertRegex(ln, r"^\S+ \d+\.\d+(\.\d+)?(-\S+)?$")
        out, _ = self.ok("help", "version")
        self.assertTrue(out.startswith("usage: tenq version"), out)
        self.fails(2, "version", "extra")


class Health(Case):
    def test_health_of_one_server_and_of_several(self):
        out, _ = self.ok("health", token=None)
        self.assertEqual(out, "%s: ok, leader, term %s\n" % (
            server["url"], api("GET", "/healthz")[1]["term"]))
        out, _ = self.ok("health", "--ready", "--timeout", "2s", token=None)
        self.assertIn(": ok, leader", out)
        out, _ = self.ok("health", "--json", token=None)
        self.assertEqual(json.loads(out)["status"], "ok")
        dead = dead_url()
        _, err = self.fails(1, "health", servers=dead)
        self.assertEqual(err, "tenq health: %s: unavailable: cannot connect to %s: "
                         "Connection refused\n" % (dead, dead))
        # every server is asked on its own; one down fails the whole
        rc, out, err = run("health", "--server", server["url"], "--server", dead)
        self.assertEqual(rc, 1)
        self.assertIn(server["url"] + ": ok", out)
        self.assertIn(dead + ": unavailable", err)
        rc, out, err = run("health", servers=dead + "," + server["url"])
        self.assertEqual(rc, 1)
        for args, msg in ((["health", "--timeout", "0"], "--timeout"),
                          (["health", "extra"], 'unexpected argument "extra"'),
                          (["health", "--server", "ftp://x"], "ftp://x")):
            _, err = self.fails(2, *args)
            self.assertIn(msg, err)


class Servers(Case):
    def test_server_from_env_flags_and_failover(self):
        jid = self.submit("--tenant", "t-srv", "--queue", "srvq", "--type", "t")
        dead = dead_url()
        # TENQ_SERVER is a comma-separated list, tried in order
        self.ok("status", str(jid), servers=dead + "," + server["url"])
        # --server replaces TENQ_SERVER; repeated, it fails over
        self.ok("--server", dead, "--server", server["url"], "status", str(jid), servers=dead)
        self.ok("status", str(jid), "--server", dead, "--server", server["url"], servers=dead)
        _, err = self.fails(1, "status", str(jid), servers=dead)
        self.assertRegex(err, r"^tenq: unavailable: cannot connect to http://127\.0\.0\.1:\d+: ")
        _, err = self.fails(1, "status", str(jid), "--server", dead, "--server", dead)
        self.assertIn("cannot connect to any server", err)
        # submit from stdin fails as a whole, and says so
        rc, out, err = run("submit", "--queue", "q", "--type", "t", "-",
                           stdin='{"tenant":"x"}\n', servers=dead)
        self.assertEqual(rc, 1)
        self.assertIn("cannot connect", err)

    def test_default_server_is_local(self):
        # nothing sets a server: http://127.0.0.1:7070 (which may or may not be up)
        rc, out, err = run("stats", "--json", servers="")
        if "cannot connect" in err:
            self.assertIn("http://127.0.0.1:7070", err)


if __name__ == "__main__":
    unittest.main()
