// SPDX-License-Identifier: Apache-2.0
/**
 * Real tenq servers for the tests: `tenq serve` from $TENQ_BIN on a free
 * loopback port, its store in a temporary folder (or a PostgreSQL URL);
 * stopped, killed (SIGKILL), paused (SIGSTOP) and restarted on the same
 * store and port by the tests. A missing binary is a failure, never a skip.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client, Tenq, type ClientOptions, type TenqOptions, type Worker, type WorkerOptions } from "tenq";

export const TENQ_BIN = process.env["TENQ_BIN"] || "/opt/tenq-snapshot/tenq";

const live = new Set<Server>();
process.on("exit", () => {
  for (const s of live) s.proc?.kill("SIGKILL");
});

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `pred` until it holds, or throws after `ms`. */
export async function until(pred: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

export interface ServerOptions {
  /** Default: sqlite in a fresh folder. */
  store?: string;
  env?: Record<string, string>;
  args?: string[];
}

export class Server {
  proc: ChildProcess | undefined;
  port = 0;
  readonly dir: string;
  readonly store: string;
  private exited: Promise<void> = Promise.resolve();

  private constructor(private readonly o: ServerOptions) {
    this.dir = mkdtempSync(join(tmpdir(), "tenq-node-test-"));
    this.store = o.store ?? `sqlite:${join(this.dir, "tenq.db")}`;
  }

  static async start(o: ServerOptions = {}): Promise<Server> {
    if (!existsSync(TENQ_BIN)) throw new Error(`no tenq binary at ${TENQ_BIN} (set TENQ_BIN)`);
    const s = new Server(o);
    live.add(s);
    await s.launch(0);
    return s;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private async launch(port: number): Promise<void> {
    const portFile = join(this.dir, `port-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const log = openSync(join(this.dir, "server.log"), "a");
    const p = spawn(
      TENQ_BIN,
      ["serve", "--store", this.store, "--listen", `127.0.0.1:${port}`, "--port-file", portFile, "--log-level", "warn", ...(this.o.args ?? [])],
      { stdio: ["ignore", log, log], env: { ...process.env, ...(this.o.env ?? {}) } },
    );
    closeSync(log);
    this.proc = p;
    this.exited = new Promise((r) => p.once("exit", () => r()));
    let died = false;
    p.once("exit", () => (died = true));
    await until(
      () => {
        if (died) throw new Error(`tenq serve exited at start: ${this.log().slice(-2000)}`);
        return existsSync(portFile) && readFileSync(portFile, "utf8").trim() !== "";
      },
      "the server's port file",
      15_000,
    );
    this.port = Number(readFileSync(portFile, "utf8").trim());
  }

  /** The server's log so far. */
  log(): string {
    try {
      return readFileSync(join(this.dir, "server.log"), "utf8");
    } catch {
      return "";
    }
  }

  /** Sends a signal and waits for the process to end. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill(signal);
    await this.exited;
  }

  pause(): void {
    this.proc?.kill("SIGSTOP");
  }

  resume(): void {
    this.proc?.kill("SIGCONT");
  }

  /** Starts it again on the same store and port. */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch(this.port);
  }

  async close(): Promise<void> {
    this.resume();
    await this.kill("SIGKILL");
    live.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }

  client(o: ClientOptions = {}): Client {
    return new Client({ servers: this.url, failoverBudgetMs: 5_000, ...o });
  }

  app(o: TenqOptions = {}): Tenq {
    return new Tenq({ servers: this.url, failoverBudgetMs: 5_000, tenant: "acme", ...o });
  }
}

/**
 * The environment of a server whose wall clock is `seconds` off this machine's (libfaketime;
 * its monotonic clock is left alone). A missing libfaketime is a failure.
 */
export function clockOff(seconds: number): Record<string, string> {
  const lib = readdirSync("/usr/lib", { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => join("/usr/lib", d.name, "faketime", "libfaketimeMT.so.1"))
    .find((p) => existsSync(p));
  if (!lib) throw new Error("libfaketime is missing: apt-get install faketime");
  const asan = process.env["ASAN_OPTIONS"];
  return {
    LD_PRELOAD: lib,
    FAKETIME: (seconds >= 0 ? "+" : "") + String(seconds),
    FAKETIME_DONT_FAKE_MONOTONIC: "1",
    FAKETIME_FORCE_MONOTONIC_FIX: "0",
    // ASan (a sanitized TENQ_BIN) wants to be the first library
    ASAN_OPTIONS: (asan ? asan + ":" : "") + "verify_asan_link_order=0",
  };
}

/** The server's count of HTTP requests (GET /metrics). */
export async function requestsServed(s: Server): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const m = /^tenq_http_requests_total (\d+)$/m.exec(text);
  if (!m) throw new Error("no tenq_http_requests_total in /metrics");
  return Number(m[1]);
}

/** A port nothing listens on. */
export async function deadPort(): Promise<number> {
  const net = await import("node:net");
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      const port = typeof a === "object" && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Runs a worker of `app` while `body` runs, then stops it. */
export async function withWorker<T>(app: Tenq, o: WorkerOptions, body: (w: Worker) => Promise<T>): Promise<T> {
  const w = app.worker({ logger: null, handleSignals: false, ...o });
  const running = w.run();
  try {
    return await body(w);
  } finally {
    await w.stop();
    await running;
  }
}
