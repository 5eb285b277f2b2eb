# SPDX-License-Identifier: Apache-2.0
"""Quotas and backpressure: a tenant's or a queue's max_queued and
max_queued_bytes refuse a submit whole (429 quota_exceeded); the server's
memory budget refuses submits (429 overloaded) while leases and outcomes go
on. Real servers, real sockets, either store (TENQ_TEST_STORE)."""
import json
import os
import resource
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import BIN, Server, ServerTest, main  # noqa: E402


def jobs_of(tenant, queue, n, args=None, **extra):
    return [dict(tenant=tenant, queue=queue, type="T", args=args or {}, **extra)
            for _ in range(n)]


def under_asan():
    with open(BIN, "rb") as f:
        return b"__asan_init" in f.read()


class Quotas(ServerTest):
    def counts(self, kind, name):
        return self.srv.ok("GET", "/v1/%s/%s" % (kind, name))

    def refused(self, body, field):
        status, out, headers = self.srv.raw("POST", "/v1/jobs", body)
        self.assertEqual(status, 429, out)
        self.assertEqual(out["error"]["code"], "quota_exceeded")
        self.assertEqual(out["error"]["field"], field)
        self.assertEqual(headers.get("Retry-After"), "1")
        return out["error"]["message"]

    def test_a_batch_past_a_tenants_max_queued_is_refused_whole(self):
        self.srv.ok("PUT", "/v1/tenants/qa", {"max_queued": 3})
        msg = self.refused({"jobs": jobs_of("qa", "q-a", 4)}, "max_queued")
        self.assertIn("tenant qa", msg)
        self.assertIn("max_queued 3", msg)
        t = self.counts("tenants", "qa")
        self.assertEqual((t["queued"], t["submitted_total"]), (0, 0))  # nothing made
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs_of("qa", "q-a", 3)})
        self.assertEqual(self.counts("tenants", "qa")["queued"], 3)
        self.refused(dict(tenant="qa", queue="q-a", type="T"), "max_queued")
        # a job that finishes frees its room; leased and running jobs still count
        got = self.srv.lease(["q-a"], max=1)
        self.refused(dict(tenant="qa", queue="q-a", type="T"), "max_queued")
        self.srv.ack(got[0])
        self.srv.submit(tenant="qa", queue="q-a")
        self.assertEqual(self.counts("tenants", "qa")["queued"], 3)

    def test_bytes_of_args_are_counted_until_the_job_ends(self):
        self.srv.ok("PUT", "/v1/tenants/qb", {"max_queued_bytes": 985})
        big = {"pad": "x" * 480}  # 492 bytes as stored
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs_of("qb", "q-b", 2, big)})
        t = self.counts("tenants", "qb")
        self.assertEqual(t["queued_bytes"], 2 * len(json.dumps(big, separators=(",", ":"))))
        msg = self.refused(dict(tenant="qb", queue="q-b", type="T", args={"a": 1}),
                           "max_queued_bytes")
        self.assertIn("max_queued_bytes 985", msg)
        for j in self.srv.lease(["q-b"], max=2):
            self.srv.ack(j)
        self.assertEqual(self.counts("tenants", "qb")["queued_bytes"], 0)
        self.srv.submit(tenant="qb", queue="q-b", args={"a": 1})

    def test_a_queues_quota_counts_every_tenant(self):
        self.srv.ok("PUT", "/v1/queues/q-c", {"max_queued": 2})
        self.srv.submit(tenant="c1", queue="q-c")
        self.srv.submit(tenant="c2", queue="q-c")
        msg = self.refused(dict(tenant="c3", queue="q-c", type="T"), "max_queued")
        self.assertIn("queue q-c", msg)
        self.srv.submit(tenant="c3", queue="q-other")  # another queue is not held
        self.assertEqual(self.counts("queues", "q-c")["queued"], 2)

    def test_a_merging_queue_counts_its_payloads(self):
        self.srv.ok("PUT", "/v1/queues/q-m", {"merge": True, "max_queued_bytes": 40})
        self.srv.submit(tenant="m1", queue="q-m", key="k", args={"n": 1})
        self.srv.submit(tenant="m1", queue="q-m", key="k", args={"n": 2})  # merged
        self.assertEqual(self.counts("queues", "q-m")["queued_bytes"], 14)
        self.assertEqual(self.counts("queues", "q-m")["queued"], 1)
        got = self.srv.lease(["q-m"])
        self.assertEqual(len(got[0]["payloads"]), 2)
        self.srv.ack(got[0])
        self.assertEqual(self.counts("queues", "q-m")["queued_bytes"], 0)

    def test_batches_are_refused_whole(self):
        self.srv.ok("PUT", "/v1/tenants/qd", {"max_queued": 2})
        status, out, _ = self.srv.raw("POST", "/v1/batches", {
            "tenant": "qd", "jobs": [dict(queue="q-d", type="T")] * 3})
        self.assertEqual((status, out["error"]["code"]), (429, "quota_exceeded"))
        self.assertEqual(self.srv.ok("GET", "/v1/batches?tenant=qd")["batches"], [])
        b = self.srv.ok("POST", "/v1/batches", {"tenant": "qd", "jobs": [dict(queue="q-d", type="T")]})
        status, out, _ = self.srv.raw("POST", "/v1/batches/%d/jobs" % b["id"],
                                      {"jobs": [dict(queue="q-d", type="T")] * 2})
        self.assertEqual((status, out["error"]["code"]), (429, "quota_exceeded"))
        self.assertEqual(self.srv.ok("GET", "/v1/batches/%d" % b["id"])["total"], 1)

    def test_a_request_key_replay_is_answered_at_the_quota(self):
        self.srv.ok("PUT", "/v1/tenants/qe", {"max_queued": 1})
        hdr = {"Idempotency-Key": "quota-replay"}
        s1, first, _ = self.srv.raw("POST", "/v1/jobs", dict(tenant="qe", queue="q-e", type="T"),
                                    headers=hdr)
        s2, again, _ = self.srv.raw("POST", "/v1/jobs", dict(tenant="qe", queue="q-e", type="T"),
                                    headers=hdr)
        self.assertEqual((s1, s2), (201, 201))
        self.assertEqual(first, again)

    def test_bad_quotas_are_refused_and_change_nothing(self):
        self.srv.ok("PUT", "/v1/tenants/qf", {"max_queued": 5})
        for body, field in (({"max_queued": -1}, "max_queued"),
                            ({"max_queued": "lots"}, "max_queued"),
                            ({"max_queued_bytes": -5}, "max_queued_bytes"),
                            ({"max_queued_bytes": 1 << 51}, "max_queued_bytes")):
            status, out = self.srv.req("PUT", "/v1/tenants/qf", body)
            self.assertEqual((status, out["error"]["field"]), (400, field), body)
        t = self.counts("tenants", "qf")
        self.assertEqual((t["max_queued"], t["max_queued_bytes"]), (5, 0))
        self.srv.ok("PUT", "/v1/tenants/qf", {"max_queued": None})
        self.assertIsNone(self.counts("tenants", "qf")["max_queued"])

    def test_quotas_and_counts_hold_across_a_kill_9(self):
        self.srv.ok("PUT", "/v1/tenants/qg", {"max_queued": 4, "max_queued_bytes": 100})
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs_of("qg", "q-g", 4, {"k": "v"})})
        self.srv.kill()
        self.srv.start()
        t = self.counts("tenants", "qg")
        self.assertEqual((t["queued"], t["queued_bytes"], t["max_queued"]), (4, 36, 4))
        self.refused(dict(tenant="qg", queue="q-g", type="T"), "max_queued")

    def test_metrics_show_usage_against_the_quota(self):
        self.srv.ok("PUT", "/v1/tenants/qh", {"max_queued": 7, "max_queued_bytes": 999})
        self.srv.submit(tenant="qh", queue="q-h", args={"x": 1})
        text = self.srv.ok("GET", "/metrics")
        self.assertIn('tenq_tenant_max_queued{tenant="qh"} 7', text)
        self.assertIn('tenq_tenant_max_queued_bytes{tenant="qh"} 999', text)
        self.assertIn('tenq_tenant_queued_bytes{tenant="qh"} 7', text)
        self.assertIn('tenq_tenant_jobs{tenant="qh",state="ready"} 1', text)
        self.assertRegex(text, r'tenq_submits_refused_total\{reason="quota_exceeded"\} \d+')


class DefaultQuota(ServerTest):
    server_args = ["--default-max-queued", "2"]

    def test_a_tenant_made_on_first_use_takes_the_servers_default(self):
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs_of("fresh", "q", 2)})
        status, out = self.srv.req("POST", "/v1/jobs", dict(tenant="fresh", queue="q", type="T"))
        self.assertEqual((status, out["error"]["field"]), (429, "max_queued"))
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/fresh")["max_queued"], 2)
        # a request naming a tenant that does not exist yet is held to it too
        status, out = self.srv.req("POST", "/v1/jobs", {"jobs": jobs_of("newer", "q", 3)})
        self.assertEqual(status, 429, out)


class MemoryBudget(ServerTest):
    """A budget small enough to reach: 4 MiB, of which the jobs may take 80%
    (small jobs: their args stay in memory, and the jobs themselves are what
    fills it)."""
    server_args = ["--memory-budget", "4MiB"]

    def test_a_flood_is_refused_while_other_tenants_jobs_run(self):
        # tenant calm has work queued before the flood
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs_of("calm", "q-calm", 20)})
        pad = {"pad": "y" * 40}
        made = 0
        while True:
            status, out, headers = self.srv.raw(
                "POST", "/v1/jobs", {"jobs": jobs_of("flood", "q-flood", 1000, pad)})
            if status == 429:
                break
            self.assertEqual(status, 201, out)
            made += 1000
            self.assertLess(made, 100000, "never refused")
        self.assertEqual(out["error"]["code"], "overloaded")
        self.assertEqual(headers.get("Retry-After"), "1")
        self.assertIn("memory budget", out["error"]["message"])
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/flood")["queued"], made)  # none of it
        metrics = self.srv.ok("GET", "/metrics")
        used = int(metrics.split("\ntenq_memory_jobs_bytes ")[1].split()[0])
        self.assertLessEqual(used, 4 * 1024 * 1024 * 8 // 10)
        self.assertRegex(metrics, r'tenq_submits_refused_total\{reason="overloaded"\} [1-9]')
        # leases and outcomes go on, for every tenant
        for j in self.srv.lease(["q-calm"], max=20):
            self.srv.ack(j)
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/calm")["succeeded_total"], 20)
        # and what the flood's jobs free lets submits in again
        while True:
            got = self.srv.lease(["q-flood"], max=1000)
            if not got:
                break
            self.srv.ok("POST", "/v1/outcomes", {"outcomes": [
                {"id": j["id"], "token": j["token"], "ok": True} for j in got]})
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs_of("flood", "q-flood", 1000, pad)})


class AddressSpace(unittest.TestCase):
    """A server given 1 GiB of address space (RLIMIT_AS) chooses its budget
    from it and refuses a flood rather than die.  Its args are all kept in
    memory (--args-memory above the budget), as a server that never spills
    them would: they are what fills it."""

    def test_a_flood_under_an_address_space_limit_is_refused_not_fatal(self):
        if under_asan():
            self.skipTest("ASan reserves terabytes of address space for its shadow: RLIMIT_AS "
                          "cannot apply (the plain build runs this test)")
        limit = 1 << 30

        def cap():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        srv = Server(preexec=cap, args=["--args-memory", "1GiB"])
        try:
            self.assertIn("60% of RLIMIT_AS", srv.log_text())
            pad = {"pad": "z" * 4000}
            made, refused = 0, None
            while made < 400000:
                status, out, _ = srv.raw("POST", "/v1/jobs",
                                         {"jobs": jobs_of("big", "q-big", 500, pad)})
                if status == 429:
                    refused = out
                    break
                self.assertEqual(status, 201, out)
                made += 500
            self.assertIsNotNone(refused, "a 1 GiB server took %d jobs of 4 KB" % made)
            self.assertEqual(refused["error"]["code"], "overloaded")
            self.assertIsNone(srv.proc.poll(), "the server died")
            # it still leases and answers
            got = srv.lease(["q-big"], max=10)
            self.assertEqual(len(got), 10)
            for j in got:
                srv.ack(j)
            with open("/proc/%d/statm" % srv.proc.pid) as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            self.assertLess(rss, limit * 6 // 10, "RSS %d MiB" % (rss >> 20))
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
