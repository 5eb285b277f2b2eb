#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Ruby library's checks, against real servers ($TENQ_BIN, default
# /opt/tenq-snapshot/tenq): installs what is missing (Debian packages, when
# root), checks the style (rubocop) and the RBS signatures, builds the gem and
# installs it into a temporary GEM_HOME, then runs the minitest suite under
# tests/with-pg.sh (a private PostgreSQL, for the tests of two servers on one
# database and of Tenq::Tx, which talk to it through ruby-pg: a test
# dependency only, the gem needs none). Exits non-zero on any failure.
#
#   clients/ruby/run-tests.sh [minitest options, e.g. -n /takeover/ or --verbose]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export TENQ_BIN="${TENQ_BIN:-/opt/tenq-snapshot/tenq}"

# -- what is missing ----------------------------------------------------------
pkgs="ruby ruby-minitest rubocop postgresql ruby-pg faketime"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "run-tests: missing Debian packages:$missing (run as root, or install them)" >&2
        exit 1
    fi
    echo "run-tests: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
[ -x "$TENQ_BIN" ] || { echo "run-tests: no tenq binary at $TENQ_BIN (set TENQ_BIN)" >&2; exit 1; }
rbs=$(command -v rbs || command -v rbs3.1 || true)
[ -n "$rbs" ] || { echo "run-tests: no rbs command (Ruby's bundled gem)" >&2; exit 1; }

cd "$here"
echo "== rubocop"
rubocop --format quiet
(cd "$repo/bench/peers/clients/ruby" && rubocop --format quiet)

echo "== rbs validate"
"$rbs" -I sig validate >/dev/null

echo "== gem build and install into a temporary GEM_HOME"
tmp=$(mktemp -d /tmp/tenq-rb-gem.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gem build --silent tenq.gemspec -o "$tmp/tenq.gem" >/dev/null
GEM_HOME="$tmp/home" gem install --local --no-document --silent "$tmp/tenq.gem" >/dev/null
# the installed copy loads on its own, from outside this folder
(cd "$tmp" && GEM_HOME="$tmp/home" GEM_PATH="$tmp/home" ruby -e '
  gem "tenq"; require "tenq"
  abort "not the installed copy: #{$LOADED_FEATURES.grep(/tenq\.rb/)}" unless $LOADED_FEATURES.any? { |f| f.start_with?(ENV["GEM_HOME"]) }
  puts "installed tenq #{Tenq::VERSION}"')

echo "== minitest (servers: $TENQ_BIN)"
if [ -n "${TENQ_TEST_PG_URL:-}" ]; then
    sh "$here/test/run-suite.sh" "$@"
else
    "$repo/tests/with-pg.sh" sh "$here/test/run-suite.sh" "$@"
fi
