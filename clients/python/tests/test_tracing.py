# SPDX-License-Identifier: Apache-2.0
"""Tracing hooks: the client puts the caller's traceparent on submits; the
worker's tracing middleware hands it to the span hook of the run."""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import tenq
from harness import until

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


# ---- the README's OpenTelemetry recipe, as written ---------------------------------------

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otel_standin")
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")

# (name, kind, trace id, span id, parent span id, error, attributes)
SpanRow = Tuple[str, str, int, int, Optional[int], bool, Dict[str, Any]]


def _opentelemetry() -> Callable[[], List[SpanRow]]:
    """The real OpenTelemetry API and SDK (an in-memory exporter) when they
    can be imported; else the stand-in of tests/otel_standin. The finished
    spans either way."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
    except ImportError:
        sys.path.insert(0, STANDIN)
        import opentelemetry

        def standin() -> List[SpanRow]:
            return [(s.name, s.kind.name, s.context.trace_id, s.context.span_id,
                     s.parent.span_id if s.parent else None, s.status.name == "ERROR",
                     dict(s.attributes)) for s in opentelemetry.FINISHED]

        return standin
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    def real() -> List[SpanRow]:
        return [(s.name, s.kind.name, s.context.trace_id, s.context.span_id,
                 s.parent.span_id if s.parent else None, s.status.status_code.name == "ERROR",
                 dict(s.attributes)) for s in exporter.get_finished_spans()]

    return real


def _recipe(tmp_path: Any) -> Any:
    """The README's otel_tenq.py, written out and imported."""
    with open(README) as f:
        text = f.read()
    (code,) = re.findall(r"```python\n(# otel_tenq\.py:.*?)```", text, re.S)
    (tmp_path / "otel_tenq.py").write_text(code)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module("otel_tenq")
    finally:
        sys.path.remove(str(tmp_path))


def test_the_readme_opentelemetry_recipe_makes_one_trace(server: Any, queue: str,
                                                         tmp_path: Any) -> None:
    spans = _opentelemetry()
    otel_tenq = _recipe(tmp_path)
    from opentelemetry import trace

    tracer = trace.get_tracer("test")
    client = otel_tenq.instrumented(tenq.Client(server.url, tenant="acme", queue=queue))
    reg = tenq.Registry()

    def traced(ctx: tenq.Context) -> str:
        with tracer.start_as_current_span("inside the handler"):
            client.submit("T.child", {"from": ctx.id})
        return "traced"

    reg.add("T.traced", traced)
    reg.add("T.child", lambda ctx: "child")
    reg.add("T.broken", lambda ctx: 1 / 0)
    with tracer.start_as_current_span("http request"):
        with otel_tenq.sending(queue):
            h = client.submit("T.traced")
    broken = client.submit("T.broken", max_attempts=1)
    with tenq.Worker(client, queues=[queue], handlers=reg, poll=2,
                     middleware=[otel_tenq.middleware]) as w:
        assert h.wait(30) == "traced"
        until(lambda: w.counts["succeeded"] == 2)
        assert broken.wait_job(30).state == "dead"
    rows = {r[0] + (" " + r[6].get("tenq.job.type", "") if r[0].startswith("process") else ""): r
            for r in spans()}
    root, send = rows["http request"], rows[f"send {queue}"]
    run, inner = rows[f"process {queue} T.traced"], rows["inside the handler"]
    child, bad = rows[f"process {queue} T.child"], rows[f"process {queue} T.broken"]
    # one trace, parent to child across the server: the caller, the submit,
    # the run, the handler's span, the job it submitted and that job's run
    assert {r[2] for r in (root, send, run, inner, child)} == {root[2]}
    assert (send[4], run[4], inner[4], child[4]) == (root[3], send[3], run[3], inner[3])
    assert (send[1], run[1], child[1]) == ("PRODUCER", "CONSUMER", "CONSUMER")
    assert client.get(h.id).traceparent == f"00-{root[2]:032x}-{send[3]:016x}-01"
    assert run[6]["messaging.message.id"] == str(h.id) and run[6]["tenq.job.attempt"] == 1
    # a job submitted outside any span starts a trace of its own; its error is on its span
    assert bad[4] is None and bad[5] and not run[5]
