// SPDX-License-Identifier: Apache-2.0
// https against a real `tenq serve --tls-cert`: certificates made by the test
// (the repository's tests/lib/certs.sh, the openssl command), real handshakes.
// The server's certificate verified against `caFile` (TENQ_CA_FILE); one from
// an unknown CA refused at once (TlsError); a client certificate (mutual TLS)
// standing for its token, in a client and in a worker; one from another CA refused.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client, ForbiddenError, InvalidError, Tenq, TlsError } from "tenq";

import { Server, until, withWorker } from "./harness";

const CERTS_SH = join(__dirname, "..", "..", "..", "tests", "lib", "certs.sh");
const ADMIN = "node-tls-admin-token-0123456789";

let dir: string;
let server: Server;
let url: string;
let admin: Client;

const certs = (...args: string[]): void => {
  execFileSync("sh", [CERTS_SH, args[0]!, dir, ...args.slice(1)], { stdio: "inherit" });
};
const pem = (name: string): string => join(dir, `${name}.pem`);
const key = (name: string): string => join(dir, `${name}.key`);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenq-node-tls-"));
  for (const ca of ["ca", "other_ca", "client_ca"]) certs("ca", ca);
  certs("leaf", "srv", "ca", "localhost", "DNS:localhost,IP:127.0.0.1");
  server = await Server.start({
    args: ["--tls-cert", pem("srv"), "--tls-key", key("srv"), "--tls-client-ca", pem("client_ca")],
    env: { TENQ_ADMIN_TOKEN: ADMIN },
  });
  url = `https://localhost:${server.port}`;
  admin = new Client({ servers: url, token: ADMIN, caFile: pem("ca") });
  const worker = (await admin.call("POST", "/v1/tokens", { body: JSON.stringify({ role: "worker" }) })) as { id: number };
  certs("leaf", "w", "client_ca", `token:${worker.id}`, "-");
  certs("leaf", "foreign", "other_ca", `token:${worker.id}`, "-");
});
after(async () => {
  admin.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("https", () => {
  it("verifies the server against caFile", async () => {
    const r = await admin.submit({ tenant: "acme", queue: "nq", type: "T", args: { n: 1 } });
    assert.equal((await admin.get(r.id)).state, "ready");
  });

  it("takes the CA file from TENQ_CA_FILE", async () => {
    process.env["TENQ_CA_FILE"] = pem("ca");
    try {
      const c = new Client({ servers: url, token: ADMIN });
      assert.equal((await c.whoami())["role"], "admin");
      c.close();
    } finally {
      delete process.env["TENQ_CA_FILE"];
    }
  });

  it("refuses a server it cannot verify at once", async () => {
    for (const caFile of [pem("other_ca"), undefined]) {
      const c = new Client({ servers: url, token: ADMIN, failoverBudgetMs: 15_000, ...(caFile ? { caFile } : {}) });
      const t0 = Date.now();
      await assert.rejects(c.whoami(), (e: unknown) => e instanceof TlsError && e.code === "tls" && /TLS with https:\/\/localhost/.test(e.message));
      assert.ok(Date.now() - t0 < 5_000, "a refused certificate is not retried");
      c.close();
    }
    assert.throws(() => new Client({ servers: url, caFile: join(dir, "nope.pem") }), (e: unknown) => e instanceof InvalidError && e.field === "caFile");
    assert.throws(() => new Client({ servers: url, clientCert: pem("w") }), /both/);
  });
});

describe("client certificates", () => {
  it("stand for their token", async () => {
    const c = new Client({ servers: url, caFile: pem("ca"), clientCert: pem("w"), clientKey: key("w") });
    assert.equal((await c.whoami())["role"], "worker");
    await assert.rejects(c.submit({ tenant: "acme", queue: "nq", type: "T" }), ForbiddenError);
    c.close();
  });

  it("from another CA are refused", async () => {
    const c = new Client({ servers: url, caFile: pem("ca"), clientCert: pem("foreign"), clientKey: key("foreign") });
    await assert.rejects(c.whoami(), (e: unknown) => e instanceof TlsError && /UNKNOWN_CA|unknown ca/i.test(`${e.message} ${String((e.cause as { code?: string })?.code)}`));
    c.close();
  });

  it("let a worker lease and report", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await admin.submit({ tenant: "acme", queue: "wq", type: "Echo", args: { i } })).id);
    const app = new Tenq({ servers: url, caFile: pem("ca"), clientCert: pem("w"), clientKey: key("w"), queue: "wq" });
    app.handle("Echo", (args) => args);
    await withWorker(app, { queues: ["wq"], pollMs: 1000 }, async () => {
      await until(async () => (await Promise.all(ids.map((id) => admin.get(id)))).every((j) => j.state === "succeeded"), "the jobs to succeed");
    });
    assert.deepEqual((await admin.get(ids[3]!)).result, { i: 3 });
    app.client.close();
  });
});
