#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Python client's suite: installs what is missing (Debian packages, when
# root), checks that the package installs with pip, runs mypy --strict and
# every test against real servers from $TENQ_BIN (default
# /opt/tenq-snapshot/tenq). With PostgreSQL installed, the suite runs under
# tests/with-pg.sh, so the leader-following tests get two servers on one
# PostgreSQL and those of tenq.tx (psycopg 3) a database each. Exits
# non-zero on any failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
PY=${PYTHON:-/usr/bin/python3}
export TENQ_BIN="${TENQ_BIN:-/opt/tenq-snapshot/tenq}"
export PYTHONDONTWRITEBYTECODE=1

need=""
"$PY" -c "import pytest" 2>/dev/null || need="$need python3-pytest"
"$PY" -m mypy --version >/dev/null 2>&1 || need="$need mypy"
# a worker's test runs a server whose wall clock is an hour off (libfaketime)
ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || need="$need faketime"
ls /usr/share/python-wheels/pip-*.whl >/dev/null 2>&1 || need="$need python3-venv"
# the leader-following tests run two servers on one private PostgreSQL, and
# the tests of tenq.tx use it through psycopg 3: without them those tests
# are skipped (they fail when CI is set), so a user that is not root goes on
want=""
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || want="$want postgresql"
"$PY" -c "import psycopg" 2>/dev/null || want="$want python3-psycopg"
if [ -n "$need$want" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "run-tests: installing$need$want"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need $want >/dev/null
    elif [ -n "$need" ]; then
        echo "run-tests: missing Debian packages:$need (run as root, or install them)" >&2
        exit 1
    else
        echo "run-tests: missing Debian packages:$want (their tests are skipped)" >&2
    fi
fi
if [ ! -x "$TENQ_BIN" ]; then
    echo "run-tests: no tenq binary at $TENQ_BIN (set TENQ_BIN)" >&2
    exit 1
fi

# "build": the package installs with pip (its isolated build: the backend is
# in the package, standard library only), without an index, and is typed
venv=$(mktemp -d /tmp/tenq-py-venv.XXXXXX)
work=$(mktemp -d /tmp/tenq-py-src.XXXXXX)
trap 'rm -rf "$venv" "$work"' EXIT
cp -r "$here/pyproject.toml" "$here/README.md" "$here/_backend" "$here/src" "$work/"
"$PY" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-index "$work" >"$venv/pip.log" 2>&1 ||
    { cat "$venv/pip.log" >&2; echo "run-tests: pip install failed" >&2; exit 1; }
(cd / && "$venv/bin/python" -c "
import importlib.resources, tenq
assert importlib.resources.files('tenq').joinpath('py.typed').is_file()
print('run-tests: pip install ok, tenq', tenq.__version__)")

cd "$here"
set -- "$PY" -m pytest -p no:cacheprovider -q "$@"
pg=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | head -n 1 || true)
if [ -n "$pg" ] && [ -x "$repo/tests/with-pg.sh" ]; then
    exec timeout 400 "$repo/tests/with-pg.sh" "$@"
fi
echo "run-tests: no PostgreSQL: the leader-following tests need it (they fail when CI is set)"
exec timeout 400 "$@"
