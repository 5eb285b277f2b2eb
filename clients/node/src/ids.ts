// SPDX-License-Identifier: Apache-2.0
/**
 * Request keys: the `Idempotency-Key` header of every POST /v1/jobs. One is
 * made per submit call (per request of a split batch) before the first
 * attempt and sent again, unchanged, on every retry of that call, so the
 * server answers a retry with its first answer and makes nothing twice.
 *
 * A key is time-ordered: "tq1", 11 hex digits of the Unix clock in ms, 8 hex
 * digits drawn at random once per maker (a client), 8 hex digits of the
 * maker's counter: "tq1" + 27 lowercase hex digits.
 */
import { randomBytes } from "node:crypto";

export class RequestKeys {
  private readonly random = randomBytes(4).toString("hex");
  private counter = 0;

  /** A fresh key, never made before by this maker. */
  next(): string {
    const ms = Date.now().toString(16).padStart(11, "0");
    const n = this.counter.toString(16).padStart(8, "0");
    this.counter = (this.counter + 1) >>> 0;
    return `tq1${ms}${this.random}${n}`;
  }
}
