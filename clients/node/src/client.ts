// SPDX-License-Identifier: Apache-2.0
/**
 * The client: every request of the protocol a submitter and a worker make,
 * over keep-alive connections to one server or several (see transport.ts for
 * leader following and failover). Answers come back as camelCase objects;
 * refusals as the TenqError subclass of their error code.
 */
import { readFileSync } from "node:fs";

import {
  ConflictError,
  InvalidError,
  NotFoundError,
  OverloadedError,
  ProtocolError,
  QuotaExceededError,
  TenqError,
  TimeoutError,
  errorFromWire,
  type WireError,
} from "./errors";
import { RequestKeys } from "./ids";
import type { JsonValue } from "./json";
import { resolveOptions, type ClientOptions, type Resolved } from "./options";
import { checkTraceparent } from "./tracing";
import { Transport, VERSION, retryAfterMs, type Answer, type Method } from "./transport";
import { instrumentation, type Instrumentation, type Sending } from "./otel";
import { submitManyWireTx, submitWireTx, type Queryable } from "./tx";
import type {
  Attempt,
  BatchCreated,
  BatchFilter,
  BatchInfo,
  BatchPage,
  BatchResult,
  CreateBatchOptions,
  JobParents,
  CancelResult,
  FailOptions,
  Health,
  Job,
  JobPage,
  JobSpec,
  KeyFilter,
  KeyPage,
  KeySetting,
  LeaseRequest,
  LeaseResult,
  ListFilter,
  MorgueFilter,
  MorguePage,
  Outcome,
  OutcomeResult,
  QueueInfo,
  QueueSettings,
  Schedule,
  ScheduleSpec,
  SubmitResult,
  TenantInfo,
  TenantSettings,
} from "./types";
import { isFinished } from "./types";
import {
  asList,
  asObject,
  attemptFromWire,
  batchFromWire,
  batchResult,
  callbackToWire,
  hasIndexRef,
  parentsFromWire,
  jobFromWire,
  jobToWire,
  keyPageFromWire,
  keySettingFromWire,
  leasedFromWire,
  outcomeJson,
  outcomeResult,
  scheduleFromWire,
  scheduleToWire,
  submitResult,
} from "./wire";
import { infoFromWire, settingsToWire } from "./settings";
import { eventResultFromWire, stepsFromWire, type EventResult, type Step } from "./steps";
import { checkJson } from "./json";

/** The most jobs one POST /v1/jobs takes. */
export const MAX_BATCH_JOBS = 10_000;
/** Under the server's default body limit (32 MiB). */
const MAX_BATCH_BYTES = 32 * 1024 * 1024 - 64 * 1024;
/** The server caps one wait (`--max-wait`, 60 s). */
const WAIT_CHUNK_MS = 60_000;
/**
 * How long `wait` takes "not found" for a job made in a transaction (an odd
 * id) that the leader has not taken in yet (it does within milliseconds of
 * the commit; a job whose transaction rolled back never appears).
 */
const TX_TAKE_IN_MS = 5_000;
/** The pause after a 429 that names no Retry-After (the server sends 1 s), and the least one. */
const BACKPRESSURE_PAUSE_MS = 1_000;
const BACKPRESSURE_PAUSE_MIN_MS = 50;

const sleepFor = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = (): void => {
      clearTimeout(t);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener("abort", stop, { once: true });
  });

/** The header a submit request is made safe to send again with. */
export const REQUEST_KEY_HEADER = "Idempotency-Key";

export interface SubmitCallOptions {
  /**
   * The request's `Idempotency-Key` (default: a fresh one per call). Give
   * your own to make a submit safe to repeat across processes: the server
   * answers the same key and body with its first answer for a while
   * (`--request-key-ttl`, 10 minutes by default) and makes nothing; the
   * same key with another body is a ConflictError (field `Idempotency-Key`).
   */
  requestKey?: string;
}

export interface SubmitManyOptions extends SubmitCallOptions {
  /** Requests in flight at once (default 2). */
  concurrency?: number;
  /** Jobs per request, at most 10,000 (the default). */
  batchSize?: number;
}

export interface WaitOptions {
  /** Give up (TimeoutError) after this long; default: wait until the job finishes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

interface CallOptions {
  body?: string;
  headers?: Readonly<Record<string, string>>;
  resend?: boolean;
  extraMs?: number;
  signal?: AbortSignal;
}

function checkId(id: number): string {
  if (!Number.isSafeInteger(id) || id <= 0) throw new InvalidError(`bad job id ${String(id)}`, { field: "id" });
  return String(id);
}

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The error an answer carries. */
export function answerError(a: Answer): TenqError {
  let wire: WireError | undefined;
  const b = a.body;
  if (b && typeof b === "object" && "error" in b) {
    const e: unknown = b.error;
    if (e && typeof e === "object") wire = e as WireError;
  }
  return errorFromWire(wire, { status: a.status, retryAfterMs: retryAfterMs(a.headers) });
}

/** The server answered with the first answer to this request key (nothing was made this time). */
function isReplay(a: Answer): boolean {
  const v = a.headers["idempotent-replayed"];
  return (Array.isArray(v) ? v[0] : v) === "true";
}

/** The TLS files of the options, read now: a file that cannot be read is told at once. */
function tlsFiles(o: Resolved): { tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer } } {
  if (!o.caFile && !o.clientCert && !o.clientKey) return {};
  if (!o.clientCert !== !o.clientKey)
    throw new InvalidError("a client certificate needs both its certificate and its key file", {
      field: o.clientCert ? "clientKey" : "clientCert",
    });
  const read = (path: string, field: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (e) {
      throw new InvalidError(`${field} ${path}: ${(e as Error).message}`, { field });
    }
  };
  const tls: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  if (o.caFile) tls.ca = read(o.caFile, "caFile");
  if (o.clientCert) tls.cert = read(o.clientCert, "clientCert");
  if (o.clientKey) tls.key = read(o.clientKey, "clientKey");
  return { tls };
}

export class Client {
  readonly options: Resolved;
  private readonly transport: Transport;
  private readonly keys = new RequestKeys();
  /** The OpenTelemetry spans, when `@opentelemetry/api` is there (otel.ts). */
  readonly otel: Instrumentation | undefined;

  constructor(options: ClientOptions = {}) {
    this.options = resolveOptions(options);
    this.otel = instrumentation(this.options.openTelemetry, VERSION);
    this.transport = new Transport({
      servers: this.options.servers,
      connectTimeoutMs: this.options.connectTimeoutMs,
      requestTimeoutMs: this.options.requestTimeoutMs,
      failoverBudgetMs: this.options.failoverBudgetMs,
      maxSockets: this.options.maxSockets,
      ...(this.options.token !== undefined ? { token: this.options.token } : {}),
      ...tlsFiles(this.options),
    });
  }

  /** The servers tried, in order (leaders learnt from redirects are added). */
  get servers(): string[] {
    return this.transport.serverList;
  }

  /** The server the next request goes to first: the one that answered last. */
  get currentServer(): string {
    return this.transport.currentServer;
  }

  /** Closes the kept connections. The client can still be used: it connects again. */
  close(): void {
    this.transport.close();
  }

  /** One request; any answer, errors included. */
  async send(method: Method, path: string, o: CallOptions = {}): Promise<Answer> {
    return this.transport.send({ method, path, ...o });
  }

  /** One request; a 2xx answer's body, else its typed error. */
  async call(method: Method, path: string, o: CallOptions = {}): Promise<unknown> {
    const a = await this.send(method, path, o);
    if (a.status >= 200 && a.status < 300) return a.body;
    throw answerError(a);
  }

  /**
   * A job as it goes on the wire, checked (refused with InvalidError before
   * anything is sent), with its traceparent (the spec's, else the `trace`
   * hook's). It carries an `idempotency_key` only when the spec has one.
   */
  prepare(spec: JobSpec, index?: number, sending?: Sending): Record<string, unknown> {
    const w = jobToWire(spec, this.options, index);
    if (w["traceparent"] === undefined && this.options.trace) {
      const tp = this.options.trace();
      if (tp !== undefined && tp !== null) w["traceparent"] = checkTraceparent(tp, "the trace hook's traceparent");
    }
    if (w["traceparent"] === undefined && sending?.traceparent !== undefined) w["traceparent"] = sending.traceparent;
    return w;
  }

  /** Runs a submit call inside its OpenTelemetry producer span (when there is one). */
  private async sending<T>(specs: readonly JobSpec[], fn: (s: Sending | undefined) => Promise<T>, idOf?: (r: T) => number): Promise<T> {
    if (!this.otel) return fn(undefined);
    const first = specs[0];
    const queue = first?.queue ?? this.options.queue;
    const s = this.otel.send(queue, specs.length, first?.tenant ?? this.options.tenant);
    try {
      const r = await fn(s);
      s.done(idOf?.(r));
      return r;
    } catch (e) {
      s.fail(e);
      throw e;
    }
  }

  /**
   * Submits one job. Safe to send again: the request carries an
   * `Idempotency-Key` made before its first try and the same on every
   * retry (to any server), so a retry whose first try was made is
   * answered with the first answer (`replayed: true`) and makes nothing.
   * A 429 `overloaded` or `quota_exceeded` is waited out for up to
   * `backpressureBudgetMs` (default 60 s), then thrown (OverloadedError,
   * QuotaExceededError).
   */
  async submit(spec: JobSpec, o: SubmitCallOptions = {}): Promise<SubmitResult> {
    if (!this.otel) return this.submitPrepared(this.prepare(spec), o);
    return this.sending([spec], (s) => this.submitPrepared(this.prepare(spec, undefined, s), o), (r) => r.id);
  }

  /** Submits a job made by `prepare`. */
  async submitPrepared(fields: Record<string, unknown>, o: SubmitCallOptions = {}): Promise<SubmitResult> {
    const a = await this.postJobs(JSON.stringify(fields), o.requestKey ?? this.keys.next());
    return submitResult(a.body, "submit", isReplay(a));
  }

  /** POST /v1/jobs under a request key: a 2xx answer, else its typed error (see `postKeyed`). */
  private async postJobs(body: string, key: string, signal?: AbortSignal): Promise<Answer> {
    return this.postKeyed("/v1/jobs", body, key, signal);
  }

  /**
   * Submits many jobs, 10,000 a request (more are split), each answered at
   * its index: made, deduplicated, or refused on its own. Each request
   * carries its own `Idempotency-Key`, reused on its retries (a 429
   * `overloaded` or `quota_exceeded` is sent again after the Retry-After
   * for up to `backpressureBudgetMs` from its first refusal). A request that
   * fails whole throws; the requests before it were made (calling again
   * makes them again, unless the jobs carry their own idempotency keys or
   * the call gives a `requestKey`: request n > 0 of a split call then goes
   * under `<requestKey>.<n>`).
   */
  async submitMany(specs: readonly JobSpec[], o: SubmitManyOptions = {}): Promise<BatchResult[]> {
    if (!this.otel) return this.submitManyIn(specs, o, undefined);
    return this.sending(specs, (s) => this.submitManyIn(specs, o, s));
  }

  private async submitManyIn(specs: readonly JobSpec[], o: SubmitManyOptions, sending: Sending | undefined): Promise<BatchResult[]> {
    const per = Math.max(1, Math.min(o.batchSize ?? MAX_BATCH_JOBS, MAX_BATCH_JOBS));
    // every job is checked and keyed before the first request; each request's
    // body is written when it is its turn, while the one before is out
    const wires = specs.map((spec, i) => this.prepare(spec, i, sending));
    if (wires.some(hasIndexRef)) return this.submitManyIndexed(wires, per, o);
    const out = new Array<BatchResult>(specs.length);
    let cursor = 0;
    let failed = false;
    let requests = 0;
    const nextChunk = (): { start: number; body: string; n: number; key: string } | undefined => {
      if (cursor >= wires.length || failed) return undefined;
      const start = cursor;
      const nth = requests++;
      const key = o.requestKey === undefined ? this.keys.next() : nth ? `${o.requestKey}.${nth}` : o.requestKey;
      const parts: string[] = [];
      let bytes = 0;
      while (cursor < wires.length && parts.length < per) {
        const text = JSON.stringify(wires[cursor]);
        if (parts.length && bytes + text.length + 1 > MAX_BATCH_BYTES) break;
        parts.push(text);
        bytes += text.length + 1;
        wires[cursor++] = undefined as unknown as Record<string, unknown>;
      }
      return { start, body: `{"jobs":[${parts.join(",")}]}`, n: parts.length, key };
    };
    const lane = async (): Promise<void> => {
      for (let c = nextChunk(); c; c = nextChunk()) {
        const a = await this.postJobs(c.body, c.key).catch((e: unknown) => {
          failed = true; // no more requests after one failed whole
          throw e;
        });
        const items = asList(asObject(a.body, "submit")["jobs"], "submit");
        if (items.length !== c.n) throw new ProtocolError(`the server answered ${items.length} results for ${c.n} jobs`);
        const replayed = isReplay(a);
        for (let k = 0; k < c.n; k++) out[c.start + k] = batchResult(items[k], "submit", replayed);
      }
    };
    const lanes = Math.max(1, Math.min(o.concurrency ?? 2, Math.ceil(specs.length / per)));
    await Promise.all(Array.from({ length: lanes }, lane));
    return out;
  }

  /**
   * submitMany of jobs that name earlier ones by `index(i)`: one request
   * after another; an index into an earlier request becomes that job's id,
   * and a job naming one that was refused is refused too (ConflictError,
   * field `depends_on`), as the server does within a request.
   */
  private async submitManyIndexed(wires: Record<string, unknown>[], per: number, o: SubmitManyOptions): Promise<BatchResult[]> {
    const out = new Array<BatchResult>(wires.length);
    let nth = 0;
    for (let start = 0; start < wires.length; start += per) {
      const end = Math.min(wires.length, start + per);
      const slots: number[] = [];
      const here = new Map<number, number>(); // a position in the list -> in the request
      const parts: string[] = [];
      for (let i = start; i < end; i++) {
        const w = wires[i]!;
        let refused: TenqError | undefined;
        const deps = (w["depends_on"] as unknown[] | undefined)?.map((d) => {
          if (typeof d !== "object" || d === null) return d;
          const j = (d as { index: number }).index;
          if (j < 0 || j >= i) refused ??= new InvalidError(`jobs[${i}].dependsOn: index ${j} names no earlier job`, { field: "depends_on" });
          else if (here.has(j)) return { index: here.get(j) };
          else if (j < start && out[j]?.ok) return (out[j] as { id: number }).id;
          else refused ??= new ConflictError(`jobs[${i}].dependsOn: index ${j} names a job that was refused`, { field: "depends_on" });
          return d;
        });
        if (refused) {
          out[i] = { ok: false, error: refused };
          continue;
        }
        here.set(i, parts.length);
        slots.push(i);
        parts.push(JSON.stringify(deps ? { ...w, depends_on: deps } : w));
      }
      if (!parts.length) continue;
      const key = o.requestKey === undefined ? this.keys.next() : nth ? `${o.requestKey}.${nth}` : o.requestKey;
      nth++;
      const a = await this.postJobs(`{"jobs":[${parts.join(",")}]}`, key);
      const items = asList(asObject(a.body, "submit")["jobs"], "submit");
      if (items.length !== slots.length) throw new ProtocolError(`the server answered ${items.length} results for ${slots.length} jobs`);
      const replayed = isReplay(a);
      slots.forEach((i, k) => (out[i] = batchResult(items[k], "submit", replayed)));
    }
    return out;
  }

  /**
   * Submits a job in the caller's own PostgreSQL transaction (the server's
   * SQL function tenq.submit, on `db`: a pg.Client or PoolClient inside
   * BEGIN ... COMMIT) and returns its id; the job exists only if that
   * transaction commits. Sends nothing to the server. The client's default
   * tenant and queue and its `trace` hook apply, as for `submit`; a tenant
   * is required (no token implies one here). See `submitTx` in tx.ts.
   */
  async submitTx(db: Queryable, spec: JobSpec): Promise<number> {
    return this.sending([spec], (s) => submitWireTx(db, this.prepare(spec, undefined, s)), (id) => id);
  }

  /** Submits many jobs in the caller's transaction (tenq.submit_many); their ids in order. */
  async submitManyTx(db: Queryable, specs: readonly JobSpec[]): Promise<number[]> {
    return this.sending(specs, (s) =>
      submitManyWireTx(
        db,
        specs.map((spec, i) => this.prepare(spec, i, s)),
      ),
    );
  }

  async get(id: number): Promise<Job> {
    return jobFromWire(await this.call("GET", `/v1/jobs/${checkId(id)}`, { resend: true }));
  }

  /**
   * Waits for the job to finish (succeeded, cancelled, dead; a merged job is
   * followed to the job that took its payloads) and returns it. Throws
   * TimeoutError when `timeoutMs` passes first. A job made in a transaction
   * (`submitTx`: an odd id) not found yet is looked for again for up to 5 s:
   * the server takes it in milliseconds after the commit.
   */
  async wait(id: number, o: WaitOptions = {}): Promise<Job> {
    const start = performance.now();
    const end = o.timeoutMs === undefined ? Infinity : start + o.timeoutMs;
    let at = id;
    for (;;) {
      const left = Math.max(0, Math.ceil(end - performance.now()));
      const chunk = Math.min(left, WAIT_CHUNK_MS);
      let body: unknown;
      try {
        body = await this.call("GET", `/v1/jobs/${checkId(at)}/wait${query({ timeout_ms: chunk })}`, {
          resend: true,
          extraMs: chunk,
          ...(o.signal ? { signal: o.signal } : {}),
        });
      } catch (e) {
        // a job made in a transaction (an odd id) is there once the leader has taken it in,
        // milliseconds after the commit: until then it is not found
        const since = performance.now() - start;
        if (!(e instanceof NotFoundError) || at !== id || id % 2 !== 1 || since >= TX_TAKE_IN_MS || performance.now() >= end) throw e;
        await sleepFor(Math.min(50, TX_TAKE_IN_MS - since, Math.max(0, end - performance.now())), o.signal);
        continue;
      }
      const job = jobFromWire(body);
      if (job.state === "merged" && job.mergedInto !== undefined) {
        at = job.mergedInto;
        continue;
      }
      if (isFinished(job.state)) return job;
      if (performance.now() >= end)
        throw new TimeoutError(`job ${at} is still ${job.state} after ${o.timeoutMs} ms`);
    }
  }

  /** Cancels a job: at once when it is not leased, else its worker is told (`cancelRequested`). */
  async cancel(id: number): Promise<CancelResult> {
    const b = asObject(await this.call("POST", `/v1/jobs/${checkId(id)}/cancel`, { resend: true }), "cancel");
    return {
      id: typeof b["id"] === "number" ? b["id"] : id,
      state: b["state"] as CancelResult["state"],
      cancelRequested: b["cancel_requested"] === true,
    };
  }

  /** One page of jobs, newest first; pass `next` as `afterId` for the following one. */
  async list(f: ListFilter = {}): Promise<JobPage> {
    const q = query({
      tenant: f.tenant,
      queue: f.queue,
      type: f.type,
      state: f.state,
      key: f.key,
      after_id: f.afterId,
      limit: f.limit,
    });
    const b = asObject(await this.call("GET", `/v1/jobs${q}`, { resend: true }), "list");
    return { jobs: asList(b["jobs"], "list").map(jobFromWire), next: typeof b["next"] === "number" ? b["next"] : null };
  }

  /** Every job matching the filter, page after page. */
  async *listAll(f: ListFilter = {}): AsyncGenerator<Job, void, undefined> {
    let afterId = f.afterId;
    for (;;) {
      const page = await this.list({ ...f, ...(afterId !== undefined ? { afterId } : {}) });
      yield* page.jobs;
      if (page.next === null || !page.jobs.length) return;
      afterId = page.next;
    }
  }

  /** A page of dead jobs (newest death first, or by id). */
  async morgue(f: MorgueFilter = {}): Promise<MorguePage> {
    const q = query({ tenant: f.tenant, queue: f.queue, type: f.type, sort: f.sort, limit: f.limit, after: f.after });
    const b = asObject(await this.call("GET", `/v1/morgue${q}`, { resend: true }), "morgue");
    const next = b["next"];
    return {
      jobs: asList(b["jobs"], "morgue").map(jobFromWire),
      next: typeof next === "number" || typeof next === "string" ? next : null,
    };
  }

  /** Takes a dead job out of the morgue (attempts reset, run at once). */
  async requeue(id: number): Promise<{ id: number; state: string }> {
    const b = asObject(await this.call("POST", `/v1/morgue/${checkId(id)}/requeue`, { resend: true }), "requeue");
    return { id: typeof b["id"] === "number" ? b["id"] : id, state: String(b["state"]) };
  }

  /** GET /v1/queues/{name}: the queue's settings, pauses and counts. */
  async getQueue(name: string): Promise<QueueInfo> {
    return this.queueCall("GET", name, "");
  }

  /**
   * PUT /v1/queues/{name} (admin): settings in camelCase (`leaseMs`,
   * `maxAttempts`, `timeoutMs`, `rate`, `tenantRate`, ...; null removes a
   * limit); the queue as it is then. (The protocol's snake_case names are
   * still taken, with a deprecation warning.)
   */
  async setQueue(name: string, settings: QueueSettings): Promise<QueueInfo> {
    return this.queueCall("PUT", name, "", JSON.stringify(settingsToWire(settings, "queue")));
  }

  /**
   * Pauses the queue whole (admin), or only `tenant`'s jobs in it (a tenant
   * token: its own tenant when none is named): nothing of it is leased
   * until resumed; submits are still taken and leased jobs run to their
   * end. Resolves to the queue (`paused`, `paused_tenants`).
   */
  async pauseQueue(name: string, o: { tenant?: string } = {}): Promise<QueueInfo> {
    return this.queueCall("POST", name, "/pause", o.tenant === undefined ? undefined : JSON.stringify({ tenant: o.tenant }));
  }

  /** Undoes `pauseQueue` (the same `tenant`): the jobs may be leased at once. Resolves to the queue. */
  async resumeQueue(name: string, o: { tenant?: string } = {}): Promise<QueueInfo> {
    return this.queueCall("POST", name, "/resume", o.tenant === undefined ? undefined : JSON.stringify({ tenant: o.tenant }));
  }

  /** GET /v1/tenants/{name}: the tenant's settings and counts. */
  async getTenant(name: string): Promise<TenantInfo> {
    const b = await this.call("GET", `/v1/tenants/${encodeURIComponent(name)}`, { resend: true });
    return infoFromWire<TenantInfo>(asObject(b, "tenant"));
  }

  /** PUT /v1/tenants/{name} (admin): `slots`, `weight`, `rate`, `ratePeriodMs`, `rateBurst`; the tenant then. */
  async setTenant(name: string, settings: TenantSettings): Promise<TenantInfo> {
    const body = JSON.stringify(settingsToWire(settings, "tenant"));
    const b = await this.call("PUT", `/v1/tenants/${encodeURIComponent(name)}`, { body, resend: true });
    return infoFromWire<TenantInfo>(asObject(b, "tenant"));
  }

  /** GET /v1/keys: the keys resident jobs name (docs/SEMANTICS.md, "Concurrency keys"), those at their limit first. */
  async listKeys(f: KeyFilter = {}): Promise<KeyPage> {
    const q = query({ tenant: f.tenant ?? this.options.tenant, key: f.key, at_limit: f.atLimit ? "true" : undefined, limit: f.limit });
    return keyPageFromWire(await this.call("GET", `/v1/keys${q}`, { resend: true }));
  }

  /**
   * PUT /v1/key-settings (admin): the settings of `key` of `tenant`, or (a
   * key ending in `*`) of every key beginning with the rest, whole (a
   * setting left out: the jobs' own). The setting as stored.
   */
  async setKeySetting(s: { tenant: string; key: string; concurrency?: number | null; rate?: number | null; ratePeriodMs?: number; rateBurst?: number | null }): Promise<KeySetting> {
    const body: Record<string, unknown> = { tenant: s.tenant, key: s.key, concurrency: s.concurrency ?? null, rate: s.rate ?? null, rate_burst: s.rateBurst ?? null };
    if (s.ratePeriodMs !== undefined) body["rate_period_ms"] = s.ratePeriodMs;
    const b = await this.call("PUT", "/v1/key-settings", { body: JSON.stringify(body), resend: true });
    return keySettingFromWire(b);
  }

  /** GET /v1/key-settings: the key settings (of `tenant`, default the client's). */
  async keySettings(tenant: string | undefined = this.options.tenant): Promise<KeySetting[]> {
    const o = asObject(await this.call("GET", `/v1/key-settings${query({ tenant })}`, { resend: true }), "key settings");
    return asList(o["settings"], "key settings").map(keySettingFromWire);
  }

  /** DELETE /v1/key-settings (admin); NotFoundError when there is none. */
  async deleteKeySetting(tenant: string, key: string): Promise<void> {
    await this.call("DELETE", `/v1/key-settings${query({ tenant, key })}`, { resend: true });
  }

  /** A queue request; each may be sent again: the same request sets the same state. */
  private async queueCall(method: Method, name: string, tail: string, body?: string): Promise<QueueInfo> {
    const path = `/v1/queues/${encodeURIComponent(name)}${tail}`;
    const b = await this.call(method, path, { ...(body !== undefined ? { body } : {}), resend: true });
    return infoFromWire<QueueInfo>(asObject(b, "queue"));
  }

  // ------------------------------------------------------------------ schedules and attempts

  /**
   * PUT /v1/schedules/{name}: creates the schedule or replaces it whole (its
   * `createdAt` and last tick stay). The job's `queue` and `tenant` default
   * to the client's. A bad expression, zone or job field rejects with
   * InvalidError whose `field` names it (`cron`, `timezone`,
   * `job.timeout_ms`, ...), and nothing changes.
   */
  async putSchedule(name: string, spec: ScheduleSpec): Promise<Schedule> {
    const body = JSON.stringify(scheduleToWire(spec, this.options));
    return scheduleFromWire(await this.call("PUT", schedulePath(name, ""), { body, resend: true }));
  }

  /** GET /v1/schedules/{name}: the schedule with its next five runs (NotFoundError when none). */
  async getSchedule(name: string): Promise<Schedule> {
    return scheduleFromWire(await this.call("GET", schedulePath(name, ""), { resend: true }));
  }

  /** GET /v1/schedules: the schedules the token sees (of `tenant`), by name, each with its next `runs` ticks (0-5, default 1). */
  async listSchedules(o: { tenant?: string; runs?: number } = {}): Promise<Schedule[]> {
    const q = new URLSearchParams();
    if (o.tenant !== undefined) q.set("tenant", o.tenant);
    if (o.runs !== undefined) q.set("runs", String(o.runs));
    const qs = q.toString();
    const b = asObject(await this.call("GET", `/v1/schedules${qs ? `?${qs}` : ""}`, { resend: true }), "schedules");
    return asList(b["schedules"], "schedules").map(scheduleFromWire);
  }

  /** DELETE /v1/schedules/{name}: true once it is gone (the jobs it made stay); NotFoundError when there was none. */
  async deleteSchedule(name: string): Promise<boolean> {
    const b = asObject(await this.call("DELETE", schedulePath(name, ""), { resend: true }), "schedule");
    return b["deleted"] === true;
  }

  /** Stops the schedule's ticks until `resumeSchedule`. */
  async pauseSchedule(name: string): Promise<Schedule> {
    return scheduleFromWire(await this.call("POST", schedulePath(name, "/pause"), { resend: true }));
  }

  /** Resumes a paused schedule; ticks missed meanwhile follow its `missed` policy. */
  async resumeSchedule(name: string): Promise<Schedule> {
    return scheduleFromWire(await this.call("POST", schedulePath(name, "/resume"), { resend: true }));
  }

  /** GET /v1/jobs/{id}/attempts: every attempt of the job, oldest first (the one under way last); [] if never leased. */
  /**
   * GET /v1/jobs/{id}/parents: the job's parents in the order it named
   * them, each with its state and result (what a child reads before it
   * runs), and its children (the first 1,000) with their count.
   */
  async parents(id: number): Promise<JobParents> {
    return parentsFromWire(await this.call("GET", `/v1/jobs/${checkId(id)}/parents`, { resend: true }));
  }

  /**
   * POST /v1/batches: a batch of `jobs` (1 to 10,000; their `dependsOn` may
   * name earlier ones by `index(i)`) with its callbacks, jobs the server
   * submits once: `onComplete` when every job finished, `onSuccess` when
   * every job succeeded, `onDeath` at the first death. Everything is checked
   * before anything is made: an InvalidError (or NotFoundError for a parent
   * that is not there) names the field (`jobs[3].type`, `on_death.queue`).
   */
  async createBatch(jobs: readonly JobSpec[], o: CreateBatchOptions = {}): Promise<BatchCreated> {
    const body: Record<string, unknown> = { jobs: this.batchJobs(jobs) };
    const tenant = o.tenant ?? this.options.tenant;
    if (tenant !== undefined) body["tenant"] = tenant;
    const cbs: [string, CreateBatchOptions["onComplete"]][] = [
      ["on_complete", o.onComplete],
      ["on_success", o.onSuccess],
      ["on_death", o.onDeath],
    ];
    for (const [name, spec] of cbs) if (spec !== undefined) body[name] = callbackToWire(spec, this.options, name);
    const a = await this.postKeyed("/v1/batches", JSON.stringify(body), o.requestKey);
    const ans = asObject(a.body, "batch");
    const id = ans["id"];
    if (typeof id !== "number") throw new ProtocolError("the batch answer has no id");
    const replayed = isReplay(a);
    return { id, jobs: asList(ans["jobs"], "batch").map((x) => submitResult(x, "batch", replayed)) };
  }

  /**
   * POST /v1/batches/{id}/jobs: adds jobs (1 to 10,000) to an open batch
   * (fan-out, typically from one of its running jobs: `ctx.addToBatch`).
   * BatchClosedError once the batch is closed, NotFoundError when there is
   * none; nothing is added then.
   */
  async addToBatch(batchId: number, jobs: readonly JobSpec[], o: SubmitCallOptions = {}): Promise<SubmitResult[]> {
    const body = JSON.stringify({ jobs: this.batchJobs(jobs) });
    const a = await this.postKeyed(`/v1/batches/${checkId(batchId)}/jobs`, body, o.requestKey);
    const replayed = isReplay(a);
    return asList(asObject(a.body, "batch")["jobs"], "batch").map((x) => submitResult(x, "batch", replayed));
  }

  /** GET /v1/batches/{id}: the batch's status, counts, progress and callbacks. */
  async batch(id: number): Promise<BatchInfo> {
    return batchFromWire(await this.call("GET", `/v1/batches/${checkId(id)}`, { resend: true }));
  }

  /** The same as `batch(id)`. */
  async getBatch(id: number): Promise<BatchInfo> {
    return this.batch(id);
  }

  /** GET /v1/batches: a page of batches, newest first; pass `nextBefore` as `before` for the next. */
  async listBatches(f: BatchFilter = {}): Promise<BatchPage> {
    const o = asObject(await this.call("GET", `/v1/batches${query({ tenant: f.tenant, limit: f.limit, before: f.before })}`, { resend: true }), "batches");
    const nb = o["next_before"];
    return { batches: asList(o["batches"], "batches").map(batchFromWire), nextBefore: typeof nb === "number" ? nb : null };
  }

  private batchJobs(jobs: readonly JobSpec[]): Record<string, unknown>[] {
    if (!Array.isArray(jobs) || jobs.length === 0) throw new InvalidError("a batch needs at least one job", { field: "jobs" });
    return jobs.map((spec, i) => {
      for (const f of ["unique", "uniqueKey", "idempotencyKey"] as const)
        if (spec[f] !== undefined) throw new InvalidError(`jobs[${i}].${f}: a batch's job takes none`, { field: `jobs[${i}].${f}` });
      return this.prepare(spec, i);
    });
  }

  /**
   * A submit request: a POST under a request key (the caller's or a new
   * one), the same on every try; a 2xx answer, else its typed error. A 429
   * `overloaded` or `quota_exceeded` made nothing: the request is sent again
   * after the server's Retry-After until `backpressureBudgetMs` has passed
   * since its first refusal (the last try when it runs out), then that
   * refusal is thrown.
   */
  private async postKeyed(path: string, body: string, requestKey?: string, signal?: AbortSignal): Promise<Answer> {
    const headers = { [REQUEST_KEY_HEADER]: requestKey ?? this.keys.next() };
    let deadline: number | undefined;
    for (;;) {
      const a = await this.send("POST", path, { body, headers, resend: true, ...(signal ? { signal } : {}) });
      if (a.status >= 200 && a.status < 300) return a;
      const e = answerError(a);
      if (!(e instanceof OverloadedError || e instanceof QuotaExceededError)) throw e;
      const now = performance.now();
      deadline ??= now + this.options.backpressureBudgetMs;
      if (now >= deadline) throw e;
      const wait = Math.max(e.retryAfterMs ?? BACKPRESSURE_PAUSE_MS, BACKPRESSURE_PAUSE_MIN_MS);
      await sleepFor(Math.min(wait, deadline - now), signal);
    }
  }

  // ------------------------------------------------------------------ durable steps and events

  /** GET /v1/jobs/{id}/steps: the steps the job's handler stored, in order, with their results (docs/SEMANTICS.md, "Durable steps"). */
  async steps(id: number): Promise<Step[]> {
    return stepsFromWire(await this.call("GET", `/v1/jobs/${checkId(id)}/steps`, { resend: true }));
  }

  /**
   * POST /v1/events: every job of the tenant (the client's by default)
   * whose handler waits for `key` goes on with `payload` (JSON) as its
   * wait's result; when none waits the server keeps the event for its
   * --event-window. Sent under a request key (the caller's or a new one),
   * the same on every try: sent again after a lost answer, it delivers
   * nothing twice.
   */
  async sendEvent(key: string, payload?: unknown, o: SubmitCallOptions & { tenant?: string } = {}): Promise<EventResult> {
    if (typeof key !== "string" || key === "") throw new InvalidError("an event needs a key (a non-empty string)", { field: "key" });
    const body: Record<string, unknown> = { key, payload: payload === undefined ? null : payload };
    checkJson(body["payload"], "payload");
    const tenant = o.tenant ?? this.options.tenant;
    if (tenant !== undefined) body["tenant"] = tenant;
    const a = await this.postKeyed("/v1/events", JSON.stringify(body), o.requestKey);
    return eventResultFromWire(a.body);
  }

  /** @internal POST /v1/jobs/{id}/steps (a worker's, under the body's token): the answer. Safe to send again: a name is stored once a lease. */
  async storeStep(id: number, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return asObject(await this.call("POST", `/v1/jobs/${checkId(id)}/steps`, { body: JSON.stringify(body), resend: true }), "step");
  }

  async attempts(id: number): Promise<Attempt[]> {
    const b = asObject(await this.call("GET", `/v1/jobs/${checkId(id)}/attempts`, { resend: true }), "attempts");
    return asList(b["attempts"], "attempts").map(attemptFromWire);
  }

  /** GET /healthz of the server the next request goes to. */
  async health(): Promise<Health> {
    return asObject(await this.call("GET", "/healthz", { resend: true }), "healthz") as Health;
  }

  /** Who the token is. */
  async whoami(): Promise<Record<string, unknown>> {
    return asObject(await this.call("GET", "/v1/whoami", { resend: true }), "whoami");
  }

  // ------------------------------------------------------------------ workers

  /**
   * Leases jobs, reporting `outcomes` first. Not sent again after a
   * connection broke mid-request (a second lease would take more jobs).
   */
  async lease(r: LeaseRequest, signal?: AbortSignal): Promise<LeaseResult> {
    const w: Record<string, unknown> = { queues: r.queues };
    if (r.worker !== undefined) w["worker"] = r.worker;
    if (r.types !== undefined) w["types"] = r.types;
    if (r.max !== undefined) w["max"] = r.max;
    if (r.waitMs !== undefined) w["wait_ms"] = r.waitMs;
    let body = JSON.stringify(w);
    if (r.outcomes?.length) body = `${body.slice(0, -1)},"outcomes":[${r.outcomes.map(outcomeJson).join(",")}]}`;
    const a = await this.send("POST", "/v1/lease", {
      body,
      resend: false,
      extraMs: r.waitMs ?? 0,
      ...(signal ? { signal } : {}),
    });
    if (a.status < 200 || a.status >= 300) throw answerError(a);
    const b = asObject(a.body, "lease");
    const jobs = asList(b["jobs"] ?? [], "lease").map(leasedFromWire);
    const outs = r.outcomes ?? [];
    const results = Array.isArray(b["results"]) ? b["results"].map((x, i) => outcomeResult(x, outs[i]?.id ?? 0)) : [];
    return { jobs, results, size: a.size };
  }

  /** Tells the server the handler began (state running). */
  async start(id: number, token: number): Promise<void> {
    await this.call("POST", `/v1/jobs/${checkId(id)}/start`, { body: JSON.stringify({ token }), resend: true });
  }

  /**
   * Extends the lease; `cancel` is true when the job should stop, `leaseLeftMs` the time the
   * lease has left as the server answered (space heartbeats by it on the monotonic clock).
   */
  async heartbeat(
    id: number,
    token: number,
    progress?: JsonValue,
  ): Promise<{ leaseUntil: number; leaseLeftMs: number; cancel: boolean }> {
    const w: Record<string, unknown> = { token };
    if (progress !== undefined) w["progress"] = progress;
    const b = asObject(
      await this.call("POST", `/v1/jobs/${checkId(id)}/heartbeat`, { body: JSON.stringify(w), resend: true }),
      "heartbeat",
    );
    return {
      leaseUntil: typeof b["lease_until"] === "number" ? b["lease_until"] : 0,
      leaseLeftMs: typeof b["lease_left_ms"] === "number" ? b["lease_left_ms"] : 0,
      cancel: b["cancel"] === true,
    };
  }

  /**
   * The job succeeded. Safe to send again: the same ack under the same
   * token, already applied, is answered as applied.
   */
  async ack(id: number, token: number, o: { result?: JsonValue; stats?: JsonValue } = {}): Promise<OutcomeResult> {
    const w: Record<string, unknown> = { token };
    if (o.result !== undefined) w["result"] = o.result;
    if (o.stats !== undefined) w["stats"] = o.stats;
    return this.finish(id, "ack", w);
  }

  /** The attempt failed: retried after `retryInMs` or the queue's backoff, or dead with `retry: false`. */
  async fail(id: number, token: number, o: FailOptions = {}): Promise<OutcomeResult> {
    const w: Record<string, unknown> = { token };
    if (o.error !== undefined) w["error"] = o.error;
    if (o.retryInMs !== undefined) w["retry_in_ms"] = Math.max(0, Math.round(o.retryInMs));
    if (o.retry !== undefined) w["retry"] = o.retry;
    if (o.cancelled) w["cancelled"] = true;
    if (o.stats !== undefined) w["stats"] = o.stats;
    return this.finish(id, "fail", w);
  }

  private async finish(id: number, verb: string, w: Record<string, unknown>): Promise<OutcomeResult> {
    const body = JSON.stringify(w);
    return outcomeResult(await this.call("POST", `/v1/jobs/${checkId(id)}/${verb}`, { body, resend: true }), id);
  }

  /** Up to 10,000 acks and fails in one request, answered in order. */
  async outcomes(list: readonly Outcome[], signal?: AbortSignal): Promise<OutcomeResult[]> {
    if (!list.length) return [];
    const body = `{"outcomes":[${list.map(outcomeJson).join(",")}]}`;
    const b = asObject(
      await this.call("POST", "/v1/outcomes", { body, resend: true, ...(signal ? { signal } : {}) }),
      "outcomes",
    );
    return asList(b["results"], "outcomes").map((x, i) => outcomeResult(x, list[i]?.id ?? 0));
  }
}

function schedulePath(name: string, tail: string): string {
  return `/v1/schedules/${encodeURIComponent(name)}${tail}`;
}
