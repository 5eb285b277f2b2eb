"use strict";
// SPDX-License-Identifier: Apache-2.0
/**
 * Typed errors. Every error the library throws is a TenqError; its subclass
 * (and `code`) mirrors the protocol's error word, so callers can write
 * `if (e instanceof NotFoundError)` or `switch (e.code)`.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.ProtocolError = exports.TlsError = exports.ConnectionError = exports.InternalError = exports.TimeoutError = exports.NotLeaderError = exports.UnavailableError = exports.QuotaExceededError = exports.OverloadedError = exports.RateLimitedError = exports.TooLargeError = exports.BatchClosedError = exports.ConflictError = exports.NotFoundError = exports.ForbiddenError = exports.UnauthenticatedError = exports.InvalidError = exports.TenqError = void 0;
exports.errorFromWire = errorFromWire;
class TenqError extends Error {
    code;
    status;
    field;
    leader;
    retryAfterMs;
    constructor(code, message, details = {}) {
        super(message, details.cause === undefined ? undefined : { cause: details.cause });
        this.name = new.target.name;
        this.code = code;
        this.status = details.status ?? 0;
        this.field = details.field;
        this.leader = details.leader;
        this.retryAfterMs = details.retryAfterMs;
    }
}
exports.TenqError = TenqError;
/** 400: a bad request or argument; `field` names it. Also refused locally, before sending. */
class InvalidError extends TenqError {
    constructor(message, details = {}) {
        super("invalid", message, { status: 400, ...details });
    }
}
exports.InvalidError = InvalidError;
/** 401: a missing or unknown token. */
class UnauthenticatedError extends TenqError {
    constructor(message, details = {}) {
        super("unauthenticated", message, { status: 401, ...details });
    }
}
exports.UnauthenticatedError = UnauthenticatedError;
/** 403: the token may not do this. */
class ForbiddenError extends TenqError {
    constructor(message, details = {}) {
        super("forbidden", message, { status: 403, ...details });
    }
}
exports.ForbiddenError = ForbiddenError;
/** 404: no such job (another tenant's job looks the same). */
class NotFoundError extends TenqError {
    constructor(message, details = {}) {
        super("not_found", message, { status: 404, ...details });
    }
}
exports.NotFoundError = NotFoundError;
/** 409: a stale lease token, or a job in a state that does not allow it. */
class ConflictError extends TenqError {
    constructor(message, details = {}) {
        super("conflict", message, { status: 409, ...details });
    }
}
exports.ConflictError = ConflictError;
/** 409 batch_closed: jobs added to a batch that is closed (its jobs all finished, its callbacks made); nothing was added. */
class BatchClosedError extends ConflictError {
    code = "batch_closed";
}
exports.BatchClosedError = BatchClosedError;
/** 413: a body or a field past a limit. */
class TooLargeError extends TenqError {
    constructor(message, details = {}) {
        super("too_large", message, { status: 413, ...details });
    }
}
exports.TooLargeError = TooLargeError;
/**
 * 429: the server asks the caller to come back later (`retryAfterMs`);
 * nothing of the request was done. The base of every 429: one of this
 * class itself is `rate_limited`.
 */
class RateLimitedError extends TenqError {
    constructor(message, details = {}) {
        super("rate_limited", message, { status: 429, ...details });
    }
}
exports.RateLimitedError = RateLimitedError;
/**
 * 429 overloaded: a submit while the server's jobs fill its memory budget;
 * nothing of it was made. The client's submits send it again, under the same
 * request key, after the Retry-After for up to `backpressureBudgetMs`, then
 * throw it.
 */
class OverloadedError extends RateLimitedError {
    code = "overloaded";
}
exports.OverloadedError = OverloadedError;
/**
 * 429 quota_exceeded: a submit that would take a tenant or a queue past its
 * quota; `field` names the limit (`max_queued` or `max_queued_bytes`), the
 * message the tenant or queue. Nothing of it was made. The client's submits
 * wait for room as for OverloadedError; the transaction helpers throw it for
 * SQLSTATE TQ429 (the driver's error as `cause`, no `retryAfterMs`), and the
 * transaction is then aborted.
 */
class QuotaExceededError extends RateLimitedError {
    code = "quota_exceeded";
}
exports.QuotaExceededError = QuotaExceededError;
/** 503 unavailable: the store is down or the server is stopping; nothing was changed. */
class UnavailableError extends TenqError {
    constructor(message, details = {}) {
        super("unavailable", message, { status: 503, ...details });
    }
}
exports.UnavailableError = UnavailableError;
/** 503 not_leader: a standby answered and named no leader (or the failover budget ran out). */
class NotLeaderError extends TenqError {
    constructor(message, details = {}) {
        super("not_leader", message, { status: 503, ...details });
    }
}
exports.NotLeaderError = NotLeaderError;
/** No answer in time (a request, or `wait` for a job that did not finish). */
class TimeoutError extends TenqError {
    constructor(message, details = {}) {
        super("timeout", message, details);
    }
}
exports.TimeoutError = TimeoutError;
/** 500: a fault in the server. */
class InternalError extends TenqError {
    constructor(message, details = {}) {
        super("internal", message, { status: 500, ...details });
    }
}
exports.InternalError = InternalError;
/** No server could be reached, or the connection broke, within the failover budget. */
class ConnectionError extends TenqError {
    constructor(message, details = {}) {
        super("connection", message, details);
    }
}
exports.ConnectionError = ConnectionError;
/**
 * An https server's certificate did not verify (an unknown CA, an expired
 * certificate, a name it does not hold), or the server refused this
 * client's certificate. Configuration: thrown at once, not retried.
 */
class TlsError extends ConnectionError {
    constructor(message, details = {}) {
        super(message, details);
        Object.defineProperty(this, "code", { value: "tls" });
    }
}
exports.TlsError = TlsError;
/** The answer was not the HTTP/JSON the protocol promises. */
class ProtocolError extends TenqError {
    constructor(message, details = {}) {
        super("protocol", message, details);
    }
}
exports.ProtocolError = ProtocolError;
const byCode = new Map(Object.entries({
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
const byStatus = new Map([
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
/**
 * The error for a server's answer: by its error word when the library knows
 * it, else by the HTTP status; the field goes into the message too when the
 * message does not already say it.
 */
function errorFromWire(wire, details) {
    const code = wire?.code;
    const field = wire?.field ?? details.field;
    let message = wire?.message || `HTTP ${details.status} from the server`;
    if (field && !message.includes(field))
        message = `${message} (field ${field})`;
    const all = { ...details, field, leader: wire?.leader ?? details.leader };
    const cls = (code !== undefined ? byCode.get(code) : undefined) ?? byStatus.get(details.status);
    if (cls)
        return new cls(message, all);
    return new TenqError(code || "internal", message, all);
}
