# SPDX-License-Identifier: Apache-2.0
"""The library's types against the protocol the server exports (GET
/v1/spec, made from the server's own tables): a state, a waiting reason,
an attempt outcome, an error word, a field of a count or a setting the
server knows and this library does not fails here, until it is added."""

from __future__ import annotations

import json
import urllib.request
from typing import Any, Dict, FrozenSet, get_args

import pytest

import tenq
from harness import Server
from tenq.errors import error_from_answer
from tenq.jobs import FINISHED_STATES
from tenq.queues import Counts, KeySetting, QueueInfo, TenantInfo


def keys(t: Any) -> FrozenSet[str]:
    """Every key of a TypedDict, its bases' included."""
    return frozenset(t.__required_keys__ | t.__optional_keys__)


@pytest.fixture(scope="module")
def spec(server: Server) -> Dict[str, Any]:
    with urllib.request.urlopen(server.url + "/v1/spec", timeout=10) as r:
        out: Dict[str, Any] = json.load(r)
    return out


def test_states(spec: Dict[str, Any]) -> None:
    states = [s["name"] for s in spec["states"]]
    assert "succeeded" in states and "waiting" in states
    assert list(get_args(tenq.JobState)) == states
    assert FINISHED_STATES == {s["name"] for s in spec["states"] if s["finished"]}


def test_counts(spec: Dict[str, Any]) -> None:
    live = [s["name"] for s in spec["states"] if s["live"]]
    assert set(live) <= set(spec["counts"]), spec["counts"]
    assert set(spec["counts"]) <= keys(Counts), set(spec["counts"]) - keys(Counts)


def test_waiting_reasons_and_attempt_outcomes(spec: Dict[str, Any]) -> None:
    assert "no_worker" in spec["waiting_reasons"]
    assert set(get_args(tenq.WaitingReason)) == set(spec["waiting_reasons"])
    assert list(get_args(tenq.AttemptOutcome)) == spec["attempt_outcomes"]


def test_settings(spec: Dict[str, Any]) -> None:
    kinds = (("queue", QueueInfo), ("tenant", TenantInfo), ("key", KeySetting))
    assert sorted(spec["settings"]) == sorted(k for k, _ in kinds)
    for kind, info in kinds:
        names = {r["name"] for r in spec["settings"][kind]}
        assert names, kind
        assert names <= keys(info), (kind, names - keys(info))


def test_error_words(spec: Dict[str, Any]) -> None:
    assert {"word": "invalid", "status": 400} in spec["errors"]
    for e in spec["errors"]:
        err = error_from_answer(e["status"], {"error": {"code": e["word"], "message": "m"}})
        assert type(err) is not tenq.TenqError, e
        assert (err.code, err.status) == (e["word"], e["status"])
