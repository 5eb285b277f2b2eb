// SPDX-License-Identifier: Apache-2.0
/**
 * Queue and tenant settings and counts: camelCase in this library, the
 * protocol's snake_case on the wire. One table names each field both ways;
 * the types of types.ts are checked against it when this file compiles.
 */
import { InvalidError } from "./errors";
import type { JsonValue } from "./json";
import type { QueueInfo, QueueSettings, TenantInfo, TenantSettings } from "./types";

/** Every queue and tenant field the library names: its name here, and on the wire. */
export const SETTING_NAMES = {
  // settings
  order: "order",
  delivery: "delivery",
  leaseMs: "lease_ms",
  maxAttempts: "max_attempts",
  backoff: "backoff",
  backoffBaseMs: "backoff_base_ms",
  backoffMaxMs: "backoff_max_ms",
  merge: "merge",
  dedupWindowMs: "dedup_window_ms",
  retentionMs: "retention_ms",
  maxPayloadBytes: "max_payload_bytes",
  tenantCap: "tenant_cap",
  timeoutMs: "timeout_ms",
  paused: "paused",
  rate: "rate",
  tenantRate: "tenant_rate",
  ratePeriodMs: "rate_period_ms",
  rateBurst: "rate_burst",
  slots: "slots",
  weight: "weight",
  maxQueued: "max_queued",
  maxQueuedBytes: "max_queued_bytes",
  concurrencyLimit: "concurrency_limit",
  agingMs: "aging_ms",
  agingCap: "aging_cap",
  // what a queue or tenant shows besides
  name: "name",
  pausedTenants: "paused_tenants",
  inUse: "in_use",
  ready: "ready",
  scheduled: "scheduled",
  blocked: "blocked",
  waiting: "waiting",
  leased: "leased",
  running: "running",
  dead: "dead",
  queued: "queued",
  queuedBytes: "queued_bytes",
  eligible: "eligible",
  held: "held",
  rateLimitedUntil: "rate_limited_until",
  lagMs: "lag_ms",
  submittedTotal: "submitted_total",
  succeededTotal: "succeeded_total",
  failedTotal: "failed_total",
  deadTotal: "dead_total",
  cancelledTotal: "cancelled_total",
  expiredTotal: "expired_total",
  completedPerS: "completed_per_s",
  failedPerS: "failed_per_s",
} as const;

type Known<T> = keyof { [K in keyof T as string extends K ? never : K]: T[K] };
// the types name no field the table does not, and the table none they do not
type Named = keyof typeof SETTING_NAMES;
type Typed = Known<QueueInfo> | Known<TenantInfo>;
const _typesAreTheTable: [Exclude<Typed, Named>, Exclude<Named, Typed>] extends [never, never] ? true : never = true;
void _typesAreTheTable;

const TO_WIRE: ReadonlyMap<string, string> = new Map(Object.entries(SETTING_NAMES));
const FROM_WIRE: ReadonlyMap<string, string> = new Map(Object.entries(SETTING_NAMES).map(([k, v]) => [v, k]));
const warned = new Set<string>();

/**
 * Settings to send: each named field by its wire name. A field given by its
 * wire name (the library's former spelling) is taken, with a deprecation
 * warning once per name; a field the table does not name goes as it is (a
 * newer server's setting; the server refuses one it does not know, naming
 * it).
 */
export function settingsToWire(settings: QueueSettings | TenantSettings, what: string): Record<string, JsonValue> {
  if (!settings || typeof settings !== "object" || Array.isArray(settings))
    throw new InvalidError(`${what} settings are an object`, { field: "settings" });
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(settings)) {
    if (v === undefined) continue;
    let wire = TO_WIRE.get(k);
    if (wire === undefined && FROM_WIRE.has(k)) {
      wire = k;
      if (!warned.has(k)) {
        warned.add(k);
        process.emitWarning(`tenq: the ${what} setting "${k}" is spelt "${FROM_WIRE.get(k)}" now`, {
          type: "DeprecationWarning",
          code: "TENQ_SNAKE_CASE_SETTING",
        });
      }
    }
    const name = wire ?? k;
    if (name in out) throw new InvalidError(`${what} setting ${k} given twice`, { field: k });
    out[name] = v as JsonValue;
  }
  return out;
}

/** A queue or tenant as the server shows it, in this library's names (a field the table does not name: in camelCase too). */
export function infoFromWire<T extends QueueInfo | TenantInfo>(o: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[FROM_WIRE.get(k) ?? k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase())] = v;
  return out as T;
}
