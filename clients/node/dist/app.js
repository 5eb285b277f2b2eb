"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Tenq = void 0;
// SPDX-License-Identifier: Apache-2.0
/**
 * Tenq: the application's entry point. It holds the client, the handlers
 * (by type, tasks, and the switch's classes) and the test mode; its submits
 * (`enqueue`, `async(...)`, tasks) follow the test mode, while `client` always
 * talks to the server.
 */
const client_1 = require("./client");
const handle_1 = require("./handle");
const registry_1 = require("./registry");
const switch_1 = require("./switch");
const testing_1 = require("./testing");
const worker_1 = require("./worker");
class Tenq {
    client;
    registry = new registry_1.Registry();
    /** The test modes: `tenq.testing.inline()`, `.fake()`, `.disable()`, `.jobs`, `.drain()`. */
    testing;
    constructor(options = {}) {
        this.client = new client_1.Client(options);
        this.testing = new testing_1.Testing(this.registry);
        if (options.testMode === "inline")
            this.testing.inline();
        else if (options.testMode === "fake")
            this.testing.fake();
    }
    /** Registers a handler for a job type. */
    handle(type, handler, options = {}) {
        this.registry.add(type, handler, options);
        return this;
    }
    /** Registers a class's methods as job types `Name.method`, for the switch and the worker. */
    register(cls, options = {}) {
        this.registry.addClass(cls, options);
        return this;
    }
    /** A function that runs inline when called, and as a job of type `type` with `.enqueue(...)`. */
    task(type, fn, options = {}) {
        this.registry.add(type, (args) => fn(...(args ?? [])), options);
        const enqueue = (o) => (...args) => this.enqueue(type, (0, switch_1.callArgs)(args), o);
        const t = (async (...args) => await fn(...args));
        Object.defineProperty(t, "type", { value: type });
        Object.defineProperty(t, "enqueue", { value: enqueue({}) });
        Object.defineProperty(t, "with", { value: (o) => ({ enqueue: enqueue(o) }) });
        return t;
    }
    async(target, options = {}) {
        return (0, switch_1.asyncProxy)((m) => this.registry.typeOf(target, m), (type, args, o) => this.enqueue(type, args, o), options);
    }
    /** Submits a job (or runs or records it, in a test mode); the handle's `wait()` gives its result. */
    async enqueue(type, args, options = {}) {
        const spec = { ...options, type, args };
        if (this.testing.mode !== "off")
            return this.testing.submit(this.client.prepare(spec));
        return new handle_1.RemoteHandle(this.client, await this.client.submit(spec));
    }
    /** A handle on a job submitted before (by id). */
    handleOf(id) {
        return new handle_1.RemoteHandle(this.client, { id, state: "ready", created: false, duplicate: false, merged: false, replayed: false, debounced: false });
    }
    /** A worker that runs this app's handlers. */
    worker(options = {}) {
        return new worker_1.Worker(this.client, this.registry, options);
    }
    /** Closes the client's connections. */
    close() {
        this.client.close();
    }
}
exports.Tenq = Tenq;
