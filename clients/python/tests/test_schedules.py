# SPDX-License-Identifier: Apache-2.0
"""Schedules (periodic jobs) and attempt history through the library,
against a real server: a schedule of ``@every 1s`` submits jobs; it is
listed, read, paused and deleted; a bad cron expression or zone raises
InvalidError naming the field and creates nothing; a job that failed
twice and then succeeded lists its three attempts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from typing import Any, List

import pytest

import tenq
from harness import Server, until, worker_for

HERE = os.path.dirname(os.path.abspath(__file__))


def test_a_schedule_submits_jobs_and_is_listed_read_and_deleted(
    client: tenq.Client, queue: str
) -> None:
    name = f"s-{queue}"
    s = client.put_schedule(name, "@every 1s", "S.tick", {"n": 1}, priority=3, max_attempts=2,
                            timeout_ms=200_000, key="lane-s", missed="once")
    assert isinstance(s, tenq.Schedule) and isinstance(s.job, tenq.ScheduleJob)
    assert (s.name, s.cron, s.timezone, s.missed, s.paused) == (
        name, "@every 1s", "UTC", "once", False)
    assert (s.job.tenant, s.job.queue, s.job.type, s.job.args) == (
        "acme", queue, "S.tick", {"n": 1})
    assert (s.job.priority, s.job.max_attempts, s.job.timeout_ms, s.job.key) == (
        3, 2, 200_000, "lane-s")
    assert len(s.next_runs) == 5 and s.next_tick == s.next_runs[0]
    assert all(b - a == 1000 for a, b in zip(s.next_runs, s.next_runs[1:]))

    # its ticks submit jobs of its job fields
    until(lambda: client.list_jobs(queue=queue).jobs != [], 10)
    job = client.list_jobs(queue=queue).jobs[0]
    assert (job.type, job.args, job.priority, job.key) == ("S.tick", {"n": 1}, 3, "lane-s")
    assert (job.idempotency_key or "").startswith(f"cron:{name}:")
    got = client.get_schedule(name)
    assert got.last_tick is not None and got.last_job is not None

    listed = client.list_schedules(tenant="acme", runs=3)
    mine = [x for x in listed if x.name == name]
    assert len(mine) == 1 and len(mine[0].next_runs) == 3

    paused = client.pause_schedule(name)
    assert paused.paused is True and paused.next_tick is None
    assert client.resume_schedule(name).paused is False

    # a PUT replaces it whole
    again = client.put_schedule(name, "0 3 * * *", "S.tick", timezone="Europe/Berlin",
                                paused=True)
    assert (again.cron, again.timezone, again.paused, again.job.priority) == (
        "0 3 * * *", "Europe/Berlin", True, 0)
    assert again.created_at == s.created_at

    assert client.delete_schedule(name) is True
    with pytest.raises(tenq.NotFoundError):
        client.get_schedule(name)
    with pytest.raises(tenq.NotFoundError):
        client.delete_schedule(name)
    assert all(x.name != name for x in client.list_schedules())


def test_bad_cron_or_zone_raises_the_field_and_creates_nothing(client: tenq.Client,
                                                               queue: str) -> None:
    name = f"bad-{queue}"
    with pytest.raises(tenq.InvalidError) as e:
        client.put_schedule(name, "61 * * * *", "S.tick")
    assert e.value.field == "cron" and e.value.status == 400
    with pytest.raises(tenq.InvalidError) as e:
        client.put_schedule(name, "@every 1s", "S.tick", timezone="Mars/Olympus_Mons")
    assert e.value.field == "timezone"
    with pytest.raises(tenq.InvalidError) as e:
        client.put_schedule(name, "@every 1s", "S.tick", timeout_ms=5)
    assert e.value.field == "job.timeout_ms"
    with pytest.raises(tenq.NotFoundError):
        client.get_schedule(name)
    assert all(x.name != name for x in client.list_schedules())
    # and a schedule that was there stays as it was
    client.put_schedule(name, "0 3 * * *", "S.tick", paused=True)
    with pytest.raises(tenq.InvalidError) as e:
        client.put_schedule(name, "not cron", "S.other")
    assert e.value.field == "cron"
    kept = client.get_schedule(name)
    assert (kept.cron, kept.job.type, kept.paused) == ("0 3 * * *", "S.tick", True)
    client.delete_schedule(name)
    time.sleep(0.2)
    assert client.list_jobs(queue=queue).jobs == []


def test_a_job_failed_twice_then_succeeded_lists_its_attempts(client: tenq.Client,
                                                              queue: str) -> None:
    calls: List[int] = []

    def flaky(ctx: tenq.Context) -> str:
        calls.append(ctx.attempt)
        if len(calls) < 3:
            raise tenq.Retry(f"boom {len(calls)}", in_ms=10)
        return "ok"

    reg = tenq.Registry()
    reg.add("A.flaky", flaky)
    h = client.submit("A.flaky")
    assert client.attempts(h.id) == []
    with worker_for(client, queue, reg):
        assert h.wait(30) == "ok"
    att: List[tenq.Attempt] = client.attempts(h.id)
    assert [a.attempt for a in att] == [1, 2, 3]
    assert calls == [1, 2, 3]  # the handler's attempt is the history's
    assert [a.outcome for a in att] == ["failed", "failed", "succeeded"]
    assert [a.error for a in att] == ["Retry: boom 1", "Retry: boom 2", None]
    assert [a.job_state for a in att][-1] == "succeeded"
    assert all(a.finished_at is not None and a.worker for a in att)
    with pytest.raises(tenq.NotFoundError):
        client.attempts(h.id + 1_000_000)


def test_the_readme_example_runs_as_written(server: Server, tmp_path: Any) -> None:
    with open(os.path.join(HERE, "..", "README.md")) as f:
        text = f.read()
    (body,) = re.findall(r"```python\n(# schedules\.py\n.*?)```", text, re.S)
    (tmp_path / "schedules.py").write_text(body)
    env = dict(os.environ, TENQ_SERVER=server.url, PYTHONPATH=os.path.join(HERE, "..", "src"))
    out = subprocess.run([sys.executable, "schedules.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:4] == ["nightly-report 30 2 * * * Europe/Berlin 5", "refused: cron",
                         "['nightly-report']", "True"]
    assert lines[4:] == []
