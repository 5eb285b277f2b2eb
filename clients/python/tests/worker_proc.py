# SPDX-License-Identifier: Apache-2.0
"""A worker process for the stop tests: worker_proc.py URL QUEUE GRACE.
Its handler ``T.sleep`` sleeps ``args["s"]`` seconds (not looking at stop
requests, like most real code) and returns "slept"."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import tenq  # noqa: E402


@tenq.handler("T.sleep")
def sleep(ctx: tenq.Context) -> str:
    time.sleep(ctx.args["s"])
    return "slept"


url, queue, grace = sys.argv[1], sys.argv[2], float(sys.argv[3])
worker = tenq.Worker(tenq.Client(url), queues=[queue], concurrency=3, grace=grace, poll=30)
print("ready", flush=True)
sys.exit(worker.run())
