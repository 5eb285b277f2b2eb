# SPDX-License-Identifier: Apache-2.0
"""tenq serve over real sockets: every endpoint with its errors, the rules
of SEMANTICS.md end to end, tenant isolation, protocol abuse, crashes."""
import http.client
import json
import sys
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import STORE, Server, ServerTest, raw_socket, read_until_closed, main  # noqa: E402


def err_code(body):
    return body["error"]["code"] if isinstance(body, dict) and "error" in body else None


class Submit(ServerTest):
    def test_submit_one_job_answers_201_with_its_id(self):
        r = self.srv.submit(queue="sub", args={"b": 2, "a": 1})
        self.assertEqual(r["state"], "ready")
        self.assertFalse(r["duplicate"])
        job = self.srv.job(r["id"])
        self.assertEqual(job["args"], {"a": 1, "b": 2})
        self.assertEqual(job["tenant"], "acme")

    def test_batch_answers_each_job_at_its_index(self):
        status, body = self.srv.req("POST", "/v1/jobs", {"jobs": [
            {"tenant": "acme", "queue": "sub", "type": "T"},
            {"tenant": "acme", "queue": "bad queue", "type": "T"},
            {"tenant": "acme", "queue": "sub", "type": "T", "priority": "high"},
            {"tenant": "acme", "queue": "sub", "type": "T"}]})
        self.assertEqual(status, 201)
        res = body["jobs"]
        self.assertEqual(len(res), 4)
        self.assertIn("id", res[0])
        self.assertEqual(res[1]["error"]["field"], "queue")
        self.assertEqual(res[2]["error"]["field"], "priority")
        self.assertGreater(res[3]["id"], res[0]["id"])

    def test_malformed_json_is_400_and_changes_nothing(self):
        before = self.srv.ok("GET", "/v1/stats")["totals"]["submitted_total"]
        for bad in [b"{", b"[1,2]", b'{"tenant":"a",}', b"null", b'"text"']:
            status, body = self.srv.req("POST", "/v1/jobs", bad)
            self.assertEqual(status, 400, bad)
            self.assertEqual(err_code(body), "invalid")
        after = self.srv.ok("GET", "/v1/stats")["totals"]["submitted_total"]
        self.assertEqual(before, after)

    def test_wrong_types_and_unknown_fields_name_the_field(self):
        cases = [({"queue": 5}, "queue"), ({"type": ["x"]}, "type"),
                 ({"priority": 1.5}, "priority"), ({"run_at": "soon"}, "run_at"),
                 ({"max_attempts": 0}, "max_attempts"), ({"unique": "yes"}, "unique"),
                 ({"score": "1"}, "score"), ({"max_atempts": 3}, "max_atempts"),
                 ({"tenant": "bad/name"}, "tenant"), ({"key": "a\nb"}, "key")]
        for extra, field in cases:
            job = {"tenant": "acme", "queue": "sub", "type": "T"}
            job.update(extra)
            status, body = self.srv.req("POST", "/v1/jobs", job)
            self.assertEqual(status, 400, extra)
            self.assertEqual(body["error"]["field"], field, extra)

    def test_missing_required_fields(self):
        for missing in ["tenant", "queue", "type"]:
            job = {"tenant": "acme", "queue": "sub", "type": "T"}
            del job[missing]
            status, body = self.srv.req("POST", "/v1/jobs", job)
            self.assertEqual(status, 400)
            self.assertEqual(body["error"]["field"], missing)

    def test_a_single_job_over_1_mib_is_413(self):
        big = "x" * (1024 * 1024 + 10)
        status, body = self.srv.req("POST", "/v1/jobs", {"tenant": "acme", "queue": "sub",
                                                         "type": "T", "args": big})
        self.assertEqual(status, 413)
        self.assertEqual(err_code(body), "too_large")

    def test_batches_hold_1_to_10000_jobs(self):
        status, body = self.srv.req("POST", "/v1/jobs", {"jobs": []})
        self.assertEqual(status, 400)
        many = [{"tenant": "acme", "queue": "big", "type": "T"}] * 10001
        status, body = self.srv.req("POST", "/v1/jobs", {"jobs": many})
        self.assertEqual(status, 400)
        status, body = self.srv.req("POST", "/v1/jobs", {"jobs": many[:10000]})
        self.assertEqual(status, 201)
        self.assertEqual(len(body["jobs"]), 10000)
        status, body = self.srv.req("POST", "/v1/jobs", {"jobs": many[:2], "extra": 1})
        self.assertEqual(status, 400)

    def test_idempotent_submit_returns_the_same_answer(self):
        a = self.srv.submit(queue="idem", idempotency_key="k-1")
        status, b = self.srv.req("POST", "/v1/jobs", {"tenant": "acme", "queue": "idem",
                                                      "type": "T", "idempotency_key": "k-1"})
        self.assertEqual(status, 200)
        self.assertEqual(b["id"], a["id"])
        self.assertTrue(b["replayed"])

    def test_a_trace_context_goes_with_its_job(self):
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        one = self.srv.submit(queue="trace", traceparent=tp)
        # a batch read by both readers: in place, and by jansson (an escape)
        st, many = self.srv.req("POST", "/v1/jobs", {"jobs": [
            {"tenant": "acme", "queue": "trace", "type": "T", "traceparent": tp},
            {"tenant": "acme", "queue": "trace", "type": "T\u0041", "traceparent": tp}]})
        self.assertEqual(st, 201)
        ids = [one["id"]] + [j["id"] for j in many["jobs"]]
        self.assertEqual([self.srv.job(i)["traceparent"] for i in ids], [tp] * 3)
        leased = self.srv.lease(["trace"], max=3)
        self.assertEqual([j["traceparent"] for j in leased], [tp] * 3)
        plain = self.srv.submit(queue="trace")
        self.assertNotIn("traceparent", self.srv.job(plain["id"]))
        for bad in ("00-abc", 42, "00-00000000000000000000000000000000-00f067aa0ba902b7-01"):
            st, body = self.srv.req("POST", "/v1/jobs", {"tenant": "acme", "queue": "trace",
                                                         "type": "T", "traceparent": bad})
            self.assertEqual((st, body["error"]["field"]), (400, "traceparent"), bad)

    def test_dedup_by_unique_key_and_by_unique_args(self):
        a = self.srv.submit(queue="dd", unique_key="u1")
        b = self.srv.submit(queue="dd", unique_key="u1")
        self.assertTrue(b["duplicate"])
        self.assertEqual(a["id"], b["id"])
        c = self.srv.submit(queue="dd", unique=True, args={"x": 1, "y": 2})
        d = self.srv.submit(queue="dd", unique=True, args={"y": 2, "x": 1})
        self.assertEqual(c["id"], d["id"])
        self.assertTrue(d["duplicate"])


class ReadAndList(ServerTest):
    def test_get_unknown_or_malformed_id_is_404(self):
        for path in ["/v1/jobs/999999", "/v1/jobs/abc", "/v1/jobs/0", "/v1/jobs/-1"]:
            status, body = self.srv.req("GET", path)
            self.assertEqual(status, 404, path)
            self.assertEqual(err_code(body), "not_found")

    def test_finished_jobs_are_read_from_the_store(self):
        r = self.srv.submit(queue="rd")
        j = self.srv.lease(["rd"])[0]
        self.srv.ack(j, result={"rows": 3}, stats={"ms": 5})
        job = self.srv.job(r["id"])
        self.assertEqual(job["state"], "succeeded")
        self.assertEqual(job["result"], {"rows": 3})
        self.assertEqual(job["stats"], {"ms": 5})
        self.assertIsNotNone(job["finished_at"])
        self.assertEqual(job["worker"], "w-test")

    def test_list_pages_newest_first_with_filters(self):
        ids = [self.srv.submit(queue="lst", tenant="lister", type="A" if i % 2 else "B")["id"]
               for i in range(7)]
        page = self.srv.ok("GET", "/v1/jobs?tenant=lister&limit=3")
        self.assertEqual([j["id"] for j in page["jobs"]], ids[::-1][:3])
        nxt = page["next"]
        page2 = self.srv.ok("GET", "/v1/jobs?tenant=lister&limit=3&after_id=%d" % nxt)
        self.assertEqual([j["id"] for j in page2["jobs"]], ids[::-1][3:6])
        typed = self.srv.ok("GET", "/v1/jobs?tenant=lister&type=A&limit=100")
        self.assertEqual(len(typed["jobs"]), 3)
        self.assertTrue(all(j["type"] == "A" for j in typed["jobs"]))
        st = self.srv.ok("GET", "/v1/jobs?tenant=lister&state=ready&limit=100")
        self.assertEqual(len(st["jobs"]), 7)
        self.assertEqual(self.srv.req("GET", "/v1/jobs?state=bogus")[0], 400)
        self.assertEqual(self.srv.req("GET", "/v1/jobs?limit=0")[0], 400)
        self.assertEqual(self.srv.req("GET", "/v1/jobs?limit=5x")[0], 400)
        self.assertEqual(self.srv.req("GET", "/v1/morgue?limit=5x")[0], 400)
        self.assertEqual(self.srv.req("GET", "/v1/lanes?limit=-1")[0], 400)
        self.assertEqual(self.srv.req("GET", "/v1/jobs?after_id=x")[0], 400)

    def test_unknown_endpoint_404_and_wrong_method_405(self):
        self.assertEqual(self.srv.req("GET", "/v1/nope")[0], 404)
        self.assertEqual(self.srv.req("DELETE", "/v1/jobs")[0], 405)
        self.assertEqual(self.srv.req("PUT", "/v1/lease", {})[0], 405)

    def test_head_is_get_without_a_body(self):
        status, body, hdrs = self.srv.raw("HEAD", "/healthz")
        self.assertEqual((status, body), (200, ""))
        _, full, _ = self.srv.raw("GET", "/healthz")
        self.assertEqual(int(hdrs["Content-Length"]), len(json.dumps(full, separators=(",", ":"))))
        self.assertEqual(self.srv.raw("HEAD", "/")[0], 200)
        self.assertEqual(self.srv.raw("HEAD", "/v1/lease")[0], 405)
        # the connection is still good for the next request
        self.assertEqual(self.srv.req("GET", "/healthz")[0], 200)


class Wait(ServerTest):
    def test_wait_answers_when_the_job_finishes(self):
        r = self.srv.submit(queue="wt")
        got = {}

        def waiter():
            got["t0"] = time.time()
            got["res"] = self.srv.req("GET", "/v1/jobs/%d/wait?timeout_ms=20000" % r["id"],
                                      conn="waiter")
            got["t1"] = time.time()

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)
        j = self.srv.lease(["wt"])[0]
        self.srv.ack(j, result={"done": True})
        t.join(10)
        status, body = got["res"]
        self.assertEqual(status, 200)
        self.assertEqual(body["state"], "succeeded")
        self.assertEqual(body["result"], {"done": True})
        self.assertLess(got["t1"] - got["t0"], 5)

    def test_wait_timeout_answers_with_the_current_state(self):
        r = self.srv.submit(queue="wt2")
        t0 = time.time()
        body = self.srv.ok("GET", "/v1/jobs/%d/wait?timeout_ms=300" % r["id"])
        self.assertEqual(body["state"], "ready")
        self.assertGreaterEqual(time.time() - t0, 0.25)

    def test_wait_on_a_finished_job_answers_at_once(self):
        r = self.srv.submit(queue="wt3")
        self.srv.ok("POST", "/v1/jobs/%d/cancel" % r["id"])
        t0 = time.time()
        body = self.srv.ok("GET", "/v1/jobs/%d/wait?timeout_ms=10000" % r["id"])
        self.assertEqual(body["state"], "cancelled")
        self.assertLess(time.time() - t0, 2)
        self.assertEqual(self.srv.req("GET", "/v1/jobs/888888/wait")[0], 404)
        self.assertEqual(self.srv.req("GET", "/v1/jobs/1/wait?timeout_ms=x")[0], 400)


class Workers(ServerTest):
    def test_lease_start_heartbeat_ack(self):
        r = self.srv.submit(queue="wk", args={"n": 1})
        j = self.srv.lease(["wk"], worker="host-1/pid-7")[0]
        self.assertEqual(j["id"], r["id"])
        self.assertEqual(j["attempt"], 0)
        self.assertEqual(j["args"], {"n": 1})
        self.assertGreater(j["lease_until"], 0)
        base = "/v1/jobs/%d" % j["id"]
        self.assertEqual(self.srv.ok("POST", base + "/start", {"token": j["token"]})["state"],
                         "running")
        hb = self.srv.ok("POST", base + "/heartbeat", {"token": j["token"], "progress": 0.5})
        self.assertFalse(hb["cancel"])
        self.assertGreaterEqual(hb["lease_until"], j["lease_until"])
        self.assertEqual(self.srv.job(j["id"])["progress"], 0.5)
        self.assertEqual(self.srv.ack(j)["state"], "succeeded")

    def test_stale_token_is_409_and_changes_nothing(self):
        self.srv.ok("PUT", "/v1/queues/stale", {"lease_ms": 300, "backoff": "fixed",
                                                "backoff_base_ms": 0})
        self.srv.submit(queue="stale")
        first = self.srv.lease(["stale"])[0]
        time.sleep(0.6)  # the first worker froze; its lease expires
        second = self.srv.lease(["stale"], wait_ms=2000)[0]
        self.assertEqual(second["id"], first["id"])
        self.assertGreater(second["token"], first["token"])
        for op, body in [("ack", {}), ("fail", {"error": "late"}), ("heartbeat", {}),
                         ("start", {})]:
            body["token"] = first["token"]
            status, res = self.srv.req("POST", "/v1/jobs/%d/%s" % (first["id"], op), body)
            self.assertEqual(status, 409, op)
            self.assertEqual(res["error"]["field"], "token")
        self.assertEqual(self.srv.job(first["id"])["state"], "leased")
        self.srv.ack(second)

    def test_an_outcome_sent_again_is_answered_as_applied(self):
        """A worker that lost the answer to its ack sends it again: the
        same token is told what happened (it was applied), whether the job
        is still in memory or only in the store; another token is 409."""
        self.srv.ok("PUT", "/v1/queues/again", {"backoff": "fixed", "backoff_base_ms": 60000})
        done = self.srv.submit(queue="again")
        j = self.srv.lease(["again"])[0]
        self.assertEqual(self.srv.ack(j, result={"n": 1})["state"], "succeeded")
        for _ in range(2):  # single ack, then the same in a batch and with a lease
            self.assertEqual(self.srv.ack(j, result={"n": 1}),
                             {"id": done["id"], "state": "succeeded"})
        res = self.srv.ok("POST", "/v1/outcomes", {"outcomes": [
            {"id": j["id"], "token": j["token"], "ok": True},
            {"id": j["id"], "token": j["token"] + 1, "ok": True},
            {"id": 987654, "token": 5, "ok": True}]})["results"]
        self.assertEqual(res[0], {"id": j["id"], "state": "succeeded"})
        self.assertEqual((res[1]["error"]["code"], res[1]["error"]["field"]), ("conflict", "token"))
        self.assertEqual(res[2]["error"]["code"], "not_found")
        leased = self.srv.ok("POST", "/v1/lease", {"worker": "w", "queues": ["again"],
                                                   "outcomes": [{"id": j["id"], "token": j["token"],
                                                                 "ok": True}]})
        self.assertEqual(leased["results"], [{"id": j["id"], "state": "succeeded"}])
        status, body = self.srv.req("POST", "/v1/jobs/%d/ack" % j["id"], {"token": j["token"] + 7})
        self.assertEqual((status, body["error"]["field"]), (409, "token"))
        status, body = self.srv.req("POST", "/v1/jobs/%d/fail" % j["id"],
                                    {"token": j["token"], "error": "x"})
        self.assertEqual(status, 409, body)  # it succeeded: a failure was never applied
        self.assertEqual(self.srv.job(j["id"])["result"], {"n": 1})
        # a failure sent again: the job waits for its retry, still in memory
        self.srv.submit(queue="again")
        f = self.srv.lease(["again"])[0]
        first = self.srv.fail(f, error="boom")
        self.assertEqual(first["state"], "scheduled")
        self.assertEqual(self.srv.fail(f, error="boom")["state"], "scheduled")
        self.assertEqual(self.srv.job(f["id"])["attempts"], 1)
        status, _ = self.srv.req("POST", "/v1/jobs/%d/ack" % f["id"], {"token": f["token"]})
        self.assertEqual(status, 409)  # an ack after the failure is not

    def test_worker_call_errors(self):
        r = self.srv.submit(queue="we")
        status, _ = self.srv.req("POST", "/v1/jobs/%d/ack" % r["id"], {"token": 1})
        self.assertEqual(status, 409)  # ready, not leased
        self.assertEqual(self.srv.req("POST", "/v1/jobs/777777/ack", {"token": 1})[0], 404)
        j = self.srv.lease(["we"])[0]
        status, body = self.srv.req("POST", "/v1/jobs/%d/ack" % j["id"], {})
        self.assertEqual(status, 400)
        status, body = self.srv.req("POST", "/v1/jobs/%d/fail" % j["id"],
                                    {"token": j["token"], "retry_in_ms": -1})
        self.assertEqual(status, 400)
        status, body = self.srv.req("POST", "/v1/lease", {"queues": "we"})
        self.assertEqual(status, 400)
        status, body = self.srv.req("POST", "/v1/lease", {"queues": ["we"], "max": 0})
        self.assertEqual(status, 400)
        status, body = self.srv.req("POST", "/v1/lease", {"worker": "w"})
        self.assertEqual(body["error"]["field"], "queues")

    def test_fail_retries_by_backoff_then_the_morgue(self):
        self.srv.ok("PUT", "/v1/queues/retry", {"max_attempts": 2, "backoff": "fixed",
                                                "backoff_base_ms": 100})
        r = self.srv.submit(queue="retry")
        j = self.srv.lease(["retry"])[0]
        res = self.srv.fail(j, error="boom")
        self.assertEqual(res["state"], "scheduled")
        j2 = self.srv.lease(["retry"], wait_ms=3000)[0]
        self.assertEqual(j2["attempt"], 1)
        self.assertEqual(self.srv.fail(j2, error="boom again")["state"], "dead")
        job = self.srv.job(r["id"])
        self.assertEqual(job["state"], "dead")
        self.assertEqual(job["error"], "boom again")
        morgue = self.srv.ok("GET", "/v1/morgue?queue=retry")["jobs"]
        self.assertEqual([m["id"] for m in morgue], [r["id"]])

    def test_retry_false_goes_to_the_morgue_at_once(self):
        self.srv.submit(queue="nore")
        j = self.srv.lease(["nore"])[0]
        self.assertEqual(self.srv.fail(j, error="bad input", retry=False)["state"], "dead")

    def test_a_failed_attempt_keeps_its_stats(self):
        r = self.srv.submit(queue="fstats")
        j = self.srv.lease(["fstats"])[0]
        self.srv.fail(j, error="x", stats={"ms": 5}, retry_in_ms=0)
        self.assertEqual(self.srv.job(r["id"])["stats"], {"ms": 5})
        j = self.srv.lease(["fstats"], wait_ms=2000)[0]
        self.assertEqual(self.srv.req("POST", "/v1/jobs/%d/fail" % j["id"],
                                      {"token": j["token"], "stats": {"big": "x" * 70000}})[0],
                         413)
        self.assertEqual(self.srv.job(r["id"])["state"], "leased")  # nothing changed
        self.srv.ok("POST", "/v1/outcomes", {"outcomes": [
            {"id": j["id"], "token": j["token"], "ok": False, "error": "y", "retry": False,
             "stats": {"ms": 7}}]})
        job = self.srv.job(r["id"])
        self.assertEqual((job["state"], job["stats"]), ("dead", {"ms": 7}))
        self.srv.stop()
        self.srv.start()
        self.assertEqual(self.srv.job(r["id"])["stats"], {"ms": 7})

    def test_outcomes_in_one_request(self):
        for _ in range(3):
            self.srv.submit(queue="oc")
        jobs = self.srv.lease(["oc"], max=3)
        body = {"outcomes": [
            {"id": jobs[0]["id"], "token": jobs[0]["token"], "ok": True, "result": {"r": 1}},
            {"id": jobs[1]["id"], "token": jobs[1]["token"], "ok": False, "error": "x",
             "retry": False},
            {"id": jobs[2]["id"], "token": 999, "ok": True},
            {"id": 424242, "token": 1, "ok": True}]}
        res = self.srv.ok("POST", "/v1/outcomes", body)["results"]
        self.assertEqual(res[0]["state"], "succeeded")
        self.assertEqual(res[1]["state"], "dead")
        self.assertEqual(res[2]["error"]["code"], "conflict")
        self.assertEqual(res[3]["error"]["code"], "not_found")
        self.assertEqual(self.srv.req("POST", "/v1/outcomes", {"outcomes": []})[0], 400)

    def test_outcomes_ride_with_the_next_lease(self):
        first = self.srv.submit(queue="olr", key="k")
        second = self.srv.submit(queue="olr", key="k")
        other = self.srv.submit(queue="olr")
        held = self.srv.lease(["olr"], max=2)
        self.assertEqual([j["id"] for j in held], [first["id"], other["id"]])
        # the lane's next job is free only once the first is acked: the ack
        # goes first, so this very lease takes it
        body = {"worker": "w-olr", "queues": ["olr"], "max": 5, "wait_ms": 0, "outcomes": [
            {"id": first["id"], "token": held[0]["token"], "ok": True, "result": {"n": 1}},
            {"id": other["id"], "token": held[1]["token"] + 1, "ok": True},
            {"id": 4242424, "token": 1, "ok": False, "error": "x"}]}
        got = self.srv.ok("POST", "/v1/lease", body)
        self.assertEqual([j["id"] for j in got["jobs"]], [second["id"]])
        res = got["results"]
        self.assertEqual(res[0], {"id": first["id"], "state": "succeeded"})
        self.assertEqual(res[1]["error"]["code"], "conflict")
        self.assertEqual(res[2]["error"]["code"], "not_found")
        self.assertEqual(self.srv.job(first["id"])["result"], {"n": 1})
        self.assertEqual(self.srv.job(other["id"])["state"], "leased")
        # with nothing to lease the answer still carries the results, after
        # the wait; the outcomes were applied (and committed) before it
        t0 = time.time()
        got = self.srv.ok("POST", "/v1/lease", {
            "queues": ["olr-empty"], "wait_ms": 300, "outcomes": [
                {"id": second["id"], "token": got["jobs"][0]["token"], "ok": False,
                 "error": "no", "retry": False}]})
        self.assertGreaterEqual(time.time() - t0, 0.25)
        self.assertEqual(got, {"jobs": [], "results": [{"id": second["id"], "state": "dead"}]})
        # a plain lease's answer has no results
        self.assertNotIn("results", self.srv.ok("POST", "/v1/lease", {"queues": ["olr"]}))

    def test_a_long_poll_with_outcomes_has_them_applied_while_it_waits(self):
        r = self.srv.submit(queue="olw")
        j = self.srv.lease(["olw"])[0]
        got = {}

        def poller():
            got["body"] = self.srv.ok("POST", "/v1/lease", {
                "queues": ["olw"], "wait_ms": 10000, "outcomes": [
                    {"id": j["id"], "token": j["token"], "ok": True}]}, conn="poller")

        t = threading.Thread(target=poller)
        t.start()
        deadline = time.time() + 5
        while self.srv.job(r["id"])["state"] != "succeeded" and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.srv.job(r["id"])["state"], "succeeded")
        self.assertTrue(t.is_alive())  # still waiting for work
        nxt = self.srv.submit(queue="olw")
        t.join(10)
        self.assertEqual([x["id"] for x in got["body"]["jobs"]], [nxt["id"]])
        self.assertEqual(got["body"]["results"], [{"id": j["id"], "state": "succeeded"}])

    def test_a_refused_lease_reports_none_of_its_outcomes(self):
        r = self.srv.submit(queue="olx")
        j = self.srv.lease(["olx"])[0]
        out = [{"id": j["id"], "token": j["token"], "ok": True}]
        bad = [
            ({"queues": ["bad name"], "outcomes": out}, 400, "queues"),
            ({"queues": ["olx"], "max": "5", "outcomes": out}, 400, "max"),
            ({"queues": ["olx"], "max": 0, "outcomes": out}, 400, "max"),
            ({"queues": ["olx"], "outcomes": []}, 400, "outcomes"),
            ({"queues": ["olx"], "outcomes": {"id": j["id"]}}, 400, "outcomes"),
            ({"queues": ["olx"], "outcomes": out * 10001}, 400, "outcomes"),
            ({"queues": ["olx"], "outcomes": out, "outcome": out}, 400, "outcome"),
        ]
        for body, status, field in bad:
            st, b = self.srv.req("POST", "/v1/lease", body)
            self.assertEqual((st, b["error"].get("field")), (status, field), body)
        st, _ = self.srv.req("POST", "/v1/lease", '{"queues": ["olx"], "outcomes": [')
        self.assertEqual(st, 400)
        self.assertEqual(self.srv.job(r["id"])["state"], "leased")
        self.assertEqual(self.srv.job(r["id"])["token"], j["token"])
        # a bad item is answered on its own; the rest of the request goes on
        got = self.srv.ok("POST", "/v1/lease", {"queues": ["olx"], "outcomes": [
            {"id": j["id"], "token": j["token"], "ok": True, "surprise": 1}, 7,
            {"id": j["id"], "token": j["token"], "ok": True}]})
        self.assertEqual([x.get("error", {}).get("field") for x in got["results"]],
                         ["surprise", None, None])
        self.assertEqual(got["results"][2]["state"], "succeeded")

    def test_long_poll_answers_as_soon_as_a_job_arrives(self):
        got = {}

        def poller():
            t0 = time.time()
            got["jobs"] = self.srv.lease(["lp"], wait_ms=10000, conn="poller")
            got["dt"] = time.time() - t0

        t = threading.Thread(target=poller)
        t.start()
        time.sleep(0.3)
        t_submit = time.time()
        self.srv.submit(queue="lp")
        t.join(10)
        self.assertEqual(len(got["jobs"]), 1)
        self.assertLess(got["dt"], 3)
        self.assertLess(time.time() - t_submit, 1.0)

    def test_one_batch_wakes_every_waiting_worker(self):
        # Each woken lease collects the engine's changes, which still hold the
        # batch's wake-up: the waiters must all be served, each once, and the
        # server must not free a waiter its pass is about to visit (it did,
        # under ASan: a use after free, found by the peer benchmark's W3).
        for rnd in range(3):
            got, threads = {}, []
            for i in range(4):
                def poller(i=i):
                    got[i] = self.srv.lease(["many"], wait_ms=10000, conn="wp%d" % i)
                t = threading.Thread(target=poller)
                t.start()
                threads.append(t)
            time.sleep(0.4)
            jobs = [{"tenant": "acme", "queue": "many", "type": "T"} for _ in range(6)]
            self.srv.ok("POST", "/v1/jobs", {"jobs": jobs})
            for t in threads:
                t.join(10)
            ids = [j["id"] for i in range(4) for j in got.get(i, [])]
            self.assertEqual(len(ids), 4, got)
            self.assertEqual(len(set(ids)), 4)
            left = self.srv.lease(["many"], max=10)
            self.assertEqual(len(left), 2)
        self.assertEqual(self.srv.req("GET", "/healthz")[0], 200)

    def test_long_poll_times_out_empty(self):
        t0 = time.time()
        self.assertEqual(self.srv.lease(["never"], wait_ms=300), [])
        self.assertGreaterEqual(time.time() - t0, 0.25)

    def test_type_filter(self):
        self.srv.submit(queue="tf", type="Mail.send")
        self.srv.submit(queue="tf", type="Report.run")
        jobs = self.srv.lease(["tf"], max=5, types=["Report.run"])
        self.assertEqual([j["type"] for j in jobs], ["Report.run"])


class Semantics(ServerTest):
    def test_slots_limit_a_tenant_and_free_when_jobs_end(self):
        self.srv.ok("PUT", "/v1/tenants/slotted", {"slots": 2})
        for _ in range(5):
            self.srv.submit(queue="sl", tenant="slotted")
        jobs = self.srv.lease(["sl"], max=5)
        self.assertEqual(len(jobs), 2)
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/slotted")["in_use"], 2)
        self.srv.ack(jobs[0])
        self.assertEqual(len(self.srv.lease(["sl"], max=5)), 1)
        self.srv.ok("PUT", "/v1/tenants/slotted", {"slots": 0})
        self.srv.ack(jobs[1])
        self.assertEqual(self.srv.lease(["sl"], max=5), [])  # paused
        self.srv.ok("PUT", "/v1/tenants/slotted", {"slots": None})
        self.assertEqual(len(self.srv.lease(["sl"], max=5)), 2)

    def test_a_freed_slot_wakes_a_waiting_worker(self):
        self.srv.ok("PUT", "/v1/tenants/one", {"slots": 1})
        self.srv.submit(queue="sw", tenant="one")
        self.srv.submit(queue="sw", tenant="one")
        first = self.srv.lease(["sw"])[0]
        got = {}

        def poller():
            got["jobs"] = self.srv.lease(["sw"], wait_ms=10000, conn="p2")

        t = threading.Thread(target=poller)
        t.start()
        time.sleep(0.3)
        self.srv.ack(first)
        t.join(10)
        self.assertEqual(len(got["jobs"]), 1)

    def test_lanes_run_one_at_a_time_in_order(self):
        ids = [self.srv.submit(queue="ln", key="order-7")["id"] for _ in range(3)]
        self.assertEqual(self.srv.job(ids[1])["state"], "blocked")
        got = []
        for _ in range(3):
            jobs = self.srv.lease(["ln"], max=5)
            self.assertEqual(len(jobs), 1)
            got.append(jobs[0]["id"])
            self.srv.ack(jobs[0])
        self.assertEqual(got, ids)
        lanes = self.srv.ok("GET", "/v1/lanes")
        self.assertIn("lanes", lanes)

    def test_fair_order_between_tenants(self):
        self.srv.ok("PUT", "/v1/queues/fair", {"order": "fair"})
        self.srv.ok("POST", "/v1/jobs", {"jobs": [{"tenant": "big", "queue": "fair",
                                                   "type": "T"}] * 50})
        self.srv.ok("POST", "/v1/jobs", {"jobs": [{"tenant": "small", "queue": "fair",
                                                   "type": "T"}] * 5})
        jobs = self.srv.lease(["fair"], max=10)
        small = sum(1 for j in jobs if j["tenant"] == "small")
        self.assertGreaterEqual(small, 4)

    def test_merge_queue_merges_payloads(self):
        self.srv.ok("PUT", "/v1/queues/mrg", {"merge": True})
        a = self.srv.submit(queue="mrg", key="k", args={"n": 1}, score=2)
        b = self.srv.submit(queue="mrg", key="k", args={"n": 0}, score=1)
        self.assertTrue(b["merged"])
        self.assertEqual(a["id"], b["id"])
        j = self.srv.lease(["mrg"])[0]
        self.assertEqual([p["payload"] for p in j["payloads"]], [{"n": 0}, {"n": 1}])

    def test_cancel_in_each_state(self):
        r = self.srv.submit(queue="cx")
        res = self.srv.ok("POST", "/v1/jobs/%d/cancel" % r["id"])
        self.assertEqual(res["state"], "cancelled")
        status, body = self.srv.req("POST", "/v1/jobs/%d/cancel" % r["id"])
        self.assertEqual(status, 409)
        self.srv.submit(queue="cx")
        j = self.srv.lease(["cx"])[0]
        res = self.srv.ok("POST", "/v1/jobs/%d/cancel" % j["id"])
        self.assertTrue(res["cancel_requested"])
        hb = self.srv.ok("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": j["token"]})
        self.assertTrue(hb["cancel"])
        self.assertEqual(self.srv.fail(j, cancelled=True)["state"], "cancelled")
        self.assertEqual(self.srv.req("POST", "/v1/jobs/5555555/cancel")[0], 404)

    def test_scheduled_job_runs_at_its_time(self):
        r = self.srv.submit(queue="sch", run_at=int(time.time() * 1000) + 700)
        self.assertEqual(self.srv.job(r["id"])["state"], "scheduled")
        self.assertEqual(self.srv.lease(["sch"]), [])
        jobs = self.srv.lease(["sch"], wait_ms=5000)
        self.assertEqual(jobs[0]["id"], r["id"])

    def test_expired_lease_retries(self):
        self.srv.ok("PUT", "/v1/queues/exp", {"lease_ms": 200, "backoff": "fixed",
                                              "backoff_base_ms": 0})
        r = self.srv.submit(queue="exp")
        self.srv.lease(["exp"])
        j = self.srv.lease(["exp"], wait_ms=3000)
        self.assertEqual(j[0]["id"], r["id"])
        self.assertEqual(self.srv.job(r["id"])["error"], "lease expired")


class AdminEndpoints(ServerTest):
    def test_tenants(self):
        t = self.srv.ok("PUT", "/v1/tenants/t1", {"slots": 5, "weight": 3})
        self.assertEqual((t["slots"], t["weight"]), (5, 3))
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/t1")["slots"], 5)
        names = [x["name"] for x in self.srv.ok("GET", "/v1/tenants")["tenants"]]
        self.assertIn("t1", names)
        self.assertEqual(self.srv.req("GET", "/v1/tenants/nobody")[0], 404)
        for bad in [{"weight": 0}, {"slots": -1}, {"slots": "many"}, {"color": "red"}]:
            status, body = self.srv.req("PUT", "/v1/tenants/t1", bad)
            self.assertEqual(status, 400, bad)
        self.assertEqual(self.srv.req("PUT", "/v1/tenants/bad%20name", {"slots": 1})[0], 400)
        self.assertEqual(self.srv.ok("GET", "/v1/tenants/t1")["weight"], 3)

    def test_every_setting_is_described_checked_and_kept(self):
        """GET /v1/settings lists every setting of queues and tenants; each is
        refused out of its range (400 naming it, nothing changed) and kept
        when valid, as its row says."""
        table = self.srv.ok("GET", "/v1/settings")
        self.assertEqual([r["name"] for r in table["tenant"]], ["slots", "weight"])
        self.assertIn("lease_ms", [r["name"] for r in table["queue"]])
        for kind, path in (("queue", "/v1/queues/table-q"), ("tenant", "/v1/tenants/table-t")):
            before = self.srv.ok("PUT", path, {})
            for row in table[kind]:
                name = row["name"]
                bad = ("no-such-word" if row["kind"] == "choice" else "yes" if row["kind"] == "bool"
                       else row["max"] + 1)
                status, body = self.srv.req("PUT", path, {name: bad})
                self.assertEqual((status, body["error"]["field"]), (400, name), body)
                self.assertEqual(self.srv.ok("GET", path)[name], before[name])
                good = (row["choices"][-1] if row["kind"] == "choice" else not row["default"]
                        if row["kind"] == "bool" else row["min"] if name != "backoff_max_ms"
                        else row["max"])
                self.assertEqual(self.srv.ok("PUT", path, {name: good})[name], good, name)
                self.srv.ok("PUT", path, {name: row["default"]})

    def test_queues(self):
        q = self.srv.ok("PUT", "/v1/queues/qs", {"order": "fair", "lease_ms": 60000,
                                                 "tenant_cap": 3, "merge": True})
        self.assertEqual((q["order"], q["lease_ms"], q["tenant_cap"], q["merge"]),
                         ("fair", 60000, 3, True))
        self.assertEqual(self.srv.ok("GET", "/v1/queues/qs")["order"], "fair")
        for bad, field in [({"order": "random"}, "order"), ({"lease_ms": 1}, "lease_ms"),
                           ({"tenant_cap": 0}, "tenant_cap"), ({"speed": 9}, "speed"),
                           ({"merge": "yes"}, "merge"), ({"delivery": "maybe"}, "delivery")]:
            status, body = self.srv.req("PUT", "/v1/queues/qs", bad)
            self.assertEqual(status, 400, bad)
            self.assertEqual(body["error"]["field"], field, bad)
        self.assertEqual(self.srv.ok("GET", "/v1/queues/qs")["lease_ms"], 60000)
        self.assertEqual(self.srv.req("GET", "/v1/queues/nothing")[0], 404)

    def test_morgue_list_requeue_delete(self):
        ids = []
        for _ in range(4):
            r = self.srv.submit(queue="mq", tenant="mt")
            j = self.srv.lease(["mq"])[0]
            self.srv.fail(j, retry=False, error="dead")
            ids.append(r["id"])
        page = self.srv.ok("GET", "/v1/morgue?queue=mq&limit=2")
        self.assertEqual([j["id"] for j in page["jobs"]], ids[::-1][:2])
        page2 = self.srv.ok("GET", "/v1/morgue?queue=mq&limit=2&after=" + page["next"])
        self.assertEqual([j["id"] for j in page2["jobs"]], ids[::-1][2:])
        by_id = self.srv.ok("GET", "/v1/morgue?queue=mq&sort=id")
        self.assertEqual([j["id"] for j in by_id["jobs"]], ids)
        self.assertEqual(self.srv.ok("POST", "/v1/morgue/%d/requeue" % ids[0])["state"],
                         "ready")
        self.assertEqual(self.srv.ok("DELETE", "/v1/morgue/%d" % ids[1])["deleted"], True)
        self.assertEqual(self.srv.req("DELETE", "/v1/morgue/%d" % ids[1])[0], 404)
        self.assertEqual(self.srv.req("POST", "/v1/morgue/%d/requeue" % ids[0])[0], 409)
        self.assertEqual(self.srv.ok("POST", "/v1/morgue/requeue", {"queue": "mq"})["requeued"],
                         2)
        self.assertEqual(self.srv.ok("GET", "/v1/morgue?queue=mq")["jobs"], [])
        self.assertEqual(self.srv.req("GET", "/v1/morgue?sort=size")[0], 400)
        self.assertEqual(self.srv.req("POST", "/v1/morgue/delete", {"q": 1})[0], 400)

    def test_rates_per_queue_and_in_the_totals(self):
        for _ in range(6):
            self.srv.submit(queue="rate")
        for j in self.srv.lease(["rate"], max=6):
            self.srv.ack(j)
        deadline = time.time() + 10
        while time.time() < deadline:
            st = self.srv.ok("GET", "/v1/stats")
            q = [x for x in st["queues"] if x["name"] == "rate"][0]
            if st["totals"]["completed_per_s"] > 0 and q["completed_per_s"] > 0:
                break
            time.sleep(0.2)
        self.assertGreater(q["completed_per_s"], 0)
        self.assertGreaterEqual(st["totals"]["completed_per_s"], q["completed_per_s"])
        self.assertGreaterEqual(st["totals"]["failed_per_s"], 0)

    def test_stats_metrics_health_dashboard(self):
        self.srv.submit(queue="obs")
        st = self.srv.ok("GET", "/v1/stats")
        q = [x for x in st["queues"] if x["name"] == "obs"][0]
        self.assertEqual(q["ready"], 1)
        self.assertIn("lag_ms", q)
        self.assertIn("completed_per_s", q)
        self.assertEqual(st["server"]["store"], os.environ.get("TENQ_TEST_STORE", "sqlite")
                         .replace("postgres", "postgres"))
        status, text = self.srv.req("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertIn('tenq_queue_jobs{queue="obs",state="ready"} 1', text)
        status, body = self.srv.req("GET", "/healthz")
        self.assertEqual((status, body["status"]), (200, "ok"))
        status, html, hdrs = self.srv.raw("GET", "/")
        self.assertEqual(status, 200)
        self.assertIn("<html", html)
        self.assertIn("frame-ancestors 'none'", hdrs.get("Content-Security-Policy", ""))


class Auth(unittest.TestCase):
    """Tokens, roles and tenant isolation, endpoint by endpoint."""

    @classmethod
    def setUpClass(cls):
        cls.admin = "admin-secret-for-tests-0001"
        cls.srv = Server(env={"TENQ_ADMIN_TOKEN": cls.admin})
        mk = lambda role, **kw: cls.srv.ok("POST", "/v1/tokens", dict(role=role, **kw),
                                           cls.admin)["token"]
        cls.acme = mk("tenant:acme")
        cls.other = mk("tenant:other")
        cls.worker = mk("worker")
        cls.qworker = mk("worker", queues=["wq"])

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def test_no_token_or_a_bad_token_is_401(self):
        self.assertEqual(self.srv.req("GET", "/v1/stats")[0], 401)
        self.assertEqual(self.srv.req("GET", "/v1/stats", token="nope")[0], 401)
        self.assertEqual(self.srv.req("GET", "/healthz")[0], 200)

    def test_roles(self):
        self.assertEqual(self.srv.req("POST", "/v1/lease", {"queues": ["q"]},
                                      token=self.acme)[0], 403)
        self.assertEqual(self.srv.req("POST", "/v1/jobs", {"queue": "q", "type": "T"},
                                      token=self.worker)[0], 403)
        self.assertEqual(self.srv.req("PUT", "/v1/tenants/acme", {"slots": 1},
                                      token=self.acme)[0], 403)
        self.assertEqual(self.srv.req("GET", "/v1/tokens", token=self.acme)[0], 403)
        self.assertEqual(self.srv.req("GET", "/metrics", token=self.worker)[0], 403)
        self.assertEqual(self.srv.req("POST", "/v1/lease", {"queues": ["other"]},
                                      token=self.qworker)[0], 403)

    def test_a_tenant_token_submits_for_its_own_tenant_only(self):
        r = self.srv.submit(token=self.acme, queue="iso")
        self.assertEqual(self.srv.job(r["id"], token=self.admin)["tenant"], "acme")
        status, body = self.srv.req("POST", "/v1/jobs", {"tenant": "other", "queue": "iso",
                                                         "type": "T"}, self.acme)
        self.assertEqual(status, 403)

    def test_another_tenants_job_is_404_everywhere_and_leaks_nothing(self):
        theirs = self.srv.submit(token=self.other, queue="iso2", args={"secret": "s3cr3t"})
        tid = theirs["id"]
        leased_other = self.srv.submit(token=self.other, queue="iso3")
        lj = self.srv.lease(["iso3"], token=self.worker)[0]
        self.assertEqual(lj["id"], leased_other["id"])
        dead = self.srv.submit(token=self.other, queue="iso4")
        dj = self.srv.lease(["iso4"], token=self.worker)[0]
        self.srv.fail(dj, token=self.worker, retry=False)
        checks = [("GET", "/v1/jobs/%d" % tid, None),
                  ("GET", "/v1/jobs/%d/wait?timeout_ms=10" % tid, None),
                  ("POST", "/v1/jobs/%d/cancel" % tid, None),
                  ("POST", "/v1/jobs/%d/cancel" % lj["id"], None),
                  ("POST", "/v1/morgue/%d/requeue" % dead["id"], None),
                  ("DELETE", "/v1/morgue/%d" % dead["id"], None),
                  ("GET", "/v1/tenants/other", None)]
        for method, path, body in checks:
            status, res = self.srv.req(method, path, body, token=self.acme)
            self.assertEqual(status, 404, path)
            self.assertNotIn("s3cr3t", json.dumps(res))
            self.assertNotIn('"other"', json.dumps(res).replace('"tenant":"other"', "X"))
        # lists and stats show nothing of other
        for path in ["/v1/jobs", "/v1/jobs?limit=1000", "/v1/morgue", "/v1/stats",
                     "/v1/tenants", "/v1/queues", "/v1/lanes"]:
            status, res = self.srv.req("GET", path, token=self.acme)
            self.assertEqual(status, 200, path)
            text = json.dumps(res)
            self.assertNotIn("s3cr3t", text, path)
            self.assertNotIn('"other"', text, path)
        for path in ["/v1/jobs?tenant=other", "/v1/morgue?tenant=other"]:
            status, res = self.srv.req("GET", path, token=self.acme)
            self.assertEqual(status, 403, path)
            self.assertNotIn("s3cr3t", json.dumps(res))
        status, res = self.srv.req("POST", "/v1/morgue/requeue", {"tenant": "other"},
                                   token=self.acme)
        self.assertEqual(status, 403)
        # the admin still sees it all
        self.assertEqual(self.srv.job(tid, token=self.admin)["args"], {"secret": "s3cr3t"})

    def test_a_tenant_sees_only_its_own_queues_and_lanes(self):
        self.srv.submit(token=self.other, queue="globex-payroll", key="theirs")
        self.srv.submit(token=self.other, queue="globex-payroll", key="theirs")
        self.srv.submit(token=self.acme, queue="acme-mail", key="mine")
        names = [q["name"] for q in
                 self.srv.ok("GET", "/v1/queues", token=self.acme)["queues"]]
        self.assertIn("acme-mail", names)
        self.assertNotIn("globex-payroll", names)
        self.assertEqual(self.srv.req("GET", "/v1/queues/globex-payroll",
                                      token=self.acme)[0], 404)
        self.assertEqual(self.srv.ok("GET", "/v1/queues/acme-mail",
                                     token=self.acme)["name"], "acme-mail")
        # a token that names a queue may read it before it has jobs there
        named = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:acme",
                                                   "queues": ["globex-payroll"]},
                            self.admin)["token"]
        q = self.srv.ok("GET", "/v1/queues/globex-payroll", token=named)
        self.assertEqual(q["ready"], 0)  # its own jobs: none
        lanes = self.srv.ok("GET", "/v1/lanes", token=self.acme)
        self.assertEqual([l["key"] for l in lanes["lanes"]], ["mine"])
        self.assertEqual(lanes["lanes_total"], 1)
        everyone = self.srv.ok("GET", "/v1/lanes?limit=1000", token=self.admin)
        self.assertGreaterEqual(everyone["lanes_total"], 2)
        self.assertIn("theirs", [l["key"] for l in everyone["lanes"]])

    def test_whoami(self):
        me = self.srv.ok("GET", "/v1/whoami", token=self.acme)
        self.assertEqual((me["role"], me["tenant"], me["queues"]), ("tenant", "acme", None))
        self.assertTrue(me["auth"])
        w = self.srv.ok("GET", "/v1/whoami", token=self.qworker)
        self.assertEqual((w["role"], w["queues"]), ("worker", ["wq"]))
        self.assertNotIn("tenant", w)
        a = self.srv.ok("GET", "/v1/whoami", token=self.admin)
        self.assertEqual(a["role"], "admin")
        self.assertEqual(self.srv.req("GET", "/v1/whoami")[0], 401)
        self.assertEqual(self.srv.req("GET", "/v1/whoami", token="nope")[0], 401)

    def test_revoked_token_stops_at_once(self):
        t = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:gone"}, self.admin)
        self.assertEqual(self.srv.req("GET", "/v1/stats", token=t["token"])[0], 200)
        self.srv.ok("DELETE", "/v1/tokens/%d" % t["id"], token=self.admin)
        self.assertEqual(self.srv.req("GET", "/v1/stats", token=t["token"])[0], 401)
        listed = self.srv.ok("GET", "/v1/tokens", token=self.admin)["tokens"]
        self.assertNotIn(t["id"], [x["id"] for x in listed])
        self.assertTrue(all("token" not in x for x in listed))
        self.assertEqual(self.srv.req("DELETE", "/v1/tokens/%d" % t["id"],
                                      token=self.admin)[0], 404)
        for bad in [{"role": "god"}, {"role": "tenant:bad name"}, {"role": "worker", "queues": []},
                    {}]:
            self.assertEqual(self.srv.req("POST", "/v1/tokens", bad, self.admin)[0], 400)

    def test_tokens_are_stored_hashed(self):
        t = self.srv.ok("POST", "/v1/tokens", {"role": "worker"}, self.admin)
        if self.srv.store_url.startswith("sqlite:"):
            with open(self.srv.store_url[7:], "rb") as f:
                data = f.read()
            for suffix in ["-wal", ""]:
                try:
                    with open(self.srv.store_url[7:] + suffix, "rb") as f:
                        data += f.read()
                except OSError:
                    pass
            self.assertNotIn(t["token"].encode(), data)
        else:
            out = subprocess.run(["psql", self.srv.store_url, "-Atc",
                                  "select hash from tenq.tokens"], capture_output=True, text=True)
            self.assertNotIn(t["token"], out.stdout)
            self.assertEqual(len(out.stdout.split()[0]), 64)

    def test_tokens_survive_a_restart(self):
        t = self.srv.ok("POST", "/v1/tokens", {"role": "tenant:persist"}, self.admin)
        self.srv.stop()
        self.srv.start()
        self.assertEqual(self.srv.req("GET", "/v1/stats", token=t["token"])[0], 200)


class Protocol(ServerTest):
    server_args = ("--header-timeout", "1500ms", "--body-timeout", "1500ms",
                   "--idle-timeout", "2s", "--max-connections", "12",
                   "--max-header-bytes", "4KiB", "--max-headers", "20",
                   "--max-batch-bytes", "64KiB", "--max-job-bytes", "8KiB")

    def test_a_body_that_never_completes_times_out(self):
        t0 = time.time()
        out = raw_socket(self.srv.port, b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"te",
                         read_timeout=6)
        self.assertTrue(out.startswith(b"HTTP/1.1 408"), out[:80])
        self.assertLess(time.time() - t0, 5)

    def test_idle_connections_are_closed(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=6)
        t0 = time.time()
        self.assertEqual(s.recv(100), b"")  # closed by the server, nothing sent
        self.assertGreater(time.time() - t0, 1.5)
        self.assertLess(time.time() - t0, 5)
        s.close()

    def test_connections_beyond_the_cap_are_refused_politely(self):
        held = [socket.create_connection(("127.0.0.1", self.srv.port)) for _ in range(14)]
        try:
            time.sleep(0.2)
            last = held[-1]
            last.settimeout(2)
            data = last.recv(200)
            self.assertTrue(data.startswith(b"HTTP/1.1 503"), data)
        finally:
            for h in held:
                h.close()
        time.sleep(0.2)
        self.assertEqual(self.srv.req("GET", "/healthz", conn="after")[0], 200)

    def test_oversized_body_is_413(self):
        status, body = self.srv.req("POST", "/v1/jobs",
                                    b'{"jobs":[' + b'{"a":1},' * 20000 + b'{}]}')
        self.assertEqual(status, 413)

    def test_oversized_and_too_many_headers_are_431(self):
        out = raw_socket(self.srv.port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 5000 +
                         b"\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 431"), out[:80])
        hdrs = b"".join(b"X-%d: y\r\n" % i for i in range(25))
        out = raw_socket(self.srv.port, b"GET /healthz HTTP/1.1\r\n" + hdrs + b"\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 431"), out[:80])

    def test_smuggling_shapes_are_refused_and_the_connection_closed(self):
        both = (b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 4\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n")
        out = raw_socket(self.srv.port, both)
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:80])
        self.assertEqual(out.count(b"HTTP/1.1 "), 1)  # nothing after: closed
        self.assertIn(b"Connection: close", out)
        two = (b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\n"
               b"{}{}{")
        out = raw_socket(self.srv.port, two)
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:80])
        self.assertEqual(out.count(b"HTTP/1.1 "), 1)
        folded = b"GET /healthz HTTP/1.1\r\nX-A: 1\r\n continued\r\n\r\n"
        self.assertTrue(raw_socket(self.srv.port, folded).startswith(b"HTTP/1.1 400"))
        te = b"POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        self.assertTrue(raw_socket(self.srv.port, te).startswith(b"HTTP/1.1 501"))

    def test_bad_request_lines(self):
        for line, code in [(b"GARBAGE\r\n\r\n", b"400"), (b"GET / HTTP/2.0\r\n\r\n", b"505"),
                           (b"GET nopath HTTP/1.1\r\n\r\n", b"400"),
                           (b"G@T / HTTP/1.1\r\n\r\n", b"400")]:
            out = raw_socket(self.srv.port, line)
            self.assertTrue(out.startswith(b"HTTP/1.1 " + code), (line, out[:60]))

    def test_chunked_bodies_expect_continue_and_pipelining(self):
        body = json.dumps({"tenant": "acme", "queue": "pr", "type": "T"}).encode()
        chunked = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   b"%x\r\n" % 10 + body[:10] + b"\r\n" + b"%x\r\n" % (len(body) - 10) +
                   body[10:] + b"\r\n0\r\n\r\n")
        pipelined = chunked + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        out = raw_socket(self.srv.port, pipelined)
        self.assertTrue(out.startswith(b"HTTP/1.1 201"), out[:80])
        self.assertIn(b"HTTP/1.1 200", out[12:])  # the second answer, in order
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=5)
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                  b"Expect: 100-continue\r\n\r\n" % len(body))
        self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 100 Continue"))
        s.sendall(body)
        self.assertTrue(s.recv(1000).startswith(b"HTTP/1.1 201"))
        s.close()

    def test_a_slow_client_is_closed_while_others_are_served(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
        closed_at = None
        t0 = time.time()
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        for i, byte in enumerate(request):
            try:
                s.send(bytes([byte]))
            except OSError:
                closed_at = time.time() - t0
                break
            # meanwhile another client is served at once
            if i == 2:
                t1 = time.time()
                self.assertEqual(self.srv.req("GET", "/healthz", conn="fast")[0], 200)
                self.assertLess(time.time() - t1, 0.5)
            s.settimeout(0.25)
            try:
                data = s.recv(1000)
                if data == b"" or data.startswith(b"HTTP/1.1 408"):
                    closed_at = time.time() - t0
                    break
            except socket.timeout:
                pass
        s.close()
        self.assertIsNotNone(closed_at, "the slow client was never closed")
        self.assertLess(closed_at, 5)

    def test_idle_keep_alive_connections_survive_between_requests(self):
        for _ in range(3):
            self.assertEqual(self.srv.req("GET", "/healthz", conn="ka")[0], 200)


def split_answers(data):
    """HTTP/1.1 answers one after another in data (each with a
    Content-Length): [(status, body bytes)], and the bytes left over."""
    out = []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        head = data[:end].decode()
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if len(data) < end + 4 + length:
            break
        out.append((int(head.split(" ")[1]), data[end + 4:end + 4 + length]))
        data = data[end + 4 + length:]
    return out, data


class ConnectionIO(ServerTest):
    """The server's own reads and writes: a body far larger than its read
    buffer arriving in pieces, pipelining past that buffer, a reply the
    client reads late, and one it never reads."""
    server_args = ("--write-timeout", "1500ms")
    PAD = "x" * 8000

    def batch(self, queue, n=1000):
        return {"jobs": [{"tenant": "acme", "queue": queue, "type": "T",
                          "args": {"pad": self.PAD, "i": i}} for i in range(n)]}

    def connections(self):
        _, text = self.srv.req("GET", "/metrics")
        return int(text.split("\ntenq_http_connections ")[1].split()[0])

    def test_a_large_body_in_pieces_then_a_pipelined_request(self):
        body = json.dumps(self.batch("io-big")).encode()  # about 8 MB
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=30)
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body[:100])
        cuts = [100, 5000, 70000, 3000000, 6000000, len(body) - 7]
        for a, b in zip(cuts, cuts[1:]):
            time.sleep(0.05)
            s.sendall(body[a:b])
        s.sendall(body[-7:] + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers, rest = split_answers(read_until_closed(s))
        s.close()
        self.assertEqual([a[0] for a in answers], [201, 200], answers[:1])
        self.assertEqual(rest, b"")
        ids = [j["id"] for j in json.loads(answers[0][1])["jobs"]]
        self.assertEqual(len(set(ids)), 1000)
        page = self.srv.ok("GET", "/v1/jobs?queue=io-big&limit=1000")["jobs"]
        self.assertEqual(sorted(j["args"]["i"] for j in page), list(range(1000)))
        self.assertTrue(all(j["args"]["pad"] == self.PAD for j in page))

    def test_pipelined_requests_past_the_read_buffer_are_answered_in_order(self):
        # 4,000 requests in one send: about 130 KB, past the 80 KiB the server
        # buffers while a request is handled
        reqs, want = [], []
        for i in range(4000):
            path = b"/nope" if i % 3 == 2 else b"/healthz"
            reqs.append(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            want.append(404 if i % 3 == 2 else 200)
        reqs.append(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        want.append(200)
        answers, rest = split_answers(raw_socket(self.srv.port, b"".join(reqs), read_timeout=20))
        self.assertEqual([a[0] for a in answers], want)
        self.assertEqual(rest, b"")

    def late_reader(self, queue):
        self.srv.ok("POST", "/v1/jobs", self.batch(queue))
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", self.srv.port))
        s.sendall(b"GET /v1/jobs?queue=" + queue.encode() + b"&limit=1000 HTTP/1.1\r\n"
                  b"Host: x\r\nConnection: close\r\n\r\n")
        return s

    def test_a_reply_read_late_arrives_whole_and_others_are_served_meanwhile(self):
        s = self.late_reader("io-late")
        time.sleep(0.8)  # the 8 MB page waits in the server for the socket
        t0 = time.time()
        self.assertEqual(self.srv.req("GET", "/healthz", conn="other")[0], 200)
        self.assertLess(time.time() - t0, 0.5)
        answers, rest = split_answers(read_until_closed(s))
        s.close()
        self.assertEqual(len(answers), 1)
        self.assertEqual(answers[0][0], 200)
        self.assertEqual(rest, b"")
        self.assertEqual(len(json.loads(answers[0][1])["jobs"]), 1000)

    def test_a_reply_nobody_reads_is_dropped_after_the_write_timeout(self):
        base = self.connections()
        s = self.late_reader("io-never")
        time.sleep(0.3)
        self.assertEqual(self.connections(), base + 1)
        deadline = time.time() + 6
        while self.connections() > base and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.connections(), base)  # gone after 1.5 s without progress
        got = read_until_closed(s)
        s.close()
        answers, _ = split_answers(got)
        self.assertEqual(answers, [])  # cut short: never a whole answer
        self.assertTrue(got.startswith(b"HTTP/1.1 200"), got[:40])


class Lifecycle(unittest.TestCase):
    def test_sigterm_stops_cleanly_and_data_survives(self):
        srv = Server()
        try:
            r = srv.submit(queue="life")
            self.assertEqual(srv.stop(), 0)
            srv.start()
            self.assertEqual(srv.job(r["id"])["state"], "ready")
        finally:
            srv.cleanup()

    def test_a_stopping_server_answers_what_arrives_on_open_connections(self):
        # A client that sent a request on a kept-alive connection just as the
        # server stopped gets an answer that says nothing was done (and the
        # connection closed), not a reset that leaves it guessing.
        srv = Server()
        try:
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            c.request("GET", "/healthz")
            self.assertEqual(c.getresponse().read() and 200, 200)
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)  # the stop is under way: its work is done, its leadership given up
            c.request("POST", "/v1/jobs", json.dumps({"tenant": "acme", "queue": "linger",
                                                     "type": "T"}),
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            body = json.loads(r.read())
            self.assertEqual(r.status, 503, body)
            self.assertEqual(body["error"]["code"], "not_leader")
            self.assertEqual(r.getheader("Connection"), "close")
            self.assertEqual(srv.proc.wait(10), 0)
            srv.start()
            self.assertEqual(srv.ok("GET", "/v1/jobs?queue=linger")["jobs"], [])
        finally:
            srv.cleanup()

    def test_refuses_an_open_network_without_tokens(self):
        tmp = tempfile.mkdtemp()
        from harness import BIN
        p = subprocess.run([BIN, "serve", "--listen", "0.0.0.0:0", "--store",
                            "sqlite:%s/t.db" % tmp], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("TENQ_ADMIN_TOKEN", p.stderr)

    def test_help_lists_every_setting_and_bad_flags_fail(self):
        from harness import BIN
        p = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        for word in ["--listen", "--store", "TENQ_ADMIN_TOKEN", "--max-batch-bytes",
                     "--header-timeout"]:
            self.assertIn(word, p.stdout)
        p = subprocess.run([BIN, "serve", "--no-such-flag"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        p = subprocess.run([BIN, "serve", "--header-timeout", "soon"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("duration", p.stderr)

    def test_settings_from_a_config_file_and_the_environment(self):
        tmp = tempfile.mkdtemp()
        conf = os.path.join(tmp, "tenq.conf")
        with open(conf, "w") as f:
            f.write("# comment\nmax-wait = 1s\nlog-format = json\n")
        srv = Server(args=("--config", conf), env={"TENQ_DEFAULT_SLOTS": "3"})
        try:
            srv.submit(queue="cfg", tenant="newbie")
            self.assertEqual(srv.ok("GET", "/v1/tenants/newbie")["slots"], 3)
            t0 = time.time()
            srv.lease(["empty"], wait_ms=30000)  # capped at 1 s by the file
            self.assertLess(time.time() - t0, 5)
            self.assertIn('"event":"listen"', srv.log_text())
        finally:
            srv.cleanup()

    def test_wall_clock_jumps_neither_expire_leases_nor_fire_schedules_early(self):
        tmp = tempfile.mkdtemp()
        stamp = os.path.join(tmp, "faketime")
        with open(stamp, "w") as f:
            f.write("+0\n")
        lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        if not os.path.exists(lib):
            self.fail("libfaketime is missing (apt-get install faketime)")
        env = {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": stamp, "FAKETIME_NO_CACHE": "1",
               "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_DONT_RESET": "1",
               # under ASan the preloaded library comes first; that is fine here
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        srv = Server(env=env, tmp=tmp)
        try:
            srv.ok("PUT", "/v1/queues/clock", {"lease_ms": 3000})
            srv.submit(queue="clock")
            later = srv.submit(queue="clock", run_at=int(time.time() * 1000) + 3600 * 1000)
            j = srv.lease(["clock"])[0]
            with open(stamp, "w") as f:
                f.write("+2h\n")  # the wall clock leaps two hours ahead
            time.sleep(1.0)
            hb = srv.req("POST", "/v1/jobs/%d/heartbeat" % j["id"], {"token": j["token"]})
            self.assertEqual(hb[0], 200, hb)
            self.assertEqual(srv.job(later["id"])["state"], "scheduled")
            srv.ack(j)
        finally:
            srv.cleanup()


class DataDir(unittest.TestCase):
    """--data-dir: where the embedded store lives when --store names none."""
    NO_DIR_ENV = {"TENQ_DATA_DIR": None, "STATE_DIRECTORY": None, "TENQ_STORE": None}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tenq-datadir-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def serve(self, args=(), env=None):
        """A server with no --store, run from self.tmp."""
        e = dict(self.NO_DIR_ENV)
        e.update(env or {})
        run = tempfile.mkdtemp(prefix="run-", dir=self.tmp)  # its port file and log
        srv = Server(store_url="", args=args, env=e, cwd=self.tmp, tmp=run)
        self.addCleanup(srv.cleanup)
        return srv

    def refused(self, *args, env=None):
        from harness import BIN
        e = {k: v for k, v in os.environ.items() if k not in self.NO_DIR_ENV}
        e.update(env or {})
        p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0"] + list(args), cwd=self.tmp,
                           env=e, capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        return p.stderr

    def test_default_is_tenq_data_under_the_working_directory(self):
        srv = self.serve()
        where = os.path.join(self.tmp, "tenq-data")
        self.assertIn("data-dir=%s\n" % where, srv.log_text())
        self.assertTrue(os.path.exists(os.path.join(where, "tenq.db")))
        self.assertEqual(os.stat(where).st_mode & 0o777, 0o700)
        job = srv.submit(queue="dd")
        self.assertEqual(srv.stop(), 0)
        srv.start()  # the same folder again: the job is there
        self.assertEqual(srv.job(job["id"])["state"], "ready")
        self.assertEqual([n for n in os.listdir(where) if n.startswith(".tenq-write-test")], [])

    def test_flag_environment_and_systemd_state_directory(self):
        # a relative folder is made under the working directory and logged absolute
        srv = self.serve(args=("--data-dir", "a/b"))
        self.assertIn("data-dir=%s/a/b\n" % self.tmp, srv.log_text())
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "a/b/tenq.db")))
        srv.cleanup()
        # STATE_DIRECTORY (systemd's StateDirectory=; the first of several) is the fallback
        state = os.path.join(self.tmp, "state")
        srv = self.serve(env={"STATE_DIRECTORY": state + ":" + self.tmp + "/other"})
        self.assertIn("data-dir=%s\n" % state, srv.log_text())
        self.assertTrue(os.path.exists(os.path.join(state, "tenq.db")))
        self.assertFalse(os.path.exists(self.tmp + "/other"))
        srv.cleanup()
        # TENQ_DATA_DIR beats STATE_DIRECTORY, and the flag beats both
        srv = self.serve(env={"STATE_DIRECTORY": state, "TENQ_DATA_DIR": self.tmp + "/env"})
        self.assertIn("data-dir=%s/env\n" % self.tmp, srv.log_text())
        srv.cleanup()
        srv = self.serve(args=("--data-dir", self.tmp + "/flag"),
                         env={"STATE_DIRECTORY": state, "TENQ_DATA_DIR": self.tmp + "/env"})
        self.assertIn("data-dir=%s/flag\n" % self.tmp, srv.log_text())
        self.assertTrue(os.path.exists(self.tmp + "/flag/tenq.db"))
        self.assertFalse(os.path.exists(self.tmp + "/tenq-data"))

    def test_store_wins_and_the_data_dir_is_left_alone(self):
        db = os.path.join(self.tmp, "elsewhere.db")
        srv = self.serve(args=("--store", "sqlite:" + db, "--data-dir", self.tmp + "/unused"))
        self.assertTrue(os.path.exists(db))
        self.assertFalse(os.path.exists(self.tmp + "/unused"))
        self.assertNotIn("data-dir=", srv.log_text())

    def test_a_folder_that_cannot_be_made_or_written_is_refused(self):
        path = os.path.join(self.tmp, "a-file")
        open(path, "w").close()
        err = self.refused("--data-dir", path)
        self.assertIn("--data-dir %s: cannot create the folder: Not a directory" % path, err)
        err = self.refused("--data-dir", path + "/below")
        self.assertIn("cannot create the folder", err)
        err = self.refused(env={"TENQ_DATA_DIR": path})
        self.assertIn("Not a directory", err)
        err = self.refused(env={"STATE_DIRECTORY": path})
        self.assertIn("STATE_DIRECTORY %s" % path, err)
        # a folder this user may not write in (root may write anywhere: run as nobody)
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro, 0o555)
        wrap = []
        if os.geteuid() == 0:
            os.chmod(self.tmp, 0o755)
            wrap = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        from harness import BIN
        p = subprocess.run(wrap + [BIN, "serve", "--data-dir", ro], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--data-dir %s: cannot write in the folder: Permission denied" % ro,
                      p.stderr)
        self.assertEqual(os.listdir(ro), [])


class WriterPriority(unittest.TestCase):
    """The thread that commits waits and commits at idle priority while the
    server is quiet (--writer-priority auto), at normal priority when work
    comes faster, and gets normal priority back when busy CPUs starve it."""

    @staticmethod
    def writer_policy(srv):
        for tid in os.listdir("/proc/%d/task" % srv.proc.pid):
            with open("/proc/%d/task/%s/comm" % (srv.proc.pid, tid)) as f:
                if f.read().strip() == "tenq-writer":
                    return os.sched_getscheduler(int(tid))
        raise AssertionError("no tenq-writer thread")

    @staticmethod
    def metric(srv, name):
        status, text = srv.req("GET", "/metrics")
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError("no metric " + name)

    def quiet_until_idle(self, srv, queue):
        for _ in range(100):
            srv.submit(queue=queue)
            time.sleep(0.01)
            if self.writer_policy(srv) == os.SCHED_IDLE:
                return
        self.fail("the writer of a quiet server never went to idle priority: " +
                  srv.log_text())

    def test_quiet_at_idle_priority_busy_at_normal_and_back(self):
        if os.geteuid() != 0:
            self.fail("run as root (CI does): the test needs CAP_SYS_NICE")
        srv = Server()
        try:
            self.assertIn("writer=idle-when-quiet", srv.log_text())
            self.quiet_until_idle(srv, "wp")
            self.assertEqual(self.metric(srv, "tenq_store_writer_idle"), 1)
            # four submitters at once: batches queue up, the writer runs at
            # normal priority while they last
            seen, stop = set(), threading.Event()

            def submitter(k):
                job = {"tenant": "acme", "queue": "wp", "type": "T"}
                while not stop.is_set():
                    srv.ok("POST", "/v1/jobs", job, conn="submitter%d" % k)
            threads = [threading.Thread(target=submitter, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            deadline = time.time() + 20
            while time.time() < deadline and os.SCHED_OTHER not in seen:
                seen.add(self.writer_policy(srv))
                time.sleep(0.002)
            stop.set()
            for t in threads:
                t.join()
            self.assertIn(os.SCHED_OTHER, seen, "the writer stayed at idle priority under load")
            # and back once quiet again (the watchdog may have raised it
            # meanwhile: the submitters alone can keep both CPUs busy)
            self.quiet_until_idle(srv, "wp")
        finally:
            srv.cleanup()

    def test_a_writer_starved_by_busy_cpus_gets_normal_priority_back(self):
        if os.geteuid() != 0:
            self.fail("run as root (CI does): the test needs CAP_SYS_NICE")
        srv = Server()
        spinners = []
        try:
            self.quiet_until_idle(srv, "starve")
            # two busy processes per CPU at normal priority: a thread at idle
            # priority gets next to nothing of a CPU
            for _ in range(2 * os.cpu_count()):
                spinners.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
            time.sleep(0.2)
            took = []
            for _ in range(30):
                t0 = time.monotonic()
                srv.submit(queue="starve")
                took.append(time.monotonic() - t0)
                time.sleep(0.03)
            took.sort()
            # measured here: at most 16 ms with the watchdog; without it
            # the slowest tenth took 0.5-1.2 s
            self.assertLess(took[len(took) // 2], 0.05, took)
            self.assertLess(took[int(len(took) * 0.9)], 0.1, took)
            self.assertLess(took[-1], 0.3, took)
            self.assertGreaterEqual(self.metric(srv, "tenq_store_writer_raised_total"), 1)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
            srv.cleanup()

    def stays_normal(self, srv, log_says):
        try:
            for _ in range(30):
                srv.submit(queue="wn")
                time.sleep(0.005)
            self.assertEqual(self.writer_policy(srv), os.SCHED_OTHER)
            self.assertIn(log_says, srv.log_text())
        finally:
            srv.cleanup()

    def test_normal_priority_when_asked_or_when_it_could_not_be_undone(self):
        self.stays_normal(Server(args=["--writer-priority", "normal"]), "writer=normal")
        if STORE != "sqlite" or os.geteuid() != 0:
            return
        # without CAP_SYS_NICE (and RLIMIT_NICE 0) a thread cannot come back
        # from idle priority, so the writer never goes there
        tmp = tempfile.mkdtemp()
        os.chmod(tmp, 0o777)
        try:
            self.stays_normal(
                Server(tmp=tmp, wrap=["setpriv", "--reuid=nobody", "--regid=nogroup",
                                      "--clear-groups", "--inh-caps=-all",
                                      "--bounding-set=-all"]),
                "idle priority needs CAP_SYS_NICE")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_words_outside_a_settings_choices_are_refused(self):
        from harness import BIN
        tmp = tempfile.mkdtemp()
        try:
            for args, env, says in [
                    (["--sqlite-sync", "fuul"], {}, ["expected one of full|normal"]),
                    (["--writer-priority", "high"], {}, ["expected one of auto|normal"]),
                    ([], {"TENQ_LOG_LEVEL": "verbose"}, ["expected one of debug|info|warn|error"]),
                    (["--log-format", "xml"], {}, ["expected one of text|json"]),
                    (["--idle-yield=sometimes"], {}, ["idle-yield", "expected true or false"])]:
                p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--store",
                                    "sqlite:%s/t.db" % tmp] + args, capture_output=True,
                                   text=True, timeout=30, env=dict(os.environ, **env))
                self.assertEqual(p.returncode, 2, p.stderr)
                for text in says:
                    self.assertIn(text, p.stderr)
            self.assertEqual(os.listdir(tmp), [])  # nothing was made
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class IdleYield(unittest.TestCase):
    """A request that wakes an idle server yields the CPU once before its
    handler and once after the long poll it woke is answered (--idle-yield,
    on by default); a yield that finds the CPU busy stops them for a second."""

    metric = staticmethod(WriterPriority.metric)

    def pickups(self, srv, queue, n, gap):
        """n jobs submitted gap seconds apart to a worker that long-polls;
        the time from each submit to its job in the worker's hands."""
        took, got = [], threading.Event()

        def worker():
            for _ in range(n):
                jobs = srv.lease([queue], wait_ms=5000, conn="worker")
                self.assertEqual(len(jobs), 1)
                took.append(time.monotonic() - sent[0])
                srv.ok("POST", "/v1/jobs/%d/ack" % jobs[0]["id"], {"token": jobs[0]["token"]},
                       conn="worker")
                got.set()
        sent = [0.0]
        t = threading.Thread(target=worker)
        t.start()
        try:
            for _ in range(n):
                time.sleep(gap)  # the worker's long poll is waiting again
                got.clear()
                sent[0] = time.monotonic()
                srv.submit(queue=queue)
                self.assertTrue(got.wait(10), "a job was not picked up")
        finally:
            t.join(30)
        return sorted(took)

    def test_a_pickup_on_an_idle_server_yields_before_and_after(self):
        srv = Server()
        try:
            # each pickup yields twice (before the submit's handler, after
            # the woken lease's answer); a yield the host slows down pauses
            # them for a second, so this goes on until enough were seen
            deadline = time.monotonic() + 20
            yields = 0
            while yields < 20 and time.monotonic() < deadline:
                self.pickups(srv, "iy", 10, 0.02)
                yields = self.metric(srv, "tenq_http_idle_yields_total")
            self.assertGreaterEqual(yields, 20, srv.log_text())
        finally:
            srv.cleanup()

    def test_no_yields_when_turned_off(self):
        srv = Server(args=["--idle-yield=false"])
        try:
            self.pickups(srv, "iyoff", 5, 0.02)
            self.assertEqual(self.metric(srv, "tenq_http_idle_yields_total"), 0)
        finally:
            srv.cleanup()

    def test_busy_cpus_stop_the_yields(self):
        srv = Server()
        spinners = []
        try:
            for _ in range(2 * os.cpu_count()):
                spinners.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
            time.sleep(0.2)
            took = self.pickups(srv, "iybusy", 20, 0.02)
            yields = self.metric(srv, "tenq_http_idle_yields_total")
            slow = self.metric(srv, "tenq_http_idle_yields_slow_total")
            self.assertGreaterEqual(slow, 1, "no yield found the spinning CPUs busy")
            # a slow yield stops them for a second: the 20 pickups take under
            # two seconds, so few yields follow (without the pause every one
            # of them yields twice, 40 and more)
            self.assertLess(yields, 20, (yields, slow))
            self.assertLess(took[len(took) // 2], 0.05, took)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
            srv.cleanup()


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
            time.sleep(0.6)  # the ready row is written 100 ms on
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
            # (sooner if their job ends); this one must be older than that
            time.sleep(0.5)
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
