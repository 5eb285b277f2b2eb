"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SETTING_NAMES = void 0;
exports.settingsToWire = settingsToWire;
exports.infoFromWire = infoFromWire;
// SPDX-License-Identifier: Apache-2.0
/**
 * Queue and tenant settings and counts: camelCase in this library, the
 * protocol's snake_case on the wire. One table names each field both ways;
 * the types of types.ts are checked against it when this file compiles.
 */
const errors_1 = require("./errors");
/** Every queue and tenant field the library names: its name here, and on the wire. */
exports.SETTING_NAMES = {
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
    completedPerS: "completed_per_s",
    failedPerS: "failed_per_s",
};
const _typesAreTheTable = true;
void _typesAreTheTable;
const TO_WIRE = new Map(Object.entries(exports.SETTING_NAMES));
const FROM_WIRE = new Map(Object.entries(exports.SETTING_NAMES).map(([k, v]) => [v, k]));
const warned = new Set();
/**
 * Settings to send: each named field by its wire name. A field given by its
 * wire name (the library's former spelling) is taken, with a deprecation
 * warning once per name; a field the table does not name goes as it is (a
 * newer server's setting; the server refuses one it does not know, naming
 * it).
 */
function settingsToWire(settings, what) {
    if (!settings || typeof settings !== "object" || Array.isArray(settings))
        throw new errors_1.InvalidError(`${what} settings are an object`, { field: "settings" });
    const out = {};
    for (const [k, v] of Object.entries(settings)) {
        if (v === undefined)
            continue;
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
        if (name in out)
            throw new errors_1.InvalidError(`${what} setting ${k} given twice`, { field: k });
        out[name] = v;
    }
    return out;
}
/** A queue or tenant as the server shows it, in this library's names (a field the table does not name: in camelCase too). */
function infoFromWire(o) {
    const out = {};
    for (const [k, v] of Object.entries(o))
        out[FROM_WIRE.get(k) ?? k.replace(/_([a-z0-9])/g, (_m, c) => c.toUpperCase())] = v;
    return out;
}
