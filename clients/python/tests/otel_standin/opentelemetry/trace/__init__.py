# SPDX-License-Identifier: Apache-2.0
"""trace: get_tracer, SpanKind, StatusCode, get_current_span; a tracer's
start_as_current_span (its parent: ``context``'s span, else the current
one)."""

from __future__ import annotations

import contextlib
import contextvars
import enum
import os
from typing import Any, Dict, Iterator, Optional

import opentelemetry

_CURRENT: contextvars.ContextVar[Optional["SpanContext"]] = contextvars.ContextVar(
    "otel_standin_span", default=None
)


class SpanKind(enum.Enum):
    INTERNAL = 0
    SERVER = 1
    CLIENT = 2
    PRODUCER = 3
    CONSUMER = 4


class StatusCode(enum.Enum):
    UNSET = 0
    OK = 1
    ERROR = 2


class SpanContext:
    def __init__(self, trace_id: int, span_id: int, is_remote: bool = False) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.is_remote = is_remote


class Span:
    def __init__(self, name: str, kind: SpanKind, parent: Optional[SpanContext],
                 attributes: Optional[Dict[str, Any]]) -> None:
        self.name = name
        self.kind = kind
        self.parent = parent
        trace_id = parent.trace_id if parent else int.from_bytes(os.urandom(16), "big")
        self.context = SpanContext(trace_id, int.from_bytes(os.urandom(8), "big"))
        self.attributes = dict(attributes or {})
        self.status = StatusCode.UNSET
        self.events: list[str] = []

    def get_span_context(self) -> SpanContext:
        return self.context


class Tracer:
    def __init__(self, name: str) -> None:
        self.name = name

    @contextlib.contextmanager
    def start_as_current_span(
        self,
        name: str,
        context: Optional[Dict[str, Any]] = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Optional[Dict[str, Any]] = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Iterator[Span]:
        parent = context.get("span") if context is not None else _CURRENT.get()
        span = Span(name, kind, parent, attributes)
        token = _CURRENT.set(span.context)
        try:
            yield span
        except BaseException as e:
            if record_exception:
                span.events.append(f"exception {type(e).__name__}: {e}")
            if set_status_on_exception:
                span.status = StatusCode.ERROR
            raise
        finally:
            _CURRENT.reset(token)
            opentelemetry.FINISHED.append(span)


def get_tracer(name: str, *args: Any, **kwargs: Any) -> Tracer:
    return Tracer(name)


def get_current_span_context() -> Optional[SpanContext]:
    return _CURRENT.get()
