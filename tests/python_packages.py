"""Tiny Python packages made on the spot for tests of python.requirements: a pure-Python wheel written by hand
(a wheel is a zip of the package, its METADATA, WHEEL and RECORD), so pip installs it with `--no-index
--find-links DIR` and no test reaches the network or needs a build backend."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def write_wheel(directory: Path, name: str, version: str, source: str) -> Path:
    """A wheel of the one-module package `name` (its `__init__.py` is `source`) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: fluvial-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def requirements_with(directory: Path, name: str, version: str, source: str) -> tuple[Path, Path]:
    """(requirements file asking for `name==version`, the directory holding its wheel)."""
    wheels = directory / "wheels"
    write_wheel(wheels, name, version, source)
    requirements = directory / "requirements.txt"
    requirements.write_text(f"{name}=={version}\n")
    return requirements, wheels
