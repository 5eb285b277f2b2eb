# SPDX-License-Identifier: Apache-2.0
"""Tracing hooks: the client puts the caller's traceparent on submits; the
worker's tracing middleware hands it to the span hook of the run."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Tuple

import pytest

import tenq

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Spans:
    """A span hook that records what it sees (no tracing package)."""

    def __init__(self) -> None:
        self.seen: List[Tuple[str, Optional[str], str]] = []

    @contextlib.contextmanager
    def start(self, ctx: tenq.Context, traceparent: Optional[str]) -> Iterator[None]:
        try:
            yield
        except BaseException as e:
            self.seen.append((ctx.type, traceparent, f"error {type(e).__name__}"))
            raise
        self.seen.append((ctx.type, traceparent, "ok"))


def test_traceparent_checks_and_new_ids() -> None:
    assert tenq.tracing.check_traceparent(TP) == TP
    for bad in ("", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "01-x", 5):
        with pytest.raises(tenq.InvalidError) as e:
            tenq.tracing.check_traceparent(bad)
        assert e.value.field == "traceparent"
    child = tenq.tracing.new_traceparent(TP)
    assert child[:35] == TP[:35] and child != TP
    tenq.tracing.check_traceparent(tenq.tracing.new_traceparent())


def test_hooks_carry_the_trace_through_a_run_in_fake_mode() -> None:
    spans = Spans()
    reg = tenq.Registry()
    reg.add("T.traced", lambda ctx: "ok")
    reg.add("T.fails", lambda ctx: 1 / 0)
    c = tenq.Client("http://127.0.0.1:9", queue="q", trace=lambda: TP)
    with tenq.testing.fake(reg, middleware=[tenq.tracing.middleware(spans.start)]) as jobs:
        c.submit("T.traced")
        c.submit("T.fails", traceparent=tenq.tracing.new_traceparent(TP))
        assert jobs.jobs()[0].body["traceparent"] == TP
        jobs.drain()
    assert spans.seen[0] == ("T.traced", TP, "ok")
    assert spans.seen[1][0] == "T.fails" and spans.seen[1][1] != TP
    assert spans.seen[1][2] == "error ZeroDivisionError"


def test_no_hook_no_traceparent(server: Any, queue: str) -> None:
    c = tenq.Client(server.url, tenant="acme", queue=queue)
    h = c.submit("T.plain")
    assert c.get(h.id).traceparent is None


def test_submit_wait_run_one_trace_on_a_server(server: Any, queue: str) -> None:
    spans = Spans()
    reg = tenq.Registry()
    reg.add("T.traced", lambda ctx: ctx.traceparent)
    c = tenq.Client(server.url, tenant="acme", queue=queue, trace=lambda: TP)
    h = c.submit("T.traced")
    assert c.get(h.id).traceparent == TP
    with tenq.Worker(c, queues=[queue], handlers=reg, poll=2,
                     middleware=[tenq.tracing.middleware(spans.start)]):
        assert h.wait(30) == TP
    assert spans.seen == [("T.traced", TP, "ok")]
