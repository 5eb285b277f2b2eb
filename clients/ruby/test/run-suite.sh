#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the minitest suite (every test/test_*.rb) in a process group of its
# own: the servers the tests start are in it, so whatever a killed or failed
# run leaves behind is killed with the group. Arguments go to minitest;
# minitest's plugins of other gems (railties') are not loaded.
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
MT_NO_PLUGINS=1 setsid ruby -Ilib -Itest -e 'Dir["test/test_*.rb"].sort.each { |f| require File.expand_path(f) }' -- "$@" &
pid=$!
trap 'kill -TERM -- "-$pid" 2>/dev/null' INT TERM
rc=0
wait "$pid" || rc=$?
kill -KILL -- "-$pid" 2>/dev/null
exit "$rc"
