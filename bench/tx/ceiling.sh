#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make bench-tx-ceiling`: what the private PostgreSQL of `make bench-tx`
# (tests/with-pg.sh: fsync and synchronous_commit on) does under pgbench,
# with no application driver in the way, for bench/tx's two workloads:
#   - 8 connections, each a loop of BEGIN; one job-sized row; COMMIT: a plain
#     INSERT, the same with a NOTIFY before the COMMIT (as tenq.submit and
#     graphile-worker's add_job send one), and tenq.submit itself with a
#     tenq leader taking the jobs in;
#   - 1 connection, transactions of 1,000 rows made from a JSON array.
# Prints rows (jobs) a second for each; the first argument is seconds per
# measure (default 5); a second argument `async` has pgbench's transactions
# commit with synchronous_commit off (tenq's own commits stay fsync'd).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
TENQ_BIN=${TENQ_BIN:-$repo/build/tenq}
if [ -z "${TENQ_TEST_PG_URL:-}" ]; then
    exec "$repo/tests/with-pg.sh" "$0" "$@"
fi
secs=${1:-5}
commit=${2:-sync}
case $commit in
sync) pgopts=${PGOPTIONS:-} ;;
async) pgopts="${PGOPTIONS:-} -c synchronous_commit=off" ;;
*) echo "ceiling: the second argument is sync or async, not $commit" >&2; exit 2 ;;
esac
pgbench=$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)
work=$(mktemp -d /tmp/tenq-ceiling.XXXXXX)
psql "$TENQ_TEST_PG_URL" -X -q -c "DROP DATABASE IF EXISTS txc_tenq" -c "CREATE DATABASE txc_tenq"
db=$(echo "$TENQ_TEST_PG_URL" | sed 's#/postgres$#/txc_tenq#')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TENQ_BIN" serve --store "$db" --listen "127.0.0.1:$port" >"$work/tenq.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
i=0
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$work/tenq.log"; exit 1; }; sleep 0.1
done
psql "$TENQ_TEST_PG_URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE TABLE ceiling_jobs (id BIGSERIAL \
PRIMARY KEY, tenant TEXT NOT NULL, queue TEXT NOT NULL, type TEXT NOT NULL, args TEXT NOT NULL, \
created_at BIGINT NOT NULL)"
row="INSERT INTO ceiling_jobs (tenant, queue, type, args, created_at) VALUES ('acme', 'q', \
'Report.build', '{\"n\": 1}', 0);"
printf 'BEGIN;\n%s\nCOMMIT;\n' "$row" >"$work/insert.sql"
printf "BEGIN;\n%s\nSELECT pg_notify('ceiling', '');\nCOMMIT;\n" "$row" >"$work/notify.sql"
printf "BEGIN;\nSELECT tenq.submit('acme', 'q', 'Report.build', '{\"n\": 1}');\nCOMMIT;\n" \
    >"$work/submit.sql"
python3 - "$work/batch.sql" <<'PY'
import json, sys
jobs = json.dumps([{"tenant": "acme", "queue": "q", "type": "Report.build", "args": {"n": i}}
                   for i in range(1000)])
open(sys.argv[1], "w").write(
    "INSERT INTO ceiling_jobs (tenant, queue, type, args, created_at) SELECT j->>'tenant', "
    "j->>'queue', j->>'type', (j->'args')::text, 0 FROM jsonb_array_elements('%s'::jsonb) j;\n"
    % jobs)
PY
tps() { # file, clients, database
    PGOPTIONS="$pgopts" "$pgbench" -n -c "$2" -j "$2" -T "$secs" -f "$1" "$3" 2>/dev/null |
        sed -n 's/^tps = \([0-9]*\).*/\1/p'
}
[ "$(tps "$work/insert.sql" 1 "$TENQ_TEST_PG_URL")" ] || { echo "ceiling: pgbench failed" >&2; exit 1; }
echo "8 connections, one row a transaction (BEGIN; INSERT; COMMIT): $(tps "$work/insert.sql" 8 "$TENQ_TEST_PG_URL") rows/s"
echo "the same with a NOTIFY in each transaction: $(tps "$work/notify.sql" 8 "$TENQ_TEST_PG_URL") rows/s"
echo "BEGIN; tenq.submit; COMMIT, a tenq leader taking them in: $(tps "$work/submit.sql" 8 "$db") jobs/s"
b=$(tps "$work/batch.sql" 1 "$TENQ_TEST_PG_URL")
echo "1 connection, 1,000 rows a transaction: $((b * 1000)) rows/s"
