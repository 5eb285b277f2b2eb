# SPDX-License-Identifier: Apache-2.0
"""Code that uses the library, for ``mypy --strict`` (test_types.py)."""

from __future__ import annotations

import datetime
from typing import Any, Callable, Dict, List, Optional

import tenq


class DataReport:
    @tenq.task(queue="reports")
    def execute(self, report_id: int, scale: int = 1) -> Dict[str, int]:
        return {"rows": report_id * scale}


@tenq.task
def add(a: int, b: int) -> int:
    return a + b


def use(client: tenq.Client) -> None:
    rows: Dict[str, int] = DataReport().execute(1)
    h: tenq.Handle[Dict[str, int]] = DataReport().execute.enqueue(1, scale=2)
    result: Dict[str, int] = h.wait(10)
    total: int = add(1, 2) + add.enqueue(1, 2).wait()
    other: tenq.Handle[int] = add.with_options(queue="math").enqueue(3, 4)
    job: tenq.Job = client.get(other.id)
    print(rows, result, total, job.state)
    bounded = add.with_options(timeout_ms=60_000).enqueue(5, 6)
    own: Optional[int] = client.get(bounded.id).timeout_ms
    print(own)


def control(client: tenq.Client) -> None:
    q: tenq.QueueInfo = client.pause_queue("reports", tenant="acme")
    tenants: List[str] = q["paused_tenants"]
    paused: bool = client.resume_queue("reports")["paused"]
    rate: Optional[int] = client.set_queue("reports", rate=2, rate_period_ms=1000)["rate"]
    held: int = client.get_queue("reports").get("held", 0)
    t: tenq.TenantInfo = client.set_tenant("acme", rate=10)
    print(tenants, paused, rate, held, t["rate_burst"])
    w = client.get(1).waiting
    why: Optional[tenq.WaitingReason] = w["reason"] if w else None
    print(why)


def timing(ctx: tenq.Context, call_next: Callable[[], Any]) -> Any:
    return call_next()


def work(client: tenq.Client) -> int:
    return tenq.Worker(client, queues=["reports"], concurrency=5, middleware=[timing]).run()


def use_tx(cur: Any, ctx: tenq.Context) -> None:
    """tenq.tx takes any DB-API cursor or connection (typed Any)."""
    job_id: int = tenq.tx.submit(cur, "DataReport.execute", {"report_id": 1}, tenant="acme",
                                 queue="reports", priority=5, run_at=0, timeout_ms=600_000)
    ids: list[int] = tenq.tx.submit_many(cur, [tenq.JobSpec("T", tenant="acme", queue="q"),
                                               {"tenant": "acme", "queue": "q", "type": "T"}])
    tenq.tx.complete(cur, ctx, {"ok": True})
    tenq.tx.complete(cur, (ctx.id, ctx.token))
    tenq.tx.fail(cur, ctx, "declined", retry_in_ms=1000)
    outcome: Optional[Dict[str, Any]] = ctx.tx_outcome
    print(job_id, ids, outcome)


def schedules(client: tenq.Client) -> None:
    """Schedules and attempts are typed records."""
    missed: tenq.Missed = "once"
    s: tenq.Schedule = client.put_schedule("nightly", "30 2 * * *", "Report.build", {"full": True},
                                           timezone="Europe/Berlin", missed=missed, timeout_ms=600_000)
    job: tenq.ScheduleJob = s.job
    runs: List[int] = client.get_schedule("nightly").next_runs
    nxt: Optional[int] = client.pause_schedule("nightly").next_tick
    names: List[str] = [x.name for x in client.list_schedules(tenant="acme", runs=3)]
    gone: bool = client.delete_schedule("nightly")
    att: List[tenq.Attempt] = client.attempts(1)
    outcomes: List[str] = [a.outcome for a in att]
    errors: List[Optional[str]] = [a.error for a in att]
    print(job.queue, job.max_attempts, runs, nxt, names, gone, outcomes, errors)


def workflows(client: tenq.Client, ctx: tenq.Context) -> None:
    """Dependencies and batches are typed too."""
    a = client.submit("Extract")
    policy: tenq.OnParentFailure = "run"
    b = client.submit("Report", depends_on=[a, a.id], on_parent_failure=policy)
    many = client.submit_many([tenq.JobSpec("A"), tenq.JobSpec("B", depends_on=[tenq.Index(0)])])
    ps: tenq.Parents = client.parents(b.id)
    results: List[Any] = [p.result for p in ps.parents]
    kids: List[int] = [c.id for c in ps.children]
    job: tenq.Job = client.get(b.id)
    ids: List[int] = job.parents + job.children
    batch_id: Optional[int] = job.batch
    created: tenq.BatchCreated = client.create_batch(
        [tenq.JobSpec("Row", {"i": 1})], on_complete=tenq.JobSpec("Done"), on_death={"type": "Alert"}
    )
    more: List[tenq.Handle[Any]] = client.add_to_batch(created.id, [{"type": "Row"}])
    st: tenq.Batch = client.batch(created.id)
    done: Optional[int] = st.callbacks["on_complete"].job
    page: tenq.BatchPage = client.list_batches(limit=10)
    fanned: List[tenq.Handle[Any]] = ctx.add_to_batch([tenq.JobSpec("Part")])
    parents: List[int] = ctx.parents
    try:
        client.add_to_batch(created.id, [tenq.JobSpec("Late")])
    except tenq.BatchClosedError as e:
        print(e.code)
    print(many, results, kids, ids, batch_id, more, st.closed, st.progress, done, page.next_before,
          fanned, parents, ctx.batch, ctx.batch_callback, ctx.parent_results().results())


async def use_async(ac: tenq.AsyncClient) -> None:
    """The asyncio client and the switch's asyncio form keep the types."""
    h: tenq.AsyncHandle[Any] = await ac.submit("Report.build", {"id": 1}, priority=3)
    job: tenq.Job = await ac.wait(h.id, 10)
    state: str = (await ac.get(h.id)).state
    many = await ac.submit_many([tenq.JobSpec("T"), {"type": "T"}])
    ids: List[int] = [x.id for x in many if isinstance(x, tenq.AsyncHandle)]
    report = DataReport().execute.with_options(client=ac)
    rh: tenq.AsyncHandle[Dict[str, int]] = await report.enqueue(1, scale=2)
    rows: Dict[str, int] = await rh.wait(10)
    inline: Dict[str, int] = report(3)
    sums: tenq.AsyncHandle[int] = await add.with_options(client=ac, queue="math").enqueue(1, 2)
    total: int = await sums.wait()
    sync_again: tenq.Handle[int] = add.with_options(queue="math").enqueue(1, 2)
    print(job.state, state, ids, rows, inline, total, sync_again.id)
    async with tenq.AsyncClient(tenant="acme") as other:
        await other.cancel((await other.submit("T", queue="q")).id)


def use_steps(client: tenq.Client, ctx: tenq.Context) -> None:
    """Durable steps keep their types: a step answers what its function
    does; the waits answer JSON; the errors are typed."""
    rows: List[int] = ctx.step("fetch", lambda: [1, 2, 3])
    total: int = ctx.step("sum", lambda: sum(rows))
    ctx.sleep_for(2.5, name="nap")
    ctx.sleep_until(datetime.datetime(2030, 1, 1))
    try:
        paid: Any = ctx.wait_for_event("order-7/paid", timeout=3600)
        kid: Any = ctx.run_child("Part.build", {"n": 1}, queue="parts", priority=2)
    except tenq.EventTimeoutError as e:
        print(e.key)
    except tenq.ChildFailedError as e:
        print(e.child, e.state, e.error)
    steps: List[tenq.Step] = client.steps(ctx.id)
    ev: tenq.EventResult = client.send_event("order-7/paid", {"amount": 5}, tenant="acme")
    delivered: int = ev.delivered
    parked: bool = ctx.parked
    n: int = tenq.tx.send_event(object(), "acme", "order-7/paid", {"amount": 5})
    print(total, paid, kid, steps[0].result, delivered, parked, n, [a.steps for a in
                                                                    client.attempts(ctx.id)])
