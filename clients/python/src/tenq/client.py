# SPDX-License-Identifier: Apache-2.0
"""The client: submit, read, wait for, cancel and list jobs; the worker's
requests (lease, start, heartbeat, ack, fail, outcomes); a few admin calls
and a generic request for the rest of the protocol (docs/API.md)."""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)
from urllib.parse import quote, urlencode

from tenq import _mode
from tenq._backpressure import DEFAULT_BUDGET, RETRIED, Backpressure
from tenq._client_base import (
    TX_TAKE_IN,  # documented as tenq.client.TX_TAKE_IN
    ClientBase,
    WaitLoop,
    any_request,
    cancel_result,
    client_env,
)
from tenq._keys import HEADER, REPLAYED_HEADER
from tenq._shaping import (
    _BATCH_BYTES,
    _CALLBACK_FIELDS,
    _NOT_IN_BATCH,
    BATCH_MAX,
    JobLike,
    SubmitHook,
    TraceHook,
    _batch_items,
    _check_json,
    _dumps_named,
    _encode_chunk,
    _has_index,
    _place,
    _resolve_indexes,
)
from tenq._transport import Transport
from tenq._work_api import WorkerRequests, dumps
from tenq.errors import (
    ConflictError,
    InvalidError,
    NotFoundError,
    ProtocolError,
    TenqError,
)
from tenq.batches import CALLBACK_NAMES, Batch, BatchCreated, BatchPage
from tenq.steps import EventResult, Step, steps_from_json
from tenq.jobs import (
    CancelResult,
    Dependency,
    Handle,
    Job,
    JobPage,
    JobSpec,
    KeyLike,
    OnParentFailure,
    Parents,
    RateKeyLike,
    RunAt,
)
from tenq.queues import KeyPage, KeySetting, QueueInfo, TenantInfo
from tenq.schedules import Attempt, Missed, Schedule

DEFAULT_SERVER = "http://127.0.0.1:7070"
def servers_from_env(servers: Union[str, Sequence[str], None]) -> List[str]:
    """The servers given, else TENQ_SERVER (comma-separated), else
    http://127.0.0.1:7070."""
    if servers is None:
        servers = os.environ.get("TENQ_SERVER") or DEFAULT_SERVER
    if isinstance(servers, str):
        servers = servers.split(",")
    out = [s.strip() for s in servers if s.strip()]
    if not out:
        raise InvalidError("no server URL", field="servers")
    return out


class Client(ClientBase[Transport], WorkerRequests):
    """A tenq client. Thread-safe: it keeps a small pool of keep-alive
    connections. ``servers`` is a URL, a comma-separated list or a list
    (default: TENQ_SERVER, then http://127.0.0.1:7070); ``token`` defaults
    to TENQ_TOKEN. ``tenant`` and ``queue`` are the defaults of submits that
    name none. ``failover_budget`` is how long (seconds) a request keeps
    trying servers that do not answer before ConnectError. ``trace`` gives
    the traceparent of the caller's current span; every job submitted
    without one carries it. ``on_submit`` hooks see (and may change) every
    job body before it is sent.

    ``https://`` servers are verified against the system's CAs, or only
    those of ``ca_file`` (default: TENQ_CA_FILE); ``client_cert`` and
    ``client_key`` (TENQ_CLIENT_CERT, TENQ_CLIENT_KEY) are PEM files of a
    client certificate for a server that takes them (mutual TLS: the
    certificate stands for a token). A certificate that does not verify,
    or one the server refuses, is TLSError, at once.

    Every submit request carries an ``Idempotency-Key`` header made for it
    before its first attempt and sent again with every retry (a broken
    connection, another server): the server answers a copy it has seen with
    the first answer and makes nothing twice.

    A submit request refused with 429 ``overloaded`` (the server's memory
    budget) or ``quota_exceeded`` (a tenant's or a queue's ``max_queued`` /
    ``max_queued_bytes``) made nothing: it is sent again, under the same
    request key, after the server's Retry-After (1 s), until
    ``backpressure_budget`` seconds (default 60; 0: never) have passed since
    its first refusal; then OverloadedError / QuotaExceededError is raised.
    This holds for ``submit``, each request of ``submit_many``,
    ``create_batch`` and ``add_to_batch``."""

    _t: Transport

    def __init__(
        self,
        servers: Union[str, Sequence[str], None] = None,
        token: Optional[str] = None,
        *,
        tenant: Optional[str] = None,
        queue: Optional[str] = None,
        connect_timeout: float = 5.0,
        request_timeout: float = 30.0,
        failover_budget: float = 15.0,
        backpressure_budget: float = DEFAULT_BUDGET,
        trace: Optional[TraceHook] = None,
        on_submit: Sequence[SubmitHook] = (),
        ca_file: Optional[str] = None,
        client_cert: Optional[str] = None,
        client_key: Optional[str] = None,
    ) -> None:
        token, ca_file, client_cert, client_key = client_env(token, ca_file, client_cert, client_key)
        self._token = token
        self._settings(backpressure_budget, tenant, queue, trace, on_submit)
        self._t = Transport(
            servers_from_env(servers),
            token,
            connect_timeout,
            request_timeout,
            failover_budget,
            ca_file=ca_file,
            cert_file=client_cert,
            key_file=client_key,
        )

    def copy(self) -> "Client":
        """A client with the same settings and servers (the leaders learnt
        included) but connections of its own."""
        out = Client(
            self._t.servers,
            self._token,
            tenant=self.tenant,
            queue=self.queue,
            connect_timeout=self._t.connect_timeout,
            request_timeout=self._t.request_timeout,
            failover_budget=self._t.failover_budget,
            backpressure_budget=self.backpressure_budget,
            trace=self.trace,
            on_submit=self.on_submit,
            ca_file=self._t.ca_file,
            client_cert=self._t.cert_file,
            client_key=self._t.key_file,
        )
        out._t._use(self._t.current)
        return out

    def close(self) -> None:
        """Closes the idle connections (the client stays usable)."""
        self._t.close()

    def interrupt(self, min_age: float = 0.0) -> bool:
        """Cuts requests in flight for ``min_age`` seconds or more and makes
        every later request fail: the end of this client (a worker stopping
        uses it on its long poll). True when nothing is left in flight."""
        return self._t.interrupt(min_age)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- submitting -------------------------------------------------------------------------

    def submit(
        self,
        type: str,
        args: Any = None,
        *,
        queue: Optional[str] = None,
        tenant: Optional[str] = None,
        key: Optional[str] = None,
        unique_key: Optional[str] = None,
        unique: bool = False,
        idempotency_key: Optional[str] = None,
        priority: Optional[int] = None,
        run_at: Optional[RunAt] = None,
        max_attempts: Optional[int] = None,
        score: Optional[float] = None,
        traceparent: Optional[str] = None,
        timeout_ms: Optional[int] = None,
        depends_on: Optional[Sequence[Dependency]] = None,
        on_parent_failure: Optional[OnParentFailure] = None,
        concurrency_keys: Optional[Sequence[KeyLike]] = None,
        rate_keys: Optional[Sequence[RateKeyLike]] = None,
        debounce_ms: Optional[int] = None,
        debounce_max_ms: Optional[int] = None,
        expire_at: Optional[RunAt] = None,
        start_within_ms: Optional[int] = None,
    ) -> Handle[Any]:
        """Submits one job; its handle. ``timeout_ms``: the server fails an
        attempt still running that long after its lease (default: the
        queue's). ``depends_on``: job ids (or handles) the job waits for
        (state ``waiting``) until each succeeded; ``on_parent_failure``:
        ``cancel`` (default) or ``run`` when a parent dies or is cancelled
        (docs/SEMANTICS.md, "Dependencies"). ``concurrency_keys``,
        ``rate_keys``, ``debounce_ms``, ``debounce_max_ms``, ``expire_at``,
        ``start_within_ms``: as on ``JobSpec`` (docs/SEMANTICS.md,
        "Concurrency keys" to "Expiry"); a debounced submit's handle says
        ``debounced``. Raises the typed error of a refusal
        (InvalidError names the field), before anything is sent when the job
        is wrong here already (args that are not JSON, no queue)."""
        body = self._single(
            JobSpec(
                type=type,
                args=args,
                queue=queue,
                tenant=tenant,
                key=key,
                unique_key=unique_key,
                unique=unique,
                idempotency_key=idempotency_key,
                priority=priority,
                run_at=run_at,
                max_attempts=max_attempts,
                score=score,
                traceparent=traceparent,
                timeout_ms=timeout_ms,
                depends_on=depends_on,
                on_parent_failure=on_parent_failure,
                concurrency_keys=concurrency_keys,
                rate_keys=rate_keys,
                debounce_ms=debounce_ms,
                debounce_max_ms=debounce_max_ms,
                expire_at=expire_at,
                start_within_ms=start_within_ms,
            )
        )
        taken = self._test_mode_submit(body)
        if taken is not None:
            return taken
        ans, replayed = self._post_jobs(dumps(body))
        return self._handle(ans, replayed)

    def submit_many(
        self, jobs: Iterable[Union[JobSpec, Mapping[str, Any]]]
    ) -> List[Union[Handle[Any], TenqError]]:
        """Submits jobs in batches of up to 10,000 a request; one answer per
        job, in order: its handle, or the typed error that refused it alone
        (a job wrong here already is refused before anything is sent, and the
        others still go). Each request carries a request key of its own, so
        the library's retries make no job twice. A whole request that fails
        raises its error: the batches before it were made (calling again
        makes them again, unless the jobs carry an ``idempotency_key``).

        A job's ``depends_on`` may name an earlier job of the list by
        ``tenq.Index(i)`` (its position in ``jobs``): when that job is sent
        in an earlier request, its id is sent instead; when it was refused,
        the job naming it is refused too (ConflictError, field
        ``depends_on``), as the server does within one request."""
        out, bodies, where = self._shape_all(jobs)
        chunks = [
            (bodies[at : at + BATCH_MAX], where[at : at + BATCH_MAX])
            for at in range(0, len(bodies), BATCH_MAX)
        ]
        sink = _mode.active()
        if any(_has_index(b) for b in bodies):
            # one request after another: a reference to a job of an earlier
            # request becomes its id
            for chunk, idx in chunks:
                chunk, idx, _ = _encode_chunk(chunk, idx, out)
                chunk, idx = _resolve_indexes(chunk, idx, out)
                data = dumps({"jobs": chunk})
                if not chunk:
                    continue
                if sink is not None:
                    for i, ans in zip(idx, sink.submit(chunk)):
                        out[i] = ans
                else:
                    _place(self._send_batch(chunk, data), idx, out, self._handle)
            return out
        if sink is not None:
            for chunk, idx in chunks:
                chunk, idx, _ = _encode_chunk(chunk, idx, out)
                for i, ans in zip(idx, sink.submit(chunk)):
                    out[i] = ans
            return out
        if len(chunks) == 1:
            chunk, idx, data = _encode_chunk(chunks[0][0], chunks[0][1], out)
            if chunk:
                _place(self._send_batch(chunk, data), idx, out, self._handle)
            return out
        # One request at a time (so that ids follow the order of the jobs),
        # but the next batch is encoded and the last one's handles made
        # while a request is in flight.
        with ThreadPoolExecutor(1, thread_name_prefix="tenq-submit") as pool:
            prev: Optional[Tuple["Future[List[Tuple[Dict[str, Any], bool]]]", List[int]]] = None
            for chunk, idx in chunks:
                chunk, idx, data = _encode_chunk(chunk, idx, out)
                items = prev[0].result() if prev is not None else None
                cur = (pool.submit(self._send_batch, chunk, data), idx) if chunk else None
                if prev is not None and items is not None:
                    _place(items, prev[1], out, self._handle)
                prev = cur
            if prev is not None:
                _place(prev[0].result(), prev[1], out, self._handle)
        return out

    def _post_jobs(self, data: bytes) -> Tuple[Any, bool]:
        """POST /v1/jobs under a new request key, the same on every retry;
        the answer, and whether the server replayed it (a copy it had
        already acted on)."""
        return self._send_keyed("/v1/jobs", data)

    def _send_keyed(self, path: str, data: bytes) -> Tuple[Any, bool]:
        """POSTs a submit request under a new request key, the same on every
        copy: sent again after a 429 overloaded or quota_exceeded (nothing
        was made) for up to ``backpressure_budget`` seconds. The answer,
        and whether the server replayed it."""
        key = {HEADER: self._keys.make()}
        waits = Backpressure(self.backpressure_budget)
        while True:
            try:
                ans, headers = self._t.send("POST", path, data, safe=True, headers=key)
                return ans, headers.get(REPLAYED_HEADER) == "true"
            except RETRIED as e:
                pause = waits.pause(e)
            time.sleep(pause)

    def _send_batch(
        self, bodies: List[Dict[str, Any]], data: bytes
    ) -> List[Tuple[Dict[str, Any], bool]]:
        """Sends a batch (split when its body is too large, each part a
        request of its own); the answer's items, one per job, each with
        whether its request was replayed."""
        if len(data) > _BATCH_BYTES and len(bodies) > 1 and not any(map(_has_index, bodies)):
            half = len(bodies) // 2
            first, second = bodies[:half], bodies[half:]
            return self._send_batch(first, dumps({"jobs": first})) + self._send_batch(
                second, dumps({"jobs": second})
            )
        ans, replayed = self._post_jobs(data)
        return [(item, replayed) for item in _batch_items(ans, len(bodies))]

    def _handle(self, ans: Any, replayed: bool = False) -> Handle[Any]:
        return Handle._of_answer(self, ans, replayed)

    # ---- reading ----------------------------------------------------------------------------

    def get(self, job_id: int) -> Job:
        """The job (another tenant's is NotFoundError)."""
        return Job.from_json(self._t.request("GET", f"/v1/jobs/{int(job_id)}", safe=True))

    def wait(self, job_id: int, timeout: float = 30.0) -> Job:
        """The job once finished (succeeded, cancelled, dead), or as it is
        after ``timeout`` seconds, in long polls of at most the server's
        --max-wait. A merged job is followed to the job that took its
        payload (``merged_into``), which is then waited for. A job made in
        a transaction (``tenq.tx.submit``: an odd id) that the server has
        not taken in yet (it does within milliseconds of the commit) is
        looked for again for up to 5 s (``TX_TAKE_IN``) before NotFoundError."""
        w = WaitLoop(job_id, timeout)
        while w.job is None:
            path, left = w.poll()
            try:
                w.answered(self._t.request("GET", path, safe=True, wait=left))
            except NotFoundError as e:
                w.not_found(e)
            if w.pause:
                time.sleep(w.pause)
        return w.job

    def cancel(self, job_id: int) -> CancelResult:
        """Cancels a job: cancelled at once, or (leased, running) marked so
        that its worker stops it. A finished or dead job: ConflictError."""
        ans = self._t.request("POST", f"/v1/jobs/{int(job_id)}/cancel", safe=True)
        return cancel_result(ans, job_id)

    def list_jobs(
        self,
        *,
        tenant: Optional[str] = None,
        queue: Optional[str] = None,
        type: Optional[str] = None,
        state: Optional[str] = None,
        key: Optional[str] = None,
        after_id: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> JobPage:
        """One page of jobs, newest first (default 50, at most 1,000)."""
        return self._job_page(
            "/v1/jobs",
            "list",
            tenant=tenant,
            queue=queue,
            type=type,
            state=state,
            key=key,
            after_id=after_id,
            limit=limit,
        )

    def _job_page(self, path: str, what: str, **params: Any) -> JobPage:
        """GET path with the params that are not None: a page of jobs."""
        query = {k: v for k, v in params.items() if v is not None}
        ans = self._t.request("GET", path + ("?" + urlencode(query) if query else ""), safe=True)
        if not isinstance(ans, dict) or not isinstance(ans.get("jobs"), list):
            raise ProtocolError(f"the {what} answer holds no jobs")
        nxt = ans.get("next")
        return JobPage(
            [Job.from_json(j) for j in ans["jobs"]],
            nxt if isinstance(nxt, (int, str)) else None,
        )

    def iter_jobs(self, **filters: Any) -> Iterator[Job]:
        """Every job matching the filters of list_jobs, page after page."""
        after: Optional[int] = filters.pop("after_id", None)
        while True:
            page = self.list_jobs(after_id=after, **filters)
            yield from page.jobs
            if page.next is None:
                return
            after = page.next

    # ---- the morgue ---------------------------------------------------------------------------

    def morgue(
        self,
        *,
        tenant: Optional[str] = None,
        queue: Optional[str] = None,
        type: Optional[str] = None,
        sort: Optional[str] = None,
        after: Optional[Union[int, str]] = None,
        limit: Optional[int] = None,
    ) -> JobPage:
        """One page of dead jobs (newest death first, or ``sort="id"``);
        pass ``next`` as ``after`` for the following page."""
        return self._job_page(
            "/v1/morgue",
            "morgue",
            tenant=tenant,
            queue=queue,
            type=type,
            sort=sort,
            after=after,
            limit=limit,
        )

    def requeue(self, job_id: int) -> Dict[str, Any]:
        """Takes a dead job out of the morgue: attempts reset, run now."""
        ans = self._t.request("POST", f"/v1/morgue/{int(job_id)}/requeue", safe=False)
        return ans if isinstance(ans, dict) else {}

    # ---- the rest -----------------------------------------------------------------------------

    def get_queue(self, name: str) -> QueueInfo:
        """GET /v1/queues/{name}: the queue's settings, pauses and counts."""
        return self._queue_call("GET", name, "")

    def set_queue(self, name: str, **settings: Any) -> QueueInfo:
        """PUT /v1/queues/{name} with settings of docs/SEMANTICS.md
        (``lease_ms=``, ``max_attempts=``, ``timeout_ms=``, ``paused=``,
        ``rate=``, ``tenant_rate=``, ``rate_period_ms=``, ``rate_burst=``,
        ``max_queued=``, ``max_queued_bytes=``, ...; None clears a limit,
        0 a ``max_queued_bytes``); the queue as it is then."""
        return self._queue_call("PUT", name, "", settings)

    def pause_queue(self, name: str, tenant: Optional[str] = None) -> QueueInfo:
        """Pauses the queue whole (admin), or only ``tenant``'s jobs in it
        (a tenant token: its own tenant when None): nothing of it is leased
        until resumed; submits are still taken, leased jobs run to their
        end. The queue as it is then (``paused``, ``paused_tenants``)."""
        return self._queue_call("POST", name, "/pause", _tenant_body(tenant))

    def resume_queue(self, name: str, tenant: Optional[str] = None) -> QueueInfo:
        """Undoes pause_queue (the same ``tenant``): its jobs may be leased
        at once. The queue as it is then."""
        return self._queue_call("POST", name, "/resume", _tenant_body(tenant))

    def _queue_call(self, method: str, name: str, tail: str, body: Any = None) -> QueueInfo:
        path = f"/v1/queues/{quote(name, safe='')}{tail}"
        data = None if body is None else dumps(body)
        # every one of these may be sent again: the same request sets the same state
        ans = self._t.request(method, path, data, safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the queue answer is not a JSON object")
        return cast(QueueInfo, ans)

    def get_tenant(self, name: str) -> TenantInfo:
        """GET /v1/tenants/{name}: the tenant's settings and counts."""
        ans = self._t.request("GET", f"/v1/tenants/{quote(name, safe='')}", safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the tenant answer is not a JSON object")
        return cast(TenantInfo, ans)

    def set_tenant(self, name: str, **settings: Any) -> TenantInfo:
        """PUT /v1/tenants/{name} with ``slots=``, ``weight=``, ``rate=``,
        ``rate_period_ms=``, ``rate_burst=``, ``max_queued=``,
        ``max_queued_bytes=`` (None: unlimited, no limit; 0 bytes: none);
        the tenant as it is then."""
        path = f"/v1/tenants/{quote(name, safe='')}"
        ans = self._t.request("PUT", path, dumps(settings), safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the tenant answer is not a JSON object")
        return cast(TenantInfo, ans)

    # ---- keyed limits -------------------------------------------------------------------------

    def keys(
        self,
        tenant: Optional[str] = None,
        key: Optional[str] = None,
        *,
        at_limit: bool = False,
        limit: Optional[int] = None,
    ) -> KeyPage:
        """GET /v1/keys: the keys resident jobs name (docs/SEMANTICS.md,
        "Concurrency keys"), those at their limit first; ``at_limit``: only
        those; ``key`` (with ``tenant``): that one key."""
        query: Dict[str, Any] = {}
        t = tenant if tenant is not None else self.tenant
        if t is not None:
            query["tenant"] = t
        if key is not None:
            query["key"] = key
        if at_limit:
            query["at_limit"] = "true"
        if limit is not None:
            query["limit"] = int(limit)
        path = "/v1/keys" + ("?" + urlencode(query) if query else "")
        ans = self._t.request("GET", path, safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the keys answer is not a JSON object")
        return cast(KeyPage, ans)

    def set_key_setting(
        self,
        tenant: str,
        key: str,
        *,
        concurrency: Optional[int] = None,
        rate: Optional[int] = None,
        rate_period_ms: Optional[int] = None,
        rate_burst: Optional[int] = None,
    ) -> KeySetting:
        """PUT /v1/key-settings (admin): the settings of ``key`` of
        ``tenant``, or (a key ending in ``*``) of every key beginning with
        the rest, whole (None: the jobs' own). The setting as stored."""
        body: Dict[str, Any] = {
            "tenant": tenant,
            "key": key,
            "concurrency": concurrency,
            "rate": rate,
            "rate_burst": rate_burst,
        }
        if rate_period_ms is not None:
            body["rate_period_ms"] = rate_period_ms
        ans = self._t.request("PUT", "/v1/key-settings", dumps(body), safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the key setting answer is not a JSON object")
        return cast(KeySetting, ans)

    def key_settings(self, tenant: Optional[str] = None) -> List[KeySetting]:
        """GET /v1/key-settings: the key settings (of ``tenant``)."""
        t = tenant if tenant is not None else self.tenant
        path = "/v1/key-settings" + ("?" + urlencode({"tenant": t}) if t is not None else "")
        ans = self._t.request("GET", path, safe=True)
        rows = ans.get("settings") if isinstance(ans, dict) else None
        if not isinstance(rows, list):
            raise ProtocolError("the key settings answer has no settings list")
        return [cast(KeySetting, r) for r in rows if isinstance(r, dict)]

    def delete_key_setting(self, tenant: str, key: str) -> None:
        """DELETE /v1/key-settings (admin); NotFoundError when there is none."""
        query = urlencode({"tenant": tenant, "key": key})
        self._t.request("DELETE", f"/v1/key-settings?{query}", safe=True)

    # ---- schedules and attempts ----------------------------------------------------------------

    def put_schedule(
        self,
        name: str,
        cron: str,
        type: str,
        args: Any = None,
        *,
        queue: Optional[str] = None,
        tenant: Optional[str] = None,
        timezone: str = "UTC",
        missed: Missed = "skip",
        paused: bool = False,
        key: Optional[str] = None,
        priority: int = 0,
        unique_key: Optional[str] = None,
        unique: bool = False,
        max_attempts: Optional[int] = None,
        timeout_ms: Optional[int] = None,
    ) -> Schedule:
        """PUT /v1/schedules/{name}: creates the schedule, or replaces it
        whole (its created_at and last tick stay). ``cron``: five fields,
        ``@hourly``-style names or ``@every 30s``, wall-clock times in
        ``timezone`` (an IANA name); ``missed``: ``skip``, ``once`` or
        ``each``. Each tick submits a job of ``type`` with ``args`` and the
        submit options (``queue`` and ``tenant`` default to the client's).
        A bad expression, zone or job field raises InvalidError naming it
        (``cron``, ``timezone``, ``job.timeout_ms``, ...) and changes
        nothing."""
        q = queue if queue is not None else self.queue
        if not q:
            raise InvalidError("a schedule's job needs a queue (or the client's)", field="queue")
        job: Dict[str, Any] = {"queue": q, "type": type, "args": {} if args is None else args}
        t = tenant if tenant is not None else self.tenant
        if t is not None:
            job["tenant"] = t
        for fname, value in (
            ("key", key),
            ("unique_key", unique_key),
            ("max_attempts", max_attempts),
            ("timeout_ms", timeout_ms),
        ):
            if value is not None:
                job[fname] = value
        if priority:
            job["priority"] = priority
        if unique:
            job["unique"] = True
        body = {"cron": cron, "timezone": timezone, "missed": missed, "paused": paused, "job": job}
        try:
            data = dumps(body)
        except (TypeError, ValueError) as e:
            raise InvalidError(f"args are not JSON-serialisable: {e}", field="job.args") from None
        # a PUT of the whole schedule sets the same state when sent again
        return self._schedule_call("PUT", name, "", data)

    def get_schedule(self, name: str) -> Schedule:
        """GET /v1/schedules/{name}: the schedule with its next five runs
        (NotFoundError when there is none)."""
        return self._schedule_call("GET", name, "")

    def list_schedules(
        self, tenant: Optional[str] = None, runs: Optional[int] = None
    ) -> List[Schedule]:
        """GET /v1/schedules: every schedule the token sees (of ``tenant``
        only, when given), by name, each with its next ``runs`` ticks (0-5,
        the server's default 1) in ``next_runs``."""
        query = {k: v for k, v in (("tenant", tenant), ("runs", runs)) if v is not None}
        path = "/v1/schedules" + ("?" + urlencode(query) if query else "")
        ans = self._t.request("GET", path, safe=True)
        items = ans.get("schedules") if isinstance(ans, dict) else None
        if not isinstance(items, list):
            raise ProtocolError("the schedules answer has no list")
        return [Schedule.from_json(x) for x in items]

    def delete_schedule(self, name: str) -> bool:
        """DELETE /v1/schedules/{name}: True once it is gone (the jobs it
        made stay); NotFoundError when there was none."""
        path = f"/v1/schedules/{quote(name, safe='')}"
        ans = self._t.request("DELETE", path, safe=True)
        return isinstance(ans, dict) and ans.get("deleted") is True

    def pause_schedule(self, name: str) -> Schedule:
        """Stops the schedule's ticks until resume_schedule."""
        return self._schedule_call("POST", name, "/pause")

    def resume_schedule(self, name: str) -> Schedule:
        """Resumes a paused schedule; the ticks missed meanwhile follow its
        ``missed`` policy."""
        return self._schedule_call("POST", name, "/resume")

    def _schedule_call(
        self, method: str, name: str, tail: str, data: Optional[bytes] = None
    ) -> Schedule:
        path = f"/v1/schedules/{quote(name, safe='')}{tail}"
        return Schedule.from_json(self._t.request(method, path, data, safe=True))

    # ---- workflows: dependencies and batches ------------------------------------------------

    def parents(self, job_id: int) -> Parents:
        """GET /v1/jobs/{id}/parents: the job's parents in the order it named
        them, each with its state and result (what a child reads before it
        runs), and its children (the first 1,000) with their count."""
        return Parents.from_json(
            self._t.request("GET", f"/v1/jobs/{int(job_id)}/parents", safe=True)
        )

    def create_batch(
        self,
        jobs: Iterable[JobLike],
        *,
        on_complete: Optional[JobLike] = None,
        on_success: Optional[JobLike] = None,
        on_death: Optional[JobLike] = None,
        tenant: Optional[str] = None,
    ) -> BatchCreated:
        """POST /v1/batches: a batch of ``jobs`` (1 to 10,000; JobSpecs or
        mappings, whose ``depends_on`` may name earlier ones by Index(i))
        and its callbacks, each a job (``queue`` defaults to the client's;
        ``args``, ``key``, ``priority``, ``max_attempts``, ``timeout_ms``)
        the server submits once: ``on_complete`` when every job finished,
        ``on_success`` when every job succeeded, ``on_death`` at the first
        death. All of it is checked before anything is made: InvalidError
        names the field (``jobs[3].type``, ``on_death.queue``)."""
        bodies = self._batch_bodies(jobs)
        body: Dict[str, Any] = {"jobs": bodies}
        t = tenant if tenant is not None else self.tenant
        if t is not None:
            body["tenant"] = t
        for name, spec in zip(CALLBACK_NAMES, (on_complete, on_success, on_death)):
            if spec is not None:
                body[name] = self._callback_body(name, spec)
        sink = _mode.active()
        if sink is not None:
            batch_id = sink.new_batch()
            for b in bodies:
                b["batch"] = batch_id
            return BatchCreated(batch_id, self._sink_handles(sink.submit(bodies)))
        ans, replayed = self._send_keyed("/v1/batches", _dumps_named(body))
        items = ans.get("jobs") if isinstance(ans, dict) else None
        if not isinstance(ans, dict) or type(ans.get("id")) is not int or not isinstance(items, list):
            raise ProtocolError(f"the batch answer has no id or jobs: {str(ans)[:200]}")
        return BatchCreated(ans["id"], [self._handle(x, replayed) for x in items])

    def add_to_batch(self, batch_id: int, jobs: Iterable[JobLike]) -> List[Handle[Any]]:
        """POST /v1/batches/{id}/jobs: adds jobs (1 to 10,000) to an open
        batch (fan-out, typically from one of its running jobs: see
        Context.add_to_batch); a handle per job. BatchClosedError once the
        batch is closed, NotFoundError when there is none; nothing is added
        then."""
        bodies = self._batch_bodies(jobs)
        sink = _mode.active()
        if sink is not None:
            for b in bodies:
                b["batch"] = int(batch_id)
            return self._sink_handles(sink.submit(bodies))
        ans, replayed = self._send_keyed(
            f"/v1/batches/{int(batch_id)}/jobs", _dumps_named({"jobs": bodies})
        )
        items = ans.get("jobs") if isinstance(ans, dict) else None
        if not isinstance(items, list):
            raise ProtocolError(f"the batch answer has no jobs: {str(ans)[:200]}")
        return [self._handle(x, replayed) for x in items]

    def batch(self, batch_id: int) -> Batch:
        """GET /v1/batches/{id}: the batch's status, counts, progress and
        callbacks (NotFoundError when there is none)."""
        return Batch.from_json(self._t.request("GET", f"/v1/batches/{int(batch_id)}", safe=True))

    get_batch = batch

    def list_batches(
        self,
        *,
        tenant: Optional[str] = None,
        limit: Optional[int] = None,
        before: Optional[int] = None,
    ) -> BatchPage:
        """GET /v1/batches: a page of batches, newest first (``limit``
        1-1,000, default 100); pass ``next_before`` as ``before``."""
        query = {
            k: v for k, v in (("tenant", tenant), ("limit", limit), ("before", before))
            if v is not None
        }
        path = "/v1/batches" + ("?" + urlencode(query) if query else "")
        ans = self._t.request("GET", path, safe=True)
        items = ans.get("batches") if isinstance(ans, dict) else None
        if not isinstance(items, list):
            raise ProtocolError("the batches answer has no list")
        nxt = ans.get("next_before")
        return BatchPage(
            [Batch.from_json(b) for b in items],
            nxt if isinstance(nxt, int) and not isinstance(nxt, bool) else None,
        )

    def _batch_bodies(self, jobs: Iterable[JobLike]) -> List[Dict[str, Any]]:
        """The jobs of a batch request, shaped; InvalidError naming
        ``jobs[i].field`` for one wrong here already."""
        bodies: List[Dict[str, Any]] = []
        for i, spec in enumerate(jobs):
            try:
                body = self._shape(spec)
                for name in _NOT_IN_BATCH:
                    if body.get(name):
                        raise InvalidError(f"a batch's job takes no {name}", field=name)
                    body.pop(name, None)
                _check_json(body)
            except TenqError as e:
                if e.field is not None:
                    e.field = f"jobs[{i}].{e.field}"
                raise
            bodies.append(body)
        if not bodies:
            raise InvalidError("a batch needs at least one job", field="jobs")
        self._finish(bodies)
        return bodies

    def _callback_body(self, name: str, spec: JobLike) -> Dict[str, Any]:
        try:
            body = self._shape(spec)
            body.pop("tenant", None)
            body.pop("unique", None)
            unknown = sorted(k for k in body if k not in _CALLBACK_FIELDS)
            if unknown:
                raise InvalidError(f"a callback takes no {unknown[0]}", field=unknown[0])
            _check_json(body)
        except TenqError as e:
            if e.field is not None:
                e.field = f"{name}.{e.field}"
            raise
        self._finish([body])
        return body

    def _sink_handles(self, answers: List[Union[Handle[Any], TenqError]]) -> List[Handle[Any]]:
        out: List[Handle[Any]] = []
        for a in answers:
            if isinstance(a, TenqError):
                raise a
            out.append(a)
        return out

    def attempts(self, job_id: int) -> List[Attempt]:
        """GET /v1/jobs/{id}/attempts: every attempt of the job, oldest
        first, the one under way last (``outcome`` ``leased`` or
        ``running``); [] for a job never leased."""
        ans = self._t.request("GET", f"/v1/jobs/{int(job_id)}/attempts", safe=True)
        items = ans.get("attempts") if isinstance(ans, dict) else None
        if not isinstance(items, list):
            raise ProtocolError("the attempts answer has no list")
        return [Attempt.from_json(x) for x in items]

    # ---- durable steps and events (docs/SEMANTICS.md, "Durable steps") ----------------------

    def steps(self, job_id: int) -> List[Step]:
        """GET /v1/jobs/{id}/steps: the steps the job's handler stored, in
        order, with their results."""
        return steps_from_json(
            self._t.request("GET", f"/v1/jobs/{int(job_id)}/steps", safe=True)
        )

    def send_event(
        self, key: str, payload: Any = None, *, tenant: Optional[str] = None
    ) -> EventResult:
        """POST /v1/events: every job of the tenant (the client's by default)
        whose handler waits for ``key`` goes on with ``payload`` (JSON) as
        its wait's result; when none waits the server keeps the event for
        its --event-window. Sent with a request key of its own: sent again
        after a lost answer, it delivers nothing twice."""
        body: Dict[str, Any] = {"key": key, "payload": payload}
        tenant = tenant if tenant is not None else self.tenant
        if tenant is not None:
            body["tenant"] = tenant
        _check_json(body)
        ans, _ = self._t.send(
            "POST", "/v1/events", dumps(body), safe=True, headers={HEADER: self._keys.make()}
        )
        return EventResult.from_json(ans)

    def _store_step(self, job_id: int, body: Dict[str, Any]) -> Dict[str, Any]:
        """POST /v1/jobs/{id}/steps (a worker's, under the body's token): the
        answer. Safe to send again: a name is stored once a lease."""
        ans = self._t.request("POST", f"/v1/jobs/{int(job_id)}/steps", dumps(body), safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the step's answer is not an object")
        return ans

    def health(self) -> Dict[str, Any]:
        """GET /healthz of the server tried first: status, role, leader."""
        ans = self._t.request("GET", "/healthz", safe=True)
        return ans if isinstance(ans, dict) else {}

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """Any other request of the protocol (tenants, queues, the morgue,
        tokens, stats): the parsed answer of a 2xx, else its typed error.
        Only GET and HEAD are sent again after a connection broke."""
        m, data, safe = any_request(method, path, body)
        return self._t.request(m, path, data, safe=safe)


def _tenant_body(tenant: Optional[str]) -> Optional[Dict[str, str]]:
    """The body of a pause or resume: one tenant's jobs, or (None) the
    whole queue (a tenant token: its own tenant)."""
    return None if tenant is None else {"tenant": tenant}
