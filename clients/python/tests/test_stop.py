# SPDX-License-Identifier: Apache-2.0
"""SIGTERM and SIGINT to a worker process with jobs in hand."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import tenq
from harness import until

PROC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_proc.py")


def _start(url: str, queue: str, grace: float) -> "subprocess.Popen[bytes]":
    p = subprocess.Popen([sys.executable, PROC, url, queue, str(grace)], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    return p


def test_sigterm_finishes_running_jobs_and_gives_back_the_rest(client: tenq.Client,
                                                               queue: str) -> None:
    short = [client.submit("T.sleep", {"s": 1.5}) for _ in range(2)]
    long = client.submit("T.sleep", {"s": 120})
    p = _start(client.current_server, queue, grace=4)
    try:
        every = short + [long]
        until(lambda: all(client.get(h.id).state == "running" for h in every))
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) == 0
        took = time.monotonic() - t0
    finally:
        p.kill()
    assert 3.5 <= took < 30, took  # the grace period, then the give-back
    for h in short:
        assert client.get(h.id).state == "succeeded"
    job = client.get(long.id)
    assert job.error == "worker stopped" and job.attempts == 1
    assert job.state in ("ready", "scheduled")
    assert (job.run_at or 0) <= time.time() * 1000 + 1000  # retried at once


def test_second_signal_stops_at_once(client: tenq.Client, queue: str) -> None:
    h = client.submit("T.sleep", {"s": 120})
    p = _start(client.current_server, queue, grace=60)
    try:
        until(lambda: client.get(h.id).state == "running")
        p.send_signal(signal.SIGINT)
        time.sleep(0.3)
        assert p.poll() is None  # the first waits for the job
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        assert p.wait(30) == 1
        assert time.monotonic() - t0 < 10
    finally:
        p.kill()
    assert client.get(h.id).state == "running"  # nothing reported: its lease runs out
