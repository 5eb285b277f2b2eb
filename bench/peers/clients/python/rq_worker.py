# SPDX-License-Identifier: Apache-2.0
"""One RQ worker process: rq_worker.py URL QUEUE fork|simple READY_FILE.
Writes the time it starts working to READY_FILE, then works in burst mode
(it exits once the queue is empty)."""

import sys
import time

from redis import Redis
from rq import SimpleWorker, Worker

url, queue, kind, ready = sys.argv[1:5]
cls = SimpleWorker if kind == "simple" else Worker
w = cls([queue], connection=Redis.from_url(url))
with open(ready + ".tmp", "w") as f:
    f.write(repr(time.time()))
import os  # noqa: E402

os.replace(ready + ".tmp", ready)
w.work(burst=True, logging_level="WARNING")
