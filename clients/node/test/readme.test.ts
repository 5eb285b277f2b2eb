// SPDX-License-Identifier: Apache-2.0
// The README's quick start, as written, from a clean copy of the package (what
// a checkout has: no node_modules, no test build): its install commands (npm
// install of the folder, in a fresh project, HOME a new folder), its report.js
// and its `node report.js`, against a fresh server (TENQ_SERVER points at it).
// Every command comes from the README, so the test fails when the README drifts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { it } from "node:test";
import { promisify } from "node:util";

import { Server } from "./harness";

const pkg = resolve(__dirname, "..");
const run = promisify(execFile);

/** The package as a checkout has it. */
function cleanCopy(dest: string): void {
  const skip = new Set(["node_modules", ".test-build"]);
  cpSync(pkg, dest, {
    recursive: true,
    filter: (src) => !skip.has(basename(src)) && !src.endsWith(".tgz") && !src.endsWith(".tsbuildinfo"),
  });
}

it("the quick start installs and runs as written and prints what the README says", async () => {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const quick = readme.split("## Quick start (five minutes)")[1]?.split("\n## ")[0] ?? "";
  const install = /```sh\n([\s\S]*?)```/.exec(quick)?.[1] ?? "";
  assert.ok(install.includes('npm install "$repo/clients/node"'), "the README installs the folder");
  const demo = /cd (\S+)/.exec(install)?.[1];
  assert.ok(demo, "the install block goes to the demo folder");
  const code = /<!-- quickstart:report\.js -->\n```js\n([\s\S]*?)```/.exec(quick)?.[1];
  assert.ok(code, "the README has the quick start's report.js");
  const shown = /```sh\nnode report\.js\n([\s\S]*?)```/.exec(quick)?.[1];
  assert.ok(shown, "the README shows report.js's output");
  const expected = shown.split("\n").filter((l) => l.startsWith("# ")).map((l) => l.slice(2));

  const server = await Server.start();
  const top = mkdtempSync(join(tmpdir(), "tenq-readme-"));
  try {
    const repo = join(top, "repo");
    const home = join(top, "home");
    mkdirSync(home);
    cleanCopy(join(repo, "clients", "node"));
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TENQ_SERVER: server.url };
    for (const k of Object.keys(env)) if (k.startsWith("npm_")) delete env[k];
    // the install block, as written, from the repository's root
    await run("sh", ["-ec", install], { cwd: repo, env, timeout: 120_000 });
    const app = demo.replace(/^~/, home);
    assert.ok(lstatSync(join(app, "node_modules", "tenq")).isSymbolicLink() || existsSync(join(app, "node_modules", "tenq", "dist")));
    writeFileSync(join(app, "report.js"), code);
    const { stdout } = await run(process.execPath, ["report.js"], { cwd: app, env, timeout: 60_000 });
    assert.deepEqual(stdout.trim().split("\n"), expected);
    // the same package as an ES module, from the same install
    writeFileSync(
      join(app, "esm.mjs"),
      'import { Tenq, TenqError, InvalidError } from "tenq";\n' +
        'import { createRequire } from "node:module";\n' +
        'const cjs = createRequire(import.meta.url)("tenq");\n' +
        "console.log(Tenq === cjs.Tenq, new InvalidError('x') instanceof cjs.TenqError, typeof TenqError);\n",
    );
    const esm = await run(process.execPath, ["esm.mjs"], { cwd: app, env, timeout: 30_000 });
    assert.equal(esm.stdout.trim(), "true true function");
  } finally {
    rmSync(top, { recursive: true, force: true });
    await server.close();
  }
});
