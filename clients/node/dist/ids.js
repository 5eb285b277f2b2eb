"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RequestKeys = void 0;
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
const node_crypto_1 = require("node:crypto");
class RequestKeys {
    random = (0, node_crypto_1.randomBytes)(4).toString("hex");
    counter = 0;
    /** A fresh key, never made before by this maker. */
    next() {
        const ms = Date.now().toString(16).padStart(11, "0");
        const n = this.counter.toString(16).padStart(8, "0");
        this.counter = (this.counter + 1) >>> 0;
        return `tq1${ms}${this.random}${n}`;
    }
}
exports.RequestKeys = RequestKeys;
