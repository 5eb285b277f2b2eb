# SPDX-License-Identifier: Apache-2.0
"""Operations: a queue paused whole or for one tenant, and server-side
timeouts (a queue's and a job's own). One server per class, real sockets,
either store (TENQ_TEST_STORE)."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import ServerTest, main  # noqa: E402


class Pause(ServerTest):
    def queue(self, name, token=None):
        return self.srv.ok("GET", "/v1/queues/" + name, token=token)

    def test_a_paused_queue_leases_nothing_and_says_why_until_resumed(self):
        a = self.srv.submit(queue="p-whole", tenant="t1")
        q = self.srv.ok("POST", "/v1/queues/p-whole/pause")
        self.assertTrue(q["paused"])
        b = self.srv.submit(queue="p-whole", tenant="t2")  # submits are taken while paused
        self.assertEqual(self.srv.lease(["p-whole"], max=10), [])
        w = self.srv.job(b["id"])["waiting"]
        self.assertEqual(w["reason"], "queue_paused")
        self.assertIn("queue p-whole is paused", w["message"])
        self.assertEqual(self.queue("p-whole")["eligible"], 0)
        q = self.srv.ok("POST", "/v1/queues/p-whole/resume")
        self.assertFalse(q["paused"])
        got = self.srv.lease(["p-whole"], max=10)
        self.assertEqual(sorted(j["id"] for j in got), sorted([a["id"], b["id"]]))

    def test_a_queue_paused_for_one_tenant_runs_the_others(self):
        a = self.srv.submit(queue="p-one", tenant="quiet")
        b = self.srv.submit(queue="p-one", tenant="busy")
        q = self.srv.ok("POST", "/v1/queues/p-one/pause", {"tenant": "quiet"})
        self.assertFalse(q["paused"])
        self.assertEqual(q["paused_tenants"], ["quiet"])
        got = self.srv.lease(["p-one"], max=10)
        self.assertEqual([j["id"] for j in got], [b["id"]])
        w = self.srv.job(a["id"])["waiting"]
        self.assertEqual(w["reason"], "tenant_paused")
        self.assertIn("paused for tenant quiet", w["message"])
        self.srv.ok("POST", "/v1/queues/p-one/resume", {"tenant": "quiet"})
        self.assertEqual(self.queue("p-one")["paused_tenants"], [])
        self.assertEqual([j["id"] for j in self.srv.lease(["p-one"])], [a["id"]])

    def test_a_job_already_leased_finishes_while_its_queue_is_paused(self):
        j = self.srv.submit(queue="p-held")
        got = self.srv.lease(["p-held"])
        self.srv.ok("POST", "/v1/queues/p-held/pause")
        self.srv.ack(got[0])
        self.assertEqual(self.srv.job(j["id"])["state"], "succeeded")
        self.srv.ok("POST", "/v1/queues/p-held/resume")

    def test_a_waiting_lease_is_answered_when_the_queue_resumes(self):
        self.srv.ok("POST", "/v1/queues/p-wake/pause")
        j = self.srv.submit(queue="p-wake")
        out = {}

        def lease():
            out["got"] = self.srv.lease(["p-wake"], wait_ms=10000, conn="waiter")
            out["at"] = time.time()

        t = threading.Thread(target=lease)
        t.start()
        time.sleep(0.3)
        self.assertNotIn("got", out)
        resumed = time.time()
        self.srv.ok("POST", "/v1/queues/p-wake/resume")
        t.join(15)
        self.assertEqual([x["id"] for x in out["got"]], [j["id"]])
        self.assertLess(out["at"] - resumed, 2.0)

    def test_bad_pauses_get_a_clear_error_and_change_nothing(self):
        self.srv.submit(queue="p-bad", tenant="t1")
        for body, field in (({"tenant": 5}, "tenant"), ({"tenant": "t1", "all": True}, "all"),
                            ({"tenant": "no spaces"}, "tenant")):
            st, b = self.srv.req("POST", "/v1/queues/p-bad/pause", body)
            self.assertEqual(st, 400, b)
            self.assertEqual(b["error"]["field"], field)
        st, b = self.srv.req("POST", "/v1/queues/bad%20name/pause")
        self.assertEqual(st, 400, b)
        q = self.queue("p-bad")
        self.assertEqual((q["paused"], q["paused_tenants"]), (False, []))
        self.assertEqual(len(self.srv.lease(["p-bad"])), 1)

ADMIN = "admin-secret-for-tests-0001"


class PauseByTenantToken(ServerTest):
    server_env = {"TENQ_ADMIN_TOKEN": ADMIN}

    def test_a_tenant_token_pauses_its_own_jobs_only(self):
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:self"}, ADMIN)["token"]
        mine = self.srv.submit(ADMIN, queue="p-tok", tenant="self")
        other = self.srv.submit(ADMIN, queue="p-tok", tenant="other")
        st, b = self.srv.req("POST", "/v1/queues/p-tok/pause", {"tenant": "other"}, token=tok)
        self.assertEqual(st, 403, b)
        q = self.srv.ok("POST", "/v1/queues/p-tok/pause", token=tok)
        self.assertFalse(q["paused"])  # its own tenant, not the whole queue
        self.assertEqual(q["paused_tenants"], ["self"])
        self.assertEqual([j["id"] for j in self.srv.lease(["p-tok"], max=5, token=ADMIN)], [other["id"]])
        self.srv.ok("POST", "/v1/queues/p-tok/resume", token=tok)
        self.assertEqual([j["id"] for j in self.srv.lease(["p-tok"], max=5, token=ADMIN)], [mine["id"]])


class PauseAcrossRestarts(ServerTest):
    def test_both_pauses_survive_a_restart(self):
        a = self.srv.submit(queue="pr-whole")
        b = self.srv.submit(queue="pr-one", tenant="held")
        c = self.srv.submit(queue="pr-one", tenant="free")
        self.srv.ok("POST", "/v1/queues/pr-whole/pause")
        self.srv.ok("POST", "/v1/queues/pr-one/pause", {"tenant": "held"})
        # paused and resumed again: the last word counts
        self.srv.ok("POST", "/v1/queues/pr-one/pause", {"tenant": "free"})
        self.srv.ok("POST", "/v1/queues/pr-one/resume", {"tenant": "free"})
        self.srv.stop()
        self.srv.start()
        self.assertTrue(self.srv.ok("GET", "/v1/queues/pr-whole")["paused"])
        self.assertEqual(self.srv.ok("GET", "/v1/queues/pr-one")["paused_tenants"], ["held"])
        self.assertEqual(self.srv.lease(["pr-whole"]), [])
        got = self.srv.lease(["pr-one"], max=5)
        self.assertEqual([j["id"] for j in got], [c["id"]])
        self.srv.ack(got[0])
        self.srv.ok("POST", "/v1/queues/pr-whole/resume")
        self.srv.ok("POST", "/v1/queues/pr-one/resume", {"tenant": "held"})
        self.srv.kill()  # kill -9: what was answered is stored
        self.srv.start()
        self.assertFalse(self.srv.ok("GET", "/v1/queues/pr-whole")["paused"])
        got = self.srv.lease(["pr-whole", "pr-one"], max=5)
        self.assertEqual(sorted(j["id"] for j in got), sorted([a["id"], b["id"]]))


class Timeouts(ServerTest):
    def test_an_attempt_past_its_queues_timeout_fails_though_it_heartbeats(self):
        self.srv.ok("PUT", "/v1/queues/t-q", {"lease_ms": 3000, "timeout_ms": 1000,
                                              "backoff": "fixed", "backoff_base_ms": 60000})
        j = self.srv.submit(queue="t-q")
        got = self.srv.lease(["t-q"])[0]
        leased = time.time()
        self.assertLessEqual(got["lease_until"] - int(leased * 1000), 1100)
        path = "/v1/jobs/%d/heartbeat" % j["id"]
        refused = None
        while time.time() - leased < 5:
            st, b = self.srv.req("POST", path, {"token": got["token"]})
            if st != 200:
                refused = (st, time.time() - leased)
                break
            self.assertLessEqual(b["lease_until"], got["lease_until"])  # never past the timeout
            time.sleep(0.2)
        self.assertIsNotNone(refused, "heartbeats kept the attempt alive past its timeout")
        self.assertEqual(refused[0], 409)
        self.assertGreaterEqual(refused[1], 0.95)  # never early
        self.assertLess(refused[1], 2.5)
        after = self.srv.job(j["id"])
        self.assertEqual((after["state"], after["attempts"]), ("scheduled", 1))
        self.assertIn("timed out", after["error"])
        st, b = self.srv.req("POST", "/v1/jobs/%d/ack" % j["id"], {"token": got["token"]})
        self.assertEqual(st, 409, b)

    def test_a_jobs_own_timeout_overrides_its_queue(self):
        self.srv.ok("PUT", "/v1/queues/t-own", {"lease_ms": 3000})
        j = self.srv.submit(queue="t-own", timeout_ms=1200)
        self.assertEqual(self.srv.job(j["id"])["timeout_ms"], 1200)
        got = self.srv.lease(["t-own"])[0]
        self.assertEqual(got["timeout_ms"], 1200)
        t0 = time.time()
        after = None
        while time.time() - t0 < 5:
            after = self.srv.job(j["id"])
            if after["state"] != "leased":
                break
            self.srv.req("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": got["token"]})
            time.sleep(0.1)
        self.assertIn("timed out", after["error"])
        self.assertGreaterEqual(time.time() - t0, 1.1)

    def test_a_job_without_a_timeout_runs_as_long_as_it_heartbeats(self):
        self.srv.ok("PUT", "/v1/queues/t-none", {"lease_ms": 600})
        j = self.srv.submit(queue="t-none")
        got = self.srv.lease(["t-none"])[0]
        for _ in range(10):  # 2 s, more than three leases
            self.srv.ok("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": got["token"]})
            time.sleep(0.2)
        self.srv.ack(got)
        self.assertEqual(self.srv.job(j["id"])["state"], "succeeded")

    def test_a_timeout_below_a_third_of_the_lease_is_refused(self):
        st, b = self.srv.req("PUT", "/v1/queues/t-bad", {"lease_ms": 30000, "timeout_ms": 5000})
        self.assertEqual(st, 400, b)
        self.assertEqual(b["error"]["field"], "timeout_ms")
        st, b = self.srv.req("GET", "/v1/queues/t-bad")
        self.assertEqual(st, 404, b)  # nothing made
        self.srv.ok("PUT", "/v1/queues/t-bad", {"lease_ms": 30000})
        for bad in (5000, -1, 8 * 24 * 3600 * 1000, "1s"):
            st, b = self.srv.req("POST", "/v1/jobs", {"tenant": "t", "queue": "t-bad",
                                                      "type": "x", "timeout_ms": bad})
            self.assertEqual(st, 400, (bad, b))
            self.assertEqual(b["error"]["field"], "timeout_ms")
        self.assertEqual(self.srv.ok("GET", "/v1/queues/t-bad")["ready"], 0)

    def test_a_jobs_timeout_is_kept_across_a_restart(self):
        self.srv.ok("PUT", "/v1/queues/t-kept", {"lease_ms": 3000, "timeout_ms": 2000})
        j = self.srv.submit(queue="t-kept", timeout_ms=4000)
        self.srv.stop()
        self.srv.start()
        self.assertEqual(self.srv.job(j["id"])["timeout_ms"], 4000)
        self.assertEqual(self.srv.ok("GET", "/v1/queues/t-kept")["timeout_ms"], 2000)


if __name__ == "__main__":
    main()
