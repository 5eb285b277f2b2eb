# SPDX-License-Identifier: Apache-2.0
"""What a handler sees of the job it runs (Context), how it asks for a retry
or for none (Retry, NoRetry), and how it learns it should stop (Stopped)."""

from __future__ import annotations

import contextvars
import json
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Union,
)

from tenq.errors import InvalidError

if TYPE_CHECKING:
    from tenq.jobs import Handle, JobSpec, Parents

# Why a handler is asked to stop.
CANCELLED = "cancelled"  # the job was cancelled (noticed at a heartbeat)
TIMEOUT = "timeout"  # it ran past its timeout
SHUTDOWN = "shutdown"  # the worker stops and the grace period is over
LOST = "lost"  # the lease is gone (expired, taken over): its outcome would be refused


class Retry(Exception):
    """Raised (or returned) by a handler: this attempt failed; retry after
    ``delay`` seconds or ``in_ms`` milliseconds (neither: by the queue's
    backoff)."""

    def __init__(
        self,
        message: str = "retry requested",
        *,
        delay: Optional[float] = None,
        in_ms: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        if delay is not None:
            in_ms = int(delay * 1000)
        self.in_ms = in_ms


class NoRetry(Exception):
    """Raised by a handler: this attempt failed and the job goes to the
    morgue (dead) now, whatever attempts are left."""


class Stopped(Exception):
    """Raised by Context.check() once the handler is asked to stop; ``reason``
    is cancelled, timeout, shutdown or lost."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"stopped: {reason}")
        self.reason = reason


def _opt_int(job: Dict[str, Any], name: str) -> int:
    v = job.get(name)
    return v if isinstance(v, int) else 0


# Guards every Context's stop request, stop event and progress: one lock for
# all, as those are rare and brief (a lock of each job's own cost a worker
# an allocation a job, for a lock most jobs never take).
_lock = threading.Lock()


class Context:
    """The job a handler runs, as the lease gave it (``job``), with the
    worker's means to talk back: progress, stats, and the stop request."""

    __slots__ = (
        "job",
        "id",
        "token",
        "type",
        "_stop_event",
        "stop_reason",
        "stats",
        "_progress",
        "_on_progress",
        "_tx_outcome",
        "_client",
    )

    def __init__(
        self,
        job: Dict[str, Any],
        on_progress: Optional[Callable[["Context"], None]] = None,
        client: Any = None,
    ) -> None:
        self.job = job
        # the worker's client: for add_to_batch and parent_results
        self._client = client
        self.id: int = job["id"]
        token = job.get("token")  # (inline: a worker makes one a job)
        self.token: int = token if type(token) is int else 0
        self.type: str = job.get("type") or ""
        # why the handler should stop (None: it should not); see stop_event
        self.stop_reason: Optional[str] = None
        self._stop_event: Optional[threading.Event] = None
        # JSON object sent with the outcome (the server keeps those of successes)
        self.stats: Optional[Dict[str, Any]] = None
        self._progress: Any = None
        self._on_progress = on_progress
        self._tx_outcome: Optional[Dict[str, Any]] = None

    @property
    def attempt(self) -> int:
        """This attempt's number, 1 on the first run: the ``attempt`` of the
        job's attempt history (``Client.attempts``) and its ``attempts``
        while it runs. (The lease's ``attempt`` counts the attempts before
        this one; inline, with none, it is 1.)"""
        v = self.job.get("attempt")
        return v + 1 if type(v) is int and v >= 0 else 1

    @property
    def args(self) -> Any:
        """The job's args (None when it has none; see payloads)."""
        return self.job.get("args")

    @property
    def payloads(self) -> Any:
        """On merging queues: ``[{"payload": ..., "score": ...}, ...]``."""
        return self.job.get("payloads")

    @property
    def tenant(self) -> str:
        return str(self.job.get("tenant") or "")

    @property
    def queue(self) -> str:
        return str(self.job.get("queue") or "")

    @property
    def key(self) -> Optional[str]:
        k = self.job.get("key")
        return k if isinstance(k, str) else None

    @property
    def max_attempts(self) -> int:
        return _opt_int(self.job, "max_attempts")

    @property
    def timeout_ms(self) -> Optional[int]:
        """The job's own server-side timeout (None: the queue's, if any):
        the server fails the attempt that long after its lease, and the
        handler is then stopped with reason ``lost``."""
        v = self.job.get("timeout_ms")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def traceparent(self) -> Optional[str]:
        """The W3C trace context the job was submitted with, if any."""
        tp = self.job.get("traceparent")
        return tp if isinstance(tp, str) else None

    @property
    def batch(self) -> Optional[int]:
        """The id of the job's batch (None: it is in none)."""
        v = self.job.get("batch")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def batch_callback(self) -> Optional[str]:
        """``on_complete``, ``on_success`` or ``on_death`` when the job is
        a batch's callback (None otherwise)."""
        v = self.job.get("batch_callback")
        return v if isinstance(v, str) else None

    @property
    def parents(self) -> List[int]:
        """The ids of the jobs this one depended on, as its lease names
        them ([] when none); their results: parent_results()."""
        v = self.job.get("parents")
        if not isinstance(v, list):
            return []
        return [x for x in v if isinstance(x, int) and not isinstance(x, bool)]

    def parent_results(self) -> "Parents":
        """GET /v1/jobs/{id}/parents for this job: each parent's id, state
        and result, in the order the job named them."""
        out: "Parents" = self._need_client("parent_results").parents(self.id)
        return out

    def add_to_batch(
        self, jobs: Iterable[Union["JobSpec", Mapping[str, Any]]]
    ) -> List["Handle[Any]"]:
        """Fan-out: adds jobs to this job's batch (it is open while this job
        runs); a handle per job. InvalidError when the job is in no batch."""
        batch = self.batch
        if batch is None:
            raise InvalidError(f"job {self.id} is in no batch", field="batch")
        out: List["Handle[Any]"] = self._need_client("add_to_batch").add_to_batch(batch, jobs)
        return out

    def _need_client(self, what: str) -> Any:
        if self._client is None:
            raise InvalidError(f"{what} needs the worker's client (none given)", field="client")
        return self._client

    @property
    def stop_event(self) -> threading.Event:
        """Set once the handler should stop (made on first use: most
        handlers never look)."""
        with _lock:
            if self._stop_event is None:
                self._stop_event = threading.Event()
                if self.stop_reason is not None:
                    self._stop_event.set()
            return self._stop_event

    @property
    def cancelled(self) -> bool:
        """The job was cancelled: stop, and the worker reports it so."""
        return self.stop_reason == CANCELLED

    @property
    def stopping(self) -> bool:
        """The handler is asked to stop (see stop_reason)."""
        return self.stop_reason is not None

    def check(self) -> None:
        """Raises Stopped when the handler is asked to stop: a handler with
        long work calls it now and then."""
        reason = self.stop_reason
        if reason is not None:
            raise Stopped(reason)

    def sleep(self, seconds: float) -> None:
        """Sleeps, but raises Stopped as soon as a stop comes."""
        self.stop_event.wait(seconds)
        self.check()

    def progress(self, value: Any) -> None:
        """Records progress (any JSON); it reaches the job (GET shows it in
        ``progress``) within about half a second."""
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidError(
                f"progress is not JSON-serialisable: {e}", field="progress"
            ) from None
        with _lock:
            self._progress = value
        if self._on_progress is not None:
            self._on_progress(self)

    @property
    def last_progress(self) -> Any:
        with _lock:
            return self._progress

    def request_stop(self, reason: str) -> bool:
        """Asks the handler to stop (the worker's side); False when it was
        asked already (the first reason stays)."""
        with _lock:
            if self.stop_reason is not None:
                return False
            self.stop_reason = reason
            event = self._stop_event
        if event is not None:
            event.set()
        return True

    @property
    def tx_outcome(self) -> Optional[Dict[str, Any]]:
        """The outcome the handler reported in its own database transaction
        (``tenq.tx.complete``: ``{"ok": True}``; ``tenq.tx.fail``: ``{"ok":
        False, "error": ..., "retry_in_ms": ...}``), or None. The worker then
        acknowledges the job without a result, or reports that failure, and
        takes a refusal of its heartbeats or of that report as expected."""
        return self._tx_outcome

    def note_tx_outcome(self, outcome: Dict[str, Any]) -> None:
        """(tenq.tx) The handler reported ``outcome`` in its transaction."""
        self._tx_outcome = dict(outcome)

    def __repr__(self) -> str:
        return f"<tenq.Context id={self.id} type={self.type} attempt={self.attempt}>"


_current: contextvars.ContextVar[Optional[Context]] = contextvars.ContextVar(
    "tenq_current_context", default=None
)


def current_context() -> Optional[Context]:
    """The task of the job this code runs in, or None (called inline)."""
    return _current.get()


def progress(value: Any) -> None:
    """Records the current job's progress; nothing when called inline."""
    task = _current.get()
    if task is not None:
        task.progress(value)


# The current job of this thread (or async task), as a worker runs it.
set_current: Callable[[Optional[Context]], "contextvars.Token[Optional[Context]]"] = _current.set
reset_current: Callable[["contextvars.Token[Optional[Context]]"], None] = _current.reset
