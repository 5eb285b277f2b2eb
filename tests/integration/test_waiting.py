# SPDX-License-Identifier: Apache-2.0
"""Why a job waits: GET /v1/jobs/{id} says it ("waiting": reason, figures,
message) for every job that is neither handed out nor finished, and so does
`tenq status`. One server per class, real sockets, either store
(TENQ_TEST_STORE)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import BIN, ServerTest, main  # noqa: E402


class Waiting(ServerTest):
    def waiting(self, jid):
        return self.srv.job(jid).get("waiting")

    def test_a_ready_job_waits_for_a_worker_and_a_leased_one_for_nothing(self):
        first = self.srv.submit(queue="w-plain", type="Plain.job")
        j = self.srv.submit(queue="w-plain", type="Plain.job")
        w = self.waiting(j["id"])
        self.assertEqual(w["reason"], "no_worker")  # nobody has asked for queue w-plain yet
        self.assertNotIn("asked_at", w)
        self.assertIn("no worker has asked for queue w-plain (type Plain.job)", w["message"])
        self.srv.lease(["w-plain"], types=["Other.type"])  # asks for another type: still nobody
        self.assertEqual(self.waiting(j["id"])["reason"], "no_worker")
        # a worker asks, and takes the first job
        self.assertEqual(self.srv.lease(["w-plain"])[0]["id"], first["id"])
        w = self.waiting(j["id"])
        self.assertEqual(w["reason"], "worker")
        self.assertIn("queue w-plain", w["message"])
        self.assertLessEqual(w["asked_at"], int(time.time() * 1000) + 1000)
        got = self.srv.lease(["w-plain"])
        self.assertEqual(got[0]["id"], j["id"])
        self.assertNotIn("waiting", self.srv.job(j["id"]))
        self.srv.ack(got[0])
        self.assertNotIn("waiting", self.srv.job(j["id"]))

    def test_a_tenant_at_its_slots_says_how_many_it_runs(self):
        self.srv.ok("PUT", "/v1/tenants/slotty", {"slots": 1})
        a = self.srv.submit(tenant="slotty", queue="w-slots")
        b = self.srv.submit(tenant="slotty", queue="w-slots")
        self.assertEqual(self.srv.lease(["w-slots"])[0]["id"], a["id"])
        w = self.waiting(b["id"])
        self.assertEqual((w["reason"], w["active"], w["limit"]), ("tenant_slots", 1, 1))
        self.assertIn("tenant slotty runs 1 of its 1 slots", w["message"])
        # and `tenq status` prints the server's sentence
        p = subprocess.run([BIN, "status", str(b["id"])], capture_output=True, text=True,
                           env=dict(os.environ, TENQ_SERVER=self.srv.url()), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"waiting\s+tenant slotty runs 1 of its 1 slots")
        self.srv.ok("PUT", "/v1/tenants/paused", {"slots": 0})
        c = self.srv.submit(tenant="paused", queue="w-slots")
        self.assertIn("paused (0 slots)", self.waiting(c["id"])["message"])

    def test_a_queues_per_tenant_cap_is_told_apart_from_slots(self):
        self.srv.ok("PUT", "/v1/queues/w-cap", {"tenant_cap": 1})
        a = self.srv.submit(tenant="capped", queue="w-cap")
        b = self.srv.submit(tenant="capped", queue="w-cap")
        self.assertEqual(self.srv.lease(["w-cap"])[0]["id"], a["id"])
        w = self.waiting(b["id"])
        self.assertEqual((w["reason"], w["active"], w["limit"]), ("tenant_cap", 1, 1))

    def test_a_job_in_a_lane_names_the_job_its_lane_runs_first(self):
        a = self.srv.submit(queue="w-lane", key="order:1")
        b = self.srv.submit(queue="w-lane", key="order:1")
        w = self.waiting(b["id"])
        self.assertEqual((w["reason"], w["blocked_by"]), ("lane", a["id"]))
        self.assertIn("order:1", w["message"])

    def test_a_job_for_later_and_a_retry_in_backoff_say_until_when(self):
        later = int(time.time() * 1000) + 3600 * 1000
        j = self.srv.submit(queue="w-later", run_at=later)
        w = self.waiting(j["id"])
        self.assertEqual((w["reason"], w["until"]), ("scheduled", later))
        r = self.srv.submit(queue="w-retry")
        self.srv.fail(self.srv.lease(["w-retry"])[0], error="boom", retry_in_ms=600000)
        w = self.waiting(r["id"])
        self.assertEqual(w["reason"], "backoff")
        self.assertGreater(w["until"], int(time.time() * 1000) + 500000)
        self.assertIn("attempt 1 of", w["message"])

    def test_a_wait_that_times_out_says_why_too(self):
        self.srv.ok("PUT", "/v1/tenants/waity", {"slots": 0})
        j = self.srv.submit(tenant="waity", queue="w-wait")
        got = self.srv.ok("GET", "/v1/jobs/%d/wait?timeout_ms=50" % j["id"])
        self.assertEqual(got["waiting"]["reason"], "tenant_slots")


if __name__ == "__main__":
    main()
