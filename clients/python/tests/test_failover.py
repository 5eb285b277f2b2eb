# SPDX-License-Identifier: Apache-2.0
"""Several servers: trying the next one, and following the leader named by
a standby (two real servers on one fresh database of the PostgreSQL at
$TENQ_TEST_PG_URL, which tests/with-pg.sh sets)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any, Iterator, List, Tuple

import pytest

import tenq
from harness import Server, free_port, pg_database


def _health(url: str) -> Any:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=5) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def test_next_server_when_one_is_down(server: Server, queue: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    c = tenq.Client([dead, server.url], tenant="acme", queue=queue, failover_budget=10)
    h = c.submit("T.next")
    assert c.current_server == server.url
    assert c.get(h.id).id == h.id


@pytest.fixture
def pair(tmp_path: Any) -> Iterator[Tuple[Server, Server]]:
    store = pg_database()
    servers: List[Server] = []
    try:
        for name in ("a", "b"):
            servers.append(Server(str(tmp_path), store=store, name=name,
                                  args=["--leader-ttl", "2s"]).start())
        end = time.monotonic() + 30
        while True:
            roles = sorted(_health(s.url).get("role") for s in servers)
            if roles == ["leader", "standby"]:
                break
            if time.monotonic() > end:
                raise AssertionError(f"no leader and standby: {roles}")
            time.sleep(0.1)
        a, b = servers
        yield (a, b) if _health(a.url)["role"] == "leader" else (b, a)
    finally:
        for s in servers:
            s.kill()


def test_standby_redirects_and_the_client_follows(pair: Tuple[Server, Server],
                                                  queue: str) -> None:
    leader, standby = pair
    h = _health(standby.url)
    assert h["role"] == "standby" and h["leader"] == leader.url
    c = tenq.Client(standby.url, tenant="acme", queue=queue, failover_budget=10)
    job = c.submit("T.follow", {"n": 1})
    assert c.current_server == leader.url and leader.url in c.servers
    assert c.get(job.id).args == {"n": 1}
    with tenq.Worker(c, queues=[queue], handlers=_echo(), poll=2):
        assert job.wait(30) == {"n": 1}


def test_takeover_after_the_leader_dies(pair: Tuple[Server, Server], queue: str) -> None:
    leader, standby = pair
    c = tenq.Client([leader.url, standby.url], tenant="acme", queue=queue, failover_budget=30)
    first = c.submit("T.takeover", {"n": 1})
    leader.kill()
    second = c.submit("T.takeover", {"n": 2})  # the standby leads by now
    assert c.current_server == standby.url
    assert {j.id for j in c.list_jobs(queue=queue).jobs} == {first.id, second.id}


def _echo() -> tenq.Registry:
    reg = tenq.Registry()
    reg.add("T.follow", lambda ctx: ctx.args)
    return reg
