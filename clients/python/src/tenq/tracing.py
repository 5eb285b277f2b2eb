# SPDX-License-Identifier: Apache-2.0
"""Tracing without a tracing package: W3C trace context (``traceparent``)
carried from the submitting code to the handler's run.

On the submitting side, ``Client(trace=hook)`` calls ``hook()`` for every
submit and sends the traceparent it returns (the caller's current span).
On the worker, ``tracing.middleware(start_span)`` calls
``start_span(ctx, traceparent)`` around each job: it returns a context
manager that opens the run's span as a child of that traceparent (None
when the job has none) and closes it. With OpenTelemetry: the recipe of
README.md ("Tracing: OpenTelemetry, a recipe"), which the suite runs.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, ContextManager, Optional

from tenq.context import Context
from tenq.errors import InvalidError
from tenq.handlers import Middleware

_TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")

# Opens the span of a job's run: (the job, its traceparent or None) -> a
# context manager around the handler.
SpanHook = Callable[[Context, Optional[str]], ContextManager[Any]]


def check_traceparent(value: Any) -> str:
    """``value`` when it is a traceparent the server takes
    (``00-<32 hex>-<16 hex>-<2 hex>``, lowercase); else InvalidError
    naming ``traceparent``."""
    if not isinstance(value, str) or not _TRACEPARENT.fullmatch(value):
        raise InvalidError(
            f"bad traceparent {value!r}: want 00-<32 hex>-<16 hex>-<2 hex>, lowercase",
            field="traceparent",
        )
    return value


def new_traceparent(parent: Optional[str] = None, sampled: bool = True) -> str:
    """A traceparent for a new span: in ``parent``'s trace when given, else
    in a new trace."""
    if parent is not None:
        trace_id = check_traceparent(parent)[3:35]
    else:
        trace_id = os.urandom(16).hex()
    return f"00-{trace_id}-{os.urandom(8).hex()}-{'01' if sampled else '00'}"


def middleware(start_span: SpanHook) -> Middleware:
    """Worker middleware that runs each job inside
    ``start_span(ctx, ctx.traceparent)``. A handler's exception passes
    through the context manager (so it can record it on the span)."""

    def trace_job(ctx: Context, call_next: Callable[[], Any]) -> Any:
        with start_span(ctx, ctx.traceparent):
            return call_next()

    return trace_job
