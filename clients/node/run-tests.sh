#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Node client's whole suite: installs what is missing (Node 20 and npm
# with apt-get when root; the pinned devDependencies with `npm ci`), builds
# the library and the tests, checks that the package installs, and runs
# `node --test` against real servers from $TENQ_BIN (default
# /opt/tenq-snapshot/tenq). The leader-following test needs two servers on
# one PostgreSQL, the transaction tests (test/tx.test.ts) a server on
# PostgreSQL and the pg devDependency: unless TENQ_TEST_PG_URL is set, the
# suite runs under tests/with-pg.sh when PostgreSQL is installed (else those
# tests are marked as needing it, and fail when CI is set). Exits non-zero
# on any failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$here"

TENQ_BIN=${TENQ_BIN:-/opt/tenq-snapshot/tenq}
export TENQ_BIN
[ -x "$TENQ_BIN" ] || { echo "run-tests: no tenq binary at $TENQ_BIN (set TENQ_BIN)" >&2; exit 1; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "run-tests: apt-get install nodejs npm" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >&2
    fi
fi
command -v node >/dev/null 2>&1 || { echo "run-tests: node is required (Node 20 or newer)" >&2; exit 1; }
# a worker's test runs a server whose wall clock is an hour off (libfaketime)
if ! ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "run-tests: apt-get install faketime" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends faketime >&2
fi
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "run-tests: Node $major is too old: Node 20 or newer is required" >&2; exit 1; }

# the pinned devDependencies, only when missing or older than the lock
if [ ! -d node_modules/typescript ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "run-tests: npm ci" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
fi

tmp=$(mktemp -d /tmp/tenq-node-pkg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# dist/ is committed (an install of the folder builds nothing): it must be
# what src/ builds to now
echo "run-tests: dist/ is what src/ builds to" >&2
npx --no-install tsc -p tsconfig.json --outDir "$tmp/dist" --tsBuildInfoFile "$tmp/tsbuildinfo"
node scripts/esm-entry.cjs "$tmp/dist"
if ! diff -r -x .tsbuildinfo "$tmp/dist" dist >"$tmp/diff" 2>&1; then
    rm -rf dist && cp -r "$tmp/dist" dist
    head -n 40 "$tmp/diff" >&2
    echo "run-tests: dist/ was not what src/ builds to: rebuilt it; commit it" >&2
    exit 1
fi

echo "run-tests: build the tests" >&2
rm -rf .test-build
# the tests use the library as the package "tenq" (dist/)
npx --no-install tsc -b test/tsconfig.json

# the package as `npm pack` makes it (its prepack builds dist/) installs offline
# and loads by require and by import, with its types
echo "run-tests: npm pack + install" >&2
npm pack --silent --pack-destination "$tmp" >/dev/null 2>"$tmp/pack.log" ||
    { cat "$tmp/pack.log" >&2; echo "run-tests: npm pack failed" >&2; exit 1; }
mkdir "$tmp/app"
(cd "$tmp/app" && printf '{"name":"app","version":"1.0.0","private":true}\n' >package.json &&
    npm install --offline --no-audit --no-fund --loglevel=error "$tmp"/tenq-*.tgz >&2 &&
    node -e 'const t = require("tenq"); if (typeof t.Tenq !== "function" || typeof t.Worker !== "function") process.exit(1)' &&
    printf 'import { Tenq, Worker } from "tenq";\nif (typeof Tenq !== "function" || typeof Worker !== "function") process.exit(1);\n' >esm.mjs &&
    node esm.mjs &&
    [ -f node_modules/tenq/dist/index.d.ts ] && [ -f node_modules/tenq/dist/index.d.mts ]) ||
    { echo "run-tests: the packed package does not install" >&2; exit 1; }
# its types, for a TypeScript module of each kind (strict, the declarations checked too)
printf 'import { Tenq, type QueueInfo, type WorkerEvents } from "tenq";\nconst t: Tenq = new Tenq({ openTelemetry: false });\nconst q: QueueInfo | undefined = undefined;\nconst e: keyof WorkerEvents = "completed";\nvoid t; void q; void e;\n' >"$tmp/app/check.mts"
cp "$tmp/app/check.mts" "$tmp/app/check.cts"
(cd "$tmp/app" && "$here/node_modules/.bin/tsc" --noEmit --strict --module node16 --moduleResolution node16 \
    --types node --typeRoots "$here/node_modules/@types" --skipLibCheck false check.mts check.cts >&2) ||
    { echo "run-tests: the packed package's types do not check" >&2; exit 1; }
git -C "$here" diff --quiet -- dist 2>/dev/null ||
    echo "run-tests: note: npm pack rebuilt dist/ (uncommitted changes in dist/)" >&2
rm -rf "$tmp"
trap - EXIT

set -- .test-build/*.test.js
if [ -z "${TENQ_TEST_PG_URL:-}" ] && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "run-tests: node --test under tests/with-pg.sh" >&2
    exec "$repo/tests/with-pg.sh" node --test --test-timeout=180000 "$@"
fi
echo "run-tests: node --test" >&2
exec node --test --test-timeout=180000 "$@"
