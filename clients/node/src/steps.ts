// SPDX-License-Identifier: Apache-2.0
/**
 * Durable steps (docs/SEMANTICS.md, "Durable steps"): what a job's handler
 * stored (Step), the answer to an event (EventResult), what a step throws in
 * the handler (Parked: the job waits between attempts; EventTimeoutError;
 * ChildFailedError), and the part of a handler's context that stores steps.
 */
import { ConflictError, InvalidError, ProtocolError, TenqError, TimeoutError } from "./errors";
import { checkJson, type JsonValue } from "./json";
import type { JobSpec, JobState, LeasedJob } from "./types";
import { jobToWire } from "./wire";

/** `step`: code the handler ran; `sleep`; `event`: a wait for an event; `child`: a child job awaited. */
export type StepKind = "step" | "sleep" | "event" | "child";

/** A step a job's handler stored (GET /v1/jobs/{id}/steps), in order. */
export interface Step {
  pos: number;
  name: string;
  kind: StepKind;
  /** False while the job waits for it. */
  done: boolean;
  /** `step`: what the code returned; `event`: the event's payload; `child`: the child's result. */
  result: JsonValue | null;
  /** `event`: `timed out`; `child`: the child's error; a wait the job's cancel ended: `cancelled`. */
  error: string | null;
  /** The attempt that stored it. */
  attempt: number;
  /** The lease token that stored it (admin and worker tokens). */
  token: number | null;
  createdAt: number;
  finishedAt: number | null;
  /** `event`: the key waited for. */
  event?: string;
  /** `sleep`: when the job resumes; `event`: its timeout's time (null: none). */
  until?: number | null;
  /** `child`: the child job's id, and the state it ended in. */
  child?: number;
  childState?: JobState;
}

/** The answer to an event (POST /v1/events): the jobs it woke, or (`kept`) that none waited. */
export interface EventResult {
  tenant: string;
  key: string;
  delivered: number;
  /** The jobs it woke (the first 1,000). */
  jobs: number[];
  /** None waited: it is kept until `expiresAt` for the first job of the tenant that waits for its key. */
  kept: boolean;
  expiresAt: number | null;
}

/**
 * Thrown inside a handler by a step that parked its job: a durable sleep
 * (`ctx.sleepFor`, `ctx.sleepUntil`), a wait for an event
 * (`ctx.waitForEvent`) or for a child job (`ctx.runChild`). The attempt is
 * over, without failing: the worker reports nothing, and the job runs again
 * (from the start, its stored steps answering at once) when its wait is
 * over. Let it leave the handler: a `catch` that swallows it should rethrow
 * it (`if (isParked(e)) throw e`); a handler that goes on anyway has its
 * outcome dropped.
 */
export class Parked extends Error {
  constructor(
    /** The kind of the step that parked the job. */
    readonly kind: StepKind,
    /** Its name. */
    readonly stepName: string,
    /** The job's state now: `scheduled` (a sleep) or `waiting`. */
    readonly state: JobState,
  ) {
    super(`parked: ${kind} "${stepName}" (the job is ${state})`);
    this.name = "Parked";
  }
}

/** Whether `e` is the Parked a step threw (rethrow it). */
export function isParked(e: unknown): e is Parked {
  return e instanceof Parked;
}

/** `ctx.waitForEvent` timed out: no event of its key came in time. */
export class EventTimeoutError extends TimeoutError {
  constructor(
    readonly key: string,
    readonly stepName: string,
  ) {
    super(`no event "${key}" came before the wait "${stepName}" timed out`);
  }
}

/**
 * `ctx.runChild`'s child job did not succeed: it died (`error` is its last
 * error) or was cancelled. `child` is its id, `state` the state it ended in.
 */
export class ChildFailedError extends TenqError {
  constructor(
    readonly child: number,
    readonly state: JobState | undefined,
    readonly error: string | null,
  ) {
    super("child_failed", `child job ${child} ended ${state ?? "without succeeding"}: ${error ?? ""}`);
  }
}

type Wire = Record<string, unknown>;

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

export function stepFromWire(v: unknown): Step {
  if (!v || typeof v !== "object" || Array.isArray(v) || typeof (v as Wire)["name"] !== "string")
    throw new ProtocolError("a step of the answer is not a step");
  const o = v as Wire;
  const s: Step = {
    pos: num(o["pos"]) ?? 0,
    name: o["name"] as string,
    kind: (str(o["kind"]) ?? "step") as StepKind,
    done: o["done"] === true,
    result: (o["result"] ?? null) as JsonValue | null,
    error: str(o["error"]),
    attempt: num(o["attempt"]) ?? 0,
    token: num(o["token"]),
    createdAt: num(o["created_at"]) ?? 0,
    finishedAt: num(o["finished_at"]),
  };
  const ev = str(o["event"]);
  if (ev !== null) s.event = ev;
  if ("until" in o) s.until = num(o["until"]);
  const child = num(o["child"]);
  if (child !== null) s.child = child;
  const cs = str(o["child_state"]);
  if (cs !== null) s.childState = cs as JobState;
  return s;
}

export function stepsFromWire(v: unknown): Step[] {
  const list = v && typeof v === "object" ? (v as Wire)["steps"] : undefined;
  if (!Array.isArray(list)) throw new ProtocolError("the steps answer has no list");
  return list.map(stepFromWire);
}

export function eventResultFromWire(v: unknown): EventResult {
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new ProtocolError("the event's answer is not an object");
  const o = v as Wire;
  const jobs = o["jobs"];
  return {
    tenant: str(o["tenant"]) ?? "",
    key: str(o["key"]) ?? "",
    delivered: num(o["delivered"]) ?? 0,
    jobs: Array.isArray(jobs) ? jobs.filter((x): x is number => typeof x === "number") : [],
    kept: o["kept"] === true,
    expiresAt: num(o["expires_at"]),
  };
}

/** What a job's steps ask the server (the worker's client). */
export interface StepBackend {
  steps(id: number): Promise<Step[]>;
  /** POST /v1/jobs/{id}/steps under the body's token: the answer. */
  storeStep(id: number, body: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export interface StepOptions {
  /** The step's name (default `KIND#N`, N counting this run's calls of that kind: call them in the same order). */
  name?: string;
}

export interface WaitForEventOptions extends StepOptions {
  /** Give up after this many ms (EventTimeoutError); default: no timeout. */
  timeoutMs?: number;
}

/** The durable-step part of a JobContext. */
export interface StepMethods {
  /**
   * Runs `fn` once for the job: its result (JSON) is stored under this
   * attempt's lease before `step` resolves, and a later attempt gets it back
   * without running `fn` again. `name` (1-256 bytes, no control characters)
   * must name the same work on every attempt. `fn` may run again only when
   * the worker dies (or loses its lease) before the store answered: make it
   * idempotent. Outside a worker it just runs `fn`.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * A durable sleep: the attempt ends (Parked leaves the handler), the
   * job's slot goes back, and the job runs again after `ms`, its steps kept;
   * there this call resolves at once. Outside a worker it just sleeps.
   */
  sleepFor(ms: number, o?: StepOptions): Promise<void>;
  /** `sleepFor` until a time: a Date, or ms since the epoch. */
  sleepUntil(when: Date | number, o?: StepOptions): Promise<void>;
  /**
   * Waits for an event of the job's tenant with this `key`
   * (`client.sendEvent`, POST /v1/events, `sendEventTx`): its payload. The
   * job parks (Parked) until it comes or `timeoutMs` passes; then it runs
   * again and this call resolves, or throws EventTimeoutError. An event sent
   * shortly before (within the server's --event-window) is taken at once.
   */
  waitForEvent(key: string, o?: WaitForEventOptions): Promise<JsonValue | null>;
  /**
   * Submits a child job (of this job's tenant; in `spec.queue`, else this
   * job's) once, and waits for its end: its result, or ChildFailedError when
   * it died or was cancelled. The job parks (Parked) until the child ends;
   * cancelling it cancels the child. A refused submit throws its error
   * (QuotaExceededError past a quota).
   */
  runChild(spec: JobSpec, o?: StepOptions): Promise<JsonValue | null>;
  /** The steps of this job stored so far (by earlier attempts, then this one), in order. */
  steps(): Promise<Step[]>;
  /** A step parked the job: this attempt is over. */
  readonly parked: boolean;
}

/**
 * The steps of one run of a handler: those stored (read once, at the first
 * step call, when the lease says the job has some), the calls made of each
 * kind (for names left out), whether a step parked the job.
 */
export class StepState implements StepMethods {
  parked = false;
  private stored: Promise<Map<string, Step>> | undefined;
  private readonly calls = new Map<string, number>();

  /** `backend` undefined: outside a worker (steps just run). */
  constructor(
    private readonly job: LeasedJob,
    private readonly backend: StepBackend | undefined,
    private readonly onParked: () => void = () => {},
  ) {}

  private get live(): boolean {
    return this.backend !== undefined && this.job.token !== 0;
  }

  private map(): Promise<Map<string, Step>> {
    return (this.stored ??= (async () => {
      const m = new Map<string, Step>();
      if (this.live && (this.job.steps ?? 0) > 0) for (const s of await this.backend!.steps(this.job.id)) if (s.done) m.set(s.name, s);
      return m;
    })());
  }

  /** Reads the job's steps again (a step sent again whose first answer was lost). */
  private async reread(name: string): Promise<Step | undefined> {
    const all = await this.backend!.steps(this.job.id);
    const m = await this.map();
    for (const s of all) if (s.done) m.set(s.name, s);
    return m.get(name);
  }

  async steps(): Promise<Step[]> {
    return [...(await this.map()).values()];
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    if (typeof name !== "string" || name === "") throw new InvalidError("a step needs a name", { field: "name" });
    const got = (await this.map()).get(name);
    if (got) return got.result as T;
    const value = await fn();
    if (!this.live) return value;
    checkJson(value === undefined ? null : value, "result");
    await this.post({ name, result: value === undefined ? null : value }, "step", name);
    this.remember(await this.map(), name, "step", (value ?? null) as JsonValue, null);
    return value;
  }

  async sleepFor(ms: number, o: StepOptions = {}): Promise<void> {
    if (typeof ms !== "number" || !(ms >= 0)) throw new InvalidError("sleepFor: ms must be 0 or more", { field: "duration_ms" });
    return this.sleep(o.name, { duration_ms: Math.round(ms) }, ms);
  }

  async sleepUntil(when: Date | number, o: StepOptions = {}): Promise<void> {
    const at = when instanceof Date ? when.getTime() : when;
    if (typeof at !== "number" || !Number.isFinite(at)) throw new InvalidError("sleepUntil: a Date or ms since the epoch", { field: "until" });
    return this.sleep(o.name, { until: Math.max(1, Math.round(at)) }, at - Date.now());
  }

  private async sleep(name: string | undefined, body: Record<string, unknown>, inlineMs: number): Promise<void> {
    const n = this.auto("sleep", name);
    const m = await this.map();
    if (m.has(n)) return;
    if (!this.live) {
      await new Promise((r) => setTimeout(r, Math.max(0, inlineMs)));
      return;
    }
    const ans = await this.post({ ...body, name: n, kind: "sleep" }, "sleep", n);
    if (ans["parked"] === true) throw this.park("sleep", n, ans["state"]);
    this.remember(m, n, "sleep", null, null); // its time had passed
  }

  async waitForEvent(key: string, o: WaitForEventOptions = {}): Promise<JsonValue | null> {
    const n = this.auto("event", o.name);
    const m = await this.map();
    let got = m.get(n);
    if (!got) {
      if (!this.live) throw new InvalidError("waitForEvent needs a worker's job", { field: "event" });
      const body: Record<string, unknown> = { name: n, kind: "event", event: key };
      if (o.timeoutMs !== undefined) body["timeout_ms"] = Math.max(1, Math.round(o.timeoutMs));
      const ans = await this.post(body, "event", n);
      if (ans["parked"] === true) throw this.park("event", n, ans["state"]);
      // taken at once from a kept event; sent again (its answer lost): read it back
      got = ans["duplicate"] === true ? await this.reread(n) : this.remember(m, n, "event", (ans["result"] ?? null) as JsonValue, null);
      if (!got) throw new ProtocolError(`event step "${n}" was stored, and is not in the job's steps`);
    }
    if (got.error !== null) throw new EventTimeoutError(key, n);
    return got.result;
  }

  async runChild(spec: JobSpec, o: StepOptions = {}): Promise<JsonValue | null> {
    const n = this.auto("child", o.name);
    const got = (await this.map()).get(n);
    if (!got) {
      if (!this.live) throw new InvalidError("runChild needs a worker's job", { field: "job" });
      const job = jobToWire(spec, { tenant: this.job.tenant, queue: this.job.queue });
      const ans = await this.post({ name: n, kind: "child", job }, "child", n);
      if (ans["parked"] === true) throw this.park("child", n, ans["state"]);
      throw new ProtocolError(`child step "${n}" neither parked nor was stored before`);
    }
    if ((got.childState !== undefined && got.childState !== "succeeded") || got.error !== null)
      throw new ChildFailedError(got.child ?? 0, got.childState, got.error);
    return got.result;
  }

  private auto(kind: StepKind, name: string | undefined): string {
    const k = (this.calls.get(kind) ?? 0) + 1;
    this.calls.set(kind, k);
    return name ?? `${kind}#${k}`;
  }

  private remember(m: Map<string, Step>, name: string, kind: StepKind, result: JsonValue | null, error: string | null): Step {
    const s: Step = { pos: m.size, name, kind, done: true, result, error, attempt: this.job.attempt, token: this.job.token, createdAt: Date.now(), finishedAt: Date.now() };
    m.set(name, s);
    return s;
  }

  /**
   * POST /v1/jobs/{id}/steps under this attempt's lease. A parking step
   * whose answer was lost, sent again, finds its lease over (409 on the
   * token): the job is parked (or its lease lost), and the handler ends
   * either way.
   */
  private async post(body: Record<string, unknown>, kind: StepKind, name: string): Promise<Record<string, unknown>> {
    body["token"] = this.job.token;
    try {
      return await this.backend!.storeStep(this.job.id, body);
    } catch (e) {
      if (kind !== "step" && e instanceof ConflictError && e.field === "token") throw this.park(kind, name, "waiting");
      throw e;
    }
  }

  private park(kind: StepKind, name: string, state: unknown): Parked {
    if (!this.parked) {
      this.parked = true;
      this.onParked();
    }
    return new Parked(kind, name, (typeof state === "string" ? state : "waiting") as JobState);
  }
}

/** The steps of a handler run outside a worker (the test modes): a step just runs, a sleep sleeps. */
export function inlineSteps(job: LeasedJob): StepMethods {
  const st = new StepState(job, undefined);
  return {
    step: (name, fn) => st.step(name, fn),
    sleepFor: (ms, o) => st.sleepFor(ms, o),
    sleepUntil: (when, o) => st.sleepUntil(when, o),
    waitForEvent: (key, o) => st.waitForEvent(key, o),
    runChild: (spec, o) => st.runChild(spec, o),
    steps: () => st.steps(),
    parked: false,
  };
}
