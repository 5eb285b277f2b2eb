/**
 * Typed errors. Every error the library throws is a TenqError; its subclass
 * (and `code`) mirrors the protocol's error word, so callers can write
 * `if (e instanceof NotFoundError)` or `switch (e.code)`.
 */
/** The protocol's error words, plus the library's own `connection` and `protocol`. */
export type ErrorCode = "invalid" | "unauthenticated" | "forbidden" | "not_found" | "conflict" | "batch_closed" | "too_large" | "rate_limited" | "overloaded" | "quota_exceeded" | "unavailable" | "not_leader" | "timeout" | "internal" | "connection" | "tls" | "protocol";
export interface ErrorDetails {
    /** The HTTP status of the answer; 0 when no answer came (a local error). */
    status?: number;
    /** The request field the server (or the library) named as at fault. */
    field?: string;
    /** not_leader: the leader's base URL, when the server knows it. */
    leader?: string;
    /** The server's Retry-After, in milliseconds. */
    retryAfterMs?: number;
    /** The underlying error (a socket error, a JSON parse error). */
    cause?: unknown;
}
export declare class TenqError extends Error {
    readonly code: ErrorCode | string;
    readonly status: number;
    readonly field: string | undefined;
    readonly leader: string | undefined;
    readonly retryAfterMs: number | undefined;
    constructor(code: ErrorCode | string, message: string, details?: ErrorDetails);
}
/** 400: a bad request or argument; `field` names it. Also refused locally, before sending. */
export declare class InvalidError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 401: a missing or unknown token. */
export declare class UnauthenticatedError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 403: the token may not do this. */
export declare class ForbiddenError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 404: no such job (another tenant's job looks the same). */
export declare class NotFoundError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 409: a stale lease token, or a job in a state that does not allow it. */
export declare class ConflictError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 409 batch_closed: jobs added to a batch that is closed (its jobs all finished, its callbacks made); nothing was added. */
export declare class BatchClosedError extends ConflictError {
    readonly code: ErrorCode | string;
}
/** 413: a body or a field past a limit. */
export declare class TooLargeError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/**
 * 429: the server asks the caller to come back later (`retryAfterMs`);
 * nothing of the request was done. The base of every 429: one of this
 * class itself is `rate_limited`.
 */
export declare class RateLimitedError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/**
 * 429 overloaded: a submit while the server's jobs fill its memory budget;
 * nothing of it was made. The client's submits send it again, under the same
 * request key, after the Retry-After for up to `backpressureBudgetMs`, then
 * throw it.
 */
export declare class OverloadedError extends RateLimitedError {
    readonly code: ErrorCode | string;
}
/**
 * 429 quota_exceeded: a submit that would take a tenant or a queue past its
 * quota; `field` names the limit (`max_queued` or `max_queued_bytes`), the
 * message the tenant or queue. Nothing of it was made. The client's submits
 * wait for room as for OverloadedError; the transaction helpers throw it for
 * SQLSTATE TQ429 (the driver's error as `cause`, no `retryAfterMs`), and the
 * transaction is then aborted.
 */
export declare class QuotaExceededError extends RateLimitedError {
    readonly code: ErrorCode | string;
}
/** 503 unavailable: the store is down or the server is stopping; nothing was changed. */
export declare class UnavailableError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 503 not_leader: a standby answered and named no leader (or the failover budget ran out). */
export declare class NotLeaderError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** No answer in time (a request, or `wait` for a job that did not finish). */
export declare class TimeoutError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** 500: a fault in the server. */
export declare class InternalError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** No server could be reached, or the connection broke, within the failover budget. */
export declare class ConnectionError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/**
 * An https server's certificate did not verify (an unknown CA, an expired
 * certificate, a name it does not hold), or the server refused this
 * client's certificate. Configuration: thrown at once, not retried.
 */
export declare class TlsError extends ConnectionError {
    constructor(message: string, details?: ErrorDetails);
}
/** The answer was not the HTTP/JSON the protocol promises. */
export declare class ProtocolError extends TenqError {
    constructor(message: string, details?: ErrorDetails);
}
/** The body of a protocol error: `{"error": {"code", "message", "field", "leader"}}`. */
export interface WireError {
    code?: string;
    message?: string;
    field?: string;
    leader?: string;
}
/**
 * The error for a server's answer: by its error word when the library knows
 * it, else by the HTTP status; the field goes into the message too when the
 * message does not already say it.
 */
export declare function errorFromWire(wire: WireError | undefined, details: ErrorDetails & {
    status: number;
}): TenqError;
