#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The audit log over real sockets: every change the route table marks
ROUTE_AUDIT (src/api/router.c) leaves exactly one row, with who made it,
when, from where and the request; other writes (submits, workers' calls)
and refused requests leave none; a tenant sees its own entries only; rows
are kept by --audit-retention; and a server killed with -9 while changes
commit never keeps a change without its row, nor a row without its change.

    TENQ_BIN=build/tenq python3 tests/integration/test_audit.py [-v]
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
from harness import BIN, Server, main  # noqa: E402

ROUTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "api",
                      "router.c")
ADMIN = "audit-test-admin-token-0123456789"


def route_table():
    """(method, pattern, handler, audited) of every row of the route table."""
    with open(ROUTER) as f:
        text = f.read()
    table = text[text.index("static const route routes[]"):]
    table = table[:table.index("};")]
    rows = re.findall(r'\{"(GET|POST|PUT|DELETE)", "([^"]+)", (h_\w+), ([^}]*)\}', table)
    assert len(rows) > 40, "the route table was not found in router.c"
    return [(m, p, h, "ROUTE_AUDIT" in roles) for m, p, h, roles in rows]


def same_tx(srv, audit_id, table, where):
    """PostgreSQL: whether the audit row and the changed row were written by
    one transaction (their xmin)."""
    out = subprocess.run(["psql", srv.store_url, "-tAc",
                          "SELECT (SELECT xmin::text FROM tenq.audit WHERE id = %d) = "
                          "(SELECT xmin::text FROM tenq.%s WHERE %s)" % (audit_id, table, where)],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip() == "t"


def entries(srv, token=ADMIN, **q):
    qs = "&".join("%s=%s" % kv for kv in q.items())
    st, body = srv.req("GET", "/v1/audit" + ("?" + qs if qs else ""), token=token)
    assert st == 200, (st, body)
    return body["entries"]


class AuditLog(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(env={"TENQ_ADMIN_TOKEN": ADMIN})
        cls.admin_id = cls.srv.ok("GET", "/v1/whoami", token=ADMIN)["token_id"]
        mk = lambda role, **kw: cls.srv.token(ADMIN, role, **kw)  # noqa: E731
        cls.acme = mk("tenant:acme")
        cls.other = mk("tenant:other")
        cls.worker = mk("worker")
        cls.blind = mk("viewer", hide_data=True)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.assert_clean()
        cls.srv.cleanup()

    def newest_id(self):
        got = entries(self.srv, limit=1)
        return got[0]["id"] if got else 0

    def dead_job(self, tenant="acme", queue="aq"):
        j = self.srv.submit(token=ADMIN, tenant=tenant, queue=queue, type="T")
        for got in self.srv.lease([queue], max=10, token=self.worker["token"]):
            self.srv.fail(got, token=self.worker["token"], error="x", retry=False)
        return j["id"]

    def test_every_audited_route_leaves_one_row_and_others_none(self):
        s = self.srv
        s.ok("PUT", "/v1/schedules/asched", {"cron": "@every 1h", "job": {
            "tenant": "acme", "queue": "aq3", "type": "T"}}, token=ADMIN)
        # a request that does each route's change, made by the admin token
        tok = lambda: s.ok("POST", "/v1/tokens", {"role": "worker"}, token=ADMIN)  # noqa
        plan = {
            "h_jobs_bulk": lambda: ("/v1/jobs/bulk", {"action": "retry_now", "queue": "aq"}),
            "h_cancel": lambda: ("/v1/jobs/%d/cancel" % s.submit(token=ADMIN, tenant="acme",
                                                                 queue="aq2")["id"], None),
            "h_tenant_put": lambda: ("/v1/tenants/acme", {"weight": 3}),
            "h_queue_put": lambda: ("/v1/queues/aq", {"lease_ms": 61000}),
            "h_queue_pause": lambda: ("/v1/queues/aq/pause", None),
            "h_queue_resume": lambda: ("/v1/queues/aq/resume", None),
            "h_schedule_put": lambda: ("/v1/schedules/asched", {"cron": "@every 2h", "job": {
                "tenant": "acme", "queue": "aq3", "type": "T"}}),
            "h_schedule_pause": lambda: ("/v1/schedules/asched/pause", None),
            "h_schedule_resume": lambda: ("/v1/schedules/asched/resume", None),
            "h_schedule_delete": lambda: ("/v1/schedules/asched", None),
            "h_morgue_requeue": lambda: ("/v1/morgue/%d/requeue" % self.dead_job(), None),
            "h_morgue_delete": lambda: ("/v1/morgue/%d" % self.dead_job(), None),
            "h_morgue_requeue_where": lambda: (self.dead_job() and "/v1/morgue/requeue",
                                               {"queue": "aq"}),
            "h_morgue_delete_where": lambda: (self.dead_job() and "/v1/morgue/delete",
                                              {"queue": "aq"}),
            "h_token_create": lambda: ("/v1/tokens", {"role": "tenant:acme"}),
            "h_token_revoke": lambda: ("/v1/tokens/%d" % tok()["id"], None),
        }
        routes = route_table()
        audited = [(m, p, h) for m, p, h, a in routes if a]
        self.assertEqual(sorted(h for _, _, h in audited), sorted(plan),
                         "every audited route has a request here, and no other")
        # the delete schedule route is the last of the schedule's
        order = sorted(audited, key=lambda r: r[2] == "h_schedule_delete")
        for method, pattern, handler in order:
            path, body = plan[handler]()
            before = self.newest_id()
            st, got = s.req(method, path, body, token=ADMIN)
            self.assertIn(st, (200, 201), (method, path, got))
            new = [e for e in entries(s) if e["id"] > before]
            self.assertEqual(len(new), 1, (method, path, new))
            e = new[0]
            self.assertEqual((e["method"], e["path"], e["status"], e["token_id"], e["role"],
                              e["tenant"]), (method, path, st, self.admin_id, "admin", None))
            self.assertRegex(e["peer"], r"^127\.0\.0\.1:\d+$")
            self.assertLessEqual(abs(e["at"] - time.time() * 1000), 60000)
            if body is not None:
                self.assertEqual(json.loads(e["detail"]), body)
            # PostgreSQL: the row and its change, one transaction
            changed = {"h_tenant_put": lambda: ("tenants", "name = 'acme'"),
                       "h_queue_put": lambda: ("queues", "name = 'aq'"),
                       "h_queue_pause": lambda: ("queues", "name = 'aq'"),
                       "h_schedule_put": lambda: ("schedules", "name = 'asched'"),
                       "h_token_create": lambda: ("tokens", "id = %d" % got["id"]),
                       "h_cancel": lambda: ("jobs", "id = %s" % path.split("/")[3]),
                       "h_morgue_requeue": lambda: ("jobs", "id = %s" % path.split("/")[3])}
            if harness.STORE == "postgres" and handler in changed:
                self.assertTrue(same_tx(s, e["id"], *changed[handler]()), handler)
        # bulk delete of finished jobs: its own transaction, its row in it
        s.ok("POST", "/v1/jobs/%d/cancel" % s.submit(token=ADMIN, tenant="acme",
                                                     queue="aq5")["id"], token=ADMIN)
        before = self.newest_id()
        got = s.ok("POST", "/v1/jobs/bulk", {"action": "delete", "queue": "aq5"}, token=ADMIN)
        self.assertEqual(got["changed"], 1)
        new = [e for e in entries(s) if e["id"] > before]
        self.assertEqual([(e["method"], e["path"]) for e in new], [("POST", "/v1/jobs/bulk")])
        # writes the route table does not mark, refusals, dry runs: no row
        before = self.newest_id()
        s.submit(token=ADMIN, tenant="acme", queue="aq4")
        s.ok("POST", "/v1/batches", {"jobs": [{"tenant": "acme", "queue": "aq4", "type": "T"}]},
             token=ADMIN)
        for j in s.lease(["aq4"], max=10, token=self.worker["token"]):
            s.ack(j, token=self.worker["token"])
        self.assertEqual(s.req("PUT", "/v1/queues/aq", {"lease_ms": 1}, token=ADMIN)[0], 400)
        self.assertEqual(s.req("PUT", "/v1/tenants/acme", {"weight": 3},
                               token=self.acme["token"])[0], 403)
        s.ok("POST", "/v1/jobs/bulk", {"action": "cancel", "queue": "aq", "dry_run": True},
             token=ADMIN)
        self.assertEqual(s.req("POST", "/v1/jobs/999999/cancel", token=ADMIN)[0], 404)
        self.assertEqual([e for e in entries(s) if e["id"] > before], [])

    def test_a_tenant_sees_its_own_entries_and_filters(self):
        s = self.srv
        for t in (self.acme, self.other):  # a tenant pauses a queue it has had jobs in
            s.ok("POST", "/v1/jobs", {"queue": "tq", "type": "T"}, token=t["token"])
        s.ok("POST", "/v1/queues/tq/pause", token=self.acme["token"])
        s.ok("POST", "/v1/queues/tq/pause", token=self.other["token"])
        s.ok("PUT", "/v1/queues/tq", {"lease_ms": 62000}, token=ADMIN)
        mine = entries(s, token=self.acme["token"])
        self.assertTrue(mine)
        self.assertEqual({(e["tenant"], e["role"], e["token_id"]) for e in mine},
                         {("acme", "tenant:acme", self.acme["id"])})
        st, body = s.req("GET", "/v1/audit?tenant=other", token=self.acme["token"])
        self.assertEqual((st, body["error"]["field"]), (403, "tenant"))
        self.assertEqual(s.req("GET", "/v1/audit", token=self.worker["token"])[0], 403)
        # the admin sees every one, and narrows
        self.assertEqual({e["tenant"] for e in entries(s, path="/v1/queues/tq")},
                         {"acme", "other", None})
        self.assertEqual([e["tenant"] for e in entries(s, tenant="other", path="/v1/queues/tq")],
                         ["other"])
        self.assertEqual({e["tenant"] for e in entries(s, tenant="", path="/v1/queues/tq")},
                         {None})
        self.assertEqual({e["token_id"] for e in entries(s, token_id=self.acme["id"])},
                         {self.acme["id"]})
        self.assertEqual({e["method"] for e in entries(s, method="PUT")}, {"PUT"})
        # pages, newest first
        all_ = entries(s, limit=1000)
        ids = [e["id"] for e in all_]
        self.assertEqual(ids, sorted(ids, reverse=True))
        st, page = s.req("GET", "/v1/audit?limit=2", token=ADMIN)
        self.assertEqual([e["id"] for e in page["entries"]], ids[:2])
        nxt = entries(s, limit=2, before=page["next_before"])
        self.assertEqual([e["id"] for e in nxt], ids[2:4])
        t = all_[len(all_) // 2]["at"]
        self.assertTrue(all(e["at"] >= t for e in entries(s, since=t, limit=1000)))
        self.assertTrue(all(e["at"] < t for e in entries(s, until=t, limit=1000)))
        # a viewer that does not see data sees no request bodies
        self.assertTrue(all("detail" not in e for e in entries(s, token=self.blind["token"])))
        for bad in ("limit=0", "limit=x", "before=-1", "since=soon"):
            self.assertEqual(s.req("GET", "/v1/audit?" + bad, token=ADMIN)[0], 400, bad)

    def test_the_cli_lists_the_log(self):
        self.srv.ok("PUT", "/v1/queues/cliq", {"lease_ms": 63000}, token=ADMIN)
        env = dict(os.environ, TENQ_SERVER=self.srv.url(), TENQ_TOKEN=ADMIN)
        p = subprocess.run([BIN, "audit", "--path", "/v1/queues/cliq"], capture_output=True,
                           text=True, env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\d+ +admin +PUT /v1/queues/cliq +200 +127\.0\.0\.1:\d+ +"
                                   r'\{"lease_ms": ?63000\}')
        p = subprocess.run([BIN, "--json", "audit", "--limit", "1"], capture_output=True,
                           text=True, env=env, timeout=30)
        self.assertEqual(len(json.loads(p.stdout)["entries"]), 1)


class Retention(unittest.TestCase):
    def test_rows_older_than_the_retention_go(self):
        srv = Server(args=["--audit-retention", "2s"])
        try:
            srv.ok("PUT", "/v1/queues/rq", {"lease_ms": 64000})
            self.assertEqual(len(entries(srv, token=None)), 1)
            deadline = time.time() + 60
            while entries(srv, token=None) and time.time() < deadline:
                time.sleep(0.5)
            self.assertEqual(entries(srv, token=None), [])
            self.assertEqual(srv.ok("GET", "/v1/queues/rq")["lease_ms"], 64000)
        finally:
            srv.stop()
            srv.cleanup()


class KillNine(unittest.TestCase):
    """Changes made by several clients at once, each its own queue's lease_ms
    counting up (and tokens made); the server killed -9 in the middle of
    commits (held open by TENQ_TEST_COMMIT_DELAY_MS).  After the restart,
    every queue's value and the rows of its changes agree: the rows are
    exactly those of the values up to the one it holds, each once, and every
    answered change is there."""

    def test_a_change_and_its_row_are_one_commit(self):
        rounds = int(os.environ.get("TENQ_AUDIT_KILL_ROUNDS", "3"))
        for r in range(rounds):
            self.one_round(r)

    def one_round(self, r):
        srv = Server(env={"TENQ_TEST_COMMIT_DELAY_MS": "15", "TENQ_ADMIN_TOKEN": ADMIN})
        acked = {}
        made = []
        stop = threading.Event()

        def changer(i):
            k = 0
            while not stop.is_set():
                try:
                    st, _ = srv.req("PUT", "/v1/queues/k%d" % i, {"lease_ms": 1000 + k},
                                    token=ADMIN, conn="c%d" % i)
                except Exception:  # noqa: BLE001 (the server was killed)
                    return
                if st != 200:
                    return
                acked[i] = k
                k += 1

        def tokens():
            while not stop.is_set():
                try:
                    st, body = srv.req("POST", "/v1/tokens", {"role": "worker"}, token=ADMIN,
                                       conn="tok")
                except Exception:  # noqa: BLE001
                    return
                if st != 201:
                    return
                made.append(body["id"])

        threads = [threading.Thread(target=changer, args=(i,)) for i in range(4)]
        threads.append(threading.Thread(target=tokens))
        try:
            for t in threads:
                t.start()
            time.sleep(1.0 + 0.3 * r)
            srv.kill()
            stop.set()
            for t in threads:
                t.join(30)
            srv.start()
            rows = entries(srv, limit=1000)
            self.assertLess(len(rows), 1000)
            for i in range(4):
                mine = sorted((json.loads(e["detail"])["lease_ms"] - 1000, e["id"])
                              for e in rows if e["path"] == "/v1/queues/k%d" % i)
                got = srv.req("GET", "/v1/queues/k%d" % i, token=ADMIN)
                if got[0] == 404:  # not one change of it committed
                    self.assertEqual(mine, [])
                    self.assertNotIn(i, acked)
                    continue
                held = got[1]["lease_ms"] - 1000
                self.assertEqual([k for k, _ in mine], list(range(held + 1)),
                                 "queue k%d holds %d" % (i, held))
                self.assertGreaterEqual(held, acked.get(i, -1))
                if harness.STORE == "postgres":  # the last change and its row: one transaction
                    self.assertTrue(same_tx(srv, mine[-1][1], "queues", "name = 'k%d'" % i))
            kept = {t["id"] for t in srv.ok("GET", "/v1/tokens", token=ADMIN)["tokens"]}
            token_rows = [e for e in rows if e["path"] == "/v1/tokens"]
            self.assertEqual(len(token_rows), len(kept) - 1)  # the admin's: from the environment
            self.assertTrue(set(made) <= kept)
            self.assertGreater(len(rows), 4)
        finally:
            stop.set()
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    main()
