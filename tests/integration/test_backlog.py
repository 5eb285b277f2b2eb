# SPDX-License-Identifier: Apache-2.0
"""A backlog past the args budget (--args-memory): jobs whose args are out of
memory drain completely, in order, with their args; reads show them; a kill
-9 in the middle loses nothing and hands nothing out twice. Real servers,
real sockets, either store (TENQ_TEST_STORE)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import ServerTest, main, metric  # noqa: E402

PAD = "a" * 1000  # 1 KB of args a job: 64 KiB of budget holds ~48 inline


class Backlog(ServerTest):
    server_args = ["--args-memory", "64KiB"]

    def submit_many(self, n, queue, tenant="acme", start=0, **extra):
        ids = []
        for k in range(start, start + n, 500):
            jobs = [dict(tenant=tenant, queue=queue, type="T",
                         args={"i": i, "pad": PAD}, **extra)
                    for i in range(k, min(start + n, k + 500))]
            out = self.srv.ok("POST", "/v1/jobs", {"jobs": jobs})
            ids += [j["id"] for j in out["jobs"]]
        return ids

    def drain(self, queue, max=100, fail_first=False):
        """Leases until nothing is left; returns (id, args["i"]) in lease order."""
        got = []
        while True:
            jobs = self.srv.lease([queue], max=max)
            if not jobs:
                return got
            outs = []
            for j in jobs:
                self.assertEqual(j["args"]["pad"], PAD, j["id"])
                got.append((j["id"], j["args"]["i"]))
                outs.append({"id": j["id"], "token": j["token"], "ok": True})
            res = self.srv.ok("POST", "/v1/outcomes", {"outcomes": outs})["results"]
            self.assertTrue(all(r["state"] == "succeeded" for r in res), res)

    def test_a_backlog_many_times_the_budget_drains_with_every_jobs_args(self):
        ids = self.submit_many(3000, "bl-drain")  # ~3 MB of args, 64 KiB kept
        m = self.srv.ok("GET", "/metrics")
        self.assertGreater(metric(m, "tenq_args_spilled_jobs"), 2500)
        self.assertLessEqual(metric(m, "tenq_args_inline_bytes") +
                             metric(m, "tenq_args_cache_bytes"), 64 * 1024)
        got = self.drain("bl-drain")
        self.assertEqual([g[0] for g in got], ids)  # fifo: submission order
        self.assertEqual([g[1] for g in got], list(range(3000)))  # each with its own args
        m = self.srv.ok("GET", "/metrics")
        self.assertEqual(metric(m, "tenq_args_spilled_jobs"), 0)
        self.assertGreater(metric(m, "tenq_args_reads_ahead_total"), 0)
        self.assertGreater(metric(m, "tenq_args_leased_spilled_total"), 2500)

    def test_lanes_and_priorities_keep_their_order_out_of_memory(self):
        jobs = []
        for i in range(600):  # three lanes, interleaved, and a few urgent keyless jobs
            j = dict(tenant="acme", queue="bl-lanes", type="T", args={"i": i, "pad": PAD})
            if i % 50 == 49:
                j["priority"] = 5
            else:
                j["key"] = "lane-%d" % (i % 3)
            jobs.append(j)
        self.srv.ok("POST", "/v1/jobs", {"jobs": jobs})
        order = []
        while True:
            got = self.srv.lease(["bl-lanes"], max=3)
            if not got:
                break
            for j in got:
                self.assertEqual(j["args"]["pad"], PAD)
                order.append(j["args"]["i"])
                self.srv.ack(j)
        self.assertEqual(sorted(order), list(range(600)))
        urgent = [i for i in range(600) if i % 50 == 49]
        self.assertEqual(order[:len(urgent)], urgent)  # priority first, in id order
        for lane in range(3):
            seq = [i for i in order if i % 3 == lane and i % 50 != 49]
            self.assertEqual(seq, sorted(seq), "lane %d out of order" % lane)

    def test_reads_of_jobs_out_of_memory_show_their_args(self):
        ids = self.submit_many(400, "bl-read", start=10000)
        job = self.srv.job(ids[300])
        self.assertEqual(job["args"], {"i": 10300, "pad": PAD})
        page = self.srv.ok("GET", "/v1/jobs?queue=bl-read&limit=200")["jobs"]
        self.assertEqual(len(page), 200)
        for j in page:
            self.assertEqual(j["args"]["pad"], PAD)
        # dead jobs out of memory, listed from the morgue
        self.srv.ok("PUT", "/v1/queues/bl-dead", {"max_attempts": 1})
        dead = self.submit_many(300, "bl-dead", start=20000)
        while True:
            got = self.srv.lease(["bl-dead"], max=100)
            if not got:
                break
            self.srv.ok("POST", "/v1/outcomes", {"outcomes": [
                {"id": j["id"], "token": j["token"], "ok": False, "error": "no"} for j in got]})
        listed = []
        after = None
        while True:
            q = "/v1/morgue?queue=bl-dead&sort=id&limit=100" + ("&after=%s" % after if after else "")
            page = self.srv.ok("GET", q)
            listed += page["jobs"]
            after = page["next"]
            if not after:
                break
        self.assertEqual([j["id"] for j in listed], dead)
        self.assertEqual([j["args"]["i"] for j in listed], list(range(20000, 20300)))
        # and a requeued one runs again with its args
        self.srv.ok("POST", "/v1/morgue/%d/requeue" % dead[5])
        got = self.srv.lease(["bl-dead"])
        self.assertEqual(got[0]["args"], {"i": 20005, "pad": PAD})

    def test_a_kill_9_mid_drain_loses_nothing_and_hands_nothing_out_twice(self):
        ids = self.submit_many(2000, "bl-kill", start=30000)
        done, held = set(), []
        for _ in range(5):
            for j in self.srv.lease(["bl-kill"], max=100):
                self.srv.ack(j)
                done.add(j["id"])
        held = self.srv.lease(["bl-kill"], max=50)  # leased, not acked before the kill
        self.srv.kill()
        self.srv.start()
        while metric(self.srv.ok("GET", "/metrics"), "tenq_load_rest_active"):
            time.sleep(0.02)  # the jobs waiting in line come in behind the first lease
        m = self.srv.ok("GET", "/metrics")
        self.assertGreater(metric(m, "tenq_args_spilled_jobs"), 1000)  # the load spilled too
        for j in held:
            # a lease stored before the kill goes on (its ack counts); one not stored
            # yet was lost with it (its token is refused, the job runs again)
            status, _ = self.srv.req("POST", "/v1/jobs/%d/ack" % j["id"], {"token": j["token"]})
            self.assertIn(status, (200, 409))
            if status == 200:
                done.add(j["id"])
        rest = self.drain("bl-kill")
        again = [i for i, _ in rest if i in done]
        self.assertEqual(again, [])
        self.assertEqual(sorted(done | {i for i, _ in rest}), ids)
        for i, n in rest:
            self.assertEqual(n, 30000 + ids.index(i))



class ServeWhileLoading(ServerTest):
    """The plain jobs waiting in line load behind a serving leader, a page
    every 300 ms here (TENQ_TEST_LOAD_REST_DELAY_MS), so that requests meet
    the load under way."""
    server_env = {"TENQ_TEST_LOAD_REST_DELAY_MS": "300"}

    def fill(self, n, queue, tenants=7, **extra):
        ids = []
        for k in range(0, n, 5000):
            out = self.srv.ok("POST", "/v1/jobs", {"jobs": [
                dict(tenant="t%d" % (i % tenants), queue=queue, type="T", args={"i": i}, **extra)
                for i in range(k, min(n, k + 5000))]})
            ids += [j["id"] for j in out["jobs"]]
        return ids

    def loading(self):
        return metric(self.srv.ok("GET", "/metrics"), "tenq_load_rest_active") == 1

    def test_a_restart_serves_at_once_and_brings_the_line_in_behind(self):
        plain = self.fill(30000, "swl")
        lane = [self.srv.submit(queue="swl-lane", key="k", args={"n": n})["id"] for n in range(5)]
        first = self.srv.lease(["swl-lane"])[0]  # leased: loaded before serving
        self.srv.wait_stored("SELECT state FROM $Sjobs WHERE id = %d" % first["id"], "leased")
        self.srv.kill()
        self.srv.start()
        self.assertTrue(self.loading(), "the load ended before the first request")
        # the front of the line comes first, in order (long polls: pages come in)
        got = []
        while len(got) < 10:
            got += self.srv.lease(["swl"], max=10 - len(got), wait_ms=10000)
        self.assertEqual([j["id"] for j in got], plain[:10])
        # the lane's head is still leased, its next job waits behind it
        self.assertEqual(self.srv.lease(["swl-lane"]), [])
        self.srv.ack(first)
        self.assertEqual([j["id"] for j in self.srv.lease(["swl-lane"])], [lane[1]])
        # everything drains once, in fifo order
        order = [j["id"] for j in got]
        while True:
            page = self.srv.lease(["swl"], max=1000)
            if not page:
                if not self.loading():
                    break
                time.sleep(0.05)
                continue
            order += [j["id"] for j in page]
            self.srv.ok("POST", "/v1/outcomes", {"outcomes": [
                {"id": j["id"], "token": j["token"], "ok": True} for j in page]})
        self.assertEqual(order, plain)
        self.assertGreaterEqual(metric(self.srv.ok("GET", "/metrics"), "tenq_load_rest_jobs"), 29990)

    def test_a_child_of_a_job_not_loaded_yet_waits_for_the_load(self):
        plain = self.fill(20000, "swl-dep", tenants=1)
        self.srv.kill()
        self.srv.start()
        self.assertTrue(self.loading())
        child = self.srv.submit(queue="swl-dep-c", tenant="t0", depends_on=[plain[-1]])
        self.assertEqual(child["state"], "waiting")
        self.assertFalse(self.loading())  # it was answered once the load was done
        self.assertGreater(metric(self.srv.ok("GET", "/metrics"),
                                  "tenq_load_rest_parked_total"), 0)
        # a cancel of a job not in yet waits the same way
        self.srv.kill()
        self.srv.start()
        self.assertEqual(self.srv.ok("POST", "/v1/jobs/%d/cancel" % plain[-2])["state"],
                         "cancelled")

    def test_a_plain_job_that_becomes_a_parent_is_loaded_first(self):
        parent = self.srv.submit(queue="swl-p")["id"]
        child = self.srv.submit(queue="swl-pc", depends_on=[parent])["id"]
        self.srv.kill()  # the parent's row was plain until the child came
        self.srv.start()
        self.assertEqual(self.srv.job(child)["state"], "waiting")
        self.assertEqual(self.srv.lease(["swl-pc"]), [])
        got = self.srv.lease(["swl-p"])
        self.assertEqual([j["id"] for j in got], [parent])
        self.srv.ack(got[0])
        self.assertEqual([j["id"] for j in self.srv.lease(["swl-pc"])], [child])

    def test_pages_across_priorities_and_run_at_bring_each_job_once_in_fifo_order(self):
        # three priorities, each with ready jobs and scheduled ones whose run_at
        # falls as their ids rise: 12,000 jobs, three pages and some
        due = int(time.time() * 1000) + 4000
        expect = []
        for prio in (7, 0, -5):
            ready = self.fill(2000, "swl-fifo", tenants=3, priority=prio)
            later = []
            for k in range(0, 2000, 500):
                out = self.srv.ok("POST", "/v1/jobs", {"jobs": [
                    dict(tenant="t0", queue="swl-fifo", type="T", priority=prio,
                         run_at=due + 2000 - i, args={}) for i in range(k, k + 500)]})
                later += [j["id"] for j in out["jobs"]]
            expect.append((prio, ready, later[::-1]))
        plain = int(self.srv.stored("SELECT count(*) FROM $Sjobs WHERE live = 2"))
        self.assertGreaterEqual(plain, 12000)
        self.srv.kill()
        self.srv.start()
        while self.loading():
            time.sleep(0.05)
        self.assertEqual(metric(self.srv.ok("GET", "/metrics"), "tenq_load_rest_jobs"), plain)
        time.sleep(max(0, (due + 2000 - time.time() * 1000) / 1000) + 0.2)
        order = []
        while True:
            page = self.srv.lease(["swl-fifo"], max=1000)
            if not page:
                break
            order += [j["id"] for j in page]
            self.srv.ok("POST", "/v1/outcomes", {"outcomes": [
                {"id": j["id"], "token": j["token"], "ok": True} for j in page]})
        self.assertEqual(order, [i for _, ready, later in expect for i in ready + later])


if __name__ == "__main__":
    main()
