# SPDX-License-Identifier: Apache-2.0
"""The default, adaptive prefetch: a worker of short jobs leases many at
once, and the jobs waiting in it keep their leases by heartbeats; one of
long jobs holds none it cannot start; a stop runs the jobs in hand while
the grace lasts and gives back those it could not start, with every
outcome reported."""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List

import tenq
from harness import until


def _counts(client: tenq.Client, queue: str) -> Dict[str, Any]:
    ans = client.request("GET", f"/v1/queues/{queue}")
    assert isinstance(ans, dict)
    return ans


def _held(client: tenq.Client, queue: str) -> int:
    """Jobs of the queue leased to a worker (started or not)."""
    c = _counts(client, queue)
    return int(c["leased"]) + int(c["running"])


def _warm(client: tenq.Client, worker: tenq.Worker, n: int = 20) -> None:
    """Short jobs, so that the worker knows its handlers are quick."""
    hs = [client.submit("T.quick") for _ in range(n)]
    for h in hs:
        h.wait(30)
    until(lambda: worker.counts["succeeded"] >= n)


def test_short_jobs_are_leased_in_batches_and_given_back_on_stop(client: tenq.Client,
                                                                  queue: str) -> None:
    reg = tenq.Registry()
    reg.add("T.quick", lambda ctx: None)
    release = threading.Event()
    reg.add("T.block", lambda ctx: release.wait(60))
    w = tenq.Worker(client, queues=[queue], handlers=reg, concurrency=1, grace=0.5, poll=2)
    w.start()
    try:
        _warm(client, w)
        # one request: the blocking job first, then 10 short ones
        hs = client.submit_many([{"type": "T.block"}] + [{"type": "T.quick"}] * 10)
        # the blocking job holds the only thread, and the worker holds the
        # other 10 (beyond its thread: prefetched), none left in the queue
        until(lambda: _held(client, queue) == 11)
        assert _counts(client, queue)["ready"] == 0
        time.sleep(0.3)
        assert w.counts["succeeded"] == 20  # nothing ran behind the blocked thread
        w.stop()
        assert w.join(30)
    finally:
        release.set()
    # after the grace: the running job and the ones not started were given
    # back, reported as failed attempts to retry at once elsewhere
    assert w.counts["failed"] == 11 and w.counts["refused"] == 0
    for h in hs:
        assert not isinstance(h, tenq.TenqError)
        job = client.get(h.id)
        assert (job.state, job.attempts, job.error) == ("ready", 1, "worker stopped")
    assert _held(client, queue) == 0


def test_prefetched_jobs_keep_their_leases(client: tenq.Client, queue: str) -> None:
    client.set_queue(queue, lease_ms=1200)  # heartbeats every 0.4 s
    reg = tenq.Registry()
    reg.add("T.quick", lambda ctx: ctx.attempt)
    reg.add("T.block", lambda ctx: (time.sleep(2.5), ctx.attempt)[1])
    with tenq.Worker(client, queues=[queue], handlers=reg, concurrency=1, poll=2) as w:
        _warm(client, w)
        hs = client.submit_many([{"type": "T.block"}] + [{"type": "T.quick"}] * 5)
        until(lambda: _held(client, queue) == 6)  # 5 of them wait behind the blocked thread
        # twice their lease: heartbeats kept them, none expired and ran again
        assert [h.wait(30) for h in hs if not isinstance(h, tenq.TenqError)] == [1] * 6
    assert w.counts["lost"] == 0 and w.counts["succeeded"] == 26
    assert all(client.get(h.id).attempts == 1 for h in hs if not isinstance(h, tenq.TenqError))


def test_jobs_in_hand_run_during_the_grace(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    reg.add("T.quick", lambda ctx: None)
    gate = threading.Event()
    ran: List[int] = []

    def gated(ctx: tenq.Context) -> int:
        gate.wait(60)
        ran.append(ctx.id)
        return ctx.id

    reg.add("T.gated", gated)
    w = tenq.Worker(client, queues=[queue], handlers=reg, concurrency=2, grace=20, poll=2)
    w.start()
    try:
        _warm(client, w)
        hs = client.submit_many([{"type": "T.gated"}] * 30)
        until(lambda: _held(client, queue) == 30)  # 2 running, 28 prefetched
        w.stop()
        time.sleep(0.2)
        gate.set()  # the stopped worker runs what it holds
        assert w.join(30)
    finally:
        gate.set()
    assert sorted(ran) == sorted(h.id for h in hs if not isinstance(h, tenq.TenqError))
    assert w.counts["succeeded"] == 50 and w.counts["failed"] == 0
    assert _counts(client, queue)["succeeded_total"] == 50


def test_long_jobs_are_not_prefetched(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    lock = threading.Lock()
    ready_at_start: List[int] = []

    def slow(ctx: tenq.Context) -> None:
        with lock:
            ready_at_start.append(int(_counts(client, queue)["ready"]))
        time.sleep(0.3)

    reg.add("T.slow", slow)
    hs = [client.submit("T.slow") for _ in range(6)]
    with tenq.Worker(client, queues=[queue], handlers=reg, concurrency=2, poll=2) as w:
        until(lambda: w.counts["succeeded"] == 6)
    assert all(client.get(h.id).state == "succeeded" for h in hs)
    # before a job finished, the worker leased only for its 2 threads; and
    # after (0.3 s a job: 0.1 s of work is less than a job) too, else the
    # third and fourth jobs would have found the queue emptier
    assert ready_at_start[:2] == [4, 4], ready_at_start
    assert min(ready_at_start[2:4]) >= 2, ready_at_start
