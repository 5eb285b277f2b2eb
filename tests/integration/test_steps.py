# SPDX-License-Identifier: Apache-2.0
"""Durable steps: a worker stores a step of its job under its lease token
(POST /v1/jobs/{id}/steps), a later attempt gets them back (GET
/v1/jobs/{id}/steps, the lease's "steps"), a stale token is refused; a
durable sleep, a wait for an event (POST /v1/events, kept for
--event-window when no job waits) and a child job awaited park the job
between attempts; bad input changes nothing; a kill -9 of the worker or of
the server, and a takeover, lose nothing. One server per class, real
sockets, either store (TENQ_TEST_STORE)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chaos"))
from harness import STORE, Server, ServerTest, main  # noqa: E402

ADMIN = "admin-secret-for-tests-0001"


def step(srv, leased, name, result=None, kind=None, expect=200, token=None, **kw):
    """Stores a step of a leased job (or parks it, by kind); the answer."""
    body = {"token": leased["token"], "name": name}
    if kind:
        body["kind"] = kind
    else:
        body["result"] = result
    body.update(kw)
    st, ans = srv.req("POST", "/v1/jobs/%d/steps" % leased["id"], body, token)
    if st != expect:
        raise AssertionError("step %s -> %d %s" % (name, st, ans))
    return ans


def steps_of(srv, id, token=None):
    return srv.ok("GET", "/v1/jobs/%d/steps" % id, token=token)["steps"]


def event(srv, key, payload=None, tenant="acme", expect=200, token=None, headers=None):
    body = {"key": key, "payload": payload}
    if tenant:
        body["tenant"] = tenant
    st, ans, _ = srv.raw("POST", "/v1/events", body, token, headers=headers)
    if st != expect:
        raise AssertionError("event %s -> %d %s" % (key, st, ans))
    return ans


def admin_server(args=()):
    """A server with an admin token, which every request sends unless it
    names another (so that a test may make tenant and worker tokens)."""
    srv = Server(args=list(args), env={"TENQ_ADMIN_TOKEN": ADMIN})
    orig = srv.raw

    def raw(method, path, body=None, token=None, headers=None, conn="default"):
        return orig(method, path, body, token or ADMIN, headers, conn)
    srv.raw = raw
    return srv


class StepsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.srv = admin_server(cls.server_args)


def lease_one(srv, queue, wait_ms=0):
    got = srv.lease([queue], max=1, wait_ms=wait_ms)
    return got[0] if got else None


class Steps(StepsTest):
    def test_steps_are_stored_and_a_retry_gets_them_back(self):
        j = self.srv.submit(queue="s1", args={"report": 7})
        got = lease_one(self.srv, "s1")
        self.assertNotIn("steps", got)  # none yet
        a = step(self.srv, got, "fetch", {"rows": [1, 2, 3]})
        self.assertEqual((a["pos"], a["duplicate"], a["parked"], a["state"]),
                         (0, False, False, "leased"))
        step(self.srv, got, "sum", 6)
        # sent again by its lease (its answer lost): stored once
        again = step(self.srv, got, "sum", 6)
        self.assertEqual((again["pos"], again["duplicate"]), (1, True))
        s = steps_of(self.srv, j["id"])
        self.assertEqual([(x["pos"], x["name"], x["kind"], x["done"], x["result"]) for x in s],
                         [(0, "fetch", "step", True, {"rows": [1, 2, 3]}),
                          (1, "sum", "step", True, 6)])
        self.assertEqual(s[0]["attempt"], 1)
        self.assertEqual(s[0]["token"], got["token"])
        self.assertEqual(self.srv.job(j["id"])["steps"], 2)
        # the attempt fails: the retry's lease says it has steps to read
        self.srv.fail(got, error="boom", retry_in_ms=0)
        again = lease_one(self.srv, "s1", wait_ms=5000)
        self.assertEqual((again["id"], again["steps"], again["attempt"]), (j["id"], 2, 1))
        self.assertEqual([x["result"] for x in steps_of(self.srv, j["id"])],
                         [{"rows": [1, 2, 3]}, 6])
        # an earlier attempt's step is not stored again
        st, ans = self.srv.req("POST", "/v1/jobs/%d/steps" % j["id"],
                               {"token": again["token"], "name": "fetch", "result": 0})
        self.assertEqual((st, ans["error"]["field"]), (409, "name"), ans)
        step(self.srv, again, "write", None)
        self.srv.ack(again, result={"total": 6})
        # finished: its steps are read from the store
        self.assertEqual([x["name"] for x in steps_of(self.srv, j["id"])],
                         ["fetch", "sum", "write"])
        # the attempt history says which attempt ran which step
        att = self.srv.ok("GET", "/v1/jobs/%d/attempts" % j["id"])["attempts"]
        self.assertEqual([(a["outcome"], a["steps"]) for a in att],
                         [("failed", ["fetch", "sum"]), ("succeeded", ["write"])])

    def test_a_stale_token_is_refused_like_a_stale_ack(self):
        self.srv.ok("PUT", "/v1/queues/s2", {"lease_ms": 300, "backoff": "fixed",
                                             "backoff_base_ms": 10})
        j = self.srv.submit(queue="s2")
        first = lease_one(self.srv, "s2")
        step(self.srv, first, "one", 1)
        # its lease runs out; the job is leased again
        second = lease_one(self.srv, "s2", wait_ms=10000)
        deadline = time.time() + 30
        while second is None and time.time() < deadline:
            second = lease_one(self.srv, "s2", wait_ms=2000)
        self.assertEqual(second["id"], j["id"])
        late = step(self.srv, first, "two", 2, expect=409)
        self.assertEqual(late["error"]["field"], "token")
        self.assertEqual([x["name"] for x in steps_of(self.srv, j["id"])], ["one"])
        step(self.srv, second, "two", 2)
        self.srv.ack(second)
        # a job no longer in memory: the store says the token is stale
        late = step(self.srv, second, "three", 3, expect=409)
        self.assertEqual(late["error"]["field"], "token")
        st, _ = self.srv.req("POST", "/v1/jobs/99999999/steps", {"token": 5, "name": "x"})
        self.assertEqual(st, 404)

    def test_bad_steps_are_refused_naming_the_field_and_change_nothing(self):
        self.srv.ok("PUT", "/v1/queues/s3", {"max_payload_bytes": 1024})
        j = self.srv.submit(queue="s3")
        got = lease_one(self.srv, "s3")
        path = "/v1/jobs/%d/steps" % j["id"]
        for body, field in [
            ({"name": "a"}, "token"),
            ({"token": got["token"]}, "name"),
            ({"token": got["token"], "name": ""}, "name"),
            ({"token": got["token"], "name": "x" * 257}, "name"),
            ({"token": got["token"], "name": "a\tb"}, "name"),
            ({"token": got["token"], "name": "a", "kind": "nap"}, "kind"),
            ({"token": got["token"], "name": "a", "until": 5}, "until"),
            ({"token": got["token"], "name": "a", "kind": "sleep"}, "until"),
            ({"token": got["token"], "name": "a", "kind": "sleep", "until": 5,
              "duration_ms": 5}, "until"),
            ({"token": got["token"], "name": "a", "kind": "event"}, "event"),
            ({"token": got["token"], "name": "a", "kind": "event", "event": "k",
              "timeout_ms": -1}, "timeout_ms"),
            ({"token": got["token"], "name": "a", "kind": "child"}, "job"),
            ({"token": got["token"], "name": "a", "kind": "child",
              "job": {"queue": "bad queue", "type": "T"}}, "job"),
            ({"token": got["token"], "name": "a", "kind": "child",
              "job": {"queue": "k", "type": "T", "unique": True}}, "job"),
            ({"token": got["token"], "name": "a", "kind": "child",
              "job": {"queue": "k", "type": "T", "tenant": "other"}}, "job"),
            ({"token": got["token"], "name": "a", "bogus": 1}, "bogus"),
        ]:
            st, ans = self.srv.req("POST", path, body)
            self.assertEqual((st, ans["error"]["field"]), (400, field), (body, ans))
        st, ans = self.srv.req("POST", path, {"token": got["token"], "name": "big",
                                              "result": "x" * 2000})
        self.assertEqual((st, ans["error"]["field"]), (413, "result"), ans)
        self.assertEqual(steps_of(self.srv, j["id"]), [])
        self.assertEqual(self.srv.job(j["id"])["state"], "leased")
        self.assertNotIn("steps", self.srv.job(j["id"]))

    def test_many_jobs_steps_in_one_request_each_answered_on_its_own(self):
        self.srv.ok("PUT", "/v1/queues/s5", {"lease_ms": 300, "backoff": "fixed",
                                             "backoff_base_ms": 10})
        a, b, c = (self.srv.submit(queue="s5") for _ in range(3))
        got = {j["id"]: j for j in self.srv.lease(["s5"], max=3)}
        self.assertEqual(len(got), 3)
        ta, tb, tc = (got[x["id"]]["token"] for x in (a, b, c))
        st, ans = self.srv.req("POST", "/v1/steps", {"steps": [
            {"id": a["id"], "token": ta, "name": "one", "result": {"n": 1}},
            {"id": b["id"], "token": tb, "name": "one", "result": 2},
            {"id": a["id"], "token": ta, "name": "two", "result": [3]},
            {"id": a["id"], "token": ta, "name": "one", "result": {"n": 1}},  # again: duplicate
            {"id": b["id"], "token": tb + 1, "name": "x"},  # not its token
            {"id": b["id"], "token": tb, "name": "y", "bogus": 1},
            {"token": tb, "name": "z"},
            "not a step",
            {"id": 99999999, "token": 5, "name": "gone"},
            {"id": c["id"], "token": tc, "name": "nap", "kind": "sleep", "duration_ms": 60000},
        ]})
        self.assertEqual(st, 200, ans)
        r = ans["results"]
        self.assertEqual(len(r), 10)
        self.assertEqual([(x["id"], x["name"], x["pos"], x["duplicate"]) for x in r[:4]],
                         [(a["id"], "one", 0, False), (b["id"], "one", 0, False),
                          (a["id"], "two", 1, False), (a["id"], "one", 0, True)])
        self.assertEqual([(x["error"]["code"], x["error"]["field"]) for x in r[4:9]],
                         [("conflict", "token"), ("invalid", "bogus"), ("invalid", "id"),
                          ("invalid", "steps"), ("conflict", "token")])
        self.assertEqual((r[9]["parked"], r[9]["state"]), (True, "scheduled"))
        self.assertEqual([(x["name"], x["result"]) for x in steps_of(self.srv, a["id"])],
                         [("one", {"n": 1}), ("two", [3])])
        self.assertEqual([x["name"] for x in steps_of(self.srv, b["id"])], ["one"])
        for body in [{}, {"steps": []}, {"steps": {}}, {"steps": [{}] * 10001},
                     {"steps": [], "more": 1}]:
            st, ans = self.srv.req("POST", "/v1/steps", body)
            self.assertEqual(st, 400, (body, ans))
        # a tenant token stores no step
        acme = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:acme"}, ADMIN)["token"]
        st, _ = self.srv.req("POST", "/v1/steps", {"steps": [
            {"id": a["id"], "token": ta, "name": "three"}]}, acme)
        self.assertEqual(st, 403)

    def test_a_tenant_reads_its_own_jobs_steps_only(self):
        acme = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:acme"}, ADMIN)["token"]
        other = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:else"}, ADMIN)["token"]
        worker = self.srv.ok("POST", "/v1/tokens", {"role": "worker"}, ADMIN)["token"]
        j = self.srv.submit(queue="s4", tenant="acme", token=ADMIN)
        got = self.srv.lease(["s4"], token=worker)[0]
        step(self.srv, got, "a", [1], token=worker)
        self.assertEqual(len(steps_of(self.srv, j["id"], token=acme)), 1)
        self.assertEqual(len(steps_of(self.srv, j["id"], token=worker)), 1)
        st, _ = self.srv.req("GET", "/v1/jobs/%d/steps" % j["id"], token=other)
        self.assertEqual(st, 404)
        # a viewer reads them; one that hides data sees no result
        viewer = self.srv.ok("POST", "/v1/tokens", {"role": "viewer"}, ADMIN)["token"]
        blind = self.srv.ok("POST", "/v1/tokens", {"role": "viewer", "hide_data": True},
                            ADMIN)["token"]
        self.assertEqual(steps_of(self.srv, j["id"], token=viewer)[0]["result"], [1])
        hidden = steps_of(self.srv, j["id"], token=blind)[0]
        self.assertEqual((hidden["name"], "result" in hidden), ("a", False))
        # a tenant token stores no step (a worker's call)
        st, _ = self.srv.req("POST", "/v1/jobs/%d/steps" % j["id"],
                             {"token": got["token"], "name": "b"}, acme)
        self.assertEqual(st, 403)


class Sleep(StepsTest):
    def test_a_sleep_frees_the_slot_and_resumes_on_time(self):
        self.srv.ok("PUT", "/v1/tenants/sa", {"slots": 1})
        a1 = self.srv.submit(tenant="sa", queue="z1")
        a2 = self.srv.submit(tenant="sa", queue="z1")
        b1 = self.srv.submit(tenant="sb", queue="z1")
        got = lease_one(self.srv, "z1")
        self.assertEqual(got["id"], a1["id"])
        step(self.srv, got, "before", "x")
        t0 = time.time()
        ans = step(self.srv, got, "nap", kind="sleep", duration_ms=2000)
        self.assertEqual((ans["parked"], ans["state"]), (True, "scheduled"))
        j = self.srv.job(a1["id"])
        self.assertEqual((j["state"], j["waiting"]["reason"]), ("scheduled", "sleep"))
        self.assertEqual(j["waiting"]["until"], ans["run_at"])
        # its slot went back: the tenant's other job and another tenant's run meanwhile
        others = self.srv.lease(["z1"], max=10)
        self.assertEqual(sorted(x["id"] for x in others), sorted([a2["id"], b1["id"]]))
        for x in others:
            self.srv.ack(x)
        # the lease that ended is an attempt "suspended", not a failure
        att = self.srv.ok("GET", "/v1/jobs/%d/attempts" % a1["id"])["attempts"]
        self.assertEqual([(x["outcome"], x["job_state"], x["error"], x["steps"]) for x in att],
                         [("suspended", "scheduled", None, ["before", "nap"])])
        back = lease_one(self.srv, "z1", wait_ms=10000)
        took = time.time() - t0
        self.assertEqual(back["id"], a1["id"])
        self.assertGreaterEqual(took, 1.99)
        self.assertLess(took, 2 + 2.5, "resumed late")  # a busy 2-core machine
        self.assertEqual((back["attempt"], back["steps"]), (0, 2))
        self.assertEqual(self.srv.job(a1["id"])["attempts"], 1)
        # the sleep was stored: it is not slept again
        st, ans = self.srv.req("POST", "/v1/jobs/%d/steps" % a1["id"],
                               {"token": back["token"], "name": "nap", "kind": "sleep",
                                "duration_ms": 2000})
        self.assertEqual(st, 409)
        self.srv.ack(back)

    def test_a_sleep_keeps_its_lane_and_a_cancel_ends_it(self):
        a = self.srv.submit(queue="z2", key="k")
        b = self.srv.submit(queue="z2", key="k")
        got = lease_one(self.srv, "z2")
        step(self.srv, got, "nap", kind="sleep", until=int(time.time() * 1000) + 60000)
        self.assertEqual(self.srv.job(b["id"])["state"], "blocked")
        self.assertEqual(self.srv.lease(["z2"], max=5), [])
        self.assertEqual(self.srv.ok("POST", "/v1/jobs/%d/cancel" % a["id"])["state"],
                         "cancelled")
        self.assertEqual(lease_one(self.srv, "z2")["id"], b["id"])

    def test_an_at_most_once_job_is_not_parked(self):
        self.srv.ok("PUT", "/v1/queues/z3", {"delivery": "at-most-once"})
        self.srv.submit(queue="z3")
        got = lease_one(self.srv, "z3")
        ans = step(self.srv, got, "nap", kind="sleep", duration_ms=1000, expect=409)
        self.assertEqual(ans["error"]["field"], "kind")
        step(self.srv, got, "ok", 1)  # a step is fine
        self.srv.ack(got)


class Events(StepsTest):
    server_args = ["--event-window", "3s"]

    def park(self, queue, key, timeout_ms=0, tenant="acme"):
        j = self.srv.submit(queue=queue, tenant=tenant)
        got = lease_one(self.srv, queue)
        self.assertEqual(got["id"], j["id"])
        ans = step(self.srv, got, "wait", kind="event", event=key, timeout_ms=timeout_ms)
        return j, got, ans

    def test_an_event_during_the_wait_wakes_the_job_with_its_payload(self):
        j, got, ans = self.park("e1", "order-1/paid")
        self.assertEqual((ans["parked"], ans["state"], ans["done"]), (True, "waiting", False))
        w = self.srv.job(j["id"])["waiting"]
        self.assertEqual((w["reason"], w["event"], w["until"]), ("event", "order-1/paid", None))
        self.assertEqual(self.srv.ok("GET", "/v1/queues/e1")["waiting"], 1)
        # another tenant's event of the same key wakes nothing (and is kept for its tenant)
        other = event(self.srv, "order-1/paid", {"x": 0}, tenant="else")
        self.assertEqual((other["delivered"], other["kept"]), (0, True))
        ev = event(self.srv, "order-1/paid", {"amount": 5})
        self.assertEqual((ev["delivered"], ev["jobs"], ev["kept"], ev["expires_at"]),
                         (1, [j["id"]], False, None))
        self.assertEqual(self.srv.job(j["id"])["state"], "ready")
        back = lease_one(self.srv, "e1")
        self.assertEqual((back["id"], back["attempt"], back["steps"]), (j["id"], 0, 1))
        s = steps_of(self.srv, j["id"])[0]
        self.assertEqual((s["kind"], s["done"], s["result"], s["event"], s["error"]),
                         ("event", True, {"amount": 5}, "order-1/paid", None))
        self.srv.ack(back)

    def test_an_event_sent_before_the_wait_is_kept_for_the_window(self):
        ev = event(self.srv, "early", [1, 2])
        self.assertEqual((ev["delivered"], ev["kept"]), (0, True))
        self.assertIsNotNone(ev["expires_at"])
        j, got, ans = self.park("e2", "early")
        self.assertEqual((ans["parked"], ans["done"], ans["result"], ans["state"]),
                         (False, True, [1, 2], "leased"))
        # taken once: the next wait for it parks
        ans = step(self.srv, got, "wait2", kind="event", event="early", timeout_ms=60000)
        self.assertTrue(ans["parked"])
        self.srv.ok("POST", "/v1/jobs/%d/cancel" % j["id"])

    def test_an_event_past_its_window_is_not_taken_and_a_wait_times_out(self):
        event(self.srv, "too-early", 1)
        time.sleep(3.3)  # the window is 3 s
        j, got, ans = self.park("e3", "too-early", timeout_ms=1000)
        self.assertTrue(ans["parked"])
        self.assertIsNotNone(self.srv.job(j["id"])["waiting"]["until"])
        back = lease_one(self.srv, "e3", wait_ms=10000)
        self.assertEqual(back["id"], j["id"])
        s = steps_of(self.srv, j["id"])[0]
        self.assertEqual((s["done"], s["result"], s["error"]), (True, None, "timed out"))
        # an event after the timeout wakes nothing: it is kept for a later wait
        ev = event(self.srv, "too-early", 2)
        self.assertEqual((ev["delivered"], ev["kept"]), (0, True))
        self.srv.ack(back)

    def test_an_event_wakes_every_job_waiting_for_its_key(self):
        parked = [self.park("e4", "all")[0]["id"] for _ in range(3)]
        ev = event(self.srv, "all", "go")
        self.assertEqual((ev["delivered"], sorted(ev["jobs"])), (3, sorted(parked)))
        self.assertEqual(sorted(x["id"] for x in self.srv.lease(["e4"], max=10)),
                         sorted(parked))

    def test_an_event_sent_again_with_its_idempotency_key_delivers_once(self):
        j, got, ans = self.park("e5", "once")
        h = {"Idempotency-Key": "ev-once-1"}
        first = event(self.srv, "once", 1, headers=h)
        again = event(self.srv, "once", 1, headers=h)
        self.assertEqual(first, again)
        self.assertEqual(first["delivered"], 1)
        # the repeat kept nothing for a later wait
        self.assertTrue(self.park("e5b", "once")[2]["parked"])

    def test_bad_events_are_refused_and_change_nothing(self):
        for body, field, code in [({"tenant": "acme"}, "key", 400),
                                  ({"tenant": "acme", "key": ""}, "key", 400),
                                  ({"key": "k"}, "tenant", 400),
                                  ({"tenant": "bad tenant", "key": "k"}, "tenant", 400),
                                  ({"tenant": "acme", "key": "k", "x": 1}, "x", 400),
                                  ({"tenant": "acme", "key": "k", "payload": "x" * (1 << 20)},
                                   "payload", 413)]:
            st, ans = self.srv.req("POST", "/v1/events", body)
            self.assertEqual((st, ans["error"]["field"]), (code, field), (body, ans))
        self.assertTrue(self.park("e7", "k")[2]["parked"])  # none was kept

    def test_a_tenant_token_sends_its_own_events(self):
        tok = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:tt"})["token"]
        j, got, ans = self.park("e6", "mine", tenant="tt")
        ev = event(self.srv, "mine", 7, tenant=None, token=tok)
        self.assertEqual(ev["jobs"], [j["id"]])
        st, ans = self.srv.req("POST", "/v1/events", {"tenant": "acme", "key": "k"}, tok)
        self.assertEqual((st, ans["error"]["field"]), (403, "tenant"))


class ManyEvents(StepsTest):
    def test_10000_jobs_wait_for_10000_events(self):
        n = 10000
        ids = []
        for i in range(0, n, 2000):
            r = self.srv.ok("POST", "/v1/jobs", {"jobs": [
                {"tenant": "acme", "queue": "many", "type": "T", "args": {"i": k}}
                for k in range(i, i + 2000)]})["jobs"]
            ids += [x["id"] for x in r]
        leased = []
        while len(leased) < n:
            got = self.srv.lease(["many"], max=1000)
            self.assertTrue(got)
            leased += got
        key_of = {j["id"]: "k-%d" % j["args"]["i"] for j in leased}
        errors = []

        def run(part, fn):
            try:
                for x in part:
                    fn(x)
            except Exception as e:  # reported below
                errors.append(e)

        def in_threads(items, fn, nthreads=8):
            ts = []
            for t in range(nthreads):
                self.srv.conn("t%d" % t)
            for t in range(nthreads):
                part = items[t::nthreads]
                conn = "t%d" % t

                def go(part=part, conn=conn):
                    run(part, lambda x: fn(x, conn))
                ts.append(threading.Thread(target=go))
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(errors, [])

        def park(j, conn):
            st, ans = self.srv.req("POST", "/v1/jobs/%d/steps" % j["id"],
                                   {"token": j["token"], "name": "w", "kind": "event",
                                    "event": key_of[j["id"]]}, conn=conn)
            assert st == 200 and ans["parked"], ans
        t0 = time.time()
        in_threads(leased, park)
        parked_s = time.time() - t0
        self.assertEqual(self.srv.ok("GET", "/v1/queues/many")["waiting"], n)
        self.assertIn("tenq_event_waiters %d" % n, self.srv.ok("GET", "/metrics"))

        def send(j, conn):
            st, ans = self.srv.req("POST", "/v1/events",
                                   {"tenant": "acme", "key": key_of[j["id"]],
                                    "payload": {"for": j["id"]}}, conn=conn)
            assert st == 200 and ans["jobs"] == [j["id"]], ans
        t0 = time.time()
        in_threads(leased, send)
        sent_s = time.time() - t0
        q = self.srv.ok("GET", "/v1/queues/many")
        self.assertEqual((q["waiting"], q["ready"]), (0, n))
        for j in leased[:: n // 50]:
            self.assertEqual(steps_of(self.srv, j["id"])[0]["result"], {"for": j["id"]})
        if os.environ.get("STEPS_SAY"):
            print("10,000 waits parked in %.1f s, woken in %.1f s" % (parked_s, sent_s),
                  file=sys.stderr)


class Children(StepsTest):
    def test_a_child_is_made_once_and_its_result_resumes_the_parent(self):
        p = self.srv.submit(queue="c1")
        got = lease_one(self.srv, "c1")
        ans = step(self.srv, got, "report", kind="child",
                   job={"queue": "c1-kids", "type": "Part", "args": {"n": 3}})
        child = ans["child"]
        self.assertEqual((ans["parked"], ans["state"]), (True, "waiting"))
        jp = self.srv.job(p["id"])
        self.assertEqual((jp["waiting"]["reason"], jp["waiting"]["child"]), ("child", child))
        jc = self.srv.job(child)
        self.assertEqual((jc["tenant"], jc["args"], jc["awaited_by"]), ("acme", {"n": 3},
                                                                        p["id"]))
        kid = lease_one(self.srv, "c1-kids")
        self.assertEqual(kid["id"], child)
        self.srv.ack(kid, result={"part": "done"})
        back = lease_one(self.srv, "c1")
        self.assertEqual((back["id"], back["attempt"]), (p["id"], 0))
        s = steps_of(self.srv, p["id"])[0]
        self.assertEqual((s["kind"], s["child"], s["child_state"], s["result"], s["error"]),
                         ("child", child, "succeeded", {"part": "done"}, None))
        self.srv.ack(back)

    def test_a_child_that_dies_resumes_the_parent_with_its_error(self):
        p = self.srv.submit(queue="c2")
        got = lease_one(self.srv, "c2")
        child = step(self.srv, got, "sub", kind="child",
                     job={"queue": "c2-kids", "type": "Part", "max_attempts": 1})["child"]
        self.srv.fail(lease_one(self.srv, "c2-kids"), error="disk full")
        self.assertEqual(self.srv.job(child)["state"], "dead")
        back = lease_one(self.srv, "c2")
        self.assertEqual(back["id"], p["id"])
        s = steps_of(self.srv, p["id"])[0]
        self.assertEqual((s["child_state"], s["error"], s["result"]), ("dead", "disk full", None))

    def test_cancelling_the_parent_cancels_its_waiting_child(self):
        p = self.srv.submit(queue="c3")
        got = lease_one(self.srv, "c3")
        child = step(self.srv, got, "sub", kind="child",
                     job={"queue": "c3-kids", "type": "Part"})["child"]
        self.assertEqual(self.srv.ok("POST", "/v1/jobs/%d/cancel" % p["id"])["state"],
                         "cancelled")
        self.assertEqual(self.srv.job(child)["state"], "cancelled")
        s = steps_of(self.srv, p["id"])[0]
        self.assertEqual((s["done"], s["error"]), (True, "cancelled"))

    def test_a_child_counts_against_the_quotas(self):
        self.srv.ok("PUT", "/v1/tenants/cq", {"max_queued": 1})
        self.srv.submit(tenant="cq", queue="c4")
        got = lease_one(self.srv, "c4")
        ans = step(self.srv, got, "sub", kind="child", job={"queue": "c4-kids", "type": "T"},
                   expect=429)
        self.assertEqual((ans["error"]["code"], ans["error"]["field"]),
                         ("quota_exceeded", "max_queued"))
        self.assertEqual(self.srv.ok("GET", "/v1/queues/c4-kids", expect=(200, 404)).get(
            "ready", 0), 0)
        self.assertEqual(self.srv.job(got["id"])["state"], "leased")


WORKER = r"""
import http.client, json, sys, time
port, queue = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def call(path, body):
    c.request("POST", path, json.dumps(body))
    r = c.getresponse()
    data = json.loads(r.read())
    assert r.status == 200, (path, r.status, data)
    return data
job = call("/v1/lease", {"worker": "doomed", "queues": [queue], "max": 1})["jobs"][0]
for i in (1, 2):
    call("/v1/jobs/%d/steps" % job["id"], {"token": job["token"], "name": "step-%d" % i,
                                           "result": {"n": i * 10}})
print(json.dumps(job), flush=True)
time.sleep(600)
"""


class Durability(unittest.TestCase):
    def four_steps(self, srv, queue):
        """A four-step job whose worker is killed -9 after step 2 resumes at
        step 3 with steps 1-2's results."""
        srv.ok("PUT", "/v1/queues/" + queue, {"lease_ms": 500, "backoff": "fixed",
                                              "backoff_base_ms": 10})
        j = srv.submit(queue=queue)
        w = subprocess.Popen([sys.executable, "-c", WORKER, str(srv.port), queue],
                             stdout=subprocess.PIPE, text=True)
        try:
            leased = json.loads(w.stdout.readline())
        finally:
            w.send_signal(signal.SIGKILL)
            w.wait()
        self.assertEqual(leased["id"], j["id"])
        back = None
        deadline = time.time() + 60
        while back is None and time.time() < deadline:
            back = lease_one(srv, queue, wait_ms=2000)
        self.assertEqual((back["id"], back["steps"]), (j["id"], 2))
        done = {s["name"]: s["result"] for s in steps_of(srv, j["id"])}
        self.assertEqual(done, {"step-1": {"n": 10}, "step-2": {"n": 20}})
        for i in (3, 4):  # the handler goes on from step 3
            step(srv, back, "step-%d" % i, {"n": i * 10})
        srv.ack(back, result=sum(v["n"] for v in done.values()))
        att = srv.ok("GET", "/v1/jobs/%d/attempts" % j["id"])["attempts"]
        self.assertEqual([(a["outcome"], a["steps"]) for a in att],
                         [("expired", ["step-1", "step-2"]),
                          ("succeeded", ["step-3", "step-4"])])
        return j

    def test_a_worker_killed_after_step_2_resumes_at_step_3(self):
        srv = Server()
        try:
            self.four_steps(srv, "d1")
        finally:
            srv.cleanup()

    def test_a_server_killed_with_steps_sleeps_events_and_children_loses_none(self):
        # a long --lease-write-delay: nothing is written late before the kill
        srv = Server(args=["--lease-write-delay", "60s", "--event-window", "10m"])
        try:
            run = srv.submit(queue="k-run")
            ev = srv.submit(queue="k-ev")
            nap = srv.submit(queue="k-nap")
            par = srv.submit(queue="k-par")
            g_run, g_ev, g_nap, g_par = (lease_one(srv, q) for q in
                                         ("k-run", "k-ev", "k-nap", "k-par"))
            step(srv, g_run, "one", 1)
            step(srv, g_run, "two", 2)
            step(srv, g_ev, "w", kind="event", event="k9", timeout_ms=600000)
            t_nap = time.time()
            step(srv, g_nap, "nap", kind="sleep", duration_ms=3000)
            child = step(srv, g_par, "sub", kind="child",
                         job={"queue": "k-kids", "type": "K"})["child"]
            event(srv, "spare", {"kept": True})
            srv.kill()
            srv.start()
            # run's lease was written with its first step: its worker goes on
            self.assertEqual(srv.job(run["id"])["state"], "leased")
            step(srv, g_run, "three", 3)
            st, ans = srv.req("POST", "/v1/jobs/%d/steps" % run["id"],
                              {"token": g_run["token"], "name": "two", "result": 2})
            self.assertEqual((st, ans.get("duplicate")), (200, True), ans)  # its own lease's
            srv.ack(g_run)
            self.assertEqual([s["name"] for s in steps_of(srv, run["id"])],
                             ["one", "two", "three"])
            self.assertEqual(srv.job(ev["id"])["waiting"]["reason"], "event")
            self.assertEqual(srv.job(nap["id"])["waiting"]["reason"], "sleep")
            self.assertEqual(srv.job(par["id"])["waiting"]["child"], child)
            self.assertEqual(srv.job(child)["awaited_by"], par["id"])
            # the event wakes its job, the kept one is taken, the child ends
            self.assertEqual(event(srv, "k9", "x")["jobs"], [ev["id"]])
            other = srv.submit(queue="k-other")
            g = lease_one(srv, "k-other")
            ans = step(srv, g, "w", kind="event", event="spare")
            self.assertEqual((ans["done"], ans["result"]), (True, {"kept": True}))
            srv.ack(lease_one(srv, "k-kids"), result="kid")
            self.assertEqual(lease_one(srv, "k-ev")["id"], ev["id"])
            self.assertEqual(lease_one(srv, "k-par")["id"], par["id"])
            self.assertEqual(steps_of(srv, par["id"])[0]["result"], "kid")
            back = lease_one(srv, "k-nap", wait_ms=10000)
            self.assertEqual(back["id"], nap["id"])
            self.assertGreaterEqual(time.time() - t_nap, 2.99)
            self.assertEqual(other["id"], g["id"])
        finally:
            srv.cleanup()

    def test_a_wait_ended_before_its_job_row_was_written_goes_on_after_a_kill_9(self):
        # the event's step row is written at once; the job's ready row late
        srv = Server(args=["--lease-write-delay", "60s"])
        try:
            j = srv.submit(queue="k2")
            step(srv, lease_one(srv, "k2"), "w", kind="event", event="k2")
            event(srv, "k2", 5)
            srv.wait_stored("SELECT state FROM $Sjobs WHERE id = %d" % j["id"], "waiting")
            srv.kill()
            srv.start()
            self.assertEqual(srv.job(j["id"])["state"], "ready")
            self.assertEqual(lease_one(srv, "k2")["id"], j["id"])
        finally:
            srv.cleanup()


@unittest.skipUnless(STORE == "postgres", "two servers share a store on PostgreSQL only")
class Takeover(unittest.TestCase):
    def test_a_standby_that_takes_over_keeps_every_step_and_wait(self):
        from cluster import Cluster  # tests/chaos: a leader and a standby
        cl = Cluster(2, args=["--leader-ttl", "2s"])
        try:
            lead = cl.wait_leader(30)
            srv = cl.servers[lead]
            run = srv.submit(queue="t-run")
            ev = srv.submit(queue="t-ev")
            par = srv.submit(queue="t-par")
            g_run, g_ev, g_par = (lease_one(srv, q) for q in ("t-run", "t-ev", "t-par"))
            step(srv, g_run, "one", {"a": 1})
            step(srv, g_ev, "w", kind="event", event="tk")
            child = step(srv, g_par, "sub", kind="child", job={"queue": "t-kids",
                                                               "type": "K"})["child"]
            cl.kill(lead)
            lead = cl.wait_leader(30, not_in=(lead,))
            srv = cl.servers[lead]
            step(srv, g_run, "two", {"b": 2})  # the lease goes on under the new leader
            self.assertEqual([s["result"] for s in steps_of(srv, run["id"])],
                             [{"a": 1}, {"b": 2}])
            self.assertEqual(event(srv, "tk", 1)["jobs"], [ev["id"]])
            srv.ack(lease_one(srv, "t-kids"), result=3)
            self.assertEqual(lease_one(srv, "t-par")["id"], par["id"])
            self.assertEqual(steps_of(srv, par["id"])[0]["result"], 3)
            self.assertEqual(steps_of(srv, par["id"])[0]["child"], child)
        except BaseException:
            sys.stderr.write(cl.logs())
            raise
        finally:
            cl.cleanup()


if __name__ == "__main__":
    main()
