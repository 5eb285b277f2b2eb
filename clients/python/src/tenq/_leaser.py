# SPDX-License-Identifier: Apache-2.0
"""The worker's leaser thread: leases up to the free capacity in one
request and long-polls when that finds nothing. With ``carry_outcomes``,
a lease carries the outcomes of the jobs run since (such a lease does not
wait, so their answer is not held back); without, the reporter sends them
while the lease is in flight. Retries with backoff while the server is
away."""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Optional

from tenq._wstate import (
    BACKOFF_FIRST,
    BACKOFF_MAX,
    LEASE_GATHER,
    LEASE_MAX,
    OUTCOMES_MAX,
    Entry,
    State,
    heartbeat_every,
    wire_outcomes,
)
from tenq.errors import (
    ForbiddenError,
    InvalidError,
    NotFoundError,
    TenqError,
    UnauthenticatedError,
)

log = logging.getLogger("tenq.worker")

# Refusals that retrying cannot cure: the worker stops with them.
_FATAL = (UnauthenticatedError, ForbiddenError, InvalidError, NotFoundError)


def _wait_for_capacity(st: State) -> bool:
    """(mu) Waits until a lease is worth it; False when stopping."""
    st.tune_prefetch()
    want = st.lease_threshold()
    st.lease_want = want
    while not st.stopping and st.free() < want:
        st.cv_lease.wait()
    if st.prefetch == 0 and not st.stopping:
        # a moment for the other slots, while handlers still run
        st.lease_want = st.capacity
        end = time.monotonic() + LEASE_GATHER
        while not st.stopping and st.free() < st.capacity and st.nrunning:
            left = end - time.monotonic()
            if left <= 0 or not st.cv_lease.wait(left):
                break
    st.lease_want = 0
    return not st.stopping


def _take_jobs(st: State, jobs: List[Dict[str, Any]]) -> None:
    """(mu) Leased jobs into the queue the runners take from. (Once a job:
    lookups hoisted, the heartbeat spacing worked out once a lease, as its
    jobs share their time left.)"""
    now = time.monotonic()
    left: Any = None
    next_hb = soonest = float("inf")
    hand = st.hand
    ready = st.ready
    on_progress = st.progress_changed
    client = st.api_client
    # after a stop they run like the jobs in hand, while the grace lasts
    give_back = st.past_grace
    for job in jobs:
        job_left = job.get("lease_left_ms")
        if job_left != left or not job_left:
            left = job_left
            next_hb = now + heartbeat_every(job)
            if next_hb < soonest:
                soonest = next_hb
        e = Entry(job, on_progress, client, next_hb)
        hand[e.id] = e
        if give_back:
            st.give_back(e)
        else:
            ready.append(e)
    st.counts.leased += len(jobs)
    st.cv_run.notify(len(jobs))
    if soonest < st.hb_soonest:
        st.hb_soonest = soonest
    if soonest < st.report_wake:
        st.cv_report.notify()


def _backoff(st: State, seconds: float) -> None:
    """(mu) Sleeps, unless a stop comes first."""
    end = time.monotonic() + seconds
    while not st.stopping:
        left = end - time.monotonic()
        if left <= 0:
            return
        st.cv_lease.wait(left)


def leaser_main(st: State) -> None:
    c = st.lease_client
    assert c is not None
    backoff = 0.0
    away = False
    try:
        while True:
            with st.mu:
                if not _wait_for_capacity(st):
                    return
                maxn = min(st.free(), LEASE_MAX)
                carrying = st.take_outcomes(OUTCOMES_MAX) if st.carry else []
                wait_ms = 0 if carrying else int(st.poll * 1000)
                # while it long-polls, outcomes go with the reporter
                st.leaser_parked = not carrying
                if st.leaser_parked and st.done:
                    st.cv_report.notify()
            err: Optional[TenqError] = None
            ans: Dict[str, Any] = {}
            try:
                ans = c.lease(
                    st.queues,
                    max=maxn,
                    wait_ms=wait_ms,
                    types=st.types,
                    worker=st.name,
                    outcomes=wire_outcomes(carrying) if carrying else None,
                )
            except TenqError as e:
                err = e
            with st.mu:
                if err is None:
                    if away:
                        log.info("the server is back")
                    away, backoff = False, 0.0
                    st.leaser_parked = False
                    if carrying:
                        st.delivered(carrying, ans.get("results"))
                    if ans["jobs"]:
                        _take_jobs(st, ans["jobs"])
                    continue
                st.leaser_parked = True
                st.undelivered(carrying, err)
                if st.stopping:
                    return
                if isinstance(err, _FATAL) and err.status:
                    st.fatal = err
                    log.error("the server refuses leases: %s", err)
                    st.request_stop()
                    return
                backoff = min(backoff * 2, BACKOFF_MAX) if backoff else BACKOFF_FIRST
                if not away:
                    log.warning("cannot lease (%s): retrying with backoff", err)
                away = True
                _backoff(st, backoff)
    finally:
        with st.mu:
            st.leaser_done = True
            st.leaser_parked = True
            st.cv_run.notify_all()
            st.cv_report.notify()
            st.wake_control()
