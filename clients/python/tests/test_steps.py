# SPDX-License-Identifier: Apache-2.0
"""Durable steps against a real server (docs/SEMANTICS.md, "Durable
steps"): a step's code runs once over retries; a durable sleep, a wait for
an event and a child job park the job and it resumes as the same attempt;
a timeout and a child's death raise their errors; a child over a quota
raises QuotaExceededError in the handler; Parked passes ``except
Exception``; events are kept, answered and sent once; inline, steps just
run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any, Dict, List

import pytest

import tenq
from harness import Server, until, worker_for


def test_a_step_runs_once_and_a_retry_gets_it_back(client: tenq.Client, queue: str) -> None:
    ran: Dict[str, int] = {"a": 0, "b": 0, "c": 0}
    runs: List[int] = []
    reg = tenq.Registry()

    def handler(ctx: tenq.Context) -> Any:
        runs.append(ctx.attempt)

        def count(name: str, value: Any) -> Any:
            ran[name] += 1
            return value

        a = ctx.step("a", lambda: count("a", {"rows": 3}))
        b = ctx.step("b", lambda: count("b", [1, 2]))
        if len(runs) == 1:
            raise tenq.Retry("after b", in_ms=0)
        c = ctx.step("c", lambda: count("c", "done"))
        return {"a": a, "b": b, "c": c, "stored": [s.name for s in ctx.steps()]}

    reg.add("S.four", handler)
    h = client.submit("S.four")
    with worker_for(client, queue, reg, poll=0.2):
        out = h.wait(30)
    assert out == {"a": {"rows": 3}, "b": [1, 2], "c": "done", "stored": ["a", "b", "c"]}
    assert ran == {"a": 1, "b": 1, "c": 1}
    assert runs == [1, 2]
    steps = client.steps(h.id)
    assert [(s.name, s.kind, s.attempt, s.result) for s in steps] == [
        ("a", "step", 1, {"rows": 3}), ("b", "step", 1, [1, 2]), ("c", "step", 2, "done")]
    att = client.attempts(h.id)
    assert [(a.outcome, a.steps) for a in att] == [("failed", ["a", "b"]), ("succeeded", ["c"])]


def test_a_sleep_an_event_and_a_child_park_the_job(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    runs: List[int] = []

    def parent(ctx: tenq.Context) -> Any:
        runs.append(ctx.attempt)
        ctx.sleep_for(0.3)
        paid = ctx.wait_for_event(f"paid-{ctx.id}")
        kid = ctx.run_child("S.kid", {"for": ctx.id})
        try:
            ctx.wait_for_event("never", timeout=0.2, name="late")
        except tenq.EventTimeoutError as e:
            late = e.key
        return {"paid": paid, "kid": kid, "late": late}

    reg.add("S.parent", parent)
    reg.add("S.kid", lambda ctx: {"got": ctx.args})
    h = client.submit("S.parent")
    with worker_for(client, queue, reg, poll=0.2):
        until(lambda: bool(client.get(h.id).state == "waiting"))
        w = client.get(h.id).waiting
        assert w is not None and w["reason"] == "event" and w.get("event") == f"paid-{h.id}"
        ev = client.send_event(f"paid-{h.id}", {"amount": 5})
        assert (ev.delivered, ev.jobs, ev.kept) == (1, [h.id], False)
        out = h.wait(30)
    assert out == {"paid": {"amount": 5}, "kid": {"got": {"for": h.id}}, "late": "never"}
    # one attempt, run again after each of its four waits
    assert runs == [1, 1, 1, 1, 1]
    assert client.get(h.id).attempts == 1
    steps = client.steps(h.id)
    assert [s.kind for s in steps] == ["sleep", "event", "child", "event"]
    assert steps[2].child_state == "succeeded" and steps[3].error == "timed out"
    outcomes = [a.outcome for a in client.attempts(h.id)]
    assert outcomes == ["suspended"] * 4 + ["succeeded"]


def test_a_child_that_dies_and_one_over_a_quota_raise_in_the_handler(
    server: Server, queue: str
) -> None:
    admin = tenq.Client(server.url, queue=queue, failover_budget=5.0)
    admin.set_tenant("steps-quota", max_queued=1)
    client = tenq.Client(server.url, tenant="steps-quota", queue=queue, failover_budget=5.0)
    reg = tenq.Registry()
    seen: List[str] = []

    def quota(ctx: tenq.Context) -> Any:
        try:
            ctx.run_child("S.any")
        except tenq.QuotaExceededError as e:
            seen.append(f"quota {e.field}")
            raise tenq.NoRetry("no room for a child")

    reg.add("S.quota", quota)
    h = client.submit("S.quota")
    with worker_for(client, queue, reg, poll=0.2):
        with pytest.raises(tenq.JobFailedError):
            h.wait(30)
    assert seen == ["quota max_queued"]
    client.close()

    other = tenq.Client(server.url, tenant="acme", queue=queue, failover_budget=5.0)
    reg2 = tenq.Registry()

    def parent(ctx: tenq.Context) -> Any:
        try:
            ctx.run_child("S.doomed", max_attempts=1)
        except tenq.ChildFailedError as e:
            return {"state": e.state, "error": e.error, "child": e.child}
        return "no error"

    def doomed(ctx: tenq.Context) -> Any:
        raise RuntimeError("disk full")

    reg2.add("S.parent2", parent)
    reg2.add("S.doomed", doomed)
    h = other.submit("S.parent2")
    with worker_for(other, queue, reg2, poll=0.2):
        out = h.wait(30)
    assert out["state"] == "dead" and "disk full" in out["error"]
    assert other.get(out["child"]).awaited_by == h.id  # dead: in the morgue, still its parent's
    other.close()
    admin.close()


def test_parked_passes_except_exception(client: tenq.Client, queue: str) -> None:
    reg = tenq.Registry()
    caught: List[str] = []

    def careless(ctx: tenq.Context) -> Any:
        try:
            return ctx.wait_for_event(f"k-{ctx.id}")
        except Exception as e:  # what a handler often does: it must not swallow a park
            caught.append(repr(e))
            return "swallowed"

    reg.add("S.careless", careless)
    h = client.submit("S.careless")
    with worker_for(client, queue, reg, poll=0.2):
        until(lambda: bool(client.get(h.id).state == "waiting"))
        client.send_event(f"k-{h.id}", "ok")
        assert h.wait(30) == "ok"
    assert caught == []


def test_events_are_kept_for_a_later_wait_and_sent_once(client: tenq.Client, queue: str) -> None:
    ev = client.send_event("early-key", [1])
    assert (ev.delivered, ev.kept, ev.tenant, ev.key) == (0, True, "acme", "early-key")
    assert ev.expires_at is not None
    reg = tenq.Registry()
    reg.add("S.early", lambda ctx: ctx.wait_for_event("early-key"))
    h = client.submit("S.early")
    with worker_for(client, queue, reg, poll=0.2):
        assert h.wait(30) == [1]
    assert [a.outcome for a in client.attempts(h.id)] == ["succeeded"]  # never parked
    with pytest.raises(tenq.InvalidError) as e:
        client.send_event("")
    assert e.value.field == "key"


def test_inline_steps_just_run() -> None:
    ctx = tenq.Context({"id": 1, "type": "T"})
    assert ctx.step("a", lambda: 5) == 5
    ctx.sleep_for(0.01)
    with pytest.raises(tenq.InvalidError):
        ctx.wait_for_event("k")
    with pytest.raises(tenq.InvalidError):
        ctx.run_child("T")


def test_a_worker_killed_mid_job_resumes_at_its_next_step(
    server: Server, tmp_path: Any, queue: str
) -> None:
    # the lease of a worker that dies runs out; the next attempt gets steps
    # 1-2 back and goes on at step 3
    client = tenq.Client(server.url, tenant="acme", queue=queue, failover_budget=5.0)
    client.set_queue(queue, lease_ms=500, backoff="fixed", backoff_base_ms=10)
    h = client.submit("S.four")
    leased = client.lease([queue], max=1)["jobs"][0]
    for i in (1, 2):
        client._store_step(h.id, {"token": leased["token"], "name": f"step-{i}",
                                  "result": {"n": i}})
    # (the worker is gone without a word)
    reg = tenq.Registry()
    ran: List[str] = []

    def four(ctx: tenq.Context) -> Any:
        def run(i: int) -> Any:
            ran.append(f"step-{i}")
            return {"n": i}

        return [ctx.step(f"step-{i}", lambda i=i: run(i)) for i in range(1, 5)]

    reg.add("S.four", four)
    with worker_for(client, queue, reg, poll=0.2):
        assert h.wait(30) == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]
    assert ran == ["step-3", "step-4"]
    client.close()


def test_the_readme_durable_example_runs_as_written(server: Server, tmp_path: Any) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "README.md")) as f:
        text = f.read()
    (body,) = re.findall(r"```python\n(# durable\.py\n.*?)```", text, re.S)
    (tmp_path / "durable.py").write_text(body)
    expected = re.findall(r"# prints: (.*)$", body, re.M)
    env = dict(os.environ, TENQ_SERVER=server.url, PYTHONPATH=os.path.join(here, "..", "src"))
    out = subprocess.run([sys.executable, "durable.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == expected


def test_a_step_sent_again_after_a_lost_answer_is_stored_once(
    client: tenq.Client, queue: str, monkeypatch: Any
) -> None:
    # every step request goes twice: the first answer is lost; an event
    # taken at once is then read back from the job's steps
    store = client._store_step

    def twice(job_id: int, body: Dict[str, Any]) -> Dict[str, Any]:
        store(job_id, dict(body))
        return store(job_id, body)

    monkeypatch.setattr(client, "_store_step", twice)
    client.send_event("twice-key", {"early": True})
    ran: List[int] = []
    reg = tenq.Registry()

    def handler(ctx: tenq.Context) -> Any:
        a = ctx.step("a", lambda: ran.append(1) or len(ran))
        return {"a": a, "ev": ctx.wait_for_event("twice-key")}

    reg.add("S.twice", handler)
    h = client.submit("S.twice")
    with worker_for(client, queue, reg, poll=0.2):
        assert h.wait(30) == {"a": 1, "ev": {"early": True}}
    assert ran == [1]
    assert [(s.name, s.result) for s in client.steps(h.id)] == [("a", 1), ("event#1", {"early": True})]
