"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RemoteHandle = void 0;
exports.resultOf = resultOf;
const job_errors_1 = require("./job-errors");
/** The result of a finished job, or the error its end means. */
function resultOf(job) {
    switch (job.state) {
        case "succeeded":
            return job.result;
        case "cancelled":
            throw new job_errors_1.JobCancelledError(`job ${job.id} was cancelled`, job);
        case "expired":
            throw new job_errors_1.JobExpiredError(`job ${job.id} expired: not started by ${job.expireAt ?? "its expire_at"}`, job);
        default:
            throw new job_errors_1.JobFailedError(`job ${job.id} is ${job.state}: ${job.error ?? "no error recorded"}`, job);
    }
}
/** A job on a server. */
class RemoteHandle {
    client;
    submitted;
    id;
    constructor(client, submitted) {
        this.client = client;
        this.submitted = submitted;
        this.id = submitted.id;
    }
    async wait(options = {}) {
        return resultOf(await this.client.wait(this.id, options));
    }
    job() {
        return this.client.get(this.id);
    }
    cancel() {
        return this.client.cancel(this.id);
    }
}
exports.RemoteHandle = RemoteHandle;
