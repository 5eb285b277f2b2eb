# SPDX-License-Identifier: Apache-2.0
"""Fixtures: a real tenq server per module (``server``) or per test
(``fresh_server``), a client on it, a queue name of its own per test."""

from __future__ import annotations

import itertools
import os
import sys
from typing import Iterator

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import tenq  # noqa: E402
from harness import Server  # noqa: E402

_names = itertools.count(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(str(tmp_path_factory.mktemp("tenq"))).start()
    yield s
    s.stop()


@pytest.fixture
def fresh_server(tmp_path: "os.PathLike[str]") -> Iterator[Server]:
    s = Server(str(tmp_path)).start()
    yield s
    s.stop()


@pytest.fixture
def queue() -> str:
    """A queue of the test's own."""
    return f"q{os.getpid()}-{next(_names)}"


@pytest.fixture
def client(server: Server, queue: str) -> Iterator[tenq.Client]:
    c = tenq.Client(server.url, tenant="acme", queue=queue, failover_budget=5.0)
    yield c
    c.close()
