# SPDX-License-Identifier: Apache-2.0
"""Attempt history: GET /v1/jobs/{id}/attempts lists every attempt of a job
(failed, expired, timed out, cancelled, the current one, the one that
succeeded) in order, for resident jobs and finished ones read from the store,
across a restart; retention and the morgue's delete take a job's attempts
with it. One server per class, real sockets, either store (TENQ_TEST_STORE)."""
import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import STORE, Server, ServerTest, main  # noqa: E402

ADMIN = "admin-secret-for-tests-0001"


def attempts(srv, id, token=None):
    return srv.ok("GET", "/v1/jobs/%d/attempts" % id, token=token)


def stored_attempt_rows(srv, id):
    """Rows of the job's attempts in the store (the server stopped)."""
    if STORE == "sqlite":
        db = sqlite3.connect(srv.store_url[len("sqlite:"):])
        try:
            return db.execute("SELECT count(*) FROM attempts WHERE job_id = ?", (id,)).fetchone()[0]
        finally:
            db.close()
    out = subprocess.run(["psql", srv.store_url, "-tAc",
                          "SELECT count(*) FROM tenq.attempts WHERE job_id = %d" % id],
                         check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


class History(ServerTest):
    def test_a_job_that_succeeds_at_its_third_attempt_lists_all_three(self):
        j = self.srv.submit(queue="h-retry", max_attempts=5)
        got = self.srv.lease(["h-retry"], worker="w-one")[0]
        self.srv.ok("POST", "/v1/jobs/%d/start" % j["id"], {"token": got["token"]})
        self.srv.fail(got, error="boom", stats={"rows": 1}, retry_in_ms=0)
        second = self.srv.lease(["h-retry"], worker="w-two")[0]
        self.srv.fail(second, error="again", retry_in_ms=0)
        third = self.srv.lease(["h-retry"], worker="w-three")[0]
        mid = attempts(self.srv, j["id"])
        self.assertEqual(mid["state"], "leased")
        self.assertEqual([a["outcome"] for a in mid["attempts"]], ["failed", "failed", "leased"])
        self.assertEqual(mid["attempts"][2]["token"], third["token"])
        self.assertIsNone(mid["attempts"][2]["error"])  # not the last failure's
        self.assertIsNone(mid["attempts"][2]["finished_at"])
        self.srv.ack(third, stats={"rows": 3})
        h = attempts(self.srv, j["id"])
        self.assertEqual(h["id"], j["id"])
        self.assertEqual(h["state"], "succeeded")
        a = h["attempts"]
        self.assertEqual([x["attempt"] for x in a], [1, 2, 3])
        self.assertEqual([x["outcome"] for x in a], ["failed", "failed", "succeeded"])
        self.assertEqual([x["worker"] for x in a], ["w-one", "w-two", "w-three"])
        self.assertEqual([x["error"] for x in a], ["boom", "again", None])
        self.assertEqual([x["stats"] for x in a], [{"rows": 1}, None, {"rows": 3}])
        self.assertEqual([x["token"] for x in a], [got["token"], second["token"], third["token"]])
        self.assertEqual([x["job_state"] for x in a], ["ready", "ready", "succeeded"])
        self.assertIsNotNone(a[0]["started_at"])
        self.assertIsNone(a[1]["started_at"])
        for x in a:
            self.assertLessEqual(x["leased_at"], x["finished_at"])
        self.assertLessEqual(a[0]["finished_at"], a[1]["leased_at"])
        # the job itself is unchanged: its latest attempt's fields
        self.assertEqual(self.srv.job(j["id"])["attempts"], 3)

    def test_a_first_attempt_that_succeeds_is_the_only_one(self):
        j = self.srv.submit(queue="h-once")
        self.assertEqual(attempts(self.srv, j["id"])["attempts"], [])
        got = self.srv.lease(["h-once"], worker="solo")[0]
        self.srv.ack(got)
        a = attempts(self.srv, j["id"])["attempts"]
        self.assertEqual(len(a), 1)
        self.assertEqual((a[0]["attempt"], a[0]["outcome"], a[0]["worker"]), (1, "succeeded", "solo"))

    def test_expired_and_timed_out_attempts(self):
        self.srv.ok("PUT", "/v1/queues/h-exp", {"lease_ms": 1000})
        # the heartbeat below must come within the timeout: 3 s, not 1, so that
        # it does on a busy machine too
        self.srv.ok("PUT", "/v1/queues/h-tmo", {"lease_ms": 9000, "timeout_ms": 3000})
        e = self.srv.submit(queue="h-exp")
        t = self.srv.submit(queue="h-tmo")
        held = self.srv.lease(["h-tmo"], worker="slow")[0]
        self.srv.ok("POST", "/v1/jobs/%d/heartbeat" % t["id"], {"token": held["token"]})
        self.srv.lease(["h-exp"], worker="gone")
        deadline = time.time() + 30
        while time.time() < deadline:
            ae, at = attempts(self.srv, e["id"])["attempts"], attempts(self.srv, t["id"])["attempts"]
            if ae and at and ae[0]["outcome"] != "leased" and at[0]["outcome"] != "leased":
                break
            time.sleep(0.1)
        self.assertEqual([(x["outcome"], x["error"], x["job_state"]) for x in ae],
                         [("expired", "lease expired", "scheduled")])
        self.assertEqual(len(at), 1)
        self.assertEqual(at[0]["outcome"], "timed_out")
        self.assertIn("timed out", at[0]["error"])
        self.assertEqual(at[0]["worker"], "slow")

    def test_an_attempt_cancelled_while_it_runs(self):
        j = self.srv.submit(queue="h-cancel")
        got = self.srv.lease(["h-cancel"])[0]
        self.srv.ok("POST", "/v1/jobs/%d/start" % j["id"], {"token": got["token"]})
        self.srv.ok("POST", "/v1/jobs/%d/cancel" % j["id"])
        self.assertEqual([x["outcome"] for x in attempts(self.srv, j["id"])["attempts"]], ["running"])
        self.srv.fail(got, error="stopped", cancelled=True)
        h = attempts(self.srv, j["id"])
        self.assertEqual(h["state"], "cancelled")
        self.assertEqual([(x["outcome"], x["job_state"], x["error"]) for x in h["attempts"]],
                         [("cancelled", "cancelled", "stopped")])

    def test_a_dead_job_requeued_from_the_morgue_then_succeeding(self):
        j = self.srv.submit(queue="h-morgue", max_attempts=1)
        first = self.srv.lease(["h-morgue"])[0]
        self.srv.fail(first, error="broken")
        self.assertEqual(self.srv.job(j["id"])["state"], "dead")
        self.srv.ok("POST", "/v1/morgue/%d/requeue" % j["id"])
        again = self.srv.lease(["h-morgue"])[0]
        self.srv.ack(again)
        a = attempts(self.srv, j["id"])["attempts"]
        self.assertEqual([(x["attempt"], x["outcome"], x["job_state"]) for x in a],
                         [(1, "failed", "dead"), (1, "succeeded", "succeeded")])
        self.assertLess(a[0]["token"], a[1]["token"])

    def test_bad_ids_and_unknown_jobs(self):
        st, b = self.srv.req("GET", "/v1/jobs/999999/attempts")
        self.assertEqual(st, 404, b)
        self.assertEqual(b["error"]["code"], "not_found")
        st, b = self.srv.req("GET", "/v1/jobs/abc/attempts")  # as GET /v1/jobs/abc
        self.assertEqual((st, b["error"]["message"]), (404, "no job abc"), b)


class TenantTokens(ServerTest):
    server_env = {"TENQ_ADMIN_TOKEN": ADMIN}

    def test_a_tenant_sees_its_own_jobs_attempts_only_and_no_tokens(self):
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:mine"}, ADMIN)["token"]
        mine = self.srv.submit(ADMIN, queue="ht", tenant="mine", max_attempts=3)
        other = self.srv.submit(ADMIN, queue="ht", tenant="other")
        for _ in range(2):
            got = self.srv.lease(["ht"], max=2, token=ADMIN)
            for g in got:
                self.srv.fail(g, ADMIN, error="x", retry_in_ms=0)
        a = attempts(self.srv, mine["id"], token=tok)["attempts"]
        self.assertEqual([x["outcome"] for x in a], ["failed", "failed"])
        self.assertNotIn("token", a[0])
        self.assertIn("token", attempts(self.srv, mine["id"], token=ADMIN)["attempts"][0])
        st, b = self.srv.req("GET", "/v1/jobs/%d/attempts" % other["id"], token=tok)
        self.assertEqual(st, 404, b)
        # finished and out of memory: read from the store, still its own only
        for g in self.srv.lease(["ht"], max=2, token=ADMIN):
            self.srv.ack(g, ADMIN)
        self.assertEqual(attempts(self.srv, mine["id"], token=tok)["state"], "succeeded")
        st, b = self.srv.req("GET", "/v1/jobs/%d/attempts" % other["id"], token=tok)
        self.assertEqual(st, 404, b)


class AcrossRestarts(ServerTest):
    def test_attempts_are_kept_across_a_restart_and_a_lease_held_over_it_expires(self):
        # long leases while the worker calls must come within them; short once
        # they are made, so that the held one expires soon after the restart
        # (a load gives a lease at most one lease_ms)
        self.srv.ok("PUT", "/v1/queues/hr", {"lease_ms": 60000, "max_attempts": 5})
        j = self.srv.submit(queue="hr")
        got = self.srv.lease(["hr"], worker="before")[0]
        self.srv.fail(got, error="first", retry_in_ms=0)
        held = self.srv.lease(["hr"], worker="held")[0]
        self.srv.ok("POST", "/v1/jobs/%d/start" % j["id"], {"token": held["token"]})
        self.srv.ok("PUT", "/v1/queues/hr", {"lease_ms": 1500})
        self.srv.kill()  # kill -9: what was answered is stored
        self.srv.start()
        a = attempts(self.srv, j["id"])["attempts"]
        self.assertEqual([x["outcome"] for x in a], ["failed", "running"])
        deadline = time.time() + 15
        while time.time() < deadline and a[-1]["outcome"] == "running":
            time.sleep(0.2)
            a = attempts(self.srv, j["id"])["attempts"]
        self.assertEqual([(x["outcome"], x["worker"]) for x in a],
                         [("failed", "before"), ("expired", "held")])
        self.assertEqual(a[1]["token"], held["token"])
        self.srv.stop()
        self.srv.start()
        self.assertEqual(attempts(self.srv, j["id"])["attempts"], a)


class Retention(ServerTest):
    def test_retention_and_the_morgue_take_a_jobs_attempts(self):
        self.srv.ok("PUT", "/v1/queues/hp", {"retention_ms": 1, "max_attempts": 3})
        self.srv.ok("PUT", "/v1/queues/hd", {"max_attempts": 1})
        pruned = self.srv.submit(queue="hp")
        got = self.srv.lease(["hp"])[0]
        self.srv.fail(got, error="once", retry_in_ms=0)
        self.srv.ack(self.srv.lease(["hp"])[0])
        dead = self.srv.submit(queue="hd")
        self.srv.fail(self.srv.lease(["hd"])[0], error="fatal")
        kept = self.srv.submit(queue="hd")
        self.srv.fail(self.srv.lease(["hd"])[0], error="kept")
        self.assertEqual(len(attempts(self.srv, pruned["id"])["attempts"]), 2)
        self.srv.ok("DELETE", "/v1/morgue/%d" % dead["id"])
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.srv.req("GET", "/v1/jobs/%d" % pruned["id"])[0] == 404:
                break
            time.sleep(0.2)
        self.assertEqual(self.srv.req("GET", "/v1/jobs/%d/attempts" % pruned["id"])[0], 404)
        self.assertEqual(self.srv.req("GET", "/v1/jobs/%d/attempts" % dead["id"])[0], 404)
        self.srv.stop()
        self.assertEqual(stored_attempt_rows(self.srv, pruned["id"]), 0)
        self.assertEqual(stored_attempt_rows(self.srv, dead["id"]), 0)
        self.assertEqual(stored_attempt_rows(self.srv, kept["id"]), 1)
        self.srv.start()


if __name__ == "__main__":
    main()
