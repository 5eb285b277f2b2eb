#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Instructions the server spends per job, counted by callgrind (repeatable
# whatever else the machine does, unlike seconds on a shared VM):
#
#   bench/server_instructions.sh [TENQ_BIN] [W1|W2] [JOBS]
#
# Starts TENQ_BIN (default build/tenq) under callgrind on a fresh SQLite
# store, runs the peer driver's workload against it (W1: JOBS blank jobs
# submitted in bulk and drained by 5 workers; W2: JOBS jobs 5 ms apart to 5
# idle workers), stops the server and prints, per job, the instructions of
# the reads (on_readable), of two handlers, of the writer (SQLite), and the
# totals: the event loop's thread, the store's threads, the server, and the
# server less its start (store_open: a fresh store's migrations).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/tenq}
workload=${2:-W1}
jobs=${3:-20000}
driver=$here/build/tenq_peer_driver
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 1; }
[ -x "$driver" ] || { echo "needs $driver (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$((20000 + $$ % 20000))
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$bin" serve \
    --listen "127.0.0.1:$port" --store "sqlite:$tmp/tenq.db" >"$tmp/log" 2>&1 &
pid=$!
i=0
until curl -s "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 300 ] || { echo "the server did not start" >&2; cat "$tmp/log" >&2; exit 1; }
    sleep 0.1
done
"$driver" --system tenq-sqlite --workload "$workload" --url "http://127.0.0.1:$port" \
    --jobs "$jobs" >/dev/null
kill -TERM $pid
wait $pid || true
callgrind_annotate --inclusive=yes "$tmp/cg.out" 2>/dev/null |
    awk -v jobs="$jobs" -v wl="$workload" '
        { gsub(",", "", $1) }
        $0 ~ /:(api_serve|start_thread|store_open|on_readable|h_submit|h_lease|store_writer_main) / {
            split($0, a, ":"); name = a[2]; sub(/ .*/, "", name)
            if (!(name in per)) per[name] = $1 / jobs
        }
        END {
            printf "%s, %d jobs: instructions per job\n", wl, jobs
            n = split("on_readable h_submit h_lease store_writer_main", k, " ")
            for (i = 1; i <= n; i++) printf "  %-18s %8.0f\n", k[i], per[k[i]]
            printf "  %-18s %8.0f\n", "event loop", per["api_serve"]
            printf "  %-18s %8.0f\n", "store threads", per["start_thread"]
            printf "  %-18s %8.0f\n", "server", per["api_serve"] + per["start_thread"]
            printf "  %-18s %8.0f\n", "less the start", \
                per["api_serve"] + per["start_thread"] - per["store_open"]
        }'
