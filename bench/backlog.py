#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-backlog: a backlog larger than memory on SQLite (issue #39).

For each build (this one, and with --old BIN the build to compare with), in
one run: a `tenq serve` on SQLite in its own folder is filled with JOBS jobs
of ARGS bytes of args (10 tenants, one queue; bench/backlog_driver.c), and

  - rss_mb, bytes_a_job: its resident memory once filled, and what each job
    added to it (the idle server's RSS subtracted);
  - first_lease_s: kill -9, start again, the time until a lease is answered
    with a job (a client asking every 2 ms on one kept connection);
  - loaded_rss_mb: its RSS once every job is back in memory (for this build:
    once the jobs waiting in line are brought in behind it);
  - drain_jobs_per_s, lease_ms_p50 / p99 / max: MEASURE jobs drained by 5
    workers leasing 100 at a time (outcomes with the next lease, as W5),
    each lease timed (for this build, with the args out of memory past
    --args-memory: leases read them back ahead, or wait for them).

and the same drain with BASELINE jobs queued (W5's 10,000), for the ratio.
Prints one JSON line per (build, jobs), and a table.

Usage: make bench-backlog, or
  python3 bench/backlog.py [--jobs 20000000] [--args-bytes 1024] [--measure 200000]
      [--args-memory 256MiB] [--old OLD_TENQ --old-jobs 3000000] [--dir /var/tmp/x]
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
DRIVER = os.path.join(BUILD, "bench_backlog_driver")


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class Server:
    def __init__(self, binary, folder, extra):
        self.binary, self.folder, self.extra = binary, folder, extra
        self.port_file = os.path.join(folder, "port")
        self.proc = None

    def start(self):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        log = open(os.path.join(self.folder, "server.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--listen", "127.0.0.1:0", "--port-file", self.port_file,
             "--data-dir", os.path.join(self.folder, "data")] + self.extra,
            stdout=subprocess.DEVNULL, stderr=log)
        self.t0 = time.monotonic()
        while not (os.path.exists(self.port_file) and open(self.port_file).read().strip()):
            if self.proc.poll() is not None:
                raise SystemExit("tenq serve exited: see " + self.folder + "/server.log")
            time.sleep(0.001)
        self.port = int(open(self.port_file).read())
        self.url = "http://127.0.0.1:%d" % self.port

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return json.loads(body) if body[:1] in (b"{", b"[") else body.decode()

    def first_lease_s(self):
        """From the start (self.t0) to the first lease answered with a job."""
        body = json.dumps({"worker": "bench", "queues": ["backlog"], "max": 1, "wait_ms": 0})
        c = None
        while time.monotonic() - self.t0 < 600:
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                c.request("POST", "/v1/lease", body, {"Content-Type": "application/json"})
                r = c.getresponse()
                ans = json.loads(r.read() or b"null")
                if r.status == 200 and ans["jobs"]:
                    t = time.monotonic() - self.t0
                    j = ans["jobs"][0]
                    c.request("POST", "/v1/jobs/%d/ack" % j["id"], json.dumps({"token": j["token"]}))
                    c.getresponse().read()
                    c.close()
                    return t
            except (OSError, http.client.HTTPException, ValueError):
                if c:
                    c.close()
                c = None
            time.sleep(0.002)
        raise SystemExit("no lease within 600 s")

    def wait_loaded(self):
        while True:
            h = self.get("/healthz")
            if not h.get("loading"):
                return
            time.sleep(0.05)


def driver(*args):
    out = subprocess.run([DRIVER] + [str(a) for a in args], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run(name, binary, jobs, a, extra):
    folder = tempfile.mkdtemp(prefix="tenq-backlog-", dir=a.dir)
    try:
        s = Server(binary, folder, extra)
        s.start()
        time.sleep(0.3)
        idle = rss_mb(s.proc.pid)
        r = {"build": name, "jobs": jobs, "args_bytes": a.args_bytes}
        r.update(driver("fill", s.url, jobs, a.args_bytes))
        time.sleep(1)  # the last rows written late
        r["rss_mb"] = round(rss_mb(s.proc.pid), 1)
        r["bytes_a_job"] = round((r["rss_mb"] - idle) * 1048576 / jobs, 1)
        s.kill()
        s.start()
        r["first_lease_s"] = round(s.first_lease_s(), 3)
        t = time.monotonic()
        s.wait_loaded()
        r["loaded_in_s"] = round(time.monotonic() - s.t0, 2)
        time.sleep(0.5)
        r["loaded_rss_mb"] = round(rss_mb(s.proc.pid), 1)
        d = driver("drain", s.url, min(a.measure, jobs - 1), 5)
        r.update({k: d[k] for k in ("drain_jobs_per_s", "lease_ms_p50", "lease_ms_p99",
                                     "lease_ms_max")})
        r["rss_after_drain_mb"] = round(rss_mb(s.proc.pid), 1)
        del t
        s.stop()
        print(json.dumps(r), flush=True)
        return r
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20_000_000)
    ap.add_argument("--args-bytes", type=int, default=1024)
    ap.add_argument("--measure", type=int, default=200_000, help="jobs drained per measurement")
    ap.add_argument("--baseline", type=int, default=10_000, help="the small backlog (W5's)")
    ap.add_argument("--args-memory", default="256MiB", help="this build's --args-memory")
    ap.add_argument("--memory-budget", default="8GiB", help="this build's --memory-budget")
    ap.add_argument("--old", help="a tenq binary to compare with (today's build)")
    ap.add_argument("--old-jobs", type=int, default=3_000_000,
                    help="its backlog (it keeps every job's args in memory)")
    ap.add_argument("--dir", default=None, help="where the stores go (default: $TMPDIR)")
    a = ap.parse_args()
    new = os.path.join(BUILD, "tenq")
    flags = ["--args-memory", a.args_memory, "--memory-budget", a.memory_budget]
    rows = [run("this", new, a.baseline, a, flags)]
    if a.old:
        rows.append(run("old", a.old, a.baseline, a, []))
        rows.append(run("old", a.old, a.old_jobs, a, []))
        rows.append(run("this", new, a.old_jobs, a, flags))
    rows.append(run("this", new, a.jobs, a, flags))
    base = {r["build"]: r["drain_jobs_per_s"] for r in rows if r["jobs"] == a.baseline}
    print("\n| build | jobs queued | RSS | bytes a job | first lease after kill -9 | all in "
          "memory after | drain jobs/s (÷ %s queued) | lease p50 / p99 / max ms |" % f"{a.baseline:,}")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        ratio = r["drain_jobs_per_s"] / base[r["build"]] if base.get(r["build"]) else float("nan")
        print("| %s | %s | %.0f MB | %.0f | %.3f s | %.1f s | %s (%.2f) | %.2f / %.2f / %.1f |" % (
            r["build"], f"{r['jobs']:,}", r["rss_mb"], r["bytes_a_job"], r["first_lease_s"],
            r["loaded_in_s"], f"{r['drain_jobs_per_s']:,.0f}", ratio, r["lease_ms_p50"],
            r["lease_ms_p99"], r["lease_ms_max"]))


if __name__ == "__main__":
    sys.exit(main())
