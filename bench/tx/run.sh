#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make bench-tx`: jobs submitted in an application's own PostgreSQL
# transaction, tenq beside graphile-worker and pg-boss on one private
# PostgreSQL (tests/with-pg.sh: fsync and synchronous_commit on).  Starts tenq
# serve on its own database of it; prints the JSON of bench/tx/tx_bench.js and
# a table of ratios.  Arguments go to tx_bench.js (e.g. --runs 3 --seconds 5).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
TENQ_BIN=${TENQ_BIN:-$repo/build/tenq}
[ -d "$repo/bench/peers/node/node_modules/pg-boss" ] ||
    (cd "$repo/bench/peers/node" && npm ci --no-audit --no-fund --silent)
if [ -z "${TENQ_TEST_PG_URL:-}" ]; then
    exec "$repo/tests/with-pg.sh" "$0" "$@"
fi
psql "$TENQ_TEST_PG_URL" -X -q -c "DROP DATABASE IF EXISTS txb_tenq" -c "CREATE DATABASE txb_tenq"
db=$(echo "$TENQ_TEST_PG_URL" | sed 's#/postgres$#/txb_tenq#')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
work=$(mktemp -d /tmp/tenq-txb.XXXXXX)
"$TENQ_BIN" serve --store "$db" --listen "127.0.0.1:$port" >"$work/tenq.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
i=0
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$work/tenq.log"; exit 1; }; sleep 0.1
done
node "$here/tx_bench.js" --pg "$TENQ_TEST_PG_URL" --tenq-db "$db" \
    --tenq "http://127.0.0.1:$port" "$@" >"$work/out.json"
cat "$work/out.json"
python3 - "$work/out.json" <<'PY'
import json, statistics, sys
out = json.load(open(sys.argv[1]))
s = out["systems"]
med = lambda rs, k: statistics.median(r[k] for r in rs)
print("\ncommit: %s (synchronous_commit %s)" % (out["commit"], "on" if out["commit"] == "sync" else "off"))
print("\n| workload | tenq jobs/s (taken in) | graphile-worker | pg-boss | tenq/gw | tenq/pg-boss |")
print("|---|---|---|---|---|---|")
for w, label in (("singles", "%d connections, one job a transaction" % out["conc"]),
                 ("batches", "one connection, %d jobs a transaction" % out["batch"])):
    t, g, b = (med(s[n][w], "per_s") for n in ("tenq", "graphile-worker", "pg-boss"))
    print("| %s | %.0f (%.0f) | %.0f | %.0f | %.2f | %.2f |" % (
        label, t, med(s["tenq"][w], "taken_per_s"), g, b, t / g, t / b))
lat = s["tenq"]["latency"]
print("\ntenq commit -> lease: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d jobs)" % (
    lat["p50_ms"], lat["p99_ms"], lat["max_ms"], lat["n"]))
PY
