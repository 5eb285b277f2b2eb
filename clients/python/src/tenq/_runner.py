# SPDX-License-Identifier: Apache-2.0
"""The worker's runner threads: each takes the next leased job, runs its
handler (through the middleware; an ``async def`` one on the runner's own
event loop) and queues its outcome."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Coroutine, Dict, Optional

from tenq._wstate import (
    DONE,
    PLAIN_SUCCESS,
    RUN_EWMA,
    RUNNING,
    START_AFTER,
    Abandoned,
    Entry,
    State,
)
from tenq.handlers import run_attempt
from tenq.context import CANCELLED, SHUTDOWN, Stopped, current_context


class Runner:
    """One slot's thread. A runner whose handler was abandoned is
    ``retired``: it ends when the handler returns (or Abandoned reaches it),
    and another runner has its slot."""

    def __init__(self, st: State, slot: int) -> None:
        self.st = st
        self.slot = slot
        self.retired = False
        self.thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._future: Optional["asyncio.Future[Any]"] = None

    def start(self) -> None:
        self.thread = threading.Thread(
            target=self._main, name=f"tenq-runner-{self.slot}", daemon=True
        )
        self.thread.start()

    def interrupt(self) -> None:
        """Cancels the coroutine of an async handler that runs now (a sync
        handler sees its task's stop request)."""
        loop, fut = self._loop, self._future
        if loop is not None and fut is not None:
            try:
                loop.call_soon_threadsafe(fut.cancel)
            except RuntimeError:
                pass  # the loop is closed: the handler is over

    def _main(self) -> None:
        try:
            try:
                self._run()
            finally:
                loop = self._loop
                if loop is not None and not loop.is_running():
                    loop.close()
        except Abandoned:
            pass  # given up on (and it may come late, as the thread ends)

    def _run(self) -> None:
        # The path of every job: its end, the next one's start and its run
        # are written out here, with the lookups hoisted, as calls and
        # attribute reads are much of a short job's cost.
        st = self.st
        mu = st.mu
        ready = st.ready
        running = st.running
        done = st.done
        monotonic = time.monotonic
        handler_of = st.handlers.lookup()
        middleware = st.middleware
        run_coroutine = self._run_coroutine
        e: Optional[Entry] = None
        outcome: Dict[str, Any] = {}
        try:
            while True:
                with mu:
                    now = 0.0
                    if e is not None:
                        if self.retired:
                            return  # given up on: its outcome went already
                        # the last job ended: its slot is free, its run time
                        # counts in the average, its outcome waits to be
                        # reported (State.push_done and free(), written out)
                        st.nrunning -= 1
                        running.discard(e)
                        e._runner = None
                        e._state = DONE
                        e._outcome = outcome
                        e._done_at = now = monotonic()
                        took = now - e._began
                        avg = st.avg_run
                        st.avg_run = took if avg is None else avg + (took - avg) * RUN_EWMA
                        if e._lost:
                            st.hand.pop(e.id, None)
                        else:
                            done.append(e)
                            if (len(done) == 1 or st.stopping) and st.report_wake > now:
                                st.cv_report.notify()
                        want = st.lease_want
                        if want and st.capacity - len(ready) - st.nrunning >= want:
                            st.cv_lease.notify()
                        e = None
                    while not ready:
                        if self.retired or st.abandon or (st.stopping and st.leaser_done):
                            return
                        st.cv_run.wait()
                        now = 0.0
                    e = ready.popleft()
                    # the job starts in this slot (at once when the last one
                    # ended now: its end time saves a clock read)
                    if not now:
                        now = monotonic()
                    e._state = RUNNING
                    e._began = now
                    e._runner = self
                    st.nrunning += 1
                    running.add(e)
                    reg = handler_of(e.type)
                    timeout = st.timeout
                    if reg is not None and reg.timeout is not None:
                        timeout = reg.timeout
                    # the reporter looks at it when its start is due (or its deadline)
                    due = now + START_AFTER
                    if timeout:
                        e._deadline = deadline = now + timeout
                        if deadline < due:
                            due = deadline
                    if due < st.report_wake:
                        st.cv_report.notify()
                    if st.past_grace:
                        st.stop_entry(e, SHUTDOWN)
                if reg is None:
                    outcome = {
                        "id": e.id,
                        "token": e.token,
                        "ok": False,
                        "error": f"no handler for type {e.type} on worker {st.name}",
                    }
                else:
                    outcome = run_attempt(e, reg.fn, run_coroutine, middleware, PLAIN_SUCCESS)
        finally:
            with st.mu:
                if not self.retired:
                    st.runners_alive -= 1
                    st.cv_report.notify()
                    st.wake_control()

    def _run_coroutine(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Runs an async handler's coroutine on this runner's loop; a stop
        cancels it (Stopped with the stop's reason)."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        fut = self._loop.create_task(coro)
        self._future = fut
        task = current_context()
        try:
            if task is not None and task.stop_reason is not None:
                fut.cancel()
            return self._loop.run_until_complete(fut)
        except asyncio.CancelledError:
            reason = task.stop_reason if task is not None else None
            raise Stopped(reason or CANCELLED) from None
        finally:
            self._future = None
