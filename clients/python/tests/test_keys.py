# SPDX-License-Identifier: Apache-2.0
"""Keyed limits, debounce and expiry through the client, against a real
server: concurrency and rate keys sent and read back, a held job's
reason, the keys at their limit, key settings, a debounced submit, an
expired job's wait, and the refusals naming their field."""

from __future__ import annotations

import time

import pytest

import tenq


def test_concurrency_key_holds_the_second_job(client: tenq.Client, queue: str) -> None:
    a = client.submit("K.one", {"i": 1}, concurrency_keys=[{"key": "acct:1", "limit": 1}])
    b = client.submit("K.one", {"i": 2}, concurrency_keys=["acct:1"])
    c = client.submit("K.one", {"i": 3}, concurrency_keys=["acct:2"])
    job = client.get(a.id)
    assert job.concurrency_keys == [{"key": "acct:1", "limit": 1}]
    got = client.lease([queue], max=10)["jobs"]
    # one of acct:1 (the first) and the one of acct:2; b waits for a
    assert sorted(j["id"] for j in got) == [a.id, c.id]
    held = client.get(b.id)
    assert held.waiting is not None and held.waiting["reason"] == "concurrency_key"
    assert held.waiting["key"] == "acct:1" and held.waiting["held_by"] == a.id
    page = client.keys(at_limit=True)
    assert any(k["key"] == "acct:1" and k["at_limit"] for k in page["keys"])
    one = client.keys(key="acct:1")["keys"]
    assert [(k["key"], k["active"], k["held"], k["limit"]) for k in one] == [("acct:1", 1, 1, 1)]
    assert (one[0]["holders"], one[0]["jobs"]) == ([a.id], [b.id])
    token = next(j["token"] for j in got if j["id"] == a.id)
    client.ack(a.id, token)
    assert [j["id"] for j in client.lease([queue], max=10)["jobs"]] == [b.id]


def test_key_settings_round_trip(client: tenq.Client, queue: str) -> None:
    s = client.set_key_setting("acme", "pyacct:*", concurrency=2, rate=10)
    assert (s["key"], s["concurrency"], s["rate"]) == ("pyacct:*", 2, 10)
    assert any(r["key"] == "pyacct:*" for r in client.key_settings("acme"))
    for i in range(3):
        client.submit("K.set", {"i": i}, concurrency_keys=["pyacct:7"])
    assert len(client.lease([queue], max=10)["jobs"]) == 2
    (info,) = client.keys(key="pyacct:7")["keys"]
    assert info["limit"] == 2 and info["setting"] == "pyacct:*" and info["at_limit"]
    client.delete_key_setting("acme", "pyacct:*")
    assert not any(r["key"] == "pyacct:*" for r in client.key_settings("acme"))
    with pytest.raises(tenq.NotFoundError):
        client.delete_key_setting("acme", "pyacct:*")
    with pytest.raises(tenq.InvalidError) as e:
        client.set_key_setting("acme", "pyacct:*", concurrency=0)
    assert e.value.field == "concurrency"


def test_rate_key_cost(client: tenq.Client, queue: str) -> None:
    spec = tenq.RateKey(key="api", cost=3, rate=4, rate_period_ms=60_000, rate_burst=4)
    h = client.submit("K.rate", rate_keys=[spec])
    assert client.get(h.id).rate_keys == [dict(spec)]
    # the key's rate begins used up at the server's start: the first start waits
    # for 3 units of a rate of 4 a minute, so nothing is leased now
    assert client.lease([queue], max=1)["jobs"] == []
    waiting = client.get(h.id).waiting
    assert waiting is not None and waiting["reason"] == "rate_key" and waiting["key"] == "api"
    with pytest.raises(tenq.InvalidError) as e:
        client.submit("K.rate", rate_keys=[{"key": "api", "cost": 5, "rate": 4}])
    assert e.value.field == "rate_keys[0].cost"


def test_bad_keys_refused_naming_the_field(client: tenq.Client) -> None:
    cases = [
        ({"concurrency_keys": [{"key": "k", "limit": 0}]}, "concurrency_keys[0].limit"),
        ({"concurrency_keys": ["x" * 257]}, "concurrency_keys[0].key"),
        ({"concurrency_keys": ["a", "b", "c", "d", "e"]}, "concurrency_keys"),
        ({"debounce_ms": 100}, "debounce_ms"),
        ({"expire_at": 1, "start_within_ms": 5}, "start_within_ms"),
    ]
    for options, field in cases:
        with pytest.raises(tenq.InvalidError) as e:
            client.submit("K.bad", **options)
        assert e.value.field == field, options


def test_debounce_replaces_the_pending_job(client: tenq.Client, queue: str) -> None:
    first = client.submit(
        "K.deb", {"v": 1}, key="doc:1", debounce_ms=60_000, debounce_max_ms=120_000
    )
    assert first.created and not first.debounced
    second = client.submit(
        "K.deb", {"v": 2}, key="doc:1", debounce_ms=60_000, debounce_max_ms=120_000
    )
    assert second.debounced and not second.created and second.id == first.id
    job = client.get(first.id)
    assert job.args == {"v": 2} and job.debounced and job.state == "scheduled"
    # the quiet period began again; debounce_max_ms counts from the first submit
    assert job.run_at is not None and job.run_at > time.time() * 1000 + 50_000
    assert job.debounce_until is not None and job.debounce_until >= job.run_at


def test_expired_job_raises_job_expired(client: tenq.Client, queue: str) -> None:
    h = client.submit("K.exp", run_at=int(time.time() * 1000) + 60_000, start_within_ms=200)
    with pytest.raises(tenq.JobExpiredError) as e:
        h.wait(20)
    assert e.value.job is not None and e.value.job.state == "expired"
    assert client.get(h.id).finished
    assert client.get_queue(queue).get("expired_total") == 1


def test_priority_aging_settings(client: tenq.Client, queue: str) -> None:
    info = client.set_queue(queue, aging_ms=100, aging_cap=5)
    assert (info["aging_ms"], info["aging_cap"]) == (100, 5)
    low = client.submit("K.age", priority=0)
    time.sleep(1.0)  # low ranks 5 (the cap) by now
    high = client.submit("K.age", priority=4)
    got = [j["id"] for j in client.lease([queue], max=2)["jobs"]]
    assert got == [low.id, high.id]
    with pytest.raises(tenq.InvalidError) as e:
        client.set_queue(queue, aging_cap=40000)
    assert e.value.field == "aging_cap"


def test_submit_many_and_jobspec_carry_the_options(client: tenq.Client, queue: str) -> None:
    later = int(time.time() * 1000) + 600_000
    out = client.submit_many(
        [
            tenq.JobSpec("K.many", concurrency_keys=["m:1"], expire_at=later),
            {"type": "K.many", "rate_keys": ["m:r"], "start_within_ms": 600_000},
        ]
    )
    a, b = (client.get(h.id) for h in out if isinstance(h, tenq.Handle))
    assert a.concurrency_keys == [{"key": "m:1"}] and a.expire_at is not None
    assert b.rate_keys == [{"key": "m:r", "cost": 1}] and b.expire_at is not None
