// SPDX-License-Identifier: Apache-2.0
// The library's error classes against the one table of error words,
// include/tenq/errors.h: every word the server (or the C library) may give
// maps to the class of that word, with its HTTP status.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";

import { QuotaExceededError, RateLimitedError, TenqError, errorFromWire } from "tenq";

const ERRORS_H = join(__dirname, "..", "..", "..", "include", "tenq", "errors.h");

it("every error word of include/tenq/errors.h has its class", () => {
  const table = new Map<string, number>();
  for (const m of readFileSync(ERRORS_H, "utf8").matchAll(/XX\(\w+,\s*-?\d+,\s*(\d+),\s*"(\w+)"/g)) if (!table.has(m[2]!)) table.set(m[2]!, Number(m[1]));
  assert.equal(table.get("quota_exceeded"), 429);
  assert.ok(table.size >= 14, String([...table.keys()]));
  for (const [word, status] of table) {
    const e = errorFromWire({ code: word, message: "m" }, { status });
    assert.notEqual(e.constructor, TenqError, word); // a class of its own
    assert.deepEqual([e.code, e.status], [word, status], word);
  }
  const q = errorFromWire({ code: "quota_exceeded", message: "m", field: "max_queued" }, { status: 429, retryAfterMs: 1000 });
  assert.ok(q instanceof QuotaExceededError && q instanceof RateLimitedError);
  assert.deepEqual([q.field, q.retryAfterMs, q.name], ["max_queued", 1000, "QuotaExceededError"]);
});
