/**
 * HTTP/1.1 keep-alive requests to one of several tenq servers, with the
 * leader and failover rules of the protocol:
 *
 * - 307 (Tenq-Leader / Location) and 503 not_leader naming a leader: switch
 *   to that leader (added to the list when new) and send again at once.
 * - A connection failure, a timeout before any answer, or any other 503
 *   (it changed nothing): the next server; after a whole round of servers,
 *   a backoff of 50 ms doubling to 1 s (at least the server's Retry-After),
 *   until the failover budget runs out, counted from the first failure on
 *   the monotonic clock.
 * - A connection that broke (or timed out) after the request may have
 *   reached the server: sent again only when the request says it is safe
 *   (`resend`); a kept connection the server had closed before we wrote is
 *   always safe. Every try of a request carries the same headers (a
 *   submit's `Idempotency-Key` goes unchanged to every server tried).
 * - The server that answered last is where the next request starts.
 */
import * as http from "node:http";
import { type WireError } from "./errors";
export declare const VERSION = "0.1.0";
export interface TransportOptions {
    servers: string[];
    token?: string;
    connectTimeoutMs: number;
    requestTimeoutMs: number;
    failoverBudgetMs: number;
    /** Keep-alive sockets per server at most. */
    maxSockets: number;
    /** https: trusted CAs (instead of Node's), a client certificate and its key, as PEM. */
    tls?: {
        ca?: Buffer;
        cert?: Buffer;
        key?: Buffer;
    };
}
export type Method = "GET" | "HEAD" | "POST" | "PUT" | "DELETE";
export interface Request {
    method: Method;
    /** Path and query, already escaped. */
    path: string;
    /** JSON text. */
    body?: string;
    /** More request headers (e.g. `Idempotency-Key`), the same on every try. */
    headers?: Readonly<Record<string, string>>;
    /** Added to the request timeout: a long poll's wait. */
    extraMs?: number;
    /** Safe to send again after a connection broke mid-request (reads, fenced and idempotent writes). */
    resend?: boolean;
    /** Aborts the request (a worker stopping); it rejects with the signal's reason. */
    signal?: AbortSignal;
}
export interface Answer {
    status: number;
    headers: http.IncomingHttpHeaders;
    /** The parsed JSON body; undefined when there was none. */
    body: unknown;
    /** The base URL of the server that answered. */
    server: string;
    /** The body's length (UTF-16 code units: bytes for ASCII). */
    size: number;
}
/** The normalised base URL ("http://host:port", no trailing slash), or throws. */
export declare function baseUrl(text: string): string;
export declare class Transport {
    private readonly servers;
    private current;
    private readonly opts;
    private readonly auth;
    constructor(opts: TransportOptions);
    /** The base URLs, in the order they are tried (leaders learnt on the way are added). */
    get serverList(): string[];
    /** The server the next request goes to first. */
    get currentServer(): string;
    /** Closes every kept connection. */
    close(): void;
    private serverIndex;
    /** Sends the request, following leaders and failing over (see the top of this file). */
    send(req: Request): Promise<Answer>;
    private exhausted;
    /** One try on one server. */
    private once;
}
export declare function retryAfterMs(h: http.IncomingHttpHeaders): number | undefined;
export declare function wireError(text: string): WireError | undefined;
