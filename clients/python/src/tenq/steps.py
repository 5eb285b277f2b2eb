# SPDX-License-Identifier: Apache-2.0
"""Durable steps (docs/SEMANTICS.md, "Durable steps"): what a job's handler
stored (Step), the answer to an event (EventResult), and what a step raises
in the handler: Parked (the job waits between attempts), EventTimeoutError,
ChildFailedError."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from tenq.errors import ProtocolError, TenqError, TimedOutError


class Parked(BaseException):
    """Raised inside a handler by a step that parked its job: a durable sleep
    (``ctx.sleep_for``), a wait for an event (``ctx.wait_for_event``) or for
    a child job (``ctx.run_child``). The attempt is over, without failing:
    the worker reports nothing, and the job runs again (from the start, with
    its stored steps) when its wait is over. It is a BaseException, as
    KeyboardInterrupt is, so that ``except Exception`` lets it through: let
    it leave the handler."""

    def __init__(self, kind: str, name: str, state: str) -> None:
        super().__init__(f"parked: {kind} {name!r} (the job is {state})")
        self.kind = kind
        self.name = name
        self.state = state


class EventTimeoutError(TimedOutError):
    """``ctx.wait_for_event`` timed out: no event of its key came in time."""

    def __init__(self, key: str, name: str) -> None:
        super().__init__(f"no event {key!r} came before the wait {name!r} timed out")
        self.key = key
        self.name = name


class ChildFailedError(TenqError):
    """``ctx.run_child``'s child job did not succeed: it died (``error`` is
    its last error) or was cancelled. ``child`` is its id, ``state`` the
    state it ended in."""

    code = "child_failed"

    def __init__(self, child: int, state: Optional[str], error: Optional[str]) -> None:
        super().__init__(f"child job {child} ended {state or 'without succeeding'}: {error}")
        self.child = child
        self.state = state
        self.error = error


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


@dataclass(frozen=True)
class Step:
    """A step a job's handler stored (GET /v1/jobs/{id}/steps). ``kind``:
    ``step`` (code the handler ran: ``result`` is what it returned),
    ``sleep``, ``event`` (``result``: the event's payload; ``error``
    ``timed out``), ``child`` (``result``: the child's, or ``error``).
    ``done`` is False while the job waits for it."""

    pos: int
    name: str
    kind: str
    done: bool
    result: Any = None
    error: Optional[str] = None
    attempt: int = 0
    token: Optional[int] = None
    created_at: int = 0
    finished_at: Optional[int] = None
    event: Optional[str] = None
    until: Optional[int] = None
    child: Optional[int] = None
    child_state: Optional[str] = None

    @classmethod
    def from_json(cls, o: Any) -> "Step":
        if not isinstance(o, dict) or not isinstance(o.get("name"), str):
            raise ProtocolError("a step of the answer is not a step")
        return cls(
            pos=_int(o.get("pos")),
            name=o["name"],
            kind=_opt_str(o.get("kind")) or "step",
            done=o.get("done") is True,
            result=o.get("result"),
            error=_opt_str(o.get("error")),
            attempt=_int(o.get("attempt")),
            token=_opt_int(o.get("token")),
            created_at=_int(o.get("created_at")),
            finished_at=_opt_int(o.get("finished_at")),
            event=_opt_str(o.get("event")),
            until=_opt_int(o.get("until")),
            child=_opt_int(o.get("child")),
            child_state=_opt_str(o.get("child_state")),
        )


def steps_from_json(ans: Any) -> List[Step]:
    items = ans.get("steps") if isinstance(ans, dict) else None
    if not isinstance(items, list):
        raise ProtocolError("the steps answer has no list")
    return [Step.from_json(x) for x in items]


@dataclass(frozen=True)
class EventResult:
    """The answer to an event (POST /v1/events): the jobs it woke, or
    (``kept``) that none waited and it is kept until ``expires_at`` for the
    first that waits for its key."""

    tenant: str
    key: str
    delivered: int
    jobs: List[int] = field(default_factory=list)
    kept: bool = False
    expires_at: Optional[int] = None

    @classmethod
    def from_json(cls, o: Any) -> "EventResult":
        if not isinstance(o, dict):
            raise ProtocolError("the event's answer is not an object")
        jobs = o.get("jobs")
        return cls(
            tenant=str(o.get("tenant") or ""),
            key=str(o.get("key") or ""),
            delivered=_int(o.get("delivered")),
            jobs=[x for x in jobs if isinstance(x, int)] if isinstance(jobs, list) else [],
            kept=o.get("kept") is True,
            expires_at=_opt_int(o.get("expires_at")),
        )


def stored_by_name(steps: List[Step]) -> Dict[str, Step]:
    return {s.name: s for s in steps if s.done}
