#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the libFuzzer targets of a TENQ_FUZZ build (ASan+UBSan), each for SECONDS, one after
# the other, and prints what each did.  Fails when a target crashes, trips a sanitizer, leaks
# or fails a check: the input is kept in BUILD/fuzz-work/TARGET/crashes/.
#   tests/fuzz/run.sh BUILD SECONDS [TARGET...]     (make test-fuzz, make fuzz)
# Each target starts from its checked-in seed corpus and regressions (left as they are) and
# from what earlier runs in BUILD found (BUILD/fuzz-work/TARGET/corpus, where new inputs go).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILD SECONDS [TARGET...]" >&2; exit 2; }
build=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
targets=${*:-http_head chunked jscan submit lease outcomes tls_http}
failed=""
for t in $targets; do
    bin=$build/fuzz_$t
    [ -x "$bin" ] || { echo "fuzz: $bin is missing (configure with -DTENQ_FUZZ=ON)" >&2; exit 2; }
    work=$build/fuzz-work/$t
    mkdir -p "$work/corpus" "$work/crashes"
    case $t in
    http_head | chunked | tls_http) dict=$here/http.dict ;;
    *) dict=$here/json.dict ;;
    esac
    dirs="$work/corpus $here/corpus/$t"
    [ -d "$here/regressions/$t" ] && dirs="$dirs $here/regressions/$t"
    rc=0
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$bin" -max_total_time="$secs" -dict="$dict" -artifact_prefix="$work/crashes/" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 $dirs >"$work/log" 2>&1 || rc=$?
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" | tail -n 1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
    cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*ft: \([0-9]*\).*corp: \([0-9]*\)\/.*/\1 edges, \2 features, corpus \3/p')
    crashes=$(find "$work/crashes" -type f | wc -l)
    echo "fuzz_$t: ${secs}s, ${execs:-?} executions (${rate:-?}/s), ${cov:-coverage ?}, $crashes crash(es) kept"
    if [ "$rc" -ne 0 ]; then
        failed="$failed $t"
        grep -E 'ERROR|SUMMARY|check failed|Test unit written' "$work/log" | head -n 20 >&2 || true
        echo "fuzz_$t failed (exit $rc): the whole log is $work/log" >&2
    fi
done
if [ -n "$failed" ]; then
    echo "fuzz: failed:$failed" >&2
    exit 1
fi
