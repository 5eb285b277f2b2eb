#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/RESULTS.md holds only the current tables (issue #42): under 300
# lines; older runs and notes go to bench/history/.  `make format-check`
# runs it.
set -eu
cd "$(dirname "$0")/.."
max=300
n=$(wc -l <bench/RESULTS.md)
if [ "$n" -gt "$max" ]; then
    echo "bench/RESULTS.md has $n lines, more than $max: move what is not a current table to bench/history/" >&2
    exit 1
fi
echo "results: ok ($n lines)"
