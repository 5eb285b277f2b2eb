/**
 * tenq: the client and worker library for the tenq job queue server.
 *
 * ```ts
 * import { Tenq } from "tenq";
 * const tenq = new Tenq({ servers: "http://127.0.0.1:7070", tenant: "acme", queue: "reports" });
 * ```
 */
export { Tenq, type TenqOptions } from "./app";
export { Client, MAX_BATCH_JOBS, REQUEST_KEY_HEADER, answerError, type SubmitCallOptions, type SubmitManyOptions, type WaitOptions, } from "./client";
export { currentJob, type JobContext, type RunMode, type WorkflowBackend } from "./context";
export { BatchClosedError, ConflictError, ConnectionError, ForbiddenError, InternalError, InvalidError, NotFoundError, NotLeaderError, OverloadedError, ProtocolError, TlsError, QuotaExceededError, RateLimitedError, TenqError, TimeoutError, TooLargeError, UnauthenticatedError, UnavailableError, errorFromWire, type ErrorCode, type ErrorDetails, } from "./errors";
export { RemoteHandle, resultOf, type JobHandle } from "./handle";
export { RequestKeys } from "./ids";
export { JobCancelledError, JobExpiredError, JobFailedError, JobTimeoutError, LeaseLostError, NoRetryError, RetryError, WorkerStoppedError, } from "./job-errors";
export { checkJson, type JsonObject, type JsonValue } from "./json";
export { silentLogger, stderrLogger, type Logger } from "./log";
export { compose, describeError, errorReporter, logging, tracing, type Middleware, type Next } from "./middleware";
export { DEFAULT_SERVER, type ClientOptions } from "./options";
export { findOtelApi, toTraceparent, type OpenTelemetryOption, type OtelApi } from "./otel";
export { SETTING_NAMES } from "./settings";
export { ChildFailedError, EventTimeoutError, Parked, isParked, type EventResult, type Step, type StepKind, type StepMethods, type StepOptions, type WaitForEventOptions, } from "./steps";
export { Registry, type Constructor, type Handler, type HandlerOptions, type RegisterOptions } from "./registry";
export { type AsyncMethods, type Task } from "./switch";
export { Testing, type FakeJob, type TestMode } from "./testing";
export { checkTraceparent, isTraceparent, type TraceHook } from "./tracing";
export { VERSION } from "./transport";
export * from "./types";
export { completeTx, failTx, sendEventTx, submitManyTx, submitTx, type FailTxOptions, type LeaseRef, type Queryable, type TxDefaults } from "./tx";
export { Worker, type WorkerEvents, type WorkerOptions, type WorkerStats } from "./worker";
