# SPDX-License-Identifier: Apache-2.0
"""tenq serve over real sockets: crashes and kills, request keys, leases
answered before their commit."""
import json
import sys
import os
import subprocess
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import STORE, Server, raw_socket, main  # noqa: E402


class Crash(unittest.TestCase):
    def test_a_connection_ended_before_the_commit_is_no_acknowledgement(self):
        # PostgreSQL: the writer's backend runs every statement of a group,
        # then is ended before the group's Sync commits it.  The submit must
        # be answered with an error (nothing was kept), never 201.
        if STORE != "postgres":
            self.skipTest("a PostgreSQL connection's failure (the postgres run has it)")
        srv = Server(env={"TENQ_TEST_PG_SYNC_DELAY_MS": "1500"})
        try:
            out = {}

            def submit():
                out["answer"] = srv.req("POST", "/v1/jobs",
                                        {"tenant": "acme", "queue": "cut", "type": "T"})

            t = threading.Thread(target=submit)
            t.start()
            ended = "0"
            deadline = time.time() + 10
            while ended == "0" and time.time() < deadline:
                time.sleep(0.1)
                ended = subprocess.run(
                    ["psql", srv.store_url, "-Atc",
                     "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                     "pg_stat_activity WHERE application_name LIKE 'tenq%' AND "
                     "backend_xid IS NOT NULL"],
                    capture_output=True, text=True).stdout.strip() or "0"
            self.assertNotEqual(ended, "0", "no writer was found inside its transaction")
            t.join(30)
            st, ans = out["answer"]
            self.assertNotIn(st, (200, 201), ans)  # the job was not kept: no acknowledgement
            self.assertEqual(st, 503, ans)
            deadline = time.time() + 20
            while time.time() < deadline:  # the server reloads under a new term, then serves
                st, page = srv.req("GET", "/v1/jobs?queue=cut")
                if st == 200 and srv.req("GET", "/readyz")[0] == 200:
                    break
                time.sleep(0.2)
            self.assertEqual(page["jobs"], [])
        finally:
            srv.cleanup()

    def test_a_lane_moves_on_across_a_crash_before_its_next_job_is_stored_ready(self):
        # the second job of a lane becomes ready when the first is acked; that
        # change is stored late (--lease-write-delay), so a crash right after the
        # ack finds it stored "blocked": the restart must make it ready anyway
        srv = Server(args=["--lease-write-delay", "60s"])
        try:
            first = srv.submit(queue="lane-crash", key="k")
            second = srv.submit(queue="lane-crash", key="k")
            third = srv.submit(queue="lane-crash", key="k")
            srv.ack(srv.lease(["lane-crash"])[0])
            self.assertEqual(srv.job(second["id"])["state"], "ready")
            srv.kill()
            srv.start()
            self.assertEqual(srv.job(first["id"])["state"], "succeeded")
            self.assertEqual(srv.job(second["id"])["state"], "ready")
            self.assertEqual(srv.job(third["id"])["state"], "blocked")
            got = srv.lease(["lane-crash"], max=5)
            self.assertEqual([j["id"] for j in got], [second["id"]])
        finally:
            srv.cleanup()

    def test_a_job_that_stays_ready_is_stored_ready_after_the_delay(self):
        srv = Server(args=["--lease-write-delay", "100ms"])
        try:
            srv.submit(queue="lane-late", key="k")
            second = srv.submit(queue="lane-late", key="k")
            srv.ack(srv.lease(["lane-late"])[0])
            ready_at = srv.job(second["id"])["ready_at"]
            self.assertIsNotNone(ready_at)
            # the ready row is written 100 ms on: wait until it is
            srv.wait_stored("SELECT state FROM $Sjobs WHERE id = %d" % second["id"], "ready")
            srv.kill()
            time.sleep(0.05)
            srv.start()
            # stored ready, it keeps the time it became ready (a job stored
            # blocked would be made ready again at the restart, later)
            self.assertEqual(srv.job(second["id"])["ready_at"], ready_at)
        finally:
            srv.cleanup()

    def test_a_due_job_stored_scheduled_is_ready_after_a_crash(self):
        srv = Server(args=["--lease-write-delay", "60s"])
        try:
            soon = srv.submit(queue="due-crash", run_at=int(time.time() * 1000) + 300)
            deadline = time.time() + 10
            while srv.job(soon["id"])["state"] != "ready" and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(srv.job(soon["id"])["state"], "ready")
            srv.kill()
            srv.start()
            self.assertEqual([j["id"] for j in srv.lease(["due-crash"], max=5)], [soon["id"]])
        finally:
            srv.cleanup()

    def test_sigkill_loses_nothing_acknowledged_and_leases_live_on(self):
        srv = Server()
        try:
            srv.ok("PUT", "/v1/queues/crash", {"lease_ms": 120000})
            held = srv.submit(queue="crash-held")
            held_job = srv.lease(["crash-held"])[0]
            # leases are stored --lease-write-delay (200 ms) after they are granted
            # (sooner if their job ends); this one must be stored: wait until it is
            srv.wait_stored("SELECT state FROM $Sjobs WHERE id = %d" % held_job["id"], "leased")
            acked_submits, acked_outcomes = [], []
            lock = threading.Lock()
            stop = threading.Event()

            def submitter(n):
                conn = "s%d" % n
                while not stop.is_set():
                    try:
                        st, body = srv.req("POST", "/v1/jobs", {"jobs": [
                            {"tenant": "t%d" % n, "queue": "crash", "type": "T"}] * 20},
                            conn=conn)
                    except Exception:
                        return
                    if st == 201:
                        with lock:
                            acked_submits.extend(x["id"] for x in body["jobs"])

            def worker(n):
                conn = "w%d" % n
                while not stop.is_set():
                    try:
                        jobs = srv.lease(["crash"], max=10, conn=conn)
                        if not jobs:
                            continue
                        st, body = srv.req("POST", "/v1/outcomes", {"outcomes": [
                            {"id": j["id"], "token": j["token"], "ok": True,
                             "result": {"by": n}} for j in jobs]}, conn=conn)
                    except Exception:
                        return
                    if st == 200:
                        with lock:
                            acked_outcomes.extend(r["id"] for r in body["results"]
                                                  if r.get("state") == "succeeded")

            threads = [threading.Thread(target=submitter, args=(i,)) for i in range(3)]
            threads += [threading.Thread(target=worker, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            deadline = time.time() + 30
            while time.time() < deadline:
                with lock:
                    if len(acked_submits) > 3000 and len(acked_outcomes) > 500:
                        break
                time.sleep(0.05)
            srv.proc.kill()  # SIGKILL with requests in flight
            srv.proc.wait()
            stop.set()
            for t in threads:
                t.join(30)
            self.assertGreater(len(acked_submits), 1000)
            srv.start()
            with lock:
                subs, outs = list(acked_submits), set(acked_outcomes)
            # every acknowledged submit is there, every acknowledged ack too
            for jid in subs[::7] + subs[-20:]:
                self.assertEqual(srv.req("GET", "/v1/jobs/%d" % jid)[0], 200, jid)
            for jid in list(outs)[::5]:
                job = srv.job(jid)
                self.assertEqual(job["state"], "succeeded", jid)
            # the worker holding a lease across the restart carries on
            hb = srv.req("POST", "/v1/jobs/%d/heartbeat" % held_job["id"],
                         {"token": held_job["token"]})
            self.assertEqual(hb[0], 200, hb)
            self.assertEqual(srv.ack(held_job)["state"], "succeeded")
            self.assertEqual(srv.job(held["id"])["state"], "succeeded")
        finally:
            srv.cleanup()


    def test_a_big_batch_is_kept_whole_or_not_at_all_across_a_crash(self):
        """A batch of more than 2,000 jobs goes to the SQLite writer in parts
        while the server submits the rest, all in one transaction: whenever
        the server dies, all of the batch is stored or none of it (and all
        of it once answered)."""
        n = 5000
        import harness
        for kill_after in (0.3, 1.5, 2.5, 4.0):
            # every commit waits 1 s: were the parts committed one by one,
            # a kill at 1.5 s or 2.5 s would leave the first one or two
            srv = Server(env={"TENQ_TEST_COMMIT_DELAY_MS": "1000"})
            try:
                q = "whole-%d" % int(kill_after * 10)
                body = {"jobs": [{"tenant": "acme", "queue": q, "type": "T",
                                  "args": {"i": i}} for i in range(n)]}
                answer = []

                def send():
                    try:
                        answer.append(srv.req("POST", "/v1/jobs", body, conn="big")[0])
                    except Exception:
                        answer.append(None)

                t = threading.Thread(target=send)
                t.start()
                time.sleep(kill_after)
                srv.kill()
                t.join(60)
                srv.start()
                st, qb = srv.req("GET", "/v1/queues/" + q)
                self.assertIn(st, (200, 404), qb)
                stored = qb["ready"] if st == 200 else 0  # 404: no job made the queue
                self.assertIn(stored, (0, n), "kill at %.1f s" % kill_after)
                if answer == [201]:
                    self.assertEqual(stored, n)
                if kill_after > 3:
                    self.assertEqual(stored, n)  # answered (and committed) by then
                if kill_after < 1:
                    self.assertEqual(stored, 0)
            finally:
                srv.cleanup()
        # the parts are real: one transaction, several batches (SQLite)
        srv = Server()

        def counters():
            st, text = srv.req("GET", "/metrics")
            self.assertEqual(st, 200)
            return {k: int(v) for k, v in (line.split() for line in text.splitlines()
                                           if line.startswith(("tenq_store_commits_total ",
                                                               "tenq_store_batches_total ")))}
        try:
            before = counters()
            srv.ok("POST", "/v1/jobs", {"jobs": [{"tenant": "acme", "queue": "parts",
                                                  "type": "T"}] * n})
            after = counters()
            tx = after["tenq_store_commits_total"] - before["tenq_store_commits_total"]
            batches = after["tenq_store_batches_total"] - before["tenq_store_batches_total"]
            if harness.STORE == "sqlite":
                self.assertEqual((tx, batches), (1, 3))
            else:  # PostgreSQL takes no chains: one batch
                self.assertEqual((tx, batches), (1, 1))
            self.assertEqual(srv.ok("GET", "/v1/queues/parts")["ready"], n)
        finally:
            srv.cleanup()


class RequestKeys(unittest.TestCase):
    """POST /v1/jobs with an Idempotency-Key header: sent again, answered as
    the first time and nothing made; what every tenq library relies on to
    retry a submit whose answer was lost."""

    def count(self, srv, queue):
        return len(srv.ok("GET", "/v1/jobs?queue=%s&limit=1000" % queue)["jobs"])

    def submit(self, srv, key, body, token=None, conn="default"):
        hdrs = {"Idempotency-Key": key} if key is not None else {}
        return srv.raw("POST", "/v1/jobs", body, token=token, headers=hdrs, conn=conn)

    def test_the_same_request_again_is_answered_the_same_and_makes_nothing(self):
        srv = Server(args=["--request-key-ttl", "1500ms"])
        try:
            batch = {"jobs": [{"tenant": "acme", "queue": "rk", "type": "T"},
                              {"tenant": "acme", "queue": "rk", "type": "T", "key": "x"}]}
            st1, a1, h1 = self.submit(srv, "k-1", batch)
            st2, a2, h2 = self.submit(srv, "k-1", batch)
            self.assertEqual((st1, st2), (201, 201))
            self.assertEqual(a1, a2)
            self.assertNotIn("Idempotent-Replayed", h1)
            self.assertEqual(h2.get("Idempotent-Replayed"), "true")
            self.assertEqual(self.count(srv, "rk"), 2)
            # a batch kept as a range of ids (every job made, one state) and one that is not
            # (a duplicate in it) are both answered again byte for byte
            many = {"jobs": [{"tenant": "acme", "queue": "rk-many", "type": "T", "args": {"n": i}}
                             for i in range(50)]}
            mixed = {"jobs": [{"tenant": "acme", "queue": "rk-mix", "type": "T", "unique": True},
                              {"tenant": "acme", "queue": "rk-mix", "type": "T", "unique": True},
                              {"tenant": "acme", "queue": "rk-mix", "type": "T",
                               "run_at": 4102444800000}]}
            # and so are both asked for as columns
            many_cols = dict(many, columns=True, jobs=[dict(j, queue="rk-many-c") for j in many["jobs"]])
            mixed_cols = dict(mixed, columns=True, jobs=[dict(j, queue="rk-mix-c") for j in mixed["jobs"]])
            answers = {}
            for key, body in (("k-many", many), ("k-mix", mixed), ("k-many-c", many_cols),
                              ("k-mix-c", mixed_cols)):
                st, first, _ = self.submit(srv, key, body)
                st2, again, h = self.submit(srv, key, body)
                self.assertEqual((st2, again, h.get("Idempotent-Replayed")), (st, first, "true"))
                answers[key] = first
            self.assertTrue(answers["k-mix"]["jobs"][1]["duplicate"])
            self.assertEqual(answers["k-mix-c"]["columns"]["duplicate"][:2], [False, True])
            self.assertEqual(len(answers["k-many-c"]["columns"]["id"]), 50)
            self.assertEqual(self.count(srv, "rk-many"), 50)
            self.assertEqual(self.count(srv, "rk-many-c"), 50)
            # another body under the same key: refused, nothing made
            st, ans, _ = self.submit(srv, "k-1", {"tenant": "acme", "queue": "rk", "type": "U"})
            self.assertEqual((st, ans["error"]["field"]), (409, "Idempotency-Key"))
            self.assertEqual(self.count(srv, "rk"), 2)
            # a refused request keeps no key: sent again (now right), it is done
            st, _, _ = self.submit(srv, "k-2", {"tenant": "acme", "queue": "rk", "typo": "T"})
            self.assertEqual(st, 400)
            st, ans, h = self.submit(srv, "k-2", {"tenant": "acme", "queue": "rk", "type": "T"})
            self.assertEqual(st, 201)
            self.assertNotIn("Idempotent-Replayed", h)
            # bad keys
            for bad in ("", "has space", "x" * 257):
                st, ans, _ = self.submit(srv, bad, {"tenant": "acme", "queue": "rk", "type": "T"})
                self.assertEqual((st, ans["error"]["field"]), (400, "Idempotency-Key"), bad)
            # kept across a restart, from the store
            srv.stop()
            srv.start()
            st, a3, h3 = self.submit(srv, "k-1", batch)
            self.assertEqual((st, a3, h3.get("Idempotent-Replayed")), (201, a1, "true"))
            for key, body in (("k-many", many), ("k-many-c", many_cols)):  # ranges, both forms
                st, again, h = self.submit(srv, key, body)
                self.assertEqual((st, again, h.get("Idempotent-Replayed")), (201, answers[key], "true"))
            self.assertEqual(self.count(srv, "rk"), 3)
            # past its TTL the key is forgotten: the same request makes new jobs
            time.sleep(1.6)
            st, a4, h4 = self.submit(srv, "k-1", batch)
            self.assertEqual(st, 201)
            self.assertNotIn("Idempotent-Replayed", h4)
            self.assertNotEqual(a4["jobs"][0]["id"], a1["jobs"][0]["id"])
            self.assertEqual(self.count(srv, "rk"), 5)
        finally:
            srv.cleanup()

    def test_a_key_is_a_tenants_own(self):
        srv = Server(env={"TENQ_ADMIN_TOKEN": "admin-secret-0123456789"})
        try:
            admin = "admin-secret-0123456789"
            tok = {}
            for t in ("ta", "tb"):
                tok[t] = srv.ok("POST", "/v1/tokens", {"role": "tenant:" + t}, token=admin)["token"]
            sa, aa, _ = self.submit(srv, "same", {"queue": "rk2", "type": "T"}, token=tok["ta"])
            sb, ab, hb = self.submit(srv, "same", {"queue": "rk2", "type": "T"}, token=tok["tb"])
            self.assertEqual((sa, sb), (201, 201))
            self.assertNotEqual(aa["id"], ab["id"])
            self.assertNotIn("Idempotent-Replayed", hb)
        finally:
            srv.cleanup()

    def test_sent_again_while_the_first_is_being_committed_waits_for_it(self):
        srv = Server(env={"TENQ_TEST_COMMIT_DELAY_MS": "400"})
        try:
            body = {"tenant": "acme", "queue": "rk3", "type": "T"}
            out = {}

            def first():
                out["first"] = self.submit(srv, "k-slow", body, conn="first")

            t = threading.Thread(target=first)
            t.start()
            time.sleep(0.1)  # the first is read and waits for its commit
            st, ans, h = self.submit(srv, "k-slow", body, conn="second")
            t.join()
            self.assertEqual(out["first"][0], 201)
            self.assertEqual((st, ans), (201, out["first"][1]))
            self.assertEqual(h.get("Idempotent-Replayed"), "true")
            self.assertEqual(self.count(srv, "rk3"), 1)
        finally:
            srv.cleanup()


class LeaseBeforeCommit(unittest.TestCase):
    """A lease is answered before its commit (at-least-once queues). If the
    server dies before the commit, the job must run again under a new token,
    and the late ack with the old token must be refused: no token is ever
    handed out twice."""

    def test_a_lease_lost_in_a_crash_never_reuses_its_token(self):
        # commits wait 300 ms, so the kill lands between answer and commit
        srv = Server(env={"TENQ_TEST_COMMIT_DELAY_MS": "300"})
        lost = kept = 0
        try:
            for i in range(12):
                r = srv.submit(queue="opt%d" % i)
                j = srv.lease(["opt%d" % i])[0]
                srv.proc.kill()  # at once: the lease's commit may not have happened
                srv.proc.wait()
                srv.start()
                job = srv.job(r["id"])
                if job["state"] == "leased":
                    kept += 1
                    self.assertEqual(job["token"], j["token"])
                    self.assertEqual(srv.ack(j)["state"], "succeeded")
                    continue
                lost += 1
                self.assertEqual(job["state"], "ready")
                again = srv.lease(["opt%d" % i])[0]
                self.assertNotEqual(again["token"], j["token"])
                self.assertGreater(again["token"], j["token"])
                status, body = srv.req("POST", "/v1/jobs/%d/ack" % j["id"],
                                       {"token": j["token"]})
                self.assertEqual(status, 409)
                self.assertEqual(srv.ack(again)["state"], "succeeded")
        finally:
            srv.cleanup()
        self.assertEqual(lost + kept, 12)
        self.assertGreater(lost, 6)
        print("  leases lost in the crash: %d, kept: %d" % (lost, kept), file=sys.stderr)

    def test_a_lease_with_outcomes_is_answered_after_their_commit(self):
        # commits wait 300 ms: a plain lease is answered before its commit,
        # one that reports outcomes only once they are committed, so a kill
        # right after its answer loses none of them
        srv = Server(env={"TENQ_TEST_COMMIT_DELAY_MS": "300"})
        try:
            for i in range(4):
                srv.submit(queue="olc")
            a, b = srv.lease(["olc"], max=2)
            t0 = time.time()
            srv.lease(["olc"])
            self.assertLess(time.time() - t0, 0.25)
            t0 = time.time()
            got = srv.ok("POST", "/v1/lease", {"queues": ["olc"], "outcomes": [
                {"id": a["id"], "token": a["token"], "ok": True, "result": {"kept": True}},
                {"id": b["id"], "token": b["token"], "ok": False, "error": "e",
                 "retry": False}]})
            self.assertGreaterEqual(time.time() - t0, 0.28)
            self.assertEqual(len(got["jobs"]), 1)
            srv.proc.kill()
            srv.proc.wait()
            srv.start()
            self.assertEqual(srv.job(a["id"])["state"], "succeeded")
            self.assertEqual(srv.job(a["id"])["result"], {"kept": True})
            self.assertEqual(srv.job(b["id"])["state"], "dead")
        finally:
            srv.cleanup()

    def test_outcomes_are_kept_when_their_lease_goes_away_before_the_commit(self):
        srv = Server(env={"TENQ_TEST_COMMIT_DELAY_MS": "300"})
        try:
            r = srv.submit(queue="olg")
            j = srv.lease(["olg"])[0]
            body = json.dumps({"queues": ["olg"], "wait_ms": 5000, "outcomes": [
                {"id": j["id"], "token": j["token"], "ok": True}]}).encode()
            # the client hangs up while the outcome waits for its commit
            raw_socket(srv.port, b"POST /v1/lease HTTP/1.1\r\nHost: x\r\nContent-Length: %d"
                       b"\r\n\r\n%s" % (len(body), body), read_timeout=0.05)
            time.sleep(0.5)
            self.assertEqual(srv.job(r["id"])["state"], "succeeded")
            nxt = srv.submit(queue="olg")  # no long poll left behind takes it
            time.sleep(0.1)
            self.assertEqual(srv.job(nxt["id"])["state"], "ready")
            srv.kill()
            srv.start()
            self.assertEqual(srv.job(r["id"])["state"], "succeeded")
        finally:
            srv.cleanup()

    def test_at_most_once_leases_wait_for_their_commit(self):
        srv = Server()
        try:
            srv.ok("PUT", "/v1/queues/amo", {"delivery": "at-most-once"})
            for i in range(8):
                r = srv.submit(queue="amo")
                j = srv.lease(["amo"])[0]
                srv.proc.kill()
                srv.proc.wait()
                srv.start()
                # answered, so stored: never handed out again
                self.assertEqual(srv.job(r["id"])["state"], "leased")
                self.assertEqual(srv.lease(["amo"]), [])
                srv.ack(j)
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
