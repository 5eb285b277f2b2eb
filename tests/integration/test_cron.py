# SPDX-License-Identifier: Apache-2.0
"""Periodic jobs (schedules): one job per tick, time zones, the missed-tick
policies, bad input, tenant tokens, and every tick exactly once across a
SIGTERM, a kill -9 and (PostgreSQL) a takeover. Real servers, real sockets,
either store (TENQ_TEST_STORE)."""
import datetime
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import unittest
import zoneinfo

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from harness import STORE, Server, ServerTest, main  # noqa: E402


def job_spec(queue, **kw):
    j = {"tenant": "acme", "queue": queue, "type": "Tick"}
    j.update(kw)
    return j


def ticks_of(srv, queue, name, token=None):
    """The tick (ms) of every job schedule `name` made in `queue`, as made
    (sorted; a tick made twice shows twice)."""
    jobs = srv.ok("GET", "/v1/jobs?queue=%s&limit=1000" % queue, token=token)["jobs"]
    out = []
    for j in jobs:
        key = j.get("idempotency_key") or ""
        prefix = "cron:%s:" % name
        if key.startswith(prefix):
            out.append(int(key[len(prefix):]))
    return sorted(out)


def wait_ticks(srv, queue, name, n, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        t = ticks_of(srv, queue, name)
        if len(t) >= n:
            return t
        time.sleep(0.1)
    raise AssertionError("fewer than %d ticks of %s in %.0f s: %s\n%s" %
                         (n, name, timeout, ticks_of(srv, queue, name), srv.log_text()))


def wait_past(srv, queue, name, t, timeout=30):
    """The ticks once one after t (ms) is made."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = ticks_of(srv, queue, name)
        if got and got[-1] > t:
            return got
        time.sleep(0.1)
    raise AssertionError("no tick of %s after %d in %.0f s: %s\n%s" %
                         (name, t, timeout, ticks_of(srv, queue, name), srv.log_text()))


class Schedules(ServerTest):
    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.assert_clean()
        cls.srv.cleanup()

    def put(self, name, body, token=None, expect=(200, 201)):
        return self.srv.ok("PUT", "/v1/schedules/" + name, body, token, expect=expect)

    def test_every_second_makes_one_job_per_tick(self):
        s = self.put("every1", {"cron": "@every 1s", "job": job_spec("c-every", args={"n": 1})})
        self.assertEqual(s["next_tick"] % 1000, 0)
        self.assertEqual([b - a for a, b in zip(s["next_runs"], s["next_runs"][1:])], [1000] * 4)
        ticks = wait_ticks(self.srv, "c-every", "every1", 3)
        self.assertEqual(ticks, list(range(ticks[0], ticks[0] + 1000 * len(ticks), 1000)))
        self.assertEqual(ticks[0], s["next_tick"])
        jobs = self.srv.ok("GET", "/v1/jobs?queue=c-every")["jobs"]
        self.assertEqual({(j["tenant"], j["type"], str(j["args"])) for j in jobs},
                         {("acme", "Tick", "{'n': 1}")})
        got = self.srv.ok("GET", "/v1/schedules/every1")
        self.assertGreaterEqual(got["last_tick"], ticks[-1])
        self.assertGreater(got["next_tick"], got["last_tick"])
        self.assertEqual(len(got["next_runs"]), 5)
        metrics = self.srv.ok("GET", "/metrics")
        self.assertRegex(metrics, r"(?m)^tenq_schedules [1-9]")
        made = int(re.search(r"(?m)^tenq_schedule_ticks_total (\d+)$", metrics).group(1))
        self.assertGreaterEqual(made, len(ticks))
        self.srv.ok("DELETE", "/v1/schedules/every1")
        self.assertEqual(self.srv.req("GET", "/v1/schedules/every1")[0], 404)
        n = len(ticks_of(self.srv, "c-every", "every1"))
        time.sleep(1.5)
        self.assertEqual(len(ticks_of(self.srv, "c-every", "every1")), n)

    def test_next_runs_are_wall_times_in_the_schedules_zone(self):
        s = self.put("berlin", {"cron": "30 2 * * *", "timezone": "Europe/Berlin",
                                "job": job_spec("c-zone")})
        self.assertEqual(s["timezone"], "Europe/Berlin")
        tz = zoneinfo.ZoneInfo("Europe/Berlin")
        days = []
        for ms in s["next_runs"]:
            t = datetime.datetime.fromtimestamp(ms / 1000, tz)
            if t.utcoffset() == (t - datetime.timedelta(seconds=1)).utcoffset():
                self.assertEqual((t.hour, t.minute, t.second), (2, 30, 0))
            days.append(t.date())
        self.assertEqual([(b - a).days for a, b in zip(days, days[1:])], [1] * 4)
        ny = self.put("ny", {"cron": "0 9 * * MON-FRI", "timezone": "America/New_York",
                             "job": job_spec("c-zone")})
        for ms in ny["next_runs"]:
            t = datetime.datetime.fromtimestamp(ms / 1000, zoneinfo.ZoneInfo("America/New_York"))
            self.assertEqual((t.hour, t.minute), (9, 0))
            self.assertLess(t.weekday(), 5)
        listed = self.srv.ok("GET", "/v1/schedules")["schedules"]
        names = [x["name"] for x in listed]
        self.assertEqual(names, sorted(names))
        self.assertIn("berlin", names)
        self.srv.ok("DELETE", "/v1/schedules/berlin")
        self.srv.ok("DELETE", "/v1/schedules/ny")

    def test_replacing_keeps_created_at_and_changes_the_rest(self):
        a = self.put("repl", {"cron": "@hourly", "job": job_spec("c-repl")}, expect=201)
        time.sleep(0.01)
        b = self.put("repl", {"cron": "@daily", "missed": "once", "paused": True,
                              "job": job_spec("c-repl", priority=5, key="k", unique=True,
                                              max_attempts=3)}, expect=200)
        self.assertEqual(b["created_at"], a["created_at"])
        self.assertGreater(b["updated_at"], a["updated_at"])
        self.assertEqual((b["cron"], b["missed"], b["paused"]), ("@daily", "once", True))
        self.assertEqual(b["job"]["priority"], 5)
        self.assertEqual(b["job"]["key"], "k")
        self.assertTrue(b["job"]["unique"])
        self.assertEqual(b["job"]["max_attempts"], 3)
        self.assertIsNone(b["next_tick"])
        self.assertEqual(b["next_runs"], [])
        self.srv.ok("DELETE", "/v1/schedules/repl")

    def test_bad_input_names_the_field_and_changes_nothing(self):
        good = {"cron": "@hourly", "job": job_spec("c-bad")}
        cases = [
            ({"cron": "61 * * * *", "job": job_spec("c-bad")}, "cron", "minute"),
            ({"cron": "* * * *", "job": job_spec("c-bad")}, "cron", "five fields"),
            ({"cron": "@every 0s", "job": job_spec("c-bad")}, "cron", "at least 1s"),
            ({"cron": "0 0 30 2 *", "job": job_spec("c-bad")}, "cron", "never"),
            ({"cron": 5, "job": job_spec("c-bad")}, "cron", ""),
            ({"job": job_spec("c-bad")}, "cron", ""),
            (dict(good, timezone="Mars/Olympus"), "timezone", "unknown time zone"),
            (dict(good, timezone="../../etc/passwd"), "timezone", "not a time zone name"),
            (dict(good, missed="sometimes"), "missed", "skip, once or each"),
            (dict(good, paused="yes"), "paused", ""),
            (dict(good, extra=1), "extra", "unknown field"),
            ({"cron": "@hourly"}, "job", "required"),
            ({"cron": "@hourly", "job": "x"}, "job", "required"),
            ({"cron": "@hourly", "job": job_spec("c-bad", run_at=5)}, "job.run_at", "unknown"),
            ({"cron": "@hourly", "job": job_spec("c-bad", idempotency_key="k")},
             "job.idempotency_key", "unknown"),
            ({"cron": "@hourly", "job": {"tenant": "acme", "queue": "c-bad"}}, "job.type",
             "type is required"),
            ({"cron": "@hourly", "job": job_spec("c-bad", tenant="no spaces")}, "job.tenant", ""),
            ({"cron": "@hourly", "job": job_spec("bad queue")}, "job.queue", ""),
            ({"cron": "@hourly", "job": job_spec("c-bad", priority=99999)}, "job.priority", ""),
            ({"cron": "@hourly", "job": job_spec("c-bad", max_attempts=0)}, "job.max_attempts",
             ""),
            ({"cron": "@hourly", "job": job_spec("c-bad", timeout_ms=5)}, "job.timeout_ms",
             "a third of the queue's lease"),
            ({"cron": "@hourly", "job": job_spec("c-bad", key="")}, "job.key", ""),
        ]
        before = self.srv.ok("GET", "/v1/schedules")
        for body, field, words in cases:
            status, got = self.srv.req("PUT", "/v1/schedules/bad", body)
            self.assertEqual(status, 400, (body, got))
            self.assertEqual(got["error"]["field"], field, (body, got))
            self.assertIn(words, got["error"]["message"], (body, got))
        status, got = self.srv.req("PUT", "/v1/schedules/bad", "{not json")
        self.assertEqual(status, 400)
        status, got = self.srv.req("PUT", "/v1/schedules/bad%20name", good)
        self.assertEqual((status, got["error"]["field"]), (400, "name"))
        self.assertEqual(self.srv.req("GET", "/v1/schedules/bad")[0], 404)
        self.assertEqual(self.srv.ok("GET", "/v1/schedules"), before)
        self.assertEqual(self.srv.req("DELETE", "/v1/schedules/nothing")[0], 404)
        self.assertEqual(self.srv.req("POST", "/v1/schedules/nothing/pause")[0], 404)
        # a bad replace leaves the schedule as it was
        a = self.put("kept", good)
        status, _ = self.srv.req("PUT", "/v1/schedules/kept", dict(good, cron="@nope"))
        self.assertEqual(status, 400)
        self.assertEqual(self.srv.ok("GET", "/v1/schedules/kept")["cron"], a["cron"])
        self.srv.ok("DELETE", "/v1/schedules/kept")

    def test_pause_and_resume_take_no_body_and_a_missed_override_is_refused(self):
        self.put("c-body", {"cron": "@hourly", "missed": "skip", "job": job_spec("c-body")})
        for body in ({"bogus": 1}, [], "now", {"missed": "each"}):
            for verb in ("pause", "resume"):
                st, b = self.srv.req("POST", "/v1/schedules/c-body/" + verb, body)
                self.assertEqual(st, 400, (verb, body, b))
                if isinstance(body, dict):
                    self.assertEqual(b["error"]["field"], list(body)[0], b)
        x = self.srv.ok("GET", "/v1/schedules/c-body")
        self.assertEqual((x["paused"], x["missed"]), (False, "skip"))
        self.assertTrue(self.srv.ok("POST", "/v1/schedules/c-body/pause", {})["paused"])
        st, b = self.srv.req("POST", "/v1/schedules/c-body/resume", {"missed": "each"})
        self.assertEqual((st, b["error"]["field"]), (400, "missed"), b)
        x = self.srv.ok("GET", "/v1/schedules/c-body")
        self.assertEqual((x["paused"], x["missed"]), (True, "skip"))
        self.assertFalse(self.srv.ok("POST", "/v1/schedules/c-body/resume")["paused"])
        # the list's tenant filter is a name, read whole
        self.assertEqual(len(self.srv.ok("GET", "/v1/schedules?tenant=acme")["schedules"]) > 0,
                         True)
        for q in ("tenant=" + "acme" + "x" * 80, "tenant=", "tenant=bad%20name", "runs=9",
                  "tenat=acme"):
            st, b = self.srv.req("GET", "/v1/schedules?" + q)
            self.assertEqual(st, 400, (q, b))
        self.srv.ok("DELETE", "/v1/schedules/c-body")

    def test_a_refused_tick_is_passed_and_shown(self):
        self.put("refused", {"cron": "@every 1s", "job": job_spec("c-refused", timeout_ms=100000)})
        wait_ticks(self.srv, "c-refused", "refused", 1)
        # the queue's lease raised: the job's timeout is now below a third of it
        self.srv.ok("PUT", "/v1/queues/c-refused", {"lease_ms": 600000})
        deadline = time.time() + 20
        while time.time() < deadline:
            s = self.srv.ok("GET", "/v1/schedules/refused")
            if "last_error" in s:
                break
            time.sleep(0.1)
        self.assertIn("timeout_ms", s["last_error"])
        n = len(ticks_of(self.srv, "c-refused", "refused"))
        time.sleep(1.5)
        self.assertEqual(len(ticks_of(self.srv, "c-refused", "refused")), n)
        after = self.srv.ok("GET", "/v1/schedules/refused")
        self.assertEqual(after["last_tick"], ticks_of(self.srv, "c-refused", "refused")[-1])
        self.assertGreater(after["next_tick"], after["last_tick"] + 1000)  # refused ticks passed
        metrics = self.srv.ok("GET", "/metrics")
        self.assertRegex(metrics, r"(?m)^tenq_schedule_ticks_refused_total [1-9]")
        self.srv.ok("PUT", "/v1/queues/c-refused", {"lease_ms": 300000})
        wait_ticks(self.srv, "c-refused", "refused", n + 1)
        deadline = time.time() + 10
        while "last_error" in self.srv.ok("GET", "/v1/schedules/refused") and time.time() < deadline:
            time.sleep(0.1)
        self.assertNotIn("last_error", self.srv.ok("GET", "/v1/schedules/refused"))
        self.srv.ok("DELETE", "/v1/schedules/refused")

    def pause_window(self, name, queue, missed):
        """Runs an @every 1s schedule, pauses it ~3 s, resumes it: (ticks
        made, last tick before the pause, the resume's answer)."""
        self.put(name, {"cron": "@every 1s", "missed": missed, "job": job_spec(queue)})
        wait_ticks(self.srv, queue, name, 2)
        p = self.srv.ok("POST", "/v1/schedules/%s/pause" % name)
        self.assertTrue(p["paused"])
        self.assertIsNone(p["next_tick"])
        before = ticks_of(self.srv, queue, name)
        self.assertEqual(before[-1], p["last_tick"])
        time.sleep(3.2)
        self.assertEqual(ticks_of(self.srv, queue, name), before)  # paused: nothing
        r = self.srv.ok("POST", "/v1/schedules/%s/resume" % name)
        self.assertFalse(r["paused"])
        ticks = wait_ticks(self.srv, queue, name, len(before) + 2 + (missed == "each") * 3)
        self.srv.ok("DELETE", "/v1/schedules/" + name)
        self.assertEqual(len(ticks), len(set(ticks)), ticks)
        return ticks, before[-1], r

    def test_missed_ticks_skip(self):
        ticks, last, r = self.pause_window("p-skip", "c-skip", "skip")
        self.assertEqual(r["last_tick"], last)  # nothing made up
        self.assertEqual([t for t in ticks if last < t < r["next_tick"]], [])
        self.assertGreaterEqual(r["next_tick"] - last, 3000)

    def test_missed_ticks_once(self):
        ticks, last, r = self.pause_window("p-once", "c-once", "once")
        made_up = [t for t in ticks if last < t < r["next_tick"]]
        self.assertEqual(made_up, [r["last_tick"]])  # one job, for the latest missed tick
        self.assertEqual(r["next_tick"] - r["last_tick"], 1000)
        self.assertGreaterEqual(r["last_tick"] - last, 3000)

    def test_missed_ticks_each(self):
        ticks, last, r = self.pause_window("p-each", "c-each", "each")
        self.assertEqual(ticks, list(range(ticks[0], ticks[-1] + 1000, 1000)))  # none lost
        self.assertEqual(r["last_tick"], r["next_tick"] - 1000)


class TenantTokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.admin = "admin-secret-for-tests-0001"
        cls.srv = Server(env={"TENQ_ADMIN_TOKEN": cls.admin})
        mk = lambda role, **kw: cls.srv.token(cls.admin, role, **kw)["token"]  # noqa: E731
        cls.acme = mk("tenant:acme")
        cls.other = mk("tenant:other")
        cls.worker = mk("worker")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.srv.assert_clean()
        cls.srv.cleanup()

    def test_a_tenant_token_manages_its_own_tenants_schedules_only(self):
        body = {"cron": "@daily", "job": {"queue": "c-tok", "type": "T"}}
        mine = self.srv.ok("PUT", "/v1/schedules/acme-daily", body, self.acme)
        self.assertEqual(mine["job"]["tenant"], "acme")  # the token's tenant
        status, got = self.srv.req("PUT", "/v1/schedules/x", dict(
            body, job={"tenant": "other", "queue": "c-tok", "type": "T"}), self.acme)
        self.assertEqual((status, got["error"]["field"]), (403, "job.tenant"))
        # another tenant neither sees it nor changes it
        self.assertEqual(self.srv.req("GET", "/v1/schedules/acme-daily", token=self.other)[0], 404)
        self.assertEqual(self.srv.ok("GET", "/v1/schedules", token=self.other)["schedules"], [])
        for method, path in [("DELETE", ""), ("POST", "/pause"), ("POST", "/resume")]:
            self.assertEqual(self.srv.req(method, "/v1/schedules/acme-daily" + path,
                                          token=self.other)[0], 404)
        self.assertEqual(self.srv.req("PUT", "/v1/schedules/acme-daily", body, self.other)[0], 409)
        self.assertEqual(self.srv.req("GET", "/v1/schedules", token=self.worker)[0], 403)
        self.assertEqual(self.srv.req("GET", "/v1/schedules")[0], 401)
        listed = self.srv.ok("GET", "/v1/schedules", token=self.admin)["schedules"]
        self.assertEqual([x["name"] for x in listed], ["acme-daily"])
        self.assertEqual([x["name"] for x in self.srv.ok(
            "GET", "/v1/schedules", token=self.acme)["schedules"]], ["acme-daily"])
        self.assertEqual(self.srv.ok("GET", "/v1/schedules/acme-daily", token=self.acme)["job"]
                         ["tenant"], "acme")
        self.srv.ok("POST", "/v1/schedules/acme-daily/pause", token=self.acme)
        self.srv.ok("DELETE", "/v1/schedules/acme-daily", token=self.acme)


def contiguous(test, ticks, what):
    test.assertEqual(len(ticks), len(set(ticks)), "%s: a tick made twice: %s" % (what, ticks))
    test.assertEqual(ticks, list(range(ticks[0], ticks[-1] + 1000, 1000)),
                     "%s: a tick lost: %s" % (what, ticks))


class Restart(unittest.TestCase):
    def setUp(self):
        self.srv = Server()

    def tearDown(self):
        # a clean stop: a sanitizer's report (a leak) would be in the log now
        self.srv.stop()
        self.srv.assert_clean()
        self.srv.cleanup()

    def test_no_tick_lost_or_doubled_across_sigterm_and_kill9(self):
        srv = self.srv
        srv.ok("PUT", "/v1/schedules/r-each", {"cron": "@every 1s", "missed": "each",
                                                "job": job_spec("c-restart")})
        srv.ok("PUT", "/v1/schedules/r-skip", {"cron": "@every 1s", "missed": "skip",
                                                "job": job_spec("c-restart-skip")})
        wait_ticks(srv, "c-restart", "r-each", 2)
        for how in ("term", "kill", "kill"):
            if how == "term":
                self.assertEqual(srv.stop(), 0)
            else:
                srv.kill()
            stopped_at = int(time.time() * 1000)
            time.sleep(2.5)
            down_until = int(time.time() * 1000)
            srv.start()
            ticks = wait_past(srv, "c-restart", "r-each", down_until + 1000)
            contiguous(self, ticks, "each after %s" % how)
            skip = wait_past(srv, "c-restart-skip", "r-skip", down_until + 1000)
            self.assertEqual(len(skip), len(set(skip)), skip)
            # skip: no job for a tick due while the server was down
            self.assertEqual([t for t in skip if stopped_at < t <= down_until], [], skip)
        got = srv.ok("GET", "/v1/schedules/r-each")
        self.assertEqual(got["last_tick"], ticks_of(srv, "c-restart", "r-each")[-1])

    def sql(self, text):
        """Runs SQL on the stopped server's store (table names without schema)."""
        url = self.srv.store_url
        if url.startswith("sqlite:"):
            db = sqlite3.connect(url[len("sqlite:"):])
            db.execute(text)
            db.commit()
            db.close()
        else:
            subprocess.run(["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c",
                            text.replace("schedules", "tenq.schedules")], check=True)

    def test_each_makes_up_at_most_100_missed_ticks(self):
        srv = self.srv
        self.assertEqual(srv.stop(), 0)
        now = int(time.time()) * 1000
        self.sql("INSERT INTO schedules (name, tenant, cron, timezone, missed, queue, type, args, "
                 "key, priority, unique_key, is_unique, max_attempts, timeout_ms, paused, "
                 "last_tick, next_tick, created_at, updated_at) VALUES ('old', 'acme', "
                 "'@every 1s', 'UTC', 'each', 'c-old', 'Tick', '{}', NULL, 0, NULL, %s, 0, 0, %s, "
                 "0, %d, %d, %d)" % ("false" if STORE == "postgres" else "0",
                                     "false" if STORE == "postgres" else "0",
                                     now - 300000, now - 400000, now - 400000))
        started = int(time.time() * 1000)
        srv.start()
        ticks = wait_ticks(srv, "c-old", "old", 102)
        contiguous(self, ticks, "made up")
        # the latest 100 missed ticks up to the load (which came after `started`)
        made_up = [t for t in ticks if t < started]
        self.assertLessEqual(len(made_up), 100)
        self.assertGreaterEqual(len(made_up), 95)
        self.assertGreater(made_up[0], now - 110000)  # older ones given up
        self.assertEqual(srv.ok("GET", "/v1/schedules/old")["missed"], "each")

    def test_a_tick_made_already_is_never_made_again(self):
        """The schedule's row rolled back (as if its progress were lost): the
        ticks' idempotency keys still refuse a second job."""
        srv = self.srv
        srv.ok("PUT", "/v1/schedules/again", {"cron": "@every 1s", "missed": "each",
                                               "job": job_spec("c-again")})
        wait_ticks(srv, "c-again", "again", 3)
        self.assertEqual(srv.stop(), 0)
        self.sql("UPDATE schedules SET next_tick = next_tick - 10000 WHERE name = 'again'")
        srv.start()
        n = len(ticks_of(srv, "c-again", "again"))
        contiguous(self, wait_ticks(srv, "c-again", "again", n + 2), "rolled back")


@unittest.skipUnless(STORE == "postgres", "two servers share a store on PostgreSQL only")
class Takeover(unittest.TestCase):
    """Two servers on one database: a standby never ticks; the leader killed
    (or stalled past its TTL) hands its schedules over, and every tick is
    made once."""

    def test_no_tick_lost_or_doubled_across_takeovers(self):
        from cluster import Cluster  # tests/chaos: a leader and a standby
        cl = Cluster(2, args=["--leader-ttl", "2s"])
        try:
            lead = cl.wait_leader(30)
            srv = cl.servers[lead]
            srv.ok("PUT", "/v1/schedules/t-each", {"cron": "@every 1s", "missed": "each",
                                                    "job": job_spec("c-take")})
            wait_ticks(srv, "c-take", "t-each", 2)
            # the standby answers with the leader; it has no schedules of its own
            status, _, hdrs = cl.servers[1 - lead].raw("GET", "/v1/schedules/t-each")
            self.assertEqual(status, 307)
            # 1: the leader killed
            cl.kill(lead)
            lead = cl.wait_leader(30, not_in=(lead,))
            srv = cl.servers[lead]
            n = len(ticks_of(srv, "c-take", "t-each"))
            contiguous(self, wait_ticks(srv, "c-take", "t-each", n + 3), "after a kill")
            cl.restart(1 - lead)  # back as a standby
            # 2: the leader stalled (SIGSTOP) past its TTL, then back: fenced
            old = lead
            cl.kill(old, signal.SIGSTOP)
            lead = cl.wait_leader(30, not_in=(old,))
            srv = cl.servers[lead]
            n = len(ticks_of(srv, "c-take", "t-each"))
            wait_ticks(srv, "c-take", "t-each", n + 2)
            cl.kill(old, signal.SIGCONT)
            time.sleep(3)
            n = len(ticks_of(srv, "c-take", "t-each"))
            ticks = wait_ticks(srv, "c-take", "t-each", n + 2)
            contiguous(self, ticks, "after a stall")
            self.assertEqual(cl.leader(), lead)
        except BaseException:
            sys.stderr.write(cl.logs())
            raise
        finally:
            cl.cleanup()


if __name__ == "__main__":
    main()
