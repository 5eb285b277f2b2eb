"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_SERVER = void 0;
exports.resolveOptions = resolveOptions;
exports.DEFAULT_SERVER = "http://127.0.0.1:7070";
function list(v) {
    if (v === undefined)
        return [];
    const all = Array.isArray(v) ? v : [v];
    return all.flatMap((s) => s.split(",")).map((s) => s.trim()).filter((s) => s !== "");
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
        connectTimeoutMs: o.connectTimeoutMs ?? 5_000,
        requestTimeoutMs: o.requestTimeoutMs ?? 30_000,
        maxSockets: o.maxSockets ?? 16,
        trace: o.trace,
        openTelemetry: o.openTelemetry,
    };
}
