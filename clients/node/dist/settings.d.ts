import type { JsonValue } from "./json";
import type { QueueInfo, QueueSettings, TenantInfo, TenantSettings } from "./types";
/** Every queue and tenant field the library names: its name here, and on the wire. */
export declare const SETTING_NAMES: {
    readonly order: "order";
    readonly delivery: "delivery";
    readonly leaseMs: "lease_ms";
    readonly maxAttempts: "max_attempts";
    readonly backoff: "backoff";
    readonly backoffBaseMs: "backoff_base_ms";
    readonly backoffMaxMs: "backoff_max_ms";
    readonly merge: "merge";
    readonly dedupWindowMs: "dedup_window_ms";
    readonly retentionMs: "retention_ms";
    readonly maxPayloadBytes: "max_payload_bytes";
    readonly tenantCap: "tenant_cap";
    readonly timeoutMs: "timeout_ms";
    readonly paused: "paused";
    readonly rate: "rate";
    readonly tenantRate: "tenant_rate";
    readonly ratePeriodMs: "rate_period_ms";
    readonly rateBurst: "rate_burst";
    readonly slots: "slots";
    readonly weight: "weight";
    readonly maxQueued: "max_queued";
    readonly maxQueuedBytes: "max_queued_bytes";
    readonly name: "name";
    readonly pausedTenants: "paused_tenants";
    readonly inUse: "in_use";
    readonly ready: "ready";
    readonly scheduled: "scheduled";
    readonly blocked: "blocked";
    readonly waiting: "waiting";
    readonly leased: "leased";
    readonly running: "running";
    readonly dead: "dead";
    readonly queued: "queued";
    readonly queuedBytes: "queued_bytes";
    readonly eligible: "eligible";
    readonly held: "held";
    readonly rateLimitedUntil: "rate_limited_until";
    readonly lagMs: "lag_ms";
    readonly submittedTotal: "submitted_total";
    readonly succeededTotal: "succeeded_total";
    readonly failedTotal: "failed_total";
    readonly deadTotal: "dead_total";
    readonly cancelledTotal: "cancelled_total";
    readonly completedPerS: "completed_per_s";
    readonly failedPerS: "failed_per_s";
};
/**
 * Settings to send: each named field by its wire name. A field given by its
 * wire name (the library's former spelling) is taken, with a deprecation
 * warning once per name; a field the table does not name goes as it is (a
 * newer server's setting; the server refuses one it does not know, naming
 * it).
 */
export declare function settingsToWire(settings: QueueSettings | TenantSettings, what: string): Record<string, JsonValue>;
/** A queue or tenant as the server shows it, in this library's names (a field the table does not name: in camelCase too). */
export declare function infoFromWire<T extends QueueInfo | TenantInfo>(o: Record<string, unknown>): T;
