# SPDX-License-Identifier: Apache-2.0
"""Jobs in the application's own PostgreSQL transaction (tenq.tx): a
committed submit is leased by a worker, a rolled-back one never appears;
submit_many keeps the order and the fields; a handler completes its job with
its own writes (never run again, the worker's acknowledgement harmless) or
fails it (retried); a stale token raises and rolls the writes back.

Each test gets a database of its own on the PostgreSQL of tests/with-pg.sh
($TENQ_TEST_PG_URL) and a server on it. Without psycopg 3 (Debian's
python3-psycopg) or that PostgreSQL the tests are skipped, and fail when CI
is set."""

from __future__ import annotations

import datetime
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import tenq
from harness import Server, need, pg_database, until


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        need("needs psycopg 3 (apt-get install python3-psycopg)")
    return psycopg


def _role(url: str) -> Any:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=5) as r:
            return json.load(r).get("role")
    except urllib.error.HTTPError as e:
        return json.load(e).get("role")
    except OSError:
        return None


class Env:
    """A fresh database, a server storing in it (the leader), a client on
    it, a queue, and connections to the database for the application."""

    def __init__(self, psycopg: Any, db_url: str, server: Server, queue: str) -> None:
        self.psycopg = psycopg
        self.db_url = db_url
        self.server = server
        self.queue = queue
        self.client = tenq.Client(server.url, tenant="acme", queue=queue, failover_budget=10)
        self.conns: List[Any] = []

    def connect(self) -> Any:
        conn = self.psycopg.connect(self.db_url)
        self.conns.append(conn)
        return conn

    def rows(self, sql: str, params: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
        with self.psycopg.connect(self.db_url) as conn:
            return list(conn.execute(sql, params).fetchall())

    def close(self) -> None:
        for c in self.conns:
            c.close()
        self.client.close()


@pytest.fixture
def env(tmp_path: Any, queue: str) -> Iterator[Env]:
    psycopg = _psycopg()
    db_url = pg_database()
    server = Server(str(tmp_path), store=db_url).start()
    e = Env(psycopg, db_url, server, queue)
    try:
        until(lambda: _role(server.url) == "leader")
        with e.connect() as conn:
            conn.execute("CREATE TABLE app (id SERIAL PRIMARY KEY, what TEXT NOT NULL)")
        yield e
    finally:
        e.close()
        server.stop()


def _job(client: tenq.Client, job_id: int, timeout: float = 10.0) -> tenq.Job:
    """The job once the server took it in from the inbox."""
    end = time.monotonic() + timeout
    while True:
        try:
            return client.get(job_id)
        except tenq.NotFoundError:
            if time.monotonic() > end:
                raise
            time.sleep(0.02)


def _wait(client: tenq.Client, job_id: int, timeout: float = 30.0) -> tenq.Job:
    """The job once finished. (A 404 in between is taken as "not there
    yet": with /opt/tenq-tx/tenq a wait for a job made in a transaction was
    seen answered 404 once, right after a GET had found it.)"""
    end = time.monotonic() + timeout
    while True:
        try:
            return client.wait(job_id, max(0.1, end - time.monotonic()))
        except tenq.NotFoundError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def _worker(env: Env, reg: tenq.Registry, **kw: Any) -> tenq.Worker:
    kw.setdefault("poll", 2)
    return tenq.Worker(env.client, queues=[env.queue], handlers=reg, **kw)


def _echo() -> tenq.Registry:
    reg = tenq.Registry()
    reg.add("T.echo", lambda ctx: ctx.args)
    return reg


# ---- submit --------------------------------------------------------------------------------


def test_a_committed_submit_is_leased_by_a_worker(env: Env) -> None:
    with env.connect() as conn:
        with conn.transaction():
            with conn.cursor() as cur:
                cur.execute("INSERT INTO app (what) VALUES ('order 1')")
                job_id = tenq.tx.submit(cur, "T.echo", {"order": 1}, tenant="acme", queue=env.queue,
                                        key="order:1")
            # a connection does too (a cursor of it is used)
            other = tenq.tx.submit(conn, "T.echo", tenant="acme", queue=env.queue)
    assert job_id % 2 == 1 and other % 2 == 1 and other > job_id  # odd: made in a transaction
    with _worker(env, _echo()) as w:
        assert _wait(env.client, job_id).result == {"order": 1}
        assert _wait(env.client, other).result == {}
    assert w.counts["succeeded"] == 2 and w.counts["refused"] == 0
    job = env.client.get(job_id)
    assert (job.tenant, job.queue, job.type, job.key) == ("acme", env.queue, "T.echo", "order:1")
    assert env.rows("SELECT what FROM app") == [("order 1",)]


def test_wait_right_after_the_commit_waits_for_the_job(env: Env) -> None:
    """client.wait on the id tenq.tx.submit returned, at once after the
    commit: the server takes the job in milliseconds later, and the wait
    looks again meanwhile instead of raising NotFoundError."""
    with _worker(env, _echo()) as w:
        with env.connect() as conn:
            for i in range(20):
                with conn.transaction():
                    job_id = tenq.tx.submit(conn, "T.echo", {"i": i}, tenant="acme", queue=env.queue)
                job = env.client.wait(job_id, 30)
                assert (job.state, job.result) == ("succeeded", {"i": i})
    assert w.counts["succeeded"] == 20
    # an odd id that never comes (a rolled-back transaction's) is not found
    # once the take-in window is over, not after the whole wait
    with env.connect() as conn:
        with conn.cursor() as cur:
            gone = tenq.tx.submit(cur, "T.echo", tenant="acme", queue=env.queue)
        conn.rollback()
    t0 = time.monotonic()
    with pytest.raises(tenq.NotFoundError):
        env.client.wait(gone, 60)
    assert tenq.client.TX_TAKE_IN <= time.monotonic() - t0 < 30


def test_the_former_argument_order_still_works_and_warns(env: Env) -> None:
    with env.connect() as conn:
        with conn.transaction():
            with pytest.warns(DeprecationWarning, match="tenq.tx.submit"):
                old = tenq.tx.submit(conn, "acme", env.queue, "T.echo", {"old": 1}, key="k-old")
            with pytest.warns(DeprecationWarning):
                bare = tenq.tx.submit(conn, "acme", env.queue, "T.echo")
            new = tenq.tx.submit(conn, "T.echo", {"new": 1}, tenant="acme", queue=env.queue)
    for job_id, args in ((old, {"old": 1}), (bare, {}), (new, {"new": 1})):
        job = env.client.wait(job_id, 0.5)  # there, not finished: no worker
        assert (job.tenant, job.queue, job.type, job.args) == ("acme", env.queue, "T.echo", args)
    assert env.client.get(old).key == "k-old"
    with pytest.raises(TypeError, match="tenant= and queue="):
        tenq.tx.submit(conn, "T.echo", {"x": 1})


def test_a_rolled_back_submit_never_appears(env: Env) -> None:
    with env.connect() as conn:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO app (what) VALUES ('gone')")
            gone = tenq.tx.submit(cur, "T.echo", {"n": 1}, tenant="acme", queue=env.queue)
        conn.rollback()
        with conn.transaction():
            marker = tenq.tx.submit(conn, "T.echo", {"n": 2}, tenant="acme", queue=env.queue)
    # the marker was committed after the rolled-back one: once it is in, the
    # other would be too
    assert _job(env.client, marker).args == {"n": 2}
    with _worker(env, _echo()) as w:
        assert _wait(env.client, marker).result == {"n": 2}
        time.sleep(0.3)
    with pytest.raises(tenq.NotFoundError):
        env.client.get(gone)
    assert w.counts["leased"] == 1
    q = env.client.request("GET", f"/v1/queues/{env.queue}")
    assert isinstance(q, dict) and q["submitted_total"] == 1 and q["succeeded_total"] == 1
    assert env.rows("SELECT count(*) FROM app") == [(0,)]
    assert env.rows("SELECT count(*) FROM tenq.inbox") == [(0,)]


def test_submit_many_keeps_order_and_fields(env: Env) -> None:
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    when = when.replace(microsecond=when.microsecond // 1000 * 1000)
    tp = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    in_ms = int(when.timestamp() * 1000) + 60_000
    jobs: List[Any] = [
        {"tenant": "acme", "queue": env.queue, "type": "T.a", "args": {"i": 0}},
        tenq.JobSpec("T.b", [1, 2], queue=env.queue, tenant="acme", key="k-b", priority=7,
                     max_attempts=3, traceparent=tp, idempotency_key="idem-b"),
        {"tenant": "acme", "queue": env.queue, "type": "T.c", "run_at": when,
         "unique_key": "u-c", "score": 2.5},
        {"tenant": "acme", "queue": env.queue, "type": "T.d", "run_at": in_ms},
    ]
    with env.connect() as conn:
        with conn.transaction():
            ids = tenq.tx.submit_many(conn, jobs)
        assert tenq.tx.submit_many(conn, []) == []
    assert len(ids) == 4 and ids == sorted(ids) and all(i % 2 == 1 for i in ids)
    a, b, c, d = (_job(env.client, i) for i in ids)
    assert [j.type for j in (a, b, c, d)] == ["T.a", "T.b", "T.c", "T.d"]
    assert a.args == {"i": 0} and a.state == "ready" and a.priority == 0
    assert (b.args, b.key, b.priority, b.max_attempts, b.traceparent, b.idempotency_key) == (
        [1, 2], "k-b", 7, 3, tp, "idem-b")
    assert c.state == "scheduled" and c.run_at == int(when.timestamp() * 1000)
    assert c.unique_key == "u-c" and c.args == {}
    assert d.state == "scheduled" and d.run_at == in_ms


def test_keys_debounce_and_expiry_from_a_transaction(env: Env) -> None:
    """The options of schema 26 go through tenq.submit and submit_many: the
    server holds the keyed jobs to their limit, takes the debounce and the
    expiry; the database refuses a bad key as the server would."""
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    later = later.replace(microsecond=later.microsecond // 1000 * 1000)
    with env.connect() as conn:
        with conn.transaction():
            a = tenq.tx.submit(conn, "T.k", {"i": 1}, tenant="acme", queue=env.queue,
                               concurrency_keys=[{"key": "acct:1", "limit": 1}],
                               rate_keys=["r:1"], expire_at=later)
            b, c = tenq.tx.submit_many(conn, [
                tenq.JobSpec("T.k", {"i": 2}, tenant="acme", queue=env.queue,
                             concurrency_keys=["acct:1"], start_within_ms=3_600_000),
                {"tenant": "acme", "queue": env.queue, "type": "T.d", "key": "doc",
                 "debounce_ms": 60_000, "debounce_max_ms": 120_000},
            ])
        with pytest.raises(env.psycopg.Error) as info:
            with conn.transaction():
                tenq.tx.submit(conn, "T.k", tenant="acme", queue=env.queue,
                               concurrency_keys=[{"key": "acct:1", "limit": 0}])
        assert "tenq.submit: concurrency_keys[0].limit must be" in str(info.value)
        with pytest.raises(env.psycopg.Error) as info:
            with conn.transaction():
                tenq.tx.submit(conn, "T.k", tenant="acme", queue=env.queue, debounce_ms=10)
        assert "tenq.submit: debounce_ms needs a key" in str(info.value)
    ja, jb, jc = (_job(env.client, i) for i in (a, b, c))
    assert ja.concurrency_keys == [{"key": "acct:1", "limit": 1}]
    assert ja.rate_keys == [{"key": "r:1", "cost": 1}]
    assert ja.expire_at == int(later.timestamp() * 1000) and jb.expire_at is not None
    assert jc.state == "scheduled" and jc.debounced
    got = env.client.lease([env.queue], max=10)["jobs"]
    assert [j["id"] for j in got] == [a]  # b waits for acct:1, c for its quiet period
    held = env.client.get(b)
    assert held.waiting is not None and held.waiting["reason"] == "concurrency_key"


def test_a_refused_submit_raises_the_drivers_error(env: Env) -> None:
    psycopg = env.psycopg
    with env.connect() as conn:
        with pytest.raises(psycopg.Error) as info:
            with conn.transaction():
                conn.execute("INSERT INTO app (what) VALUES ('x')")
                tenq.tx.submit(conn, "bad type", tenant="acme", queue=env.queue)
        assert info.value.sqlstate == "22023" and "tenq.submit: type" in str(info.value)
        with pytest.raises(psycopg.Error) as info:
            with conn.transaction():
                tenq.tx.submit_many(conn, [{"tenant": "acme", "queue": env.queue, "type": "T"},
                                           {"tenant": "acme", "queue": env.queue, "type": "T",
                                            "priority": 99999}])
        assert info.value.sqlstate == "22023"
        assert "tenq.submit_many: job 1: priority" in str(info.value)
        # what this library can tell is wrong, before anything is sent
        with pytest.raises(tenq.InvalidError) as bad:
            tenq.tx.submit(conn, "T", {"x": object()}, tenant="acme", queue=env.queue)
        assert bad.value.field == "args"
        with pytest.raises(tenq.InvalidError):
            tenq.tx.submit_many(conn, [{"type": "T", "colour": "red"}])
        # a job's own timeout below a third of its queue's lease (300000 ms): as the server
        with pytest.raises(psycopg.Error) as info:
            with conn.transaction():
                tenq.tx.submit_many(conn, [tenq.JobSpec("T", tenant="acme", queue=env.queue,
                                                        timeout_ms=60_000)])
        assert info.value.sqlstate == "22023"
        assert "tenq.submit_many: job 0: timeout_ms must be" in str(info.value)
        with pytest.raises(psycopg.Error) as info:
            with conn.transaction():
                tenq.tx.submit(conn, "T", tenant="acme", queue=env.queue, timeout_ms=60_000)
        assert "tenq.submit: timeout_ms must be from a third of the queue's lease" in str(
            info.value)
        with pytest.raises(tenq.InvalidError):
            tenq.tx.complete(conn, 17)  # type: ignore[arg-type]
    assert env.rows("SELECT count(*) FROM app") == [(0,)]
    assert env.rows("SELECT count(*) FROM tenq.inbox") == [(0,)]


def test_a_submit_over_a_quota_raises_quota_exceeded_and_rolls_back(env: Env) -> None:
    """SQLSTATE TQ429 (tenq.inbox's quota trigger) is the client's own
    QuotaExceededError, the driver's error its cause; the transaction is
    aborted and nothing of it stays."""
    psycopg = env.psycopg
    assert env.client.set_tenant("acme", max_queued=2)["max_queued"] == 2
    env.client.set_queue(env.queue, max_queued_bytes=40)
    with env.connect() as conn:
        with pytest.raises(tenq.QuotaExceededError) as info:
            with conn.transaction():
                conn.execute("INSERT INTO app (what) VALUES ('over')")
                tenq.tx.submit_many(conn, [tenq.JobSpec("T.q", {"i": i}, tenant="acme",
                                                        queue=env.queue) for i in range(3)])
        err = info.value
        assert (err.code, err.status, err.field) == ("quota_exceeded", 429, "max_queued")
        assert isinstance(err, tenq.RateLimitedError)
        assert err.message.startswith("tenq.submit: quota_exceeded: tenant acme")
        assert isinstance(err.__cause__, psycopg.Error) and err.__cause__.sqlstate == "TQ429"
        # the bytes of a queue, through tenq.submit
        with pytest.raises(tenq.QuotaExceededError) as info:
            with conn.transaction():
                tenq.tx.submit(conn, "T.q", {"pad": "x" * 40}, tenant="acme", queue=env.queue)
        assert info.value.field == "max_queued_bytes"
        assert f"queue {env.queue}" in info.value.message
        # within the quotas: made
        with conn.transaction():
            ids = tenq.tx.submit_many(conn, [tenq.JobSpec("T.q", {"i": i}, tenant="acme",
                                                          queue=env.queue) for i in range(2)])
    assert [_job(env.client, i).args for i in ids] == [{"i": 0}, {"i": 1}]
    assert env.rows("SELECT count(*) FROM app") == [(0,)]
    q = env.client.get_queue(env.queue)
    assert (q["submitted_total"], q["queued"]) == (2, 2)


def test_a_jobs_own_timeout_from_a_transaction_is_enforced_by_the_server(env: Env) -> None:
    env.client.set_queue(env.queue, lease_ms=1500)  # heartbeats every 0.5 s
    stopped: List[str] = []

    def stuck(ctx: tenq.Context) -> str:
        assert ctx.timeout_ms == 700
        try:
            ctx.sleep(30)
        except tenq.Stopped as e:
            stopped.append(e.reason)
            raise
        return "never"

    reg = tenq.Registry()
    reg.add("T.stuck", stuck)
    with env.connect() as conn:
        with conn.transaction():
            job_id = tenq.tx.submit(conn, "T.stuck", tenant="acme", queue=env.queue, max_attempts=1,
                                    timeout_ms=700)
            [other] = tenq.tx.submit_many(conn, [{"tenant": "acme", "queue": env.queue,
                                                  "type": "T.later", "timeout_ms": 900}])
    assert _job(env.client, job_id).timeout_ms == 700
    assert _job(env.client, other).timeout_ms == 900
    with _worker(env, reg, poll=1) as w:
        job = _wait(env.client, job_id)
        until(lambda: stopped == ["lost"])
    assert job.state == "dead"
    att = env.client.attempts(job_id)
    assert [a.outcome for a in att] == ["timed_out"]
    assert w.counts["succeeded"] == 0


# ---- complete and fail ---------------------------------------------------------------------


class Warnings(logging.Handler):
    """The worker's log records of level WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings() -> Iterator[Warnings]:
    h = Warnings()
    log = logging.getLogger("tenq")
    log.addHandler(h)
    try:
        yield h
    finally:
        log.removeHandler(h)


def test_complete_in_a_transaction(env: Env, warnings: Warnings) -> None:
    env.client.set_queue(env.queue, delivery="exactly-once", lease_ms=1200)
    calls: List[Tuple[int, int]] = []
    lock = threading.Lock()

    def charge(ctx: tenq.Context) -> Any:
        with lock:
            calls.append((ctx.id, ctx.attempt))
        with env.connect() as conn:
            with conn.transaction():
                conn.execute("INSERT INTO app (what) VALUES (%s)", (f"charged {ctx.args['n']}",))
                tenq.tx.complete(conn, ctx, result={"charged": ctx.args["n"]})
        assert ctx.tx_outcome == {"ok": True}
        if ctx.args["n"] == 1:
            # still running after the commit: its start and heartbeats (every
            # 0.4 s) are refused now, which is expected, not a lost lease
            time.sleep(1.0)
        return {"ignored": True}  # the transaction's result stays

    reg = tenq.Registry()
    reg.add("T.charge", charge)
    hs = env.client.submit_many([{"type": "T.charge", "args": {"n": n}} for n in (1, 2, 3)])
    with _worker(env, reg, concurrency=3) as w:
        results = [h.wait(30) for h in hs if not isinstance(h, tenq.TenqError)]
        time.sleep(1.5)  # more than the lease: nothing runs again
    assert results == [{"charged": 1}, {"charged": 2}, {"charged": 3}]
    assert sorted(calls) == sorted((h.id, 1) for h in hs if not isinstance(h, tenq.TenqError))
    assert (w.counts["succeeded"], w.counts["failed"], w.counts["refused"],
            w.counts["lost"]) == (3, 0, 0, 0)
    assert warnings.records == []
    for h in hs:
        assert not isinstance(h, tenq.TenqError)
        job = env.client.get(h.id)
        assert (job.state, job.attempts) == ("succeeded", 1)
    assert sorted(r[0] for r in env.rows("SELECT what FROM app")) == [
        "charged 1", "charged 2", "charged 3"]


def test_a_stale_token_raises_and_rolls_the_writes_back(env: Env) -> None:
    psycopg = env.psycopg
    env.client.set_queue(env.queue, delivery="exactly-once")
    h = env.client.submit("T.stale")
    first = env.client.lease([env.queue], max=1, wait_ms=5000)["jobs"][0]
    env.client.fail(first["id"], first["token"], "first attempt", retry_in_ms=0)
    second = env.client.lease([env.queue], max=1, wait_ms=5000)["jobs"][0]
    assert second["id"] == first["id"] == h.id and second["token"] != first["token"]
    with env.connect() as conn:
        with pytest.raises(psycopg.Error) as info:
            with conn.transaction():
                conn.execute("INSERT INTO app (what) VALUES ('stale')")
                tenq.tx.complete(conn, (first["id"], first["token"]), {"x": 1})
        assert info.value.sqlstate == "TQ002" and "not leased under token" in str(info.value)
        # the current token works
        with conn.transaction():
            conn.execute("INSERT INTO app (what) VALUES ('current')")
            tenq.tx.complete(conn, (second["id"], second["token"]))
    assert env.rows("SELECT what FROM app") == [("current",)]
    assert _wait(env.client, h.id).state == "succeeded"
    # the worker's own acknowledgement afterwards is answered as a success
    assert env.client.outcomes([{"id": h.id, "token": second["token"], "ok": True}]) == [
        {"id": h.id, "state": "succeeded"}]


def test_complete_needs_an_exactly_once_queue(env: Env) -> None:
    psycopg = env.psycopg
    env.client.submit("T.plain")
    job = env.client.lease([env.queue], max=1, wait_ms=5000)["jobs"][0]
    with env.connect() as conn:
        with pytest.raises(psycopg.Error) as info:
            with conn.transaction():
                tenq.tx.complete(conn, (job["id"], job["token"]))
    assert info.value.sqlstate == "TQ002" and "exactly-once" in str(info.value)


def test_fail_in_a_transaction_is_retried(env: Env, warnings: Warnings) -> None:
    env.client.set_queue(env.queue, delivery="exactly-once")
    attempts: List[int] = []

    def flaky(ctx: tenq.Context) -> Any:
        attempts.append(ctx.attempt)
        with env.connect() as conn:
            with conn.transaction():
                conn.execute("INSERT INTO app (what) VALUES (%s)", (f"attempt {ctx.attempt}",))
                if ctx.attempt == 1:
                    tenq.tx.fail(conn, (ctx.id, ctx.token), "card declined", retry_in_ms=0)
                else:
                    tenq.tx.complete(conn, ctx, {"attempt": ctx.attempt})
        return "the worker reports what the transaction said, not this"

    reg = tenq.Registry()
    reg.add("T.flaky", flaky)
    h = env.client.submit("T.flaky")
    with _worker(env, reg) as w:
        assert h.wait(30) == {"attempt": 2}
    assert attempts == [1, 2]
    job = env.client.get(h.id)
    assert (job.state, job.attempts) == ("succeeded", 2)
    assert (w.counts["succeeded"], w.counts["failed"], w.counts["refused"],
            w.counts["lost"]) == (1, 1, 0, 0)
    assert warnings.records == []
    assert env.rows("SELECT what FROM app ORDER BY id") == [("attempt 1",), ("attempt 2",)]


def test_the_outcome_of_a_context_reported_in_a_transaction() -> None:
    """What the worker sends after tenq.tx.complete or fail (no server)."""
    from tenq.handlers import outcome_of

    ctx = tenq.Context({"id": 7, "token": 9, "type": "T"})
    ctx.note_tx_outcome({"ok": True})
    assert outcome_of(ctx, lambda: {"x": 1}) == {"id": 7, "token": 9, "ok": True}
    ctx = tenq.Context({"id": 7, "token": 9, "type": "T"})
    ctx.note_tx_outcome({"ok": False, "error": "no", "retry_in_ms": 0})
    out: Dict[str, Any] = outcome_of(ctx, lambda: None)
    assert out == {"id": 7, "token": 9, "ok": False, "error": "no", "retry_in_ms": 0}


def test_the_readme_example_runs_as_written(env: Env, tmp_path: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import re

    with open(os.path.join(os.path.dirname(__file__), "..", "README.md")) as f:
        text = f.read()
    section = text.split("### In your database transaction", 1)[1].split("\n### ", 1)[0]
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", section, re.S)
               if b.startswith("# orders.py")]
    path = tmp_path / "orders_example.py"
    path.write_text(code)
    with env.connect() as conn:
        conn.execute("CREATE TABLE orders (id SERIAL PRIMARY KEY, item TEXT NOT NULL)")
        conn.execute("CREATE TABLE shipments (order_id INTEGER NOT NULL)")
    env.client.set_queue("orders", delivery="exactly-once")
    monkeypatch.setenv("DATABASE_URL", env.db_url)
    spec = importlib.util.spec_from_file_location("orders_example", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    try:
        order_id = mod.place_order("book")
        reg = tenq.Registry()
        reg.add("Order.ship", mod.ship)
        with tenq.Worker(env.client, queues=["orders"], handlers=reg, poll=2) as w:
            until(lambda: w.counts["succeeded"] == 1)
        assert env.rows("SELECT order_id FROM shipments") == [(order_id,)]
        (job,) = env.client.list_jobs(queue="orders").jobs
        assert (job.state, job.result, job.attempts) == ("succeeded", {"shipped": order_id}, 1)
        assert w.counts["refused"] == 0 and w.counts["lost"] == 0
    finally:
        mod.conn.close()


def test_an_event_sent_in_a_transaction_wakes_its_job_if_it_commits(env: Env) -> None:
    reg = tenq.Registry()
    reg.add("T.wait", lambda ctx: ctx.wait_for_event(f"paid-{ctx.id}"))
    h = env.client.submit("T.wait")
    with tenq.Worker(env.client, queues=[env.queue], handlers=reg, poll=0.2):
        until(lambda: bool(env.client.get(h.id).state == "waiting"))
        with env.connect() as conn:
            with conn.cursor() as cur:  # rolled back: never sent
                cur.execute("INSERT INTO app (what) VALUES ('not paid')")
                tenq.tx.send_event(cur, "acme", f"paid-{h.id}", {"amount": 0})
            conn.rollback()
            with conn.transaction():
                conn.execute("INSERT INTO app (what) VALUES ('paid')")
                n = tenq.tx.send_event(conn, "acme", f"paid-{h.id}", {"amount": 120})
        assert isinstance(n, int) and n > 0
        assert h.wait(30) == {"amount": 120}
    assert env.rows("SELECT what FROM app") == [("paid",)]
    assert env.rows("SELECT count(*) FROM tenq.event_inbox") == [(0,)]
    with pytest.raises(tenq.InvalidError):
        with env.connect() as conn:
            tenq.tx.send_event(conn, "acme", "k", object())
