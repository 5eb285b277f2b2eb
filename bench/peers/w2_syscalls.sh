#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Where a W2 pickup's time goes, tenq on SQLite against beanstalkd in memory:
# each system's W2 runs under a bpftrace script that stamps, on the kernel's
# CLOCK_MONOTONIC, the send and read system calls of the server and of the
# driver (the submitter's send, the server's wake-up from epoll_wait and its
# read of the submit, its write to the woken worker, the worker's wake-up
# and read), which w2_syscalls.py joins with the driver's per-job dump
# (submit time, latency) into segments per pickup.  The stamps are kept in
# a BPF map, not printed as they come (printing wakes bpftrace on every
# event and doubled the pickups); tracing still adds a few µs a system call.
#
#   bench/peers/w2_syscalls.sh [ROUNDS] [JOBS]
#
# ROUNDS (default 3) alternating runs of JOBS jobs (default 400, 5 ms apart)
# per system, one table a run.  Needs root, bpftrace (Debian: bpftrace),
# build/tenq, build/tenq_peer_driver, beanstalkd and
# bench/peers/beanstalk/bs_bench (bench/peers/setup.sh builds them).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-3}
jobs=${2:-400}
command -v bpftrace >/dev/null || { echo "needs bpftrace (apt-get install bpftrace)" >&2; exit 1; }
# a fresh machine may not have the tracing file system mounted
[ -e /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/trace.bt" <<'BT'
tracepoint:syscalls:sys_enter_sendmsg,tracepoint:syscalls:sys_enter_write,tracepoint:syscalls:sys_enter_writev
/ pid == $1 || pid == $2 /
{ @ev[nsecs, tid] = (1, pid, cpu, (int64)args->fd, (int64)0); }
tracepoint:syscalls:sys_enter_read,tracepoint:syscalls:sys_enter_readv,tracepoint:syscalls:sys_enter_recvfrom
/ pid == $1 || pid == $2 /
{ @fd[tid] = (int64)args->fd; }
tracepoint:syscalls:sys_exit_read,tracepoint:syscalls:sys_exit_readv,tracepoint:syscalls:sys_exit_recvfrom
/ (pid == $1 || pid == $2) && args->ret > 8 /
{ @ev[nsecs, tid] = (2, pid, cpu, @fd[tid], args->ret); }
tracepoint:syscalls:sys_exit_epoll_wait,tracepoint:syscalls:sys_exit_poll
/ (pid == $1 || pid == $2) && args->ret > 0 /
{ @ev[nsecs, tid] = (3, pid, cpu, (int64)0, args->ret); }
END { clear(@fd); }
BT
up() { python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$1" 2>/dev/null; }
one() { # one(system, out): a W2 run under the trace
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
    if [ "$1" = beanstalkd ]; then
        beanstalkd -l 127.0.0.1 -p "$port" &
        drv="$here/bench/peers/beanstalk/bs_bench --system beanstalkd --workload W2 --url beanstalk://127.0.0.1:$port --concurrency 5"
        dumpvar=BS_BENCH_DUMP
    else
        "$here/build/tenq" serve --listen "127.0.0.1:$port" --store "sqlite:$tmp/$2.db" >/dev/null 2>&1 &
        drv="$here/build/tenq_peer_driver --system tenq-sqlite --workload W2 --url http://127.0.0.1:$port"
        dumpvar=TENQ_DRIVER_DUMP
    fi
    srv=$!
    i=0
    until up "$port"; do i=$((i + 1)); [ $i -lt 100 ] || exit 1; sleep 0.1; done
    # the driver starts stopped, so that the trace knows its pid first
    sh -c "kill -STOP \$\$; exec env $dumpvar=$tmp/$2.dump $drv --jobs $jobs --interval-ms 5" >/dev/null &
    dpid=$!
    sleep 0.1
    echo "$srv $dpid" >"$tmp/$2.pids"
    BPFTRACE_MAP_KEYS_MAX=1000000 bpftrace "$tmp/trace.bt" "$srv" "$dpid" >"$tmp/$2.trace" 2>/dev/null &
    bt=$!
    sleep 2
    kill -CONT "$dpid"
    wait "$dpid"
    kill -INT "$bt"
    wait "$bt" || true
    kill "$srv"
    wait "$srv" 2>/dev/null || true
}
for r in $(seq "$rounds"); do
    one tenq "t$r"
    one beanstalkd "b$r"
    python3 "$here/bench/peers/w2_syscalls.py" "$tmp/t$r" "$tmp/b$r"
done
