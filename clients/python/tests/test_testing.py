# SPDX-License-Identifier: Apache-2.0
"""Test modes: inline and fake, without a server."""

from __future__ import annotations

from typing import Any, Callable, List

import pytest

import tenq

ran: List[Any] = []


class Mailer:
    @tenq.task(queue="mail")
    def send(self, to: str) -> str:
        ran.append(to)
        if to == "bad":
            raise ValueError("no such address")
        if to == "chain":
            Mailer().send.enqueue("after-chain")
        return f"sent to {to}"


@pytest.fixture(autouse=True)
def no_server() -> None:
    tenq.configure(tenq.Client("http://127.0.0.1:9", failover_budget=0.1))
    ran.clear()


def test_inline_runs_at_submit() -> None:
    with tenq.testing.inline() as mode:
        h = Mailer().send.enqueue("a@x")
        assert ran == ["a@x"] and h.wait() == "sent to a@x"
        bad = Mailer().send.enqueue("bad")
        with pytest.raises(tenq.JobFailedError) as e:
            bad.wait()
        assert e.value.job.error == "ValueError: no such address"
        assert mode.get(h.id).state == "succeeded"
    with pytest.raises(tenq.ConnectError):  # the mode is off again
        Mailer().send.enqueue("c@x")


def test_fake_records_then_drains() -> None:
    with tenq.testing.fake() as jobs:
        h = Mailer().send.enqueue("chain")
        Mailer().send.with_options(priority=2).enqueue("b@x")
        assert ran == []
        assert [(j.type, j.queue, j.args) for j in jobs.jobs()] == [
            ("Mailer.send", "mail", {"to": "chain"}),
            ("Mailer.send", "mail", {"to": "b@x"}),
        ]
        assert jobs.jobs()[1].body["priority"] == 2
        with pytest.raises(tenq.TimedOutError):
            h.wait()  # not run yet
        assert jobs.drain() == 3  # the job the first one enqueued ran too
        assert ran == ["chain", "b@x", "after-chain"]
        assert h.wait() == "sent to chain"


def test_fake_cancel_and_client_submit() -> None:
    with tenq.testing.fake() as jobs:
        c = tenq.Client("http://127.0.0.1:9", queue="q")
        h = c.submit("Mailer.send", {"to": "z"})
        assert h.cancel().state == "cancelled"
        assert jobs.drain() == 0 and ran == []
        with pytest.raises(tenq.InvalidError):
            c.submit("Mailer.send", {"to": object()})


def test_modes_run_middleware() -> None:
    seen: List[str] = []

    def mw(ctx: tenq.Context, call_next: Callable[[], Any]) -> Any:
        seen.append(ctx.type)
        return call_next()

    with tenq.testing.inline(middleware=[mw]):
        Mailer().send.enqueue("m@x")
    assert seen == ["Mailer.send"]
