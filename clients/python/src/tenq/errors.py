# SPDX-License-Identifier: Apache-2.0
"""The library's typed errors: one class per error code of the protocol
(docs/API.md, "Errors"), plus the local ones (no connection, a malformed
answer, a job that failed)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class TenqError(Exception):
    """Every error this library raises.

    ``status`` is the HTTP status of the server's answer (0 when none came),
    ``code`` the protocol's error word, ``field`` the request field the
    server (or this library) named as the cause, ``retry_after`` the seconds
    a 429/503 answer asked to wait, ``leader`` the leader a standby named.
    """

    code = "error"

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        field: Optional[str] = None,
        retry_after: Optional[float] = None,
        leader: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field
        self.retry_after = retry_after
        self.leader = leader

    def __str__(self) -> str:
        if self.field and self.field not in self.message:
            return f"{self.message} (field {self.field})"
        return self.message


class InvalidError(TenqError):
    """400: a request field is wrong (``field`` names it)."""

    code = "invalid"


class UnauthenticatedError(TenqError):
    """401: a missing or unknown token."""

    code = "unauthenticated"


class ForbiddenError(TenqError):
    """403: the token may not do this."""

    code = "forbidden"


class NotFoundError(TenqError):
    """404: no such job (or another tenant's)."""

    code = "not_found"


class ConflictError(TenqError):
    """409: a stale lease token, a job in a state that does not allow it, or
    (``field`` "Idempotency-Key") a submit's request key sent before with
    another request."""

    code = "conflict"


class BatchClosedError(ConflictError):
    """409 ``batch_closed``: jobs added to a batch that is closed (its jobs
    all finished and its callbacks were made); nothing was added."""

    code = "batch_closed"


class TooLargeError(TenqError):
    """413: a body or a job past the server's limits."""

    code = "too_large"


class RateLimitedError(TenqError):
    """429: the server asks the caller to come back later (``retry_after``
    seconds); nothing of the request was done. The base of every 429: an
    answer of this class itself is ``rate_limited``."""

    code = "rate_limited"


class OverloadedError(RateLimitedError):
    """429 overloaded: a submit while the server's jobs fill its memory
    budget; nothing of the request was made (``retry_after``: 1 s). The
    client's submits wait and send it again, under the same request key,
    for up to ``backpressure_budget`` seconds before raising it."""

    code = "overloaded"


class QuotaExceededError(RateLimitedError):
    """429 quota_exceeded: a submit that would take a tenant or a queue past
    its quota; ``field`` names the limit (``max_queued`` or
    ``max_queued_bytes``), the message the tenant or queue. Nothing of the
    request was made. The client's submits wait for room as for
    OverloadedError; ``tenq.tx`` raises it (SQLSTATE TQ429, the driver's
    error as ``__cause__``, ``retry_after`` None) and the transaction is then
    aborted."""

    code = "quota_exceeded"


class UnavailableError(TenqError):
    """503 unavailable: the store is down or the server stops. Nothing was
    changed."""

    code = "unavailable"


class NotLeaderError(UnavailableError):
    """503 not_leader: a standby that does not know the leader. Nothing was
    changed."""

    code = "not_leader"


class TimedOutError(TenqError):
    """No answer in time, or a job not finished within a wait's timeout."""

    code = "timeout"


class InternalError(TenqError):
    """500 internal: the server failed; report it."""

    code = "internal"


class ConnectError(TenqError):
    """No server could be reached within the failover budget, or the
    connection broke after a request was sent that is not safe to send
    again."""

    code = "connection"


class TLSError(ConnectError):
    """An https server's certificate did not verify (an unknown CA, an
    expired certificate, a name it does not hold), or the server refused
    this client's certificate. Configuration: it is not retried."""

    code = "tls"


class ProtocolError(TenqError):
    """The answer was not the HTTP/JSON the protocol promises."""

    code = "protocol"


class JobFailedError(TenqError):
    """A job waited for ended dead (its last error is the message) or was
    cancelled. ``job`` is the job as the server last answered."""

    code = "job_failed"

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class JobCancelledError(JobFailedError):
    """A job waited for was cancelled."""

    code = "job_cancelled"


class JobExpiredError(JobFailedError):
    """A job waited for expired: it was not started by its ``expire_at``
    (docs/SEMANTICS.md, "Expiry") and never ran."""

    code = "job_expired"


_BY_CODE: Dict[str, Type[TenqError]] = {
    cls.code: cls
    for cls in (
        InvalidError,
        UnauthenticatedError,
        ForbiddenError,
        NotFoundError,
        ConflictError,
        BatchClosedError,
        TooLargeError,
        RateLimitedError,
        OverloadedError,
        QuotaExceededError,
        UnavailableError,
        NotLeaderError,
        TimedOutError,
        InternalError,
        TLSError,
        ProtocolError,
    )
}

_BY_STATUS: Dict[int, Type[TenqError]] = {
    400: InvalidError,
    401: UnauthenticatedError,
    403: ForbiddenError,
    404: NotFoundError,
    408: TimedOutError,
    409: ConflictError,
    413: TooLargeError,
    429: RateLimitedError,
    500: InternalError,
    503: UnavailableError,
    504: TimedOutError,
}


def error_from_answer(
    status: int, body: Any, retry_after: Optional[float] = None
) -> TenqError:
    """The typed error for a non-2xx answer whose parsed body is ``body``
    (``{"error": {"code", "message", "field", "leader"}}``, or anything a
    proxy sent)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        text = body if isinstance(body, str) else ""
        cls = _BY_STATUS.get(status, ProtocolError)
        return cls(
            f"HTTP {status} from the server" + (f": {text[:200]}" if text else ""),
            status=status,
            retry_after=retry_after,
        )
    code = err.get("code")
    found = _BY_CODE.get(code) if isinstance(code, str) else None
    cls = found if found is not None else _BY_STATUS.get(status, TenqError)
    message = err.get("message")
    field = err.get("field")
    leader = err.get("leader")
    return cls(
        message if isinstance(message, str) and message else f"HTTP {status} ({code})",
        status=status,
        field=field if isinstance(field, str) else None,
        retry_after=retry_after,
        leader=leader if isinstance(leader, str) else None,
    )


_STATUS_OF_CODE = {code: status for status, cls in _BY_STATUS.items() for code in [cls.code]}
_STATUS_OF_CODE.update(
    {"overloaded": 429, "quota_exceeded": 429, "not_leader": 503, "batch_closed": 409}
)


def item_error(item: Dict[str, Any]) -> TenqError:
    """The error of one job of a batch, or of one outcome
    (``{"error": {...}}``), with the HTTP status its code has on its own."""
    err = item.get("error")
    code = err.get("code") if isinstance(err, dict) else None
    status = _STATUS_OF_CODE.get(code, 0) if isinstance(code, str) else 0
    return error_from_answer(status, item)
