/** Between the wire's snake_case JSON and this library's objects. */
import { TenqError } from "./errors";
import type { Attempt, BatchInfo, BatchResult, CallbackSpec, JobParents, KeyPage, KeySetting, Job, JobSpec, LeasedJob, Outcome, OutcomeResult, Schedule, ScheduleSpec, SubmitResult } from "./types";
type Wire = Record<string, unknown>;
export declare function asObject(v: unknown, what: string): Wire;
export declare function asList(v: unknown, what: string): unknown[];
/** A job to send, checked: the fields the server requires, and JSON args. */
export declare function jobToWire(spec: JobSpec, defaults: {
    tenant?: string;
    queue?: string;
}, index?: number): Wire;
/** Whether a prepared job names an earlier job of its request by `{"index": i}`. */
export declare function hasIndexRef(w: Record<string, unknown> | undefined): boolean;
/** A batch's callback to send: a job's fields less those a callback does not take. */
export declare function callbackToWire(spec: CallbackSpec, defaults: {
    queue?: string;
}, name: string): Wire;
export declare function parentsFromWire(v: unknown): JobParents;
export declare function batchFromWire(v: unknown): BatchInfo;
/** A submit's answer; `replayedRequest`: the server replayed the request's first answer (Idempotent-Replayed). */
export declare function submitResult(v: unknown, what: string, replayedRequest?: boolean): SubmitResult;
/** An item of a batch's answer that says it was refused, as a TenqError. */
export declare function itemError(o: Wire): TenqError | undefined;
export declare function batchResult(v: unknown, what: string, replayedRequest?: boolean): BatchResult;
export declare function jobFromWire(v: unknown): Job;
/** GET /v1/keys's answer. */
export declare function keyPageFromWire(v: unknown): KeyPage;
/** A key setting as the server shows it. */
export declare function keySettingFromWire(v: unknown): KeySetting;
export declare function leasedFromWire(v: unknown): LeasedJob;
export declare function outcomeToWire(o: Outcome): Wire;
export declare function outcomeResult(v: unknown, id: number): OutcomeResult;
/** An outcome as JSON text (the common ack without result or stats written directly). */
export declare function outcomeJson(o: Outcome): string;
/** A schedule to PUT, checked: a cron expression, a job with a type and a queue, JSON args. */
export declare function scheduleToWire(spec: ScheduleSpec, defaults: {
    tenant?: string;
    queue?: string;
}): Wire;
export declare function scheduleFromWire(v: unknown): Schedule;
export declare function attemptFromWire(v: unknown): Attempt;
export {};
