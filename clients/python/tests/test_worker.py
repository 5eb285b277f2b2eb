# SPDX-License-Identifier: Apache-2.0
"""The worker against a real server: concurrency, retries to the morgue,
errors, cancel and progress, timeouts, middleware, unknown types, a bad
token, a server that goes away and comes back."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, List

import pytest

import tenq
from harness import Server, clock_off, requests_served, until, worker_for


@pytest.mark.parametrize("carry", [False, True])
def test_concurrency_really_overlaps(client: tenq.Client, queue: str, carry: bool) -> None:
    reg = tenq.Registry()
    lock = threading.Lock()
    now = [0]
    peak = [0]
    gate = threading.Event()

    def slow(ctx: tenq.Context) -> int:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
            if now[0] == 4:
                gate.set()
        gate.wait(20)  # every job holds its slot until all four run at once
        with lock:
            now[0] -= 1
        return ctx.id

    reg.add("T.slow", slow)
    hs = [client.submit("T.slow") for _ in range(8)]
    with worker_for(client, queue, reg, concurrency=4, carry_outcomes=carry) as w:
        assert [h.wait(30) for h in hs] == [h.id for h in hs]
    assert peak[0] == 4
    assert w.counts["succeeded"] == 8


@pytest.mark.parametrize("carry", [False, True])
def test_plain_successes_beside_results_and_stats(client: tenq.Client, queue: str,
                                                  carry: bool) -> None:
    # a worker writes the JSON of a batch of plain successes (no result, no
    # stats) itself; a batch with others sends objects: both are delivered
    reg = tenq.Registry()
    reg.add("T.none", lambda ctx: None)
    reg.add("T.id", lambda ctx: ctx.id)

    def with_stats(ctx: tenq.Context) -> None:
        ctx.stats = {"rows": 2}

    reg.add("T.stats", with_stats)
    plain = [client.submit("T.none") for _ in range(40)]
    mixed = [client.submit(t) for _ in range(10) for t in ("T.none", "T.id", "T.stats")]
    with worker_for(client, queue, reg, concurrency=3, carry_outcomes=carry) as w:
        assert [h.wait(30) for h in plain] == [None] * 40
        assert [h.wait(30) for h in mixed] == [h.id if i % 3 == 1 else None
                                               for i, h in enumerate(mixed)]
        until(lambda: w.counts["succeeded"] == 70)
    assert w.counts["failed"] == w.counts["refused"] == 0


def test_retries_down_to_the_morgue(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    seen: List[int] = []

    def flaky(ctx: tenq.Context) -> None:
        seen.append(ctx.attempt)
        raise tenq.Retry("not yet", delay=0.05)

    reg.add("T.flaky", flaky)
    h = client.submit("T.flaky", max_attempts=3)
    with worker_for(client, queue, reg, concurrency=2):
        job = h.wait_job(30)
    assert job.state == "dead" and job.attempts == 3 and seen == [1, 2, 3]
    assert job.error == "Retry: not yet"
    assert [j.id for j in client.morgue(queue=queue).jobs] == [h.id]


def test_exception_is_a_failed_attempt_with_class_and_message(client: tenq.Client,
                                                              queue: str) -> None:
    reg = tenq.Registry()

    def broken(ctx: tenq.Context) -> None:
        raise KeyError("missing")

    def picky(ctx: tenq.Context) -> None:
        raise tenq.NoRetry("bad input")

    reg.add("T.broken", broken)
    reg.add("T.picky", picky)
    h1 = client.submit("T.broken", max_attempts=1)
    h2 = client.submit("T.picky", max_attempts=10)
    with worker_for(client, queue, reg, concurrency=2) as w:
        j1, j2 = h1.wait_job(30), h2.wait_job(30)
        # the worker counts a failure once the server has taken it, which a
        # waiter may hear of first
        until(lambda: w.counts["failed"] == 2)
    assert (j1.state, j1.error) == ("dead", "KeyError: 'missing'")
    assert (j2.state, j2.attempts, j2.error) == ("dead", 1, "NoRetry: bad input")


def test_unknown_type_fails_the_attempt(client: tenq.Client, queue: str) -> None:
    h = client.submit("T.nobody", max_attempts=1)
    with worker_for(client, queue, tenq.Registry(), name="w-unknown"):
        job = h.wait_job(30)
    assert job.state == "dead"
    assert job.error == "no handler for type T.nobody on worker w-unknown"


def test_cancel_noticed_and_progress_recorded(client: tenq.Client, queue: str) -> None:
    client.set_queue(queue, lease_ms=1500)  # heartbeats every 0.5 s
    reg = tenq.Registry()
    stopped = threading.Event()

    def long(ctx: tenq.Context) -> None:
        tenq.progress({"step": 1})
        try:
            ctx.sleep(60)
        except tenq.Stopped as e:
            assert e.reason == tenq.CANCELLED and ctx.cancelled
            stopped.set()
            raise

    reg.add("T.long", long)
    h = client.submit("T.long")
    with worker_for(client, queue, reg):
        # the progress and the start notice travel apart: wait for both
        until(lambda: (lambda j: j.progress == {"step": 1} and j.state == "running")(client.get(h.id)))
        client.cancel(h.id)
        job = h.wait_job(30)
    assert job.state == "cancelled" and stopped.is_set()


def test_timeout_fails_the_job(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    reg.add("T.stuck", lambda ctx: time.sleep(30), timeout=0.5)
    reg.add("T.quick", lambda ctx: "ok")
    h = client.submit("T.stuck", max_attempts=1)
    with worker_for(client, queue, reg) as w:
        job = h.wait_job(30)
        # the slot has a new thread: the next job runs while the old one sleeps
        assert client.submit("T.quick").wait(30) == "ok"
    assert (job.state, job.error) == ("dead", "timeout")
    assert w.counts["timed_out"] == 1


def test_middleware_order_and_error_reporting(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    order: List[str] = []
    reported: List[str] = []

    def mw(name: str) -> tenq.handlers.Middleware:
        def wrap(ctx: tenq.Context, call_next: Callable[[], Any]) -> Any:
            order.append(f"{name}>")
            try:
                return call_next()
            finally:
                order.append(f"<{name}")
        return wrap

    def handler(ctx: tenq.Context) -> str:
        order.append("handler")
        if ctx.args == "boom":
            raise ValueError("boom")
        return "fine"

    reg.add("T.mw", handler)
    middleware = [mw("outer"), tenq.middleware.error_reporter(
        lambda ctx, e: reported.append(f"{ctx.id}:{type(e).__name__}")), mw("inner")]
    h = client.submit("T.mw", "ok")
    with worker_for(client, queue, reg, middleware=middleware):
        assert h.wait(30) == "fine"
        assert order == ["outer>", "inner>", "handler", "<inner", "<outer"]
        bad = client.submit("T.mw", "boom", max_attempts=1)
        assert bad.wait_job(30).error == "ValueError: boom"
    assert reported == [f"{bad.id}:ValueError"]


def test_async_handler(client: tenq.Client, queue: str) -> None:
    import asyncio

    reg = tenq.Registry()

    async def coro(ctx: tenq.Context) -> int:
        await asyncio.sleep(0.01)
        return 7

    reg.add("T.async", coro)
    with worker_for(client, queue, reg):
        assert client.submit("T.async").wait(30) == 7


def test_bad_token_stops_the_worker(tmp_path: Any) -> None:
    s = Server(str(tmp_path), env={"TENQ_ADMIN_TOKEN": "admin-secret-0123456789"}).start()
    try:
        w = tenq.Worker(tenq.Client(s.url, "wrong"), queues=["q"], handlers=tenq.Registry())
        w.start()
        assert w.join(30)
        assert isinstance(w.fatal, tenq.UnauthenticatedError) and w.exit_status == 1
    finally:
        s.stop()


@pytest.mark.parametrize("carry", [False, True])
def test_server_away_outcomes_kept_and_delivered(fresh_server: Server, carry: bool) -> None:
    c = tenq.Client(fresh_server.url, tenant="acme", queue="away", failover_budget=2)
    reg = tenq.Registry()
    release = threading.Event()
    reg.add("T.held", lambda ctx: (release.wait(60), ctx.id)[1])
    hs = [c.submit("T.held") for _ in range(3)]
    with worker_for(c, "away", reg, concurrency=3, carry_outcomes=carry) as w:
        until(lambda: w.counts["leased"] == 3)
        time.sleep(0.5)  # the leases are stored (--lease-write-delay)
        fresh_server.kill()
        release.set()
        time.sleep(1.0)  # the outcomes fail to go, and wait
        assert w.counts["succeeded"] == 0
        fresh_server.restart()
        until(lambda: w.counts["succeeded"] == 3, 60)
    assert [h.wait(10) for h in hs] == [h.id for h in hs]


def test_heartbeats_keep_a_long_job_leased(client: tenq.Client, queue: str) -> None:
    client.set_queue(queue, lease_ms=1200)
    reg = tenq.Registry()
    reg.add("T.longer", lambda ctx: (time.sleep(3.5), ctx.attempt)[1])
    h = client.submit("T.longer")
    with worker_for(client, queue, reg) as w:
        assert h.wait(30) == 1  # the first attempt, never expired and retried
    assert client.get(h.id).attempts == 1 and w.counts["lost"] == 0


@pytest.mark.parametrize("offset", [3600, -3600])
def test_heartbeats_by_the_time_left_not_the_wall_clock(tmp_path: Any, offset: int) -> None:
    """The server's wall clock an hour off this machine's: the worker spaces
    heartbeats by the time the server says the lease has left, so they come
    neither 20 minutes apart (the lease would lapse and the job run again)
    nor as fast as they can."""
    s = Server(str(tmp_path), env=clock_off(offset)).start()
    c = tenq.Client(s.url, tenant="acme", queue="hb", failover_budget=5.0)
    try:
        c.set_queue("hb", lease_ms=3000)  # heartbeats every second
        reg = tenq.Registry()
        reg.add("T.longer", lambda ctx: (time.sleep(3.5), ctx.attempt)[1])
        before = requests_served(s)
        h = c.submit("T.longer")
        with worker_for(c, "hb", reg) as w:
            assert h.wait(30) == 1  # the first attempt, never expired and retried
        served = requests_served(s) - before
        assert c.get(h.id).attempts == 1 and w.counts["lost"] == 0
        # 3 heartbeats, the lease, the ack, the submit and the waits
        # (heartbeats as fast as they can: 35 and more)
        assert served < 20, served
    finally:
        c.close()
        s.stop()


def test_prefetch_and_types(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    reg.add("T.mine", lambda ctx: ctx.args)
    mine = [client.submit("T.mine", i) for i in range(30)]
    other = client.submit("T.other")
    with worker_for(client, queue, reg, concurrency=2, prefetch=6, types=["T.mine"]) as w:
        assert [h.wait(30) for h in mine] == list(range(30))
    assert client.get(other.id).state == "ready" and w.counts["leased"] == 30
