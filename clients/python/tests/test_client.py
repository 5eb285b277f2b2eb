# SPDX-License-Identifier: Apache-2.0
"""The client against a real server: submit (one, many, every field), get,
wait, cancel, list with paging, typed errors, an ack sent again."""

from __future__ import annotations

import datetime
import time

import pytest

import tenq
from harness import DroppingProxy, Server, free_port


def test_submit_get_wait_result(client: tenq.Client, queue: str) -> None:
    h = client.submit("Report.build", {"id": 1})
    assert h.created and h.state == "ready"
    job = client.get(h.id)
    assert (job.type, job.queue, job.tenant) == ("Report.build", queue, "acme")
    assert job.args == {"id": 1}
    # no per-job key unless the caller gives one (the request key is a header)
    assert job.idempotency_key is None and job.data.get("idempotency_key") is None
    lease = client.lease([queue], max=1)
    (leased,) = lease["jobs"]
    assert leased["id"] == h.id
    client.ack(h.id, leased["token"], result={"rows": 3})
    assert h.wait(10) == {"rows": 3}
    assert client.wait(h.id, 5).state == "succeeded"


def test_every_field_is_sent(client: tenq.Client, queue: str) -> None:
    run_at = datetime.datetime.now() + datetime.timedelta(hours=1)
    h = client.submit(
        "T.every", {"b": 2, "a": 1}, key="lane-1", unique_key="u-1", idempotency_key="idem-1",
        priority=7, run_at=run_at, max_attempts=3, score=1.5,
    )
    job = client.get(h.id)
    assert job.key == "lane-1" and job.unique_key == "u-1" and job.idempotency_key == "idem-1"
    assert job.priority == 7 and job.max_attempts == 3 and job.state == "scheduled"
    assert abs((job.run_at or 0) - run_at.timestamp() * 1000) < 1000
    again = client.submit("T.every", {"a": 1}, unique_key="u-1")
    assert again.id == h.id and again.duplicate
    replay = client.submit("T.other", idempotency_key="idem-1")
    assert replay.id == h.id and replay.replayed
    u1 = client.submit("T.unique", {"a": 1, "b": 2}, unique=True)
    u2 = client.submit("T.unique", {"b": 2, "a": 1}, unique=True)
    assert u2.id == u1.id and u2.duplicate


def test_submit_many_splits_and_reports_each(client: tenq.Client, queue: str) -> None:
    specs: list = [tenq.JobSpec("T.many", {"i": i}) for i in range(10_050)]
    specs.insert(5, {"type": "T.many", "args": {"bad": object()}})
    specs.insert(7, {"type": "T.many", "priority": 99999})
    out = client.submit_many(specs)
    assert len(out) == 10_052
    assert isinstance(out[5], tenq.InvalidError) and out[5].field == "args"
    assert isinstance(out[7], tenq.InvalidError) and out[7].field == "priority"
    handles = [h for h in out if isinstance(h, tenq.Handle)]
    assert len(handles) == 10_050 and len({h.id for h in handles}) == 10_050
    q = client.request("GET", f"/v1/queues/{queue}")
    assert q["ready"] == 10_050


def test_list_pages(client: tenq.Client, queue: str) -> None:
    ids = [client.submit("T.list", {"i": i}).id for i in range(7)]
    page = client.list_jobs(queue=queue, limit=3)
    assert [j.id for j in page.jobs] == ids[::-1][:3] and page.next is not None
    every = [j.id for j in client.iter_jobs(queue=queue, limit=3)]
    assert every == ids[::-1]
    assert [j.id for j in client.list_jobs(queue=queue, type="nothing").jobs] == []


def test_cancel(client: tenq.Client, queue: str) -> None:
    h = client.submit("T.cancel")
    res = h.cancel()
    assert res.state == "cancelled" and not res.cancel_requested
    with pytest.raises(tenq.JobCancelledError):
        h.wait(5)
    with pytest.raises(tenq.ConflictError) as e:
        client.cancel(h.id)
    assert e.value.status == 409
    leased = client.submit("T.cancel2")
    client.lease([queue], max=1)
    res = client.cancel(leased.id)
    assert res.cancel_requested and res.state == "leased"


def test_wait_times_out_with_current_state(client: tenq.Client) -> None:
    h = client.submit("T.never")
    t0 = time.monotonic()
    job = h.wait_job(0.5)
    assert job.state == "ready" and time.monotonic() - t0 >= 0.4
    with pytest.raises(tenq.TimedOutError):
        h.wait(0.2)


def test_outcomes_as_objects_or_json(client: tenq.Client, queue: str) -> None:
    hs = [client.submit("T.out") for _ in range(4)]
    jobs = client.lease([queue], max=4)["jobs"]
    assert sorted(j["id"] for j in jobs) == sorted(h.id for h in hs)
    a, b, c, d = jobs
    # a worker's: [] when every outcome was taken (the answer not parsed)
    arr = b'[{"id":%d,"token":%d,"ok":true}]' % (a["id"], a["token"])
    assert client.report_outcomes(arr, 1) == []
    # any refused: the results, in order
    stale = {"id": b["id"], "token": b["token"] + 1, "ok": True}
    ok_c = {"id": c["id"], "token": c["token"], "ok": True}
    results = client.report_outcomes([stale, ok_c], 2)
    assert results[0]["error"]["code"] == "conflict" and results[1]["state"] == "succeeded"
    # the public call always answers the results
    arr = b'[{"id":%d,"token":%d,"ok":true}]' % (d["id"], d["token"])
    assert client.outcomes(arr) == [{"id": d["id"], "state": "succeeded"}]
    assert client.get(b["id"]).state == "leased"
    assert [client.get(j["id"]).state for j in (a, c, d)] == ["succeeded"] * 3


def test_wait_follows_a_merged_job(client: tenq.Client, queue: str) -> None:
    client.set_queue(queue, merge=True)
    a = client.submit("T.merge", {"n": 1}, key="k")
    (job,) = client.lease([queue], max=1)["jobs"]
    client.fail(a.id, job["token"], "boom", retry=False)
    assert client.get(a.id).state == "dead"
    b = client.submit("T.merge", {"n": 2}, key="k")
    assert b.id != a.id
    assert client.requeue(a.id)["state"] == "merged"
    assert client.get(a.id).merged_into == b.id
    (job_b,) = client.lease([queue], max=1)["jobs"]
    assert job_b["id"] == b.id
    client.ack(b.id, job_b["token"], result="both")
    assert a.wait(5) == "both"  # followed from a to b


def test_dead_job_raises_job_failed(client: tenq.Client, queue: str) -> None:
    h = client.submit("T.dead")
    (job,) = client.lease([queue], max=1)["jobs"]
    client.fail(h.id, job["token"], "RuntimeError: nope", retry=False)
    with pytest.raises(tenq.JobFailedError) as e:
        h.wait(5)
    assert "RuntimeError: nope" in str(e.value) and e.value.job.state == "dead"
    assert [j.id for j in client.morgue(queue=queue).jobs] == [h.id]


def test_typed_errors(client: tenq.Client, queue: str) -> None:
    with pytest.raises(tenq.NotFoundError) as nf:
        client.get(987654321)
    assert nf.value.status == 404 and nf.value.code == "not_found"
    with pytest.raises(tenq.InvalidError) as inv:
        client.submit("has space")
    assert inv.value.field == "type" and inv.value.status == 400
    with pytest.raises(tenq.ConflictError) as stale:
        h = client.submit("T.stale")
        (job,) = client.lease([queue], max=1)["jobs"]
        client.ack(h.id, job["token"] + 1)
    assert stale.value.field == "token"
    (unk,) = client.submit_many([{"type": "T", "nope": 1}])
    assert isinstance(unk, tenq.InvalidError) and unk.field == "nope"
    with pytest.raises(tenq.InvalidError):
        client.submit("T.x", traceparent="00-abc")


def test_args_not_json_refused_before_sending(client: tenq.Client, queue: str) -> None:
    with pytest.raises(tenq.InvalidError) as e:
        client.submit("T.bad", {"when": datetime.datetime.now()})
    assert e.value.field == "args" and e.value.status == 0
    with pytest.raises(tenq.InvalidError):
        client.submit("T.bad", float("nan"))
    assert client.list_jobs(queue=queue).jobs == []


def test_wrong_token_is_unauthenticated(tmp_path: "object") -> None:
    s = Server(str(tmp_path), env={"TENQ_ADMIN_TOKEN": "right-secret-0123456789"}).start()
    try:
        bad = tenq.Client(s.url, "wrong", tenant="acme", queue="q")
        with pytest.raises(tenq.UnauthenticatedError) as e:
            bad.submit("T.auth")
        assert e.value.status == 401
        good = tenq.Client(s.url, "right-secret-0123456789", tenant="acme", queue="q")
        assert good.submit("T.auth").created
    finally:
        s.stop()


def test_token_and_servers_from_environment(server: Server,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENQ_SERVER", f"http://127.0.0.1:{free_port()},{server.url}")
    monkeypatch.setenv("TENQ_TOKEN", "ignored-when-open")
    c = tenq.Client(tenant="acme", queue="envq", failover_budget=5)
    assert c.servers[1] == server.url
    assert c.submit("T.env").created
    assert c.current_server == server.url


def test_server_down_connect_error_after_budget(fresh_server: Server) -> None:
    url = fresh_server.url
    fresh_server.kill()
    c = tenq.Client(url, tenant="acme", queue="down", failover_budget=1.0)
    t0 = time.monotonic()
    with pytest.raises(tenq.ConnectError) as e:
        c.submit("T.down")
    took = time.monotonic() - t0
    assert 0.9 <= took < 15, took
    assert "no server answered" in str(e.value)
    fresh_server.start()
    assert tenq.Client(url).list_jobs(queue="down").jobs == []


def test_ack_sent_again_after_lost_answer_counts_once(client: tenq.Client, server: Server,
                                                       queue: str) -> None:
    proxy = DroppingProxy(server.port)
    try:
        c = tenq.Client(proxy.url, tenant="acme", queue=queue, failover_budget=10)
        h = c.submit("T.ack")
        (job,) = c.lease([queue], max=1)["jobs"]
        proxy.drop = 1
        ans = c.ack(h.id, job["token"], result=5)
        assert ans["state"] == "succeeded" and proxy.requests >= 4
    finally:
        proxy.close()
    assert client.get(h.id).result == 5
