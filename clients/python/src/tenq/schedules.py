# SPDX-License-Identifier: Apache-2.0
"""Periodic jobs (schedules, docs/API.md "Schedules") and a job's attempt
history (GET /v1/jobs/{id}/attempts), as the server shows them: frozen
dataclasses, with ``data`` holding the whole answer (fields this library
does not know included)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

from tenq.errors import ProtocolError

# What a schedule does with ticks that were due while it could not run
# (no leader, paused): none of them, one for the latest, or each (at most 100).
Missed = Literal["skip", "once", "each"]

# How an attempt ended: ``leased`` and ``running`` are the attempt under way.
AttemptOutcome = Literal[
    "failed", "expired", "timed_out", "cancelled", "succeeded", "leased", "running", "suspended"
]


def _str(d: Dict[str, Any], name: str) -> Optional[str]:
    v = d.get(name)
    return v if isinstance(v, str) else None


def _int(d: Dict[str, Any], name: str) -> Optional[int]:
    v = d.get(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class ScheduleJob:
    """The job a schedule submits at each tick (a submit's fields; None and
    0: the queue's)."""

    tenant: str
    queue: str
    type: str
    args: Any = None
    key: Optional[str] = None
    priority: int = 0
    unique_key: Optional[str] = None
    unique: bool = False
    max_attempts: Optional[int] = None
    timeout_ms: Optional[int] = None

    @classmethod
    def from_json(cls, d: Any) -> "ScheduleJob":
        if not isinstance(d, dict):
            raise ProtocolError(f"the answer is not a schedule's job: {str(d)[:200]}")
        return cls(
            tenant=_str(d, "tenant") or "",
            queue=_str(d, "queue") or "",
            type=_str(d, "type") or "",
            args=d.get("args"),
            key=_str(d, "key"),
            priority=_int(d, "priority") or 0,
            unique_key=_str(d, "unique_key"),
            unique=d.get("unique") is True,
            max_attempts=_int(d, "max_attempts"),
            timeout_ms=_int(d, "timeout_ms"),
        )


@dataclass(frozen=True)
class Schedule:
    """A schedule: its cron expression in ``timezone``, its ``missed``
    policy, whether it is ``paused``, the ``job`` it makes; ``last_tick``
    (ms, None before the first), ``last_job`` (the job the last tick made,
    since the server loaded it), ``next_tick`` (None while paused),
    ``next_runs`` (the next ticks, ms), ``last_error`` (while the last tick
    was refused)."""

    name: str
    cron: str
    timezone: str
    missed: str
    paused: bool
    job: ScheduleJob
    last_tick: Optional[int] = None
    last_job: Optional[int] = None
    next_tick: Optional[int] = None
    next_runs: List[int] = field(default_factory=list)
    last_error: Optional[str] = None
    created_at: Optional[int] = None
    updated_at: Optional[int] = None
    data: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Any) -> "Schedule":
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise ProtocolError(f"the answer is not a schedule: {str(d)[:200]}")
        runs = d.get("next_runs")
        return cls(
            name=d["name"],
            cron=_str(d, "cron") or "",
            timezone=_str(d, "timezone") or "UTC",
            missed=_str(d, "missed") or "skip",
            paused=d.get("paused") is True,
            job=ScheduleJob.from_json(d.get("job")),
            last_tick=_int(d, "last_tick"),
            last_job=_int(d, "last_job"),
            next_tick=_int(d, "next_tick"),
            next_runs=[x for x in runs if isinstance(x, int)] if isinstance(runs, list) else [],
            last_error=_str(d, "last_error"),
            created_at=_int(d, "created_at"),
            updated_at=_int(d, "updated_at"),
            data=d,
        )


@dataclass(frozen=True)
class Attempt:
    """One attempt of a job, oldest first: ``attempt`` (the job's attempt
    count at that lease), the lease ``token`` (admin and worker tokens
    only), the ``worker``, when it was leased, started and finished (ms;
    None while under way), its ``outcome``, ``job_state`` (the state it
    left the job in), its ``error`` and the ``stats`` the worker
    reported; ``steps``, the names of the durable steps it stored
    (``suspended``: it parked the job, not a failure)."""

    attempt: int
    outcome: str
    job_state: str
    token: Optional[int] = None
    worker: Optional[str] = None
    leased_at: Optional[int] = None
    started_at: Optional[int] = None
    finished_at: Optional[int] = None
    error: Optional[str] = None
    stats: Any = None
    steps: List[str] = field(default_factory=list)
    data: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Any) -> "Attempt":
        if not isinstance(d, dict) or not isinstance(d.get("outcome"), str):
            raise ProtocolError(f"the answer is not an attempt: {str(d)[:200]}")
        return cls(
            attempt=_int(d, "attempt") or 0,
            outcome=d["outcome"],
            job_state=_str(d, "job_state") or "",
            token=_int(d, "token"),
            worker=_str(d, "worker"),
            leased_at=_int(d, "leased_at"),
            started_at=_int(d, "started_at"),
            finished_at=_int(d, "finished_at"),
            error=_str(d, "error"),
            stats=d.get("stats"),
            steps=[x for x in d.get("steps") or [] if isinstance(x, str)],
            data=d,
        )


__all__ = ["Attempt", "AttemptOutcome", "Missed", "Schedule", "ScheduleJob"]
