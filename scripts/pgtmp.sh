#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A private PostgreSQL for tests and benchmarks: initdb into a folder, start
# on a free loopback port, stop by its pid file.  As root it runs the server
# as the unprivileged user "tenqpg" (created when missing), since PostgreSQL
# refuses to run as root.
#
#   scripts/pgtmp.sh start DIR [PORT]   prints the connection URL on stdout
#   scripts/pgtmp.sh stop DIR
#   scripts/pgtmp.sh crash DIR          stops it in immediate mode (as a crash: no checkpoint)
#   scripts/pgtmp.sh resume DIR         starts a stopped instance again
#   scripts/pgtmp.sh url DIR            prints the URL of a running instance
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|crash|resume|url DIR [PORT]" >&2; exit 2; }

bindir=""
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && bindir=$d; done
[ -n "$bindir" ] || { echo "pgtmp: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
    user=tenqpg
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    as_user() { runuser -u "$user" -- "$@"; }
else
    user=$(id -un)
    as_user() { "$@"; }
fi

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

case "$cmd" in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    port=${3:-$(free_port)}
    [ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
    as_user "$bindir/initdb" -D "$dir/data" -U "$user" -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 256MB
CONF
    as_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
        { cat "$dir/server.log" >&2; exit 1; }
    echo "postgresql://$user@127.0.0.1:$port/postgres" >"$dir/url"
    cat "$dir/url"
    ;;
resume)
    as_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
        { cat "$dir/server.log" >&2; exit 1; }
    ;;
crash)
    as_user "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null
    ;;
stop)
    [ -f "$dir/data/postmaster.pid" ] || exit 0
    as_user "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || {
        pid=$(head -1 "$dir/data/postmaster.pid")
        kill -9 "$pid" 2>/dev/null || true
    }
    ;;
url)
    cat "$dir/url"
    ;;
*)
    echo "usage: $0 start|stop|crash|resume|url DIR [PORT]" >&2
    exit 2
    ;;
esac
