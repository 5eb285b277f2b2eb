# SPDX-License-Identifier: Apache-2.0
"""The README's quick start runs exactly as written, from a clean copy of
the package, as a new user would: its install commands (a fresh virtual
environment, ``pip install ./clients/python`` with pip's isolated build
and no package index), its files, its worker command and its submit
script, against a real server (TENQ_SERVER points at it, as ``make run``'s
default address would be). Every command is taken from the README, so the
test fails when the README drifts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Tuple

from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.normpath(os.path.join(HERE, ".."))
README = os.path.join(PACKAGE, "README.md")


def _blocks() -> List[Tuple[str, str]]:
    with open(README) as f:
        text = f.read()
    quick = text.split("## Five-minute quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", quick, re.S)


def _clean_copy(dest: str) -> None:
    """The package as a checkout has it: no caches, no build outputs."""
    shutil.copytree(
        PACKAGE,
        dest,
        ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache", "build", "*.egg-info", "tests"
        ),
    )


def _script(blocks: List[Tuple[str, str]]) -> Tuple[str, Dict[str, str], List[str]]:
    """The shell commands of the quick start as one script: the install
    block run in the repository's root (``make run`` is the test's server),
    then the worker started in the background and the submit script run in
    the folder of the README's files; the files; the output shown."""
    files: Dict[str, str] = {}
    for lang, body in blocks:
        first = body.splitlines()[0]
        if lang == "python" and first.startswith("# ") and first.endswith(".py"):
            files[first[2:]] = body
    sh = [body for lang, body in blocks if lang == "sh"]
    install, run = sh[0], "\n".join(sh[1:])
    install_lines = [ln for ln in install.splitlines() if ln.strip() and not ln.startswith("make ")]
    assert any("pip install ./clients/python" in ln for ln in install_lines), install
    (worker_line,) = [ln for ln in run.splitlines() if ln.startswith("python3 -m tenq worker")]
    (submit_line,) = [ln for ln in run.splitlines() if ln.startswith("python3 submit.py")]
    tail = run.split(submit_line, 1)[1].splitlines()
    expected = [ln[2:] for ln in tail if ln.startswith("# ")]
    script = "\n".join(
        ["set -eu", 'cd "$REPO"', "{"]
        + install_lines
        + [
            "} >&2",
            'cd "$APP"',
            # the package is the installed one, not the source tree
            'python3 -c "import tenq, sys; assert \\"site-packages\\" in tenq.__file__, '
            'tenq.__file__" >&2',
            worker_line + " 2>worker.log &",
            "worker=$!",
            submit_line,
            'kill -INT "$worker"',
            'wait "$worker"',
        ]
    )
    return script, files, expected


def test_quick_start_installs_and_runs_as_written(server: Server, tmp_path: Any) -> None:
    script, files, expected = _script(_blocks())
    assert set(files) == {"reports.py", "submit.py"}
    repo = tmp_path / "repo"
    _clean_copy(str(repo / "clients" / "python"))
    app = tmp_path / "app"
    app.mkdir()
    for name, body in files.items():
        (app / name).write_text(body)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(home),
        REPO=str(repo),
        APP=str(app),
        TENQ_SERVER=server.url,
        # `python3` is the interpreter of this suite (Debian's under run-tests.sh)
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
        # no package index: whatever pip would fetch fails at once
        PIP_INDEX_URL="http://127.0.0.1:9/simple",
    )
    out = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                         timeout=180)
    log = (app / "worker.log").read_text() if (app / "worker.log").exists() else ""
    assert out.returncode == 0, f"script:\n{script}\nstderr:\n{out.stderr}\nworker:\n{log}"
    assert out.stdout.splitlines() == expected, out.stderr
    assert (home / "tenq-venv" / "bin" / "python3").exists()

