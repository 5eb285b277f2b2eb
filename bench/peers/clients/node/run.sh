#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# W1 for the Node client library: tenq-node (tenq on SQLite) beside BullMQ
# (Redis), RUNS runs of each variant interleaved, every run on fresh private
# servers (free loopback ports, data in a temporary folder). Prints each
# driver's JSON line, then the medians and the ratios.
#   bench/peers/clients/node/run.sh [RUNS] [JOBS]
# VARIANTS (default "default prefetch0") picks the tenq-node variants run
# beside BullMQ: default (the library's defaults: prefetch auto, outcomes
# separate), prefetch0, prefetch500, with-lease (outcomes with the next lease).
# Needs: clients/node built (npm ci there), bench/peers/setup.sh run once
# (BullMQ in bench/peers/node/node_modules, redis-server), $TENQ_BIN (default
# build/tenq, else /opt/tenq-snapshot/tenq).
# The peer benchmark runs the same driver: python3 bench/peers/run.py
# --only tenq-node,bullmq,tenq-sqlite --workloads W1 (see README.md here).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=${1:-3}
jobs=${2:-100000}
variants=${VARIANTS:-default prefetch0}
repo=$(cd "$here/../../../.." && pwd)
if [ -z "${TENQ_BIN:-}" ]; then
    TENQ_BIN=$repo/build/tenq
    [ -x "$TENQ_BIN" ] || TENQ_BIN=/opt/tenq-snapshot/tenq
fi
out=$(mktemp /tmp/tenq-node-w1.XXXXXX)

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

tenq_run() { # label, driver args...
    label=$1; shift
    d=$(mktemp -d /tmp/tenq-node-bench.XXXXXX)
    "$TENQ_BIN" serve --store "sqlite:$d/tenq.db" --listen 127.0.0.1:0 --port-file "$d/port" --log-level warn >"$d/log" 2>&1 &
    pid=$!
    i=0; while [ ! -s "$d/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    line=$(node "$here/driver.js" --system tenq-node --jobs "$jobs" --concurrency 5 --server "http://127.0.0.1:$(cat "$d/port")" "$@") || line=""
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$d"
    [ -n "$line" ] || { echo "run: tenq-node $label failed" >&2; exit 1; }
    echo "$label $line" | tee -a "$out"
}

bullmq_run() {
    d=$(mktemp -d /tmp/tenq-node-bench.XXXXXX)
    p=$(free_port)
    redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$d" >"$d/log" 2>&1 &
    pid=$!
    i=0; while ! redis-cli -p "$p" ping >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    line=$(node "$here/driver.js" --system bullmq --jobs "$jobs" --concurrency 5 --redis "redis://127.0.0.1:$p") || line=""
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$d"
    [ -n "$line" ] || { echo "run: bullmq failed" >&2; exit 1; }
    echo "bullmq $line" | tee -a "$out"
}

r=1
while [ $r -le "$runs" ]; do
    sync; sleep 1; bullmq_run
    for v in $variants; do
        case $v in
        default) sync; sleep 1; tenq_run tenq-node-default ;;
        prefetch0) sync; sleep 1; tenq_run tenq-node-prefetch0 --prefetch 0 ;;
        with-lease) sync; sleep 1; tenq_run tenq-node-with-lease --outcomes with-lease ;;
        prefetch500) sync; sleep 1; tenq_run tenq-node-prefetch500 --prefetch 500 ;;
        *) echo "run: unknown variant $v" >&2; exit 2 ;;
        esac
    done
    r=$((r+1))
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, js = line.split(" ", 1)
    rows.setdefault(label, []).append(json.loads(js))
med = {k: (statistics.median(r["enqueue_per_s"] for r in v), statistics.median(r["drain_per_s"] for r in v)) for k, v in rows.items()}
base = med.get("bullmq")
print("| variant | runs | enqueue jobs/s (median) | drain jobs/s (median) | enqueue / BullMQ | drain / BullMQ |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for k, (e, d) in med.items():
    ratio = lambda a, b: f"{a / b:.2f}x" if b else "-"
    print(f"| {k} | {len(rows[k])} | {e:,.0f} | {d:,.0f} | {ratio(e, base[0])} | {ratio(d, base[1])} |")
PY
rm -f "$out"
