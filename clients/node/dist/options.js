"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_BACKPRESSURE_BUDGET_MS = exports.DEFAULT_SERVER = void 0;
exports.resolveOptions = resolveOptions;
// SPDX-License-Identifier: Apache-2.0
/** The client's options, and their defaults from the environment. */
const errors_1 = require("./errors");
exports.DEFAULT_SERVER = "http://127.0.0.1:7070";
function list(v) {
    if (v === undefined)
        return [];
    const all = Array.isArray(v) ? v : [v];
    return all.flatMap((s) => s.split(",")).map((s) => s.trim()).filter((s) => s !== "");
}
/** The default of `backpressureBudgetMs`. */
exports.DEFAULT_BACKPRESSURE_BUDGET_MS = 60_000;
function budget(ms) {
    if (ms === undefined)
        return exports.DEFAULT_BACKPRESSURE_BUDGET_MS;
    if (typeof ms !== "number" || !(ms >= 0))
        throw new errors_1.InvalidError(`backpressureBudgetMs is 0 or more milliseconds, not ${String(ms)}`, { field: "backpressureBudgetMs" });
    return ms;
}
function resolveOptions(o, env = process.env) {
    let servers = list(o.servers);
    if (!servers.length)
        servers = list(env["TENQ_SERVER"]);
    if (!servers.length)
        servers = [exports.DEFAULT_SERVER];
    const token = o.token ?? (env["TENQ_TOKEN"] || undefined);
    return {
        servers,
        token,
        tenant: o.tenant,
        queue: o.queue,
        failoverBudgetMs: o.failoverBudgetMs ?? 15_000,
        backpressureBudgetMs: budget(o.backpressureBudgetMs),
        connectTimeoutMs: o.connectTimeoutMs ?? 5_000,
        requestTimeoutMs: o.requestTimeoutMs ?? 30_000,
        maxSockets: o.maxSockets ?? 16,
        trace: o.trace,
        openTelemetry: o.openTelemetry,
        caFile: o.caFile ?? (env["TENQ_CA_FILE"] || undefined),
        clientCert: o.clientCert ?? (env["TENQ_CLIENT_CERT"] || undefined),
        clientKey: o.clientKey ?? (env["TENQ_CLIENT_KEY"] || undefined),
    };
}
