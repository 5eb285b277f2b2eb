# SPDX-License-Identifier: Apache-2.0
"""The asyncio client: submit jobs and wait for them from an event loop
(FastAPI, aiohttp, any asyncio application) without blocking it.

    client = tenq.AsyncClient(tenant="acme", queue="reports")
    h = await client.submit("Report.build", {"id": 42})
    print(await h.wait(30))

Standard library only (asyncio streams). It follows the leader and fails
over as the sync Client does, with the same rules of what is sent again,
and every submit request carries an ``Idempotency-Key`` made once for it
and sent with every copy. Any number of coroutines may share one client;
it belongs to the event loop it is first used on."""

from __future__ import annotations

import asyncio
from typing import (
    Any,
    Generic,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from tenq import _mode
from tenq._aio_transport import AsyncTransport
from tenq._backpressure import DEFAULT_BUDGET, RETRIED, Backpressure
from tenq._client_base import ClientBase, WaitLoop, any_request, cancel_result, client_env
from tenq._keys import HEADER, REPLAYED_HEADER
from tenq._shaping import (
    BATCH_MAX,
    SubmitHook,
    TraceHook,
    _batch_items,
    _encode_chunk,
    _has_index,
    _place,
    _resolve_indexes,
)
from tenq._work_api import dumps
from tenq.client import servers_from_env
from tenq.errors import NotFoundError, TenqError
from tenq.jobs import (
    CancelResult,
    Dependency,
    Handle,
    Job,
    JobSpec,
    KeyLike,
    OnParentFailure,
    RateKeyLike,
    RunAt,
    _HandleBase,
    job_outcome,
)

R = TypeVar("R")


class AsyncJobBackend(Protocol):
    """Where an AsyncHandle asks about its job."""

    async def get(self, job_id: int) -> Job: ...

    async def wait(self, job_id: int, timeout: float = 30.0) -> Job: ...

    async def cancel(self, job_id: int) -> CancelResult: ...


class AsyncHandle(_HandleBase[AsyncJobBackend], Generic[R]):
    """A submitted job, from the asyncio client: ``await h.wait()`` gives
    its result (the handler's return value, as JSON brings it back) or
    raises why there is none. ``duplicate``, ``merged``, ``replayed`` and
    ``debounced`` as on ``Handle``."""

    __slots__ = ()
    _name = "AsyncHandle"

    async def get(self) -> Job:
        """The job now."""
        return await self._backend.get(self.id)

    async def wait_job(self, timeout: float = 30.0) -> Job:
        """The job once finished, or as it is when ``timeout`` seconds have
        passed (a merged job: the job that took its payload)."""
        return await self._backend.wait(self.id, timeout)

    async def wait(self, timeout: float = 30.0) -> R:
        """The job's result once it succeeded. Raises JobFailedError when it
        died, JobCancelledError when cancelled, JobExpiredError when it
        expired, TimedOutError when it is not finished within ``timeout``
        seconds."""
        return cast(R, job_outcome(await self.wait_job(timeout)))

    async def cancel(self) -> CancelResult:
        return await self._backend.cancel(self.id)


class _TestModeBackend:
    """A handle of a test mode (tenq.testing) behind the async interface:
    the mode's jobs are in this process, so its calls return at once."""

    def __init__(self, handle: Handle[Any]) -> None:
        self._h = handle

    async def get(self, job_id: int) -> Job:
        return self._h.get()

    async def wait(self, job_id: int, timeout: float = 30.0) -> Job:
        return self._h.wait_job(timeout)

    async def cancel(self, job_id: int) -> CancelResult:
        return self._h.cancel()


def _as_async(h: Handle[Any]) -> "AsyncHandle[Any]":
    """The asyncio form of a test mode's handle."""
    return AsyncHandle(
        _TestModeBackend(h), h.id, h.state,
        duplicate=h.duplicate, merged=h.merged, replayed=h.replayed, debounced=h.debounced,
    )


class AsyncClient(ClientBase[AsyncTransport]):
    """A tenq client for asyncio. ``servers``, ``token``, ``tenant``,
    ``queue``, the timeouts, ``failover_budget``, ``backpressure_budget``
    (a submit refused 429 overloaded or quota_exceeded is sent again after
    the Retry-After for up to that many seconds), ``trace``, ``on_submit``,
    ``ca_file``, ``client_cert`` and ``client_key`` are the sync Client's.
    ``max_connections``: the most
    connections to one server at once (default 64); a request beyond them
    waits for one to be free (a long poll of ``wait`` holds one while it
    waits). ``await client.close()`` (or ``async with``) closes its idle
    connections."""

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
        max_connections: int = 64,
        trace: Optional[TraceHook] = None,
        on_submit: Sequence[SubmitHook] = (),
        ca_file: Optional[str] = None,
        client_cert: Optional[str] = None,
        client_key: Optional[str] = None,
    ) -> None:
        token, ca_file, client_cert, client_key = client_env(token, ca_file, client_cert, client_key)
        self._settings(backpressure_budget, tenant, queue, trace, on_submit)
        self._t = AsyncTransport(
            servers_from_env(servers), token, connect_timeout, request_timeout, failover_budget,
            max_connections, ca_file=ca_file, cert_file=client_cert, key_file=client_key,
        )

    async def close(self) -> None:
        """Closes the idle connections (the client stays usable)."""
        self._t.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- submitting -------------------------------------------------------------------------

    async def submit(
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
    ) -> AsyncHandle[Any]:
        """Submits one job (the options are ``Client.submit``'s); its
        handle. Raises the typed error of a refusal (InvalidError names the
        field), before anything is sent when the job is wrong here already."""
        body = self._single(JobSpec(
            type=type, args=args, queue=queue, tenant=tenant, key=key, unique_key=unique_key,
            unique=unique, idempotency_key=idempotency_key, priority=priority, run_at=run_at,
            max_attempts=max_attempts, score=score, traceparent=traceparent,
            timeout_ms=timeout_ms, depends_on=depends_on, on_parent_failure=on_parent_failure,
            concurrency_keys=concurrency_keys, rate_keys=rate_keys, debounce_ms=debounce_ms,
            debounce_max_ms=debounce_max_ms, expire_at=expire_at, start_within_ms=start_within_ms,
        ))
        taken = self._test_mode_submit(body)
        if taken is not None:
            return _as_async(taken)
        ans, replayed = await self._post_jobs(dumps(body))
        return self._handle(ans, replayed)

    async def submit_many(
        self, jobs: Iterable[Union[JobSpec, Mapping[str, Any]]]
    ) -> List[Union[AsyncHandle[Any], TenqError]]:
        """Submits jobs in requests of up to 10,000, one after another (ids
        follow the order of ``jobs``); one answer per job, in order: its
        handle, or the typed error that refused it alone. As
        ``Client.submit_many``: one request key per request, ``Index(i)``
        for an earlier job of the list."""
        out, bodies, where = self._shape_all(jobs)
        indexed = any(_has_index(b) for b in bodies)
        sink = _mode.active()
        # One request at a time (ids follow the order of the jobs); while one
        # is out, the last one's handles are made and the next one encoded.
        prev: Optional[Tuple["asyncio.Task[List[Tuple[Any, bool]]]", List[int]]] = None
        for at in range(0, len(bodies), BATCH_MAX):
            part = slice(at, at + BATCH_MAX)
            chunk, idx, data = _encode_chunk(bodies[part], where[part], out)
            if indexed:
                if prev is not None:  # an Index(i) may name a job of the request out
                    _place(await prev[0], prev[1], out, self._handle)
                    prev = None
                chunk, idx = _resolve_indexes(chunk, idx, out)
                data = dumps({"jobs": chunk})
            if not chunk:
                continue
            if sink is not None:
                for i, ans in zip(idx, sink.submit(chunk)):
                    out[i] = ans if isinstance(ans, TenqError) else _as_async(ans)
                continue
            done = await prev[0] if prev is not None else None
            task = asyncio.ensure_future(self._send_batch(data, len(chunk)))
            await asyncio.sleep(0)  # the request is written before the handles are made
            if prev is not None and done is not None:
                _place(done, prev[1], out, self._handle)
            prev = (task, idx)
        if prev is not None:
            _place(await prev[0], prev[1], out, self._handle)
        return cast(List[Union[AsyncHandle[Any], TenqError]], out)

    async def _send_batch(self, data: bytes, n: int) -> List[Tuple[Any, bool]]:
        """One POST /v1/jobs of ``n`` jobs: the answer's items, each with
        whether the server replayed it."""
        ans, replayed = await self._post_jobs(data)
        return [(item, replayed) for item in _batch_items(ans, n)]

    async def _post_jobs(self, data: bytes) -> Tuple[Any, bool]:
        """POST /v1/jobs under a new request key, the same on every retry
        (a 429 overloaded or quota_exceeded is waited out for up to
        ``backpressure_budget`` seconds, as the sync Client does)."""
        key = {HEADER: self._keys.make()}
        waits = Backpressure(self.backpressure_budget)
        while True:
            try:
                ans, headers = await self._t.send("POST", "/v1/jobs", data, safe=True, headers=key)
                return ans, headers.get(REPLAYED_HEADER) == "true"
            except RETRIED as e:
                pause = waits.pause(e)
            await asyncio.sleep(pause)

    def _handle(self, ans: Any, replayed: bool = False) -> AsyncHandle[Any]:
        return AsyncHandle._of_answer(self, ans, replayed)

    def handle(self, job_id: int) -> AsyncHandle[Any]:
        """A handle on a job made elsewhere (``tenq.tx.submit``'s id)."""
        return AsyncHandle(self, int(job_id), "unknown")

    # ---- reading ----------------------------------------------------------------------------

    async def get(self, job_id: int) -> Job:
        """The job, with its state (another tenant's is NotFoundError)."""
        return Job.from_json(await self._t.request("GET", f"/v1/jobs/{int(job_id)}", safe=True))

    async def wait(self, job_id: int, timeout: float = 30.0) -> Job:
        """The job once finished, or as it is after ``timeout`` seconds, in
        long polls; a merged job is followed; a job made in a transaction
        not taken in yet (an odd id) is looked for again for up to 5 s: as
        ``Client.wait``."""
        w = WaitLoop(job_id, timeout)
        while w.job is None:
            path, left = w.poll()
            try:
                w.answered(await self._t.request("GET", path, safe=True, wait=left))
            except NotFoundError as e:
                w.not_found(e)
            if w.pause:
                await asyncio.sleep(w.pause)
        return w.job

    async def cancel(self, job_id: int) -> CancelResult:
        """Cancels a job: at once, or (leased, running) its worker is told."""
        ans = await self._t.request("POST", f"/v1/jobs/{int(job_id)}/cancel", safe=True)
        return cancel_result(ans, job_id)

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        """Any other request of the protocol: the parsed answer of a 2xx,
        else its typed error. Only GET and HEAD are sent again after a
        connection broke."""
        m, data, safe = any_request(method, path, body)
        return await self._t.request(m, path, data, safe=safe)


__all__ = ["AsyncClient", "AsyncHandle", "AsyncJobBackend"]
