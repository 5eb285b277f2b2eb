#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file the repository tracks names its licence in its first
# lines (SPDX-License-Identifier: Apache-2.0). Lists the ones that do not.
set -eu
cd "$(dirname "$0")/.."
missing=$(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.py' '*.sh' '*.js' '*.ts' '*.rb' '*.css' '*.html' \
        '*.in' '*Makefile' '*CMakeLists.txt' '.ci/run' |
    grep -v -e '/node_modules/' -e '/dist/' |
    while read -r f; do
        [ -f "$f" ] || continue
        head -n 5 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || echo "$f"
    done)
if [ -n "$missing" ]; then
    echo "spdx: these files do not name their licence in their first 5 lines:" >&2
    echo "$missing" >&2
    exit 1
fi
echo "spdx: ok"
