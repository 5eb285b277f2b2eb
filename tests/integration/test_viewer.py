#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Viewer tokens over real sockets: a viewer reads what its scope reads
(every tenant, or one) and changes nothing; every route that is not a GET,
taken from the route table itself (src/api/router.c), is refused 403 and
leaves the server's state as it was; a viewer made with hide_data sees jobs
without their args, payloads, results and progress, everywhere they show.

    TENQ_BIN=build/tenq python3 tests/integration/test_viewer.py [-v]
"""
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import BIN, Server, main  # noqa: E402

ROUTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "api",
                      "router.c")
ADMIN = "viewer-test-admin-token-0123456789"


def route_table():
    """(method, pattern, handler) of every row of the server's route table."""
    with open(ROUTER) as f:
        text = f.read()
    table = text[text.index("static const route routes[]"):]
    table = table[:table.index("};")]
    rows = re.findall(r'\{"(GET|POST|PUT|DELETE|PATCH)", "([^"]+)", (h_\w+),', table)
    assert len(rows) > 40, "the route table was not found in router.c"
    return rows


class Viewer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        s = cls.srv = Server(env={"TENQ_ADMIN_TOKEN": ADMIN})
        tok = lambda role, **kw: s.token(ADMIN, role, **kw)["token"]  # noqa: E731
        cls.viewer = tok("viewer")
        cls.acme_viewer = tok("viewer:acme")
        cls.blind = tok("viewer", hide_data=True)
        cls.acme_blind = tok("viewer:acme", hide_data=True)
        cls.worker = tok("worker")
        # something of every kind to read (and to try to change)
        cls.acme_job = s.submit(token=ADMIN, tenant="acme", queue="vq", args={"secret": "s3"})["id"]
        cls.other_job = s.submit(token=ADMIN, tenant="other", queue="vq",
                                 args={"secret": "o1"})["id"]
        child = s.ok("POST", "/v1/jobs", {"tenant": "acme", "queue": "vq2", "type": "T",
                                          "args": {"secret": "c"},
                                          "depends_on": [cls.acme_job]}, token=ADMIN)
        cls.child_job = child["id"]
        # the parent succeeds with a result; another job dies
        got = s.lease(["vq"], max=10, token=cls.worker)
        for j in got:
            if j["id"] == cls.acme_job:
                s.ack(j, token=cls.worker, result={"secret": "r1"})
            else:
                s.fail(j, token=cls.worker, error="boom", retry=False)
        cls.dead_job = cls.other_job
        s.ok("PUT", "/v1/schedules/vsched", {"cron": "@every 1h", "job": {
            "tenant": "acme", "queue": "vq3", "type": "Tick", "args": {"secret": "sch"}}},
            token=ADMIN)
        b = s.ok("POST", "/v1/batches", {"jobs": [{"tenant": "acme", "queue": "vq4", "type": "T",
                                                   "args": {"secret": "b"}}],
                                         "on_complete": {"queue": "vq4", "type": "Done",
                                                         "args": {"secret": "cb"}}},
                 token=ADMIN)
        cls.batch = b["id"]
        s.ok("PUT", "/v1/queues/vq", {"lease_ms": 60000}, token=ADMIN)
        s.ok("PUT", "/v1/tenants/acme", {"weight": 2}, token=ADMIN)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.assert_clean()
        cls.srv.cleanup()

    def get(self, path, token):
        return self.srv.req("GET", path, token=token)

    def snapshot(self):
        """What the server holds, as an admin reads it."""
        out = {}
        for path in ("/v1/jobs?limit=1000", "/v1/queues", "/v1/tenants", "/v1/schedules",
                     "/v1/batches", "/v1/morgue", "/v1/tokens",
                     "/v1/jobs/%d" % self.acme_job, "/v1/jobs/%d" % self.child_job):
            st, body = self.srv.req("GET", path, token=ADMIN)
            self.assertEqual(st, 200, (path, body))
            out[path] = drop_moving(body)
        return out

    def test_whoami_says_read_only(self):
        st, me = self.get("/v1/whoami", self.viewer)
        self.assertEqual((st, me["role"], me["read_only"], me["hide_data"]),
                         (200, "viewer", True, False))
        self.assertNotIn("tenant", me)
        st, me = self.get("/v1/whoami", self.acme_blind)
        self.assertEqual((me["role"], me["tenant"], me["hide_data"]), ("viewer", "acme", True))

    def test_a_viewer_reads_what_its_scope_reads(self):
        # every tenant
        st, jobs = self.get("/v1/jobs?limit=100", self.viewer)
        self.assertEqual(st, 200)
        self.assertEqual({j["tenant"] for j in jobs["jobs"]}, {"acme", "other"})
        self.assertEqual(self.get("/v1/jobs/%d" % self.other_job, self.viewer)[1]["args"],
                         {"secret": "o1"})
        for path in ("/v1/tokens", "/v1/workers", "/v1/stats/history", "/metrics",
                     "/v1/morgue", "/v1/schedules", "/v1/batches/%d" % self.batch,
                     "/v1/tenants", "/v1/lanes", "/v1/jobs/%d/attempts" % self.dead_job,
                     "/v1/jobs/%d/parents" % self.child_job, "/v1/jobs/%d/wait?timeout_ms=0"
                     % self.acme_job):
            self.assertEqual(self.get(path, self.viewer)[0], 200, path)
        # the lease token is not shown to a viewer
        self.assertNotIn("token", self.get("/v1/jobs/%d" % self.acme_job, self.viewer)[1])
        # one tenant: its own only, as a tenant token reads
        st, jobs = self.get("/v1/jobs?limit=100", self.acme_viewer)
        self.assertEqual({j["tenant"] for j in jobs["jobs"]}, {"acme"})
        self.assertEqual(self.get("/v1/jobs/%d" % self.other_job, self.acme_viewer)[0], 404)
        st, morgue = self.get("/v1/morgue", self.acme_viewer)
        self.assertEqual(morgue["jobs"], [])
        for path in ("/v1/tokens", "/v1/workers", "/v1/stats/history", "/metrics"):
            self.assertEqual(self.get(path, self.acme_viewer)[0], 403, path)
        st, tenants = self.get("/v1/tenants", self.acme_viewer)
        self.assertEqual([t["name"] for t in tenants["tenants"]], ["acme"])

    def test_every_write_is_refused_and_changes_nothing(self):
        fill = {"/v1/jobs/{}": str(self.acme_job), "/v1/morgue/{}": str(self.dead_job),
                "/v1/schedules/{}": "vsched", "/v1/queues/{}": "vq", "/v1/tenants/{}": "acme",
                "/v1/tokens/{}": "1", "/v1/batches/{}": str(self.batch)}
        bodies = {
            "h_submit": {"tenant": "acme", "queue": "vq", "type": "T"},
            "h_jobs_bulk": {"action": "cancel", "queue": "vq"},
            "h_lease": {"worker": "v", "queues": ["vq", "vq2", "vq4"], "max": 10},
            "h_outcomes": {"outcomes": [{"id": self.child_job, "token": 1, "ok": True}]},
            "h_tenant_put": {"weight": 9}, "h_queue_put": {"lease_ms": 1000},
            "h_schedule_put": {"cron": "@every 1s", "job": {"tenant": "acme", "queue": "vq3",
                                                            "type": "X"}},
            "h_batch_create": {"jobs": [{"tenant": "acme", "queue": "vq", "type": "T"}]},
            "h_batch_add": {"jobs": [{"tenant": "acme", "queue": "vq", "type": "T"}]},
            "h_morgue_requeue_where": {"queue": "vq"}, "h_morgue_delete_where": {"queue": "vq"},
            "h_token_create": {"role": "admin"},
        }
        writes = [(m, p, h) for m, p, h in route_table() if m != "GET"]
        self.assertGreater(len(writes), 20)
        before = self.snapshot()
        for token in (self.viewer, self.acme_viewer, self.blind):
            for method, pattern, handler in writes:
                path = pattern
                for prefix, val in fill.items():
                    if pattern.startswith(prefix.replace("{}", "")) and "{}" in pattern:
                        path = pattern.replace("{}", val, 1)
                        break
                body = bodies.get(handler, {"token": 1})
                st, got = self.srv.req(method, path, body, token=token)
                self.assertEqual(st, 403, (method, path, got))
                self.assertEqual(got["error"]["code"], "forbidden")
                self.assertIn("a viewer token reads only", got["error"]["message"])
        self.assertEqual(self.snapshot(), before)

    def test_a_viewer_without_data_sees_no_args_or_results(self):
        for tok in (self.blind, self.acme_blind):
            st, j = self.get("/v1/jobs/%d" % self.acme_job, tok)
            self.assertEqual(st, 200)
            self.assertTrue(j["data_hidden"])
            for k in ("args", "payloads", "result", "progress"):
                self.assertNotIn(k, j)
            self.assertEqual(j["state"], "succeeded")  # the job itself is there
            self.assert_no_secret(tok)
        st, got = self.get("/v1/jobs?args=s3", self.blind)
        self.assertEqual((st, got["error"]["field"]), (403, "args"))
        # the same reads with a viewer that sees data show it
        self.assertEqual(self.get("/v1/jobs/%d" % self.acme_job, self.viewer)[1]["result"],
                         {"secret": "r1"})
        self.assertEqual(self.get("/v1/jobs?args=s3", self.viewer)[0], 200)

    def assert_no_secret(self, tok):
        for path in ("/v1/jobs?limit=100", "/v1/jobs/%d" % self.acme_job,
                     "/v1/jobs/%d/wait?timeout_ms=0" % self.acme_job,
                     "/v1/jobs/%d/parents" % self.child_job, "/v1/morgue", "/v1/schedules",
                     "/v1/schedules/vsched", "/v1/batches", "/v1/batches/%d" % self.batch,
                     "/v1/jobs/%d/attempts" % self.dead_job):
            st, body = self.get(path, tok)
            if tok == self.acme_blind and str(self.dead_job) in path:
                self.assertEqual(st, 404)  # another tenant's job
                continue
            self.assertEqual(st, 200, (path, body))
            self.assertNotIn('"secret"', json.dumps(body), path)

    def test_hide_data_is_kept_across_a_restart_and_is_for_viewers_only(self):
        st, body = self.srv.req("POST", "/v1/tokens", {"role": "tenant:acme", "hide_data": True},
                                token=ADMIN)
        self.assertEqual((st, body["error"]["field"]), (400, "hide_data"))
        st, body = self.srv.req("POST", "/v1/tokens", {"role": "viewer", "hide_data": "yes"},
                                token=ADMIN)
        self.assertEqual((st, body["error"]["field"]), (400, "hide_data"))
        self.srv.stop()
        self.srv.start()
        st, j = self.get("/v1/jobs/%d" % self.acme_job, self.blind)
        self.assertTrue(j["data_hidden"])
        self.assertNotIn("args", j)
        toks = {t["role"] + ("/hidden" if t["hide_data"] else "")
                for t in self.srv.ok("GET", "/v1/tokens", token=ADMIN)["tokens"]}
        self.assertTrue({"viewer", "viewer:acme", "viewer/hidden", "viewer:acme/hidden"} <= toks)

    def test_the_cli_makes_and_lists_viewer_tokens(self):
        env = dict(os.environ, TENQ_SERVER=self.srv.url(), TENQ_TOKEN=ADMIN)
        p = subprocess.run([BIN, "token", "create", "--role", "viewer:acme", "--hide-data"],
                           capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        secret = p.stdout.strip()
        st, me = self.get("/v1/whoami", secret)
        self.assertEqual((me["role"], me["tenant"], me["hide_data"]), ("viewer", "acme", True))
        p = subprocess.run([BIN, "token", "ls"], capture_output=True, text=True, env=env,
                           timeout=30)
        self.assertRegex(p.stdout, r"viewer:acme +all +hidden")
        p = subprocess.run([BIN, "submit", "--tenant", "acme", "--queue", "vq", "--type", "T"],
                           capture_output=True, text=True, timeout=30,
                           env=dict(env, TENQ_TOKEN=secret))
        self.assertEqual(p.returncode, 1)
        self.assertIn("a viewer token reads only", p.stderr)


def drop_moving(body):
    """An answer without what moves by itself (times, rates, lags)."""
    if isinstance(body, dict):
        return {k: drop_moving(v) for k, v in body.items()
                if not re.search(r"(_ms|_per_s|^next_runs|^waiting|^time|^now)$", k)}
    if isinstance(body, list):
        return [drop_moving(v) for v in body]
    return body


if __name__ == "__main__":
    main()
