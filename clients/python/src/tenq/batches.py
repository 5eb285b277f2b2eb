# SPDX-License-Identifier: Apache-2.0
"""Batches (docs/SEMANTICS.md, "Batches"): a group of jobs with callbacks,
jobs the server submits itself when the group is complete (``on_complete``),
when every job of it succeeded (``on_success``) and when its first job dies
(``on_death``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

from tenq.jobs import Handle

BatchStatus = Literal["open", "closed"]
CallbackName = Literal["on_complete", "on_success", "on_death"]
CALLBACK_NAMES = ("on_complete", "on_success", "on_death")


def _int(d: Dict[str, Any], name: str) -> Optional[int]:
    v = d.get(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class BatchCallback:
    """A callback of a batch: its job's spec, and ``job``, the id of the
    job it made (None: not yet, or never)."""

    queue: str
    type: str
    args: Any = None
    job: Optional[int] = None
    data: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "BatchCallback":
        return cls(
            str(d.get("queue") or ""), str(d.get("type") or ""), d.get("args"), _int(d, "job"), d
        )


@dataclass(frozen=True)
class Batch:
    """A batch's status (GET /v1/batches/{id}). ``counts``: its jobs by
    their state now; ``pending`` the unfinished ones, ``finished`` the rest,
    ``progress`` their share; ``callbacks`` those given, by name."""

    id: int
    tenant: str
    status: str
    created_at: Optional[int] = None
    closed_at: Optional[int] = None
    total: int = 0
    pending: int = 0
    finished: int = 0
    progress: float = 0.0
    counts: Dict[str, int] = field(default_factory=dict)
    callbacks: Dict[str, BatchCallback] = field(default_factory=dict)
    data: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def closed(self) -> bool:
        """Every job finished and the callbacks were made: no job may be
        added any more (BatchClosedError)."""
        return self.status == "closed"

    @classmethod
    def from_json(cls, d: Any) -> "Batch":
        from tenq.errors import ProtocolError

        if not isinstance(d, dict) or not isinstance(d.get("id"), int):
            raise ProtocolError(f"the answer is not a batch: {str(d)[:200]}")
        counts = d.get("counts")
        cbs = d.get("callbacks")
        progress = d.get("progress")
        return cls(
            id=d["id"],
            tenant=str(d.get("tenant") or ""),
            status=str(d.get("status") or "unknown"),
            created_at=_int(d, "created_at"),
            closed_at=_int(d, "closed_at"),
            total=_int(d, "total") or 0,
            pending=_int(d, "pending") or 0,
            finished=_int(d, "finished") or 0,
            progress=float(progress) if isinstance(progress, (int, float)) else 0.0,
            counts=(
                {k: v for k, v in counts.items() if isinstance(v, int)}
                if isinstance(counts, dict)
                else {}
            ),
            callbacks=(
                {k: BatchCallback.from_json(v) for k, v in cbs.items() if isinstance(v, dict)}
                if isinstance(cbs, dict)
                else {}
            ),
            data=d,
        )


@dataclass(frozen=True)
class BatchCreated:
    """The answer of create_batch: the batch's id and a handle per job, in
    the order given."""

    id: int
    jobs: List[Handle[Any]]


@dataclass(frozen=True)
class BatchPage:
    """A page of list_batches, newest first: pass ``next_before`` as
    ``before`` for the next one (None: this was the last)."""

    batches: List[Batch]
    next_before: Optional[int]
