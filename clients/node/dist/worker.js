"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Worker = void 0;
// SPDX-License-Identifier: Apache-2.0
/**
 * The worker: leases jobs and runs their handlers in this process, as
 * `tenq work` does (docs/WORKER.md).
 *
 * - One leaser: leases up to the free capacity (`concurrency` + the
 *   prefetch, at most 1,000 a request), long-polling (`pollMs`: answered at
 *   once when jobs are there). It leases when a slot is free and nothing
 *   waits for it, or when the jobs waiting in hand fall to half the
 *   prefetch (so a batch is at least half of it).
 * - The prefetch (jobs leased ahead of a free slot) is by default sized to
 *   the jobs: about `prefetchMs` (50 ms) of work at the pace the handlers
 *   have run so far (a running average of their durations, where a longer
 *   one weighs more than a shorter one, and a handler still running counts
 *   with the time it has run so far), at most 500 jobs and about 8 MiB of
 *   them (their leases' answers); none before a job has finished. That is
 *   about prefetchMs * concurrency / duration: with 5 slots, hundreds of
 *   blank or sub-millisecond jobs a lease, about 25 of 10 ms jobs, none of
 *   jobs longer than 250 ms (leased only for free slots, as with
 *   `prefetch: 0`). Jobs waiting in hand are heartbeaten like running ones
 *   and given back at a stop.
 * - Outcomes of finished jobs go by POST /v1/outcomes, in order, batched
 *   (the next batch gathers while one is out); or, with `outcomes:
 *   "with-lease"`, with the next lease (which then does not wait), and by
 *   POST /v1/outcomes only while the leaser long-polls or backs off.
 * - A handler that settled its job in its own database transaction
 *   (completeTx, failTx; tx.ts) and returns: the job is reported as that
 *   transaction said (an ack with its result, or its failure), which the
 *   server answers as applied, whichever of the two arrives first.
 * - Heartbeats at a third of each lease, timed on the monotonic clock,
 *   carrying the latest progress (within half a second of a report); an
 *   answer `cancel: true` aborts the handler's signal.
 * - A server that is away is retried with backoff (100 ms doubling to 5 s);
 *   outcomes are kept in order and reported when one answers.
 * - `stop()` (and SIGTERM/SIGINT): stop leasing, give back the jobs not
 *   started, let running ones finish within `graceMs`, then abort them and
 *   give them back (`retry_in_ms: 0`, "worker stopped"); report everything.
 *   A second signal stops at once.
 * - A handler's durable step that parks its job (steps.ts: a sleep, a wait
 *   for an event or a child) ends its lease: the worker stops heartbeating
 *   it, frees its slot when the handler ends (with the step's Parked), and
 *   reports nothing.
 * - Events (an EventEmitter, as BullMQ's worker): `active` when a handler
 *   begins, `progress` for each progress report, `completed` and `failed`
 *   once the server has acknowledged the outcome (so `client.get(id)` shows
 *   it then), `parked` when a step parked the job, `error` for what the worker would otherwise only log (a lease
 *   or report that failed, an outcome refused), `closing` and `closed`.
 */
const node_events_1 = require("node:events");
const node_os_1 = require("node:os");
const errors_1 = require("./errors");
const log_1 = require("./log");
const middleware_1 = require("./middleware");
const registry_1 = require("./registry");
const heartbeats_1 = require("./heartbeats");
const steps_1 = require("./steps");
const task_1 = require("./task");
const MAX_OUTCOMES = 10_000;
/** The most jobs one lease asks for (the server's limit). */
const MAX_LEASE = 1000;
/** The most jobs the automatic prefetch holds. */
const AUTO_PREFETCH_MAX = 500;
const AUTO_PREFETCH_MS = 50;
/** The automatic prefetch holds about this much of the leases' answers (jobs with big args: fewer). */
const AUTO_PREFETCH_CHARS = 8 * 1024 * 1024;
/**
 * How a handler's duration moves the estimate: a longer one faster than a
 * shorter one. (A handler still running counts with the time it has run, so
 * a slow job holds the prefetch down while it runs; a longer step would let
 * a pause of the whole process, the machine being busy, shrink it.)
 */
const DURATION_UP = 0.1;
const DURATION_DOWN = 0.05;
/** The automatic prefetch is worked out again at most this often (ms). */
const PREFETCH_REFRESH_MS = 2;
/** Jobs started in one turn of the event loop at most (see pump). */
const PUMP_TURN_MAX = 64;
const BACKOFF_FIRST_MS = 100;
const BACKOFF_MAX_MS = 5_000;
/** A stop never aborts a long poll younger than this: a lease answered at once is read, not lost. */
const POLL_ABORT_MIN_MS = 50;
const sleep = (ms, signal) => new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
        clearTimeout(t);
        signal?.removeEventListener("abort", done);
        resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
});
class Worker extends node_events_1.EventEmitter {
    client;
    registry;
    opts;
    name;
    queues;
    concurrency;
    /** A fixed prefetch, or undefined: automatic. */
    fixedPrefetch;
    prefetchMs;
    /** The handlers' duration estimate (ms); NaN until one has finished. */
    durationMs = NaN;
    /** What a leased job weighs in its lease's answer (characters), a running average; NaN before a lease. */
    jobChars = NaN;
    prefetchNow = 0;
    prefetchAt = -Infinity;
    runningTasks = new Set();
    /** Jobs started in this turn of the event loop (see pump). */
    turnStarts = 0;
    pollMs;
    graceMs;
    log;
    middleware;
    tasks = new Map();
    waiting = [];
    running = 0;
    pending = [];
    stat = { leased: 0, succeeded: 0, failed: 0, cancelled: 0, givenBack: 0, dropped: 0, parked: 0 };
    leaserState = "stopped";
    wakeLeaser;
    poll;
    reporter;
    outage = false;
    withLease;
    beats;
    progressFn = (t, v) => {
        this.beats.progress(t, v);
        if (t.ctx && this.listenerCount("progress"))
            this.emit("progress", t.ctx, v);
    };
    /** A step parked a task's job: its lease is over, so nothing heartbeats it any more. */
    onParked = (t) => {
        this.beats.remove(t);
    };
    /** The outcomes sent whose acknowledgement is to be emitted (while `completed` or `failed` have listeners). */
    toEmit = new Map();
    started = false;
    stopping = false;
    killed = false;
    stopDone;
    fatal;
    leaser;
    idleWaiter;
    finishRun = () => { };
    stopSignal = new AbortController();
    constructor(client, registry, opts = {}) {
        super();
        this.client = client;
        this.registry = registry;
        this.opts = opts;
        const q = opts.queues ?? (client.options.queue ? [client.options.queue] : []);
        if (!q.length)
            throw new errors_1.InvalidError("a worker needs queues (or a client with a default queue)", { field: "queues" });
        this.queues = q;
        this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? 1));
        const pf = opts.prefetch ?? "auto";
        if (pf !== "auto" && !(typeof pf === "number" && pf >= 0))
            throw new errors_1.InvalidError(`prefetch must be "auto" or a number of jobs, not ${String(pf)}`, { field: "prefetch" });
        this.fixedPrefetch = pf === "auto" ? undefined : Math.floor(pf);
        this.prefetchMs = Math.max(0, opts.prefetchMs ?? AUTO_PREFETCH_MS);
        this.pollMs = opts.pollMs ?? 30_000;
        this.graceMs = opts.graceMs ?? 10_000;
        this.name = opts.name ?? `${(0, node_os_1.hostname)()}/pid-${process.pid}`;
        this.log = opts.logger === null ? { info() { }, warn() { }, error() { } } : (opts.logger ?? log_1.stderrLogger);
        this.middleware = [...(opts.middleware ?? [])];
        this.beats = new heartbeats_1.Heartbeats(client, this.log, opts.startNoticeMs ?? 10, (t, reason) => this.stopTask(t, reason));
        this.withLease = opts.outcomes === "with-lease";
    }
    /** Adds a middleware (inside those added before). */
    use(mw) {
        this.middleware.push(mw);
        return this;
    }
    get stats() {
        return { ...this.stat };
    }
    /** Jobs leased and not finished: running, and waiting for a slot. */
    get inHand() {
        return this.tasks.size;
    }
    /**
     * The jobs leased ahead of a free slot at most, now: the fixed
     * `prefetch`, or the automatic one (see `prefetch`).
     */
    get prefetch() {
        if (this.fixedPrefetch !== undefined)
            return this.fixedPrefetch;
        const now = performance.now();
        if (now - this.prefetchAt < PREFETCH_REFRESH_MS)
            return this.prefetchNow;
        this.prefetchAt = now;
        const d = this.durationMs;
        if (!(d >= 0))
            return (this.prefetchNow = 0); // nothing has finished yet
        // jobs the slots finish per ms: a free slot at the estimate's pace, a busy one
        // no faster than the time its handler has run so far (a stuck slot adds nothing)
        let perMs = (this.concurrency - this.runningTasks.size) / Math.max(d, 1e-3);
        for (const t of this.runningTasks)
            perMs += 1 / Math.max(d, now - t.startedAt, 1e-3);
        const bySize = this.jobChars > 0 ? AUTO_PREFETCH_CHARS / this.jobChars : AUTO_PREFETCH_MAX;
        return (this.prefetchNow = Math.floor(Math.min(AUTO_PREFETCH_MAX, bySize, perMs * this.prefetchMs)));
    }
    /** How many jobs to lease now (0: not now): when a slot would idle, or the waiting jobs are down to half the prefetch. */
    wanted() {
        const p = this.prefetch;
        const room = Math.min(this.concurrency + p - this.tasks.size, MAX_LEASE);
        if (room <= 0)
            return 0;
        if (this.waiting.length === 0 || this.waiting.length <= p >> 1)
            return room;
        return 0;
    }
    /** Runs until `stop()` (or a signal); resolves when every outcome is reported. Rejects when the server refuses the worker. */
    async run() {
        if (this.started)
            throw new errors_1.InvalidError("this worker has run already", { field: "worker" });
        this.started = true;
        const done = new Promise((r) => (this.finishRun = r));
        let bySignal = false;
        const onSignal = (sig) => {
            bySignal = true;
            if (!this.stopping) {
                this.log.info(`${sig}: stopping; running jobs have ${this.graceMs} ms to finish`);
                void this.stop();
            }
            else {
                this.log.warn(`${sig} again: stopping at once`);
                this.kill();
                if (this.opts.exitOnSecondSignal ?? true)
                    process.exit(1);
            }
        };
        const signals = this.opts.handleSignals ?? true;
        if (signals) {
            process.on("SIGTERM", onSignal);
            process.on("SIGINT", onSignal);
        }
        this.leaser = this.leaseLoop().catch((e) => {
            this.fatal = e;
            this.log.error(`the server refused the worker: ${(0, middleware_1.describeError)(e)}`);
            this.emitError(e);
            void this.stop();
        });
        try {
            await done;
            await this.leaser;
        }
        finally {
            if (signals) {
                process.off("SIGTERM", onSignal);
                process.off("SIGINT", onSignal);
            }
        }
        this.emit("closed");
        if (bySignal && (this.opts.exitAfterSignal ?? true)) {
            // unref'd: it ends the process only if something else keeps it alive
            setTimeout(() => process.exit(), 1000).unref();
        }
        if (this.fatal !== undefined)
            throw this.fatal;
        return this.stats;
    }
    /** Stops gracefully (see the top of this file); resolves when done. */
    stop() {
        if (this.stopDone === undefined)
            this.emit("closing");
        this.stopDone ??= this.shutdown();
        return this.stopDone;
    }
    /** Stops at once: handlers are aborted, nothing more is reported (the leases expire). */
    kill() {
        this.killed = true;
        this.stopping = true;
        this.stopSignal.abort();
        this.poll?.ac.abort();
        for (const t of this.tasks.values()) {
            t.tellStop("shutdown");
            t.clearTimers();
            t.finished = true;
        }
        this.tasks.clear();
        this.waiting.length = 0;
        this.pending = [];
        this.beats.clear();
        this.wake();
        this.idleWaiter?.();
        this.finishRun();
    }
    // ------------------------------------------------------------------ leasing
    wake() {
        const w = this.wakeLeaser;
        this.wakeLeaser = undefined;
        w?.();
    }
    async leaseLoop() {
        let backoff = BACKOFF_FIRST_MS;
        while (!this.stopping) {
            let want = this.wanted();
            if (want <= 0) {
                this.leaserState = "waiting";
                this.flushSoon();
                await new Promise((r) => (this.wakeLeaser = r));
                continue;
            }
            if (this.running > 0 && this.waiting.length === 0) {
                // handlers finishing in this turn free their slots for this lease
                // (and, with outcomes "with-lease", report with it)
                await new Promise((r) => setImmediate(r));
                if (this.stopping)
                    break;
                want = this.wanted();
                if (want <= 0)
                    continue;
            }
            const outcomes = this.withLease ? this.pending.splice(0, MAX_OUTCOMES) : [];
            // a long poll answers at once when jobs are there; only a lease that
            // carries outcomes does not wait (its answer would hold theirs back)
            const waitMs = outcomes.length ? 0 : this.pollMs;
            const ac = new AbortController();
            this.poll = { ac, at: performance.now() };
            if (waitMs > 0) {
                this.leaserState = "polling";
                this.flushSoon();
            }
            else {
                this.leaserState = "leasing";
            }
            let jobs;
            try {
                const r = await this.client.lease({
                    worker: this.name,
                    queues: this.queues,
                    ...(this.opts.types ? { types: this.opts.types } : {}),
                    max: want,
                    waitMs,
                    outcomes,
                }, ac.signal);
                jobs = r.jobs;
                if (jobs.length && r.size) {
                    const c = r.size / jobs.length;
                    this.jobChars = this.jobChars > 0 ? this.jobChars + (c - this.jobChars) * 0.5 : c;
                }
                this.reported(r.results, outcomes);
                if (this.outage)
                    this.log.info("the server answers again");
                this.outage = false;
                backoff = BACKOFF_FIRST_MS;
            }
            catch (e) {
                if (outcomes.length)
                    this.putBack(outcomes);
                if (ac.signal.aborted && this.stopping)
                    break;
                if (e instanceof errors_1.UnauthenticatedError || e instanceof errors_1.ForbiddenError || e instanceof errors_1.InvalidError)
                    throw e;
                if (!this.outage)
                    this.log.warn(`lease failed: ${(0, middleware_1.describeError)(e)}; retrying with backoff`);
                this.emitError(e);
                this.outage = true;
                this.leaserState = "backoff";
                this.flushSoon();
                await sleep(backoff, this.stopSignal.signal);
                backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
                continue;
            }
            finally {
                this.poll = undefined;
            }
            this.stat.leased += jobs.length;
            for (const job of jobs) {
                const t = new task_1.Task(job);
                this.tasks.set(job.id, t);
                if (this.stopping)
                    this.giveBack(t);
                else {
                    this.waiting.push(t);
                    this.beats.add(t);
                }
            }
            this.pump();
        }
        this.leaserState = "stopped";
        this.flushSoon();
    }
    /**
     * Starts waiting jobs while slots are free, at most PUMP_TURN_MAX in one
     * turn of the event loop: handlers that return at once run one after the
     * other as microtasks, and without a turn now and then the next lease
     * would not even be written until every job in hand had run.
     */
    pump() {
        while (this.running < this.concurrency && this.waiting.length && !this.stopping) {
            if (this.turnStarts === 0)
                setImmediate(this.nextTurn);
            else if (this.turnStarts >= PUMP_TURN_MAX)
                return; // nextTurn goes on
            this.turnStarts++;
            this.runTask(this.waiting.shift());
        }
    }
    nextTurn = () => {
        this.turnStarts = 0;
        this.pump();
    };
    // ------------------------------------------------------------------ running
    runTask(t) {
        this.running++;
        t.startedAt = performance.now();
        this.runningTasks.add(t);
        const job = t.job;
        const reg = this.registry.get(job.type);
        const ctx = new task_1.TaskContext(t, this.name, this.progressFn, this.client, this.onParked);
        t.ctx = ctx;
        if (this.listenerCount("active"))
            this.emit("active", ctx);
        const timeoutMs = reg?.timeoutMs ?? this.opts.timeoutMs;
        if (timeoutMs !== undefined && timeoutMs > 0)
            t.timers.push(setTimeout(() => this.stopTask(t, "timeout"), timeoutMs));
        this.beats.started(t);
        const inner = reg ? () => (0, registry_1.invoke)(reg, ctx) : () => Promise.reject(new task_1.UnknownTypeError(job.type));
        const composed = this.middleware.length ? (0, middleware_1.compose)(this.middleware, ctx, inner) : inner;
        const otel = this.client.otel;
        const run = otel ? () => otel.process(ctx, composed) : composed;
        let p;
        try {
            p = run();
        }
        catch (e) {
            p = Promise.reject(e);
        }
        p.then((value) => this.settle(t, { ok: true, value }), (error) => this.settle(t, { ok: false, error }));
    }
    /** The handler returned, or the wait for it ended (the first of the two counts). */
    settle(t, s) {
        if (t.settled)
            return;
        t.settled = true;
        this.running--;
        this.runningTasks.delete(t);
        const ms = performance.now() - t.startedAt;
        const d = this.durationMs;
        this.durationMs = d >= 0 ? d + (ms - d) * (ms > d ? DURATION_UP : DURATION_DOWN) : ms;
        const out = t.outcome(s);
        if (t.parked && t.ctx && this.listenerCount("parked")) {
            const e = s.ok === false ? s.error : undefined;
            if (e instanceof steps_1.Parked)
                this.emit("parked", t.ctx, e);
        }
        if (out && t.ctx && this.listensToOutcomes() && (out.ok || !(out.retryInMs === 0 && out.error === "worker stopped"))) {
            // a success's result; a failure's error: what the handler threw, or why it was stopped
            const value = out.ok ? (s.ok === true ? s.value : undefined) : t.stop || s.ok !== false ? t.signal.reason : s.error;
            this.toEmit.set(out, { ctx: t.ctx, ok: out.ok, value });
        }
        this.end(t, out);
        this.pump();
    }
    /** A job is over: its outcome is queued (or dropped), its slot freed. */
    end(t, out) {
        if (t.finished)
            return;
        t.finished = true;
        t.clearTimers();
        this.tasks.delete(t.job.id);
        this.beats.remove(t);
        if (out) {
            if (out.ok)
                this.stat.succeeded++;
            else if (out.cancelled)
                this.stat.cancelled++;
            else if (out.retryInMs === 0 && out.error === "worker stopped")
                this.stat.givenBack++;
            else
                this.stat.failed++;
            this.pending.push(out);
            this.flushSoon();
        }
        else if (t.parked) {
            this.stat.parked++;
        }
        else {
            this.stat.dropped++;
        }
        if (this.wakeLeaser && this.wanted() > 0)
            this.wake();
        if (this.tasks.size === 0)
            this.idleWaiter?.();
    }
    giveBack(t) {
        const i = this.waiting.indexOf(t);
        if (i >= 0)
            this.waiting.splice(i, 1);
        this.end(t, { id: t.job.id, token: t.job.token, ok: false, error: "worker stopped", retryInMs: 0 });
    }
    /** Tells a running handler to stop; the wait for it ends after the grace period (at once when the worker is cut off). */
    stopTask(t, reason) {
        if (!t.tellStop(reason))
            return;
        const release = () => this.settle(t, { ok: "released" });
        if (reason === "shutdown")
            release();
        else
            t.timers.push(setTimeout(release, this.graceMs));
    }
    // ------------------------------------------------------------------ reporting
    /** Outcomes go by POST /v1/outcomes when the leaser will not carry them soon. */
    flushSoon() {
        if (this.reporter || !this.pending.length || this.killed)
            return;
        if (!this.stopping && this.withLease) {
            // the next lease takes them: the one about to leave, or the one a freed slot wakes
            if (this.leaserState === "leasing")
                return;
            if (this.leaserState === "waiting" && this.wanted() > 0)
                return;
        }
        this.reporter = this.reportLoop(Infinity).finally(() => {
            this.reporter = undefined;
            if (this.pending.length && this.leaserState !== "leasing")
                this.flushSoon();
        });
    }
    async reportLoop(deadline) {
        let backoff = BACKOFF_FIRST_MS;
        while (this.pending.length && !this.killed) {
            if (this.leaserState === "leasing" && !this.stopping && this.withLease)
                return;
            const batch = this.pending.splice(0, MAX_OUTCOMES);
            try {
                const signal = deadline < Infinity ? AbortSignal.timeout(Math.max(1, deadline - performance.now())) : undefined;
                this.reported(await this.client.outcomes(batch, signal), batch);
                backoff = BACKOFF_FIRST_MS;
            }
            catch (e) {
                if (this.killed)
                    return;
                this.putBack(batch);
                this.emitError(e);
                if (e instanceof errors_1.UnauthenticatedError || e instanceof errors_1.ForbiddenError) {
                    this.log.error(`outcomes refused: ${(0, middleware_1.describeError)(e)}`);
                    return;
                }
                if (performance.now() + backoff > deadline)
                    return;
                this.log.warn(`reporting ${batch.length} outcomes failed: ${(0, middleware_1.describeError)(e)}; retrying`);
                await sleep(backoff);
                backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
            }
        }
    }
    /**
     * The server's answers to outcomes: refused ones (a stale token) are
     * logged and dropped. An outcome sent again after a request broke is
     * answered as applied when it counted the first time (the same outcome
     * under the same token), so a refusal is a real one.
     */
    reported(results, sent) {
        if (!sent.length)
            return;
        for (const r of results) {
            if (r.ok)
                continue;
            this.stat.dropped++;
            this.log.warn(`job ${r.id}: outcome refused: ${r.error.message}`);
            this.emitError(r.error);
        }
        if (this.toEmit.size) {
            // the answer holds one result per outcome sent, in order
            sent.forEach((o, i) => {
                const p = this.toEmit.get(o);
                if (!p)
                    return;
                this.toEmit.delete(o);
                if (!results[i]?.ok)
                    return;
                if (p.ok)
                    this.emit("completed", p.ctx, p.value);
                else
                    this.emit("failed", p.ctx, p.value);
            });
        }
        this.opts.onReported?.(results);
    }
    listensToOutcomes() {
        return this.listenerCount("completed") > 0 || this.listenerCount("failed") > 0;
    }
    /** `error`, only when someone listens (an unheard one would throw). */
    emitError(e) {
        if (this.listenerCount("error"))
            this.emit("error", e instanceof Error ? e : new Error((0, middleware_1.describeError)(e)));
    }
    /** Outcomes go back to the head of the queue after a failed request. */
    putBack(list) {
        this.pending.unshift(...list);
    }
    // ------------------------------------------------------------------ stopping
    async shutdown() {
        const t0 = performance.now();
        this.stopping = true;
        this.stopSignal.abort();
        const poll = this.poll;
        if (poll) {
            const age = performance.now() - poll.at;
            if (age >= POLL_ABORT_MIN_MS)
                poll.ac.abort();
            else
                setTimeout(() => poll.ac.abort(), POLL_ABORT_MIN_MS - age);
        }
        this.wake();
        for (const t of this.waiting.splice(0))
            this.giveBack(t); // the prefetched: not started
        if (this.tasks.size) {
            const cut = setTimeout(() => {
                for (const t of this.tasks.values())
                    this.stopTask(t, "shutdown");
            }, this.graceMs);
            await new Promise((r) => {
                this.idleWaiter = r;
                if (this.tasks.size === 0)
                    r();
            });
            clearTimeout(cut);
        }
        await this.leaser;
        this.beats.clear();
        // report what is left: keep trying until the grace period is over (at least 2 s from now)
        const deadline = Math.max(t0 + this.graceMs, performance.now() + 2000);
        while (this.pending.length && !this.killed && performance.now() < deadline) {
            if (this.reporter)
                await this.reporter;
            else
                await this.reportLoop(deadline);
        }
        if (this.pending.length && !this.killed)
            this.log.warn(`${this.pending.length} outcomes not reported: their jobs come back when their leases expire`);
        this.finishRun();
    }
}
exports.Worker = Worker;
