import { type JsonValue } from "./json";
import type { JobSpec } from "./types";
/** What the helpers need of a database connection: node-postgres's `query(text, values)`. */
export interface Queryable {
    query(text: string, values?: unknown[]): PromiseLike<{
        rows: unknown[];
    }>;
}
/** A leased job: a handler's `ctx`, a `LeasedJob`, or `{ id, token }`. */
export interface LeaseRef {
    readonly id: number;
    readonly token: number;
}
export interface FailTxOptions {
    /** Retry after this many ms (0: at once) instead of the queue's backoff. */
    retryInMs?: number;
}
/** Defaults for the jobs' tenant and queue (a Client passes its own). */
export interface TxDefaults {
    tenant?: string;
    queue?: string;
}
/**
 * How a worker's task learns that its handler settled the job in a
 * transaction (see TaskContext): its report then says the same thing.
 * @internal
 */
export declare const TX_SETTLED: unique symbol;
/**
 * Submits one job in the caller's transaction (tenq.submit) and returns its
 * id (odd: ids made in transactions are). The job exists once the
 * transaction commits; a rollback leaves nothing. `tenant` and `queue` are
 * required (here, or in `defaults`). Fields are checked as for
 * `client.submit` before anything is sent (InvalidError); the server's own
 * checks raise in the transaction, as InvalidError too, and a job over its
 * tenant's or queue's quota (SQLSTATE TQ429) as QuotaExceededError; the
 * transaction is then aborted (roll it back).
 */
export declare function submitTx(db: Queryable, spec: JobSpec, defaults?: TxDefaults): Promise<number>;
/**
 * Submits many jobs in the caller's transaction (tenq.submit_many, one
 * statement) and returns their ids in the order of `specs`.
 */
export declare function submitManyTx(db: Queryable, specs: readonly JobSpec[], defaults?: TxDefaults): Promise<number[]>;
/** @internal A job as `jobToWire`/`Client.prepare` made it. */
export declare function submitWireTx(db: Queryable, w: Record<string, unknown>): Promise<number>;
/** @internal Jobs as `jobToWire`/`Client.prepare` made them. */
export declare function submitManyWireTx(db: Queryable, wires: Record<string, unknown>[]): Promise<number[]>;
/**
 * Marks a leased job of an exactly-once queue succeeded in the caller's
 * transaction (tenq.complete), together with the application's writes.
 * Rejects with ConflictError (field `token`) when the lease is not the
 * job's current, unexpired one, or the queue's delivery is not
 * `exactly-once`; the transaction is then aborted (roll it back).
 *
 * In a worker, pass the handler's `ctx` (or its id and token) and return
 * after the commit: the worker's own report of the job is then an ack with
 * the same result, which the server answers as applied.
 */
export declare function completeTx(db: Queryable, job: LeaseRef, result?: JsonValue): Promise<void>;
/**
 * The attempt failed, in the caller's transaction (tenq.fail): once it
 * commits the server retries the job (after `retryInMs`, else the queue's
 * backoff) or buries it when its attempts are spent. Rejects as
 * `completeTx` does.
 *
 * In a worker, pass the handler's `ctx` and return after the commit: the
 * worker reports the same failure (answered as applied), not a success.
 */
export declare function failTx(db: Queryable, job: LeaseRef, error: string, o?: FailTxOptions): Promise<void>;
/**
 * Sends an event of `tenant` in the caller's transaction (tenq.send_event,
 * docs/transactions.md): the jobs whose handler waits for `key`
 * (`ctx.waitForEvent`) go on with `payload` (JSON) if and only if the
 * transaction commits. Returns the event's number in the server's inbox.
 * The database refuses a bad tenant, key or payload (InvalidError; the
 * transaction is then aborted).
 */
export declare function sendEventTx(db: Queryable, tenant: string, key: string, payload?: unknown): Promise<number>;
/** A BIGINT id as a number: from text (node-postgres's int8), a number or a BigInt. */
export declare function toId(v: unknown, what: string): number;
