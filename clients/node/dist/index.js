"use strict";
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __exportStar = (this && this.__exportStar) || function(m, exports) {
    for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.EventTimeoutError = exports.ChildFailedError = exports.SETTING_NAMES = exports.toTraceparent = exports.findOtelApi = exports.DEFAULT_SERVER = exports.tracing = exports.logging = exports.errorReporter = exports.describeError = exports.compose = exports.stderrLogger = exports.silentLogger = exports.checkJson = exports.WorkerStoppedError = exports.RetryError = exports.NoRetryError = exports.LeaseLostError = exports.JobTimeoutError = exports.JobFailedError = exports.JobExpiredError = exports.JobCancelledError = exports.RequestKeys = exports.resultOf = exports.RemoteHandle = exports.errorFromWire = exports.UnavailableError = exports.UnauthenticatedError = exports.TooLargeError = exports.TimeoutError = exports.TenqError = exports.RateLimitedError = exports.QuotaExceededError = exports.TlsError = exports.ProtocolError = exports.OverloadedError = exports.NotLeaderError = exports.NotFoundError = exports.InvalidError = exports.InternalError = exports.ForbiddenError = exports.ConnectionError = exports.ConflictError = exports.BatchClosedError = exports.currentJob = exports.answerError = exports.REQUEST_KEY_HEADER = exports.MAX_BATCH_JOBS = exports.Client = exports.Tenq = void 0;
exports.Worker = exports.submitTx = exports.submitManyTx = exports.sendEventTx = exports.failTx = exports.completeTx = exports.VERSION = exports.isTraceparent = exports.checkTraceparent = exports.Testing = exports.Registry = exports.isParked = exports.Parked = void 0;
// SPDX-License-Identifier: Apache-2.0
/**
 * tenq: the client and worker library for the tenq job queue server.
 *
 * ```ts
 * import { Tenq } from "tenq";
 * const tenq = new Tenq({ servers: "http://127.0.0.1:7070", tenant: "acme", queue: "reports" });
 * ```
 */
var app_1 = require("./app");
Object.defineProperty(exports, "Tenq", { enumerable: true, get: function () { return app_1.Tenq; } });
var client_1 = require("./client");
Object.defineProperty(exports, "Client", { enumerable: true, get: function () { return client_1.Client; } });
Object.defineProperty(exports, "MAX_BATCH_JOBS", { enumerable: true, get: function () { return client_1.MAX_BATCH_JOBS; } });
Object.defineProperty(exports, "REQUEST_KEY_HEADER", { enumerable: true, get: function () { return client_1.REQUEST_KEY_HEADER; } });
Object.defineProperty(exports, "answerError", { enumerable: true, get: function () { return client_1.answerError; } });
var context_1 = require("./context");
Object.defineProperty(exports, "currentJob", { enumerable: true, get: function () { return context_1.currentJob; } });
var errors_1 = require("./errors");
Object.defineProperty(exports, "BatchClosedError", { enumerable: true, get: function () { return errors_1.BatchClosedError; } });
Object.defineProperty(exports, "ConflictError", { enumerable: true, get: function () { return errors_1.ConflictError; } });
Object.defineProperty(exports, "ConnectionError", { enumerable: true, get: function () { return errors_1.ConnectionError; } });
Object.defineProperty(exports, "ForbiddenError", { enumerable: true, get: function () { return errors_1.ForbiddenError; } });
Object.defineProperty(exports, "InternalError", { enumerable: true, get: function () { return errors_1.InternalError; } });
Object.defineProperty(exports, "InvalidError", { enumerable: true, get: function () { return errors_1.InvalidError; } });
Object.defineProperty(exports, "NotFoundError", { enumerable: true, get: function () { return errors_1.NotFoundError; } });
Object.defineProperty(exports, "NotLeaderError", { enumerable: true, get: function () { return errors_1.NotLeaderError; } });
Object.defineProperty(exports, "OverloadedError", { enumerable: true, get: function () { return errors_1.OverloadedError; } });
Object.defineProperty(exports, "ProtocolError", { enumerable: true, get: function () { return errors_1.ProtocolError; } });
Object.defineProperty(exports, "TlsError", { enumerable: true, get: function () { return errors_1.TlsError; } });
Object.defineProperty(exports, "QuotaExceededError", { enumerable: true, get: function () { return errors_1.QuotaExceededError; } });
Object.defineProperty(exports, "RateLimitedError", { enumerable: true, get: function () { return errors_1.RateLimitedError; } });
Object.defineProperty(exports, "TenqError", { enumerable: true, get: function () { return errors_1.TenqError; } });
Object.defineProperty(exports, "TimeoutError", { enumerable: true, get: function () { return errors_1.TimeoutError; } });
Object.defineProperty(exports, "TooLargeError", { enumerable: true, get: function () { return errors_1.TooLargeError; } });
Object.defineProperty(exports, "UnauthenticatedError", { enumerable: true, get: function () { return errors_1.UnauthenticatedError; } });
Object.defineProperty(exports, "UnavailableError", { enumerable: true, get: function () { return errors_1.UnavailableError; } });
Object.defineProperty(exports, "errorFromWire", { enumerable: true, get: function () { return errors_1.errorFromWire; } });
var handle_1 = require("./handle");
Object.defineProperty(exports, "RemoteHandle", { enumerable: true, get: function () { return handle_1.RemoteHandle; } });
Object.defineProperty(exports, "resultOf", { enumerable: true, get: function () { return handle_1.resultOf; } });
var ids_1 = require("./ids");
Object.defineProperty(exports, "RequestKeys", { enumerable: true, get: function () { return ids_1.RequestKeys; } });
var job_errors_1 = require("./job-errors");
Object.defineProperty(exports, "JobCancelledError", { enumerable: true, get: function () { return job_errors_1.JobCancelledError; } });
Object.defineProperty(exports, "JobExpiredError", { enumerable: true, get: function () { return job_errors_1.JobExpiredError; } });
Object.defineProperty(exports, "JobFailedError", { enumerable: true, get: function () { return job_errors_1.JobFailedError; } });
Object.defineProperty(exports, "JobTimeoutError", { enumerable: true, get: function () { return job_errors_1.JobTimeoutError; } });
Object.defineProperty(exports, "LeaseLostError", { enumerable: true, get: function () { return job_errors_1.LeaseLostError; } });
Object.defineProperty(exports, "NoRetryError", { enumerable: true, get: function () { return job_errors_1.NoRetryError; } });
Object.defineProperty(exports, "RetryError", { enumerable: true, get: function () { return job_errors_1.RetryError; } });
Object.defineProperty(exports, "WorkerStoppedError", { enumerable: true, get: function () { return job_errors_1.WorkerStoppedError; } });
var json_1 = require("./json");
Object.defineProperty(exports, "checkJson", { enumerable: true, get: function () { return json_1.checkJson; } });
var log_1 = require("./log");
Object.defineProperty(exports, "silentLogger", { enumerable: true, get: function () { return log_1.silentLogger; } });
Object.defineProperty(exports, "stderrLogger", { enumerable: true, get: function () { return log_1.stderrLogger; } });
var middleware_1 = require("./middleware");
Object.defineProperty(exports, "compose", { enumerable: true, get: function () { return middleware_1.compose; } });
Object.defineProperty(exports, "describeError", { enumerable: true, get: function () { return middleware_1.describeError; } });
Object.defineProperty(exports, "errorReporter", { enumerable: true, get: function () { return middleware_1.errorReporter; } });
Object.defineProperty(exports, "logging", { enumerable: true, get: function () { return middleware_1.logging; } });
Object.defineProperty(exports, "tracing", { enumerable: true, get: function () { return middleware_1.tracing; } });
var options_1 = require("./options");
Object.defineProperty(exports, "DEFAULT_SERVER", { enumerable: true, get: function () { return options_1.DEFAULT_SERVER; } });
var otel_1 = require("./otel");
Object.defineProperty(exports, "findOtelApi", { enumerable: true, get: function () { return otel_1.findOtelApi; } });
Object.defineProperty(exports, "toTraceparent", { enumerable: true, get: function () { return otel_1.toTraceparent; } });
var settings_1 = require("./settings");
Object.defineProperty(exports, "SETTING_NAMES", { enumerable: true, get: function () { return settings_1.SETTING_NAMES; } });
var steps_1 = require("./steps");
Object.defineProperty(exports, "ChildFailedError", { enumerable: true, get: function () { return steps_1.ChildFailedError; } });
Object.defineProperty(exports, "EventTimeoutError", { enumerable: true, get: function () { return steps_1.EventTimeoutError; } });
Object.defineProperty(exports, "Parked", { enumerable: true, get: function () { return steps_1.Parked; } });
Object.defineProperty(exports, "isParked", { enumerable: true, get: function () { return steps_1.isParked; } });
var registry_1 = require("./registry");
Object.defineProperty(exports, "Registry", { enumerable: true, get: function () { return registry_1.Registry; } });
var testing_1 = require("./testing");
Object.defineProperty(exports, "Testing", { enumerable: true, get: function () { return testing_1.Testing; } });
var tracing_1 = require("./tracing");
Object.defineProperty(exports, "checkTraceparent", { enumerable: true, get: function () { return tracing_1.checkTraceparent; } });
Object.defineProperty(exports, "isTraceparent", { enumerable: true, get: function () { return tracing_1.isTraceparent; } });
var transport_1 = require("./transport");
Object.defineProperty(exports, "VERSION", { enumerable: true, get: function () { return transport_1.VERSION; } });
__exportStar(require("./types"), exports);
var tx_1 = require("./tx");
Object.defineProperty(exports, "completeTx", { enumerable: true, get: function () { return tx_1.completeTx; } });
Object.defineProperty(exports, "failTx", { enumerable: true, get: function () { return tx_1.failTx; } });
Object.defineProperty(exports, "sendEventTx", { enumerable: true, get: function () { return tx_1.sendEventTx; } });
Object.defineProperty(exports, "submitManyTx", { enumerable: true, get: function () { return tx_1.submitManyTx; } });
Object.defineProperty(exports, "submitTx", { enumerable: true, get: function () { return tx_1.submitTx; } });
var worker_1 = require("./worker");
Object.defineProperty(exports, "Worker", { enumerable: true, get: function () { return worker_1.Worker; } });
