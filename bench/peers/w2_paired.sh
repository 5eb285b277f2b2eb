#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# W2 (pickup latency) for tenq on SQLite and beanstalkd in memory, in
# alternating chunks against servers that stay up, so that both see the same
# host: on a shared VM the hypervisor's steal comes in bursts of seconds to
# minutes, and two 10-second runs one after the other can see very different
# hosts (bench/RESULTS.md, "Pickup latency, paired").
#
#   bench/peers/w2_paired.sh [CHUNKS] [JOBS] [-- tenq serve options...]
#
# Runs CHUNKS rounds (default 20) of JOBS jobs (default 400, 5 ms apart) on
# each system, then prints the percentiles of all samples pooled per system,
# and again over the rounds where neither chunk drew more than 2 ticks of
# steal, with each server's CPU time per job (all its threads, from
# /proc/PID/task/*/schedstat: nanoseconds on a CPU, not sampled ticks).
# Needs build/tenq, build/tenq_peer_driver, beanstalkd and
# bench/peers/beanstalk/bs_bench (bench/peers/setup.sh builds them).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
chunks=${1:-20}
jobs=${2:-400}
[ $# -ge 2 ] && shift 2 || shift $#
[ "${1:-}" = "--" ] && shift
tenq=$here/build/tenq
driver=$here/build/tenq_peer_driver
bs=$here/bench/peers/beanstalk/bs_bench
for f in "$tenq" "$driver" "$bs"; do
    [ -x "$f" ] || { echo "needs $f" >&2; exit 1; }
done
command -v beanstalkd >/dev/null || { echo "needs beanstalkd" >&2; exit 1; }
tmp=$(mktemp -d)
tport=$((20000 + $$ % 20000))
bport=$((tport + 1))
"$tenq" serve --listen "127.0.0.1:$tport" --store "sqlite:$tmp/tenq.db" "$@" >"$tmp/log" 2>&1 &
tpid=$!
beanstalkd -l 127.0.0.1 -p "$bport" &
bpid=$!
trap 'kill $tpid $bpid 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
up() { python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$1" 2>/dev/null; }
until up "$tport" && up "$bport"; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "a server did not start" >&2; cat "$tmp/log" >&2; exit 1; }
    sleep 0.1
done
steal() { awk '/^cpu /{print $9}' /proc/stat; }
cpu() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%.0f\n", s}'; }
for i in $(seq "$chunks"); do
    s0=$(steal)
    t0=$(cpu $tpid)
    TENQ_DRIVER_DUMP=$tmp/t$i "$driver" --system tenq-sqlite --workload W2 \
        --url "http://127.0.0.1:$tport" --jobs "$jobs" --interval-ms 5 >/dev/null
    s1=$(steal)
    t1=$(cpu $tpid)
    b0=$(cpu $bpid)
    BS_BENCH_DUMP=$tmp/b$i "$bs" --system beanstalkd --workload W2 \
        --url "beanstalk://127.0.0.1:$bport" --concurrency 5 --jobs "$jobs" --interval-ms 5 >/dev/null
    s2=$(steal)
    b1=$(cpu $bpid)
    echo "$i $((s1 - s0)) $((s2 - s1)) $((t1 - t0)) $((b1 - b0))" >>"$tmp/steal"
done
python3 - "$tmp" "$chunks" "$jobs" <<'EOF'
import statistics, sys
tmp, chunks, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
steal, cpu = {}, {}
for line in open(tmp + "/steal"):
    i, t, b, tc, bc = map(int, line.split())
    steal[i] = (t, b)
    cpu[i] = (tc / jobs / 1000, bc / jobs / 1000)
def samples(kind, rounds):
    out = []
    for i in rounds:
        out += [float(l.split()[1]) for l in open(f"{tmp}/{kind}{i}")]
    return sorted(out)
def pct(v, q):
    return v[min(len(v) - 1, int(q / 100 * len(v)))] if v else float("nan")
every = list(range(1, chunks + 1))
quiet = [i for i in every if max(steal[i]) <= 2]
for label, rounds in (("all rounds", every), ("rounds with <= 2 steal ticks in both chunks", quiet)):
    t, b = samples("t", rounds), samples("b", rounds)
    print(f"{label}: {len(rounds)}, {len(t)} samples each")
    print("  ms       tenq-sqlite  beanstalkd")
    for q in (50, 90, 95, 99, 99.9):
        print(f"  p{q:<6} {pct(t, q):11.3f} {pct(b, q):11.3f}")
print("server CPU a job, us, median over the rounds (tenq-sqlite/beanstalkd): %.0f/%.0f"
      % tuple(statistics.median(c[k] for c in cpu.values()) for k in (0, 1)))
print("steal ticks a chunk (tenq/beanstalkd):", " ".join(f"{t}/{b}" for t, b in steal.values()))
EOF
