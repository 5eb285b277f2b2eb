# SPDX-License-Identifier: Apache-2.0
"""Test modes, without a server (like Sidekiq's ``Testing.inline!`` and
``fake!``, Oban's ``:inline`` and ``:manual``):

    with tenq.testing.inline():
        h = DataReport().execute.enqueue(42)   # ran now, in this process
        assert h.wait() == {...}

    with tenq.testing.fake() as jobs:
        DataReport().execute.enqueue(42)       # recorded, not run
        assert [j.type for j in jobs.jobs()] == ["DataReport.execute"]
        jobs.drain()                           # runs what was recorded

While a mode is on, every Client's submit goes to it (the switch's enqueue
included). A job runs once, through the handlers of the registry (the
switch's and ``@tenq.handler``'s): success makes it ``succeeded`` with its
result, any failure ``dead`` with the error a worker would report.

Workflows, kept simple: a job with ``depends_on`` (ids, handles, Index(i)
of the same submit_many or create_batch) is ``waiting`` until its parents
finished. Inline, its parents ran already: it runs at once when they all
succeeded; a parent that died or was cancelled cancels it
(``on_parent_failure="cancel"``, the default) or lets it run (``"run"``).
Fake: ``drain`` runs it once its parents finished, by the same rule.
``create_batch`` and ``add_to_batch`` submit their jobs as submits do, with
``batch`` set (so ``ctx.batch`` and ``ctx.add_to_batch`` work in handlers);
the batch's callbacks are not run and there is no batch status to read.
``ctx.parent_results()`` reads the parents the mode holds.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from tenq import _mode
from tenq.errors import ConflictError, NotFoundError, TenqError
from tenq.handlers import Middleware, Registry, chain, invoke, outcome_of, registry
from tenq.jobs import Child, CancelResult, Handle, Job, Parent, Parents
from tenq.context import Context


@dataclass
class FakeJob:
    """A job the test mode holds: what was submitted (``body``, the
    protocol's object) and what became of it."""

    id: int
    body: Dict[str, Any]
    state: str = "ready"
    result: Any = None
    error: Optional[str] = None
    attempts: int = 0
    progress: Any = None
    created_at: int = field(default_factory=lambda: int(time.time() * 1000))
    parents: List[int] = field(default_factory=list)
    children: List[int] = field(default_factory=list)

    @property
    def type(self) -> str:
        return str(self.body.get("type"))

    @property
    def queue(self) -> str:
        return str(self.body.get("queue"))

    @property
    def args(self) -> Any:
        return self.body.get("args")

    @property
    def timeout_ms(self) -> Optional[int]:
        """The job's own server-side timeout, as submitted (None: none)."""
        v = self.body.get("timeout_ms")
        return v if isinstance(v, int) else None

    def to_job(self) -> Job:
        data = {
            "id": self.id,
            "tenant": self.body.get("tenant") or "",
            "queue": self.queue,
            "type": self.type,
            "key": self.body.get("key"),
            "args": self.args,
            "state": self.state,
            "attempts": self.attempts,
            "max_attempts": self.body.get("max_attempts") or 25,
            "error": self.error,
            "result": self.result,
            "progress": self.progress,
            "idempotency_key": self.body.get("idempotency_key"),
            "traceparent": self.body.get("traceparent"),
            "timeout_ms": self.timeout_ms,
            "created_at": self.created_at,
        }
        if self.parents:
            data["parents"] = self.parents
            data["on_parent_failure"] = self.body.get("on_parent_failure") or "cancel"
        if self.children:
            data["children"] = self.children
            data["children_count"] = len(self.children)
        if self.body.get("batch") is not None:
            data["batch"] = self.body["batch"]
        return Job.from_json(data)


class _Mode:
    """Holds the jobs submitted while the mode is on; answers a handle's
    get, wait and cancel."""

    def __init__(self, handlers: Registry, middleware: Sequence[Middleware] = ()) -> None:
        self._handlers = handlers
        self._middleware = list(middleware)
        self._lock = threading.RLock()
        self._jobs: Dict[int, FakeJob] = {}
        self._ids = itertools.count(1)
        self._batches = 0

    # SubmitSink
    def submit(self, bodies: Sequence[Dict[str, Any]]) -> List[Union[Handle[Any], TenqError]]:
        out: List[Union[Handle[Any], TenqError]] = []
        for body in bodies:
            with self._lock:
                # the job as a worker would see it: through JSON
                rec = FakeJob(next(self._ids), json.loads(json.dumps(body)))
                try:
                    rec.parents = self._parents_of(rec.body.pop("depends_on", None) or [], out)
                except TenqError as e:
                    out.append(e)
                    continue
                self._jobs[rec.id] = rec
                for p in rec.parents:
                    self._jobs[p].children.append(rec.id)
                if rec.parents:
                    rec.state = "waiting"
                    self._settle(rec)
            self._submitted(rec)
            out.append(Handle(self, rec.id, rec.state))
        return out

    def new_batch(self) -> int:
        with self._lock:
            self._batches += 1
            return self._batches

    def _parents_of(self, deps: List[Any], before: List[Any]) -> List[int]:
        """(lock) The ids of ``depends_on``: ``{"index": i}`` names a job
        of the same request (``before``)."""
        ids: List[int] = []
        for d in deps:
            if isinstance(d, dict):
                i = d.get("index")
                h = before[i] if isinstance(i, int) and 0 <= i < len(before) else None
                if not isinstance(h, Handle):
                    raise ConflictError(
                        f"depends_on index {i} names no job made", status=409, field="depends_on"
                    )
                d = h.id
            if d not in self._jobs:
                raise NotFoundError(f"no job {d}", status=404, field="depends_on")
            if d not in ids:
                ids.append(d)
        return ids

    def _settle(self, rec: FakeJob) -> None:
        """(lock) A waiting job whose parents all finished: ready, or
        cancelled by a parent that did not succeed (policy cancel)."""
        if rec.state != "waiting":
            return
        policy = rec.body.get("on_parent_failure") or "cancel"
        for p in rec.parents:
            parent = self._jobs[p]
            if parent.state == "succeeded":
                continue
            if parent.state in ("dead", "cancelled"):
                if policy == "cancel":
                    rec.state = "cancelled"
                    rec.error = f"cancelled: parent {p} is {parent.state}"
                    return
                continue
            return  # still unfinished
        rec.state = "ready"

    def parents(self, job_id: int) -> Parents:
        """The job's parents and children as the mode holds them."""
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                raise NotFoundError(f"no job {job_id}", status=404, field="id")
            return Parents(
                rec.id,
                rec.state,
                [Parent(p, self._jobs[p].state, self._jobs[p].result) for p in rec.parents],
                [Child(c, self._jobs[c].state) for c in rec.children],
                len(rec.children),
            )

    def _submitted(self, rec: FakeJob) -> None:
        """What the mode does with a new job."""

    # JobBackend
    def get(self, job_id: int) -> Job:
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                raise NotFoundError(f"no job {job_id}", status=404, field="id")
            return rec.to_job()

    def wait(self, job_id: int, timeout: float = 30.0) -> Job:
        """The job as it is: nothing runs while a test waits."""
        return self.get(job_id)

    def cancel(self, job_id: int) -> CancelResult:
        with self._lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                raise NotFoundError(f"no job {job_id}", status=404, field="id")
            if rec.state not in ("ready", "waiting"):
                raise ConflictError(f"job {job_id} is {rec.state}", status=409, field="state")
            rec.state = "cancelled"
            for c in rec.children:
                self._settle(self._jobs[c])
            return CancelResult(job_id, "cancelled", False)

    def _run(self, rec: FakeJob) -> None:
        """Runs one job once, as a worker would."""
        with self._lock:
            if rec.state != "ready":
                return
            rec.state = "running"
            rec.attempts += 1
        job = dict(rec.body)
        job.update(id=rec.id, token=0, attempt=rec.attempts - 1)
        job.setdefault("args", None)
        task = Context(
            job,
            on_progress=lambda t: setattr(rec, "progress", t.last_progress),
            client=_ModeClient(self, rec),
        )
        reg = self._handlers.get(rec.type)
        if reg is None:
            outcome: Dict[str, Any] = {"ok": False, "error": f"no handler for type {rec.type}"}
        else:
            fn = reg.fn
            call = chain(task, lambda: invoke(fn, task, asyncio.run), self._middleware)
            outcome = outcome_of(task, call)
        with self._lock:
            if outcome.get("ok"):
                rec.state = "succeeded"
                rec.result = json.loads(json.dumps(outcome.get("result")))
            else:
                rec.state = "cancelled" if outcome.get("cancelled") else "dead"
                rec.error = outcome.get("error")
            waiting = [self._jobs[c] for c in rec.children]
            for child in waiting:
                self._settle(child)
        self._released(waiting)

    def _released(self, children: List[FakeJob]) -> None:
        """What the mode does with the children of a job that finished."""


class _ModeClient:
    """What a handler's Context asks in the test mode: the parents the mode
    holds; add_to_batch as a client with the job's queue would."""

    def __init__(self, mode: _Mode, rec: FakeJob) -> None:
        self._mode = mode
        self._rec = rec

    def parents(self, job_id: int) -> Parents:
        return self._mode.parents(job_id)

    def add_to_batch(self, batch_id: int, jobs: Any) -> List[Handle[Any]]:
        from tenq.client import Client

        c = Client(queue=self._rec.queue, tenant=self._rec.body.get("tenant"))
        return c.add_to_batch(batch_id, jobs)


class Inline(_Mode):
    """Runs each job when it is submitted, in the submitting thread."""

    def _submitted(self, rec: FakeJob) -> None:
        if rec.state == "ready":
            self._run(rec)


class Fake(_Mode):
    """Records jobs for assertions; ``drain`` runs them."""

    def jobs(self, type: Optional[str] = None, queue: Optional[str] = None,
             state: Optional[str] = None) -> List[FakeJob]:
        """The jobs recorded, oldest first (only those of ``type``,
        ``queue``, ``state`` when given)."""
        with self._lock:
            return [
                r
                for r in self._jobs.values()
                if (type is None or r.type == type)
                and (queue is None or r.queue == queue)
                and (state is None or r.state == state)
            ]

    def clear(self) -> None:
        """Forgets every job recorded."""
        with self._lock:
            self._jobs.clear()

    def drain(self) -> int:
        """Runs every ready job, oldest first, and those they submit, until
        none is left; how many ran."""
        ran = 0
        while True:
            ready = self.jobs(state="ready")
            if not ready:
                return ran
            for rec in ready:
                self._run(rec)
                ran += 1


@contextmanager
def inline(
    handlers: Optional[Registry] = None, middleware: Sequence[Middleware] = ()
) -> Iterator[Inline]:
    """Within the block, submits run their job at once (through
    ``middleware``, as a worker would)."""
    mode = Inline(handlers or registry, middleware)
    with _switched(mode):
        yield mode


@contextmanager
def fake(
    handlers: Optional[Registry] = None, middleware: Sequence[Middleware] = ()
) -> Iterator[Fake]:
    """Within the block, submits are recorded (see Fake); ``drain`` runs
    them through ``middleware``."""
    mode = Fake(handlers or registry, middleware)
    with _switched(mode):
        yield mode


@contextmanager
def _switched(mode: _Mode) -> Iterator[None]:
    before = _mode.active()
    _mode.set_active(mode)
    try:
        yield
    finally:
        _mode.set_active(before)
