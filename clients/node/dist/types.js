"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.isFinished = isFinished;
exports.index = index;
/** succeeded, cancelled, merged, expired and dead: the states `wait` waits for. */
function isFinished(state) {
    return state === "succeeded" || state === "cancelled" || state === "merged" || state === "expired" || state === "dead";
}
/** `dependsOn: [index(0)]`: the first job of the same `submitMany` or `createBatch` list. */
function index(i) {
    return { index: i };
}
