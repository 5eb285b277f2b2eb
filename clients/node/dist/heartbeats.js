"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Heartbeats = void 0;
const errors_1 = require("./errors");
const json_1 = require("./json");
const middleware_1 = require("./middleware");
/** Progress reaches the server within this. */
const PROGRESS_EVERY_MS = 500;
/** A failed heartbeat is tried again within this. */
const RETRY_MS = 1000;
class Heartbeats {
    client;
    log;
    noticeMs;
    stop;
    tasks = new Set();
    timer;
    at = Infinity;
    notices = [];
    noticeTimer;
    closed = false;
    constructor(client, log, noticeMs, stop) {
        this.client = client;
        this.log = log;
        this.noticeMs = noticeMs;
        this.stop = stop;
    }
    /** A job arrived: heartbeat it until it is finished. */
    add(t) {
        this.tasks.add(t);
        this.arm(t.beatDue);
    }
    /** The job is over. */
    remove(t) {
        this.tasks.delete(t);
    }
    /** Its handler began. */
    started(t) {
        if (this.noticeMs < 0 || this.closed)
            return;
        t.noticeDue = performance.now() + this.noticeMs;
        this.notices.push(t);
        this.noticeTimer ??= setTimeout(() => this.sendNotices(), this.noticeMs);
    }
    /** The handler reported progress. */
    progress(t, v) {
        (0, json_1.checkJson)(v, "progress");
        if (t.finished)
            return;
        t.progress = v;
        t.progressDirty = true;
        const due = Math.max(performance.now(), t.lastBeat + PROGRESS_EVERY_MS);
        if (due < t.beatDue)
            t.beatDue = due;
        if (!t.beating)
            this.arm(t.beatDue);
    }
    /** No more heartbeats or notices. */
    clear() {
        this.closed = true;
        if (this.timer)
            clearTimeout(this.timer);
        if (this.noticeTimer)
            clearTimeout(this.noticeTimer);
        this.timer = this.noticeTimer = undefined;
        this.at = Infinity;
        this.tasks.clear();
        this.notices.length = 0;
    }
    arm(due) {
        if (due >= this.at || this.closed)
            return;
        if (this.timer)
            clearTimeout(this.timer);
        this.at = due;
        this.timer = setTimeout(() => this.beat(), Math.max(0, due - performance.now()));
    }
    beat() {
        this.timer = undefined;
        this.at = Infinity;
        const now = performance.now();
        let next = Infinity;
        for (const t of this.tasks) {
            if (t.finished || t.beating)
                continue;
            else if (t.beatDue <= now + 1)
                void this.send(t);
            else
                next = Math.min(next, t.beatDue);
        }
        if (next < Infinity)
            this.arm(next);
    }
    async send(t) {
        t.beating = true;
        t.lastBeat = performance.now();
        const progress = t.progressDirty ? t.progress : undefined;
        t.progressDirty = false;
        try {
            const r = await this.client.heartbeat(t.job.id, t.job.token, progress);
            if (t.finished)
                return;
            t.extended(r.leaseLeftMs, r.leaseUntil);
            if (r.cancel) {
                this.log.info(`job ${t.job.id}: cancelled; telling its handler to stop`);
                this.stop(t, "cancel");
            }
        }
        catch (e) {
            if (t.finished)
                return;
            if (e instanceof errors_1.ConflictError || e instanceof errors_1.NotFoundError) {
                this.log.warn(`job ${t.job.id}: the lease is lost (${(0, middleware_1.describeError)(e)}); stopping its handler`);
                this.stop(t, "lost");
                return;
            }
            if (progress !== undefined)
                t.progressDirty = true;
            t.beatDue = performance.now() + Math.min(t.beatEveryMs, RETRY_MS);
            this.log.warn(`job ${t.job.id}: heartbeat failed: ${(0, middleware_1.describeError)(e)}`);
        }
        finally {
            t.beating = false;
            if (!t.finished) {
                if (t.progressDirty)
                    t.beatDue = Math.min(t.beatDue, t.lastBeat + PROGRESS_EVERY_MS);
                this.arm(t.beatDue);
            }
        }
    }
    sendNotices() {
        this.noticeTimer = undefined;
        const now = performance.now();
        let i = 0;
        for (; i < this.notices.length; i++) {
            const t = this.notices[i];
            if (t.noticeDue > now)
                break;
            if (t.finished || t.stop)
                continue;
            const { id, token } = t.job;
            this.client.start(id, token).catch((e) => this.log.warn(`job ${id}: start: ${(0, middleware_1.describeError)(e)}`));
        }
        this.notices.splice(0, i);
        const next = this.notices[0];
        if (next)
            this.noticeTimer = setTimeout(() => this.sendNotices(), Math.max(0, next.noticeDue - now));
    }
}
exports.Heartbeats = Heartbeats;
