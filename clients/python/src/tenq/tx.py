# SPDX-License-Identifier: Apache-2.0
"""Jobs in your own database transaction (tenq on PostgreSQL).

A server that stores in PostgreSQL installs SQL functions in the schema
``tenq``; these helpers call them through your DB-API connection or cursor
(psycopg 3, psycopg2: anything whose ``cursor.execute`` takes ``%s``
placeholders), inside the transaction you are in::

    with conn.transaction():                       # psycopg 3
        cur.execute("INSERT INTO orders ...")
        job_id = tenq.tx.submit(cur, "Mail.receipt", {"order": 42}, tenant="acme", queue="mail")

The job exists if and only if that transaction commits (the server takes it
in within milliseconds of the commit); ids made so are odd. A worker's
handler of an exactly-once queue completes its job with its own writes::

    def charge(ctx: tenq.Context) -> None:
        with conn.transaction():
            cur.execute("UPDATE accounts ...")
            tenq.tx.complete(cur, ctx, result={"charged": True})

Nothing is imported at module import time (no driver is a dependency). An
error of the database (a refused argument, SQLSTATE 22023; a lease that is
not current, TQ002; a lost connection) is raised as your driver's
exception, but for a submit over a tenant's or a queue's quota (SQLSTATE
TQ429): that raises ``tenq.QuotaExceededError``, as the server's 429 does,
with ``field`` naming the limit (``max_queued`` or ``max_queued_bytes``)
and the driver's exception as ``__cause__``. Either way your transaction is
then aborted and is to be rolled back. Arguments this module can tell are
wrong (args that are not JSON, a job that is neither a Context nor an
``(id, token)`` pair) raise ``InvalidError`` before anything is sent.
"""

from __future__ import annotations

import datetime
import json
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, overload

from tenq._shaping import _SUBMIT_FIELDS
from tenq.context import Context, current_context
from tenq.errors import InvalidError, QuotaExceededError
from tenq.jobs import JobSpec, KeyLike, RateKeyLike, RunAt, run_at_ms

# A job a handler holds: its Context, or (id, token) as the lease gave them.
Lease = Union[Context, Tuple[int, int]]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

# The fields of a job of tenq.submit_many: a submit's, as tenq.submit names its arguments
# (timeout_ms since schema 12; the keys, debounce and expiry since schema 26).
_FIELDS = _SUBMIT_FIELDS

_SQL_SUBMIT = (
    "SELECT tenq.submit(%s::text, %s::text, %s::text, %s::jsonb, %s::text, %s::text, "
    "%s::boolean, %s::text, %s::timestamptz, %s::integer, %s::integer, "
    "%s::double precision, %s::text, %s::bigint)"
)
# With keyed limits, debounce or expiry (schema 26): sent only when one is given, so that
# a database of an older schema still takes the others.
_SQL_SUBMIT_KEYED = (
    "SELECT tenq.submit(%s::text, %s::text, %s::text, %s::jsonb, %s::text, %s::text, "
    "%s::boolean, %s::text, %s::timestamptz, %s::integer, %s::integer, "
    "%s::double precision, %s::text, %s::bigint, %s::jsonb, %s::jsonb, %s::timestamptz, "
    "%s::bigint, %s::bigint, %s::bigint)"
)
# submit's options (its keyword arguments after tenant and queue), with
# their defaults.
_OPTIONS: Tuple[Tuple[str, Any], ...] = (
    ("key", None),
    ("unique_key", None),
    ("unique", False),
    ("idempotency_key", None),
    ("run_at", None),
    ("priority", 0),
    ("max_attempts", None),
    ("score", None),
    ("traceparent", None),
    ("timeout_ms", None),
    ("concurrency_keys", None),
    ("rate_keys", None),
    ("expire_at", None),
    ("start_within_ms", None),
    ("debounce_ms", None),
    ("debounce_max_ms", None),
)
_SQL_SEND_EVENT = "SELECT tenq.send_event(%s::text, %s::text, %s::jsonb)"
_SQL_SUBMIT_MANY = "SELECT tenq.submit_many(%s::jsonb)"
_SQL_COMPLETE = "SELECT tenq.complete(%s::bigint, %s::bigint, %s::jsonb)"
_SQL_FAIL = "SELECT tenq.fail(%s::bigint, %s::bigint, %s::text, %s::bigint)"
# tenq's SQLSTATE of a submit over a quota (the server's 429 quota_exceeded).
SQLSTATE_QUOTA = "TQ429"
_QUOTA_FIELDS = ("max_queued_bytes", "max_queued")


@overload
def submit(
    cur: Any,
    type: str,
    args: Any = None,
    *,
    tenant: str,
    queue: str,
    key: Optional[str] = None,
    unique_key: Optional[str] = None,
    unique: bool = False,
    idempotency_key: Optional[str] = None,
    run_at: Optional[RunAt] = None,
    priority: int = 0,
    max_attempts: Optional[int] = None,
    score: Optional[float] = None,
    traceparent: Optional[str] = None,
    timeout_ms: Optional[int] = None,
    concurrency_keys: Optional[Sequence[KeyLike]] = None,
    rate_keys: Optional[Sequence[RateKeyLike]] = None,
    expire_at: Optional[RunAt] = None,
    start_within_ms: Optional[int] = None,
    debounce_ms: Optional[int] = None,
    debounce_max_ms: Optional[int] = None,
) -> int: ...


@overload
def submit(
    cur: Any,
    tenant: str,
    queue: str,
    type: str,
    args: Any = None,
    *,
    key: Optional[str] = None,
    unique_key: Optional[str] = None,
    unique: bool = False,
    idempotency_key: Optional[str] = None,
    run_at: Optional[RunAt] = None,
    priority: int = 0,
    max_attempts: Optional[int] = None,
    score: Optional[float] = None,
    traceparent: Optional[str] = None,
    timeout_ms: Optional[int] = None,
    concurrency_keys: Optional[Sequence[KeyLike]] = None,
    rate_keys: Optional[Sequence[RateKeyLike]] = None,
    expire_at: Optional[RunAt] = None,
    start_within_ms: Optional[int] = None,
    debounce_ms: Optional[int] = None,
    debounce_max_ms: Optional[int] = None,
) -> int: ...


def submit(cur: Any, *pos: Any, **options: Any) -> int:
    """Submits one job in the transaction of ``cur`` (a DB-API cursor, or a
    connection: a cursor of it is used); the job's id. The job exists once
    that transaction commits, never if it rolls back.

    ``submit(cur, type, args=None, *, tenant, queue, ...)``: the order of
    ``Client.submit`` (``type`` and ``args``, then keywords); ``tenant`` and
    ``queue`` are required (no client gives defaults). The other options
    are those of ``Client.submit``; ``run_at`` is a datetime (a naive one is
    local time) or milliseconds since the epoch; ``timeout_ms`` is the job's
    own timeout (from a third of its queue's ``lease_ms`` to 7 days; None or
    0: the queue's); ``concurrency_keys``, ``rate_keys``, ``expire_at`` (as
    ``run_at``), ``start_within_ms``, ``debounce_ms`` and ``debounce_max_ms``
    as on ``JobSpec`` (schema 26). The database refuses what the server would (SQLSTATE
    22023, ``tenq.submit: ...``, e.g. ``tenq.submit: timeout_ms must be
    from a third of the queue's lease ...``); a job over its tenant's or
    queue's quota raises ``QuotaExceededError`` (SQLSTATE TQ429).

    Deprecated: the former order ``submit(cur, tenant, queue, type,
    args=None, ...)`` (three or four positional arguments after ``cur``)
    still works and warns (DeprecationWarning)."""
    if len(pos) >= 3 and "tenant" not in options and "queue" not in options:
        warnings.warn(
            "tenq.tx.submit(cur, tenant, queue, type, args) is deprecated: "
            "use tenq.tx.submit(cur, type, args, tenant=..., queue=...)",
            DeprecationWarning,
            stacklevel=2,
        )
        if len(pos) > 4:
            raise TypeError("tenq.tx.submit takes at most 4 positional arguments after cur")
        tenant, queue, type_ = pos[0], pos[1], pos[2]
        args = pos[3] if len(pos) > 3 else options.pop("args", None)
    else:
        if len(pos) > 2:
            raise TypeError("tenq.tx.submit(cur, type, args=None, *, tenant, queue, ...)")
        if "tenant" not in options or "queue" not in options:
            raise TypeError("tenq.tx.submit needs tenant= and queue= (keyword arguments)")
        tenant, queue = options.pop("tenant"), options.pop("queue")
        type_ = pos[0] if pos else options.pop("type")
        args = pos[1] if len(pos) > 1 else options.pop("args", None)
    return _submit(cur, tenant, queue, type_, args, options)


def _submit(
    cur: Any, tenant: str, queue: str, type: str, args: Any, options: Dict[str, Any]
) -> int:
    """tenq.submit(...) with the options of ``submit`` (by name: its
    keyword arguments, checked against ``_OPTIONS``)."""
    unknown = sorted(set(options) - {name for name, _ in _OPTIONS})
    if unknown:
        raise TypeError(f"tenq.tx.submit() got an unexpected keyword argument {unknown[0]!r}")
    opt = {name: options.get(name, default) for name, default in _OPTIONS}
    params = (
        tenant,
        queue,
        type,
        _json(args if args is not None else {}, "args"),
        opt["key"],
        opt["unique_key"],
        bool(opt["unique"]),
        opt["idempotency_key"],
        _timestamp(opt["run_at"]),
        opt["priority"],
        opt["max_attempts"],
        opt["score"],
        opt["traceparent"],
        opt["timeout_ms"],
    )
    keyed = tuple(opt[name] for name, _ in _OPTIONS[10:])
    if all(v is None for v in keyed):
        row = _one(cur, _SQL_SUBMIT, params)
    else:
        more = (
            _keys(opt["concurrency_keys"], "concurrency_keys"),
            _keys(opt["rate_keys"], "rate_keys"),
            _timestamp(opt["expire_at"]),
            opt["start_within_ms"],
            opt["debounce_ms"],
            opt["debounce_max_ms"],
        )
        row = _one(cur, _SQL_SUBMIT_KEYED, params + more)
    return int(row[0])


def submit_many(cur: Any, jobs: Iterable[Union[JobSpec, Mapping[str, Any]]]) -> List[int]:
    """Submits jobs in one statement, in the transaction of ``cur``; their
    ids, in the order of ``jobs``. Each is a ``JobSpec`` or a mapping with
    the fields of ``submit`` (``tenant``, ``queue`` and ``type`` required;
    ``run_at`` a datetime or milliseconds). One job the database refuses
    fails them all (``tenq.submit_many: job INDEX: ...``, SQLSTATE 22023);
    jobs that would take a tenant or a queue past its quota raise
    ``QuotaExceededError`` (SQLSTATE TQ429), none of them made."""
    docs: List[Mapping[str, Any]] = []
    for i, job in enumerate(jobs):
        if isinstance(job, JobSpec):
            body = job.body()
        elif isinstance(job, Mapping):
            body = dict(job)
        else:
            raise InvalidError(f"job {i}: a JobSpec or a mapping, not {job!r}", field="jobs")
        unknown = sorted(set(body) - _FIELDS)
        if unknown:
            raise InvalidError(f"job {i}: unknown field {unknown[0]!r}", field=unknown[0])
        out = {name: value for name, value in body.items() if value is not None}
        for name in ("run_at", "expire_at"):
            if out.get(name) is not None:
                out[name] = _timestamp(out[name])
        if "unique" in out:
            out["unique"] = bool(out["unique"])
        docs.append(out)
    if not docs:
        return []
    row = _one(cur, _SQL_SUBMIT_MANY, (_json(docs, "jobs"),))
    return [int(x) for x in (row[0] or [])]


def complete(cur: Any, job: Lease, result: Any = None) -> None:
    """Marks a leased job of an exactly-once queue succeeded, in the
    transaction of ``cur``: together with your writes, or not at all.
    ``job`` is the handler's Context or ``(id, token)``; ``result`` (JSON)
    becomes the job's result. The database raises (SQLSTATE TQ002) when the
    token is not the job's current, unexpired lease or the queue is not
    exactly-once: roll back then. A worker's own acknowledgement of the job
    afterwards changes nothing (the worker sends it without a result)."""
    task, job_id, token = _lease(job)
    _one(cur, _SQL_COMPLETE, (job_id, token, None if result is None else _json(result, "result")))
    if task is not None:
        task.note_tx_outcome({"ok": True})


def fail(cur: Any, job: Lease, error: str, retry_in_ms: Optional[int] = None) -> None:
    """Fails the attempt of a leased job of an exactly-once queue, in the
    transaction of ``cur``: the server retries it (after ``retry_in_ms``,
    else by the queue's backoff) or it dies, once the transaction commits.
    The database raises as ``complete`` does (and 22023 for a negative
    ``retry_in_ms``). A worker then reports the same failure itself, whatever
    the handler returns, so that its acknowledgement never contradicts it."""
    if not isinstance(error, str):
        raise InvalidError("error is a string", field="error")
    if retry_in_ms is not None and (
        isinstance(retry_in_ms, bool) or not isinstance(retry_in_ms, int)
    ):
        raise InvalidError("retry_in_ms is an int (or None)", field="retry_in_ms")
    task, job_id, token = _lease(job)
    _one(cur, _SQL_FAIL, (job_id, token, error, retry_in_ms))
    if task is not None:
        outcome: Dict[str, Any] = {"ok": False, "error": error}
        if retry_in_ms is not None:
            outcome["retry_in_ms"] = max(0, retry_in_ms)
        task.note_tx_outcome(outcome)


# ---- helpers -------------------------------------------------------------------------------


def _lease(job: Lease) -> Tuple[Optional[Context], int, int]:
    """The Context to tell (the one given, or the current one when ``job``
    names its lease), the id and the token."""
    if isinstance(job, Context):
        if not job.token:
            raise InvalidError(f"job {job.id} has no lease token (run inline?)", field="job")
        return job, job.id, job.token
    if (
        isinstance(job, (tuple, list))
        and len(job) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in job)
    ):
        job_id, token = int(job[0]), int(job[1])
        cur = current_context()
        if cur is not None and cur.id == job_id and cur.token == token:
            return cur, job_id, token
        return None, job_id, token
    raise InvalidError("job is a tenq.Context or an (id, token) pair of ints", field="job")


def _json(value: Any, field: str) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidError(f"{field} is not JSON-serialisable: {e}", field=field) from None


def _keys(keys: Optional[Sequence[Any]], field: str) -> Optional[str]:
    """A list of keys (each a str or a dict) as JSON; None when none."""
    if keys is None:
        return None
    if isinstance(keys, (str, bytes)):
        raise InvalidError(f"{field} is a list of keys, not one key", field=field)
    return _json([k if isinstance(k, str) else dict(k) for k in keys], field)


def _timestamp(value: Optional[RunAt]) -> Optional[str]:
    """``run_at`` as an ISO 8601 time in UTC, to the millisecond (what
    PostgreSQL reads as a timestamptz)."""
    if value is None:
        return None
    ms = run_at_ms(value)
    return (_EPOCH + datetime.timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")


def _one(cur: Any, sql: str, params: Sequence[Any]) -> Any:
    """Runs ``sql`` on ``cur`` (a cursor; of a connection, a new cursor,
    closed after) and returns its one row; a refusal over a quota raises
    QuotaExceededError (the driver's exception as its cause)."""
    try:
        if hasattr(cur, "fetchone"):
            cur.execute(sql, params)
            return cur.fetchone()
        if not hasattr(cur, "cursor"):
            raise InvalidError("cur is a DB-API cursor or connection", field="cur")
        c = cur.cursor()
        try:
            c.execute(sql, params)
            return c.fetchone()
        finally:
            c.close()
    except Exception as e:
        quota = _quota_refusal(e)
        if quota is None:
            raise
        raise quota from e


def _quota_refusal(e: BaseException) -> Optional[QuotaExceededError]:
    """The QuotaExceededError of a driver's exception with SQLSTATE TQ429
    (psycopg 3's ``sqlstate``, psycopg2's ``pgcode``), else None. The limit
    is the error's column (``diag.column_name``), else the one its message
    names."""
    state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
    if state != SQLSTATE_QUOTA:
        return None
    diag = getattr(e, "diag", None)
    message = getattr(diag, "message_primary", None) or str(e).strip().splitlines()[0]
    field = getattr(diag, "column_name", None)
    if field not in _QUOTA_FIELDS:
        field = next((f for f in _QUOTA_FIELDS if f in message), None)
    return QuotaExceededError(message, status=429, field=field)


def send_event(cur: Any, tenant: str, key: str, payload: Any = None) -> int:
    """Sends an event of ``tenant`` (``tenq.send_event``, docs/transactions.md)
    in the transaction of ``cur`` (a cursor, or a connection): the jobs
    whose handler waits for ``key`` go on with ``payload`` (JSON) if and
    only if it commits; the event's number in the server's inbox. The
    database refuses a bad tenant, key or payload (SQLSTATE 22023)."""
    try:
        text = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidError(f"the payload is not JSON: {e}", field="payload") from None
    return int(_one(cur, _SQL_SEND_EVENT, (tenant, key, text))[0])


__all__ = ["Lease", "complete", "fail", "send_event", "submit", "submit_many"]
