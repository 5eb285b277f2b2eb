# SPDX-License-Identifier: Apache-2.0
"""The README's quick start runs exactly as written: its files, its worker
command and its submit script, against a real server (TENQ_SERVER points
at it, as `make run`'s default address would be)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from typing import Any, List, Tuple

from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")


def _blocks() -> List[Tuple[str, str]]:
    with open(README) as f:
        text = f.read()
    quick = text.split("## Five-minute quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", quick, re.S)


def test_quick_start_runs_as_written(server: Server, tmp_path: Any) -> None:
    blocks = _blocks()
    files = {}
    for lang, body in blocks:
        first = body.splitlines()[0]
        if lang == "python" and first.startswith("# ") and first.endswith(".py"):
            files[first[2:]] = body
    assert set(files) == {"reports.py", "submit.py"}
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    shell = "\n".join(body for lang, body in blocks if lang == "sh")
    (worker_line,) = [ln for ln in shell.splitlines() if ln.startswith("python3 -m tenq worker")]
    (submit_line,) = [ln for ln in shell.splitlines() if ln.startswith("python3 submit.py")]
    tail = shell.split(submit_line, 1)[1].splitlines()
    expected = [ln[2:] for ln in tail if ln.startswith("# ")]

    env = dict(os.environ, TENQ_SERVER=server.url,
               PYTHONPATH=os.path.join(HERE, "..", "src"))
    cmd = [sys.executable] + shlex.split(worker_line)[1:]
    worker = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE)
    try:
        out = subprocess.run([sys.executable] + shlex.split(submit_line)[1:], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines() == expected
        worker.send_signal(signal.SIGINT)
        assert worker.wait(30) == 0
    finally:
        worker.kill()
