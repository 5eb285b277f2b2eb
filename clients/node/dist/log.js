"use strict";
// SPDX-License-Identifier: Apache-2.0
/** The worker's log: one line per event on stderr, as `tenq work` writes it. */
Object.defineProperty(exports, "__esModule", { value: true });
exports.silentLogger = exports.stderrLogger = void 0;
function line(level, message) {
    process.stderr.write(`${new Date().toISOString()} ${level} ${message}\n`);
}
/** Lines on stderr: `2026-01-02T03:04:05.678Z warn <message>`. */
exports.stderrLogger = {
    info: (m) => line("info", m),
    warn: (m) => line("warn", m),
    error: (m) => line("error", m),
};
/** Says nothing. */
exports.silentLogger = { info() { }, warn() { }, error() { } };
