# SPDX-License-Identifier: Apache-2.0
"""Pauses, server-side timeouts and rate limits through the library,
against a real server: a paused queue (or tenant) leases nothing to the
worker until resumed; a job past its ``timeout_ms`` is failed by the
server and the worker stops its handler (reason ``lost``) and reports
nothing; a rate set with set_queue spaces the worker's starts."""

from __future__ import annotations

import threading
import time
from typing import List

import tenq
from harness import until, worker_for


def test_paused_queue_leases_nothing_until_resumed(client: tenq.Client, queue: str) -> None:
    client.set_queue(queue)  # a pause takes a queue that exists
    info = client.pause_queue(queue)
    assert info["name"] == queue and info["paused"] is True and info["paused_tenants"] == []
    reg = tenq.Registry()
    reg.add("P.job", lambda ctx: ctx.args)
    hs = [client.submit("P.job", i) for i in range(3)]
    with worker_for(client, queue, reg, concurrency=3) as w:
        time.sleep(1.5)
        assert w.counts["leased"] == 0
        job = client.get(hs[0].id)
        assert job.state == "ready" and (job.waiting or {}).get("reason") == "queue_paused"
        assert client.get_queue(queue)["held"] == 3
        info = client.resume_queue(queue)
        assert info["paused"] is False
        assert [h.wait(30) for h in hs] == [0, 1, 2]
    assert w.counts["leased"] == 3


def test_paused_tenant_waits_while_others_run(client: tenq.Client, queue: str) -> None:
    client.set_queue(queue)
    info = client.pause_queue(queue, tenant="acme")
    assert info["paused"] is False and info["paused_tenants"] == ["acme"]
    reg = tenq.Registry()
    reg.add("P.job", lambda ctx: ctx.args)
    mine = client.submit("P.job", "acme")
    other = client.submit("P.job", "other", tenant="other")
    with worker_for(client, queue, reg) as w:
        assert other.wait(30) == "other"
        time.sleep(0.5)
        job = client.get(mine.id)
        assert job.state == "ready" and (job.waiting or {}).get("reason") == "tenant_paused"
        assert client.resume_queue(queue, tenant="acme")["paused_tenants"] == []
        assert mine.wait(30) == "acme"
    assert w.counts["leased"] == 2


def test_server_timeout_stops_the_handler_and_reports_nothing(client: tenq.Client,
                                                              queue: str) -> None:
    client.set_queue(queue, lease_ms=1500)  # heartbeats every 0.5 s
    reg = tenq.Registry()
    reasons: List[str] = []
    stopped = threading.Event()

    def stuck(ctx: tenq.Context) -> str:
        assert ctx.timeout_ms == 700
        try:
            ctx.sleep(30)
        except tenq.Stopped as e:
            reasons.append(e.reason)
            stopped.set()
            raise
        return "never"

    reg.add("T.stuck", stuck)
    h = client.submit("T.stuck", max_attempts=1, timeout_ms=700)
    assert client.get(h.id).timeout_ms == 700
    t0 = time.monotonic()
    with worker_for(client, queue, reg) as w:
        job = h.wait_job(30)
        assert stopped.wait(10), "the handler was not stopped"
        took = time.monotonic() - t0
        time.sleep(0.6)  # a report, if one were sent, would have gone by now
        assert w.counts["lost"] == 1
        assert w.counts["succeeded"] == w.counts["failed"] == w.counts["refused"] == 0
    assert job.state == "dead" and (job.error or "").startswith("timed out:")
    assert reasons == [tenq.LOST]
    assert took < 5  # stopped at the first heartbeat after 0.7 s, not at the sleep's end


def test_queue_timeout_setting(client: tenq.Client, queue: str) -> None:
    info = client.set_queue(queue, lease_ms=1500, timeout_ms=900)
    assert info["timeout_ms"] == 900
    reg = tenq.Registry()
    reg.add("T.nap", lambda ctx: ctx.sleep(30))
    h = client.submit("T.nap", max_attempts=1)
    assert client.get(h.id).timeout_ms is None  # the queue's, not its own
    with worker_for(client, queue, reg) as w:
        job = h.wait_job(30)
        until(lambda: w.counts["lost"] == 1, 10)
    assert job.state == "dead" and (job.error or "").startswith("timed out:")
    with tenq.testing.fake() as jobs:
        client.submit("T.nap", timeout_ms=1234)
        rec = jobs.jobs()[0]
        assert rec.timeout_ms == 1234 and rec.to_job().timeout_ms == 1234


def test_queue_rate_spaces_the_starts(client: tenq.Client, queue: str) -> None:
    info = client.set_queue(queue, rate=2, rate_period_ms=1000)
    assert (info["rate"], info["rate_period_ms"], info["rate_burst"]) == (2, 1000, None)
    reg = tenq.Registry()
    starts: List[float] = []
    lock = threading.Lock()

    def job(ctx: tenq.Context) -> None:
        with lock:
            starts.append(time.monotonic())

    reg.add("R.job", job)
    hs = client.submit_many([tenq.JobSpec("R.job", i) for i in range(6)])
    with worker_for(client, queue, reg, concurrency=6) as w:
        until(lambda: len(starts) >= 2)
        counts = client.get_queue(queue)
        assert counts["held"] >= 1 and counts.get("rate_limited_until", 0) > 0
        held = [h for h in hs if isinstance(h, tenq.Handle)][-1].get()
        assert (held.waiting or {}).get("reason") == "queue_rate"
        assert (held.waiting or {}).get("until", 0) > 0
        for h in hs:
            assert isinstance(h, tenq.Handle)
            h.wait(30)
    assert w.counts["succeeded"] == 6
    rel = [t - starts[0] for t in sorted(starts)]
    # a burst of 2, then one each 500 ms (T = 1000 / 2)
    assert rel[1] < 0.3
    for k in range(2, 6):
        assert rel[k] >= (k - 1) * 0.5 - 0.15, rel
    assert rel[5] < 4.0, rel


def test_tenant_rate_through_set_tenant(client: tenq.Client, queue: str) -> None:
    name = f"rated-{queue}"
    info = client.set_tenant(name, rate=1, rate_period_ms=800, rate_burst=1)
    assert (info["rate"], info["rate_period_ms"], info["rate_burst"]) == (1, 800, 1)
    assert client.get_tenant(name)["rate"] == 1
    reg = tenq.Registry()
    starts: List[float] = []
    reg.add("R.t", lambda ctx: starts.append(time.monotonic()))
    hs = [client.submit("R.t", i, tenant=name) for i in range(3)]
    with worker_for(client, queue, reg, concurrency=3):
        until(lambda: len(starts) >= 1)
        assert (hs[2].get().waiting or {}).get("reason") == "tenant_rate"
        for h in hs:
            h.wait(30)
    starts.sort()
    assert starts[1] - starts[0] >= 0.7 and starts[2] - starts[1] >= 0.7, starts
    client.set_tenant(name, rate=None)
    assert client.get_tenant(name)["rate"] is None


def test_queue_and_tenant_types_name_every_field_the_server_sends(client: tenq.Client,
                                                                   queue: str) -> None:
    """QueueInfo and TenantInfo (with Counts) are hand-kept: every field the
    server sends must be one of theirs (``waiting`` was not)."""
    parent = client.submit("Parent")
    client.submit("Child", depends_on=[parent])
    for info, kind in ((client.get_queue(queue), tenq.QueueInfo),
                       (client.get_tenant("acme"), tenq.TenantInfo)):
        names = kind.__required_keys__ | kind.__optional_keys__
        assert set(info) - names == set(), kind.__name__
        assert info["waiting"] >= 1
    assert client.get_queue(queue)["waiting"] == 1
