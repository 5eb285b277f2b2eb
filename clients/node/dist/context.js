"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.workflowContext = workflowContext;
exports.currentJob = currentJob;
exports.runInJob = runInJob;
// SPDX-License-Identifier: Apache-2.0
/**
 * What a handler knows about the job it runs: given as the second argument
 * of a handler, and to any code it calls through `currentJob()` (the
 * switch's methods get their call's arguments only, so this is how they
 * see the signal and report progress).
 */
const node_async_hooks_1 = require("node:async_hooks");
const errors_1 = require("./errors");
/** The workflow part of a JobContext, for a job and the backend that answers. */
function workflowContext(job, backend) {
    return {
        batch: job.batch,
        batchCallback: job.batchCallback,
        parents: job.parents ?? [],
        parentResults: () => backend.parents(job.id),
        addToBatch: async (jobs) => {
            if (job.batch === undefined)
                throw new errors_1.InvalidError(`job ${job.id} is in no batch`, { field: "batch" });
            return backend.addToBatch(job.batch, jobs);
        },
    };
}
const store = new node_async_hooks_1.AsyncLocalStorage();
/** The job the calling code runs in, or undefined outside a job. */
function currentJob() {
    return store.getStore();
}
/** Runs `fn` with `ctx` as the current job. */
function runInJob(ctx, fn) {
    return store.run(ctx, fn);
}
