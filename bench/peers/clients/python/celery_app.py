# SPDX-License-Identifier: Apache-2.0
"""The Celery app of the W1 run: a blank task, no result backend; each pool
process counts what it ran and writes it at exit; the main process writes
when it is ready to take jobs."""

import json
import os
import time

from celery import Celery
from celery.signals import task_postrun, worker_process_shutdown, worker_ready

app = Celery("w1bench", broker=os.environ["BENCH_REDIS"])
app.conf.update(
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)

_ran = 0
_last = 0.0


@app.task(name="blank")
def blank() -> None:
    """Does nothing."""


@task_postrun.connect
def _count(**_: object) -> None:
    global _ran, _last
    _ran += 1
    _last = time.time()


@worker_process_shutdown.connect
def _write(**_: object) -> None:
    path = os.path.join(os.environ["BENCH_DIR"], f"counts-{os.getpid()}")
    with open(path, "w") as f:
        json.dump({"ran": _ran, "last": _last}, f)


@worker_ready.connect
def _ready(**_: object) -> None:
    path = os.path.join(os.environ["BENCH_DIR"], "ready")
    with open(path + ".tmp", "w") as f:
        f.write(repr(time.time()))
    os.replace(path + ".tmp", path)
