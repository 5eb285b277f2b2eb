#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the dashboard's browser tests: installs what is missing (Debian's
# chromium, the npm packages of this folder), then runs them against the
# tenq binary named by TENQ_BIN.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${TENQ_BIN:?set TENQ_BIN to the tenq binary}"

if [ ! -x /usr/bin/chromium ]; then
    echo "browser tests: installing chromium" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || true
    $SUDO apt-get install -y -qq chromium >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "browser tests: installing nodejs and npm" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || true
    $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
if [ ! -d "$here/node_modules/playwright-core" ]; then
    echo "browser tests: npm ci" >&2
    (cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
cd "$here"
exec node --test-reporter=spec dashboard.test.mjs
