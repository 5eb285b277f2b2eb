# SPDX-License-Identifier: Apache-2.0
"""Operations: a queue paused whole or for one tenant, and server-side
timeouts (a queue's and a job's own). One server per class, real sockets,
either store (TENQ_TEST_STORE)."""
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import BIN, ServerTest, main  # noqa: E402

API_MD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "API.md")


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
        self.srv.ok("PUT", "/v1/queues/p-wake", {})  # (pause takes a queue that exists)
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

    def test_a_null_tenant_is_refused_not_read_as_every_tenant(self):
        self.srv.submit(queue="p-null", tenant="t1")
        for verb in ("pause", "resume"):
            st, b = self.srv.req("POST", "/v1/queues/p-null/" + verb, {"tenant": None})
            self.assertEqual((st, b["error"].get("field")), (400, "tenant"), b)
            q = self.queue("p-null")
            self.assertEqual((q["paused"], q["paused_tenants"]), (False, []))
        self.srv.ok("POST", "/v1/queues/p-null/pause")
        st, b = self.srv.req("POST", "/v1/queues/p-null/resume", {"tenant": None})
        self.assertEqual(st, 400, b)
        self.assertTrue(self.queue("p-null")["paused"])
        self.srv.ok("POST", "/v1/queues/p-null/resume")

    def test_pausing_a_queue_that_does_not_exist_is_404_and_makes_nothing(self):
        for verb in ("pause", "resume"):
            for body in (None, {"tenant": "p-ghost-tenant"}):
                st, b = self.srv.req("POST", "/v1/queues/p-ghost/" + verb, body)
                self.assertEqual((st, b["error"]["code"]), (404, "not_found"), (verb, body, b))
        self.assertEqual(self.srv.req("GET", "/v1/queues/p-ghost")[0], 404)
        self.assertEqual(self.srv.req("GET", "/v1/tenants/p-ghost-tenant")[0], 404)
        names = [q["name"] for q in self.srv.ok("GET", "/v1/queues")["queues"]]
        self.assertNotIn("p-ghost", names)

ADMIN = "admin-secret-for-tests-0001"

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

    def test_a_tenant_token_cannot_pause_a_queue_it_does_not_see(self):
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:unseen"}, ADMIN)["token"]
        self.srv.submit(ADMIN, queue="p-hidden", tenant="someone")
        for verb in ("pause", "resume"):
            st, b = self.srv.req("POST", "/v1/queues/p-hidden/" + verb, token=tok)
            self.assertEqual(st, 404, b)
        q = self.srv.ok("GET", "/v1/queues/p-hidden", token=ADMIN)
        self.assertEqual((q["paused"], q["paused_tenants"]), (False, []))


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
        # heartbeats 0.5 s apart keep a 3 s lease: a busy machine may delay one
        # by 2.5 s before the lease runs out (600 ms leases left it 0.4 s)
        self.srv.ok("PUT", "/v1/queues/t-none", {"lease_ms": 3000})
        j = self.srv.submit(queue="t-none")
        got = self.srv.lease(["t-none"])[0]
        for _ in range(20):  # 10 s, more than three leases
            self.srv.ok("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": got["token"]})
            time.sleep(0.5)
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


class RateLimits(ServerTest):
    def lease_ids(self, queue, n=100):
        return [j["id"] for j in self.srv.lease([queue], max=n)]

    def test_a_queue_rate_holds_over_seconds_and_says_until_when(self):
        self.srv.ok("PUT", "/v1/queues/r-q", {"rate": 5, "rate_period_ms": 1000})
        ids = [self.srv.submit(queue="r-q")["id"] for _ in range(40)]
        first = self.lease_ids("r-q")
        self.assertEqual(len(first), 5)  # a period's worth at once
        q = self.srv.ok("GET", "/v1/queues/r-q")
        self.assertEqual((q["eligible"], q["held"]), (0, 35))
        self.assertGreater(q["rate_limited_until"], int(time.time() * 1000))
        waiting = [i for i in ids if i not in first]
        w = self.srv.job(waiting[0])["waiting"]
        self.assertEqual(w["reason"], "queue_rate")
        self.assertEqual(w["until"], q["rate_limited_until"])
        t0 = time.time()
        got = len(first)
        while time.time() - t0 < 2.0:
            got += len(self.lease_ids("r-q"))
            time.sleep(0.02)
        elapsed = time.time() - t0
        # one start each 200 ms after the burst: never more, and no slower
        self.assertLessEqual(got, 5 + int(elapsed / 0.2) + 1)
        self.assertGreaterEqual(got, 5 + int(elapsed / 0.2) - 2)

    def test_a_queues_per_tenant_rate_limits_each_tenant(self):
        self.srv.ok("PUT", "/v1/queues/r-pair", {"tenant_rate": 1, "rate_period_ms": 60000})
        ids = [self.srv.submit(queue="r-pair", tenant=t)["id"] for t in ("a", "a", "b", "b")]
        got = self.srv.lease(["r-pair"], max=10)
        self.assertEqual(sorted(j["tenant"] for j in got), ["a", "b"])
        rest = [i for i in ids if i not in [j["id"] for j in got]]
        self.assertEqual(len(rest), 2)
        w = self.srv.job(rest[0])["waiting"]
        self.assertEqual(w["reason"], "queue_tenant_rate")
        self.assertIn("per-tenant rate limit", w["message"])

    def test_a_limit_changed_live_takes_effect_at_once(self):
        self.srv.ok("PUT", "/v1/queues/r-live", {"rate": 1, "rate_period_ms": 3600000})
        for _ in range(5):
            self.srv.submit(queue="r-live")
        self.assertEqual(len(self.lease_ids("r-live")), 1)
        self.assertEqual(self.lease_ids("r-live"), [])
        self.srv.ok("PUT", "/v1/queues/r-live", {"rate": None})
        self.assertEqual(len(self.lease_ids("r-live")), 4)

    def test_bad_rates_are_refused_naming_the_field(self):
        for body, field in (({"rate": 0}, "rate"), ({"rate": -3}, "rate"),
                            ({"tenant_rate": 0}, "tenant_rate"),
                            ({"rate_period_ms": 0}, "rate_period_ms"),
                            ({"rate_burst": 2000000}, "rate_burst")):
            st, b = self.srv.req("PUT", "/v1/queues/r-bad", body)
            self.assertEqual(st, 400, (body, b))
            self.assertEqual(b["error"]["field"], field)
        self.assertEqual(self.srv.req("GET", "/v1/queues/r-bad")[0], 404)
        st, b = self.srv.req("PUT", "/v1/tenants/r-bad", {"rate": 0})
        self.assertEqual((st, b["error"]["field"]), (400, "rate"))


class RateLimitsAcrossRestarts(ServerTest):
    def test_a_restart_never_grants_a_second_burst(self):
        self.srv.ok("PUT", "/v1/tenants/r-t", {"rate": 2, "rate_period_ms": 4000})
        for _ in range(10):
            self.srv.submit(queue="r-restart", tenant="r-t")
        got = self.srv.lease(["r-restart"], max=10)
        self.assertEqual(len(got), 2)
        for j in got:
            self.srv.ack(j)
        self.srv.stop()
        self.srv.start()
        started = time.time()
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/r-t")["rate"], 2)
        # the limit begins used up: nothing at once, one start 2 s (T) on
        self.assertEqual(self.srv.lease(["r-restart"], max=10), [])
        got = []
        while time.time() - started < 3.5 and not got:
            got = self.srv.lease(["r-restart"], max=10)
            time.sleep(0.05)
        self.assertEqual(len(got), 1)
        self.assertGreaterEqual(time.time() - started, 1.9)


class Bulk(ServerTest):
    def bulk(self, token=None, **body):
        return self.srv.ok("POST", "/v1/jobs/bulk", body, token=token)

    def test_cancel_by_filter_after_a_dry_run(self):
        mine = [self.srv.submit(queue="b-cancel", type="Report.run")["id"] for _ in range(3)]
        other = self.srv.submit(queue="b-cancel", type="Mail.send")["id"]
        leased = self.srv.lease(["b-cancel"], types=["Report.run"])[0]
        r = self.bulk(action="cancel", queue="b-cancel", type="Report.run", dry_run=True)
        self.assertEqual((r["matched"], r["changed"], r["dry_run"]), (3, 0, True))
        self.assertEqual(self.srv.job(mine[1])["state"], "ready")
        r = self.bulk(action="cancel", queue="b-cancel", type="Report.run")
        self.assertEqual((r["matched"], r["changed"]), (3, 3))
        states = sorted(self.srv.job(i)["state"] for i in mine)
        self.assertEqual(states, ["cancelled", "cancelled", "leased"])
        self.assertTrue(self.srv.job(leased["id"])["cancel_requested"])
        self.assertEqual(self.srv.job(other)["state"], "ready")

    def test_retry_now_makes_backoffs_and_delayed_jobs_ready(self):
        later = int(time.time() * 1000) + 3600 * 1000
        a = self.srv.submit(queue="b-retry", run_at=later)["id"]
        b = self.srv.submit(queue="b-retry")["id"]
        self.srv.fail(self.srv.lease(["b-retry"])[0], error="x", retry_in_ms=600000)
        self.assertEqual(self.srv.lease(["b-retry"]), [])
        r = self.bulk(action="retry_now", queue="b-retry")
        self.assertEqual((r["matched"], r["changed"]), (2, 2))
        got = sorted(j["id"] for j in self.srv.lease(["b-retry"], max=5))
        self.assertEqual(got, sorted([a, b]))

    def test_set_priority_moves_matching_jobs_ahead(self):
        low = [self.srv.submit(queue="b-prio", type="Low")["id"] for _ in range(3)]
        high = self.srv.submit(queue="b-prio", type="Urgent")["id"]
        r = self.bulk(action="set_priority", queue="b-prio", type="Urgent", priority=100)
        self.assertEqual((r["matched"], r["changed"]), (1, 1))
        self.assertEqual(self.srv.job(high)["priority"], 100)
        self.assertEqual(self.srv.lease(["b-prio"])[0]["id"], high)
        self.assertEqual(self.srv.job(low[0])["priority"], 0)

    def test_delete_finished_jobs_by_filter(self):
        done = []
        for _ in range(4):
            j = self.srv.submit(queue="b-del")
            self.srv.ack(self.srv.lease(["b-del"])[0])
            done.append(j["id"])
        live = self.srv.submit(queue="b-del")["id"]
        r = self.bulk(action="delete", queue="b-del", dry_run=True)
        self.assertEqual((r["matched"], r["changed"]), (4, 0))
        self.assertEqual(self.srv.job(done[0])["state"], "succeeded")
        r = self.bulk(action="delete", queue="b-del", state="succeeded", limit=3)
        self.assertEqual((r["matched"], r["changed"]), (3, 3))
        gone = [i for i in done if self.srv.req("GET", "/v1/jobs/%d" % i)[0] == 404]
        self.assertEqual(gone, done[:3])
        self.assertEqual(self.srv.job(live)["state"], "ready")
        # a new job never takes a deleted id
        self.assertGreater(self.srv.submit(queue="b-del")["id"], live)

    def test_created_between_bounds_the_match(self):
        first = self.srv.submit(queue="b-time")["id"]
        time.sleep(0.05)
        cut = int(time.time() * 1000)
        time.sleep(0.05)
        second = self.srv.submit(queue="b-time")["id"]
        r = self.bulk(action="cancel", queue="b-time", created_after=cut)
        self.assertEqual(r["matched"], 1)
        self.assertEqual(self.srv.job(second)["state"], "cancelled")
        self.assertEqual(self.srv.job(first)["state"], "ready")
        r = self.bulk(action="cancel", queue="b-time", created_before=cut)
        self.assertEqual(r["matched"], 1)

    def test_bad_bulk_actions_are_refused_and_change_nothing(self):
        j = self.srv.submit(queue="b-bad")["id"]
        for body, field in (({}, "action"), ({"action": "explode"}, "action"),
                            ({"action": "cancel", "state": "dead"}, "state"),
                            ({"action": "cancel", "state": "succeeded"}, "state"),
                            ({"action": "delete", "state": "ready"}, "state"),
                            ({"action": "set_priority"}, "priority"),
                            ({"action": "cancel", "priority": 3}, "priority"),
                            ({"action": "set_priority", "priority": 99999}, "priority"),
                            ({"action": "cancel", "limit": 0}, "limit"),
                            ({"action": "cancel", "colour": "red"}, "colour")):
            st, b = self.srv.req("POST", "/v1/jobs/bulk", dict(body, queue="b-bad"))
            self.assertEqual((st, b["error"]["field"]), (400, field), body)
        self.assertEqual(self.srv.job(j)["state"], "ready")


    def test_bulk_filters_are_names_checked_as_everywhere(self):
        j = self.srv.submit(queue="b-names", key="k1")["id"]
        for body, field in (({"queue": ""}, "queue"), ({"tenant": "bad name!"}, "tenant"),
                            ({"queue": "q" * 300}, "queue"), ({"key": ""}, "key"),
                            ({"type": ""}, "type"), ({"type": "has space"}, "type"),
                            ({"key": "k" * 257}, "key"), ({"key": "a\nb"}, "key"),
                            ({"tenant": "t" * 65}, "tenant")):
            for action in ("cancel", "delete"):
                st, b = self.srv.req("POST", "/v1/jobs/bulk", dict(body, action=action))
                self.assertEqual((st, b["error"].get("field")), (400, field), (body, b))
        self.assertEqual(self.srv.job(j)["state"], "ready")

    def test_a_null_filter_is_refused_not_read_as_no_filter(self):
        mine = self.srv.submit(queue="b-null", tenant="t-null")["id"]
        other = self.srv.submit(queue="b-null-other", tenant="t-other")["id"]
        for field in ("tenant", "queue", "type", "key", "state", "created_after",
                      "created_before", "limit", "dry_run", "priority"):
            st, b = self.srv.req("POST", "/v1/jobs/bulk", {"action": "cancel", "queue": "b-null",
                                                          field: None} if field != "queue" else
                                 {"action": "cancel", "tenant": "t-null", "queue": None})
            self.assertEqual((st, b["error"].get("field")), (400, field), b)
        st, b = self.srv.req("POST", "/v1/jobs/bulk", {"action": "cancel", "queue": "b-null",
                                                      "state": []})
        self.assertEqual((st, b["error"].get("field")), (400, "state"), b)
        self.assertEqual(self.srv.job(mine)["state"], "ready")
        self.assertEqual(self.srv.job(other)["state"], "ready")

    def test_each_action_takes_the_states_it_applies_to_as_docs_and_cli_say(self):
        """The server, `tenq bulk --help` and docs/API.md's table say the
        same: a state an action does not apply to is 400 naming state."""
        states = ["waiting", "scheduled", "blocked", "ready", "leased", "running", "succeeded",
                  "cancelled", "merged", "dead"]
        help_text = subprocess.run([BIN, "bulk", "--help"], capture_output=True, text=True,
                                   check=True).stdout
        from_help = {}
        for m in re.finditer(r"(cancel|retry_now|set_priority|delete): ([a-z, ]+?)[;)]",
                             " ".join(help_text.split())):
            from_help[m.group(1)] = set(re.findall(r"[a-z]+", m.group(2))) - {"or"}
        with open(API_MD) as f:
            api = f.read()
        from_docs = {}
        for m in re.finditer(r"(?m)^\| `(cancel|retry_now|set_priority|delete)` \| ([^|]+)\|",
                             api):
            from_docs[m.group(1)] = set(re.findall(r"`([a-z]+)`", m.group(2)))
        self.assertEqual(set(from_help), {"cancel", "retry_now", "set_priority", "delete"},
                         help_text)
        self.assertEqual(from_docs, from_help)
        self.srv.submit(queue="b-states")
        for action, takes in sorted(from_help.items()):
            for state in states:
                body = {"action": action, "queue": "b-states", "state": state, "dry_run": True}
                if action == "set_priority":
                    body["priority"] = 1
                st, b = self.srv.req("POST", "/v1/jobs/bulk", body)
                if state in takes:
                    self.assertEqual(st, 200, (action, state, b))
                else:
                    self.assertEqual((st, b["error"].get("field")), (400, "state"),
                                     (action, state, b))


class BulkByTenantToken(ServerTest):
    server_env = {"TENQ_ADMIN_TOKEN": ADMIN}

    def test_a_tenant_token_touches_its_own_jobs_only(self):
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:mine"}, ADMIN)["token"]
        mine = self.srv.submit(ADMIN, queue="bt", tenant="mine")["id"]
        theirs = self.srv.submit(ADMIN, queue="bt", tenant="theirs")["id"]
        st, b = self.srv.req("POST", "/v1/jobs/bulk", {"action": "cancel", "tenant": "theirs"},
                             token=tok)
        self.assertEqual(st, 403, b)
        r = self.srv.ok("POST", "/v1/jobs/bulk", {"action": "cancel", "queue": "bt"}, token=tok)
        self.assertEqual(r["matched"], 1)
        self.assertEqual(self.srv.job(mine, token=ADMIN)["state"], "cancelled")
        self.assertEqual(self.srv.job(theirs, token=ADMIN)["state"], "ready")


class History(ServerTest):
    def test_the_server_keeps_throughput_and_depth_every_10_s(self):
        h = self.srv.ok("GET", "/v1/stats/history")
        self.assertEqual(h["interval_ms"], 10000)
        self.assertGreaterEqual(len(h["samples"]), 1)  # one at start
        first = h["samples"][0]
        self.assertIsNone(first["completed"])  # no sample before it
        for _ in range(5):
            self.srv.submit(queue="h-q")
        for _ in range(3):
            self.srv.ack(self.srv.lease(["h-q"])[0])
        deadline = time.time() + 15
        while time.time() < deadline and len(h["samples"]) < 2:
            time.sleep(0.5)
            h = self.srv.ok("GET", "/v1/stats/history")
        last = h["samples"][-1]
        self.assertEqual((last["ready"], last["inflight"]), (2, 0))
        self.assertAlmostEqual(last["completed"], 3 / ((last["t"] - first["t"]) / 1000), places=3)
        self.assertGreaterEqual(last["t"] - first["t"], 9000)


class Workers(ServerTest):
    def test_workers_are_listed_with_what_they_hold_and_when_last_seen(self):
        for _ in range(3):
            self.srv.submit(queue="wk-a")
        t0 = int(time.time() * 1000)
        a = self.srv.lease(["wk-a", "wk-b"], max=2, worker="host-a/1")
        time.sleep(0.02)
        self.srv.lease(["wk-b"], worker="host-b/2")  # asks, gets nothing
        ws = {w["name"]: w for w in self.srv.ok("GET", "/v1/workers")["workers"]}
        self.assertEqual((ws["host-a/1"]["in_hand"], ws["host-a/1"]["leased_total"]), (2, 2))
        self.assertEqual(ws["host-a/1"]["queues"], "wk-a,wk-b")
        self.assertEqual((ws["host-b/2"]["in_hand"], ws["host-b/2"]["queues"]), (0, "wk-b"))
        self.assertGreaterEqual(ws["host-b/2"]["last_seen"], t0 - 1000)
        # newest first
        names = [w["name"] for w in self.srv.ok("GET", "/v1/workers")["workers"]]
        self.assertLess(names.index("host-b/2"), names.index("host-a/1"))
        self.srv.ack(a[0])
        ws = {w["name"]: w for w in self.srv.ok("GET", "/v1/workers")["workers"]}
        self.assertEqual(ws["host-a/1"]["in_hand"], 1)


class SearchByArgs(ServerTest):
    def test_jobs_are_found_by_text_their_args_contain(self):
        a = self.srv.submit(queue="s-args", args={"report_id": 42, "who": "ann"})["id"]
        self.srv.submit(queue="s-args", args={"report_id": 7, "who": "bob"})
        self.srv.submit(queue="s-args", args={"report_id": 420})
        q = urllib.parse.quote('"report_id":42,')
        got = self.srv.ok("GET", "/v1/jobs?queue=s-args&args=" + q)["jobs"]
        self.assertEqual([j["id"] for j in got], [a])
        got = self.srv.ok("GET", "/v1/jobs?args=" + urllib.parse.quote('"who":"'))["jobs"]
        self.assertEqual(len(got), 2)
        self.assertEqual(self.srv.ok("GET", "/v1/jobs?args=nothing-like-it")["jobs"], [])


class MorgueAndLeaseFilters(ServerTest):
    def dead(self, queue):
        j = self.srv.submit(queue=queue)["id"]
        self.srv.fail(self.srv.lease([queue])[0], retry=False, error="x")
        return j

    def test_morgue_filters_are_names_checked_and_a_null_is_refused(self):
        d = self.dead("m-names")
        for body, field in (({"queue": ""}, "queue"), ({"tenant": "bad name!"}, "tenant"),
                            ({"queue": "q" * 300}, "queue"), ({"type": ""}, "type"),
                            ({"type": "has space"}, "type"), ({"tenant": None}, "tenant"),
                            ({"queue": None}, "queue"), ({"type": None}, "type"),
                            ({"limit": None}, "limit")):
            for verb in ("requeue", "delete"):
                st, b = self.srv.req("POST", "/v1/morgue/" + verb, body)
                self.assertEqual((st, b["error"].get("field")), (400, field), (verb, body, b))
        self.assertEqual(self.srv.job(d)["state"], "dead")

    def test_lease_types_are_checked_as_types_and_a_null_is_refused(self):
        j = self.srv.submit(queue="l-types", type="Good.type")["id"]
        for types, field in (([""], "types"), (["has space"], "types"), (["x" * 129], "types"),
                             (None, "types")):
            st, b = self.srv.req("POST", "/v1/lease", {"queues": ["l-types"], "types": types})
            self.assertEqual((st, b["error"].get("field")), (400, field), (types, b))
        self.assertEqual(self.srv.job(j)["state"], "ready")
        self.assertEqual(len(self.srv.lease(["l-types"], types=["Good.type"])), 1)

if __name__ == "__main__":
    main()
