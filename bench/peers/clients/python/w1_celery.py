# SPDX-License-Identifier: Apache-2.0
"""W1 on Celery (Debian python3-celery) with a Redis broker: apply_async
through one producer (Celery has no bulk send), then one `celery worker -c
C` (prefork) process. Results are ignored (no backend); each pool process
counts the jobs it ran and the time of its last one (signals of
celery_app.py), written when the worker stops."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict

from redis import Redis

HERE = os.path.dirname(os.path.abspath(__file__))


def run(url: str, jobs: int, concurrency: int, timeout: float) -> Dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="celeryw1-")
    os.environ["BENCH_REDIS"] = url
    os.environ["BENCH_DIR"] = tmp
    sys.path.insert(0, HERE)
    import celery_app

    r = Redis.from_url(url)
    r.flushdb()
    t0 = time.perf_counter()
    with celery_app.app.producer_or_acquire() as producer:
        for _ in range(jobs):
            celery_app.blank.apply_async(producer=producer)
    t1 = time.perf_counter()
    held = r.llen("celery")
    if held != jobs:
        raise RuntimeError(f"the queue holds {held} jobs, not {jobs}")

    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = open(os.path.join(tmp, "worker.log"), "wb")
    p = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "-c", str(concurrency),
         "-P", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "-l", "WARNING"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=HERE)
    try:
        ready_file = os.path.join(tmp, "ready")
        end = time.monotonic() + 60
        while not os.path.exists(ready_file):
            if p.poll() is not None or time.monotonic() > end:
                raise RuntimeError("the celery worker did not start (see its log in " + tmp + ")")
            time.sleep(0.005)
        with open(ready_file) as f:
            ready = float(f.read())
        end = time.monotonic() + timeout
        # the queue empties when the last jobs are prefetched; then wait for
        # the unacknowledged ones (acks come when a job is taken) and stop
        while r.llen("celery") or r.hlen("unacked"):
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError("timed out, or the worker died")
            time.sleep(0.01)
        ran, last = _wait_counts(tmp, p, jobs, end)
    finally:
        if p.poll() is None:
            p.kill()
    if ran != jobs:
        raise RuntimeError(f"{ran} jobs ran, not {jobs} (the worker's log is in {tmp})")
    log.close()
    shutil.rmtree(tmp, ignore_errors=True)
    import celery

    return {
        "enqueue_jobs_per_s": round(jobs / (t1 - t0), 1),
        "drain_jobs_per_s": round(jobs / (last - ready), 1),
        "ms_per_job": round((last - ready) * 1000 / jobs, 4),
        "driver_note": (f"Python {sys.version.split()[0]}, Celery {celery.__version__} (Redis "
                        "broker): apply_async through one producer (no bulk send); "
                        f"celery worker -c {concurrency} -P prefork, default prefetch, no result "
                        "backend; drain timed from worker_ready to the last task_postrun"),
    }


def _wait_counts(tmp: str, p: "subprocess.Popen[bytes]", jobs: int, end: float) -> Any:
    """Asks the worker for a warm stop once every job has run (the pool
    processes write their counts as they exit); the jobs run and the time
    of the last."""
    settle = time.monotonic() + 2.0
    while time.monotonic() < settle:  # the prefetched jobs are still running
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    p.wait(max(1.0, end - time.monotonic()))
    ran, last = 0, 0.0
    for name in os.listdir(tmp):
        if name.startswith("counts-"):
            with open(os.path.join(tmp, name)) as f:
                d = json.load(f)
            ran += d["ran"]
            last = max(last, d["last"])
    return ran, last
