#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs W1 for tenq (the Python library), RQ and Celery RUNS times each,
interleaved, every run on fresh private servers (tenq on SQLite, Redis
without persistence), and prints each run, the medians and the ratios
tenq / peer as JSON lines and a table.

    compare.py [--jobs 100000] [--concurrency 5] [--runs 3] [--systems tenq,rq,celery]
               [--tenq-bin /opt/tenq-snapshot/tenq] [--rq-worker simple|fork]

A system "tenq:carry" is tenq with --carry-outcomes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_tenq(binary: str, d: str) -> "tuple[subprocess.Popen[bytes], str]":
    pf = os.path.join(d, "port")
    p = subprocess.Popen([binary, "serve", "--store", f"sqlite:{d}/tenq.db", "--listen",
                          "127.0.0.1:0", "--port-file", pf, "--log-level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 30
    while not (os.path.exists(pf) and open(pf).read().strip()):
        if p.poll() is not None or time.monotonic() > end:
            raise RuntimeError("tenq serve did not start")
        time.sleep(0.01)
    return p, f"http://127.0.0.1:{open(pf).read().strip()}"


def _start_redis(d: str) -> "tuple[subprocess.Popen[bytes], str]":
    port = _free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly",
                          "no", "--dir", d], stdout=subprocess.DEVNULL)
    end = time.monotonic() + 30
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout \
            != b"PONG\n":
        if p.poll() is not None or time.monotonic() > end:
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)
    return p, f"redis://127.0.0.1:{port}/0"


def one(name: str, a: argparse.Namespace) -> Dict[str, Any]:
    """One run of ``name``: a system, or "tenq:carry" (tenq with
    --carry-outcomes)."""
    system, _, variant = name.partition(":")
    d = tempfile.mkdtemp(prefix=f"w1-{system}-")
    os.sync()
    time.sleep(1)
    try:
        if system == "tenq":
            srv, url = _start_tenq(a.tenq_bin, d)
            target = ["--server", url]
        else:
            srv, url = _start_redis(d)
            target = ["--redis", url]
        try:
            cmd = [sys.executable, os.path.join(HERE, "driver.py"), "--system", system,
                   "--jobs", str(a.jobs), "--concurrency", str(a.concurrency)] + target
            if system == "rq":
                cmd += ["--rq-worker", a.rq_worker]
            if variant == "carry":
                cmd += ["--carry-outcomes"]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{system}: {out.stderr.strip()[-500:]}")
            res = dict(json.loads(out.stdout.strip().splitlines()[-1]))
            res["system"] = name
            return res
        finally:
            srv.kill()
            srv.wait()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--systems", default="tenq,rq,celery")
    ap.add_argument("--tenq-bin", default=os.environ.get("TENQ_BIN", "/opt/tenq-snapshot/tenq"))
    ap.add_argument("--rq-worker", choices=["simple", "fork"], default="simple")
    a = ap.parse_args()
    systems = a.systems.split(",")
    runs: Dict[str, List[Dict[str, Any]]] = {s: [] for s in systems}
    for i in range(a.runs):
        for s in systems:
            r = one(s, a)
            runs[s].append(r)
            print(json.dumps({"run": i + 1, **r}), flush=True)
    med = {s: {k: statistics.median(r[k] for r in runs[s])
               for k in ("enqueue_per_s", "drain_per_s")} for s in systems}
    print(f"\n{'system':12} {'enqueue/s':>12} {'drain/s':>10}   (median of {a.runs})")
    for s in systems:
        print(f"{s:12} {med[s]['enqueue_per_s']:12.0f} {med[s]['drain_per_s']:10.0f}")
    if "tenq" in med:
        for s in systems:
            if not s.startswith("tenq"):
                t = med["tenq"]
                print(f"tenq / {s}: enqueue {t['enqueue_per_s'] / med[s]['enqueue_per_s']:.1f}x, "
                      f"drain {t['drain_per_s'] / med[s]['drain_per_s']:.1f}x")
    print(json.dumps({"medians": med}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
