// SPDX-License-Identifier: Apache-2.0
/**
 * W3C trace context (https://www.w3.org/TR/trace-context/), without a tracing
 * package: the application fills two hooks. The client's `trace` hook gives
 * the traceparent a submit carries; the worker's `tracing` middleware hands a
 * job's traceparent to a hook that opens the run's span as its child.
 */
import { InvalidError } from "./errors";

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Whether `v` is a traceparent the server takes: `00-<32 hex>-<16 hex>-<2 hex>`, lowercase. */
export function isTraceparent(v: unknown): v is string {
  return typeof v === "string" && TRACEPARENT.test(v);
}

/** Returns `v`, or throws InvalidError (field `traceparent`) before anything is sent. */
export function checkTraceparent(v: unknown, where = "traceparent"): string {
  if (!isTraceparent(v))
    throw new InvalidError(`${where} must be a W3C traceparent, 00-<32 hex>-<16 hex>-<2 hex> in lowercase`, {
      field: "traceparent",
    });
  return v;
}

/** The client's hook: the current span's traceparent, or nothing outside a span. */
export type TraceHook = () => string | null | undefined;
