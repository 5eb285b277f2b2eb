"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.callArgs = callArgs;
exports.asyncProxy = asyncProxy;
/** The call's arguments as the job's args: trailing undefined ones left out, as if not passed. */
function callArgs(args) {
    let n = args.length;
    while (n > 0 && args[n - 1] === undefined)
        n--;
    return args.slice(0, n);
}
/** The object `tenq.async(target)` returns: every property is a method that submits. */
function asyncProxy(typeOf, enqueue, options) {
    return new Proxy(Object.create(null), {
        get(_t, prop) {
            // not a thenable, not a symbol-keyed protocol
            if (typeof prop !== "string" || prop === "then")
                return undefined;
            return (...args) => {
                try {
                    return enqueue(typeOf(prop), callArgs(args), options);
                }
                catch (e) {
                    return Promise.reject(e);
                }
            };
        },
    });
}
