# SPDX-License-Identifier: Apache-2.0
"""The sync/async switch: one function or method, run inline or as a job
that a worker routes back to it."""

from __future__ import annotations

import datetime
from typing import Any, Dict, Iterator, List

import pytest

import tenq

calls: List[str] = []


class DataReport:
    tenq_options = {"max_attempts": 2}

    def __init__(self) -> None:
        self.made_here = True

    @tenq.task
    def execute(self, report_id: int, scale: int = 1, *, label: str = "r") -> Dict[str, Any]:
        calls.append(f"execute {report_id}")
        assert self.made_here
        tenq.progress({"report": report_id})
        return {"report": report_id, "rows": report_id * scale, "label": label}


@tenq.task(type="math.add", priority=3)
def add(a: int, b: int, *more: int) -> int:
    return a + b + sum(more)


@tenq.task
def where() -> str:
    ctx = tenq.current_context()
    return "inline" if ctx is None else f"job {ctx.id}"


@pytest.fixture
def configured(client: tenq.Client) -> Iterator[tenq.Client]:
    tenq.configure(client)
    yield client
    tenq.configure(tenq.Client("http://127.0.0.1:9"))


def test_type_names() -> None:
    assert DataReport.execute.type == "DataReport.execute"
    assert add.type == "math.add" and where.type == "where"
    assert tenq.registry.get("DataReport.execute") is not None


def test_inline_call_runs_now() -> None:
    assert DataReport().execute(3, scale=2) == {"report": 3, "rows": 6, "label": "r"}
    assert DataReport().execute.run(4) == {"report": 4, "rows": 4, "label": "r"}
    assert add(1, 2, 3) == 6 and where() == "inline"


def test_enqueue_runs_on_a_worker(configured: tenq.Client, queue: str) -> None:
    h = DataReport().execute.enqueue(5, scale=3, label="x")
    job = configured.get(h.id)
    assert job.type == "DataReport.execute" and job.max_attempts == 2
    assert job.args == {"report_id": 5, "scale": 3, "label": "x"}
    h2 = add.enqueue(1, 2, 4)
    assert configured.get(h2.id).args == {"a": 1, "b": 2, "more": [4]}
    assert configured.get(h2.id).priority == 3
    h3 = where.enqueue()
    with tenq.Worker(configured, queues=[queue], concurrency=2, poll=2):
        assert h.wait(30) == {"report": 5, "rows": 15, "label": "x"}
        assert h2.wait(30) == 7
        assert h3.wait(30) == f"job {h3.id}"


def test_with_options(configured: tenq.Client, queue: str) -> None:
    other = queue + "-other"
    h = DataReport().execute.with_options(queue=other, key="k1", priority=9,
                                          timeout_ms=600_000).enqueue(1)
    job = configured.get(h.id)
    assert (job.queue, job.key, job.priority, job.timeout_ms) == (other, "k1", 9, 600_000)
    with pytest.raises(tenq.InvalidError) as e:
        add.with_options(colour="red")
    assert e.value.field == "colour"


def test_args_not_json_refused_before_sending(configured: tenq.Client, queue: str) -> None:
    with pytest.raises(tenq.InvalidError) as e:
        DataReport().execute.enqueue(datetime.date.today())  # type: ignore[arg-type]
    assert e.value.field == "args" and "report_id" in str(e.value)
    with pytest.raises(tenq.InvalidError):
        add.enqueue(1)  # type: ignore[call-arg]
    assert configured.list_jobs(queue=queue).jobs == []


def test_args_that_do_not_fit_go_to_the_morgue(configured: tenq.Client, queue: str) -> None:
    h = configured.submit("math.add", {"a": 1, "c": 2}, max_attempts=5)
    with tenq.Worker(configured, queues=[queue], poll=2):
        job = h.wait_job(30)
    assert job.state == "dead" and job.attempts == 1
    assert "args do not fit math.add" in (job.error or "")
