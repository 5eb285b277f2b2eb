// SPDX-License-Identifier: Apache-2.0
// The README's quick start, as written, against a fresh server (TENQ_SERVER points at it).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { it } from "node:test";
import { promisify } from "node:util";

import { Server } from "./harness";

const pkg = resolve(__dirname, "..");

it("the quick start runs as written and prints what the README says", async () => {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const code = /<!-- quickstart:report\.js -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, "the README has the quick start's report.js");
  const shown = /```sh\nnode report\.js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(shown, "the README shows report.js's output");
  const expected = shown.split("\n").filter((l) => l.startsWith("# ")).map((l) => l.slice(2));

  const server = await Server.start();
  const dir = mkdtempSync(join(tmpdir(), "tenq-demo-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkg, join(dir, "node_modules", "tenq"), "dir");
    writeFileSync(join(dir, "report.js"), code);
    const { stdout } = await promisify(execFile)(process.execPath, ["report.js"], {
      cwd: dir,
      env: { ...process.env, TENQ_SERVER: server.url },
      timeout: 60_000,
    });
    assert.deepEqual(stdout.trim().split("\n"), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
});
