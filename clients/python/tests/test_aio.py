# SPDX-License-Identifier: Apache-2.0
"""The asyncio client (tenq.AsyncClient) against real servers: many
coroutines at once under load, the event loop never blocked while a wait
long-polls, an Idempotency-Key per submit request sent again unchanged
after a lost answer, the next server when one is down, a standby's leader
followed (two servers on one PostgreSQL), the switch's ``await
task.with_options(client=...).enqueue(...)``, the test modes."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, List, Tuple

import pytest

import tenq
from harness import DroppingProxy, Server, free_port, worker_for
from test_failover import pair  # noqa: F401 (a fixture: two servers on one PostgreSQL)


class Doubler:
    @tenq.task(queue="aio-switch")
    def double(self, n: int) -> Dict[str, int]:
        return {"n": n, "twice": 2 * n}


def _echo() -> tenq.Registry:
    reg = tenq.Registry()
    reg.add("A.echo", lambda ctx: ctx.args)
    reg.add("A.slow", lambda ctx: (time.sleep(1.0), ctx.args)[1])
    return reg


def test_many_coroutines_submit_and_wait_under_load(client: tenq.Client, server: Server,
                                                     queue: str) -> None:
    """2,000 coroutines on one AsyncClient (more than its 64 connections), each submitting a job (and some a
    batch of 5) and waiting for its result, while a worker drains them."""

    async def main() -> Tuple[List[Any], List[Any]]:
        async with tenq.AsyncClient(server.url, tenant="acme", queue=queue) as ac:

            async def one(i: int) -> Any:
                h = await ac.submit("A.echo", {"i": i})
                return await h.wait(60)

            async def batch(i: int) -> List[Any]:
                hs = await ac.submit_many([{"type": "A.echo", "args": {"b": i, "k": k}}
                                           for k in range(5)])
                return [await h.wait(60) for h in hs if isinstance(h, tenq.AsyncHandle)]

            singles = await asyncio.gather(*(one(i) for i in range(2000)))
            batches = await asyncio.gather(*(batch(i) for i in range(40)))
            return list(singles), list(batches)

    with worker_for(client, queue, _echo(), concurrency=8) as w:
        singles, batches = asyncio.run(main())
    assert singles == [{"i": i} for i in range(2000)]
    assert batches == [[{"b": i, "k": k} for k in range(5)] for i in range(40)]
    assert w.counts["succeeded"] == 2200 and w.counts["failed"] == 0
    # every job once: no submit made two
    assert sum(1 for _ in client.iter_jobs(queue=queue, limit=1000)) == 2200


def test_a_long_wait_does_not_block_the_event_loop(client: tenq.Client, server: Server,
                                                   queue: str) -> None:
    """While one coroutine long-polls a job that takes a second, another
    keeps running: a blocking client would freeze it for that second."""

    async def main() -> Tuple[Any, int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(0.01)
                ticks += 1

        async with tenq.AsyncClient(server.url, tenant="acme", queue=queue) as ac:
            t = asyncio.ensure_future(ticker())
            h = await ac.submit("A.slow", {"slow": True})
            result = await h.wait(30)
            done.set()
            await t
        return result, ticks

    with worker_for(client, queue, _echo()):
        result, ticks = asyncio.run(main())
    assert result == {"slow": True}
    assert ticks >= 20  # at least 0.2 s of ticks during the 1 s job


def test_a_lost_answer_is_sent_again_with_its_key_and_makes_one_job(
    client: tenq.Client, server: Server, queue: str
) -> None:
    proxy = DroppingProxy(server.port)
    try:
        proxy.drop = 1  # the server makes the job; its answer never arrives

        async def main() -> Tuple[tenq.AsyncHandle[Any], List[Any]]:
            async with tenq.AsyncClient(proxy.url, tenant="acme", queue=queue,
                                        failover_budget=10) as ac:
                h = await ac.submit("A.echo", {"once": 1})
                many = await ac.submit_many([{"type": "A.echo", "args": {"m": k}}
                                             for k in range(3)])
                return h, many

        h, many = asyncio.run(main())
        assert h.replayed and not h.created
        assert [j.id for j in client.list_jobs(queue=queue, type="A.echo").jobs[-1:]] == [h.id]
        keys = proxy.keys
        # two copies of the first submit under one key; the batch: a key of its own
        assert len(keys) == 3 and keys[0] == keys[1] and keys[2] != keys[0]
        assert all(k is not None and k.startswith("tq1") for k in keys)
        assert [type(x) for x in many] == [tenq.AsyncHandle] * 3
        assert len(client.list_jobs(queue=queue).jobs) == 4
    finally:
        proxy.close()


def test_next_server_when_one_is_down(server: Server, queue: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"

    async def main() -> Tuple[str, Any]:
        async with tenq.AsyncClient([dead, server.url], tenant="acme", queue=queue,
                                    failover_budget=10) as ac:
            h = await ac.submit("A.next", {"n": 1})
            return ac.current_server, (await ac.get(h.id)).args

    assert asyncio.run(main()) == (server.url, {"n": 1})


def test_standby_redirects_and_the_async_client_follows(
    pair: Tuple[Server, Server], queue: str  # noqa: F811
) -> None:
    leader, standby = pair
    c = tenq.Client(leader.url, tenant="acme", queue=queue)

    async def main() -> Tuple[str, List[str], Any]:
        async with tenq.AsyncClient(standby.url, tenant="acme", queue=queue,
                                    failover_budget=10) as ac:
            h = await ac.submit("A.echo", {"n": 1})
            return ac.current_server, ac.servers, await h.wait(30)

    with worker_for(c, queue, _echo()):
        current, servers, result = asyncio.run(main())
    assert current == leader.url and leader.url in servers
    assert result == {"n": 1}


def test_the_switch_enqueues_with_await(client: tenq.Client, server: Server) -> None:
    async def main() -> Tuple[Any, Any, str]:
        async with tenq.AsyncClient(server.url, tenant="acme") as ac:
            task = Doubler().double.with_options(client=ac)
            h = await task.enqueue(21)
            return task(1), await h.wait(30), (await ac.get(h.id)).type

    with tenq.Worker(client, queues=["aio-switch"], poll=2):
        inline, result, kind = asyncio.run(main())
    assert inline == {"n": 1, "twice": 2}
    assert result == {"n": 21, "twice": 42}
    assert kind == "Doubler.double"
    # the sync form refuses an AsyncClient given otherwise, with a clear error
    ac = tenq.AsyncClient(server.url, tenant="acme")
    registry = tenq.Registry()

    class Bound:
        @tenq.task(queue="aio-switch", client=ac, registry=registry)
        def run(self, n: int) -> int:
            return n

    with pytest.raises(tenq.InvalidError) as e:
        Bound().run.enqueue(1)
    assert e.value.field == "client" and "await" in str(e.value)


def test_test_modes_take_async_submits() -> None:
    async def main() -> Tuple[Any, int]:
        ac = tenq.AsyncClient("http://127.0.0.1:9", tenant="acme")  # never reached
        with tenq.testing.inline():
            inline = await (await Doubler().double.with_options(client=ac).enqueue(4)).wait()
        with tenq.testing.fake() as jobs:
            await ac.submit("Doubler.double", {"n": 5}, queue="aio-switch")
            recorded = len(jobs.jobs())
        return inline, recorded

    assert asyncio.run(main()) == ({"n": 4, "twice": 8}, 1)


def test_bad_input_is_refused_before_sending(server: Server) -> None:
    async def main() -> None:
        async with tenq.AsyncClient(server.url, tenant="acme") as ac:
            with pytest.raises(tenq.InvalidError) as e:
                await ac.submit("A.x", {"x": object()}, queue="q")
            assert e.value.field == "args"
            with pytest.raises(tenq.InvalidError) as e:
                await ac.submit("A.x")  # no queue
            assert e.value.field == "queue"
            with pytest.raises(tenq.InvalidError) as e:
                await ac.submit("bad type", queue="q")  # the server's refusal
            assert e.value.field == "type"
            with pytest.raises(tenq.NotFoundError):
                await ac.get(10**12)

    asyncio.run(main())


def test_submit_many_over_several_requests_keeps_the_order(client: tenq.Client, server: Server,
                                                           queue: str) -> None:
    """25,002 jobs: three requests, one after another, the next encoded
    while one is out; ids in the order of the list; an Index(i) naming a job
    of an earlier request becomes its id; a job refused alone gets its error."""
    jobs: List[Any] = [{"type": "A.echo", "args": {"i": i}} for i in range(25_000)]
    jobs.append(tenq.JobSpec("A.after", depends_on=[tenq.Index(3)]))
    jobs.append({"type": "bad type"})

    async def main() -> List[Any]:
        async with tenq.AsyncClient(server.url, tenant="acme", queue=queue) as ac:
            return await ac.submit_many(jobs)

    out = asyncio.run(main())
    handles = [h for h in out if isinstance(h, tenq.AsyncHandle)]
    assert len(handles) == 25_001 and isinstance(out[-1], tenq.InvalidError)
    ids = [h.id for h in handles]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert client.get(ids[-1]).parents == [ids[3]]
    assert client.get(ids[12_345]).args == {"i": 12_345}


def test_max_connections_bounds_the_connections_to_a_server(server: Server, queue: str) -> None:
    """20 coroutines long-polling at once on a client of max_connections=2:
    two connections, the other requests waiting for them."""
    proxy = DroppingProxy(server.port)
    try:

        async def main() -> float:
            async with tenq.AsyncClient(proxy.url, tenant="acme", queue=queue,
                                        max_connections=2) as ac:
                h = await ac.submit("A.never")  # no worker: each wait runs its time
                t0 = time.monotonic()
                jobs = await asyncio.gather(*(ac.wait(h.id, 0.2) for _ in range(20)))
                assert all(j.state == "ready" for j in jobs)
                return time.monotonic() - t0

        took = asyncio.run(main())
        assert proxy.connections <= 2
        assert took >= 20 * 0.2 / 2 * 0.9  # two at a time
    finally:
        proxy.close()
