# SPDX-License-Identifier: Apache-2.0
"""Batches over HTTP (SEMANTICS.md "Batches"): POST /v1/batches, its jobs
drained by a worker, callbacks (on_complete, on_success, on_death) each
submitted once; status counts; fan-out from inside a running job; bad input
refused whole; tenant tokens; a restart (SIGTERM) and kill -9 in the middle
of a 10,000-job batch: every job done, each callback exactly once. One
server per class, real sockets, either store (TENQ_TEST_STORE)."""
import os
import sqlite3
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from harness import STORE, Server, ServerTest, main  # noqa: E402

ADMIN = "admin-secret-for-tests-0001"


def cb(type_, queue="cbq", **kw):
    d = {"queue": queue, "type": type_, "args": {"note": type_}}
    d.update(kw)
    return d


def create(srv, jobs, token=None, expect=201, **body):
    b = {"jobs": jobs}
    b.update(body)
    return srv.ok("POST", "/v1/batches", b, token, expect=expect)


def batch(srv, id, token=None):
    return srv.ok("GET", "/v1/batches/%d" % id, token=token)


def drain(srv, queue, token=None, fail_types=()):
    """Leases and acks (or fails without retry) every job of the queue."""
    done = []
    while True:
        got = srv.lease([queue], max=100, token=token)
        if not got:
            return done
        for j in got:
            if j["type"] in fail_types:
                srv.fail(j, token, error="no", retry=False)
            else:
                srv.ack(j, token)
            done.append(j)


def sql_count(srv, sql):
    """A count from the store (SQLite: the file; PostgreSQL: psql)."""
    if STORE == "sqlite":
        db = sqlite3.connect(srv.store_url[len("sqlite:"):])
        try:
            return db.execute(sql).fetchone()[0]
        finally:
            db.close()
    out = subprocess.run(["psql", srv.store_url, "-tAc", sql.replace("FROM ", "FROM tenq.")],
                         check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


class BatchTest(ServerTest):
    """Each class's server stops cleanly at the end, its log free of sanitizer reports."""

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        try:
            cls.srv.assert_clean()
            if rc != 0:
                raise AssertionError("the server exited %s: %s" % (rc, cls.srv.log_text()))
        finally:
            cls.srv.cleanup()


class Callbacks(BatchTest):
    def test_a_batch_drained_by_a_worker_fires_complete_and_success_once(self):
        jobs = [{"tenant": "acme", "queue": "bq", "type": "T", "args": {"i": i}} for i in range(20)]
        b = create(self.srv, jobs, on_complete=cb("done"), on_success=cb("ok"),
                   on_death=cb("died"))
        self.assertEqual(len(b["jobs"]), 20)
        ids = [j["id"] for j in b["jobs"]]
        st = batch(self.srv, b["id"])
        self.assertEqual((st["status"], st["total"], st["pending"]), ("open", 20, 20))
        self.assertEqual(st["counts"]["ready"], 20)
        self.assertEqual(self.srv.job(ids[0])["batch"], b["id"])
        got = self.srv.lease(["bq"])[0]
        self.assertEqual(got["batch"], b["id"])  # the lease shows it too
        self.srv.ack(got)
        self.assertEqual(self.srv.lease(["cbq"]), [])  # nothing before the end
        drain(self.srv, "bq")
        st = batch(self.srv, b["id"])
        self.assertEqual((st["status"], st["pending"], st["progress"]), ("closed", 0, 1.0))
        self.assertEqual(st["counts"]["succeeded"], 20)
        self.assertIsNone(st["callbacks"]["on_death"]["job"])
        cbs = self.srv.lease(["cbq"], max=10)
        self.assertEqual(sorted(j["type"] for j in cbs), ["done", "ok"])
        for j in cbs:
            self.assertEqual(j["batch"], b["id"])
            self.assertEqual(j["args"], {"note": j["type"]})
            self.assertEqual(self.srv.job(j["id"])["tenant"], "acme")
        by_type = {j["type"]: j for j in cbs}
        self.assertEqual(st["callbacks"]["on_complete"]["job"], by_type["done"]["id"])
        self.assertEqual(st["callbacks"]["on_success"]["job"], by_type["ok"]["id"])
        self.assertEqual(self.srv.job(by_type["done"]["id"])["batch_callback"], "on_complete")
        for j in cbs:
            self.srv.ack(j)
        self.assertEqual(self.srv.lease(["cbq"]), [])
        # a finished job read from the store shows its batch, alone and in a list
        self.assertEqual(self.srv.job(ids[5])["batch"], b["id"])
        listed = self.srv.ok("GET", "/v1/jobs?queue=bq&limit=100")["jobs"]
        self.assertEqual(len(listed), 20)
        self.assertEqual(set(j.get("batch") for j in listed), {b["id"]})
        listed = self.srv.ok("GET", "/v1/jobs?queue=cbq&limit=100")["jobs"]
        self.assertEqual(sorted(j.get("batch_callback") for j in listed),
                         ["on_complete", "on_success"])
        self.assertEqual(batch(self.srv, b["id"])["counts"]["succeeded"], 20)

    def test_jobs_of_a_batch_depend_on_each_other_by_index(self):
        a = {"tenant": "acme", "queue": "wq", "type": "A"}
        b = create(self.srv, [a, dict(a, type="B", depends_on=[{"index": 0}]),
                              dict(a, type="C", depends_on=[{"index": 0}, {"index": 1}])],
                   on_success=cb("ok", "wcb"))
        ids = [j["id"] for j in b["jobs"]]
        self.assertEqual(self.srv.job(ids[2])["parents"], ids[:2])
        st = batch(self.srv, b["id"])
        self.assertEqual((st["pending"], st["counts"]["waiting"]), (3, 2))
        order = []
        for _ in range(3):
            got = self.srv.lease(["wq"], max=10)
            self.assertEqual(len(got), 1, got)  # each waits for the one before
            order.append(got[0]["type"])
            self.srv.ack(got[0])
        self.assertEqual(order, ["A", "B", "C"])
        self.assertEqual([j["type"] for j in self.srv.lease(["wcb"], max=10)], ["ok"])
        self.assertEqual(batch(self.srv, b["id"])["status"], "closed")

    def test_a_bad_dependency_refuses_the_whole_batch(self):
        before = len(self.srv.ok("GET", "/v1/batches?limit=1000")["batches"])
        a = {"tenant": "acme", "queue": "wbad", "type": "A"}
        other = self.srv.submit(tenant="other", queue="wbad", type="X")
        cases = [
            ([a, dict(a, depends_on=[{"index": 1}])], 400, "jobs[1].depends_on"),
            ([a, dict(a, depends_on=[99999999])], 404, "jobs[1].depends_on"),
            ([a, dict(a, depends_on=[other["id"]])], 404, "jobs[1].depends_on"),
        ]
        for jobs, status, field in cases:
            st, got = self.srv.req("POST", "/v1/batches", {"jobs": jobs})
            self.assertEqual((st, got["error"].get("field")), (status, field), got)
        st, got = self.srv.req("POST", "/v1/batches",
                               {"jobs": [a], "on_complete": dict(cb("x"), depends_on=[1])})
        self.assertEqual((st, got["error"].get("field")), (400, "on_complete"), got)
        self.assertEqual(len(self.srv.ok("GET", "/v1/batches?limit=1000")["batches"]), before)
        got = self.srv.lease(["wbad"], max=10)
        self.assertEqual([j["type"] for j in got], ["X"])  # nothing of the refused batches

    def test_a_death_fires_on_death_once_and_complete_without_success(self):
        jobs = [{"tenant": "acme", "queue": "dq", "type": "bad" if i < 2 else "T"}
                for i in range(5)]
        b = create(self.srv, jobs, on_complete=cb("done", "dcb"), on_success=cb("ok", "dcb"),
                   on_death=cb("died", "dcb"))
        got = self.srv.lease(["dq"], max=2)
        self.assertEqual([j["type"] for j in got], ["bad", "bad"])
        self.srv.fail(got[0], error="no", retry=False)
        st = batch(self.srv, b["id"])
        self.assertEqual(st["counts"]["dead"], 1)
        self.assertEqual(st["counts"]["leased"], 1)
        self.assertEqual(st["counts"]["ready"], 3)
        self.assertEqual((st["pending"], st["finished"]), (4, 1))
        self.assertIsNotNone(st["callbacks"]["on_death"]["job"])
        self.srv.fail(got[1], error="no", retry=False)
        drain(self.srv, "dq")
        st = batch(self.srv, b["id"])
        self.assertEqual(st["status"], "closed")
        self.assertEqual((st["counts"]["dead"], st["counts"]["succeeded"]), (2, 3))
        cbs = self.srv.lease(["dcb"], max=10)
        self.assertEqual(sorted(j["type"] for j in cbs), ["died", "done"])
        # a requeue from the morgue after the close runs, and fires nothing
        self.srv.ok("POST", "/v1/morgue/%d/requeue" % got[0]["id"])
        again = self.srv.lease(["dq"])[0]
        self.srv.ack(again)
        self.assertEqual(self.srv.lease(["dcb"], max=10), [])
        self.assertEqual(batch(self.srv, b["id"])["counts"]["succeeded"], 4)

    def test_a_dead_job_deleted_from_the_morgue_counts_deleted_and_takes_its_link(self):
        b = create(self.srv, [{"tenant": "acme", "queue": "mq", "type": "bad"},
                              {"tenant": "acme", "queue": "mq", "type": "T"}],
                   on_complete=cb("done", "mcb"), on_success=cb("ok", "mcb"))
        dead = self.srv.lease(["mq"])[0]
        self.srv.fail(dead, error="no", retry=False)
        self.assertEqual(sql_count(self.srv, "SELECT count(*) FROM batch_jobs WHERE job_id = %d"
                                   % dead["id"]), 1)
        self.srv.ok("DELETE", "/v1/morgue/%d" % dead["id"])
        st = batch(self.srv, b["id"])
        self.assertEqual((st["counts"]["dead"], st["counts"]["deleted"], st["pending"]), (0, 1, 1))
        self.assertEqual(sql_count(self.srv, "SELECT count(*) FROM batch_jobs WHERE job_id = %d"
                                   % dead["id"]), 0)
        drain(self.srv, "mq")
        st = batch(self.srv, b["id"])
        self.assertEqual(st["status"], "closed")
        self.assertEqual([j["type"] for j in self.srv.lease(["mcb"], max=5)], ["done"])
        self.srv.stop()
        self.srv.start()
        self.assertEqual(batch(self.srv, b["id"])["counts"], st["counts"])

    def test_fan_out_from_inside_a_running_job_then_closed_is_409(self):
        b = create(self.srv, [{"tenant": "acme", "queue": "fq", "type": "parent"}],
                   on_complete=cb("done", "fcb"))
        parent = self.srv.lease(["fq"])[0]
        self.srv.ok("POST", "/v1/jobs/%d/start" % parent["id"], {"token": parent["token"]})
        # the running job adds its children to its own batch
        more = self.srv.ok("POST", "/v1/batches/%d/jobs" % parent["batch"], {"jobs": [
            {"queue": "fq", "type": "child", "args": {"n": n}} for n in range(3)]})
        self.assertEqual(more["batch"], b["id"])
        self.assertEqual(len(more["jobs"]), 3)
        self.srv.ack(parent)
        st = batch(self.srv, b["id"])
        self.assertEqual((st["status"], st["total"], st["pending"]), ("open", 4, 3))
        self.assertEqual(self.srv.lease(["fcb"]), [])
        drain(self.srv, "fq")
        st = batch(self.srv, b["id"])
        self.assertEqual((st["status"], st["counts"]["succeeded"]), ("closed", 4))
        self.assertEqual(len(self.srv.lease(["fcb"], max=5)), 1)
        status, body = self.srv.req("POST", "/v1/batches/%d/jobs" % b["id"],
                                    {"jobs": [{"queue": "fq", "type": "late"}]})
        self.assertEqual(status, 409)
        self.assertEqual(body["error"]["code"], "batch_closed")
        self.assertEqual(self.srv.lease(["fq"]), [])
        self.assertEqual(batch(self.srv, b["id"])["total"], 4)

    def test_a_callback_wakes_a_worker_waiting_on_its_queue(self):
        b = create(self.srv, [{"tenant": "acme", "queue": "lq", "type": "T"}],
                   on_complete=cb("done", "lcb"))
        got = self.srv.lease(["lq"])[0]
        out = {}

        def poll():
            t0 = time.time()
            out["jobs"] = self.srv.lease(["lcb"], wait_ms=10000, conn="poller")
            out["took"] = time.time() - t0

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)  # the long poll waits
        self.srv.ack(got)
        t.join(15)
        self.assertEqual([j["type"] for j in out["jobs"]], ["done"])
        self.assertEqual(out["jobs"][0]["batch"], b["id"])
        self.assertLess(out["took"], 5)

    def test_a_batch_sent_again_with_its_idempotency_key_is_made_once(self):
        body = {"jobs": [{"tenant": "acme", "queue": "iq", "type": "T"}] * 3,
                "on_complete": cb("done", "icb")}
        hdr = {"Idempotency-Key": "batch-once-1"}
        st1, a, _ = self.srv.raw("POST", "/v1/batches", body, headers=hdr)
        st2, b, h2 = self.srv.raw("POST", "/v1/batches", body, headers=hdr)
        self.assertEqual((st1, st2), (201, 201))
        self.assertEqual(a, b)
        self.assertEqual(h2.get("Idempotent-Replayed"), "true")
        self.assertEqual(len(drain(self.srv, "iq")), 3)
        self.assertEqual(len(self.srv.lease(["icb"], max=5)), 1)

    def test_bad_input_is_refused_whole_naming_the_field(self):
        before = self.srv.ok("GET", "/v1/batches?limit=1000")["batches"]
        good = {"tenant": "acme", "queue": "xq", "type": "T"}
        cases = [
            ({"jobs": []}, 400, "jobs"),
            ({"jobs": [good] * 10001}, 400, "jobs"),
            ({"jobs": [good, {"tenant": "acme", "queue": "xq"}]}, 400, "jobs[1].type"),
            ({"jobs": [good, dict(good, unique=True)]}, 400, "jobs[1].unique"),
            ({"jobs": [good, dict(good, tenant="other")]}, 400, "jobs[1].tenant"),
            ({"jobs": [good], "on_complete": {"queue": "xq"}}, 400, "on_complete.type"),
            ({"jobs": [good], "on_death": "later"}, 400, "on_death"),
            ({"jobs": [good], "on_success": dict(cb("x"), run_at=1)}, 400, "on_success"),
            ({"jobs": [good], "on_complete": dict(cb("x"), bogus=1)}, 400, "on_complete.bogus"),
            ({"jobs": [good], "surprise": 1}, 400, "surprise"),
        ]
        for body, status, field in cases:
            st, got = self.srv.req("POST", "/v1/batches", body)
            self.assertEqual(st, status, (field, got))
            self.assertEqual(got["error"].get("field"), field, got)
        # the batch's tenant is a name, checked by the one rule and in its words
        st, got = self.srv.req("POST", "/v1/batches", {"tenant": "bad name!", "jobs": [
            {"queue": "xq", "type": "T"}]})
        self.assertEqual((st, got["error"].get("field")), (400, "tenant"), got)
        self.assertIn("names are 1-64", got["error"]["message"])
        st, got = self.srv.req("GET", "/v1/batches/99999")
        self.assertEqual(st, 404)
        st, got = self.srv.req("POST", "/v1/batches/99999/jobs", {"jobs": [good]})
        self.assertEqual(st, 404)
        b = create(self.srv, [good])
        st, got = self.srv.req("POST", "/v1/batches/%d/jobs" % b["id"],
                               {"jobs": [good, {"queue": "xq"}]})
        self.assertEqual((st, got["error"]["field"]), (400, "jobs[1].type"))
        self.assertEqual(batch(self.srv, b["id"])["total"], 1)
        after = self.srv.ok("GET", "/v1/batches?limit=1000")["batches"]
        self.assertEqual(len(after), len(before) + 1)
        self.assertEqual(len(drain(self.srv, "xq")), 1)


class Tenants(BatchTest):
    server_env = {"TENQ_ADMIN_TOKEN": ADMIN}

    def test_a_tenant_token_sees_and_touches_its_own_batches_only(self):
        mine = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:mine"}, ADMIN)["token"]
        other = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:other"}, ADMIN)["token"]
        a = create(self.srv, [{"queue": "tq", "type": "T"}], token=mine, on_complete=cb("d", "tcb"))
        b = create(self.srv, [{"queue": "tq", "type": "T"}], token=other)
        self.assertEqual(batch(self.srv, a["id"], mine)["tenant"], "mine")
        st, _ = self.srv.req("GET", "/v1/batches/%d" % b["id"], token=mine)
        self.assertEqual(st, 404)
        st, _ = self.srv.req("POST", "/v1/batches/%d/jobs" % b["id"],
                             {"jobs": [{"queue": "tq", "type": "T"}]}, token=mine)
        self.assertEqual(st, 404)
        listed = self.srv.ok("GET", "/v1/batches", token=mine)["batches"]
        self.assertEqual([x["id"] for x in listed], [a["id"]])
        st, _ = self.srv.req("POST", "/v1/batches", {"tenant": "other", "jobs": [
            {"queue": "tq", "type": "T"}]}, token=mine)
        self.assertEqual(st, 403)
        self.assertEqual(len(self.srv.ok("GET", "/v1/batches", token=ADMIN)["batches"]), 2)
        self.assertEqual(batch(self.srv, b["id"], other)["total"], 1)


class Restarts(BatchTest):
    def test_a_restart_mid_batch_keeps_counters_and_fires_each_callback_once(self):
        jobs = [{"tenant": "acme", "queue": "rq", "type": "bad" if i == 0 else "T"}
                for i in range(10)]
        b = create(self.srv, jobs, on_complete=cb("done", "rcb"), on_success=cb("ok", "rcb"),
                   on_death=cb("died", "rcb"))
        got = self.srv.lease(["rq"], max=4)
        for j in got:
            if j["type"] == "bad":
                self.srv.fail(j, error="no", retry=False)
            else:
                self.srv.ack(j)
        before = batch(self.srv, b["id"])
        self.srv.stop()
        self.srv.start()
        after = batch(self.srv, b["id"])
        self.assertEqual(after["counts"], before["counts"])
        metrics = self.srv.req("GET", "/metrics")[1]
        self.assertIn("\ntenq_batches 1\n", metrics)
        self.assertIn("\ntenq_batches_open 1\n", metrics)
        self.assertIn("\ntenq_batch_callbacks_total 0\n", metrics)  # since this start
        self.assertEqual(after["callbacks"], before["callbacks"])
        self.assertEqual(after["total"], 10)
        drain(self.srv, "rq")
        metrics = self.srv.req("GET", "/metrics")[1]
        self.assertIn("\ntenq_batches_open 0\n", metrics)
        self.assertIn("\ntenq_batch_callbacks_total 1\n", metrics)  # on_complete
        self.srv.stop()
        self.srv.start()
        st = batch(self.srv, b["id"])
        self.assertEqual(st["status"], "closed")
        self.assertEqual((st["counts"]["succeeded"], st["counts"]["dead"]), (9, 1))
        cbs = self.srv.lease(["rcb"], max=10)
        self.assertEqual(sorted(j["type"] for j in cbs), ["died", "done"])
        self.assertEqual(self.srv.job(cbs[0]["id"])["batch"], b["id"])



class DeathRemembered(BatchTest):
    """A batch remembers a death (SEMANTICS.md "Batches"): its job requeued
    from the morgue while the batch is open and succeeding after does not
    make it a batch that fires on_success, across kill -9 too."""

    def test_a_job_that_died_then_requeued_and_succeeded_fires_no_on_success(self):
        srv = self.srv
        b = create(srv, [{"tenant": "acme", "queue": "xq", "type": "A", "max_attempts": 1},
                         {"tenant": "acme", "queue": "xq", "type": "B"}],
                   on_complete=cb("done", "xcb"), on_success=cb("ok", "xcb"),
                   on_death=cb("died", "xcb"))
        a = srv.lease(["xq"])[0]
        self.assertEqual(a["type"], "A")
        self.assertEqual(srv.fail(a, error="no")["state"], "dead")  # max_attempts 1
        self.assertIsNotNone(batch(srv, b["id"])["callbacks"]["on_death"]["job"])
        self.assertEqual(batch(srv, b["id"])["deaths"], 1)
        srv.kill()  # between the death and the requeue
        srv.start()
        srv.ok("POST", "/v1/morgue/%d/requeue" % a["id"])
        st = batch(srv, b["id"])
        self.assertEqual((st["status"], st["counts"]["dead"], st["deaths"]), ("open", 0, 1))
        srv.kill()  # between the requeue and the successes: no job of it is dead now
        srv.start()
        self.assertEqual(batch(srv, b["id"])["deaths"], 1)
        again = srv.lease(["xq"], max=2)
        self.assertEqual(sorted(j["type"] for j in again), ["A", "B"])
        for j in again:
            srv.ack(j)
        st = batch(srv, b["id"])
        self.assertEqual(st["status"], "closed")
        self.assertEqual((st["counts"]["succeeded"], st["total"], st["deaths"]), (2, 2, 1))
        self.assertIsNone(st["callbacks"]["on_success"]["job"])
        cbs = srv.lease(["xcb"], max=10)
        self.assertEqual(sorted(j["type"] for j in cbs), ["died", "done"])
        for j in cbs:
            srv.ack(j)
        srv.kill()  # and nothing more after another restart
        srv.start()
        self.assertEqual(srv.lease(["xcb"], max=10), [])
        self.assertEqual(batch(srv, b["id"])["deaths"], 1)
        self.assertEqual(sql_count(srv, "SELECT deaths FROM batches WHERE id = %d" % b["id"]), 1)


class RestartWithDependencies(BatchTest):
    def test_a_restart_keeps_a_batch_whose_jobs_wait_for_each_other(self):
        a = {"tenant": "acme", "queue": "rwq", "type": "A"}
        b = create(self.srv, [a, dict(a, type="B", depends_on=[{"index": 0}])],
                   on_complete=cb("done", "rwcb"))
        self.srv.ack(self.srv.lease(["rwq"])[0])  # A: B is released
        c = self.srv.ok("POST", "/v1/batches/%d/jobs" % b["id"],
                        {"jobs": [dict(a, type="C", depends_on=[b["jobs"][1]["id"]])]})
        before = batch(self.srv, b["id"])
        self.assertEqual((before["counts"]["ready"], before["counts"]["waiting"]), (1, 1))
        self.srv.stop()
        self.srv.start()
        after = batch(self.srv, b["id"])
        self.assertEqual(after["counts"], before["counts"])
        self.assertEqual(self.srv.job(c["jobs"][0]["id"])["state"], "waiting")
        self.assertEqual([j["type"] for j in drain(self.srv, "rwq")], ["B", "C"])
        self.assertEqual([j["type"] for j in self.srv.lease(["rwcb"], max=10)], ["done"])

class Kill9(BatchTest):
    def test_kill_9_in_the_middle_of_a_10000_job_batch(self):
        srv = self.srv
        n = 10000
        jobs = [{"tenant": "acme", "queue": "kq", "type": "T", "args": {"i": i}} for i in range(n)]
        # leases of 5 s: a lease stored before the kill runs at most one lease_ms
        # after the restart's load, so those cut by the kill come back soon
        srv.ok("PUT", "/v1/queues/kq", {"lease_ms": 5000})
        b = create(srv, jobs, on_complete=cb("done", "kcb"), on_success=cb("ok", "kcb"),
                   on_death=cb("died", "kcb"))
        ids = set(j["id"] for j in b["jobs"])
        self.assertEqual(len(ids), n)
        acked = []
        lock = threading.Lock()
        stop = threading.Event()

        def worker(k):
            conn = "w%d" % k
            while not stop.is_set():
                try:
                    got = srv.lease(["kq"], max=50, conn=conn)
                    if not got:
                        continue
                    st, body = srv.req("POST", "/v1/outcomes", {"outcomes": [
                        {"id": j["id"], "token": j["token"], "ok": True} for j in got]},
                        conn=conn)
                except Exception:
                    return
                if st == 200:
                    with lock:
                        acked.extend(r["id"] for r in body["results"]
                                     if r.get("state") == "succeeded")

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        deadline = time.time() + 60
        while time.time() < deadline:
            with lock:
                if len(acked) > 3000:
                    break
            time.sleep(0.02)
        srv.proc.kill()  # SIGKILL with outcomes in flight
        srv.proc.wait()
        stop.set()
        for t in threads:
            t.join(30)
        self.assertGreater(len(acked), 1000)
        srv.start()
        mid = batch(srv, b["id"])
        self.assertEqual(mid["total"], n)
        self.assertEqual(mid["status"], "open")
        # every acknowledged outcome survived
        self.assertGreaterEqual(mid["counts"]["succeeded"], len(set(acked)))
        for jid in acked[::97]:
            self.assertEqual(srv.job(jid)["state"], "succeeded")
        # drain the rest: the leases cut by the kill come back when they expire
        # (within 5 s of the load); the drain's own leases are long, for it acks
        # up to 100 jobs one request at a time, on a busy machine too (a
        # lease_ms of 1 s here made the last acks stale under load: 409)
        srv.ok("PUT", "/v1/queues/kq", {"lease_ms": 120000})
        end = time.time() + 120
        while time.time() < end:
            drain(srv, "kq")
            st = batch(srv, b["id"])
            if st["status"] == "closed":
                break
            time.sleep(0.3)
        st = batch(srv, b["id"])
        self.assertEqual(st["status"], "closed", st)
        self.assertEqual(st["counts"]["succeeded"], n)
        self.assertEqual(st["pending"], 0)
        # each callback exactly once, across another kill
        srv.kill()
        srv.start()
        cbs = srv.lease(["kcb"], max=10)
        self.assertEqual(sorted(j["type"] for j in cbs), ["done", "ok"])
        self.assertEqual(srv.lease(["kcb"], max=10), [])
        srv.stop()
        self.assertEqual(sql_count(srv, "SELECT count(*) FROM batch_jobs WHERE batch_id = %d "
                                        "AND role > 0" % b["id"]), 2)
        self.assertEqual(sql_count(srv, "SELECT count(*) FROM jobs WHERE queue = 'kq' "
                                        "AND state = 'succeeded'"), n)
        self.assertEqual(sql_count(srv, "SELECT count(*) FROM jobs WHERE queue = 'kcb'"), 2)
        srv.start()


@unittest.skipUnless(STORE == "postgres", "two servers share a store on PostgreSQL only")
class Takeover(unittest.TestCase):
    """The leader killed in the middle of a batch: the new leader loads the
    batch with the jobs, and each callback is made exactly once; a death
    whose job was requeued before the takeover is remembered (no
    on_success)."""

    def test_a_takeover_mid_batch_runs_no_callback_twice_and_loses_none(self):
        from cluster import Cluster  # tests/chaos: a leader and a standby
        cl = Cluster(2, args=["--leader-ttl", "2s"])
        try:
            lead = cl.wait_leader(30)
            srv = cl.servers[lead]
            n = 300
            jobs = [{"tenant": "acme", "queue": "oq", "type": "bad" if i == 7 else "T"}
                    for i in range(n)]
            b = create(srv, jobs, on_complete=cb("done", "ocb"), on_success=cb("ok", "ocb"),
                       on_death=cb("died", "ocb"))
            got = srv.lease(["oq"], max=100)
            for j in got:
                if j["type"] == "bad":
                    srv.fail(j, error="no", retry=False)
                else:
                    srv.ack(j)
            self.assertIsNotNone(batch(srv, b["id"])["callbacks"]["on_death"]["job"])
            # the dead job requeued: the batch remembers the death (no on_success
            # when everything succeeds on the new leader)
            dead = [j for j in got if j["type"] == "bad"][0]
            srv.ok("POST", "/v1/morgue/%d/requeue" % dead["id"])
            held = srv.lease(["oq"], max=10)  # leased when the leader dies
            # leases are stored --lease-write-delay (200 ms) after they are
            # granted: wait until the store has them, however busy the machine
            srv.wait_stored("SELECT count(*) FROM $Sjobs WHERE id IN (%s) AND state = 'leased'"
                            % ",".join(str(j["id"]) for j in held), len(held))
            cl.kill(lead)
            lead = cl.wait_leader(30, not_in=(lead,))
            srv = cl.servers[lead]
            st = batch(srv, b["id"])
            self.assertEqual((st["status"], st["total"]), ("open", n))
            self.assertEqual((st["counts"]["succeeded"], st["counts"]["dead"], st["deaths"]),
                             (99, 0, 1))
            for j in held:  # the worker carries on with its leases
                srv.ack(j)
            drain(srv, "oq")  # the requeued job succeeds this time
            st = batch(srv, b["id"])
            self.assertEqual((st["status"], st["counts"]["succeeded"]), ("closed", n))
            cl.restart(1 - lead)  # back as a standby
            cbs = srv.lease(["ocb"], max=10)
            self.assertEqual(sorted(j["type"] for j in cbs), ["died", "done"])
            self.assertEqual(srv.lease(["ocb"], max=10), [])
        except BaseException:
            sys.stderr.write(cl.logs())
            raise
        finally:
            cl.cleanup()


if __name__ == "__main__":
    main()
