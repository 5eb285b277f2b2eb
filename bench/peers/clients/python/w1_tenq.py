# SPDX-License-Identifier: Apache-2.0
"""W1 on tenq through the Python library: Client.submit_many (10,000 jobs
a request), then a tenq.Worker with C threads in this process."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Dict

try:
    import tenq
except ImportError:  # not installed: the library from this tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "..", "..", "clients", "python", "src"))
    import tenq

QUEUE = "w1"


def _counts(c: "tenq.Client") -> Dict[str, Any]:
    q = c.request("GET", f"/v1/queues/{QUEUE}")
    if not isinstance(q, dict):
        raise RuntimeError(f"GET /v1/queues/{QUEUE}: {q!r}")
    return q


def run(server: str, jobs: int, concurrency: int, timeout: float, prefetch: int = 0,
        carry: bool = False) -> Dict[str, Any]:
    c = tenq.Client(server, tenant="bench", queue=QUEUE)
    handlers = tenq.Registry()
    handlers.add("blank", lambda ctx: None)

    specs = [{"type": "blank"} for _ in range(jobs)]
    t0 = time.perf_counter()
    answers = c.submit_many(specs)
    t1 = time.perf_counter()
    bad = [a for a in answers if isinstance(a, tenq.TenqError)]
    if bad:
        raise RuntimeError(f"{len(bad)} job(s) refused, e.g. {bad[0]}")
    held = _counts(c)
    if held.get("ready") != jobs:
        raise RuntimeError(f"the queue holds {held.get('ready')} ready jobs, not {jobs}")

    worker = tenq.Worker(c, queues=[QUEUE], concurrency=concurrency, handlers=handlers, poll=5,
                         prefetch=prefetch, carry_outcomes=carry)
    end = time.monotonic() + timeout
    t2 = time.perf_counter()
    worker.start()
    while worker.counts["succeeded"] < jobs:
        if time.monotonic() > end:
            raise RuntimeError(f"timed out: {worker.counts}")
        if worker.join(0.005):
            raise RuntimeError(f"the worker stopped: {worker.fatal} {worker.counts}")
    t3 = time.perf_counter()
    worker.stop()
    worker.join()
    done = _counts(c)
    if done.get("succeeded_total") != jobs or any(
        done.get(k) for k in ("ready", "leased", "running", "scheduled", "dead")
    ):
        raise RuntimeError(f"not every job succeeded once: {done}")
    return {
        "enqueue_per_s": round(jobs / (t1 - t0), 1),
        "drain_per_s": round(jobs / (t3 - t2), 1),
        "ms_per_job": round((t3 - t2) * 1000 / jobs, 4),
        "worker": f"tenq.Worker(concurrency={concurrency}, prefetch={prefetch}, "
                  f"carry_outcomes={carry})",
    }
