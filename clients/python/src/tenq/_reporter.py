# SPDX-License-Identifier: Apache-2.0
"""The worker's reporter thread: the outcomes no lease carries (POST
/v1/outcomes), heartbeats with progress, ``start``, timeouts and the lost
leases and cancellations that heartbeats reveal. Heartbeats are spaced on
the monotonic clock."""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Optional, Tuple

from tenq._wstate import (
    BACKOFF_FIRST,
    BACKOFF_MAX,
    DONE,
    HEARTBEAT_MIN,
    OUTCOMES_MAX,
    PROGRESS_EVERY,
    QUEUED,
    REPORT_AFTER,
    RUNNING,
    START_AFTER,
    Entry,
    State,
    heartbeat_every,
    wire_outcomes,
)
from tenq.client import Client
from tenq.context import CANCELLED, LOST, TIMEOUT
from tenq.errors import ConflictError, NotFoundError, TenqError

log = logging.getLogger("tenq.worker")

_INF = float("inf")


class _Plan:
    """What the reporter sends in one round."""

    __slots__ = ("outcomes", "starts", "beats")

    def __init__(self) -> None:
        self.outcomes: List[Entry] = []
        self.starts: List[Entry] = []
        self.beats: List[Tuple[Entry, Any]] = []

    def __bool__(self) -> bool:
        return bool(self.outcomes or self.starts or self.beats)


class Reporter:
    def __init__(self, st: State) -> None:
        self.st = st
        c = st.report_client
        assert c is not None
        self.c: Client = c
        self.away_until = 0.0
        self.backoff = 0.0

    # ---- (mu) what is due ------------------------------------------------------------------

    def _plan(self, now: float) -> Tuple[_Plan, float]:
        """(mu) What to send now, and when to look again. It looks at the
        running jobs (a few) every time, at every job in hand only when a
        heartbeat may be due."""
        st = self.st
        plan = _Plan()
        wake = _INF
        away = self.away_until
        for e in list(st.running):
            if e._lost:
                continue
            if e._deadline is not None:
                if e._deadline <= now:
                    self._timed_out(e)
                    continue
                wake = min(wake, e._deadline)
            if not e._start_sent:
                at = max(e._began + START_AFTER, away)
                if at <= now:
                    e._start_sent = True
                    plan.starts.append(e)
                else:
                    wake = min(wake, at)
        if st.hb_soonest <= now and away <= now:
            soonest = _INF
            for e in st.hand.values():
                if e._state == DONE or e._lost:
                    continue
                if e._next_hb <= now:
                    self._beat(plan, e, now)
                soonest = min(soonest, e._next_hb)
            st.hb_soonest = soonest
        wake = min(wake, max(st.hb_soonest, away))
        for e in list(st.progressing):
            if e._state == DONE or e._lost or not e._progress_dirty:
                st.progressing.discard(e)
                continue
            at = max(e._progress_sent + PROGRESS_EVERY, away)
            if at <= now:
                self._beat(plan, e, now)
            else:
                wake = min(wake, at)
        if st.done:
            first = st.done[0]._done_at + REPORT_AFTER
            quick = not st.carry or st.leaser_parked or st.leaser_done or st.stopping
            at = max(now if quick else first, away)
            if at <= now:
                plan.outcomes = st.take_outcomes(OUTCOMES_MAX)
            else:
                wake = min(wake, at)
        return plan, wake

    def _beat(self, plan: _Plan, e: Entry, now: float) -> None:
        """(mu) A heartbeat of ``e`` goes now, with its progress if it has
        news (and its start first, for a job that reports)."""
        st = self.st
        if e._state == RUNNING and not e._start_sent:
            e._start_sent = True
            plan.starts.append(e)
        progress = None
        if e._progress_dirty:
            e._progress_dirty = False
            e._progress_sent = now
            progress = e.last_progress
        st.progressing.discard(e)
        e._next_hb = now + HEARTBEAT_MIN * 10  # until the answer sets it
        st.hb_soonest = min(st.hb_soonest, e._next_hb)
        plan.beats.append((e, progress))

    def _timed_out(self, e: Entry) -> None:
        """(mu) A handler ran past its timeout: the job fails "timeout" now
        and its slot gets a new thread."""
        st = self.st
        st.counts.timed_out += 1
        log.warning("job %s (%s) timed out", e.id, e.type)
        outcome = {"id": e.id, "token": e.token, "ok": False, "error": "timeout"}
        st.abandon_entry(e, outcome, TIMEOUT)

    def _finished(self) -> bool:
        """(mu) Nothing more will come to report (or the worker gives up)."""
        st = self.st
        if st.abandon:
            return True
        if not (st.stopping and st.leaser_done and st.runners_alive == 0):
            return False
        if not st.done:
            return True
        if time.monotonic() > st.report_deadline:
            log.error("%d outcome(s) not delivered: the server is away; those jobs "
                      "come back when their leases expire", len(st.done))
            st.done.clear()
            return True
        return False

    # ---- the thread --------------------------------------------------------------------------

    def main(self) -> None:
        st = self.st
        try:
            while True:
                with st.mu:
                    while True:
                        if self._finished():
                            return
                        now = time.monotonic()
                        plan, wake = self._plan(now)
                        if plan:
                            break
                        st.report_wake = wake
                        if st.stopping:
                            wake = min(wake, now + 0.1)  # watch the delivery deadline
                        st.cv_report.wait(None if wake == _INF else max(0.0, wake - now))
                        st.report_wake = -_INF
                self._send(plan)
        finally:
            with st.mu:
                st.reporter_done = True
                st.wake_control()

    def _send(self, plan: _Plan) -> None:
        ok = True
        if plan.outcomes:
            ok = self._send_outcomes(plan.outcomes) and ok
        for e in plan.starts:
            ok = self._call(e, "start", None) and ok
        for e, progress in plan.beats:
            ok = self._call(e, "heartbeat", progress) and ok
        if ok:
            self.backoff = 0.0
            self.away_until = 0.0

    def _away(self, err: TenqError) -> None:
        if not self.backoff:
            log.warning("cannot report to the server (%s): retrying with backoff", err)
        self.backoff = min(self.backoff * 2, BACKOFF_MAX) if self.backoff else BACKOFF_FIRST
        self.away_until = time.monotonic() + self.backoff

    def _send_outcomes(self, entries: List[Entry]) -> bool:
        st = self.st
        try:
            results = self.c.report_outcomes(wire_outcomes(entries), len(entries))
        except TenqError as err:
            with st.mu:
                st.undelivered(entries, err)
            if err.status == 0 or err.status >= 500 or err.status == 429:
                self._away(err)
                return False
            return True
        with st.mu:
            st.delivered(entries, results)
        return True

    def _call(self, e: Entry, what: str, progress: Any) -> bool:
        """A start or a heartbeat of one job; False when the server is away."""
        st = self.st
        ans: Dict[str, Any] = {}
        err: Optional[TenqError] = None
        try:
            if what == "start":
                self.c.start(e.id, e.token)
            else:
                ans = self.c.heartbeat(e.id, e.token, progress)
        except TenqError as x:
            err = x
        with st.mu:
            if err is not None:
                if isinstance(err, (ConflictError, NotFoundError)):
                    if e.tx_outcome is not None:
                        # its handler reported it in a transaction, which
                        # the server took in: nothing is wrong, and there
                        # is nothing more to say of it until its outcome
                        log.debug("job %s: %s after its transaction: %s", e.id, what, err)
                        e._start_sent = True
                        e._next_hb = _INF
                        e._progress_dirty = False
                        st.progressing.discard(e)
                        return True
                    st.lose(e, f"{what} refused: {err}")
                    return True
                if what != "start":
                    e._next_hb = time.monotonic() + HEARTBEAT_MIN * 10
                    st.hb_soonest = min(st.hb_soonest, e._next_hb)
                    if progress is not None:
                        e._progress_dirty = True
                        st.progressing.add(e)
                if err.status == 0 or err.status >= 500 or err.status == 429:
                    self._away(err)
                    return False
                log.warning("job %s: %s failed: %s", e.id, what, err)
                return True
            if what == "heartbeat" and e._state != DONE and not e._lost:
                e._next_hb = time.monotonic() + heartbeat_every(ans)
                st.hb_soonest = min(st.hb_soonest, e._next_hb)
                if ans.get("cancel") is True:
                    self._cancel(e)
        return True

    def _cancel(self, e: Entry) -> None:
        """(mu) The job was cancelled: its handler is told; one not started
        yet is reported cancelled at once."""
        st = self.st
        if e._state == QUEUED:
            try:
                st.ready.remove(e)
            except ValueError:
                return
            e.request_stop(CANCELLED)
            st.push_done(e, {"id": e.id, "token": e.token, "ok": False,
                             "error": "cancelled", "cancelled": True})
            if st.lease_want and st.free() >= st.lease_want:
                st.cv_lease.notify()
        elif e._state == RUNNING:
            log.info("job %s (%s) was cancelled: stopping its handler", e.id, e.type)
            st.stop_entry(e, CANCELLED)


def reporter_main(st: State) -> None:
    Reporter(st).main()


__all__ = ["reporter_main", "LOST"]
