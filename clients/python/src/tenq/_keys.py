# SPDX-License-Identifier: Apache-2.0
"""Request keys: the ``Idempotency-Key`` header of every POST /v1/jobs.

One key is made per submit request, before its first attempt, and sent
with every copy of it (a retry on a broken connection, on another server):
the server answers a key it has seen with its first answer and makes
nothing again. Keys are time-ordered: "tq1", 11 hex digits of the Unix
clock in milliseconds, 8 random hex digits drawn once per client, 8 hex
digits of a per-client counter."""

from __future__ import annotations

import itertools
import os
import time

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "idempotent-replayed"


class RequestKeys:
    """Makes request keys; thread-safe (a counter step is atomic)."""

    def __init__(self) -> None:
        self._client = os.urandom(4).hex()
        self._counter = itertools.count()

    def make(self) -> str:
        n = next(self._counter) & 0xFFFFFFFF
        ms = time.time_ns() // 1_000_000
        return f"tq1{ms & 0xFFFFFFFFFFF:011x}{self._client}{n:08x}"
