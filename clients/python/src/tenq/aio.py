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
import os
import time
from typing import (
    Any,
    Dict,
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
from tenq._backpressure import DEFAULT_BUDGET, RETRIED, Backpressure, check_budget
from tenq._keys import HEADER, REPLAYED_HEADER, RequestKeys
from tenq._shaping import (
    _PENDING,
    _TX_LOOK_AGAIN,
    _WAIT_PAUSE,
    BATCH_MAX,
    SubmitHook,
    TraceHook,
    _check_json,
    _encode_chunk,
    _has_index,
    _resolve_indexes,
    _Shaper,
    _taking_in,
)
from tenq._work_api import dumps
from tenq.client import servers_from_env
from tenq.errors import InvalidError, NotFoundError, ProtocolError, TenqError, item_error
from tenq.jobs import (
    CancelResult,
    Dependency,
    Handle,
    Job,
    JobSpec,
    OnParentFailure,
    RunAt,
    job_outcome,
)

R = TypeVar("R")


class AsyncJobBackend(Protocol):
    """Where an AsyncHandle asks about its job."""

    async def get(self, job_id: int) -> Job: ...

    async def wait(self, job_id: int, timeout: float = 30.0) -> Job: ...

    async def cancel(self, job_id: int) -> CancelResult: ...


class AsyncHandle(Generic[R]):
    """A submitted job, from the asyncio client: ``await h.wait()`` gives
    its result (the handler's return value, as JSON brings it back) or
    raises why there is none. ``duplicate``, ``merged`` and ``replayed`` as
    on ``Handle``."""

    __slots__ = ("_backend", "id", "state", "duplicate", "merged", "replayed")

    def __init__(
        self,
        backend: AsyncJobBackend,
        job_id: int,
        state: str,
        duplicate: bool = False,
        merged: bool = False,
        replayed: bool = False,
    ) -> None:
        self._backend = backend
        self.id = job_id
        self.state = state
        self.duplicate = duplicate
        self.merged = merged
        self.replayed = replayed

    @property
    def created(self) -> bool:
        """A new job was made (not a duplicate, a merge or a replay)."""
        return not (self.duplicate or self.merged or self.replayed)

    async def get(self) -> Job:
        """The job now."""
        return await self._backend.get(self.id)

    async def wait_job(self, timeout: float = 30.0) -> Job:
        """The job once finished, or as it is when ``timeout`` seconds have
        passed (a merged job: the job that took its payload)."""
        return await self._backend.wait(self.id, timeout)

    async def wait(self, timeout: float = 30.0) -> R:
        """The job's result once it succeeded. Raises JobFailedError when it
        died, JobCancelledError when cancelled, TimedOutError when it is not
        finished within ``timeout`` seconds."""
        return cast(R, job_outcome(await self.wait_job(timeout)))

    async def cancel(self) -> CancelResult:
        return await self._backend.cancel(self.id)

    def __repr__(self) -> str:
        return f"<tenq.AsyncHandle id={self.id} state={self.state}>"


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


def _from_test_mode(
    out: Union[Handle[Any], TenqError]
) -> Union["AsyncHandle[Any]", TenqError]:
    if isinstance(out, TenqError):
        return out
    return AsyncHandle(
        _TestModeBackend(out), out.id, out.state,
        duplicate=out.duplicate, merged=out.merged, replayed=out.replayed,
    )


class AsyncClient(_Shaper):
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
        if token is None:
            token = os.environ.get("TENQ_TOKEN") or None
        self.backpressure_budget = check_budget(backpressure_budget)
        env = os.environ.get
        self._t = AsyncTransport(
            servers_from_env(servers), token, connect_timeout, request_timeout, failover_budget,
            max_connections,
            ca_file=ca_file or env("TENQ_CA_FILE") or None,
            cert_file=client_cert or env("TENQ_CLIENT_CERT") or None,
            key_file=client_key or env("TENQ_CLIENT_KEY") or None,
        )
        self.tenant = tenant
        self.queue = queue
        self.trace = trace
        self.on_submit = list(on_submit)
        self._keys = RequestKeys()

    @property
    def servers(self) -> List[str]:
        """The servers known, the leaders named by standbys included."""
        return self._t.servers

    @property
    def current_server(self) -> str:
        """The server tried first: the one that answered last."""
        return self._t.current

    @property
    def failover_budget(self) -> float:
        return self._t.failover_budget

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
    ) -> AsyncHandle[Any]:
        """Submits one job (the options are ``Client.submit``'s); its
        handle. Raises the typed error of a refusal (InvalidError names the
        field), before anything is sent when the job is wrong here already."""
        spec = JobSpec(
            type=type, args=args, queue=queue, tenant=tenant, key=key, unique_key=unique_key,
            unique=unique, idempotency_key=idempotency_key, priority=priority, run_at=run_at,
            max_attempts=max_attempts, score=score, traceparent=traceparent,
            timeout_ms=timeout_ms, depends_on=depends_on, on_parent_failure=on_parent_failure,
        )
        body = self._shape(spec)
        if any(isinstance(d, dict) for d in body.get("depends_on", ())):
            raise InvalidError(
                "Index(i) names a job of the same submit_many or create_batch", field="depends_on"
            )
        self._finish([body])
        _check_json(body)
        sink = _mode.active()
        if sink is not None:
            out = _from_test_mode(sink.submit([body])[0])
            if isinstance(out, TenqError):
                raise out
            return out
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
        out: List[Any] = []
        bodies: List[Dict[str, Any]] = []
        where: List[int] = []
        for spec in jobs:
            try:
                body = self._shape(spec)
            except TenqError as e:
                out.append(e)
                continue
            bodies.append(body)
            where.append(len(out))
            out.append(_PENDING)
        self._finish(bodies)
        indexed = any(_has_index(b) for b in bodies)
        sink = _mode.active()
        # One request at a time (ids follow the order of the jobs); while one
        # is out, the last one's handles are made and the next one encoded.
        prev: Optional[Tuple["asyncio.Task[Tuple[List[Any], bool]]", List[int]]] = None
        for at in range(0, len(bodies), BATCH_MAX):
            part = slice(at, at + BATCH_MAX)
            chunk, idx, data = _encode_chunk(bodies[part], where[part], out)
            if indexed:
                if prev is not None:  # an Index(i) may name a job of the request out
                    self._place(await prev[0], prev[1], out)
                    prev = None
                chunk, idx = _resolve_indexes(chunk, idx, out)
                data = dumps({"jobs": chunk})
            if not chunk:
                continue
            if sink is not None:
                for i, ans in zip(idx, sink.submit(chunk)):
                    out[i] = _from_test_mode(ans)
                continue
            done = await prev[0] if prev is not None else None
            task = asyncio.ensure_future(self._send_batch(data, len(chunk)))
            await asyncio.sleep(0)  # the request is written before the handles are made
            if prev is not None and done is not None:
                self._place(done, prev[1], out)
            prev = (task, idx)
        if prev is not None:
            self._place(await prev[0], prev[1], out)
        return cast(List[Union[AsyncHandle[Any], TenqError]], out)

    async def _send_batch(self, data: bytes, n: int) -> Tuple[List[Any], bool]:
        """One POST /v1/jobs of ``n`` jobs: the answer's items, and whether
        the server replayed it."""
        ans, replayed = await self._post_jobs(data)
        items = ans.get("jobs") if isinstance(ans, dict) else None
        if not isinstance(items, list) or len(items) != n:
            raise ProtocolError(f"the batch answer does not hold {n} results")
        return items, replayed

    def _place(self, done: Tuple[List[Any], bool], idx: List[int], out: List[Any]) -> None:
        items, replayed = done
        handle = self._handle
        for i, item in zip(idx, items):
            out[i] = item_error(item) if "error" in item else handle(item, replayed)

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
        job_id = ans.get("id") if type(ans) is dict else None
        if type(job_id) is not int:
            raise ProtocolError(f"the submit answer has no id: {str(ans)[:200]}")
        return AsyncHandle(
            self,
            job_id,
            str(ans.get("state")),
            ans.get("duplicate") is True,
            ans.get("merged") is True,
            replayed or ans.get("replayed") is True,
        )

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
        start = time.monotonic()
        end = start + max(0.0, timeout)
        seen = {int(job_id)}
        current = int(job_id)
        while True:
            t0 = time.monotonic()
            left = max(0.0, end - t0)
            path = f"/v1/jobs/{current}/wait?timeout_ms={int(left * 1000)}"
            try:
                ans = await self._t.request("GET", path, safe=True, wait=left)
            except NotFoundError:
                if not _taking_in(current, int(job_id), start, end):
                    raise
                await asyncio.sleep(_TX_LOOK_AGAIN)
                continue
            job = Job.from_json(ans)
            if job.state == "merged" and job.merged_into and job.merged_into not in seen:
                seen.add(job.merged_into)
                current = job.merged_into
                continue
            t1 = time.monotonic()
            if job.finished or t1 >= end:
                return job
            if t1 - t0 < _WAIT_PAUSE:
                await asyncio.sleep(min(_WAIT_PAUSE, end - t1))

    async def cancel(self, job_id: int) -> CancelResult:
        """Cancels a job: at once, or (leased, running) its worker is told."""
        ans = await self._t.request("POST", f"/v1/jobs/{int(job_id)}/cancel", safe=True)
        if not isinstance(ans, dict):
            raise ProtocolError("the cancel answer is not a JSON object")
        return CancelResult(
            int(ans.get("id", job_id)), str(ans.get("state")), ans.get("cancel_requested") is True
        )

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        """Any other request of the protocol: the parsed answer of a 2xx,
        else its typed error. Only GET and HEAD are sent again after a
        connection broke."""
        if not path.startswith("/") or any(c in path for c in " \r\n"):
            raise InvalidError("a path starts with / and has no spaces", field="path")
        data = None if body is None else dumps(body)
        m = method.upper()
        return await self._t.request(m, path, data, safe=m in ("GET", "HEAD"))


__all__ = ["AsyncClient", "AsyncHandle", "AsyncJobBackend"]
