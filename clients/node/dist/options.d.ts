import type { OpenTelemetryOption } from "./otel";
import type { TraceHook } from "./tracing";
export interface ClientOptions {
    /** One URL or several (a leader and its standbys). Default: `TENQ_SERVER` (comma-separated), then http://127.0.0.1:7070. */
    servers?: string | string[];
    /** Bearer token. Default: `TENQ_TOKEN`. */
    token?: string;
    /** The tenant of jobs that name none (a tenant token implies its own). */
    tenant?: string;
    /** The queue of jobs that name none. */
    queue?: string;
    /** How long to keep trying other servers (and the same one again) after a failure. Default 15 s. */
    failoverBudgetMs?: number;
    /**
     * How long a submit request refused with 429 `overloaded` or
     * `quota_exceeded` (nothing of it made) is sent again, under the same
     * `Idempotency-Key`, after the server's Retry-After, counted from its first
     * refusal; then OverloadedError / QuotaExceededError is thrown. Default
     * 60 s; 0: throw at once.
     */
    backpressureBudgetMs?: number;
    /** Default 5 s. */
    connectTimeoutMs?: number;
    /** An answer's deadline (a long poll adds its wait). Default 30 s. */
    requestTimeoutMs?: number;
    /** Keep-alive connections per server at most. Default 16. */
    maxSockets?: number;
    /** Gives the traceparent a submit carries when its spec has none (e.g. the active OpenTelemetry span's). */
    trace?: TraceHook;
    /**
     * OpenTelemetry spans of submits and of handlers' runs (otel.ts): by
     * default when `@opentelemetry/api` is installed; `false`: none; or the
     * API module to use.
     */
    openTelemetry?: OpenTelemetryOption;
    /** https: a PEM file of the CAs trusted to sign servers' certificates, instead of Node's. Default: `TENQ_CA_FILE`. */
    caFile?: string;
    /** https: a client certificate (PEM) for a server that takes them (mutual TLS). Default: `TENQ_CLIENT_CERT`. */
    clientCert?: string;
    /** Its private key (PEM, no passphrase). Default: `TENQ_CLIENT_KEY`. */
    clientKey?: string;
}
export declare const DEFAULT_SERVER = "http://127.0.0.1:7070";
export interface Resolved {
    servers: string[];
    token: string | undefined;
    tenant: string | undefined;
    queue: string | undefined;
    failoverBudgetMs: number;
    backpressureBudgetMs: number;
    connectTimeoutMs: number;
    requestTimeoutMs: number;
    maxSockets: number;
    trace: TraceHook | undefined;
    openTelemetry: OpenTelemetryOption;
    caFile: string | undefined;
    clientCert: string | undefined;
    clientKey: string | undefined;
}
/** The default of `backpressureBudgetMs`. */
export declare const DEFAULT_BACKPRESSURE_BUDGET_MS = 60000;
export declare function resolveOptions(o: ClientOptions, env?: NodeJS.ProcessEnv): Resolved;
