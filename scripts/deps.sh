#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages tenq needs, when they are missing.
#   scripts/deps.sh build   compilers, CMake (its configure wants Python 3) and the libraries
#                           (for make, make run)
#   scripts/deps.sh fuzz    + clang and its runtimes (libFuzzer, its sanitizers: Debian's
#                           libclang-rt-dev, only recommended by clang) (for make fuzz)
#   scripts/deps.sh test    + PostgreSQL, Python 3, clang-format, strace, shellcheck, systemd,
#                           faketime (tests/chaos/test_clock.py steps the wall clock with it),
#                           and what fuzz installs (for make test)
#   scripts/deps.sh bench   + peers for the comparison benchmarks
set -eu

what=${1:-build}
pkgs="build-essential cmake pkg-config python3 libevent-dev libjansson-dev libsqlite3-dev libpq-dev libssl-dev openssl tzdata"
case "$what" in
build) ;;
fuzz) pkgs="$pkgs clang libclang-rt-dev" ;;
test) pkgs="$pkgs clang libclang-rt-dev postgresql python3 clang-format curl procps chromium faketime strace shellcheck systemd"; command -v npm >/dev/null 2>&1 || pkgs="$pkgs nodejs npm" ;;
bench) pkgs="$pkgs postgresql python3 curl procps" ;;
*) echo "usage: $0 build|fuzz|test|bench" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "deps: installing$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "deps: missing packages:$missing (run as root or install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
