# SPDX-License-Identifier: Apache-2.0
"""propagate: inject the current span as a W3C traceparent; extract one
into a context whose span is its (remote) span context."""

from __future__ import annotations

import re
from typing import Any, Dict, MutableMapping, Optional

from opentelemetry.trace import SpanContext, get_current_span_context

_TP = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def inject(carrier: MutableMapping[str, str], context: Optional[Dict[str, Any]] = None) -> None:
    sc = context.get("span") if context is not None else get_current_span_context()
    if sc is not None:
        carrier["traceparent"] = f"00-{sc.trace_id:032x}-{sc.span_id:016x}-01"


def extract(carrier: Dict[str, str], context: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    m = _TP.fullmatch(carrier.get("traceparent", ""))
    if not m:
        return {}
    return {"span": SpanContext(int(m.group(1), 16), int(m.group(2), 16), is_remote=True)}
