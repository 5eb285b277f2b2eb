# SPDX-License-Identifier: Apache-2.0
"""What a handler sees of the job it runs (Context), how it asks for a retry
or for none (Retry, NoRetry), and how it learns it should stop (Stopped)."""

from __future__ import annotations

import contextvars
import datetime
import json
import threading
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    TypeVar,
    Union,
    cast,
)

from tenq.errors import ConflictError, InvalidError, ProtocolError
from tenq.steps import ChildFailedError, EventTimeoutError, Parked, Step, stored_by_name

T = TypeVar("T")

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


def _check_json(value: Any, what: str, field: str) -> None:
    """InvalidError naming ``field`` when ``value`` is not JSON."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidError(f"{what} is not JSON-serialisable: {e}", field=field) from None


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
        "_steps",
        "_calls",
        "_parked",
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
        # durable steps: those stored (read at the first step), the calls
        # made of each kind (for names left out), whether a step parked it
        self._steps: Optional[Dict[str, Step]] = None
        self._calls: Optional[Dict[str, int]] = None
        self._parked = False

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

    # ---- durable steps (docs/SEMANTICS.md, "Durable steps") -----------------------------------

    def steps(self) -> List[Step]:
        """The steps of this job stored so far (by earlier attempts, then
        this one), in order. Read from the server once, at the first step
        call, when the lease says the job has some."""
        return list(self._stored().values())

    def step(self, name: str, fn: Callable[[], T]) -> T:
        """Runs ``fn()`` once for the job: its result (JSON) is stored under
        this attempt's lease before ``step`` returns, and a later attempt
        gets it back without running ``fn`` again. ``name`` (1-256 bytes, no
        control characters) must name the same work on every attempt. What
        may run again: ``fn`` when the worker dies (or loses its lease)
        before the store answered, so make it idempotent. Inline (a handler
        called without a worker) it just runs ``fn``."""
        got = self._stored().get(name)
        if got is not None:
            return cast(T, got.result)
        value = fn()
        _check_json(value, f"step {name!r}: its result", "result")
        if self._post({"name": name, "result": value}, "step", name) is not None:
            self._remember(name, "step", value, None)
        return value

    def sleep_for(self, seconds: float, *, name: Optional[str] = None) -> None:
        """A durable sleep: the attempt ends (``Parked`` leaves the handler;
        let it), the job's slot goes back, and the job runs again after
        ``seconds``, its steps kept; there this call returns at once. (Not
        ``sleep``: that one waits within the attempt, for a stop.) ``name``
        defaults to ``sleep#N``, N counting this run's sleeps."""
        self._sleep(name, {"duration_ms": max(0, int(seconds * 1000))}, seconds)

    def sleep_until(
        self, when: Union[float, datetime.datetime], *, name: Optional[str] = None
    ) -> None:
        """``sleep_for`` until a time: a datetime (naive: UTC) or seconds
        since the epoch."""
        if isinstance(when, datetime.datetime):
            if when.tzinfo is None:
                when = when.replace(tzinfo=datetime.timezone.utc)
            until = when.timestamp()
        else:
            until = float(when)
        self._sleep(name, {"until": max(1, int(until * 1000))}, until - time.time())

    def _sleep(self, name: Optional[str], body: Dict[str, Any], inline_s: float) -> None:
        name = self._auto("sleep", name)
        if name in self._stored():
            return
        if not self._steps_live():
            time.sleep(max(0.0, inline_s))
            return
        ans = self._post(dict(body, name=name, kind="sleep"), "sleep", name)
        if ans is not None and ans.get("parked") is True:
            raise self._park("sleep", name, ans.get("state"))
        self._remember(name, "sleep", None, None)  # its time had passed

    def wait_for_event(
        self, key: str, timeout: Optional[float] = None, *, name: Optional[str] = None
    ) -> Any:
        """Waits for an event of the job's tenant with this ``key``
        (``Client.send_event``, ``POST /v1/events``, ``tenq.tx.send_event``):
        its payload. The job parks (``Parked`` leaves the handler) until
        the event comes or ``timeout`` seconds pass (None: no timeout);
        then it runs again and this call answers, or raises
        ``EventTimeoutError``. An event sent shortly before (within the
        server's --event-window) is taken at once. ``name`` defaults to
        ``event#N``."""
        name = self._auto("event", name)
        got = self._stored().get(name)
        if got is None:
            if not self._steps_live():
                raise InvalidError("wait_for_event needs a worker's job", field="event")
            body: Dict[str, Any] = {"name": name, "kind": "event", "event": key}
            if timeout is not None:
                body["timeout_ms"] = max(1, int(timeout * 1000))
            ans = self._post(body, "event", name) or {}
            if ans.get("parked") is True:
                raise self._park("event", name, ans.get("state"))
            if ans.get("duplicate") is True:
                # sent again, its first answer lost: the event taken is in the steps
                self._stored().update(stored_by_name(self._client.steps(self.id)))
                got = self._stored().get(name)
                if got is None:
                    raise ProtocolError(f"event step {name!r} was stored, and is not in the steps")
            else:
                got = self._remember(name, "event", ans.get("result"), None)
        if got.error is not None:
            raise EventTimeoutError(key, name)
        return got.result

    def run_child(
        self,
        type: str,
        args: Any = None,
        *,
        queue: Optional[str] = None,
        name: Optional[str] = None,
        **job: Any,
    ) -> Any:
        """Submits a child job (of this job's tenant; in ``queue``, else this
        job's) once, and waits for its end: its result, or
        ``ChildFailedError`` when it died or was cancelled. The job parks
        (``Parked`` leaves the handler) until the child ends; cancelling it
        cancels the child. ``job``: a submit's other fields (key,
        priority, max_attempts, timeout_ms, ...). A refused submit raises
        its error (``QuotaExceededError`` past a quota). ``name`` defaults
        to ``child#N``."""
        name = self._auto("child", name)
        got = self._stored().get(name)
        if got is None:
            if not self._steps_live():
                raise InvalidError("run_child needs a worker's job", field="job")
            spec: Dict[str, Any] = dict(job, type=type, queue=queue or self.queue)
            if args is not None:
                spec["args"] = args
            ans = self._post({"name": name, "kind": "child", "job": spec}, "child", name) or {}
            if ans.get("parked") is True:
                raise self._park("child", name, ans.get("state"))
            raise ProtocolError(f"child step {name!r} neither parked nor was stored before")
        if got.child_state not in (None, "succeeded") or got.error is not None:
            raise ChildFailedError(got.child or 0, got.child_state, got.error)
        return got.result

    def _steps_live(self) -> bool:
        """A worker's job (a client and a lease): steps are stored."""
        return self._client is not None and self.token != 0

    def _stored(self) -> Dict[str, Step]:
        if self._steps is None:
            n = self.job.get("steps")
            if self._steps_live() and isinstance(n, int) and n > 0:
                self._steps = stored_by_name(self._client.steps(self.id))
            else:
                self._steps = {}
        return self._steps

    def _remember(self, name: str, kind: str, result: Any, error: Optional[str]) -> Step:
        s = Step(pos=len(self._stored()), name=name, kind=kind, done=True, result=result,
                 error=error)
        self._stored()[name] = s
        return s

    def _auto(self, kind: str, name: Optional[str]) -> str:
        if self._calls is None:
            self._calls = {}
        n = self._calls.get(kind, 0) + 1
        self._calls[kind] = n
        return name if name is not None else f"{kind}#{n}"

    def _post(self, body: Dict[str, Any], kind: str, name: str) -> Optional[Dict[str, Any]]:
        """POST /v1/jobs/{id}/steps under this attempt's lease; None inline.
        A parking step whose answer was lost, sent again, finds its lease
        over (409 on the token): the job is parked (or its lease lost),
        and the handler ends either way."""
        if not self._steps_live():
            return None
        body["token"] = self.token
        try:
            ans: Dict[str, Any] = self._client._store_step(self.id, body)
        except ConflictError as e:
            if kind != "step" and e.field == "token":
                raise self._park(kind, name, None) from None
            raise
        return ans

    def _park(self, kind: str, name: str, state: Any) -> Parked:
        self._parked = True
        self._on_parked()
        return Parked(kind, name, state if isinstance(state, str) else "waiting")

    def _on_parked(self) -> None:
        """(a worker's Entry) The lease ended: no heartbeat, no outcome."""

    @property
    def parked(self) -> bool:
        """A step parked the job: this attempt is over (see ``Parked``)."""
        return self._parked

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
        _check_json(value, "progress", "progress")
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
