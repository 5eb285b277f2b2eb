# SPDX-License-Identifier: Apache-2.0
"""Workflows against a real server: dependencies (a chain, index
references, a parent's death with each policy, a bad parent) and batches
(callbacks fired once when the library's worker drains one, fan-out from a
running job, a closed batch); and what the test modes do with them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from typing import Any, Dict, List

import pytest

import tenq
from harness import Server, until, worker_for

HERE = os.path.dirname(os.path.abspath(__file__))


def _lease_one(client: tenq.Client, queue: str) -> Dict[str, Any]:
    lease = client.lease([queue], max=1)
    (job,) = lease["jobs"]
    return job  # type: ignore[no-any-return]


def test_chain_child_waits_and_reads_parent_result(client: tenq.Client, queue: str) -> None:
    a = client.submit("W.a", {"n": 1})
    b = client.submit("W.b", depends_on=[a], on_parent_failure="cancel")
    assert b.state == "waiting"
    job_b = client.get(b.id)
    assert job_b.parents == [a.id] and job_b.on_parent_failure == "cancel"
    assert job_b.waiting is not None and job_b.waiting["reason"] == "parents"
    assert job_b.waiting.get("parents") == [a.id]
    job_a = client.get(a.id)
    assert job_a.children == [b.id] and job_a.children_count == 1
    # only A is leased while A runs
    leased_a = _lease_one(client, queue)
    assert leased_a["id"] == a.id
    assert client.lease([queue], max=1)["jobs"] == []
    client.ack(a.id, leased_a["token"], result={"rows": 42})
    leased_b = _lease_one(client, queue)
    assert leased_b["id"] == b.id and leased_b["parents"] == [a.id]
    ps = client.parents(b.id)
    assert [(p.id, p.state, p.result) for p in ps.parents] == [(a.id, "succeeded", {"rows": 42})]
    assert ps.results() == [{"rows": 42}]
    assert client.parents(a.id).children[0].id == b.id
    client.ack(b.id, leased_b["token"])


def test_worker_runs_chain_and_child_reads_parents(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    seen: List[Any] = []
    reg.add("W.first", lambda ctx: {"rows": 7})

    def second(ctx: tenq.Context) -> Any:
        seen.append(ctx.parents)
        return ctx.parent_results().results()[0]["rows"] * 2

    reg.add("W.second", second)
    a = client.submit("W.first")
    b = client.submit("W.second", depends_on=[a.id])
    with worker_for(client, queue, reg, poll=0.2):
        assert b.wait(30) == 14
    assert seen == [[a.id]]


def test_many_submit_with_index_references(client: tenq.Client, queue: str) -> None:
    out = client.submit_many([
        tenq.JobSpec("W.root"),
        tenq.JobSpec("W.leaf", depends_on=[tenq.Index(0)]),
        {"type": "W.join", "depends_on": [tenq.Index(0), tenq.Index(1)]},
        tenq.JobSpec("W.bad", depends_on=[tenq.Index(5)]),
    ])
    root, leaf, join = out[0], out[1], out[2]
    assert isinstance(root, tenq.Handle) and isinstance(leaf, tenq.Handle)
    assert isinstance(join, tenq.Handle)
    assert isinstance(out[3], tenq.InvalidError) and out[3].field == "depends_on"
    assert client.get(leaf.id).parents == [root.id]
    assert client.get(join.id).parents == [root.id, leaf.id]
    assert leaf.state == "waiting" and join.state == "waiting"
    # a single submit takes no index
    with pytest.raises(tenq.InvalidError):
        client.submit("W.x", depends_on=[tenq.Index(0)])


def test_index_across_requests_becomes_an_id(client: tenq.Client, queue: str) -> None:
    specs: List[Any] = [tenq.JobSpec("W.n") for _ in range(10_001)]
    specs.append(tenq.JobSpec("W.last", depends_on=[tenq.Index(0), tenq.Index(10_000)]))
    out = client.submit_many(specs)
    first, mid, last = out[0], out[10_000], out[10_001]
    assert isinstance(first, tenq.Handle) and isinstance(mid, tenq.Handle)
    assert isinstance(last, tenq.Handle)
    assert client.get(last.id).parents == [first.id, mid.id]


@pytest.mark.parametrize("policy", ["cancel", "run"])
def test_parent_death_and_the_policy(client: tenq.Client, queue: str, policy: str) -> None:
    a = client.submit("W.doomed", max_attempts=1)
    b = client.submit("W.child", depends_on=[a.id], on_parent_failure=policy)  # type: ignore[arg-type]
    leased = _lease_one(client, queue)
    client.fail(a.id, leased["token"], "boom")
    assert client.get(a.id).state == "dead"
    if policy == "cancel":
        job = client.get(b.id)
        assert job.state == "cancelled" and "parent" in (job.error or "")
    else:
        nxt = _lease_one(client, queue)
        assert nxt["id"] == b.id
        assert client.parents(b.id).parents[0].state == "dead"
        client.ack(b.id, nxt["token"])


def test_bad_dependency_makes_nothing(client: tenq.Client, queue: str) -> None:
    with pytest.raises(tenq.NotFoundError) as e:
        client.submit("W.orphan", depends_on=[987_654_321])
    assert e.value.field == "depends_on"
    assert client.list_jobs(queue=queue).jobs == []
    before = [b.id for b in client.list_batches(limit=1000).batches]
    with pytest.raises(tenq.NotFoundError) as e2:
        client.create_batch([tenq.JobSpec("W.x"), tenq.JobSpec("W.y", depends_on=[987_654_321])])
    assert e2.value.field == "jobs[1].depends_on"
    assert [b.id for b in client.list_batches(limit=1000).batches] == before
    assert client.list_jobs(queue=queue).jobs == []


def test_batch_drained_by_worker_fires_callbacks_once(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    done: List[str] = []
    lock = threading.Lock()
    reg.add("B.item", lambda ctx: ctx.args["i"])

    def callback(ctx: tenq.Context) -> None:
        with lock:
            done.append(f"{ctx.batch_callback}:{ctx.batch}")

    reg.add("B.done", callback)
    reg.add("B.ok", callback)
    created = client.create_batch(
        [tenq.JobSpec("B.item", {"i": i}) for i in range(5)],
        on_complete=tenq.JobSpec("B.done", {"user": 7}),
        on_success={"type": "B.ok"},
        on_death={"type": "B.dead"},
    )
    assert len(created.jobs) == 5
    assert client.get(created.jobs[0].id).batch == created.id
    st = client.batch(created.id)
    assert st.status == "open" and st.total == 5 and st.pending == 5
    assert set(st.callbacks) == {"on_complete", "on_success", "on_death"}
    with worker_for(client, queue, reg, poll=0.2):
        until(lambda: len(done) == 2)
        st = client.get_batch(created.id)
        assert st.closed and st.counts["succeeded"] == 5 and st.progress == 1.0
        cb = st.callbacks["on_complete"].job
        assert cb is not None and client.wait(cb, 10).state == "succeeded"
        assert client.get(cb).batch_callback == "on_complete"
    assert sorted(done) == [f"on_complete:{created.id}", f"on_success:{created.id}"]
    assert st.callbacks["on_death"].job is None
    page = client.list_batches(limit=1000)
    assert created.id in [b.id for b in page.batches]


def test_running_job_fans_out_into_its_batch(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()

    def fan(ctx: tenq.Context) -> int:
        hs = ctx.add_to_batch([tenq.JobSpec("F.part", {"i": i}) for i in range(3)])
        return len(hs)

    reg.add("F.fan", fan)
    reg.add("F.part", lambda ctx: ctx.batch)
    reg.add("F.done", lambda ctx: None)
    created = client.create_batch([tenq.JobSpec("F.fan")], on_success=tenq.JobSpec("F.done"))
    with worker_for(client, queue, reg, poll=0.2):
        until(lambda: client.batch(created.id).closed)
    st = client.batch(created.id)
    assert st.total == 4 and st.counts["succeeded"] == 4
    assert st.callbacks["on_success"].job is not None
    with pytest.raises(tenq.BatchClosedError) as e:
        client.add_to_batch(created.id, [tenq.JobSpec("F.late")])
    assert isinstance(e.value, tenq.ConflictError) and e.value.code == "batch_closed"
    with pytest.raises(tenq.NotFoundError):
        client.add_to_batch(987_654_321, [tenq.JobSpec("F.late")])


def test_switch_enqueue_takes_dependencies(client: tenq.Client, queue: str) -> None:
    class Steps:
        @tenq.task(queue=queue, client=client)
        def one(self) -> int:
            return 1

        @tenq.task(queue=queue, client=client)
        def two(self) -> int:
            return 2

    a = Steps().one.enqueue()
    b = Steps().two.with_options(depends_on=[a], on_parent_failure="run").enqueue()
    assert b.state == "waiting" and client.get(b.id).parents == [a.id]


def test_test_modes_take_workflows() -> None:
    reg = tenq.Registry()
    reg.add("T.a", lambda ctx: 3)
    reg.add("T.b", lambda ctx: ctx.parent_results().results()[0] + 1)
    reg.add("T.die", lambda ctx: 1 / 0)
    reg.add("T.fan", lambda ctx: len(ctx.add_to_batch([{"type": "T.a"}])))
    c = tenq.Client("http://127.0.0.1:1", queue="q")
    with tenq.testing.inline(reg):
        a = c.submit("T.a")
        b = c.submit("T.b", depends_on=[a])
        assert b.wait() == 4
        d = c.submit("T.die")
        assert c.submit("T.b", depends_on=[d]).get().state == "cancelled"
        out = c.submit_many([{"type": "T.a"}, tenq.JobSpec("T.b", depends_on=[tenq.Index(0)])])
        assert isinstance(out[1], tenq.Handle) and out[1].wait() == 4
        created = c.create_batch([{"type": "T.fan"}])
        assert created.jobs[0].wait() == 1 and created.jobs[0].get().batch == created.id
    with tenq.testing.fake(reg) as mode:
        a = c.submit("T.a")
        b = c.submit("T.b", depends_on=[a.id])
        assert b.get().state == "waiting"
        mode.drain()
        assert b.get().state == "succeeded" and b.get().result == 4


def test_the_readme_workflows_example_runs_as_written(server: Server, tmp_path: Any) -> None:
    with open(os.path.join(HERE, "..", "README.md")) as f:
        text = f.read()
    (body,) = re.findall(r"```python\n(# workflows\.py\n.*?)```", text, re.S)
    (tmp_path / "workflows.py").write_text(body)
    expected = re.findall(r"# prints: (.*)$", body, re.M)
    env = dict(os.environ, TENQ_SERVER=server.url, PYTHONPATH=os.path.join(HERE, "..", "src"))
    out = subprocess.run([sys.executable, "workflows.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == expected
