# SPDX-License-Identifier: Apache-2.0
"""What the worker's threads share: the jobs in hand and the queues between
the leaser, the runners and the reporter, under one lock."""

from __future__ import annotations

import collections
import ctypes
import logging
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Union

from tenq.client import Client
from tenq.context import LOST, Context
from tenq.errors import TenqError
from tenq.handlers import Middleware, Registry

log = logging.getLogger("tenq.worker")

QUEUED, RUNNING, DONE = "queued", "running", "done"


class Abandoned(BaseException):
    """Raised in a runner thread whose handler was given up (its timeout,
    the end of the grace period): the thread ends at its next Python line.
    A BaseException, so that a handler's ``except Exception`` lets it by."""


def raise_in(thread: Optional[threading.Thread]) -> None:
    """Raises Abandoned in ``thread`` (CPython's PyThreadState_SetAsyncExc):
    it comes at the thread's next Python line, so a handler blocked in C (a
    sleep, a socket read) stops only when that returns."""
    if thread is None or thread.ident is None or not thread.is_alive():
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread.ident), ctypes.py_object(Abandoned)
    )

# Tell the server a handler began once it has run this long (shorter jobs
# go from leased to succeeded, which saves a request and a commit each).
START_AFTER = 0.010
# Progress reaches the server at most this often.
PROGRESS_EVERY = 0.5
# Heartbeats no more often than this.
HEARTBEAT_MIN = 0.1
# An outcome that no lease carried within this long goes in its own
# request (POST /v1/outcomes).
REPORT_AFTER = 0.010
# Backoff while the server is away: 100 ms doubling to 5 s.
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
# A stop cuts the leaser's long poll, but never a request younger than this
# (a lease answered at once is read, not lost).
LEASE_ABORT_AFTER = 0.05
# Slots free one by one as handlers return; the leaser waits this long for
# the others, making one lease of several jobs out of several of one.
LEASE_GATHER = 0.001
# The most jobs a lease asks for, the most outcomes a request carries.
LEASE_MAX = 1000
OUTCOMES_MAX = 10_000
# The default prefetch adapts to the handlers: a worker holds beyond its
# free threads about this many seconds of work (from their average run
# time; none until the first jobs finished), at most PREFETCH_MAX jobs.
PREFETCH_WINDOW = 0.1
PREFETCH_MAX = 1000
# Weight of the last job in the average run time.
RUN_EWMA = 0.1


class Entry(Context):
    """A job in hand: leased, then running, then done (its outcome waiting
    to be reported). It is the Context its handler gets, with the worker's
    bookkeeping beside (underscored: not the handler's). One object a job,
    where a Context and an Entry were two: the jobs a worker holds (its
    prefetch, the outcomes in flight) are most of what Python's garbage
    collector allocates and walks while a worker drains short jobs."""

    __slots__ = (
        "_state",
        "_began",
        "_deadline",
        "_next_hb",
        "_start_sent",
        "_progress_dirty",
        "_progress_sent",
        "_lost",
        "_outcome",
        "_runner",
        "_done_at",
    )

    def __init__(
        self,
        job: Dict[str, Any],
        on_progress: Callable[[Context], None],
        client: Any,
        next_hb: float,
    ) -> None:
        Context.__init__(self, job, on_progress, client)
        self._state = QUEUED
        self._began = 0.0
        self._deadline: Optional[float] = None
        self._next_hb = next_hb
        self._start_sent = False
        self._progress_dirty = False
        self._progress_sent = 0.0
        self._lost = False
        self._outcome: Optional[Dict[str, Any]] = None
        self._runner: Any = None
        self._done_at = 0.0

    def _on_parked(self) -> None:
        # a step parked the job: its lease is over, so nothing heartbeats it
        # and its outcome is dropped (the runner sees _lost), counting nothing
        self._lost = True


class Counts:
    """What a worker did so far."""

    __slots__ = ("leased", "succeeded", "failed", "refused", "lost", "timed_out")

    def __init__(self) -> None:
        self.leased = 0
        self.succeeded = 0
        self.failed = 0
        self.refused = 0
        self.lost = 0
        self.timed_out = 0

    def as_dict(self) -> Dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class State:
    """The worker's settings and shared state. Everything mutable is read
    and written under ``mu`` (the conditions share it)."""

    def __init__(
        self,
        *,
        name: str,
        queues: Sequence[str],
        types: Optional[List[str]],
        concurrency: int,
        prefetch: Optional[int],
        handlers: Registry,
        middleware: Sequence[Middleware],
        timeout: Optional[float],
        poll: float,
        grace: float,
        carry: bool,
        make_client: Any,
    ) -> None:
        self.name = name
        self.queues = list(queues)
        self.types = types
        self.concurrency = concurrency
        # prefetch None: adapted to the handlers' run time (tune_prefetch)
        self.auto_prefetch = prefetch is None
        self.prefetch = prefetch or 0
        self.capacity = concurrency + self.prefetch
        self.avg_run: Optional[float] = None  # seconds a handler ran, on average
        self.handlers = handlers
        self.middleware = list(middleware)
        self.timeout = timeout
        self.poll = poll
        self.grace = grace
        self.carry = carry  # outcomes ride with leases (else the reporter sends them)
        self.make_client = make_client

        self.mu = threading.Lock()
        self.cv_run = threading.Condition(self.mu)
        self.cv_lease = threading.Condition(self.mu)
        self.cv_report = threading.Condition(self.mu)

        self.ready: Deque[Entry] = collections.deque()
        self.done: Deque[Entry] = collections.deque()
        self.hand: Dict[int, Entry] = {}
        self.nrunning = 0
        self.running: Set[Entry] = set()  # the reporter watches their start and timeout
        self.progressing: Set[Entry] = set()  # progress not sent yet
        # no heartbeat is due before this (a lower bound: the reporter looks
        # at every job in hand only then)
        self.hb_soonest = float("inf")
        self.counts = Counts()

        self.stopping = False
        self.past_grace = False
        self.abandon = False
        self.leaser_done = False
        self.leaser_parked = True  # in a long poll or a backoff: outcomes are the reporter's
        self.lease_want = 0  # the free slots the leaser waits for (0: not waiting)
        self.reporter_done = False
        self.runners_alive = 0
        self.fatal: Optional[TenqError] = None
        # after a stop: when the reporter gives up delivering outcomes
        self.report_deadline = float("inf")
        # when the reporter looks again while it sleeps; -inf while it works
        # (it looks at everything before it sleeps: waking it is useless)
        self.report_wake = float("-inf")
        self.lease_client: Optional[Client] = None
        self.report_client: Optional[Client] = None
        # the worker's own client: what a handler's Context uses (add_to_batch)
        self.api_client: Optional[Client] = None
        # set by the Worker: asks for a stop (as a signal would); starts a
        # runner in a slot; wakes the thread that runs the worker's stop
        self.request_stop: Callable[[], None] = lambda: None
        self.spawn_runner: Callable[[int], None] = lambda slot: None
        self.wake_control: Callable[[], None] = lambda: None

    # ---- (mu) helpers ------------------------------------------------------------------

    def free(self) -> int:
        return self.capacity - len(self.ready) - self.nrunning

    def lease_threshold(self) -> int:
        """Free slots worth a lease: one without prefetch, else half the
        prefetch, so that leases come in batches."""
        return max(1, (self.prefetch + 1) // 2)

    def tune_prefetch(self) -> None:
        """(mu) The adaptive prefetch: PREFETCH_WINDOW seconds of work for
        the threads, at the handlers' average run time so far (none before
        a job finished: a worker of long jobs holds no job it cannot
        start)."""
        if not self.auto_prefetch or self.avg_run is None:
            return
        per_s = self.concurrency / max(self.avg_run, 1e-6)
        self.prefetch = min(PREFETCH_MAX, int(per_s * PREFETCH_WINDOW))
        self.capacity = self.concurrency + self.prefetch

    def push_done(self, entry: Entry, outcome: Dict[str, Any]) -> None:
        """A job's outcome waits to be reported; wakes whoever sends it.
        (A runner's job ends the same way, written out in Runner._run.)"""
        entry._state = DONE
        entry._outcome = outcome
        entry._done_at = time.monotonic()
        if entry._lost:
            self.hand.pop(entry.id, None)
            return
        self.done.append(entry)
        if (len(self.done) == 1 or self.stopping) and self.report_wake > entry._done_at:
            self.cv_report.notify()

    def take_outcomes(self, limit: int) -> List[Entry]:
        """Up to ``limit`` outcomes to report, oldest first (those of lost
        leases dropped)."""
        done = self.done
        if len(done) <= limit:
            out = list(done)
            done.clear()
        else:
            out = [done.popleft() for _ in range(limit)]
        if self.counts.lost:
            for e in out:
                if e._lost:
                    self.hand.pop(e.id, None)
            out = [e for e in out if not e._lost]
        return out

    def requeue_outcomes(self, entries: List[Entry]) -> None:
        """Outcomes not delivered go back to the front, in order."""
        self.done.extendleft(reversed(entries))

    def delivered(self, entries: List[Entry], results: Any) -> None:
        """(mu) The server answered outcomes: each is counted and
        forgotten."""
        results = results if isinstance(results, list) else []
        if len(results) < len(entries):
            results = results + [{}] * (len(entries) - len(results))
        hand = self.hand
        counts = self.counts
        succeeded = failed = 0  # (counted in locals: once an outcome)
        for e, res in zip(entries, results):
            hand.pop(e.id, None)
            err = res.get("error") if type(res) is dict else None
            if err is None:
                outcome = e._outcome
                if outcome is not None and outcome.get("ok"):
                    succeeded += 1
                else:
                    failed += 1
                continue
            tx = e._tx_outcome  # (the attribute: once an outcome)
            if tx is not None:
                # reported in the handler's transaction, which the server
                # took in first (its retry may be leased already): expected
                log.debug("job %s: outcome after its transaction: %s", e.id,
                          err.get("message") if isinstance(err, dict) else err)
                if tx.get("ok"):
                    succeeded += 1
                else:
                    failed += 1
            else:
                counts.refused += 1
                log.warning("job %s: outcome refused: %s", e.id,
                            err.get("message") if isinstance(err, dict) else err)
        counts.succeeded += succeeded
        counts.failed += failed
        if entries and self.stopping:
            self.wake_control()

    def undelivered(self, entries: List[Entry], err: TenqError) -> None:
        """(mu) Outcomes a failed request carried: kept to be sent again,
        in order (a second delivery of one that counted is answered as the
        first was), unless the server refused them for good."""
        if not entries:
            return
        if transient(err):
            self.requeue_outcomes(entries)
        else:
            log.error("%d outcome(s) refused: %s", len(entries), err)
            for e in entries:
                self.hand.pop(e.id, None)
            self.counts.refused += len(entries)
        self.cv_report.notify()

    def lose(self, e: Entry, why: str) -> None:
        """(mu) The lease of a job in hand is gone (expired, taken over, the
        job deleted): its handler is told to stop and its outcome will be
        dropped."""
        if e._lost or e._state == DONE:
            return
        log.warning("job %s (%s): lease lost (%s)", e.id, e.type, why)
        e._lost = True
        self.counts.lost += 1
        if e._state == QUEUED:
            try:
                self.ready.remove(e)
            except ValueError:
                pass
            self.hand.pop(e.id, None)
            if self.lease_want and self.free() >= self.lease_want:
                self.cv_lease.notify()
        else:
            self.stop_entry(e, LOST)

    def progress_changed(self, task: Context) -> None:
        """A handler reported progress: the reporter sends it soon."""
        with self.mu:
            e = self.hand.get(task.id)
            if e is not task:
                return
            e._progress_dirty = True
            self.progressing.add(e)
            if e._progress_sent + PROGRESS_EVERY < self.report_wake:
                self.cv_report.notify()

    def give_back(self, e: Entry) -> None:
        """(mu) A job not started and not to be run here: back to the
        queue at once (a failed attempt retried now)."""
        self.push_done(e, stopped_outcome(e))

    def stop_entry(self, e: Entry, reason: str) -> None:
        """(mu) Asks a job's handler to stop (an async one is cancelled)."""
        e.request_stop(reason)
        runner = e._runner
        if runner is not None:
            runner.interrupt()

    def abandon_entry(self, e: Entry, outcome: Dict[str, Any], reason: str) -> None:
        """(mu) Gives up on a running handler (its timeout passed, or the
        grace period): its outcome is reported now; its thread is told to
        stop, left behind, and its slot gets a new runner."""
        runner = e._runner
        self.stop_entry(e, reason)
        e._runner = None
        self.nrunning -= 1
        self.running.discard(e)
        self.push_done(e, outcome)
        if runner is not None:
            runner.retired = True
            self.runners_alive -= 1
            raise_in(runner.thread)
            if not self.past_grace and not self.abandon:
                self.spawn_runner(runner.slot)
        if self.lease_want and self.free() >= self.lease_want:
            self.cv_lease.notify()


# The outcome of a job that succeeded with nothing to report (no result,
# no stats), most jobs' outcome: one shared object, and its JSON written by
# wire_outcomes when sent, where a dict a job made Python's garbage
# collector count an allocation more a job (and run that much more often).
PLAIN_SUCCESS: Dict[str, Any] = {"ok": True}


def wire_outcomes(entries: List[Entry]) -> Union[List[Dict[str, Any]], bytes]:
    """The outcomes of ``entries`` as a request carries them: their JSON
    array when all are plain successes (the usual batch, written here in
    one go), else their objects (those of plain successes made now)."""
    parts: List[bytes] = []
    for e in entries:
        if e._outcome is not PLAIN_SUCCESS or type(e.id) is not int:
            break
        parts.append(b'{"id":%d,"token":%d,"ok":true}' % (e.id, e.token))
    else:
        return b"[" + b",".join(parts) + b"]"
    out: List[Dict[str, Any]] = []
    for e in entries:
        o = e._outcome
        if o is PLAIN_SUCCESS:
            out.append({"id": e.id, "token": e.token, "ok": True})
        elif o is not None:
            out.append(o)
    return out


def stopped_outcome(e: Entry) -> Dict[str, Any]:
    """The outcome of a job cut off by a stop: retried at once elsewhere."""
    return {
        "id": e.id,
        "token": e.token,
        "ok": False,
        "error": "worker stopped",
        "retry_in_ms": 0,
    }


def transient(e: TenqError) -> bool:
    """An error of a whole request that retrying may cure."""
    return e.status == 0 or e.status in (408, 429) or e.status >= 500


def heartbeat_every(answer: Dict[str, Any]) -> float:
    """Seconds between heartbeats: a third of the time the lease has left as
    the server answered (``lease_left_ms`` of a leased job or a heartbeat's
    answer), spaced on the monotonic clock, so that no step of either
    machine's wall clock moves them. From a server too old to say, the
    lease's ``lease_until`` by this machine's clock."""
    left = answer.get("lease_left_ms")
    if isinstance(left, bool) or not isinstance(left, (int, float)) or left <= 0:
        until = answer.get("lease_until")
        if isinstance(until, bool) or not isinstance(until, (int, float)):
            return 60.0
        left = until - time.time() * 1000.0
    return max(HEARTBEAT_MIN, left / 3000.0)
