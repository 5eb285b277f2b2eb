// SPDX-License-Identifier: Apache-2.0
/**
 * Typed errors. Every error the library throws is a TenqError; its subclass
 * (and `code`) mirrors the protocol's error word, so callers can write
 * `if (e instanceof NotFoundError)` or `switch (e.code)`.
 */

/** The protocol's error words, plus the library's own `connection` and `protocol`. */
export type ErrorCode =
  | "invalid"
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "batch_closed"
  | "too_large"
  | "rate_limited"
  | "overloaded"
  | "quota_exceeded"
  | "unavailable"
  | "not_leader"
  | "timeout"
  | "internal"
  | "connection"
  | "tls"
  | "protocol";

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

export class TenqError extends Error {
  readonly code: ErrorCode | string;
  readonly status: number;
  readonly field: string | undefined;
  readonly leader: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode | string, message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = details.status ?? 0;
    this.field = details.field;
    this.leader = details.leader;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** 400: a bad request or argument; `field` names it. Also refused locally, before sending. */
export class InvalidError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("invalid", message, { status: 400, ...details });
  }
}
/** 401: a missing or unknown token. */
export class UnauthenticatedError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("unauthenticated", message, { status: 401, ...details });
  }
}
/** 403: the token may not do this. */
export class ForbiddenError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("forbidden", message, { status: 403, ...details });
  }
}
/** 404: no such job (another tenant's job looks the same). */
export class NotFoundError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("not_found", message, { status: 404, ...details });
  }
}
/** 409: a stale lease token, or a job in a state that does not allow it. */
export class ConflictError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("conflict", message, { status: 409, ...details });
  }
}
/** 409 batch_closed: jobs added to a batch that is closed (its jobs all finished, its callbacks made); nothing was added. */
export class BatchClosedError extends ConflictError {
  override readonly code: ErrorCode | string = "batch_closed";
}
/** 413: a body or a field past a limit. */
export class TooLargeError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("too_large", message, { status: 413, ...details });
  }
}
/**
 * 429: the server asks the caller to come back later (`retryAfterMs`);
 * nothing of the request was done. The base of every 429: one of this
 * class itself is `rate_limited`.
 */
export class RateLimitedError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("rate_limited", message, { status: 429, ...details });
  }
}
/**
 * 429 overloaded: a submit while the server's jobs fill its memory budget;
 * nothing of it was made. The client's submits send it again, under the same
 * request key, after the Retry-After for up to `backpressureBudgetMs`, then
 * throw it.
 */
export class OverloadedError extends RateLimitedError {
  override readonly code: ErrorCode | string = "overloaded";
}
/**
 * 429 quota_exceeded: a submit that would take a tenant or a queue past its
 * quota; `field` names the limit (`max_queued` or `max_queued_bytes`), the
 * message the tenant or queue. Nothing of it was made. The client's submits
 * wait for room as for OverloadedError; the transaction helpers throw it for
 * SQLSTATE TQ429 (the driver's error as `cause`, no `retryAfterMs`), and the
 * transaction is then aborted.
 */
export class QuotaExceededError extends RateLimitedError {
  override readonly code: ErrorCode | string = "quota_exceeded";
}
/** 503 unavailable: the store is down or the server is stopping; nothing was changed. */
export class UnavailableError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("unavailable", message, { status: 503, ...details });
  }
}
/** 503 not_leader: a standby answered and named no leader (or the failover budget ran out). */
export class NotLeaderError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("not_leader", message, { status: 503, ...details });
  }
}
/** No answer in time (a request, or `wait` for a job that did not finish). */
export class TimeoutError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("timeout", message, details);
  }
}
/** 500: a fault in the server. */
export class InternalError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("internal", message, { status: 500, ...details });
  }
}
/** No server could be reached, or the connection broke, within the failover budget. */
export class ConnectionError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("connection", message, details);
  }
}
/**
 * An https server's certificate did not verify (an unknown CA, an expired
 * certificate, a name it does not hold), or the server refused this
 * client's certificate. Configuration: thrown at once, not retried.
 */
export class TlsError extends ConnectionError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details);
    Object.defineProperty(this, "code", { value: "tls" });
  }
}
/** The answer was not the HTTP/JSON the protocol promises. */
export class ProtocolError extends TenqError {
  constructor(message: string, details: ErrorDetails = {}) {
    super("protocol", message, details);
  }
}

type ErrorClass = new (message: string, details?: ErrorDetails) => TenqError;

const byCode = new Map<string, ErrorClass>(Object.entries({
  invalid: InvalidError,
  unauthenticated: UnauthenticatedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  conflict: ConflictError,
  batch_closed: BatchClosedError,
  too_large: TooLargeError,
  rate_limited: RateLimitedError,
  overloaded: OverloadedError,
  quota_exceeded: QuotaExceededError,
  unavailable: UnavailableError,
  not_leader: NotLeaderError,
  timeout: TimeoutError,
  internal: InternalError,
  tls: TlsError,
  protocol: ProtocolError,
}));

const byStatus = new Map<number, ErrorClass>([
  [400, InvalidError],
  [401, UnauthenticatedError],
  [403, ForbiddenError],
  [404, NotFoundError],
  [408, TimeoutError],
  [409, ConflictError],
  [413, TooLargeError],
  [429, RateLimitedError],
  [500, InternalError],
  [503, UnavailableError],
  [504, TimeoutError],
]);

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
export function errorFromWire(wire: WireError | undefined, details: ErrorDetails & { status: number }): TenqError {
  const code = wire?.code;
  const field = wire?.field ?? details.field;
  let message = wire?.message || `HTTP ${details.status} from the server`;
  if (field && !message.includes(field)) message = `${message} (field ${field})`;
  const all: ErrorDetails = { ...details, field, leader: wire?.leader ?? details.leader };
  const cls = (code !== undefined ? byCode.get(code) : undefined) ?? byStatus.get(details.status);
  if (cls) return new cls(message, all);
  return new TenqError(code || "internal", message, all);
}
