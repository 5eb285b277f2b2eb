#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# TLS handshakes a second against a fresh `tenq serve --tls-cert` (make
# bench-tls): a certificate made for the run (tests/lib/certs.sh; EC P-256),
# then bench_tls with full handshakes and with sessions resumed, one client
# thread and two, each for SECONDS; and the same connections to a plain
# server beside it (what a connection costs without TLS).  One JSON line a
# case.
#   bench/tls_handshakes.sh BUILD [SECONDS]
set -eu
build=$1
secs=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/tenq-bench-tls-XXXXXX)
pid=""
ppid_=""
cleanup() {
    for p in $pid $ppid_; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
sh "$here/tests/lib/certs.sh" ca "$tmp" ca
sh "$here/tests/lib/certs.sh" leaf "$tmp" srv ca localhost DNS:localhost,IP:127.0.0.1
"$build/tenq" serve --listen 127.0.0.1:0 --store "sqlite:$tmp/t.db" --port-file "$tmp/port" \
    --tls-cert "$tmp/srv.pem" --tls-key "$tmp/srv.key" --log-level warn 2>"$tmp/log" &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
    i=$((i + 1))
    [ $i -lt 500 ] || { cat "$tmp/log" >&2; exit 1; }
    sleep 0.02
done
port=$(cat "$tmp/port")
"$build/tenq" serve --listen 127.0.0.1:0 --store "sqlite:$tmp/p.db" --port-file "$tmp/pport" \
    --log-level warn 2>"$tmp/plog" &
ppid_=$!
i=0
while [ ! -s "$tmp/pport" ]; do
    i=$((i + 1))
    [ $i -lt 500 ] || { cat "$tmp/plog" >&2; exit 1; }
    sleep 0.02
done
for threads in 1 2; do
    "$build/bench_tls" --port "$(cat "$tmp/pport")" --plain --seconds "$secs" --threads "$threads" \
        --server-pid "$ppid_"
    for mode in "" --resume; do
        # shellcheck disable=SC2086
        "$build/bench_tls" --port "$port" --ca "$tmp/ca.pem" --seconds "$secs" --threads "$threads" \
            --server-pid "$pid" $mode
    done
done
