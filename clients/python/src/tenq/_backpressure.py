# SPDX-License-Identifier: Apache-2.0
"""Backpressure: a submit request the server refused with 429
``overloaded`` (its memory budget) or ``quota_exceeded`` (a tenant's or a
queue's ``max_queued`` / ``max_queued_bytes``) made nothing, so it is sent
again, unchanged and under the same request key, after the server's
Retry-After, until the client's ``backpressure_budget`` seconds have passed
since its first refusal; then the refusal is raised (docs/SEMANTICS.md,
"Quotas and backpressure")."""

from __future__ import annotations

import time
from typing import Optional, Tuple, Type

from tenq.errors import InvalidError, OverloadedError, QuotaExceededError, TenqError

# The refusals a submit waits out.
RETRIED: Tuple[Type[TenqError], ...] = (OverloadedError, QuotaExceededError)
# Seconds a submit request keeps being sent again after such refusals.
DEFAULT_BUDGET = 60.0
# The pause when the server names none (it sends Retry-After: 1).
_PAUSE = 1.0
# The least pause, whatever the server says.
_PAUSE_MIN = 0.05


def check_budget(budget: float) -> float:
    """``budget`` as seconds (0 or more), else InvalidError naming it."""
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget >= 0:
        raise InvalidError(
            f"backpressure_budget is 0 or more seconds, not {budget!r}",
            field="backpressure_budget",
        )
    return float(budget)


class Backpressure:
    """The waits of one submit request: ``pause(refusal)`` is how long to
    sleep before sending it again, or raises the refusal once the budget,
    counted from the first refusal, is spent. The last try comes when the
    budget runs out."""

    __slots__ = ("budget", "deadline", "tries")

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.deadline: Optional[float] = None
        self.tries = 0

    def pause(self, refusal: TenqError) -> float:
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.budget
        left = self.deadline - now
        if left <= 0:
            raise refusal
        self.tries += 1
        wait = refusal.retry_after if refusal.retry_after is not None else _PAUSE
        return min(max(wait, _PAUSE_MIN), left)
