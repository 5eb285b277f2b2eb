#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""W1 (blank jobs) for the Python client of tenq and its usual peers, as a
driver of the peer benchmark (bench/peers/README.md, "The driver contract"):

    driver.py --system tenq-python --workload W1 --url http://HOST:PORT --concurrency 5 --jobs N
    driver.py --system tenq-python-async ...   (the enqueue by tenq.AsyncClient)
    driver.py --system rq          --workload W1 --url redis://HOST:PORT/0 --concurrency 5 --jobs N
    driver.py --system celery      --workload W1 --url redis://HOST:PORT/0 --concurrency 5 --jobs N

Enqueues N blank jobs by the system's bulk path (timed: enqueue_jobs_per_s),
checks the queue holds N, then starts the workers and drains them (timed
from the workers being ready to the last job's outcome: drain_jobs_per_s),
and checks that every job ran once. Prints one JSON line; exits non-zero
with a message on failure, and for any workload but W1. See README.md
beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEMS = ("tenq-python", "tenq-python-prefetch0", "tenq-python-async", "rq", "celery")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--system", required=True, choices=SYSTEMS)
    ap.add_argument("--workload", default="W1")
    ap.add_argument("--url", help="the server: http://... (tenq), redis://... (rq, celery)")
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument("--rq-worker", choices=["fork", "simple"], default="simple",
                    help="rq: SimpleWorker (default: no fork per job, the faster) "
                         "or the forking Worker")
    ap.add_argument("--prefetch", type=int, default=None,
                    help="tenq: jobs leased beyond the threads (default: the library's, adaptive)")
    ap.add_argument("--carry-outcomes", action="store_true",
                    help="tenq: outcomes ride with the next lease (else the reporter sends them)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds for the whole run")
    a, unknown = ap.parse_known_args()
    if a.workload != "W1":
        print(f"driver.py: {a.system} runs W1 only, not {a.workload}", file=sys.stderr)
        return 2
    if unknown:
        ap.error(f"unknown arguments {' '.join(unknown)}")
    if not a.url or a.jobs < 1 or a.concurrency < 1:
        ap.error("--url is needed, and --jobs and --concurrency are 1 or more")
    sys.path.insert(0, HERE)
    out: Dict[str, Any]
    try:
        if a.system.startswith("tenq-python"):
            import w1_tenq

            out = w1_tenq.run(a.url, a.jobs, a.concurrency, a.timeout, a.prefetch,
                              a.carry_outcomes, aio=a.system == "tenq-python-async")
        elif a.system == "rq":
            import w1_rq

            out = w1_rq.run(a.url, a.jobs, a.concurrency, a.timeout, a.rq_worker)
        else:
            import w1_celery

            out = w1_celery.run(a.url, a.jobs, a.concurrency, a.timeout)
    except Exception as e:  # one message, not a trace, for whoever runs it
        print(f"driver.py: {a.system}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    line: Dict[str, Any] = {"system": a.system, "workload": "W1", "concurrency": a.concurrency,
                            "jobs": a.jobs}
    line.update(out)
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
