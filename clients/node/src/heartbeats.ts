// SPDX-License-Identifier: Apache-2.0
/**
 * A worker's heartbeats and start notices, on one timer each, timed with
 * performance.now() (the monotonic clock).
 *
 * - Every job in hand is heartbeaten at a third of its lease's length
 *   (measured when the lease, or the last heartbeat, arrived), carrying its
 *   latest progress; progress goes within half a second of a report.
 * - An answer `cancel: true` stops the handler ("cancel"); a 404 or 409
 *   means the lease is lost ("lost"); other failures retry within a second.
 * - A handler that has run `noticeMs` is reported as begun (POST .../start):
 *   shorter jobs go from leased to succeeded without it.
 */
import type { Client } from "./client";
import { ConflictError, NotFoundError } from "./errors";
import { checkJson, type JsonValue } from "./json";
import type { Logger } from "./log";
import { describeError } from "./middleware";
import type { StopReason, Task } from "./task";

/** Progress reaches the server within this. */
const PROGRESS_EVERY_MS = 500;
/** A failed heartbeat is tried again within this. */
const RETRY_MS = 1000;

export class Heartbeats {
  private readonly tasks = new Set<Task>();
  private timer: NodeJS.Timeout | undefined;
  private at = Infinity;
  private readonly notices: Task[] = [];
  private noticeTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly client: Client,
    private readonly log: Logger,
    private readonly noticeMs: number,
    private readonly stop: (t: Task, reason: StopReason) => void,
  ) {}

  /** A job arrived: heartbeat it until it is finished. */
  add(t: Task): void {
    this.tasks.add(t);
    this.arm(t.beatDue);
  }

  /** The job is over. */
  remove(t: Task): void {
    this.tasks.delete(t);
  }

  /** Its handler began. */
  started(t: Task): void {
    if (this.noticeMs < 0 || this.closed) return;
    t.noticeDue = performance.now() + this.noticeMs;
    this.notices.push(t);
    this.noticeTimer ??= setTimeout(() => this.sendNotices(), this.noticeMs);
  }

  /** The handler reported progress. */
  progress(t: Task, v: JsonValue): void {
    checkJson(v, "progress");
    if (t.finished) return;
    t.progress = v;
    t.progressDirty = true;
    const due = Math.max(performance.now(), t.lastBeat + PROGRESS_EVERY_MS);
    if (due < t.beatDue) t.beatDue = due;
    if (!t.beating) this.arm(t.beatDue);
  }

  /** No more heartbeats or notices. */
  clear(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.noticeTimer) clearTimeout(this.noticeTimer);
    this.timer = this.noticeTimer = undefined;
    this.at = Infinity;
    this.tasks.clear();
    this.notices.length = 0;
  }

  private arm(due: number): void {
    if (due >= this.at || this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = due;
    this.timer = setTimeout(() => this.beat(), Math.max(0, due - performance.now()));
  }

  private beat(): void {
    this.timer = undefined;
    this.at = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const t of this.tasks) {
      if (t.finished || t.beating) continue;
      else if (t.beatDue <= now + 1) void this.send(t);
      else next = Math.min(next, t.beatDue);
    }
    if (next < Infinity) this.arm(next);
  }

  private async send(t: Task): Promise<void> {
    t.beating = true;
    t.lastBeat = performance.now();
    const progress = t.progressDirty ? t.progress : undefined;
    t.progressDirty = false;
    try {
      const r = await this.client.heartbeat(t.job.id, t.job.token, progress);
      if (t.finished) return;
      t.extended(r.leaseLeftMs, r.leaseUntil);
      if (r.cancel) {
        this.log.info(`job ${t.job.id}: cancelled; telling its handler to stop`);
        this.stop(t, "cancel");
      }
    } catch (e) {
      if (t.finished) return;
      if (e instanceof ConflictError || e instanceof NotFoundError) {
        this.log.warn(`job ${t.job.id}: the lease is lost (${describeError(e)}); stopping its handler`);
        this.stop(t, "lost");
        return;
      }
      if (progress !== undefined) t.progressDirty = true;
      t.beatDue = performance.now() + Math.min(t.beatEveryMs, RETRY_MS);
      this.log.warn(`job ${t.job.id}: heartbeat failed: ${describeError(e)}`);
    } finally {
      t.beating = false;
      if (!t.finished) {
        if (t.progressDirty) t.beatDue = Math.min(t.beatDue, t.lastBeat + PROGRESS_EVERY_MS);
        this.arm(t.beatDue);
      }
    }
  }

  private sendNotices(): void {
    this.noticeTimer = undefined;
    const now = performance.now();
    let i = 0;
    for (; i < this.notices.length; i++) {
      const t = this.notices[i]!;
      if (t.noticeDue > now) break;
      if (t.finished || t.stop) continue;
      const { id, token } = t.job;
      this.client.start(id, token).catch((e: unknown) => this.log.warn(`job ${id}: start: ${describeError(e)}`));
    }
    this.notices.splice(0, i);
    const next = this.notices[0];
    if (next) this.noticeTimer = setTimeout(() => this.sendNotices(), Math.max(0, next.noticeDue - now));
  }
}
