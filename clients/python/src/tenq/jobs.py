# SPDX-License-Identifier: Apache-2.0
"""What the client sends and gets back about jobs: a job to submit
(JobSpec), a job as the server shows it (Job), the handle of a submitted job
(Handle), a page of a list, the answer of a cancel."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import (
    Any,
    Dict,
    Generic,
    List,
    Literal,
    Optional,
    Mapping,
    Protocol,
    Sequence,
    Type,
    TypedDict,
    TypeVar,
    Union,
    cast,
)

from tenq.errors import (
    InvalidError,
    JobCancelledError,
    JobExpiredError,
    JobFailedError,
    ProtocolError,
    TimedOutError,
)

R = TypeVar("R")
B = TypeVar("B")
H = TypeVar("H", bound="_HandleBase[Any]")

# A job's state (docs/SEMANTICS.md); the server's table of them is served at
# GET /v1/spec, and tests/test_spec.py checks these against it.
JobState = Literal[
    "scheduled",
    "blocked",
    "waiting",
    "ready",
    "leased",
    "running",
    "dead",
    "succeeded",
    "cancelled",
    "merged",
    "expired",
]
# The states a job moves no further from by itself: what ``wait()`` waits for.
FINISHED_STATES = frozenset({"succeeded", "cancelled", "merged", "expired", "dead"})

RunAt = Union[int, datetime.datetime]

# Why a job that is neither handed out nor finished waits (docs/API.md).
WaitingReason = Literal[
    "scheduled",
    "backoff",
    "lane",
    "tenant_slots",
    "tenant_cap",
    "queue_paused",
    "tenant_paused",
    "tenant_rate",
    "queue_rate",
    "queue_tenant_rate",
    "worker",
    "no_worker",
    "parents",
    "concurrency_key",
    "rate_key",
    "sleep",
    "event",
    "child",
]

# What a child does when one of its parents dies or is cancelled (docs/SEMANTICS.md,
# "Dependencies"): ``cancel`` (the server's default) cancels it, ``run`` counts
# that parent as done.
OnParentFailure = Literal["cancel", "run"]


@dataclass(frozen=True)
class Index:
    """An earlier job of the same request, by its position: a parent in
    ``depends_on`` of a job given to ``submit_many`` or ``create_batch``
    (``Index(0)`` is the first job of the list; it must come before the job
    naming it). Sent as ``{"index": i}``."""

    index: int


# A parent in ``depends_on``: a job's id, its Handle, or Index(i).
Dependency = Union[int, "Handle[Any]", Index]


class Waiting(TypedDict, total=False):
    """A job's ``waiting``: its ``reason``, a ``message`` for people, and
    the reason's figures: ``until`` (scheduled, backoff and the rates: ms
    since the epoch), ``blocked_by`` (lane), ``active`` and ``limit``
    (tenant_slots, tenant_cap, concurrency_key), ``asked_at`` (worker,
    no_worker: when a lease last named its queue and type), ``key`` and
    ``held_by`` (concurrency_key: the key at its limit and a job holding
    it; rate_key: the key, its next start at ``until``)."""

    reason: WaitingReason
    message: str
    until: int
    blocked_by: int
    active: int
    limit: int
    asked_at: int
    parents: List[int]
    key: str
    held_by: int
    event: str
    child: int


class ConcurrencyKey(TypedDict, total=False):
    """A concurrency key a job names (docs/SEMANTICS.md, "Concurrency
    keys"): at most ``limit`` of the tenant's jobs naming ``key`` run at
    once (no limit: the key's setting, else its queue's
    ``concurrency_limit``). A key alone may be given as a str."""

    key: str
    limit: int


class RateKey(TypedDict, total=False):
    """A rate key (docs/SEMANTICS.md, "Rate keys"): each start takes
    ``cost`` units (default 1) of the key's rate: ``rate`` units per
    ``rate_period_ms`` (default 1000) with bursts of ``rate_burst`` (default
    the rate), or the key's setting's. A key alone may be given as a str."""

    key: str
    cost: int
    rate: int
    rate_period_ms: int
    rate_burst: int


KeyLike = Union[str, ConcurrencyKey]
RateKeyLike = Union[str, RateKey]


def depends_on_body(deps: Any) -> List[Any]:
    """``depends_on`` as the protocol's list: ids, and ``{"index": i}`` for
    Index(i) (a mapping ``{"index": i}`` is taken as is); InvalidError
    naming ``depends_on`` for anything else."""
    if isinstance(deps, (str, bytes, Mapping)) or not isinstance(deps, (Sequence, tuple)):
        raise InvalidError("depends_on is a list of job ids, handles or Index(i)", field="depends_on")
    out: List[Any] = []
    for d in deps:
        if isinstance(d, Index):
            out.append({"index": d.index})
        elif isinstance(d, Handle):
            out.append(d.id)
        elif isinstance(d, int) and not isinstance(d, bool):
            out.append(d)
        elif isinstance(d, Mapping) and set(d) == {"index"} and type(d["index"]) is int:
            out.append({"index": d["index"]})
        else:
            raise InvalidError(
                f"depends_on holds job ids, handles or Index(i), not {d!r}", field="depends_on"
            )
    return out


def run_at_ms(value: RunAt) -> int:
    """Milliseconds since the epoch of an int (already that) or a datetime
    (a naive one is local time)."""
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidError("run_at is milliseconds since the epoch or a datetime", field="run_at")
    return value


@dataclass
class JobSpec:
    """One job to submit. Only ``type`` is required here: ``queue`` and
    ``tenant`` fall back to the client's defaults (a tenant token implies
    its tenant). ``idempotency_key`` is sent only when given: the server
    then makes one job for it, however often it is submitted, for a day
    (the library's own retries need none: they carry a request key).
    ``timeout_ms`` makes the server fail an attempt still running that long
    after its lease (None: the queue's ``timeout_ms``). ``depends_on``: the
    job's parents (ids, handles, or Index(i) for an earlier job of the same
    submit_many or create_batch): it waits, in state ``waiting``, until
    every one succeeded; ``on_parent_failure`` says what a parent that dies
    or is cancelled does to it (``cancel``, the default, or ``run``).
    ``concurrency_keys`` and ``rate_keys``: keyed limits (up to 4 each);
    ``debounce_ms`` (with ``key``) replaces the key's pending job and starts
    it that long after the last submit, at most ``debounce_max_ms`` after
    the first; ``expire_at`` (a datetime or ms) or ``start_within_ms``: not
    leased by then, it ends ``expired`` and never runs."""

    type: str
    args: Any = None
    queue: Optional[str] = None
    tenant: Optional[str] = None
    key: Optional[str] = None
    unique_key: Optional[str] = None
    unique: bool = False
    idempotency_key: Optional[str] = None
    priority: Optional[int] = None
    run_at: Optional[RunAt] = None
    max_attempts: Optional[int] = None
    score: Optional[float] = None
    traceparent: Optional[str] = None
    timeout_ms: Optional[int] = None
    depends_on: Optional[Sequence[Dependency]] = None
    on_parent_failure: Optional[OnParentFailure] = None
    concurrency_keys: Optional[Sequence[KeyLike]] = None
    rate_keys: Optional[Sequence[RateKeyLike]] = None
    debounce_ms: Optional[int] = None
    debounce_max_ms: Optional[int] = None
    expire_at: Optional[RunAt] = None
    start_within_ms: Optional[int] = None

    def body(self) -> Dict[str, Any]:
        """The job as the protocol's JSON object (without defaults)."""
        out: Dict[str, Any] = {"type": self.type}
        if self.queue is not None:
            out["queue"] = self.queue
        if self.tenant is not None:
            out["tenant"] = self.tenant
        if self.args is not None:
            out["args"] = self.args
        for name in (
            "key",
            "unique_key",
            "idempotency_key",
            "priority",
            "max_attempts",
            "score",
            "traceparent",
            "timeout_ms",
            "on_parent_failure",
            "debounce_ms",
            "debounce_max_ms",
            "start_within_ms",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        for name in ("concurrency_keys", "rate_keys"):
            keys = getattr(self, name)
            if keys is not None:
                out[name] = [k if isinstance(k, str) else dict(k) for k in keys]
        if self.expire_at is not None:
            out["expire_at"] = run_at_ms(self.expire_at)
        if self.unique:
            out["unique"] = True
        if self.run_at is not None:
            out["run_at"] = run_at_ms(self.run_at)
        if self.depends_on is not None:
            out["depends_on"] = depends_on_body(self.depends_on)
        return out


def _opt_int(d: Dict[str, Any], name: str) -> Optional[int]:
    v = d.get(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt_str(d: Dict[str, Any], name: str) -> Optional[str]:
    v = d.get(name)
    return v if isinstance(v, str) else None


def _dicts(d: Dict[str, Any], name: str) -> List[Dict[str, Any]]:
    v = d.get(name)
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _ids(d: Dict[str, Any], name: str) -> List[int]:
    v = d.get(name)
    if not isinstance(v, list):
        return []
    return [x for x in v if isinstance(x, int) and not isinstance(x, bool)]


@dataclass(frozen=True)
class Job:
    """A job as GET /v1/jobs/{id} (or a list) shows it. ``data`` is the
    whole answer, fields this library does not know included.
    ``parents`` (the ids it depends on, in the order given),
    ``on_parent_failure``, ``children`` (the first 1,000 ids of the jobs
    that depend on it) and ``children_count``; ``batch`` (the id of its
    batch) and ``batch_callback`` (``on_complete``, ``on_success`` or
    ``on_death`` for a batch's callback job); ``steps`` (how many durable
    steps its handler stored) and ``awaited_by`` (the job whose handler
    waits for it: ``Context.run_child``), while the server holds it."""

    id: int
    tenant: str
    queue: str
    type: str
    state: str
    args: Any = None
    payloads: Any = None
    key: Optional[str] = None
    priority: int = 0
    attempts: int = 0
    max_attempts: int = 0
    run_at: Optional[int] = None
    created_at: Optional[int] = None
    ready_at: Optional[int] = None
    leased_at: Optional[int] = None
    started_at: Optional[int] = None
    finished_at: Optional[int] = None
    worker: Optional[str] = None
    error: Optional[str] = None
    result: Any = None
    stats: Any = None
    progress: Any = None
    unique_key: Optional[str] = None
    idempotency_key: Optional[str] = None
    lease_until: Optional[int] = None
    cancel_requested: bool = False
    merged_into: Optional[int] = None
    token: Optional[int] = None
    traceparent: Optional[str] = None
    timeout_ms: Optional[int] = None
    waiting: Optional[Waiting] = None
    parents: List[int] = field(default_factory=list)
    children: List[int] = field(default_factory=list)
    children_count: int = 0
    on_parent_failure: Optional[str] = None
    batch: Optional[int] = None
    batch_callback: Optional[str] = None
    concurrency_keys: List[ConcurrencyKey] = field(default_factory=list)
    rate_keys: List[RateKey] = field(default_factory=list)
    expire_at: Optional[int] = None
    debounced: bool = False
    debounce_until: Optional[int] = None
    steps: int = 0
    awaited_by: Optional[int] = None
    data: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        """Succeeded, cancelled, merged, expired or dead: what a wait waits for."""
        return self.state in FINISHED_STATES

    @classmethod
    def from_json(cls, d: Any) -> "Job":
        from tenq.errors import ProtocolError

        if not isinstance(d, dict) or not isinstance(d.get("id"), int) or "state" not in d:
            raise ProtocolError(f"the answer is not a job: {str(d)[:200]}")
        return cls(
            id=d["id"],
            tenant=_opt_str(d, "tenant") or "",
            queue=_opt_str(d, "queue") or "",
            type=_opt_str(d, "type") or "",
            state=_opt_str(d, "state") or "unknown",
            args=d.get("args"),
            payloads=d.get("payloads"),
            key=_opt_str(d, "key"),
            priority=_opt_int(d, "priority") or 0,
            attempts=_opt_int(d, "attempts") or 0,
            max_attempts=_opt_int(d, "max_attempts") or 0,
            run_at=_opt_int(d, "run_at"),
            created_at=_opt_int(d, "created_at"),
            ready_at=_opt_int(d, "ready_at"),
            leased_at=_opt_int(d, "leased_at"),
            started_at=_opt_int(d, "started_at"),
            finished_at=_opt_int(d, "finished_at"),
            worker=_opt_str(d, "worker"),
            error=_opt_str(d, "error"),
            result=d.get("result"),
            stats=d.get("stats"),
            progress=d.get("progress"),
            unique_key=_opt_str(d, "unique_key"),
            idempotency_key=_opt_str(d, "idempotency_key"),
            lease_until=_opt_int(d, "lease_until"),
            cancel_requested=d.get("cancel_requested") is True,
            merged_into=_opt_int(d, "merged_into"),
            token=_opt_int(d, "token"),
            traceparent=_opt_str(d, "traceparent"),
            timeout_ms=_opt_int(d, "timeout_ms"),
            waiting=cast(Waiting, d["waiting"]) if isinstance(d.get("waiting"), dict) else None,
            parents=_ids(d, "parents"),
            children=_ids(d, "children"),
            children_count=_opt_int(d, "children_count") or 0,
            steps=_opt_int(d, "steps") or 0,
            awaited_by=_opt_int(d, "awaited_by"),
            on_parent_failure=_opt_str(d, "on_parent_failure"),
            batch=_opt_int(d, "batch"),
            batch_callback=_opt_str(d, "batch_callback"),
            concurrency_keys=[cast(ConcurrencyKey, k) for k in _dicts(d, "concurrency_keys")],
            rate_keys=[cast(RateKey, k) for k in _dicts(d, "rate_keys")],
            expire_at=_opt_int(d, "expire_at"),
            debounced=d.get("debounced") is True,
            debounce_until=_opt_int(d, "debounce_until"),
            data=d,
        )


@dataclass(frozen=True)
class Parent:
    """A parent of a job (GET /v1/jobs/{id}/parents): its state, and its
    result once it succeeded (``gone``: pruned, the result is None)."""

    id: int
    state: str
    result: Any = None


@dataclass(frozen=True)
class Child:
    """A job that depends on another, with its state."""

    id: int
    state: str


@dataclass(frozen=True)
class Parents:
    """A job's dependencies: its ``parents`` in the order it named them,
    and its ``children`` (the first 1,000 by id) with their count."""

    id: int
    state: str
    parents: List[Parent]
    children: List[Child]
    children_count: int

    def results(self) -> List[Any]:
        """The parents' results, in order."""
        return [p.result for p in self.parents]

    @classmethod
    def from_json(cls, d: Any) -> "Parents":
        from tenq.errors import ProtocolError

        if not isinstance(d, dict) or not isinstance(d.get("id"), int):
            raise ProtocolError(f"the answer is not a job's parents: {str(d)[:200]}")
        parents = [
            Parent(p["id"], str(p.get("state")), p.get("result"))
            for p in d.get("parents") or []
            if isinstance(p, dict) and isinstance(p.get("id"), int)
        ]
        children = [
            Child(c["id"], str(c.get("state")))
            for c in d.get("children") or []
            if isinstance(c, dict) and isinstance(c.get("id"), int)
        ]
        return cls(
            d["id"],
            _opt_str(d, "state") or "unknown",
            parents,
            children,
            _opt_int(d, "children_count") or len(children),
        )


@dataclass(frozen=True)
class JobPage:
    """A page of GET /v1/jobs: pass ``next`` as ``after_id`` for the next
    one (None: this was the last)."""

    jobs: List[Job]
    next: Optional[Any]


@dataclass(frozen=True)
class CancelResult:
    """``state`` is cancelled at once, or stays leased/running with
    ``cancel_requested`` set (the worker is told at its next heartbeat)."""

    id: int
    state: str
    cancel_requested: bool


class JobBackend(Protocol):
    """Where a handle asks about its job: a Client, or the test mode."""

    def get(self, job_id: int) -> Job: ...

    def wait(self, job_id: int, timeout: float = 30.0) -> Job: ...

    def cancel(self, job_id: int) -> CancelResult: ...


def job_outcome(job: Job) -> Any:
    """The result of a finished job, or the error of one that did not
    succeed (JobFailedError, JobCancelledError, JobExpiredError, TimedOutError
    when it is not finished)."""
    if job.state == "succeeded":
        return job.result
    if job.state == "cancelled":
        raise JobCancelledError(f"job {job.id} ({job.type}) was cancelled", job)
    if job.state == "expired":
        raise JobExpiredError(
            f"job {job.id} ({job.type}) expired: not started by {job.expire_at}", job
        )
    if job.state == "dead":
        raise JobFailedError(
            f"job {job.id} ({job.type}) failed {job.attempts} time(s) and is dead: "
            f"{job.error or 'no error given'}",
            job,
        )
    raise TimedOutError(f"job {job.id} ({job.type}) is still {job.state}")


class _HandleBase(Generic[B]):
    """What the handles of both clients hold (``Handle``, and the asyncio
    client's ``AsyncHandle``): the job's ``id``, its ``state`` when
    submitted, how the submit went, and where to ask about the job."""

    __slots__ = ("_backend", "id", "state", "duplicate", "merged", "replayed", "debounced")
    _name = "Handle"

    def __init__(
        self,
        backend: B,
        job_id: int,
        state: str,
        duplicate: bool = False,
        merged: bool = False,
        replayed: bool = False,
        debounced: bool = False,
    ) -> None:
        self._backend = backend
        self.id = job_id
        self.state = state
        self.duplicate = duplicate
        self.merged = merged
        self.replayed = replayed
        self.debounced = debounced

    @classmethod
    def _of_answer(cls: Type[H], backend: Any, ans: Any, replayed: bool = False) -> H:
        """The handle of a job of a submit's answer (``replayed``: its
        request was); ProtocolError when it names no job."""
        job_id = ans.get("id") if isinstance(ans, dict) else None
        if type(job_id) is not int:
            raise ProtocolError(f"the submit answer has no id: {str(ans)[:200]}")
        return cls(
            backend,
            job_id,
            str(ans.get("state")),
            duplicate=ans.get("duplicate") is True,
            merged=ans.get("merged") is True,
            replayed=replayed or ans.get("replayed") is True,
            debounced=ans.get("debounced") is True,
        )

    @property
    def created(self) -> bool:
        """A new job was made (not a duplicate, a merge, a replay or a debounce)."""
        return not (self.duplicate or self.merged or self.replayed or self.debounced)

    def __repr__(self) -> str:
        return f"<tenq.{self._name} id={self.id} state={self.state}>"


class Handle(_HandleBase[JobBackend], Generic[R]):
    """A submitted job. ``wait`` gives its result (the handler's return
    value, as JSON brings it back) or raises why there is none.
    ``duplicate``: an existing job with the same ``unique_key`` (or
    ``unique`` args); ``merged``: folded into a job with the same ``key``;
    ``replayed``: made before, by an earlier copy of the same request (the
    server replayed its answer) or a job with the same ``idempotency_key``;
    ``debounced``: the pending job of its key (``debounce_ms``) took it."""

    __slots__ = ()

    def __init__(
        self,
        backend: JobBackend,
        job_id: int,
        state: str,
        *,
        duplicate: bool = False,
        merged: bool = False,
        replayed: bool = False,
        debounced: bool = False,
    ) -> None:
        super().__init__(backend, job_id, state, duplicate, merged, replayed, debounced)

    def get(self) -> Job:
        """The job now."""
        return self._backend.get(self.id)

    def wait_job(self, timeout: float = 30.0) -> Job:
        """The job once finished, or as it is when ``timeout`` seconds have
        passed (a merged job: the job that took its payload)."""
        return self._backend.wait(self.id, timeout)

    def wait(self, timeout: float = 30.0) -> R:
        """The job's result once it succeeded. Raises JobFailedError when it
        died, JobCancelledError when cancelled, JobExpiredError when it
        expired, TimedOutError when it is not finished within ``timeout``
        seconds."""
        return cast(R, job_outcome(self.wait_job(timeout)))

    def cancel(self) -> CancelResult:
        return self._backend.cancel(self.id)
