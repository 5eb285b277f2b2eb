#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a command with a private PostgreSQL started for it (initdb into a
# temporary folder, a free port, a non-root user when run as root), and
# stops it after.  The command sees TENQ_TEST_PG_URL (a superuser URL) and
# TENQ_TEST_PG_DIR (for scripts/pgtmp.sh stop/resume).
#
# A missing PostgreSQL is a failure, never a skip.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/tenq-pg.XXXXXX)
chmod 755 "$dir"
if ! url=$("$here/scripts/pgtmp.sh" start "$dir/pg"); then
    echo "with-pg: cannot start a private PostgreSQL (is the postgresql package installed?)" >&2
    rm -rf "$dir"
    exit 1
fi
export TENQ_TEST_PG_URL="$url" TENQ_TEST_PG_DIR="$dir/pg"
"$@"
rc=$?
"$here/scripts/pgtmp.sh" stop "$dir/pg"
rm -rf "$dir"
exit $rc
