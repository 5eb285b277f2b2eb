# SPDX-License-Identifier: Apache-2.0
"""The Node client library as a system of the peer benchmark: tenq-node, the
`tenq` package (clients/node, TypeScript built to clients/node/dist) against
`tenq serve` on SQLite, W1 only; beside it the `bullmq` system of run.py,
the queue Node people use.

tenq-node is tenq-sqlite's server (the same start, stop and durability) with
another driver: bench/peers/clients/node/driver.js (client.submitMany, then
the library's Worker with concurrency 5 and its defaults). tenq-node-prefetch0
is the same with the worker's prefetch 0 (it leases only for free slots: the
default before the automatic prefetch), run only when named (--only).

The driver has W1 only: a system lists its workloads in `workloads`, and
until run.py skips the others the systems are left out of the default run
(by_default False), so that `make bench-peers-quick` does not fail on W2.
"""
import json
import os
import shutil
import subprocess

LIB = ("clients", "node")
DRIVER = ("clients", "node", "driver.js")


def register_systems(register, base):
    class TenqNode(base.Tenq):
        workloads = ("W1",)

        def __init__(self, name, prefetch=None):
            super().__init__(name, "sqlite")
            self.prefetch = prefetch
            self.by_default = False

        def available(self):
            if not os.access(self.bin(), os.X_OK):
                return f"{self.bin()} is not built (make)"
            if not shutil.which("node"):
                return "node is not installed (apt-get install nodejs npm)"
            lib = os.path.join(base.REPO, *LIB)
            if not os.path.exists(os.path.join(lib, "dist", "index.js")):
                return "clients/node is not built (cd clients/node && npm ci)"
            return None

        def versions(self):
            v = super().versions()
            v["node"] = node_version()
            v["tenq (npm)"] = package_version(base.REPO)
            return v

        def driver(self):
            cmd = ["node", os.path.join(base.HERE, *DRIVER), "--system", self.name]
            if self.prefetch is not None:
                cmd += ["--prefetch", str(self.prefetch)]
            return cmd

    register(TenqNode("tenq-node"))
    register(TenqNode("tenq-node-prefetch0", prefetch=0))


def node_version():
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def package_version(repo):
    try:
        with open(os.path.join(repo, *LIB, "package.json")) as f:
            return json.load(f).get("version")
    except (OSError, ValueError):
        return None
