#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make install, tested: installs into a staging DESTDIR under a prefix of
# its own, checks what is there (only tenq_* leaves the shared library),
# then compiles examples/worker.c with pkg-config against the staged tree,
# shared and static, and runs both against a server started from the
# installed tenq binary.
#
# Usage: test_install.sh BUILD_DIR SOURCE_DIR [SANITIZE(0|1)]
set -eu
build=$1
src=$2
sanitize=${3:-0}
tmp=$(mktemp -d /tmp/tenq-install-XXXXXX)
server=""
cleanup() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "test_install: FAIL: $*" >&2
    exit 1
}

prefix=/opt/tenq-install-test
DESTDIR="$tmp/stage" cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
    fail "cmake --install: $(cat "$tmp/install.log")"
root="$tmp/stage$prefix"
[ -x "$root/bin/tenq" ] || fail "no bin/tenq"
for h in tenq.h errors.h worker.h; do
    [ -f "$root/include/tenq/$h" ] || fail "no include/tenq/$h"
done
pc=$(find "$root" -name tenq.pc)
[ -n "$pc" ] || fail "no tenq.pc"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
[ -f "$libdir/libtenq.a" ] || fail "no libtenq.a in $libdir"
[ -e "$libdir/libtenq.so" ] || fail "no libtenq.so in $libdir"
echo "installed: $(cd "$root" && find . -type f -o -type l | sort | tr '\n' ' ')"

# only the public API leaves the shared library
extra=$(nm -D --defined-only "$libdir/libtenq.so" | awk '{print $3}' | grep -v '^tenq_' || true)
[ -z "$extra" ] || fail "exported beyond tenq_*: $extra"
nm -D --defined-only "$libdir/libtenq.so" | grep -q ' tenq_worker_run$' || fail "tenq_worker_run not exported"

export PKG_CONFIG_PATH="$pcdir"
pkg-config --exists tenq || fail "pkg-config does not find tenq"
[ "$(pkg-config --variable=libdir tenq)" -ef "$libdir" ] || fail "libdir $(pkg-config --variable=libdir tenq)"
cflags=""
[ "$sanitize" = 1 ] && cflags="-fsanitize=address,undefined"
cc=${CC:-cc}
# shellcheck disable=SC2046
$cc -std=c17 -Wall -Wextra -Werror $cflags -o "$tmp/app-shared" "$src/examples/worker.c" \
    $(pkg-config --cflags --libs tenq) || fail "compiling against the shared library"
# shellcheck disable=SC2046
$cc -std=c17 -Wall -Wextra -Werror $cflags -o "$tmp/app-static" "$src/examples/worker.c" \
    $(pkg-config --cflags tenq) \
    $(pkg-config --static --libs tenq | sed 's/-ltenq\b/-l:libtenq.a/') ||
    fail "compiling against the static library"
ldd "$tmp/app-static" | grep -q libtenq && fail "app-static uses libtenq.so"

# a server from the installed binary
"$root/bin/tenq" serve --listen 127.0.0.1:0 --store "sqlite:$tmp/t.db" --port-file "$tmp/port" \
    --sqlite-sync normal >"$tmp/server.log" 2>&1 &
server=$!
i=0
while [ ! -s "$tmp/port" ]; do
    i=$((i + 1))
    [ $i -lt 1000 ] || fail "the server did not start: $(cat "$tmp/server.log")"
    sleep 0.01
done
url="http://127.0.0.1:$(cat "$tmp/port")"
LD_LIBRARY_PATH="$libdir" "$tmp/app-shared" "$url" 4 >"$tmp/shared.out" 2>&1 ||
    fail "app-shared: $(cat "$tmp/shared.out")"
grep -q "4 of 4 jobs succeeded" "$tmp/shared.out" || fail "app-shared: $(cat "$tmp/shared.out")"
LD_LIBRARY_PATH="$libdir" ldd "$tmp/app-shared" | grep -q "$libdir/libtenq.so" ||
    fail "app-shared does not use the installed libtenq.so"
"$tmp/app-static" "$url" 3 >"$tmp/static.out" 2>&1 || fail "app-static: $(cat "$tmp/static.out")"
grep -q "3 of 3 jobs succeeded" "$tmp/static.out" || fail "app-static: $(cat "$tmp/static.out")"
echo "test_install: ok (shared and static, pkg-config, $libdir)"
