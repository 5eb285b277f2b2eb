// SPDX-License-Identifier: Apache-2.0
/**
 * A TCP proxy in front of a real server, to lose an answer on purpose: the
 * request reaches the server, which acts on it and answers; `onAnswer` runs
 * (it may kill the server) and the client's connection is cut instead of
 * getting the answer.
 */
import * as net from "node:net";

export class Proxy {
  private server: net.Server;
  port = 0;
  /** Connections whose first answer is dropped (counted down). */
  dropAnswers = 0;
  onAnswer: () => Promise<void> = async () => {};
  /** What clients sent, as text, one entry a connection. */
  readonly sent: string[] = [];
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly targetPort: () => number) {
    this.server = net.createServer((client) => this.handle(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    const a = this.server.address();
    this.port = typeof a === "object" && a ? a.port : 0;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private handle(client: net.Socket): void {
    const upstream = net.connect(this.targetPort(), "127.0.0.1");
    this.sockets.add(client).add(upstream);
    const drop = this.dropAnswers > 0;
    if (drop) this.dropAnswers--;
    const at = this.sent.push("") - 1;
    client.on("data", (d: Buffer) => {
      this.sent[at] += d.toString("latin1");
      upstream.write(d);
    });
    upstream.on("data", (d) => {
      if (!drop) {
        client.write(d);
        return;
      }
      upstream.pause();
      void this.onAnswer().finally(() => {
        client.destroy();
        upstream.destroy();
      });
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  }

  /** The Idempotency-Key of every request sent through, in order. */
  get requestKeys(): string[] {
    return this.sent.flatMap((t) => [...t.matchAll(/^idempotency-key: *(\S+)\r$/gim)].map((m) => m[1]!));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
