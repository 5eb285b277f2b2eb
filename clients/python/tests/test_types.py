# SPDX-License-Identifier: Apache-2.0
"""The library type-checks with ``mypy --strict``, and so does code that
uses it (typed_usage.py: the switch keeps the method's signature and
result type)."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_mypy_strict() -> None:
    src = os.path.join(HERE, "..", "src")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir=/dev/null",
         os.path.join(src, "tenq"), os.path.join(HERE, "typed_usage.py"),
         os.path.join(HERE, "..", "_backend", "tenq_backend.py")],
        capture_output=True, text=True, env=dict(os.environ, MYPYPATH=src), timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_catches_misuse(tmp_path: object) -> None:
    bad = os.path.join(str(tmp_path), "bad_usage.py")
    with open(bad, "w") as f:
        f.write(
            "import tenq\n\n"
            "class R:\n"
            "    @tenq.task\n"
            "    def run(self, n: int) -> str:\n"
            "        return str(n)\n\n"
            "R().run.enqueue('not an int')\n"
            "x: int = R().run.enqueue(1).wait()\n"
            "async def f(ac: tenq.AsyncClient) -> None:\n"
            "    await R().run.with_options(client=ac).enqueue('not an int')\n"
            "    y: int = await (await R().run.with_options(client=ac).enqueue(1)).wait()\n"
        )
    src = os.path.join(HERE, "..", "src")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir=/dev/null", bad],
        capture_output=True, text=True, env=dict(os.environ, MYPYPATH=src), timeout=300,
    )
    assert out.returncode == 1
    assert out.stdout.count('Argument 1 to "enqueue"') == 2, out.stdout
    assert out.stdout.count("Incompatible types in assignment") == 2, out.stdout
