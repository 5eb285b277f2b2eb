// SPDX-License-Identifier: Apache-2.0
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
import * as https from "node:https";

import { ConnectionError, ProtocolError, TenqError, TimeoutError, TlsError, errorFromWire, type WireError } from "./errors";

export const VERSION = "0.1.0";

export interface TransportOptions {
  servers: string[];
  token?: string;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  failoverBudgetMs: number;
  /** Keep-alive sockets per server at most. */
  maxSockets: number;
  /** https: trusted CAs (instead of Node's), a client certificate and its key, as PEM. */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
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

/** What one try on one server came to. */
type Attempt =
  | { kind: "answer"; status: number; headers: http.IncomingHttpHeaders; text: string }
  | { kind: "failed"; error: Error; reached: boolean; reused: boolean }
  | { kind: "timeout" }
  | { kind: "aborted"; reason: unknown };

interface Server {
  base: string;
  url: URL;
  agent: http.Agent;
  mod: typeof http | typeof https;
}

const BACKOFF_FIRST_MS = 50;
const BACKOFF_MAX_MS = 1000;
/** A standby may redirect us to a leader that redirects back while an election settles. */
const HOPS_MAX = 5;

/** The normalised base URL ("http://host:port", no trailing slash), or throws. */
export function baseUrl(text: string): string {
  let u: URL;
  try {
    u = new URL(text.trim());
  } catch {
    throw new TenqError("invalid", `bad server URL "${text}": not a URL`, { field: "servers" });
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new TenqError("invalid", `bad server URL "${text}": only http and https`, { field: "servers" });
  const path = u.pathname.replace(/\/+$/, "");
  return `${u.protocol}//${u.host}${path}`;
}

/** Sleeps `ms`, or less when `signal` aborts. */
const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });

export class Transport {
  private readonly servers: Server[] = [];
  private current = 0;
  private readonly opts: TransportOptions;
  private readonly auth: string | undefined;

  constructor(opts: TransportOptions) {
    this.opts = opts;
    if (opts.token !== undefined && /[\r\n]/.test(opts.token))
      throw new TenqError("invalid", "the token holds a line break", { field: "token" });
    this.auth = opts.token ? `Bearer ${opts.token}` : undefined;
    for (const s of opts.servers) this.serverIndex(baseUrl(s));
    if (!this.servers.length) throw new TenqError("invalid", "no server URL", { field: "servers" });
  }

  /** The base URLs, in the order they are tried (leaders learnt on the way are added). */
  get serverList(): string[] {
    return this.servers.map((s) => s.base);
  }

  /** The server the next request goes to first. */
  get currentServer(): string {
    return this.servers[this.current]!.base;
  }

  /** Closes every kept connection. */
  close(): void {
    for (const s of this.servers) s.agent.destroy();
  }

  private serverIndex(base: string): number {
    const i = this.servers.findIndex((s) => s.base === base);
    if (i >= 0) return i;
    const url = new URL(base);
    const tls = url.protocol === "https:";
    const agentOpts = { keepAlive: true, maxSockets: this.opts.maxSockets, maxFreeSockets: this.opts.maxSockets };
    this.servers.push({
      base,
      url,
      agent: tls ? new https.Agent({ ...agentOpts, ...(this.opts.tls ?? {}) }) : new http.Agent(agentOpts),
      mod: tls ? https : http,
    });
    return this.servers.length - 1;
  }

  /** Sends the request, following leaders and failing over (see the top of this file). */
  async send(req: Request): Promise<Answer> {
    let idx = this.current;
    let hops = 0;
    let backoff = BACKOFF_FIRST_MS;
    let budgetEnd = 0; // set at the first failure
    let triedThisRound = 0;
    let waitAtLeast = 0; // a Retry-After seen this round
    let staleRetried = false;
    let last: TenqError | undefined;

    for (;;) {
      const server = this.servers[idx]!;
      const a = await this.once(server, req);
      let failed: TenqError;
      if (a.kind === "answer") {
        const redirect = a.status === 307 || a.status === 308;
        if (!redirect && a.status !== 503) {
          this.current = idx;
          return {
            status: a.status,
            headers: a.headers,
            body: parseBody(a.text, server.base, a.status),
            server: server.base,
            size: a.text.length,
          };
        }
        const wire = redirect ? undefined : wireError(a.text);
        const leader = redirect ? leaderFromRedirect(a.headers, req.path) : wire?.leader || header(a.headers, "tenq-leader");
        if (leader && hops < HOPS_MAX) {
          hops++;
          let target: number;
          try {
            target = this.serverIndex(baseUrl(leader));
          } catch {
            throw new ProtocolError(`${server.base} named a bad leader URL "${leader}"`, { status: a.status });
          }
          if (target !== idx) {
            idx = target;
            continue;
          }
        }
        const retryAfter = retryAfterMs(a.headers);
        if (retryAfter !== undefined) waitAtLeast = Math.max(waitAtLeast, retryAfter);
        failed = redirect
          ? new ProtocolError(`${server.base} redirected ${req.method} ${req.path} without naming a leader`, { status: a.status })
          : errorFromWire(wire, { status: 503, retryAfterMs: retryAfter });
      } else if (a.kind === "aborted") {
        throw a.reason;
      } else if (a.kind === "timeout") {
        const t = new TimeoutError(
          `no answer from ${server.base} to ${req.method} ${req.path} within ${this.opts.requestTimeoutMs + (req.extraMs ?? 0)} ms`,
        );
        // the request reached the server, which may have acted on it
        if (!req.resend) throw t;
        failed = t;
      } else {
        const why = a.error.message || String(a.error);
        // a certificate refused, either way: trying again would not cure it
        if (isTlsRefusal(a.error)) throw new TlsError(`TLS with ${server.base} failed: ${why}`, { cause: a.error });
        if (a.reached && a.reused && !staleRetried) {
          // a kept connection the server closed while idle: the request never reached it
          staleRetried = true;
          continue;
        }
        if (a.reached && !req.resend)
          throw new ConnectionError(
            `lost the connection to ${server.base} during ${req.method} ${req.path} (${why}); the server may or may not have acted on it`,
            { cause: a.error },
          );
        failed = new ConnectionError(`cannot reach ${server.base}: ${why}`, { cause: a.error });
      }

      last = failed;
      const now = performance.now();
      if (!budgetEnd) budgetEnd = now + this.opts.failoverBudgetMs;
      idx = (idx + 1) % this.servers.length;
      hops = 0;
      if (++triedThisRound < this.servers.length && now < budgetEnd) continue;
      // every server failed once: back off, then go round again
      if (now >= budgetEnd) throw this.exhausted(last);
      // the last try comes when the budget runs out
      await sleep(Math.min(Math.max(backoff, waitAtLeast), budgetEnd - now), req.signal);
      if (req.signal?.aborted) throw req.signal.reason;
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      triedThisRound = 0;
      waitAtLeast = 0;
    }
  }

  private exhausted(last: TenqError): TenqError {
    if (this.servers.length === 1 && this.opts.failoverBudgetMs <= 0) return last;
    const list = this.servers.map((s) => s.base).join(", ");
    const msg = `${last.message} (gave up after ${this.opts.failoverBudgetMs} ms trying ${list})`;
    if (last instanceof ConnectionError) return new ConnectionError(msg, { cause: last.cause });
    return errorFromWire({ code: last.code, message: msg, field: last.field, leader: last.leader }, {
      status: last.status,
      retryAfterMs: last.retryAfterMs,
    });
  }

  /** One try on one server. */
  private once(server: Server, req: Request): Promise<Attempt> {
    return new Promise<Attempt>((resolve) => {
      const signal = req.signal;
      if (signal?.aborted) {
        resolve({ kind: "aborted", reason: signal.reason });
        return;
      }
      const headers: http.OutgoingHttpHeaders = {
        "User-Agent": `tenq-node/${VERSION}`,
        Accept: "application/json",
      };
      if (this.auth) headers["Authorization"] = this.auth;
      if (req.headers) Object.assign(headers, req.headers);
      const body = req.body;
      if (body !== undefined) {
        headers["Content-Type"] = "application/json";
        headers["Content-Length"] = Buffer.byteLength(body, "utf8");
      } else if (req.method === "POST" || req.method === "PUT") {
        headers["Content-Length"] = 0;
      }
      const r = server.mod.request({
        agent: server.agent,
        protocol: server.url.protocol,
        hostname: server.url.hostname.replace(/^\[|\]$/g, ""),
        port: server.url.port || (server.url.protocol === "https:" ? 443 : 80),
        method: req.method,
        path: server.url.pathname.replace(/\/$/, "") + req.path,
        headers,
      });
      let settled = false;
      let connected = false;
      let reused = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const finish = (a: Attempt): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (connectTimer) clearTimeout(connectTimer);
        signal?.removeEventListener("abort", onAbort);
        resolve(a);
      };
      const timer = setTimeout(() => {
        finish(connected ? { kind: "timeout" } : connectFailure("connect timed out"));
        r.destroy();
      }, this.opts.requestTimeoutMs + (req.extraMs ?? 0));
      const connectFailure = (why: string): Attempt => ({ kind: "failed", error: new Error(why), reached: false, reused: false });
      const onAbort = (): void => {
        finish({ kind: "aborted", reason: signal?.reason });
        r.destroy();
      };
      signal?.addEventListener("abort", onAbort, { once: true });

      r.on("socket", (sock) => {
        reused = r.reusedSocket;
        if (!sock.connecting) {
          connected = true;
          return;
        }
        connectTimer = setTimeout(() => {
          finish(connectFailure(`connect timed out after ${this.opts.connectTimeoutMs} ms`));
          r.destroy();
        }, this.opts.connectTimeoutMs);
        sock.once("connect", () => {
          connected = true;
          if (connectTimer) clearTimeout(connectTimer);
        });
      });
      r.on("error", (err: NodeJS.ErrnoException) => {
        // a socket that never connected cannot have carried the request
        finish({ kind: "failed", error: err, reached: connected, reused });
      });
      r.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
          finish({ kind: "answer", status: res.statusCode ?? 0, headers: res.headers, text });
        });
        res.on("error", (err: Error) => finish({ kind: "failed", error: err, reached: true, reused: false }));
        res.on("aborted", () =>
          finish({ kind: "failed", error: new Error("the answer was cut short"), reached: true, reused: false }),
        );
      });
      if (body !== undefined) r.end(body, "utf8");
      else r.end();
    });
  }
}

/** OpenSSL's certificate verification errors (Node gives them as `code`). */
const VERIFY_CODES = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** A server's certificate not verified, or an alert from the server refusing ours. */
function isTlsRefusal(e: Error): boolean {
  const code = (e as NodeJS.ErrnoException).code ?? "";
  return VERIFY_CODES.has(code) || /^ERR_SSL_.*ALERT/.test(code);
}

function header(h: http.IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

export function retryAfterMs(h: http.IncomingHttpHeaders): number | undefined {
  const v = header(h, "retry-after");
  if (v === undefined) return undefined;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** The leader's base URL from a 307: Tenq-Leader, else Location less the request's path. */
function leaderFromRedirect(h: http.IncomingHttpHeaders, path: string): string | undefined {
  const named = header(h, "tenq-leader");
  if (named) return named;
  const loc = header(h, "location");
  if (!loc) return undefined;
  if (loc.endsWith(path)) return loc.slice(0, loc.length - path.length);
  try {
    return new URL(loc).origin;
  } catch {
    return undefined;
  }
}

export function wireError(text: string): WireError | undefined {
  try {
    const v: unknown = JSON.parse(text);
    if (v && typeof v === "object" && "error" in v) {
      const e: unknown = v.error;
      if (e && typeof e === "object") return e as WireError;
    }
  } catch {
    // not JSON: the status speaks
  }
  return undefined;
}

function parseBody(text: string, server: string, status: number): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    if (status >= 200 && status < 300) throw new ProtocolError(`the answer from ${server} is not JSON`, { status, cause: e });
    return text; // an error page: the status speaks
  }
}
