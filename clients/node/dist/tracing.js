"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.isTraceparent = isTraceparent;
exports.checkTraceparent = checkTraceparent;
// SPDX-License-Identifier: Apache-2.0
/**
 * W3C trace context (https://www.w3.org/TR/trace-context/), without a tracing
 * package: the application fills two hooks. The client's `trace` hook gives
 * the traceparent a submit carries; the worker's `tracing` middleware hands a
 * job's traceparent to a hook that opens the run's span as its child.
 */
const errors_1 = require("./errors");
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
/** Whether `v` is a traceparent the server takes: `00-<32 hex>-<16 hex>-<2 hex>`, lowercase. */
function isTraceparent(v) {
    return typeof v === "string" && TRACEPARENT.test(v);
}
/** Returns `v`, or throws InvalidError (field `traceparent`) before anything is sent. */
function checkTraceparent(v, where = "traceparent") {
    if (!isTraceparent(v))
        throw new errors_1.InvalidError(`${where} must be a W3C traceparent, 00-<32 hex>-<16 hex>-<2 hex> in lowercase`, {
            field: "traceparent",
        });
    return v;
}
