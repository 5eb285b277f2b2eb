# SPDX-License-Identifier: Apache-2.0
"""The worker: runs the handlers of leased jobs on N threads (what
``tenq work`` does, in-process; docs/WORKER.md).

    worker = tenq.Worker(client, queues=["reports"], concurrency=5)
    worker.run()        # until SIGTERM/SIGINT (or worker.stop())

or, beside other code (tests, a web app's process)::

    with tenq.Worker(client, queues=["reports"]) as worker:
        ...             # it runs in background threads; leaving stops it

One leaser thread leases up to the free capacity in one request (the
threads, and the adaptive prefetch: about 0.1 s of work beyond them), one
reporter thread sends the outcomes of finished jobs, heartbeats and
progress, and N runner threads run the handlers. A stop stops leasing and
lets the jobs in hand run and finish within ``grace`` seconds, reporting
their outcomes; the jobs still running or not started then are given back
(``worker stopped``, retried at once elsewhere). A second stop (a second
signal) ends everything at once.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from types import FrameType
from typing import Any, Dict, List, Optional, Sequence, Union

from tenq._leaser import leaser_main
from tenq._reporter import reporter_main
from tenq._runner import Runner
from tenq._wstate import LEASE_ABORT_AFTER, QUEUED, RUNNING, State, stopped_outcome
from tenq.client import Client
from tenq.context import SHUTDOWN
from tenq.errors import InvalidError, TenqError
from tenq.handlers import Middleware, Registry, registry

# How long the reporter may keep trying to deliver after the grace period.
REPORT_GRACE = 5.0
# How often the control loop looks for a stop a signal asked for.
POLL_SIGNALS = 0.1


def default_name() -> str:
    """``HOST/pid-PID``, as ``tenq work`` names itself."""
    return f"{socket.gethostname()}/pid-{os.getpid()}"


class Worker:
    """Leases jobs of ``queues`` (only of ``types`` when given) and runs
    each through the handler registered for its type (``handlers``: the
    global registry that ``@tenq.task`` and ``@tenq.handler`` fill, by
    default), wrapped by ``middleware`` (the first outermost).

    ``concurrency``: handlers at once (threads). ``prefetch``: jobs leased
    beyond that, waiting for a free thread; by default (None) it adapts to
    the handlers: about a tenth of a second of work at their average run
    time so far (at most 1,000 jobs; none before the first jobs finished,
    so a worker of long jobs holds none it cannot start), which makes a
    lease of many short jobs one request; 0 leases only for free threads.
    ``timeout``: seconds a handler may run (a handler's own timeout wins):
    then it is asked to stop and the job fails ``"timeout"``. ``grace``:
    seconds the jobs in hand get to run and finish after a stop (those not
    done then are given back). ``poll``: the longest lease long poll. A job of a type
    with no handler fails (retried by the queue's backoff: another worker
    may know it).

    Outcomes: by default the reporter sends them (``POST /v1/outcomes``,
    batched while one is in flight) as the leaser leases on, so a lease
    never waits for the commit of outcomes. ``carry_outcomes=True`` sends
    them with the next lease instead (fewer requests, but each lease then
    waits for that commit: slower on SQLite,
    bench/peers/clients/python/README.md)."""

    def __init__(
        self,
        client: Optional[Client] = None,
        *,
        queues: Union[str, Sequence[str]],
        types: Optional[Sequence[str]] = None,
        concurrency: int = 1,
        prefetch: Optional[int] = None,
        handlers: Optional[Registry] = None,
        middleware: Sequence[Middleware] = (),
        timeout: Optional[float] = None,
        grace: float = 10.0,
        poll: float = 30.0,
        name: Optional[str] = None,
        carry_outcomes: bool = False,
    ) -> None:
        qs = [queues] if isinstance(queues, str) else list(queues)
        if not qs:
            raise InvalidError("a worker needs at least one queue", field="queues")
        if concurrency < 1:
            raise InvalidError("concurrency is 1 or more", field="concurrency")
        if prefetch is not None and prefetch < 0:
            raise InvalidError("prefetch is 0 or more (or None: adaptive)", field="prefetch")
        if timeout is not None and timeout <= 0:
            raise InvalidError("timeout is positive (or None)", field="timeout")
        base = client if client is not None else Client()
        self.client = base
        self._st = State(
            name=name or default_name(),
            queues=qs,
            types=list(types) if types else None,
            concurrency=concurrency,
            prefetch=prefetch,
            handlers=handlers if handlers is not None else registry,
            middleware=middleware,
            timeout=timeout,
            poll=max(0.0, poll),
            grace=max(0.0, grace),
            carry=carry_outcomes,
            make_client=base.copy,
        )
        self._st.api_client = base
        self._st.request_stop = self.stop
        self._st.spawn_runner = self._spawn_runner
        self._st.wake_control = self._wake_control
        self._stops = 0  # stop requests so far (a signal handler only counts)
        self._wake = threading.Event()
        self._started = False
        self._done = threading.Event()
        self._control_thread: Optional[threading.Thread] = None
        self._threads: List[threading.Thread] = []
        self.exit_status = 0

    # ---- the public face ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._st.name

    @property
    def counts(self) -> Dict[str, int]:
        """Jobs leased, succeeded, failed, refused (outcome refused by the
        server), lost (lease lost), timed_out so far."""
        with self._st.mu:
            return self._st.counts.as_dict()

    @property
    def fatal(self) -> Optional[TenqError]:
        """The refusal that stopped the worker (a bad token, a queue it may
        not use), if any."""
        return self._st.fatal

    def run(self, *, install_signals: bool = True) -> int:
        """Runs until stopped; returns the exit status: 0 after a stop, 1
        when the server refused the worker or a second stop cut it short.
        In the main thread it handles SIGTERM and SIGINT (first: graceful
        stop; second: at once) unless ``install_signals`` is false."""
        old: Dict[signal.Signals, Any] = {}
        if install_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, self._on_signal)
        try:
            self._start_threads()
            self._control()
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return self.exit_status

    def start(self) -> "Worker":
        """Runs the worker in background threads; ``stop`` and ``join``
        end it."""
        self._start_threads()
        t = threading.Thread(target=self._control, name="tenq-worker", daemon=True)
        self._control_thread = t
        t.start()
        return self

    def stop(self) -> None:
        """Asks for a graceful stop; a second call stops at once. Safe from
        any thread and from a signal handler (it only counts and wakes)."""
        self._stops += 1
        self._wake.set()

    def join(self, timeout: Optional[float] = None) -> bool:
        """Waits for the worker to end; False on timeout."""
        return self._done.wait(timeout)

    def __enter__(self) -> "Worker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.join()

    # ---- threads ------------------------------------------------------------------------------

    def _start_threads(self) -> None:
        st = self._st
        if self._started:
            raise InvalidError("a worker runs once", field="worker")
        self._started = True
        st.lease_client = st.make_client()
        st.report_client = st.make_client()
        with st.mu:
            for slot in range(st.concurrency):
                self._spawn_runner(slot)
        for target, name in ((leaser_main, "tenq-leaser"), (reporter_main, "tenq-reporter")):
            t = threading.Thread(target=target, args=(st,), name=name, daemon=True)
            self._threads.append(t)
            t.start()

    def _spawn_runner(self, slot: int) -> None:
        """(mu) A new runner thread for ``slot``."""
        self._st.runners_alive += 1
        Runner(self._st, slot).start()

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        # only counts: taking a lock here could deadlock with the thread it
        # interrupted; the control loop looks every POLL_SIGNALS seconds
        self._stops += 1

    def _wake_control(self) -> None:
        self._wake.set()

    # ---- the control loop: stops, grace, the end --------------------------------------------

    def _control(self) -> None:
        st = self._st
        grace_end = float("inf")
        try:
            while True:
                self._wake.wait(0.05 if st.stopping else POLL_SIGNALS)
                self._wake.clear()
                now = time.monotonic()
                if self._stops >= 1 and not st.stopping:
                    with st.mu:
                        st.stopping = True
                        grace_end = now + st.grace
                        st.report_deadline = grace_end + REPORT_GRACE
                        st.cv_lease.notify_all()
                        st.cv_run.notify_all()
                        st.cv_report.notify_all()
                if self._stops >= 2:
                    self._abandon()
                    return
                if not st.stopping:
                    if st.leaser_done:  # it ended by itself: a refusal
                        self.stop()
                    continue
                if not st.leaser_done and st.lease_client is not None:
                    st.lease_client.interrupt(LEASE_ABORT_AFTER)
                if now >= grace_end and not st.past_grace:
                    self._end_grace()
                with st.mu:
                    if st.leaser_done and st.runners_alive == 0 and st.reporter_done:
                        break
        finally:
            if st.fatal is not None and self.exit_status == 0:
                self.exit_status = 1
            for c in (st.lease_client, st.report_client):
                if c is not None:
                    c.close()
            self._done.set()

    def _end_grace(self) -> None:
        """The grace period is over: the jobs still running are given up
        (``worker stopped``, retried at once) and those not started given
        back."""
        st = self._st
        with st.mu:
            st.past_grace = True
            for e in list(st.hand.values()):
                if e._lost:
                    continue
                if e._state == RUNNING:
                    st.abandon_entry(e, stopped_outcome(e), SHUTDOWN)
                elif e._state == QUEUED:
                    try:
                        st.ready.remove(e)
                    except ValueError:
                        continue
                    st.give_back(e)
            st.cv_run.notify_all()
            st.cv_report.notify_all()

    def _abandon(self) -> None:
        """A second stop: everything ends now; what is not reported comes
        back when its lease expires."""
        st = self._st
        with st.mu:
            st.abandon = True
            st.stopping = True
            for e in st.hand.values():
                e.request_stop(SHUTDOWN)
            st.cv_lease.notify_all()
            st.cv_run.notify_all()
            st.cv_report.notify_all()
        if st.lease_client is not None:
            st.lease_client.interrupt()
        if st.report_client is not None:
            st.report_client.interrupt()
        self.exit_status = 1
