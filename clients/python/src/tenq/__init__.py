# SPDX-License-Identifier: Apache-2.0
"""tenq: the Python client of the tenq job queue server.

    import tenq

    client = tenq.Client("http://127.0.0.1:7070", tenant="acme", queue="reports")
    handle = client.submit("Report.build", {"id": 42})
    print(handle.wait(30))

    class DataReport:
        @tenq.task(queue="reports")
        def execute(self, report_id: int) -> dict: ...

    DataReport().execute(42)                 # runs inline, now
    DataReport().execute.enqueue(42).wait()  # runs on a worker

    tenq.Worker(client, queues=["reports"], concurrency=5).run()

    with conn.transaction():                 # your PostgreSQL transaction (tenq.tx)
        tenq.tx.submit(cur, "Report.build", {"id": 42}, tenant="acme", queue="reports")

See README.md for the whole API.
"""

from tenq import middleware, testing, tracing, tx
from tenq._transport import VERSION as __version__
from tenq.aio import AsyncClient, AsyncHandle
from tenq.batches import Batch, BatchCallback, BatchCreated, BatchPage, BatchStatus
from tenq.client import Client
from tenq.context import (
    CANCELLED,
    LOST,
    SHUTDOWN,
    TIMEOUT,
    Context,
    NoRetry,
    Retry,
    Stopped,
    current_context,
    progress,
)
from tenq.errors import (
    BatchClosedError,
    ConflictError,
    ConnectError,
    ForbiddenError,
    InternalError,
    InvalidError,
    JobCancelledError,
    JobExpiredError,
    JobFailedError,
    NotFoundError,
    NotLeaderError,
    OverloadedError,
    ProtocolError,
    QuotaExceededError,
    RateLimitedError,
    TenqError,
    TimedOutError,
    TLSError,
    TooLargeError,
    UnauthenticatedError,
    UnavailableError,
)
from tenq.handlers import Registry, handler, registry
from tenq.jobs import (
    CancelResult,
    Child,
    ConcurrencyKey,
    Dependency,
    Handle,
    Index,
    Job,
    JobPage,
    JobSpec,
    JobState,
    KeyLike,
    OnParentFailure,
    Parent,
    Parents,
    RateKey,
    RateKeyLike,
    Waiting,
    WaitingReason,
)
from tenq.queues import Counts, KeyInfo, KeyPage, KeyRate, KeySetting, QueueInfo, TenantInfo
from tenq.schedules import Attempt, AttemptOutcome, Missed, Schedule, ScheduleJob
from tenq.steps import ChildFailedError, EventResult, EventTimeoutError, Parked, Step
from tenq.switch import (
    AsyncBoundTask,
    AsyncTaskFunction,
    AsyncTaskFunction0,
    BoundTask,
    TaskFunction,
    TaskFunction0,
    configure,
    default_client,
    task,
)
from tenq.worker import Worker

__all__ = [
    "__version__",
    "CANCELLED",
    "LOST",
    "SHUTDOWN",
    "TIMEOUT",
    "AsyncBoundTask",
    "AsyncClient",
    "AsyncHandle",
    "AsyncTaskFunction",
    "AsyncTaskFunction0",
    "Attempt",
    "AttemptOutcome",
    "Batch",
    "BatchCallback",
    "BatchClosedError",
    "BatchCreated",
    "BatchPage",
    "BatchStatus",
    "BoundTask",
    "CancelResult",
    "Child",
    "ChildFailedError",
    "Client",
    "ConcurrencyKey",
    "ConflictError",
    "ConnectError",
    "Context",
    "Counts",
    "Dependency",
    "EventResult",
    "EventTimeoutError",
    "ForbiddenError",
    "Handle",
    "InternalError",
    "Index",
    "InvalidError",
    "Job",
    "JobCancelledError",
    "JobExpiredError",
    "JobFailedError",
    "JobPage",
    "JobSpec",
    "KeyInfo",
    "KeyLike",
    "KeyPage",
    "KeyRate",
    "KeySetting",
    "JobState",
    "Missed",
    "NoRetry",
    "NotFoundError",
    "NotLeaderError",
    "OnParentFailure",
    "OverloadedError",
    "Parent",
    "Parked",
    "Parents",
    "ProtocolError",
    "QueueInfo",
    "RateKey",
    "RateKeyLike",
    "QuotaExceededError",
    "RateLimitedError",
    "Registry",
    "Retry",
    "Schedule",
    "ScheduleJob",
    "Step",
    "Stopped",
    "TaskFunction",
    "TaskFunction0",
    "TenantInfo",
    "TenqError",
    "TimedOutError",
    "TLSError",
    "TooLargeError",
    "UnauthenticatedError",
    "UnavailableError",
    "Waiting",
    "WaitingReason",
    "Worker",
    "configure",
    "current_context",
    "default_client",
    "handler",
    "middleware",
    "progress",
    "registry",
    "task",
    "testing",
    "tracing",
    "tx",
]
