#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""W1 (blank jobs) for the Python client of tenq and its usual peers.

    driver.py --system tenq   --jobs N --concurrency C --server URL [--carry-outcomes]
    driver.py --system rq     --jobs N --concurrency C --redis URL [--rq-worker simple]
    driver.py --system celery --jobs N --concurrency C --redis URL

Enqueues N blank jobs by the system's bulk path (timed: enqueue_per_s),
checks the queue holds N, then starts the workers and drains them (timed
from the workers being ready to the last job's outcome: drain_per_s), and
checks that every job ran. Prints one JSON line; exits non-zero with a
message on failure. See README.md beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--system", required=True, choices=["tenq", "rq", "celery"])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument("--server", help="a tenq server's URL (--system tenq)")
    ap.add_argument("--redis", help="a Redis URL (rq, celery)")
    ap.add_argument("--rq-worker", choices=["fork", "simple"], default="fork",
                    help="rq: the default forking Worker, or SimpleWorker (no fork per job)")
    ap.add_argument("--prefetch", type=int, default=0, help="tenq: jobs leased beyond concurrency")
    ap.add_argument("--carry-outcomes", action="store_true",
                    help="tenq: outcomes ride with the next lease (else the reporter sends them)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds for the whole run")
    a = ap.parse_args()
    if a.jobs < 1 or a.concurrency < 1:
        ap.error("--jobs and --concurrency are 1 or more")
    sys.path.insert(0, HERE)
    out: Dict[str, Any]
    try:
        if a.system == "tenq":
            if not a.server:
                ap.error("--system tenq needs --server URL")
            import w1_tenq

            out = w1_tenq.run(a.server, a.jobs, a.concurrency, a.timeout, a.prefetch,
                              a.carry_outcomes)
        else:
            if not a.redis:
                ap.error(f"--system {a.system} needs --redis URL")
            if a.system == "rq":
                import w1_rq

                out = w1_rq.run(a.redis, a.jobs, a.concurrency, a.timeout, a.rq_worker)
            else:
                import w1_celery

                out = w1_celery.run(a.redis, a.jobs, a.concurrency, a.timeout)
    except Exception as e:  # one message, not a trace, for whoever runs it
        print(f"driver: {a.system}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    line = {"system": a.system, "jobs": a.jobs}
    line.update(out)
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
