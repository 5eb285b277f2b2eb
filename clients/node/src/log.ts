// SPDX-License-Identifier: Apache-2.0
/** The worker's log: one line per event on stderr, as `tenq work` writes it. */

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

function line(level: string, message: string): void {
  process.stderr.write(`${new Date().toISOString()} ${level} ${message}\n`);
}

/** Lines on stderr: `2026-01-02T03:04:05.678Z warn <message>`. */
export const stderrLogger: Logger = {
  info: (m) => line("info", m),
  warn: (m) => line("warn", m),
  error: (m) => line("error", m),
};

/** Says nothing. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
