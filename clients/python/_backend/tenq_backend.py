# SPDX-License-Identifier: Apache-2.0
"""The package's own PEP 517 build backend: it needs nothing but the
standard library, so ``pip install ./clients/python`` works in a fresh
virtual environment without PyPI (pip's isolated build installs the
``requires`` of pyproject.toml, and there are none).

It builds what this package is: pure Python, every file under ``src/tenq``
(``__pycache__`` left out), metadata from pyproject.toml's ``[project]``.
Hooks: ``build_wheel``, ``build_sdist``, ``build_editable`` (PEP 660: a
``.pth`` naming ``src``), ``prepare_metadata_for_build_wheel``/``_editable``
and the ``get_requires_*`` ones (nothing)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "tenq"
# Reproducible archives: a fixed time for every entry (SOURCE_DATE_EPOCH wins).
_EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1704067200"))


# ---- pyproject.toml -----------------------------------------------------------------------


def _project() -> Dict[str, Any]:
    """The ``[project]`` table of pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
    except ImportError:  # Python 3.10: the little TOML this file uses
        return _mini_toml(data.decode("utf-8")).get("project", {})
    project: Dict[str, Any] = tomllib.loads(data.decode("utf-8")).get("project", {})
    return project


def _mini_toml(text: str) -> Dict[str, Any]:
    """Tables, and keys whose value is a string, a list of strings or an
    inline table of strings (one line each, or a list over several lines):
    what pyproject.toml's [project] holds."""
    out: Dict[str, Any] = {}
    table: Dict[str, Any] = out
    lines = iter(text.splitlines())
    for line in lines:
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([\w.-]+)\]", line)
        if m:
            table = out
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        key, _, value = (s.strip() for s in line.partition("="))
        if value.startswith("[") and not value.endswith("]"):
            for more in lines:
                value += more.strip()
                if more.strip().endswith("]"):
                    break
        table[key] = _mini_value(value)
    return out


def _mini_value(value: str) -> Any:
    if value.startswith("["):
        return [_mini_value(v) for v in re.findall(r'"(?:[^"\\]|\\.)*"|\{[^}]*\}', value)]
    if value.startswith("{"):
        return {k: v for k, v in re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', value)}
    if value.startswith('"'):
        return value[1:-1]
    return value


def _metadata() -> str:
    """The core metadata (METADATA, PKG-INFO) of pyproject.toml's project."""
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
    ]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    for a in p.get("authors", []):
        if a.get("name"):
            lines.append(f"Author: {a['name']}")
    lic = p.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append(f"License: {lic['text']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    for c in p.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    for d in p.get("dependencies", []):
        lines.append(f"Requires-Dist: {d}")
    body = ""
    readme = p.get("readme")
    if isinstance(readme, str):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _names() -> Tuple[str, str]:
    p = _project()
    name = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return name, p["version"]


# ---- files --------------------------------------------------------------------------------


def _package_files() -> List[Tuple[str, str]]:
    """(path in the wheel, path on disk) of every file of the package."""
    out = []
    base = os.path.join(ROOT, "src")
    for here, dirs, files in os.walk(os.path.join(base, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            disk = os.path.join(here, f)
            out.append((os.path.relpath(disk, base).replace(os.sep, "/"), disk))
    return out


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _wheel(directory: str, extra: List[Tuple[str, bytes]], with_package: bool) -> str:
    name, version = _names()
    dist_info = f"{name}-{version}.dist-info"
    filename = f"{name}-{version}-py3-none-any.whl"
    entries: List[Tuple[str, bytes]] = []
    if with_package:
        for arc, disk in _package_files():
            with open(disk, "rb") as f:
                entries.append((arc, f.read()))
    entries.extend(extra)
    entries.append((f"{dist_info}/METADATA", _metadata().encode("utf-8")))
    entries.append((f"{dist_info}/WHEEL", _wheel_file().encode()))
    lic = os.path.join(ROOT, "..", "..", "LICENSE")
    if os.path.isfile(lic):
        with open(lic, "rb") as f:
            entries.append((f"{dist_info}/LICENSE", f.read()))
    record = [_record_line(arc, data) for arc, data in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    stamp = time.gmtime(max(_EPOCH, 315532800))[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return filename


def _wheel_file() -> str:
    return (
        "Wheel-Version: 1.0\n"
        "Generator: tenq_backend\n"
        "Root-Is-Purelib: true\n"
        "Tag: py3-none-any\n"
    )


def _write_metadata(directory: str) -> str:
    name, version = _names()
    dist_info = f"{name}-{version}.dist-info"
    os.makedirs(os.path.join(directory, dist_info), exist_ok=True)
    with open(os.path.join(directory, dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(directory, dist_info, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    return dist_info


# ---- PEP 517 / PEP 660 hooks --------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(
    config_settings: Optional[Dict[str, Any]] = None,
) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None
) -> str:
    return _write_metadata(metadata_directory)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None
) -> str:
    return _write_metadata(metadata_directory)


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    return _wheel(wheel_directory, [], with_package=True)


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    """A wheel whose only file is a .pth that puts ``src`` on sys.path."""
    name, _ = _names()
    pth = (os.path.join(ROOT, "src") + "\n").encode()
    return _wheel(wheel_directory, [(f"__editable__.{name}.pth", pth)], with_package=False)


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """pyproject.toml, README.md, the backend and src/tenq, with PKG-INFO."""
    name, version = _names()
    top = f"{name}-{version}"
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml"))]
    readme = _project().get("readme")
    if isinstance(readme, str):
        files.append((readme, os.path.join(ROOT, readme)))
    files.append(("_backend/tenq_backend.py", os.path.abspath(__file__)))
    files.extend(("src/" + arc, disk) for arc, disk in _package_files())
    os.makedirs(sdist_directory, exist_ok=True)
    filename = f"{top}.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = [("PKG-INFO", _metadata().encode("utf-8"))]
        for arc, disk in files:
            with open(disk, "rb") as f:
                entries.append((arc, f.read()))
        for arc, data in entries:
            info = tarfile.TarInfo(f"{top}/{arc}")
            info.size = len(data)
            info.mtime = _EPOCH
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    with open(os.path.join(sdist_directory, filename), "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=_EPOCH) as gz:
            gz.write(raw.getvalue())
    return filename
