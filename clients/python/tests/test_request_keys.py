# SPDX-License-Identifier: Apache-2.0
"""Submits are safe to send again: each request carries an Idempotency-Key
header, made once per request and the same on every copy the library sends
(a broken connection, another server, a restarted server); the server
answers a copy with the first answer and makes nothing twice. A per-job
idempotency_key is the caller's, sent only when given."""

from __future__ import annotations

import re
import time

import pytest

import tenq
from harness import DroppingProxy, Server

KEY = re.compile(r"^tq1([0-9a-f]{11})([0-9a-f]{8})([0-9a-f]{8})$")


def test_every_submit_request_has_a_key_of_its_own(server: Server, queue: str) -> None:
    proxy = DroppingProxy(server.port)
    try:
        c = tenq.Client(proxy.url, tenant="acme", queue=queue)
        before = int(time.time() * 1000)
        c.submit("T.k1")
        c.submit("T.k2")
        out = c.submit_many([tenq.JobSpec("T.k3", {"i": i}) for i in range(10_001)])
        after = int(time.time() * 1000)
        handles = [h for h in out if isinstance(h, tenq.Handle)]
        c.get(handles[0].id)
    finally:
        proxy.close()
    assert len(handles) == 10_001 and len({h.id for h in handles}) == 10_001
    # two submits, a batch split into two requests, then a GET without key
    assert len(proxy.keys) == 5 and proxy.keys[4] is None
    keys = [k or "" for k in proxy.keys[:4]]
    assert len(set(keys)) == 4, keys
    parts = [KEY.match(k) for k in keys]
    assert all(parts), keys
    ms = [int(m.group(1), 16) for m in parts if m]
    assert before <= ms[0] <= ms[-1] <= after and ms == sorted(ms)
    assert len({m.group(2) for m in parts if m}) == 1  # one client
    assert [int(m.group(3), 16) for m in parts if m] == [0, 1, 2, 3]
    assert keys == sorted(keys)  # time-ordered


def test_no_per_job_key_unless_the_caller_gives_one(client: tenq.Client, queue: str) -> None:
    plain, own = client.submit_many(
        [tenq.JobSpec("T.plain"), tenq.JobSpec("T.own", idempotency_key="mine-1")]
    )
    assert isinstance(plain, tenq.Handle) and isinstance(own, tenq.Handle)
    assert plain.created and own.created
    raw = client.request("GET", f"/v1/jobs/{plain.id}")
    assert raw.get("idempotency_key") is None
    assert client.get(plain.id).idempotency_key is None
    assert client.get(own.id).idempotency_key == "mine-1"
    # the caller's key still makes one job, in another call, in another batch
    again, other = client.submit_many(
        [tenq.JobSpec("T.own", idempotency_key="mine-1"), tenq.JobSpec("T.plain")]
    )
    assert isinstance(again, tenq.Handle) and isinstance(other, tenq.Handle)
    assert again.id == own.id and again.replayed and not again.created
    assert other.created and other.id not in (plain.id, own.id)
    assert len(client.list_jobs(queue=queue).jobs) == 3


def test_a_request_sent_again_is_answered_the_same_and_makes_nothing(
    client: tenq.Client, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the key the library would make for a retry: the same for every call
    monkeypatch.setattr(client._keys, "make", lambda: "tq1-fixed-for-this-test")
    first = client.submit("T.same", {"n": 1})
    again = client.submit("T.same", {"n": 1})
    assert first.created and not first.replayed
    assert again.id == first.id and again.replayed and not again.created
    with pytest.raises(tenq.ConflictError) as e:
        client.submit("T.same", {"n": 2})  # another request under that key
    assert (e.value.status, e.value.code, e.value.field) == (409, "conflict", "Idempotency-Key")
    assert [j.id for j in client.list_jobs(queue=queue).jobs] == [first.id]


def test_lost_answer_sent_again_makes_one_job(client: tenq.Client, server: Server,
                                              queue: str) -> None:
    proxy = DroppingProxy(server.port)
    try:
        c = tenq.Client(proxy.url, tenant="acme", queue=queue, failover_budget=10)
        proxy.drop = 1  # the first answer never arrives; the library sends again
        h = c.submit("T.idem", {"n": 1})
        assert proxy.requests == 2 and proxy.keys[0] == proxy.keys[1] is not None
        assert h.replayed
        proxy.drop = 1
        out = c.submit_many([tenq.JobSpec("T.idem", {"n": i}) for i in range(3)])
        assert all(isinstance(x, tenq.Handle) and x.replayed for x in out)
        assert proxy.requests == 4 and proxy.keys[2] == proxy.keys[3] != proxy.keys[0]
    finally:
        proxy.close()
    jobs = client.list_jobs(queue=queue).jobs
    assert sorted(j.args["n"] for j in jobs) == [0, 1, 1, 2]
    assert all(j.idempotency_key is None for j in jobs)


def test_the_same_key_goes_to_the_next_server(client: tenq.Client, server: Server,
                                              queue: str) -> None:
    # two ways to one server: the first loses the answer, the library fails
    # over to the second with the same request
    a, b = DroppingProxy(server.port), DroppingProxy(server.port)
    try:
        c = tenq.Client([a.url, b.url], tenant="acme", queue=queue, failover_budget=10)
        a.drop = 1
        out = c.submit_many([tenq.JobSpec("T.over", {"i": i}) for i in range(5)])
        assert c.current_server == b.url
    finally:
        a.close()
        b.close()
    assert (a.requests, b.requests) == (1, 1) and a.keys == b.keys and a.keys[0]
    assert all(isinstance(h, tenq.Handle) and h.replayed for h in out)
    ids = [h.id for h in out if isinstance(h, tenq.Handle)]
    assert sorted(j.id for j in client.list_jobs(queue=queue).jobs) == sorted(ids)


def test_submit_retried_across_a_server_restart(fresh_server: Server) -> None:
    proxy = DroppingProxy(fresh_server.port)
    # the server acted and answered; it dies (kill -9) and starts again on
    # the same store before the answer reaches the client
    proxy.on_drop = fresh_server.restart
    try:
        c = tenq.Client(proxy.url, tenant="acme", queue="restart", failover_budget=20)
        proxy.drop = 1
        out = c.submit_many([tenq.JobSpec("T.restart", {"n": i}) for i in range(3)])
        assert proxy.requests == 2 and proxy.keys[0] == proxy.keys[1] is not None
    finally:
        proxy.close()
    assert all(isinstance(h, tenq.Handle) and h.replayed for h in out)
    direct = tenq.Client(fresh_server.url)
    jobs = direct.list_jobs(queue="restart").jobs
    assert len(jobs) == 3
    assert sorted(j.id for j in jobs) == sorted(h.id for h in out if isinstance(h, tenq.Handle))
    assert sorted(j.args["n"] for j in jobs) == [0, 1, 2]
