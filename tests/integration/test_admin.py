# SPDX-License-Identifier: Apache-2.0
"""tenq serve over real sockets: the admin endpoints (tenants, queues, tokens,
stats), authentication and tenant isolation."""
import json
import sys
import os
import subprocess
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import STORE, Server, ServerTest, counted_states, engine_states, main  # noqa: E402


class AdminEndpoints(ServerTest):
    def test_tenants(self):
        t = self.srv.ok("PUT", "/v1/tenants/t1", {"slots": 5, "weight": 3})
        self.assertEqual((t["slots"], t["weight"]), (5, 3))
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/t1")["slots"], 5)
        names = [x["name"] for x in self.srv.ok("GET", "/v1/tenants")["tenants"]]
        self.assertIn("t1", names)
        self.assertEqual(self.srv.req("GET", "/v1/tenants/nobody")[0], 404)
        for bad in [{"weight": 0}, {"slots": -1}, {"slots": "many"}, {"color": "red"}]:
            status, body = self.srv.req("PUT", "/v1/tenants/t1", bad)
            self.assertEqual(status, 400, bad)
        self.assertEqual(self.srv.req("PUT", "/v1/tenants/bad%20name", {"slots": 1})[0], 400)
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/t1")["weight"], 3)

    def test_every_setting_is_described_checked_and_kept(self):
        """GET /v1/settings lists every setting of queues and tenants; each is
        refused out of its range (400 naming it, nothing changed) and kept
        when valid, as its row says."""
        table = self.srv.ok("GET", "/v1/settings")
        self.assertEqual([r["name"] for r in table["tenant"]],
                         ["slots", "weight", "rate", "rate_period_ms", "rate_burst", "max_queued",
                          "max_queued_bytes"])
        self.assertIn("lease_ms", [r["name"] for r in table["queue"]])
        for kind, path in (("queue", "/v1/queues/table-q"), ("tenant", "/v1/tenants/table-t")):
            before = self.srv.ok("PUT", path, {})
            for row in table[kind]:
                name = row["name"]
                bad = ("no-such-word" if row["kind"] == "choice" else "yes" if row["kind"] == "bool"
                       else row["max"] + 1)
                status, body = self.srv.req("PUT", path, {name: bad})
                self.assertEqual((status, body["error"]["field"]), (400, name), body)
                self.assertEqual(self.srv.ok("GET", path)[name], before[name])
                choices = row.get("choices", [])
                if name == "delivery" and STORE == "sqlite":  # exactly-once: PostgreSQL only
                    choices = [c for c in choices if c != "exactly-once"]
                good = (choices[-1] if row["kind"] == "choice" else not row["default"]
                        if row["kind"] == "bool" else row["min"] if name != "backoff_max_ms"
                        else row["max"])
                self.assertEqual(self.srv.ok("PUT", path, {name: good})[name], good, name)
                self.srv.ok("PUT", path, {name: row["default"]})

    def test_queues(self):
        q = self.srv.ok("PUT", "/v1/queues/qs", {"order": "fair", "lease_ms": 60000,
                                                 "tenant_cap": 3, "merge": True})
        self.assertEqual((q["order"], q["lease_ms"], q["tenant_cap"], q["merge"]),
                         ("fair", 60000, 3, True))
        self.assertEqual(self.srv.ok("GET", "/v1/queues/qs")["order"], "fair")
        for bad, field in [({"order": "random"}, "order"), ({"lease_ms": 1}, "lease_ms"),
                           ({"tenant_cap": 0}, "tenant_cap"), ({"speed": 9}, "speed"),
                           ({"merge": "yes"}, "merge"), ({"delivery": "maybe"}, "delivery")]:
            status, body = self.srv.req("PUT", "/v1/queues/qs", bad)
            self.assertEqual(status, 400, bad)
            self.assertEqual(body["error"]["field"], field, bad)
        self.assertEqual(self.srv.ok("GET", "/v1/queues/qs")["lease_ms"], 60000)
        self.assertEqual(self.srv.req("GET", "/v1/queues/nothing")[0], 404)
        # exactly-once lets a handler complete its job in its own PostgreSQL transaction
        status, body = self.srv.req("PUT", "/v1/queues/qs", {"delivery": "exactly-once"})
        if STORE == "sqlite":
            self.assertEqual((status, body["error"]["field"]), (400, "delivery"))
            self.assertIn("PostgreSQL", body["error"]["message"])
            self.assertEqual(self.srv.ok("GET", "/v1/queues/qs")["delivery"], "at-least-once")
        else:
            self.assertEqual((status, body["delivery"]), (200, "exactly-once"))

    def test_morgue_list_requeue_delete(self):
        ids = []
        for _ in range(4):
            r = self.srv.submit(queue="mq", tenant="mt")
            j = self.srv.lease(["mq"])[0]
            self.srv.fail(j, retry=False, error="dead")
            ids.append(r["id"])
        page = self.srv.ok("GET", "/v1/morgue?queue=mq&limit=2")
        self.assertEqual([j["id"] for j in page["jobs"]], ids[::-1][:2])
        page2 = self.srv.ok("GET", "/v1/morgue?queue=mq&limit=2&after=" + page["next"])
        self.assertEqual([j["id"] for j in page2["jobs"]], ids[::-1][2:])
        by_id = self.srv.ok("GET", "/v1/morgue?queue=mq&sort=id")
        self.assertEqual([j["id"] for j in by_id["jobs"]], ids)
        self.assertEqual(self.srv.ok("POST", "/v1/morgue/%d/requeue" % ids[0])["state"],
                         "ready")
        self.assertEqual(self.srv.ok("DELETE", "/v1/morgue/%d" % ids[1])["deleted"], True)
        self.assertEqual(self.srv.req("DELETE", "/v1/morgue/%d" % ids[1])[0], 404)
        self.assertEqual(self.srv.req("POST", "/v1/morgue/%d/requeue" % ids[0])[0], 409)
        self.assertEqual(self.srv.ok("POST", "/v1/morgue/requeue", {"queue": "mq"})["requeued"],
                         2)
        self.assertEqual(self.srv.ok("GET", "/v1/morgue?queue=mq")["jobs"], [])
        self.assertEqual(self.srv.req("GET", "/v1/morgue?sort=size")[0], 400)
        self.assertEqual(self.srv.req("POST", "/v1/morgue/delete", {"q": 1})[0], 400)
        # the one job's calls take no body but {}
        d = self.srv.submit(queue="mq-one", tenant="mt")["id"]
        self.srv.fail(self.srv.lease(["mq-one"])[0], retry=False, error="dead")
        for body in ({"bogus": 1}, [], "now"):
            for method, path in (("POST", "/v1/morgue/%d/requeue" % d),
                                 ("DELETE", "/v1/morgue/%d" % d)):
                st, b = self.srv.req(method, path, body)
                self.assertEqual(st, 400, (path, body, b))
        self.assertEqual(self.srv.job(d)["state"], "dead")
        self.assertEqual(self.srv.ok("POST", "/v1/morgue/%d/requeue" % d, {})["state"], "ready")

    def test_a_batch_list_filter_is_a_name(self):
        for q in ("tenant=bad%20name", "tenant=", "tenant=" + "t" * 80, "tenants=acme"):
            st, b = self.srv.req("GET", "/v1/batches?" + q)
            self.assertEqual(st, 400, (q, b))

    def test_rates_per_queue_and_in_the_totals(self):
        for _ in range(6):
            self.srv.submit(queue="rate")
        for j in self.srv.lease(["rate"], max=6):
            self.srv.ack(j)
        deadline = time.time() + 10
        while time.time() < deadline:
            st = self.srv.ok("GET", "/v1/stats")
            q = [x for x in st["queues"] if x["name"] == "rate"][0]
            if st["totals"]["completed_per_s"] > 0 and q["completed_per_s"] > 0:
                break
            time.sleep(0.2)
        self.assertGreater(q["completed_per_s"], 0)
        self.assertGreaterEqual(st["totals"]["completed_per_s"], q["completed_per_s"])
        self.assertGreaterEqual(st["totals"]["failed_per_s"], 0)

    def test_stats_metrics_health_dashboard(self):
        self.srv.submit(queue="obs")
        st = self.srv.ok("GET", "/v1/stats")
        q = [x for x in st["queues"] if x["name"] == "obs"][0]
        self.assertEqual(q["ready"], 1)
        self.assertIn("lag_ms", q)
        self.assertIn("completed_per_s", q)
        self.assertEqual(st["server"]["store"], os.environ.get("TENQ_TEST_STORE", "sqlite")
                         .replace("postgres", "postgres"))
        status, text = self.srv.req("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertIn('tenq_queue_jobs{queue="obs",state="ready"} 1', text)
        status, body = self.srv.req("GET", "/healthz")
        self.assertEqual((status, body["status"]), (200, "ok"))
        status, html, hdrs = self.srv.raw("GET", "/")
        self.assertEqual(status, 200)
        self.assertIn("<html", html)
        self.assertIn("frame-ancestors 'none'", hdrs.get("Content-Security-Policy", ""))

    def test_every_state_of_the_engine_is_listed_and_counted_everywhere(self):
        # the states come from the engine's own list (src/engine/engine.h),
        # so a state added there and forgotten in a hand-kept list fails here
        p = self.srv.submit(tenant="t-states", queue="states")
        child = self.srv.submit(tenant="t-states", queue="states", depends_on=[p["id"]])
        self.assertEqual(child["state"], "waiting")
        for state in engine_states():
            page = self.srv.ok("GET", "/v1/jobs?queue=states&state=" + state)
            want = {"ready": [p["id"]], "waiting": [child["id"]]}.get(state, [])
            self.assertEqual([j["id"] for j in page["jobs"]], want, state)
        st = self.srv.ok("GET", "/v1/stats")
        q = [x for x in st["queues"] if x["name"] == "states"][0]
        t = [x for x in st["tenants"] if x["name"] == "t-states"][0]
        for where, counts in (("queue", q), ("tenant", t), ("totals", st["totals"]),
                              ("GET queue", self.srv.ok("GET", "/v1/queues/states")),
                              ("GET tenant", self.srv.ok("GET", "/v1/tenants/t-states"))):
            for state in counted_states():
                self.assertIn(state, counts, "%s counts lack %s" % (where, state))
            if where != "totals":
                self.assertEqual((counts["ready"], counts["waiting"]), (1, 1), where)
        metrics = self.srv.req("GET", "/metrics")[1]
        for state in counted_states():
            want = {"ready": 1, "waiting": 1}.get(state, 0)
            for kind, name in (("queue", "states"), ("tenant", "t-states")):
                self.assertIn('tenq_%s_jobs{%s="%s",state="%s"} %d\n' % (kind, kind, name, state,
                                                                        want), metrics)
        samples = self.srv.ok("GET", "/v1/stats/history")["samples"]
        self.assertGreater(len(samples), 0)
        for state in counted_states():
            key = "inflight" if state in ("leased", "running") else state
            self.assertIn(key, samples[-1], "the history lacks %s" % state)


class Auth(unittest.TestCase):
    """Tokens, roles and tenant isolation, endpoint by endpoint."""

    @classmethod
    def setUpClass(cls):
        cls.admin = "admin-secret-for-tests-0001"
        cls.srv = Server(env={"TENQ_ADMIN_TOKEN": cls.admin})
        mk = lambda role, **kw: cls.srv.token(cls.admin, role, **kw)["token"]  # noqa: E731
        cls.acme = mk("tenant:acme")
        cls.other = mk("tenant:other")
        cls.worker = mk("worker")
        cls.qworker = mk("worker", queues=["wq"])

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def test_a_token_for_no_queues_in_particular_is_not_made_by_a_null(self):
        before = self.srv.ok("GET", "/v1/tokens", token=self.admin)["tokens"]
        for body, field in (({"role": "worker", "queues": None}, "queues"),
                            ({"role": "tenant:bad name"}, "role"),
                            ({"role": "worker", "queues": ["bad name"]}, "queues"),
                            ({"role": None}, "role")):
            st, b = self.srv.req("POST", "/v1/tokens", body, token=self.admin)
            self.assertEqual((st, b["error"].get("field")), (400, field), (body, b))
        self.assertEqual(self.srv.ok("GET", "/v1/tokens", token=self.admin)["tokens"], before)

    def test_no_token_or_a_bad_token_is_401(self):
        self.assertEqual(self.srv.req("GET", "/v1/stats")[0], 401)
        self.assertEqual(self.srv.req("GET", "/v1/stats", token="nope")[0], 401)
        self.assertEqual(self.srv.req("GET", "/healthz")[0], 200)

    def test_roles(self):
        self.assertEqual(self.srv.req("POST", "/v1/lease", {"queues": ["q"]},
                                      token=self.acme)[0], 403)
        self.assertEqual(self.srv.req("POST", "/v1/jobs", {"queue": "q", "type": "T"},
                                      token=self.worker)[0], 403)
        self.assertEqual(self.srv.req("PUT", "/v1/tenants/acme", {"slots": 1},
                                      token=self.acme)[0], 403)
        self.assertEqual(self.srv.req("GET", "/v1/tokens", token=self.acme)[0], 403)
        self.assertEqual(self.srv.req("GET", "/metrics", token=self.worker)[0], 403)
        self.assertEqual(self.srv.req("POST", "/v1/lease", {"queues": ["other"]},
                                      token=self.qworker)[0], 403)

    def test_a_tenant_token_submits_for_its_own_tenant_only(self):
        r = self.srv.submit(token=self.acme, queue="iso")
        self.assertEqual(self.srv.job(r["id"], token=self.admin)["tenant"], "acme")
        status, body = self.srv.req("POST", "/v1/jobs", {"tenant": "other", "queue": "iso",
                                                         "type": "T"}, self.acme)
        self.assertEqual(status, 403)

    def test_another_tenants_job_is_404_everywhere_and_leaks_nothing(self):
        theirs = self.srv.submit(token=self.other, queue="iso2", args={"secret": "s3cr3t"})
        tid = theirs["id"]
        leased_other = self.srv.submit(token=self.other, queue="iso3")
        lj = self.srv.lease(["iso3"], token=self.worker)[0]
        self.assertEqual(lj["id"], leased_other["id"])
        dead = self.srv.submit(token=self.other, queue="iso4")
        dj = self.srv.lease(["iso4"], token=self.worker)[0]
        self.srv.fail(dj, token=self.worker, retry=False)
        checks = [("GET", "/v1/jobs/%d" % tid, None),
                  ("GET", "/v1/jobs/%d/wait?timeout_ms=10" % tid, None),
                  ("POST", "/v1/jobs/%d/cancel" % tid, None),
                  ("POST", "/v1/jobs/%d/cancel" % lj["id"], None),
                  ("POST", "/v1/morgue/%d/requeue" % dead["id"], None),
                  ("DELETE", "/v1/morgue/%d" % dead["id"], None),
                  ("GET", "/v1/tenants/other", None)]
        for method, path, body in checks:
            status, res = self.srv.req(method, path, body, token=self.acme)
            self.assertEqual(status, 404, path)
            self.assertNotIn("s3cr3t", json.dumps(res))
            self.assertNotIn('"other"', json.dumps(res).replace('"tenant":"other"', "X"))
        # lists and stats show nothing of other
        for path in ["/v1/jobs", "/v1/jobs?limit=1000", "/v1/morgue", "/v1/stats",
                     "/v1/tenants", "/v1/queues", "/v1/lanes"]:
            status, res = self.srv.req("GET", path, token=self.acme)
            self.assertEqual(status, 200, path)
            text = json.dumps(res)
            self.assertNotIn("s3cr3t", text, path)
            self.assertNotIn('"other"', text, path)
        for path in ["/v1/jobs?tenant=other", "/v1/morgue?tenant=other"]:
            status, res = self.srv.req("GET", path, token=self.acme)
            self.assertEqual(status, 403, path)
            self.assertNotIn("s3cr3t", json.dumps(res))
        status, res = self.srv.req("POST", "/v1/morgue/requeue", {"tenant": "other"},
                                   token=self.acme)
        self.assertEqual(status, 403)
        # the admin still sees it all
        self.assertEqual(self.srv.job(tid, token=self.admin)["args"], {"secret": "s3cr3t"})

    def test_a_tenant_sees_only_its_own_queues_and_lanes(self):
        self.srv.submit(token=self.other, queue="globex-payroll", key="theirs")
        self.srv.submit(token=self.other, queue="globex-payroll", key="theirs")
        self.srv.submit(token=self.acme, queue="acme-mail", key="mine")
        names = [q["name"] for q in
                 self.srv.ok("GET", "/v1/queues", token=self.acme)["queues"]]
        self.assertIn("acme-mail", names)
        self.assertNotIn("globex-payroll", names)
        self.assertEqual(self.srv.req("GET", "/v1/queues/globex-payroll",
                                      token=self.acme)[0], 404)
        self.assertEqual(self.srv.ok("GET", "/v1/queues/acme-mail",
                                     token=self.acme)["name"], "acme-mail")
        # a token that names a queue may read it before it has jobs there
        named = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:acme",
                                                   "queues": ["globex-payroll"]},
                            self.admin)["token"]
        q = self.srv.ok("GET", "/v1/queues/globex-payroll", token=named)
        self.assertEqual(q["ready"], 0)  # its own jobs: none
        lanes = self.srv.ok("GET", "/v1/lanes", token=self.acme)
        self.assertEqual([l["key"] for l in lanes["lanes"]], ["mine"])
        self.assertEqual(lanes["lanes_total"], 1)
        everyone = self.srv.ok("GET", "/v1/lanes?limit=1000", token=self.admin)
        self.assertGreaterEqual(everyone["lanes_total"], 2)
        self.assertIn("theirs", [l["key"] for l in everyone["lanes"]])

    def test_whoami(self):
        me = self.srv.ok("GET", "/v1/whoami", token=self.acme)
        self.assertEqual((me["role"], me["tenant"], me["queues"]), ("tenant", "acme", None))
        self.assertTrue(me["auth"])
        w = self.srv.ok("GET", "/v1/whoami", token=self.qworker)
        self.assertEqual((w["role"], w["queues"]), ("worker", ["wq"]))
        self.assertNotIn("tenant", w)
        a = self.srv.ok("GET", "/v1/whoami", token=self.admin)
        self.assertEqual(a["role"], "admin")
        self.assertEqual(self.srv.req("GET", "/v1/whoami")[0], 401)
        self.assertEqual(self.srv.req("GET", "/v1/whoami", token="nope")[0], 401)

    def test_revoked_token_stops_at_once(self):
        t = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:gone"}, self.admin)
        self.assertEqual(self.srv.req("GET", "/v1/stats", token=t["token"])[0], 200)
        self.srv.ok("DELETE", "/v1/tokens/%d" % t["id"], token=self.admin)
        self.assertEqual(self.srv.req("GET", "/v1/stats", token=t["token"])[0], 401)
        listed = self.srv.ok("GET", "/v1/tokens", token=self.admin)["tokens"]
        self.assertNotIn(t["id"], [x["id"] for x in listed])
        self.assertTrue(all("token" not in x for x in listed))
        self.assertEqual(self.srv.req("DELETE", "/v1/tokens/%d" % t["id"],
                                      token=self.admin)[0], 404)
        for bad in [{"role": "god"}, {"role": "tenant:bad name"}, {"role": "worker", "queues": []},
                    {}]:
            self.assertEqual(self.srv.req("POST", "/v1/tokens", bad, self.admin)[0], 400)

    def test_tokens_are_stored_hashed(self):
        t = self.srv.ok("POST", "/v1/tokens", {"role": "worker"}, self.admin)
        if self.srv.store_url.startswith("sqlite:"):
            with open(self.srv.store_url[7:], "rb") as f:
                data = f.read()
            for suffix in ["-wal", ""]:
                try:
                    with open(self.srv.store_url[7:] + suffix, "rb") as f:
                        data += f.read()
                except OSError:
                    pass
            self.assertNotIn(t["token"].encode(), data)
        else:
            out = subprocess.run(["psql", self.srv.store_url, "-Atc",
                                  "select hash from tenq.tokens"], capture_output=True, text=True)
            self.assertNotIn(t["token"], out.stdout)
            self.assertEqual(len(out.stdout.split()[0]), 64)

    def test_tokens_survive_a_restart(self):
        t = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:persist"}, self.admin)
        self.srv.stop()
        self.srv.start()
        self.assertEqual(self.srv.req("GET", "/v1/stats", token=t["token"])[0], 200)


if __name__ == "__main__":
    main()
