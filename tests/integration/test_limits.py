# SPDX-License-Identifier: Apache-2.0
"""Keyed limits over HTTP (docs/SEMANTICS.md, "Keyed limits"): concurrency
keys across queues and types of a tenant, the settings of keys and key
prefixes, why a held job waits, the keys at their limit, priority aging,
bad input refused naming the field, and the limits across a kill -9. Real servers, real
sockets, either store (TENQ_TEST_STORE)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import Server, ServerTest, main  # noqa: E402


def ck(key, limit=None):
    return {"key": key} if limit is None else {"key": key, "limit": limit}


class ConcurrencyKeys(ServerTest):
    def test_a_key_limits_its_jobs_across_queues_and_types(self):
        for i in range(3):
            self.srv.submit(tenant="ca", queue="ca-1", type="A", concurrency_keys=[ck("acct:1", 2)])
            self.srv.submit(tenant="ca", queue="ca-2", type="B", concurrency_keys=[ck("acct:1", 2)])
        got = self.srv.lease(["ca-1", "ca-2"], max=10)
        self.assertEqual(len(got), 2)
        self.assertEqual(self.srv.lease(["ca-1", "ca-2"], max=10), [])
        keys = self.srv.ok("GET", "/v1/keys?tenant=ca")
        self.assertEqual(keys["total"], 1)
        k = keys["keys"][0]
        self.assertEqual((k["key"], k["limit"], k["active"], k["held"], k["at_limit"]),
                         ("acct:1", 2, 2, 4, True))
        # one key: who holds it, who waits
        one = self.srv.ok("GET", "/v1/keys?tenant=ca&key=acct:1")["keys"][0]
        self.assertEqual(sorted(one["holders"]), sorted(j["id"] for j in got))
        self.assertEqual(len(one["jobs"]), 4)
        self.assertNotIn("holders", k)
        self.srv.ack(got[0])
        self.assertEqual(len(self.srv.lease(["ca-1", "ca-2"], max=10)), 1)
        one = self.srv.ok("GET", "/v1/keys?tenant=ca&key=acct:1")["keys"][0]
        self.assertEqual(len(one["holders"]), 2)
        self.assertEqual(len(one["jobs"]), 3)

    def test_a_held_job_says_which_key_and_which_job_holds_it(self):
        first = self.srv.submit(tenant="cb", queue="cb", concurrency_keys=[ck("user:9", 1)])
        held = self.srv.submit(tenant="cb", queue="cb", concurrency_keys=[ck("user:9", 1)])
        got = self.srv.lease(["cb"])
        self.assertEqual(got[0]["id"], first["id"])
        j = self.srv.job(held["id"])
        self.assertEqual(j["concurrency_keys"], [{"key": "user:9", "limit": 1}])
        w = j["waiting"]
        self.assertEqual(w["reason"], "concurrency_key")
        self.assertEqual((w["key"], w["active"], w["limit"], w["held_by"]),
                         ("user:9", 1, 1, first["id"]))
        self.assertIn("user:9", w["message"])
        # a key given as a string alone takes its queue's concurrency_limit (1)
        plain = self.srv.submit(tenant="cb", queue="cb-2", concurrency_keys=["k2"])
        self.assertEqual(self.srv.job(plain["id"])["concurrency_keys"], [{"key": "k2"}])

    def test_a_waiting_lease_is_answered_when_a_key_gets_room(self):
        a = self.srv.submit(tenant="cc", queue="cc", concurrency_keys=[ck("k", 1)])
        self.srv.submit(tenant="cc", queue="cc", concurrency_keys=[ck("k", 1)])
        got = self.srv.lease(["cc"])
        self.assertEqual(got[0]["id"], a["id"])
        import threading
        out = {}

        def poll():
            out["jobs"] = self.srv.lease(["cc"], wait_ms=20000, conn="poll")

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)
        self.srv.ack(got[0])
        t.join(30)
        self.assertEqual(len(out.get("jobs", [])), 1)

    def test_settings_of_keys_and_prefixes_take_effect_at_once(self):
        for i in range(4):
            self.srv.submit(tenant="cd", queue="cd", concurrency_keys=[ck("account:7", 1)])
            self.srv.submit(tenant="cd", queue="cd", concurrency_keys=[ck("account:8", 1)])
        self.assertEqual(len(self.srv.lease(["cd"], max=10)), 2)
        s = self.srv.ok("PUT", "/v1/key-settings",
                        {"tenant": "cd", "key": "account:*", "concurrency": 3})
        self.assertEqual(s, {"tenant": "cd", "key": "account:*", "concurrency": 3, "rate": None,
                             "rate_period_ms": 1000, "rate_burst": None})
        self.assertEqual(len(self.srv.lease(["cd"], max=10)), 4)
        self.srv.ok("PUT", "/v1/key-settings", {"tenant": "cd", "key": "account:7",
                                                 "concurrency": 4})
        self.assertEqual(len(self.srv.lease(["cd"], max=10)), 1)
        listed = self.srv.ok("GET", "/v1/key-settings?tenant=cd")["settings"]
        self.assertEqual(sorted((x["key"], x["concurrency"]) for x in listed),
                         [("account:*", 3), ("account:7", 4)])
        k = self.srv.ok("GET", "/v1/keys?tenant=cd&key=account:8")["keys"][0]
        self.assertEqual((k["limit"], k["setting"]), (3, "account:*"))
        self.srv.ok("DELETE", "/v1/key-settings?tenant=cd&key=account:7")
        k = self.srv.ok("GET", "/v1/keys?tenant=cd&key=account:7")["keys"][0]
        self.assertEqual((k["limit"], k["setting"], k["active"]), (3, "account:*", 4))
        status, out = self.srv.req("DELETE", "/v1/key-settings?tenant=cd&key=account:7")
        self.assertEqual((status, out["error"]["field"]), (404, "key"))
        rows = self.srv.ok("GET", "/v1/settings")["key"]
        self.assertEqual([r["name"] for r in rows][0], "concurrency")

    def test_bad_input_is_refused_naming_the_field_and_makes_nothing(self):
        long_key = "k" * 257
        cases = [
            ([ck("a", 0)], "concurrency_keys[0].limit"),
            ([ck("a", -3)], "concurrency_keys[0].limit"),
            ([ck("a", "3")], "concurrency_keys[0].limit"),
            ([ck("a", 1), ck(long_key, 1)], "concurrency_keys[1].key"),
            ([ck("a"), ck("a")], "concurrency_keys[1].key"),
            ([ck(str(i)) for i in range(5)], "concurrency_keys"),
            ("a", "concurrency_keys"),
            ([{"key": "a", "limt": 2}], "concurrency_keys[0]"),
            ([7], "concurrency_keys[0]"),
            ([{"limit": 2}], "concurrency_keys[0].key"),
        ]
        for keys, field in cases:
            status, out = self.srv.req("POST", "/v1/jobs", dict(
                tenant="ce", queue="ce", type="T", concurrency_keys=keys))
            self.assertEqual((status, out["error"]["field"]), (400, field), (keys, out))
        status, out = self.srv.req("POST", "/v1/jobs", dict(
            tenant="ce", queue="ce", type="T", concurrency_keys=[ck(str(i)) for i in range(5)]))
        self.assertIn("at most 4", out["error"]["message"])
        self.assertEqual(self.srv.req("GET", "/v1/tenants/ce")[0], 404)  # nothing was made
        for body, field in (({"tenant": "ce", "key": "k", "concurrency": 0}, "concurrency"),
                            ({"tenant": "ce", "key": "k", "concurrency": -1}, "concurrency"),
                            ({"tenant": "ce", "key": long_key, "concurrency": 1}, "key"),
                            ({"tenant": "ce", "concurrency": 1}, "key"),
                            ({"key": "k", "concurrency": 1}, "tenant"),
                            ({"tenant": "ce", "key": "k", "limit": 1}, "limit")):
            status, out = self.srv.req("PUT", "/v1/key-settings", body)
            self.assertEqual((status, out["error"]["field"]), (400, field), body)
        self.assertEqual(self.srv.ok("GET", "/v1/key-settings?tenant=ce")["settings"], [])

    def test_a_job_that_names_keys_is_stored_live_and_loaded_first(self):
        j = self.srv.submit(tenant="cf", queue="cf", concurrency_keys=[ck("x", 2)])
        self.srv.wait_stored("SELECT live FROM $Sjobs WHERE id = %d" % j["id"], 1)
        opts = self.srv.stored("SELECT options FROM $Sjobs WHERE id = %d" % j["id"])
        self.assertIn('"concurrency_keys"', opts)

def rk(key, cost=None, **kw):
    d = {"key": key}
    if cost is not None:
        d["cost"] = cost
    d.update(kw)
    return d


class RateKeys(ServerTest):
    def full_buckets(self):
        """A rate begins used up at the server's start (SEMANTICS.md, "Rate
        keys"): the rates below are full again 2 s after it."""
        up = self.srv.ok("GET", "/v1/stats")["server"]["uptime_ms"]
        if up < 2100:
            time.sleep((2100 - up) / 1000)

    def test_each_start_takes_its_cost_of_the_keys_rate(self):
        self.full_buckets()
        # 10 units a second, bursts of 10: three jobs of cost 3, then the fourth waits
        ids = [self.srv.submit(tenant="ra", queue="ra", rate_keys=[rk("api:7", 3, rate=10)])["id"]
               for _ in range(4)]
        got = self.srv.lease(["ra"], max=10)
        self.assertEqual([j["id"] for j in got], ids[:3])
        j = self.srv.job(ids[3])
        self.assertEqual(j["rate_keys"], [{"key": "api:7", "cost": 3, "rate": 10}])
        w = j["waiting"]
        self.assertEqual((w["reason"], w["key"]), ("rate_key", "api:7"))
        self.assertGreater(w["until"], got[0]["run_at"])
        k = self.srv.ok("GET", "/v1/keys?tenant=ra&key=api:7")["keys"][0]
        self.assertEqual((k["rate"]["rate"], k["rate"]["rate_burst"], k["held"]), (10, 10, 1))
        # within 200 ms and 2 more units it goes (a waiting lease is answered)
        got = self.srv.lease(["ra"], wait_ms=5000)
        self.assertEqual([x["id"] for x in got], [ids[3]])

    def test_a_keys_setting_gives_its_rate_and_bad_input_is_refused(self):
        self.srv.ok("PUT", "/v1/key-settings", {"tenant": "rb", "key": "api:*", "rate": 1,
                                                 "rate_period_ms": 3600000})
        a = self.srv.submit(tenant="rb", queue="rb", rate_keys=["api:1"])
        w = self.srv.job(a["id"])["waiting"]  # used up at the start: an hour's unit
        self.assertEqual((w["reason"], w["key"]), ("rate_key", "api:1"))
        cases = [
            ([rk("a", 0)], "rate_keys[0].cost"),
            ([rk("a", 6, rate=10, rate_burst=5)], "rate_keys[0].cost"),
            ([rk("a", 11, rate=10)], "rate_keys[0].cost"),
            ([rk("api:1", 2)], "rate_keys[0].cost"),  # the setting's burst is 1
            ([rk("a", rate_burst=5)], "rate_keys[0].rate"),
            ([rk("a", rate=10, rate_period_ms=0)], "rate_keys[0].rate_period_ms"),
            ([rk("a", rate=0)], "rate_keys[0].rate"),
            ([rk(str(i)) for i in range(5)], "rate_keys"),
            ([rk("a", extra=1)], "rate_keys[0]"),
            ([rk("a"), rk("a")], "rate_keys[1].key"),
            ([rk("k" * 257)], "rate_keys[0].key"),
        ]
        for keys, field in cases:
            status, out = self.srv.req("POST", "/v1/jobs", dict(
                tenant="rb", queue="rb", type="T", rate_keys=keys))
            self.assertEqual((status, out["error"]["field"]), (400, field), (keys, out))
        status, out = self.srv.req("POST", "/v1/jobs", dict(
            tenant="rb", queue="rb", type="T", rate_keys=[rk("api:1", 2)]))
        self.assertIn("burst of 1 that key api:1's setting (api:*) gives it", out["error"]["message"])
        self.assertEqual(self.srv.ok("GET", "/v1/queues/rb")["queued"], 1)
        for body, field in (({"tenant": "rb", "key": "k", "rate": 0}, "rate"),
                            ({"tenant": "rb", "key": "k", "rate_burst": 0}, "rate_burst"),
                            ({"tenant": "rb", "key": "k", "rate_period_ms": 0}, "rate_period_ms")):
            status, out = self.srv.req("PUT", "/v1/key-settings", body)
            self.assertEqual((status, out["error"]["field"]), (400, field), body)


class DebounceAndExpiry(ServerTest):
    def test_a_debounced_key_runs_once_after_its_quiet_period_with_the_last_args(self):
        first = self.srv.submit(tenant="da", queue="da", key="doc:1", args={"v": 1},
                                debounce_ms=1500)
        self.assertEqual(first["state"], "scheduled")
        for v in (2, 3):
            again = self.srv.ok("POST", "/v1/jobs", dict(tenant="da", queue="da", type="T",
                                                         key="doc:1", args={"v": v},
                                                         debounce_ms=1500), expect=200)
            self.assertEqual((again["id"], again.get("debounced")), (first["id"], True))
        t_last = time.time()
        j = self.srv.job(first["id"])
        self.assertEqual((j["args"], j["debounced"]), ({"v": 3}, True))
        got = self.srv.lease(["da"], wait_ms=15000)
        self.assertGreaterEqual(time.time() - t_last, 1.4)  # never before its quiet period
        self.assertEqual([(x["id"], x["args"]) for x in got], [(first["id"], {"v": 3})])
        self.srv.wait_stored("SELECT args FROM $Sjobs WHERE id = %d" % first["id"], '{"v":3}')
        # leased: the next submit makes a job of its own, behind it in the lane
        nxt = self.srv.submit(tenant="da", queue="da", key="doc:1", args={"v": 4},
                              debounce_ms=1500)
        self.assertNotEqual(nxt["id"], first["id"])

    def test_debounce_max_and_bad_input(self):
        a = self.srv.submit(tenant="db", queue="db", key="k", debounce_ms=60000,
                            debounce_max_ms=90000)
        b = self.srv.ok("POST", "/v1/jobs", dict(tenant="db", queue="db", type="T", key="k",
                                                 debounce_ms=60000), expect=200)
        self.assertEqual(b["id"], a["id"])
        j = self.srv.job(a["id"])
        self.assertEqual(j["debounce_until"], j["created_at"] + 90000)
        self.assertLessEqual(j["run_at"], j["debounce_until"])
        for body, field in ((dict(debounce_ms=100), "debounce_ms"),  # no key
                            (dict(key="k", debounce_ms=0), "debounce_ms"),
                            (dict(key="k", debounce_ms=100, debounce_max_ms=50),
                             "debounce_max_ms"),
                            (dict(key="k", debounce_max_ms=500), "debounce_ms"),
                            (dict(key="k", debounce_ms=100, depends_on=[a["id"]]), "debounce_ms"),
                            (dict(expire_at=1, start_within_ms=5), "start_within_ms"),
                            (dict(expire_at="soon"), "expire_at"),
                            (dict(start_within_ms=0), "start_within_ms")):
            status, out = self.srv.req("POST", "/v1/jobs", dict(tenant="db", queue="db", type="T",
                                                               **body))
            self.assertEqual((status, out["error"]["field"]), (400, field), body)
        status, out = self.srv.req("POST", "/v1/batches", {"tenant": "db", "jobs": [
            dict(queue="db", type="T", key="k", debounce_ms=100)]})
        self.assertEqual((status, out["error"]["field"]), (400, "jobs[0].debounce_ms"))

    def test_a_job_not_started_by_its_time_ends_expired_and_never_runs(self):
        self.srv.ok("PUT", "/v1/queues/xa", {"paused": True})
        t0 = time.time()
        j = self.srv.submit(tenant="xa", queue="xa", start_within_ms=500)
        self.assertEqual(self.srv.job(j["id"])["expire_at"] - self.srv.job(j["id"])["created_at"],
                         500)
        deadline = time.time() + 20
        while time.time() < deadline and self.srv.job(j["id"])["state"] != "expired":
            time.sleep(0.05)
        x = self.srv.job(j["id"])
        self.assertEqual(x["state"], "expired")
        self.assertGreaterEqual(time.time() - t0, 0.5)
        self.assertIn("expired", x["error"])
        self.assertGreaterEqual(x["finished_at"], x["expire_at"])
        self.assertEqual(self.srv.ok("GET", "/v1/queues/xa")["expired_total"], 1)
        self.srv.wait_stored("SELECT state FROM $Sjobs WHERE id = %d" % j["id"], "expired")
        self.srv.ok("PUT", "/v1/queues/xa", {"paused": False})
        self.assertEqual(self.srv.lease(["xa"]), [])
        # a wait for it answers at once: it is finished
        w = self.srv.ok("GET", "/v1/jobs/%d/wait?timeout_ms=5000" % j["id"])
        self.assertEqual(w["state"], "expired")


class PriorityAging(ServerTest):
    def test_a_waiting_job_rises_one_step_per_aging_ms_up_to_the_cap(self):
        q = self.srv.ok("PUT", "/v1/queues/ag", {"aging_ms": 100, "aging_cap": 50})
        self.assertEqual((q["aging_ms"], q["aging_cap"]), (100, 50))
        low = self.srv.submit(tenant="ag", queue="ag", priority=0)
        time.sleep(1.0)  # low ranks 10 and more now
        high = self.srv.submit(tenant="ag", queue="ag", priority=5)
        got = self.srv.lease(["ag"], max=2)
        self.assertEqual([j["id"] for j in got], [low["id"], high["id"]])
        # a cap of 3: aging never lifts a job above jobs of priority 4
        self.srv.ok("PUT", "/v1/queues/ag2", {"aging_ms": 100, "aging_cap": 3})
        low = self.srv.submit(tenant="ag", queue="ag2", priority=0)
        time.sleep(1.0)
        four = self.srv.submit(tenant="ag", queue="ag2", priority=4)
        three = self.srv.submit(tenant="ag", queue="ag2", priority=3)
        got = self.srv.lease(["ag2"], max=3)
        # four; then low, at the cap and older than three
        self.assertEqual([j["id"] for j in got], [four["id"], low["id"], three["id"]])

    def test_without_aging_priority_is_strict_and_bad_settings_are_refused(self):
        low = self.srv.submit(tenant="ag", queue="ag3", priority=0)
        time.sleep(0.3)
        high = self.srv.submit(tenant="ag", queue="ag3", priority=1)
        got = self.srv.lease(["ag3"], max=2)
        self.assertEqual([j["id"] for j in got], [high["id"], low["id"]])
        for body, field in (({"aging_cap": 32768}, "aging_cap"), ({"aging_ms": -1}, "aging_ms"),
                            ({"aging_ms": 31 * 86400000}, "aging_ms")):
            status, ans = self.srv.req("PUT", "/v1/queues/ag3", body)
            self.assertEqual((status, ans["error"]["field"]), (400, field), body)


class Tokens(ServerTest):
    """Its own server: once a token exists, every request needs one."""

    def test_a_tenant_token_sees_its_own_keys_only(self):
        admin = self.srv.ok("POST", "/v1/tokens", {"role": "admin"})["token"]
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:cg"}, token=admin)["token"]
        self.srv.submit(tenant="cg", queue="cg", concurrency_keys=[ck("mine", 1)], token=admin)
        self.srv.submit(tenant="ch", queue="cg", concurrency_keys=[ck("theirs", 1)], token=admin)
        keys = self.srv.ok("GET", "/v1/keys", token=tok)["keys"]
        self.assertEqual([k["key"] for k in keys], ["mine"])
        status, _ = self.srv.req("GET", "/v1/keys?tenant=ch", token=tok)
        self.assertEqual(status, 403)
        status, _ = self.srv.req("PUT", "/v1/key-settings",
                                 {"tenant": "cg", "key": "mine", "concurrency": 5}, token=tok)
        self.assertEqual(status, 403)


class AcrossRestarts(unittest.TestCase):
    """A kill -9 and a start: the leases stored before count against their
    keys before the new server's first lease, and settings are kept."""

    def test_no_key_goes_over_its_limit_after_a_kill(self):
        srv = Server()
        try:
            srv.ok("PUT", "/v1/key-settings", {"tenant": "ra", "key": "acct:*", "concurrency": 2})
            for i in range(6):
                srv.submit(tenant="ra", queue="ra", concurrency_keys=[ck("acct:1", 5)])
            got = srv.lease(["ra"], max=10)
            self.assertEqual(len(got), 2)
            for j in got:  # stored (leases are written late)
                srv.wait_stored("SELECT state FROM $Sjobs WHERE id = %d" % j["id"], "leased")
            srv.kill()
            srv.start()
            self.assertEqual(srv.lease(["ra"], max=10), [])  # the first lease
            k = srv.ok("GET", "/v1/keys?tenant=ra&key=acct:1")["keys"][0]
            self.assertEqual((k["limit"], k["active"], k["setting"]), (2, 2, "acct:*"))
            srv.ack(got[0])  # its lease lives on: a worker still running it acks it
            self.assertEqual(len(srv.lease(["ra"], max=10)), 1)
        finally:
            srv.cleanup()

    def test_a_debounced_job_and_an_expiring_one_keep_their_timing_across_a_kill(self):
        srv = Server()
        try:
            srv.ok("PUT", "/v1/queues/rd", {"paused": True})
            d = srv.submit(tenant="rd", queue="rd", key="k", args={"v": 1}, debounce_ms=60000)
            x = srv.submit(tenant="rd", queue="rd", start_within_ms=2000)
            srv.kill()
            srv.start()
            again = srv.ok("POST", "/v1/jobs", dict(tenant="rd", queue="rd", type="T", key="k",
                                                    args={"v": 2}, debounce_ms=60000), expect=200)
            self.assertEqual((again["id"], again.get("debounced")), (d["id"], True))
            self.assertEqual(srv.job(d["id"])["args"], {"v": 2})
            deadline = time.time() + 20
            while time.time() < deadline and srv.job(x["id"])["state"] != "expired":
                time.sleep(0.05)
            self.assertEqual(srv.job(x["id"])["state"], "expired")
        finally:
            srv.cleanup()

    def test_a_rate_key_begins_used_up_after_a_restart(self):
        srv = Server()
        try:
            # one start per 3 s: the restart may not give a second one at once
            jobs = [srv.submit(tenant="rr", queue="rr", rate_keys=[rk("r", rate=1,
                                                                      rate_period_ms=3000)])
                    for _ in range(3)]
            got = srv.lease(["rr"], wait_ms=10000)  # after the start's unit
            self.assertEqual([j["id"] for j in got], [jobs[0]["id"]])
            srv.ack(got[0])
            srv.kill()
            t0 = time.time()
            srv.start()
            self.assertEqual(srv.lease(["rr"]), [])
            w = srv.job(jobs[1]["id"])["waiting"]
            self.assertEqual((w["reason"], w["key"]), ("rate_key", "r"))
            got = srv.lease(["rr"], wait_ms=10000)
            self.assertEqual([j["id"] for j in got], [jobs[1]["id"]])
            self.assertGreater(time.time() - t0, 2.5)  # a period after the start, not before
        finally:
            srv.cleanup()


if __name__ == "__main__":
    main()
