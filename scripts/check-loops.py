#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No loops inside a layer (docs/ARCHITECTURE.md, "Layers"): within each
folder of src/, the graph "file A calls a function file B defines" (read
from the build's objects with nm) has no cycle, so each folder reads from
its bottom up and a file can be understood from what it calls.

  scripts/check-loops.py BUILD_DIR [--show FOLDER]

Prints each folder's files, calls between files and loops; fails when a
folder has a loop that KNOWN does not hold.  --show also lists FOLDER's
edges.  The ctest "loops" runs it."""
import collections
import glob
import os
import subprocess
import sys


# The loops still to undo (issue #42): the scheduler's files call each other
# both ways (a job's end reaches batches, dependencies, steps, keys and the
# morgue, which submit and schedule jobs).  A loop among these files passes; a file
# added to it, or a loop in another folder, fails.  Shrink this as they go.
KNOWN = {
    "engine": {"aging", "args", "attempts", "batches", "debounce", "deps", "engine", "expiry",
               "jobs", "key_rate", "key_settings", "keys", "morgue", "quota", "rate", "sched",
               "settings", "steps"},
}


def objects(build):
    """{folder: {file stem: object path}}: one object a source file that
    still exists (a build keeps the objects of files since removed)."""
    found = collections.defaultdict(dict)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    for o in sorted(glob.glob(os.path.join(build, "CMakeFiles", "*", "src", "*", "*.c.o"))):
        folder = o.split(os.sep + "src" + os.sep)[-1].split(os.sep)[0]
        stem = os.path.basename(o)[: -len(".c.o")]
        if os.path.exists(os.path.join(root, "src", folder, stem + ".c")):  # not a stale object
            found[folder].setdefault(stem, o)
    return found


def symbols(path):
    defined, used = set(), set()
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRC":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            used.add(p[1])
    return defined, used


def loops(edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build, show = sys.argv[1], None
    if len(sys.argv) == 4 and sys.argv[2] == "--show":
        show = sys.argv[3]
    found = objects(build)
    if not found:
        sys.exit("no objects under %s: build first" % build)
    bad = False
    for folder, files in sorted(found.items()):
        defs, uses = {}, {}
        for stem, path in files.items():
            defs[stem], uses[stem] = symbols(path)
        owner = {s: f for f, d in defs.items() for s in d}
        edges = {f: sorted({owner[s] for s in uses[f] if owner.get(s, f) != f}) for f in defs}
        cycles = loops(edges)
        print("%-9s %3d files, %3d calls between them, %s" % (
            folder, len(defs), sum(len(e) for e in edges.values()),
            "loops: " + "; ".join(" ".join(c) for c in cycles) if cycles else "no loop"))
        if show == folder:
            for f in sorted(edges):
                print("  %s -> %s" % (f, " ".join(edges[f])))
        new = [c for c in cycles if not set(c) <= KNOWN.get(folder, set())]
        if new:
            print("  a loop not known before: %s" % "; ".join(" ".join(c) for c in new))
        bad = bad or bool(new)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
