# SPDX-License-Identifier: Apache-2.0
"""Dependencies: a job submitted with depends_on waits (state "waiting") until
every parent succeeded; on_parent_failure decides what a parent's death or
cancellation does; a many-submit names earlier jobs by {"index": i}; GET
/v1/jobs/{id}/parents gives the parents' states and results; bad input
changes nothing; a kill -9 and a restart lose no edge. One server per class,
real sockets, either store (TENQ_TEST_STORE)."""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chaos"))
from harness import STORE, Server, ServerTest, main  # noqa: E402

ADMIN = "admin-secret-for-tests-0001"


def parents(srv, id, token=None):
    return srv.ok("GET", "/v1/jobs/%d/parents" % id, token=token)


def leased_ids(srv, queue, max=50):
    return sorted(j["id"] for j in srv.lease([queue], max=max))


def ack_id(srv, got, id, **kw):
    """Acks the job of that id among the leased ones."""
    srv.ack(next(j for j in got if j["id"] == id), **kw)


class Chains(ServerTest):
    def test_a_chain_runs_in_order_and_children_read_their_parents_results(self):
        a = self.srv.submit(queue="c1", args={"step": "a"})
        b = self.srv.submit(queue="c1", depends_on=[a["id"]])
        c = self.srv.submit(queue="c1", depends_on=[b["id"]])
        self.assertEqual((b["state"], c["state"]), ("waiting", "waiting"))
        jb = self.srv.job(b["id"])
        self.assertEqual(jb["parents"], [a["id"]])
        self.assertEqual(jb["on_parent_failure"], "cancel")
        self.assertEqual(jb["waiting"]["reason"], "parents")
        self.assertEqual(jb["waiting"]["parents"], [a["id"]])
        self.assertEqual(self.srv.job(a["id"])["children"], [b["id"]])
        q = self.srv.ok("GET", "/v1/queues/c1")
        self.assertEqual((q["ready"], q["waiting"]), (1, 2))
        got = self.srv.lease(["c1"], max=10)
        self.assertEqual([j["id"] for j in got], [a["id"]])  # only the root runs
        self.srv.ack(got[0], result={"rows": 42})
        self.assertEqual(self.srv.job(b["id"])["state"], "ready")
        self.assertEqual(self.srv.job(c["id"])["state"], "waiting")
        got = self.srv.lease(["c1"], max=10)
        self.assertEqual([j["id"] for j in got], [b["id"]])
        self.assertEqual(got[0]["parents"], [a["id"]])  # in the lease too
        p = parents(self.srv, b["id"])
        self.assertEqual(p["parents"], [{"id": a["id"], "state": "succeeded",
                                         "result": {"rows": 42}}])
        self.assertEqual(p["children"], [{"id": c["id"], "state": "waiting"}])
        self.assertEqual(p["children_count"], 1)
        self.srv.ack(got[0])
        self.assertEqual(leased_ids(self.srv, "c1"), [c["id"]])
        # finished jobs, read from the store, show their edges too
        ja = self.srv.job(a["id"])
        self.assertEqual((ja["state"], ja["children"]), ("succeeded", [b["id"]]))
        jb = self.srv.job(b["id"])
        self.assertEqual((jb["state"], jb["parents"], jb["children"]),
                         ("succeeded", [a["id"]], [c["id"]]))

    def test_two_parents_both_must_succeed(self):
        p1 = self.srv.submit(queue="c2")
        p2 = self.srv.submit(queue="c2")
        c = self.srv.submit(queue="c2", depends_on=[p1["id"], p2["id"]])
        got = self.srv.lease(["c2"], max=10)
        self.assertEqual(sorted(j["id"] for j in got), [p1["id"], p2["id"]])
        ack_id(self.srv, got, p2["id"])
        w = self.srv.job(c["id"])["waiting"]
        self.assertEqual(w["parents"], [p1["id"]])
        ack_id(self.srv, got, p1["id"])
        self.assertEqual(leased_ids(self.srv, "c2"), [c["id"]])

    def test_a_many_submit_names_earlier_jobs_by_index(self):
        r = self.srv.ok("POST", "/v1/jobs", {"jobs": [
            {"tenant": "acme", "queue": "c3", "type": "extract"},
            {"tenant": "acme", "queue": "c3", "type": "transform", "depends_on": [{"index": 0}]},
            {"tenant": "acme", "queue": "c3", "type": "load",
             "depends_on": [{"index": 1}, {"index": 0}]},
            {"tenant": "acme", "queue": "c3", "type": "bad", "depends_on": [{"index": 3}]},
            {"tenant": "acme", "queue": "c3", "type": "bad-parent", "depends_on": [{"index": 3}]},
        ]})["jobs"]
        self.assertEqual([x.get("state") for x in r[:3]], ["ready", "waiting", "waiting"])
        self.assertEqual(r[3]["error"]["field"], "depends_on")  # itself: not earlier
        self.assertEqual(r[4]["error"]["code"], "conflict")      # names a refused job
        self.assertEqual(self.srv.job(r[2]["id"])["parents"], [r[1]["id"], r[0]["id"]])
        for want in (r[0]["id"], r[1]["id"], r[2]["id"]):
            got = self.srv.lease(["c3"], max=10)
            self.assertEqual([j["id"] for j in got], [want])
            self.srv.ack(got[0])

    def test_a_parent_that_dies_cancels_or_lets_run_by_policy(self):
        p = self.srv.submit(queue="c4", max_attempts=1)
        cancel = self.srv.submit(queue="c4", depends_on=[p["id"]])
        grand = self.srv.submit(queue="c4", depends_on=[cancel["id"]])
        run = self.srv.submit(queue="c4", depends_on=[p["id"]], on_parent_failure="run")
        got = self.srv.lease(["c4"], max=10)
        self.assertEqual([j["id"] for j in got], [p["id"]])
        self.srv.fail(got[0], error="boom")
        self.assertEqual(self.srv.job(p["id"])["state"], "dead")
        jc = self.srv.job(cancel["id"])
        self.assertEqual(jc["state"], "cancelled")
        self.assertIn("parent %d is dead" % p["id"], jc["error"])
        self.assertEqual(self.srv.job(grand["id"])["state"], "cancelled")  # the cascade
        self.assertEqual(self.srv.job(run["id"])["state"], "ready")
        # requeued from the morgue: what was cancelled stays cancelled
        self.srv.ok("POST", "/v1/morgue/%d/requeue" % p["id"])
        self.assertEqual(self.srv.job(cancel["id"])["state"], "cancelled")
        self.assertEqual(leased_ids(self.srv, "c4"), sorted([p["id"], run["id"]]))

    def test_a_cancelled_parent_applies_the_policy(self):
        p = self.srv.submit(queue="c5")
        c = self.srv.submit(queue="c5", depends_on=[p["id"]])
        r = self.srv.submit(queue="c5", depends_on=[p["id"]], on_parent_failure="run")
        self.srv.ok("POST", "/v1/jobs/%d/cancel" % p["id"])
        self.assertEqual(self.srv.job(c["id"])["state"], "cancelled")
        self.assertEqual(self.srv.job(r["id"])["state"], "ready")

    def test_a_bulk_cancel_of_waiting_jobs(self):
        p = self.srv.submit(queue="c7")
        kids = [self.srv.submit(queue="c7", depends_on=[p["id"]]) for _ in range(3)]
        grand = self.srv.submit(queue="c7", depends_on=[kids[0]["id"]])
        a = self.srv.ok("POST", "/v1/jobs/bulk", {"action": "cancel", "queue": "c7",
                                                  "state": ["waiting"], "dry_run": True})
        self.assertEqual(a["matched"], 4)
        self.srv.ok("POST", "/v1/jobs/bulk", {"action": "cancel", "queue": "c7",
                                              "state": "waiting"})
        for k in kids + [grand]:
            self.assertEqual(self.srv.job(k["id"])["state"], "cancelled")
        self.assertEqual(self.srv.job(p["id"])["state"], "ready")

    def test_a_child_in_a_lane_keeps_the_lane_order(self):
        p = self.srv.submit(queue="c6", type="other")
        c = self.srv.submit(queue="c6", key="k", depends_on=[p["id"]])
        after = self.srv.submit(queue="c6", key="k")
        self.assertEqual(self.srv.job(after["id"])["state"], "blocked")
        got = self.srv.lease(["c6"], max=10)
        self.assertEqual([j["id"] for j in got], [p["id"]])  # the lane waits for its head
        self.srv.ack(got[0])
        for want in (c["id"], after["id"]):
            got = self.srv.lease(["c6"], max=10)
            self.assertEqual([j["id"] for j in got], [want])
            self.srv.ack(got[0])


class BadInput(ServerTest):
    server_env = {"TENQ_ADMIN_TOKEN": ADMIN}

    def test_bad_dependencies_are_refused_naming_the_field_and_change_nothing(self):
        live = self.srv.submit(ADMIN, queue="b1", tenant="acme")
        theirs = self.srv.submit(ADMIN, queue="b1", tenant="other")
        done = self.srv.submit(ADMIN, queue="b1", tenant="acme", type="done")
        got = self.srv.lease(["b1"], max=10, token=ADMIN, types=["done"])
        self.srv.ack(got[0], ADMIN)
        dead = self.srv.submit(ADMIN, queue="b1", tenant="acme", type="dies")
        got = self.srv.lease(["b1"], max=10, token=ADMIN, types=["dies"])
        self.srv.fail(got[0], ADMIN, error="x", retry=False)
        before = self.srv.ok("GET", "/v1/queues/b1", token=ADMIN)
        job = {"tenant": "acme", "queue": "b1", "type": "T"}
        cases = [
            (dict(job, depends_on=[999999]), 404),
            (dict(job, depends_on=[theirs["id"]]), 404),              # another tenant's
            (dict(job, depends_on=[live["id"], done["id"]]), 409),    # finished, gone
            (dict(job, depends_on=[dead["id"]]), 409),                # dead, policy cancel
            (dict(job, depends_on=[live["id"]] * 101), 400),          # above the limit
            (dict(job, depends_on=[{"index": 0}]), 400),              # no earlier job
            (dict(job, depends_on=[0]), 400),
            (dict(job, depends_on="1"), 400),
            (dict(job, depends_on=[{"index": -1}]), 400),
            (dict(job, depends_on=[live["id"]], on_parent_failure="ignore"), 400),
            (dict(job, tenant="brand-new", depends_on=[live["id"]]), 404),
        ]
        for body, want in cases:
            st, ans = self.srv.req("POST", "/v1/jobs", body, ADMIN)
            self.assertEqual(st, want, (body, ans))
            self.assertIn(ans["error"]["field"], ("depends_on", "on_parent_failure"), ans)
        after = self.srv.ok("GET", "/v1/queues/b1", token=ADMIN)
        self.assertEqual(after["submitted_total"], before["submitted_total"])
        self.assertEqual(self.srv.job(live["id"], ADMIN).get("children"), None)
        st, _ = self.srv.req("GET", "/v1/tenants/brand-new", token=ADMIN)
        self.assertEqual(st, 404)
        # a dead parent with policy run counts as done at once
        ok = self.srv.submit(ADMIN, queue="b1", tenant="acme", depends_on=[dead["id"]],
                             on_parent_failure="run")
        self.assertEqual(ok["state"], "ready")

    def test_a_tenant_token_reads_its_own_jobs_parents_only(self):
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:mine"}, ADMIN)["token"]
        p = self.srv.submit(tok, queue="b2")
        c = self.srv.submit(tok, queue="b2", depends_on=[p["id"]])
        self.assertEqual(parents(self.srv, c["id"], tok)["parents"][0]["id"], p["id"])
        other = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:else"}, ADMIN)["token"]
        st, _ = self.srv.req("GET", "/v1/jobs/%d/parents" % c["id"], token=other)
        self.assertEqual(st, 404)
        st, ans = self.srv.req("POST", "/v1/jobs", {"queue": "b2", "type": "T",
                                                    "depends_on": [p["id"]]}, other)
        self.assertEqual(st, 404, ans)


class Durability(unittest.TestCase):
    def test_kill_9_mid_chain_then_restart_loses_no_edge(self):
        srv = Server(args=["--lease-write-delay", "60s"])
        try:
            root = srv.submit(queue="d1")
            chain = [root]
            for _ in range(20):
                chain.append(srv.submit(queue="d1", depends_on=[chain[-1]["id"]]))
            fan = [srv.submit(queue="d1", depends_on=[root["id"]], on_parent_failure="run")
                   for _ in range(30)]
            fan_in = srv.submit(queue="d1", depends_on=[f["id"] for f in fan])
            got = srv.lease(["d1"], max=1)
            srv.ack(got[0])  # root: its children become ready (stored late)
            got = srv.lease(["d1"], max=100)
            self.assertEqual(sorted(j["id"] for j in got),
                             sorted([chain[1]["id"]] + [f["id"] for f in fan]))
            for j in got:
                if j["id"] != fan[0]["id"]:
                    srv.ack(j)
            srv.kill()  # SIGKILL: chain[2] is ready in memory, its row says waiting
            srv.start()
            self.assertEqual(srv.job(chain[2]["id"])["state"], "ready")
            for i in range(3, len(chain)):
                j = srv.job(chain[i]["id"])
                self.assertEqual(j["state"], "waiting")
                self.assertEqual(j["parents"], [chain[i - 1]["id"]])
                self.assertEqual(j["children"] if i + 1 < len(chain) else [],
                                 [chain[i + 1]["id"]] if i + 1 < len(chain) else [])
            w = srv.job(fan_in["id"])
            self.assertEqual(w["state"], "waiting")
            self.assertEqual(w["waiting"]["parents"], [fan[0]["id"]])  # its lease was lost
            self.assertEqual(len(w["parents"]), 30)
            # the root finished: read from the store, with its children
            self.assertEqual(srv.job(root["id"])["children"],
                             sorted([chain[1]["id"]] + [f["id"] for f in fan]))
            self.assertEqual(len(parents(srv, root["id"])["children"]), 31)
            # a clean stop too
            self.assertEqual(srv.stop(), 0)
            srv.start()
            # the rest runs in order, one at a time
            order = []
            while True:
                got = srv.lease(["d1"], max=100)
                if not got:
                    break
                order += [j["id"] for j in got]
                for j in got:
                    srv.ack(j)
            self.assertEqual(sorted(order[0:2]), sorted([chain[2]["id"], fan[0]["id"]]))
            self.assertLess(order.index(fan[0]["id"]), order.index(fan_in["id"]))
            self.assertEqual(sorted(order), sorted([x["id"] for x in chain[2:]] +
                                                   [fan[0]["id"], fan_in["id"]]))
            for i in range(3, len(chain)):
                self.assertLess(order.index(chain[i - 1]["id"]), order.index(chain[i]["id"]))
            for x in chain:
                self.assertEqual(srv.job(x["id"])["state"], "succeeded")
        finally:
            srv.cleanup()


    def test_a_child_released_past_a_dead_parent_stays_released_across_a_kill_9(self):
        # A child of policy "run" released by its parent's death is released
        # for good (SEMANTICS.md: a parent requeued from the morgue does not
        # touch children already released): the release is stored with the
        # death, not late, so a load does not see it waiting for the parent
        # requeued since.  A long --lease-write-delay keeps late rows unwritten.
        srv = Server(args=["--lease-write-delay", "60s"])
        try:
            p = srv.submit(queue="d2", max_attempts=1)
            c = srv.submit(queue="d2", depends_on=[p["id"]], on_parent_failure="run")
            got = srv.lease(["d2"], max=10)
            self.assertEqual([j["id"] for j in got], [p["id"]])
            self.assertEqual(srv.fail(got[0], error="boom")["state"], "dead")
            self.assertEqual(srv.job(c["id"])["state"], "ready")
            srv.ok("POST", "/v1/morgue/%d/requeue" % p["id"])
            self.assertEqual(srv.job(c["id"])["state"], "ready")  # released stays so
            srv.kill()
            srv.start()
            self.assertEqual(srv.job(c["id"])["state"], "ready")
            self.assertEqual(sorted(j["id"] for j in srv.lease(["d2"], max=10)),
                             sorted([p["id"], c["id"]]))
        finally:
            srv.cleanup()

    def test_a_batch_of_10000_with_index_refs_is_kept_whole_across_a_kill_9(self):
        # written in parts on SQLite (2,000 jobs a part): every edge with its job
        srv = Server()
        try:
            jobs = [{"tenant": "acme", "queue": "big", "type": "root"}]
            for i in range(1, 10000):
                jobs.append({"tenant": "acme", "queue": "big", "type": "leaf",
                             "depends_on": [{"index": 0}] + ([{"index": i - 1}] if i % 2 == 0
                                                             else [])})
            t0 = time.time()
            r = srv.ok("POST", "/v1/jobs", {"jobs": jobs})["jobs"]
            took = time.time() - t0
            self.assertTrue(all("id" in x for x in r), [x for x in r if "id" not in x][:3])
            self.assertEqual(srv.ok("GET", "/v1/queues/big")["waiting"], 9999)
            srv.kill()
            srv.start()
            q = srv.ok("GET", "/v1/queues/big")
            self.assertEqual((q["ready"], q["waiting"]), (1, 9999))
            jr = srv.job(r[0]["id"])  # 9,999 children: the first 1,000 shown, and the count
            self.assertEqual(jr["children"], [x["id"] for x in r[1:1001]])
            self.assertEqual(jr["children_count"], 9999)
            pr = parents(srv, r[0]["id"])
            self.assertEqual(([x["id"] for x in pr["children"]], pr["children_count"]),
                             ([x["id"] for x in r[1:1001]], 9999))
            self.assertEqual(srv.job(r[4]["id"])["parents"], [r[0]["id"], r[3]["id"]])
            srv.ack(srv.lease(["big"])[0])
            q = srv.ok("GET", "/v1/queues/big")
            # the odd ones depend on the root alone; each even one on its odd neighbour too
            self.assertEqual((q["ready"], q["waiting"]), (5000, 4999))
            # the same batch again, killed while it is submitted and written:
            # all of it (its every edge) or none of it
            for i in range(len(jobs)):
                jobs[i]["queue"] = "big2"
            out = {}

            def send():
                try:
                    out["answer"] = srv.req("POST", "/v1/jobs", {"jobs": jobs}, conn="bg")
                except Exception as e:  # the server died under it
                    out["answer"] = e
            srv.conn("bg")  # made here: kill() closes it while the thread may use it
            t = threading.Thread(target=send)
            t.start()
            time.sleep(took * 0.7)  # within the request, most of the time
            srv.kill()
            t.join(30)
            srv.start()
            q = srv.ok("GET", "/v1/queues/big2", expect=(200, 404))
            got = (q.get("ready", 0), q.get("waiting", 0))
            self.assertIn(got, [(0, 0), (1, 9999)], out.get("answer"))
            if os.environ.get("DEPS_SAY"):
                print("batch killed:", got, file=sys.stderr)
            if got == (1, 9999):
                root = srv.lease(["big2"])[0]
                self.assertEqual(srv.job(root["id"])["children_count"], 9999)
        finally:
            srv.cleanup()

@unittest.skipUnless(STORE == "postgres", "two servers share a store on PostgreSQL only")
class Takeover(unittest.TestCase):
    def test_a_standby_that_takes_over_keeps_every_edge_and_wait(self):
        from cluster import Cluster  # tests/chaos: a leader and a standby
        cl = Cluster(2, args=["--leader-ttl", "2s"])
        try:
            lead = cl.wait_leader(30)
            srv = cl.servers[lead]
            a = srv.submit(queue="t1")
            b = srv.submit(queue="t1", depends_on=[a["id"]])
            c = srv.submit(queue="t1", depends_on=[a["id"], b["id"]], on_parent_failure="run")
            srv.ack(srv.lease(["t1"])[0])  # a: b ready, c waits for b
            cl.kill(lead)
            lead = cl.wait_leader(30, not_in=(lead,))
            srv = cl.servers[lead]
            self.assertEqual(srv.job(b["id"])["state"], "ready")
            jc = srv.job(c["id"])
            self.assertEqual((jc["state"], jc["parents"], jc["waiting"]["parents"]),
                             ("waiting", [a["id"], b["id"]], [b["id"]]))
            got = srv.lease(["t1"], max=5)
            self.assertEqual([j["id"] for j in got], [b["id"]])
            srv.fail(got[0], error="boom", retry=False)  # c runs anyway (policy run)
            self.assertEqual([j["id"] for j in srv.lease(["t1"], max=5)], [c["id"]])
        except BaseException:
            sys.stderr.write(cl.logs())
            raise
        finally:
            cl.cleanup()


if __name__ == "__main__":
    main()
