#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The layers (docs/ARCHITECTURE.md, "Layers"): every #include in src/ stays
# in its own folder or names a public header of a layer it may use.  Lists
# every include that does not and fails; `make format-check` and the ctest
# "layers" run it.  CMake gives each target only the public headers of the
# layers it links, so most violations also fail to compile; this says why.
set -eu
cd "$(dirname "$0")/.."

# What a file in src/LAYER/ may include from other layers (shell-style
# patterns; tenq/ is include/tenq/: libtenq's API and the error table).
# Anything in its own folder is allowed; anything else is not.
MATRIX='
base      tenq/errors.h tenq/states.h
engine    base/* tenq/errors.h tenq/states.h
store     base/* engine/engine.h tenq/errors.h tenq/states.h
api       base/* engine/engine.h store/store.h tenq/errors.h tenq/states.h
client    base/* tenq/*
cli       base/* api/api.h work_cmd/work_cmd.h tenq/*
work_cmd  base/* cli/cli.h tenq/*
'

# the files that exist (a quoted include is looked for beside its file first),
# then every #include line of src/
{
    find src include -type f | sed 's/^/EXISTS /'
    find src -name '*.[ch]' | sort | xargs grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]'
} | awk -v matrix="$MATRIX" '
function norm(p,    n, a, out, i, k) {
    n = split(p, a, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (a[i] == "." || a[i] == "") continue
        if (a[i] == ".." && k > 0) { k--; continue }
        out[++k] = a[i]
    }
    p = out[1]
    for (i = 2; i <= k; i++) p = p "/" out[i]
    return p
}
function glob_ok(hdr, pat) {   # the patterns are "dir/name" or "dir/*"
    if (pat ~ /\/\*$/) return index(hdr, substr(pat, 1, length(pat) - 1)) == 1
    return hdr == pat
}
function fail(msg) { print msg > "/dev/stderr"; bad = 1 }
BEGIN {
    n = split(matrix, rows, "\n")
    for (i = 1; i <= n; i++) {
        m = split(rows[i], w, /[ \t]+/)
        if (m < 1 || w[1] == "") continue
        layers[w[1]] = 1
        allow[w[1]] = ""
        for (j = 2; j <= m; j++) allow[w[1]] = allow[w[1]] (j > 2 ? " " : "") w[j]
    }
}
$1 == "EXISTS" { exists[$2] = 1; next }
{
    # file:line:#include "name" (or <name>)
    file = $0; sub(/:.*/, "", file)
    rest = substr($0, length(file) + 2)
    line = rest; sub(/:.*/, "", line)
    text = substr(rest, length(line) + 2)
    quote = text; sub(/^[ \t]*#[ \t]*include[ \t]*/, "", quote)
    inc = substr(quote, 2); sub(/[">].*/, "", inc)
    quote = substr(quote, 1, 1)
    split(file, parts, "/"); layer = parts[2]
    if (!(layer in layers)) {
        if (!(layer in told)) fail("src/" layer "/ is not in the layer table of scripts/check-layers.sh")
        told[layer] = 1
        next
    }
    dir = file; sub(/\/[^\/]*$/, "", dir)
    beside = norm(dir "/" inc)
    if (quote == "\"" && (beside in exists)) {
        hdr = beside
        if (hdr ~ /^src\//) hdr = substr(hdr, 5)
        else if (hdr ~ /^include\//) hdr = substr(hdr, 9)
    } else if (inc ~ /\//) {
        hdr = inc
    } else {
        if (quote == "\"") fail(file ":" line ": \"" inc "\" is neither beside the file nor LAYER/header.h")
        next   # a system header
    }
    target = hdr; sub(/\/.*/, "", target)
    if (quote == "<" && target != "tenq" && !(target in layers)) next   # <sys/types.h> and the like
    if (target == layer) next
    n = split(allow[layer], pats, " "); ok = 0
    for (i = 1; i <= n; i++) if (glob_ok(hdr, pats[i])) ok = 1
    if (!ok) fail(file ":" line ": " layer " may not include " hdr " (it may include: " allow[layer] ")")
}
END {
    if (bad) {
        print "layers: an include crosses a layer (docs/ARCHITECTURE.md, \"Layers\")" > "/dev/stderr"
        exit 1
    }
    print "layers: ok"
}'
