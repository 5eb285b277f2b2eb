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
import { type JsonValue } from "./json";
import type { Logger } from "./log";
import type { StopReason, Task } from "./task";
export declare class Heartbeats {
    private readonly client;
    private readonly log;
    private readonly noticeMs;
    private readonly stop;
    private readonly tasks;
    private timer;
    private at;
    private readonly notices;
    private noticeTimer;
    private closed;
    constructor(client: Client, log: Logger, noticeMs: number, stop: (t: Task, reason: StopReason) => void);
    /** A job arrived: heartbeat it until it is finished. */
    add(t: Task): void;
    /** The job is over. */
    remove(t: Task): void;
    /** Its handler began. */
    started(t: Task): void;
    /** The handler reported progress. */
    progress(t: Task, v: JsonValue): void;
    /** No more heartbeats or notices. */
    clear(): void;
    private arm;
    private beat;
    private send;
    private sendNotices;
}
