# SPDX-License-Identifier: Apache-2.0
"""W1 on RQ (Debian python3-rq) and Redis: Queue.enqueue_many in
pipelines of 1,000 jobs, then C `rq` worker processes in burst mode."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry, FinishedJobRegistry

QUEUE = "w1"
BULK = 1000
HERE = os.path.dirname(os.path.abspath(__file__))


def run(url: str, jobs: int, concurrency: int, timeout: float, kind: str) -> Dict[str, Any]:
    r = Redis.from_url(url)
    r.flushdb()
    q = Queue(QUEUE, connection=r)
    t0 = time.perf_counter()
    for at in range(0, jobs, BULK):
        n = min(BULK, jobs - at)
        q.enqueue_many([Queue.prepare_data("rq_blank.blank", result_ttl=3600) for _ in range(n)])
    t1 = time.perf_counter()
    if q.count != jobs:
        raise RuntimeError(f"the queue holds {q.count} jobs, not {jobs}")

    tmp = tempfile.mkdtemp(prefix="rqw1-")
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs: List[subprocess.Popen[bytes]] = []
    finished = FinishedJobRegistry(QUEUE, connection=r)
    failed = FailedJobRegistry(QUEUE, connection=r)
    try:
        for i in range(concurrency):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "rq_worker.py"), url, QUEUE, kind,
                 os.path.join(tmp, f"ready-{i}")], env=env))
        ready = _wait_ready(tmp, concurrency, procs, time.monotonic() + 60)
        end = time.monotonic() + timeout
        while finished.count + failed.count < jobs:
            if time.monotonic() > end:
                raise RuntimeError(f"timed out: {finished.count} finished")
            time.sleep(0.01)
        t3 = time.time()
        for p in procs:
            p.wait(60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if failed.count or finished.count != jobs:
        raise RuntimeError(f"{finished.count} finished, {failed.count} failed of {jobs}")
    import rq

    worker = "rq.SimpleWorker (no fork)" if kind == "simple" else "rq.Worker (a fork per job)"
    return {
        "enqueue_jobs_per_s": round(jobs / (t1 - t0), 1),
        "drain_jobs_per_s": round(jobs / (t3 - ready), 1),
        "ms_per_job": round((t3 - ready) * 1000 / jobs, 4),
        "driver_note": (f"Python {sys.version.split()[0]}, RQ {rq.__version__}: "
                        "Queue.enqueue_many in pipelines of 1,000; "
                        f"{concurrency} {worker} processes in burst mode; drain timed from the "
                        "last worker ready to the last job in FinishedJobRegistry"),
    }


def _wait_ready(tmp: str, n: int, procs: List["subprocess.Popen[bytes]"], end: float) -> float:
    """The time the last worker process was ready (it writes its file just
    before it starts working)."""
    while True:
        stamps = []
        for i in range(n):
            try:
                with open(os.path.join(tmp, f"ready-{i}")) as f:
                    stamps.append(float(f.read()))
            except (OSError, ValueError):
                break
        if len(stamps) == n:
            return max(stamps)
        if any(p.poll() not in (None, 0) for p in procs) or time.monotonic() > end:
            raise RuntimeError("an rq worker did not start")
        time.sleep(0.005)
