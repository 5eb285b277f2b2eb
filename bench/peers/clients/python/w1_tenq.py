# SPDX-License-Identifier: Apache-2.0
"""W1 on tenq through the Python library: Client.submit_many (10,000 jobs
a request; or AsyncClient.submit_many, with ``aio``), then a tenq.Worker
with C threads in this process, with the library's defaults."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

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


def _enqueue_async(server: str, specs: List[Dict[str, Any]]) -> Tuple[List[Any], float, float]:
    """AsyncClient.submit_many in an event loop; the answers and the times
    around the call (the loop's start left out)."""

    async def main() -> Tuple[List[Any], float, float]:
        async with tenq.AsyncClient(server, tenant="bench", queue=QUEUE) as ac:
            t0 = time.perf_counter()
            answers = await ac.submit_many(specs)
            return answers, t0, time.perf_counter()

    return asyncio.run(main())


def run(server: str, jobs: int, concurrency: int, timeout: float,
        prefetch: Optional[int] = None, carry: bool = False, aio: bool = False) -> Dict[str, Any]:
    c = tenq.Client(server, tenant="bench", queue=QUEUE)
    handlers = tenq.Registry()
    calls: List[int] = []  # the driver's check that every job ran once

    def blank(ctx: tenq.Context) -> None:
        calls.append(ctx.id)  # (atomic: the threads need no lock)

    handlers.add("blank", blank)

    specs: List[Dict[str, Any]] = [{"type": "blank"} for _ in range(jobs)]
    if aio:
        answers, t0, t1 = _enqueue_async(server, specs)
    else:
        t0 = time.perf_counter()
        answers = list(c.submit_many(specs))
        t1 = time.perf_counter()
    bad = [a for a in answers if isinstance(a, tenq.TenqError)]
    if bad:
        raise RuntimeError(f"{len(bad)} job(s) refused, e.g. {bad[0]}")
    held = _counts(c)
    if held.get("ready") != jobs:
        raise RuntimeError(f"the queue holds {held.get('ready')} ready jobs, not {jobs}")

    worker = tenq.Worker(c, queues=[QUEUE], concurrency=concurrency, handlers=handlers,
                         poll=5, prefetch=prefetch, carry_outcomes=carry)
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
    ids = {a.id for a in answers if not isinstance(a, tenq.TenqError)}
    ran = set(calls)
    if len(calls) != jobs or ran != ids:
        raise RuntimeError(f"the handler ran {len(calls)} times for {len(ran)} of {jobs} jobs")
    opts = ("prefetch adaptive" if prefetch is None else f"prefetch={prefetch}") + (
        ", carry_outcomes" if carry else "")
    return {
        "enqueue_jobs_per_s": round(jobs / (t1 - t0), 1),
        "drain_jobs_per_s": round(jobs / (t3 - t2), 1),
        "ms_per_job": round((t3 - t2) * 1000 / jobs, 4),
        "driver_note": (f"Python {sys.version.split()[0]}, the tenq library: "
                        f"{'AsyncClient' if aio else 'Client'}.submit_many "
                        f"(10,000 jobs a request); tenq.Worker(concurrency={concurrency}), "
                        f"library defaults ({opts}), in the driver's process; drain timed "
                        "from the worker's start to the last outcome acknowledged"),
    }
