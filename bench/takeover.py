#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-takeover: how long a standby takes to lead and serve after the
leader dies (kill -9), with 10,000 and 1,000,000 jobs queued on PostgreSQL.

Two `tenq serve` on one private PostgreSQL (tests/with-pg.sh starts it).
The queue is filled once per size, by bulk submits, and vacuumed (as
autovacuum soon would: the first reader of fresh rows sets their hint bits,
a cost of the bulk insert, not of a takeover); then, RUNS times: the
leader is killed, and the clock runs from the kill to the first lease
answered with a job by the new leader (a client asking every 2 ms, through
the standby, which answers 503 until it leads). The killed server is
started again as the next standby. Prints one line per size:

  takeover queued=N runs=R median_s=X min_s=Y max_s=Z load_s=L

where load_s is the new leader's own count (its log: "loaded jobs=...
seconds=..."). For comparison: River's leader TTL is 15 s, Oban's 30 s.

Usage: make bench-takeover, or
       tests/with-pg.sh python3 bench/takeover.py [--runs 5] [--sizes 10000,1000000]
"""
import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "chaos"))

from cluster import Cluster, psql  # noqa: E402


def post(port, path, body, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


def fill(port, n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    per = 10000
    body = json.dumps({"jobs": [{"tenant": "t%d" % (i % 10), "queue": "bench", "type": "Blank"}
                                for i in range(per)]})
    for _ in range(n // per):
        c.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        assert r.status == 201, r.status
    c.close()


def first_lease(port, deadline):
    """Asks the standby for a job every 10 ms (one kept connection, as a
    worker would) until one comes: its first answer as the new leader."""
    body = json.dumps({"worker": "bench", "queues": ["bench"], "max": 1, "wait_ms": 0})
    c = None
    while time.monotonic() < deadline:
        try:
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("POST", "/v1/lease", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            ans = json.loads(r.read() or b"null")
            if r.status == 200 and ans["jobs"]:
                c.close()
                return True
        except (OSError, http.client.HTTPException, ValueError):
            if c:
                c.close()
            c = None
        time.sleep(0.01)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="10000,1000000")
    a = ap.parse_args()
    for n in [int(x) for x in a.sizes.split(",")]:
        cl = Cluster(2)
        try:
            fill(cl.ports[cl.wait_leader()], n)
            # what autovacuum does to a table soon after a bulk insert: the
            # rows' hint bits set, so the first load does not pay for them
            psql(cl.store_url, "VACUUM tenq.jobs")
            times, loads = [], []
            for _ in range(a.runs):
                i = cl.wait_leader(120)
                other = 1 - i
                time.sleep(0.5)
                t0 = time.monotonic()
                cl.kill(i, signal.SIGKILL)
                if not first_lease(cl.ports[other], t0 + 120):
                    raise SystemExit("no lease within 120 s:\n" + cl.logs())
                times.append(time.monotonic() - t0)
                m = re.findall(r"loaded jobs=(\d+) tenants=\d+ queues=\d+ seconds=([\d.]+)",
                               cl.servers[other].log_text())
                loads.append(float(m[-1][1]) if m else float("nan"))
                cl.restart(i)
            print("takeover queued=%d runs=%d median_s=%.3f min_s=%.3f max_s=%.3f load_s=%.2f"
                  % (n, a.runs, statistics.median(times), min(times), max(times),
                     statistics.median(loads)), flush=True)
        finally:
            cl.cleanup()


if __name__ == "__main__":
    main()
