"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Registry = void 0;
exports.invoke = invoke;
// SPDX-License-Identifier: Apache-2.0
/**
 * Handlers by job type: plain handlers, tasks, and the methods of registered
 * classes (the switch), which run as `new Class()[method](...args)`.
 */
const context_1 = require("./context");
const errors_1 = require("./errors");
const job_errors_1 = require("./job-errors");
const TYPE_RE = /^[\x21-\x7e]{1,128}$/;
function methodsOf(proto) {
    const out = new Set();
    for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
        for (const k of Object.getOwnPropertyNames(p)) {
            if (k === "constructor" || k.startsWith("_"))
                continue;
            const d = Object.getOwnPropertyDescriptor(p, k);
            if (d && typeof d.value === "function")
                out.add(k);
        }
    }
    return [...out];
}
class Registry {
    byType = new Map();
    classes = new Map();
    /** Registers `handler` for `type` (a second registration of the type replaces the first). */
    add(type, handler, o = {}) {
        if (!TYPE_RE.test(type))
            throw new errors_1.InvalidError(`bad job type "${type}": 1-128 printable ASCII characters, no spaces`, { field: "type" });
        if (typeof handler !== "function")
            throw new errors_1.InvalidError(`the handler of ${type} is not a function`, { field: "handler" });
        this.byType.set(type, { type, handler, timeoutMs: o.timeoutMs });
    }
    get(type) {
        return this.byType.get(type);
    }
    /** The registered types. */
    types() {
        return [...this.byType.keys()];
    }
    /** Registers a class's methods as the types `Name.method`. */
    addClass(cls, o = {}) {
        const name = o.name ?? cls.name;
        if (!name)
            throw new errors_1.InvalidError("a class without a name needs the `name` option", { field: "name" });
        const methods = o.methods ? [...o.methods] : methodsOf(cls.prototype);
        if (!methods.length)
            throw new errors_1.InvalidError(`${name} has no methods to register`, { field: "methods" });
        const make = o.factory ?? (() => new cls());
        for (const m of methods) {
            if (typeof cls.prototype[m] !== "function")
                throw new errors_1.InvalidError(`${name}.${m} is not a method`, { field: "methods" });
            const type = `${name}.${m}`;
            this.add(type, (args) => {
                if (args !== undefined && !Array.isArray(args))
                    throw new job_errors_1.NoRetryError(`${type} takes its arguments as a JSON array, not ${typeof args}`);
                const self = make();
                return self[m](...(args ?? []));
            }, o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {});
        }
        this.classes.set(cls, { name, methods: new Set(methods) });
    }
    /** The type of `method` called on `target` (a registered class or one of its instances). */
    typeOf(target, method) {
        const cls = typeof target === "function" ? target : target.constructor;
        const e = cls && typeof cls === "function" ? this.findClass(cls) : undefined;
        if (!e) {
            const n = typeof cls === "function" && cls.name ? cls.name : "this object";
            throw new errors_1.InvalidError(`${n} is not registered: call tenq.register(${n}) first`, { field: "type" });
        }
        if (!e.methods.has(method))
            throw new errors_1.InvalidError(`${e.name}.${method} is not a registered method`, { field: "type" });
        return `${e.name}.${method}`;
    }
    findClass(cls) {
        return this.classes.get(cls);
    }
}
exports.Registry = Registry;
/** Runs a registered handler with `ctx` as the current job. A handler that throws synchronously rejects. */
async function invoke(reg, ctx) {
    return (0, context_1.runInJob)(ctx, () => reg.handler(ctx.args, ctx));
}
