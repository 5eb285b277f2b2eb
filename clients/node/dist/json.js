"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.checkJson = checkJson;
// SPDX-License-Identifier: Apache-2.0
/** JSON values, and the check that a value survives a trip through JSON unchanged. */
const errors_1 = require("./errors");
function describe(v) {
    if (v === undefined)
        return "undefined";
    if (typeof v === "number")
        return String(v);
    if (typeof v === "bigint")
        return "a BigInt";
    if (typeof v === "function")
        return "a function";
    if (typeof v === "symbol")
        return "a symbol";
    const proto = Object.getPrototypeOf(v);
    const ctor = proto && typeof proto === "object" && "constructor" in proto ? proto.constructor : undefined;
    const name = typeof ctor === "function" && ctor.name ? ctor.name : "object";
    return `a ${name}`;
}
function isPlainObject(v) {
    const proto = Object.getPrototypeOf(v);
    return proto === Object.prototype || proto === null;
}
/**
 * Throws InvalidError (naming `field` and the path inside it) unless `value`
 * is plain JSON: null, booleans, finite numbers, strings, arrays and plain
 * objects, without cycles. Dates, Maps, class instances, BigInts, functions,
 * NaN and undefined in an array are refused rather than silently changed
 * by JSON.stringify. An object property that is undefined is allowed: JSON
 * leaves it out, and reading it back gives undefined again.
 */
function checkJson(value, field, path = field) {
    const stack = new Set();
    const walk = (v, at) => {
        if (v === null || typeof v === "string" || typeof v === "boolean")
            return;
        if (typeof v === "number") {
            if (!Number.isFinite(v))
                throw refuse(field, at, describe(v));
            return;
        }
        if (typeof v !== "object")
            throw refuse(field, at, describe(v));
        if (stack.has(v))
            throw new errors_1.InvalidError(`${at} refers to itself: JSON cannot hold a cycle`, { field });
        if (Array.isArray(v)) {
            stack.add(v);
            for (let i = 0; i < v.length; i++) {
                if (v[i] === undefined)
                    throw refuse(field, `${at}[${i}]`, "undefined (use null)");
                walk(v[i], `${at}[${i}]`);
            }
            stack.delete(v);
            return;
        }
        if (!isPlainObject(v))
            throw refuse(field, at, describe(v));
        stack.add(v);
        for (const [k, x] of Object.entries(v)) {
            if (x !== undefined)
                walk(x, `${at}.${k}`);
        }
        stack.delete(v);
    };
    walk(value, path);
}
function refuse(field, at, what) {
    return new errors_1.InvalidError(`${at} is ${what}, which is not JSON-serialisable`, { field });
}
