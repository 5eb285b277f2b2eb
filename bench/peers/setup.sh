#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs what the peer benchmark needs, only what is missing:
#   Debian: beanstalkd, redis-server, ruby-sidekiq (Sidekiq 6 + ruby), ruby-activejob
#           (W1's ActiveJob path, Rails 6.1's), postgresql,
#           python3-rq and python3-celery (beside the Python client), a C compiler
#           and make; then builds the beanstalkd client, runs `npm ci` in
#           bench/peers/node (graphile-worker, pg-boss, BullMQ, pg) and builds the
#           Node client (clients/node: npm ci, which builds dist/).
# Idempotent: a second run installs nothing and rebuilds nothing that is fresh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

need_pkgs=""
for p in beanstalkd redis-server ruby-sidekiq ruby-activejob postgresql gcc make python3 python3-rq \
    python3-celery; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs="$need_pkgs $p"
done
if [ -n "$need_pkgs" ]; then
    echo "setup: apt-get install$need_pkgs" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need_pkgs >&2
fi

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
    echo "setup: node and npm (Node 20) are required: apt-get install nodejs npm" >&2
    exit 1
}

# the C beanstalkd client
make -s -C "$here/beanstalk" >&2

# the Node peers, exactly as pinned by package-lock.json
cd "$here/node"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: npm ci in bench/peers/node" >&2
    # npm ci refuses a lock whose optional platform packages (msgpackr-extract
    # for other OSes) could not be resolved when it was written; then install
    # the same pinned versions without touching package.json or the lock.
    npm ci --no-audit --no-fund --loglevel=error >&2 ||
        npm install --no-save --no-audit --no-fund --loglevel=error >&2
    touch node_modules/.package-lock.json
fi

# the Node client, for its W1 beside BullMQ (bench/peers/plugins/tenq_client_node.py)
client="$here/../../clients/node"
if [ ! -f "$client/dist/index.js" ] || [ -n "$(find "$client/src" -newer "$client/dist/index.js" 2>/dev/null)" ]; then
    echo "setup: npm ci in clients/node" >&2
    (cd "$client" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

# the system services that the packages may have started are not used: every
# benchmark starts its own private servers on free loopback ports.
echo "setup: ok" >&2
