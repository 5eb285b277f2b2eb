# SPDX-License-Identifier: Apache-2.0
"""Quotas and backpressure against real servers (docs/SEMANTICS.md,
"Quotas and backpressure"): a submit over a tenant's or a queue's
max_queued / max_queued_bytes raises QuotaExceededError naming the limit
and makes nothing; a server at its memory budget raises OverloadedError;
submits wait for room, sending the same request (the same Idempotency-Key)
after the Retry-After, and make each job once; past the client's
backpressure_budget they raise. (tenq.tx's TQ429: test_tx.py.)"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

import tenq
from harness import DroppingProxy, Server


def _drain(client: tenq.Client, queue: str, n: int, after: float = 0.0) -> List[int]:
    """After ``after`` seconds, leases and acks ``n`` jobs of ``queue``;
    their ids."""
    time.sleep(after)
    done: List[int] = []
    while len(done) < n:
        got = client.lease([queue], max=min(1000, n - len(done)), wait_ms=1000)["jobs"]
        if got:
            client.outcomes([{"id": j["id"], "token": j["token"], "ok": True} for j in got])
        done.extend(j["id"] for j in got)
    return done


def _args_of(client: tenq.Client, queue: str) -> List[Any]:
    return [j.args for j in client.iter_jobs(queue=queue)]


@pytest.fixture
def tenant(queue: str) -> str:
    """A tenant of the test's own."""
    return "t-" + queue


@pytest.fixture
def proxy(server: Server) -> Iterator[DroppingProxy]:
    """A relay that records each request's Idempotency-Key."""
    p = DroppingProxy(server.port)
    yield p
    p.close()


def test_a_submit_over_a_quota_raises_naming_the_limit_and_makes_nothing(
    server: Server, queue: str, tenant: str
) -> None:
    c = tenq.Client(server.url, tenant=tenant, queue=queue, backpressure_budget=0)
    assert c.set_tenant(tenant, max_queued=2)["max_queued"] == 2
    t0 = time.monotonic()
    with pytest.raises(tenq.QuotaExceededError) as e:
        c.submit_many([tenq.JobSpec("Q.t", {"i": i}) for i in range(3)])
    assert time.monotonic() - t0 < 1.0  # a budget of 0: no wait
    err = e.value
    assert (err.status, err.code, err.field) == (429, "quota_exceeded", "max_queued")
    assert err.retry_after == 1.0
    assert isinstance(err, tenq.RateLimitedError) and f"tenant {tenant}" in err.message
    info = c.get_tenant(tenant)
    assert (info["queued"], info["submitted_total"]) == (0, 0)  # nothing of the batch
    with pytest.raises(tenq.QuotaExceededError):
        c.create_batch([tenq.JobSpec("Q.t", {"i": i}) for i in range(3)])
    assert c.get_tenant(tenant)["submitted_total"] == 0
    assert len(c.submit_many([tenq.JobSpec("Q.t", {"i": i}) for i in range(2)])) == 2
    with pytest.raises(tenq.QuotaExceededError) as e:
        c.submit("Q.t", {"i": 2})
    assert e.value.field == "max_queued"
    info = c.get_tenant(tenant)
    assert (info["queued"], info["submitted_total"]) == (2, 2)

    # a queue's bytes of args
    other = queue + "-bytes"
    set_to = c.set_queue(other, max_queued_bytes=100)
    assert (set_to["max_queued_bytes"], set_to["queued_bytes"]) == (100, 0)
    with pytest.raises(tenq.QuotaExceededError) as e:
        c.submit("Q.t", {"pad": "x" * 200}, queue=other, tenant="t-other")
    assert e.value.field == "max_queued_bytes" and f"queue {other}" in e.value.message
    assert c.get_queue(other)["queued"] == 0
    h = c.submit("Q.t", {"pad": "y"}, queue=other, tenant="t-other")
    assert h.created
    q = c.get_queue(other)
    assert (q["queued"], q["queued_bytes"]) == (1, len('{"pad":"y"}'))
    # None clears a quota
    assert c.set_tenant(tenant, max_queued=None)["max_queued"] is None
    assert c.submit("Q.t", {"i": 2}).created


def test_a_bulk_submit_waits_for_room_and_makes_each_job_once(
    server: Server, proxy: DroppingProxy, queue: str, tenant: str
) -> None:
    admin = tenq.Client(server.url, tenant=tenant, queue=queue)
    admin.set_tenant(tenant, max_queued=3)
    first = admin.submit_many([tenq.JobSpec("Q.w", {"first": i}) for i in range(3)])
    assert all(isinstance(h, tenq.Handle) for h in first)
    c = tenq.Client(proxy.url, tenant=tenant, queue=queue)  # the default budget: 60 s
    assert c.backpressure_budget == 60.0
    freed: List[int] = []
    acker = threading.Thread(target=lambda: freed.extend(_drain(admin, queue, 3, after=1.0)))
    acker.start()
    t0 = time.monotonic()
    out = c.submit_many([tenq.JobSpec("Q.w", {"i": i}) for i in range(3)])
    took = time.monotonic() - t0
    acker.join()
    assert len(freed) == 3
    handles = [h for h in out if isinstance(h, tenq.Handle)]
    assert len(handles) == 3 and all(h.created and not h.replayed for h in handles), out
    assert took >= 0.9, took  # it waited for the room made after 1 s
    # refused at least once, then sent again: the same request, the same key
    assert len(proxy.keys) >= 2 and len(set(proxy.keys)) == 1, proxy.keys
    args = _args_of(admin, queue)
    assert sorted(a.get("i", -1) for a in args) == [-1, -1, -1, 0, 1, 2]  # each once
    info = admin.get_tenant(tenant)
    assert (info["queued"], info["submitted_total"]) == (3, 6)


def test_a_batch_and_a_submit_wait_too(
    server: Server, proxy: DroppingProxy, queue: str, tenant: str
) -> None:
    admin = tenq.Client(server.url, tenant=tenant, queue=queue)
    admin.set_queue(queue, max_queued=1)
    admin.submit("Q.b", {"first": 0})
    c = tenq.Client(proxy.url, tenant=tenant, queue=queue, backpressure_budget=30)
    acker = threading.Thread(target=_drain, args=(admin, queue, 1, 1.0))
    acker.start()
    made = c.create_batch([tenq.JobSpec("Q.b", {"i": 0})])
    acker.join()
    assert len(made.jobs) == 1 and made.jobs[0].created
    acker = threading.Thread(target=_drain, args=(admin, queue, 1, 1.0))
    acker.start()
    h = c.submit("Q.b", {"i": 1})
    acker.join()
    assert h.created
    # two calls, each refused then let in, each under one key of its own
    keys = proxy.keys
    assert len(keys) >= 4 and len(set(keys)) == 2, keys
    assert keys == sorted(keys)
    assert sorted(a.get("i", -1) for a in _args_of(admin, queue)) == [-1, 0, 1]


def test_past_the_budget_the_refusal_is_raised_and_nothing_made(
    server: Server, proxy: DroppingProxy, queue: str, tenant: str
) -> None:
    admin = tenq.Client(server.url, tenant=tenant, queue=queue)
    admin.set_tenant(tenant, max_queued_bytes=20)
    admin.submit("Q.p", {"pad": "z"})
    c = tenq.Client(proxy.url, tenant=tenant, queue=queue, backpressure_budget=2.5)
    t0 = time.monotonic()
    with pytest.raises(tenq.QuotaExceededError) as e:
        c.submit_many([tenq.JobSpec("Q.p", {"pad": "zz"}) for _ in range(2)])
    took = time.monotonic() - t0
    assert e.value.field == "max_queued_bytes" and e.value.retry_after == 1.0
    # tried at once, after 1 s, after 2 s and at 2.5 s: then raised
    assert 2.4 <= took < 15, took
    assert len(proxy.keys) >= 3 and len(set(proxy.keys)) == 1, proxy.keys
    info = admin.get_tenant(tenant)
    assert (info["queued"], info["submitted_total"]) == (1, 1)


def test_the_async_client_waits_for_room(server: Server, queue: str, tenant: str) -> None:
    admin = tenq.Client(server.url, tenant=tenant, queue=queue)
    admin.set_tenant(tenant, max_queued=2)
    admin.submit_many([tenq.JobSpec("Q.a", {"first": i}) for i in range(2)])

    async def main() -> List[Any]:
        async with tenq.AsyncClient(server.url, tenant=tenant, queue=queue) as ac:
            freeing = asyncio.ensure_future(asyncio.to_thread(_drain, admin, queue, 2, 1.0))
            out = await ac.submit_many([tenq.JobSpec("Q.a", {"i": i}) for i in range(2)])
            await freeing
            refused = tenq.AsyncClient(
                server.url, tenant=tenant, queue=queue, backpressure_budget=0
            )
            with pytest.raises(tenq.QuotaExceededError):
                await refused.submit("Q.a", {"i": 9})
            return out

    out = asyncio.run(main())
    assert all(isinstance(h, tenq.aio.AsyncHandle) and h.created for h in out), out
    assert sorted(a.get("i", -1) for a in _args_of(admin, queue)) == [-1, -1, 0, 1]


def test_a_bad_budget_is_refused() -> None:
    for bad in (-1, float("nan"), "60", True):
        with pytest.raises(tenq.InvalidError) as e:
            tenq.Client("http://127.0.0.1:1", backpressure_budget=bad)  # type: ignore[arg-type]
        assert e.value.field == "backpressure_budget"


def test_a_server_at_its_memory_budget_is_waited_out(tmp_path: Any, queue: str) -> None:
    srv = Server(str(tmp_path), args=["--memory-budget", "4MiB"]).start()
    try:
        fill = tenq.Client(srv.url, tenant="flood", queue=queue, backpressure_budget=0)
        made = 0
        with pytest.raises(tenq.OverloadedError) as e:
            while made < 200_000:
                fill.submit_many([tenq.JobSpec("O.f", {"n": made + i}) for i in range(1000)])
                made += 1000
        err = e.value
        assert (err.status, err.code, err.retry_after) == (429, "overloaded", 1.0)
        assert isinstance(err, tenq.RateLimitedError) and "memory budget" in err.message
        assert 1000 <= made < 200_000
        assert fill.get_tenant("flood")["queued"] == made  # nothing of the refused batch

        c = tenq.Client(srv.url, tenant="flood", queue=queue)
        got: Dict[str, Any] = {}

        def submit() -> None:
            t0 = time.monotonic()
            got["out"] = c.submit_many([tenq.JobSpec("O.w", {"w": i}) for i in range(1000)])
            got["took"] = time.monotonic() - t0

        sender = threading.Thread(target=submit)
        sender.start()
        time.sleep(1.0)
        assert sender.is_alive()  # still refused: waiting
        _drain(fill, queue, made)
        sender.join(60)
        assert not sender.is_alive()
        out = got["out"]
        assert len(out) == 1000 and all(isinstance(h, tenq.Handle) and h.created for h in out)
        assert got["took"] >= 1.0
        info = fill.get_tenant("flood")
        assert (info["queued"], info["submitted_total"]) == (1000, made + 1000)
    finally:
        srv.stop()
