"""Path strings as Flink's `Path` normalises them, and local file URIs as Flink's local file system reads them.

Flink drops a trailing slash (`file://var/checkpoints/` prints as `file://var/checkpoints`) and collapses
doubled slashes in the path part. Its local file system ignores the authority of a `file:` URI:
`file://var/checkpoints` is the directory `/checkpoints`, and `file://localhost/tmp/x` is `/tmp/x`. fsspec
would read both as paths relative to the working directory, so every local URI goes through `local_path`
before it reaches fsspec.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["local_path", "normalise_path"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(//[^/]*)?(.*)$")


def normalise_path(path: str) -> str:
    """`path` as Flink's Path prints it: doubled slashes collapsed and a trailing slash dropped (not the root)."""
    match = _SCHEME.match(path)
    if match is None or len(match.group(1)) == 1:  # a plain path (a Windows drive letter is no scheme)
        prefix, rest = "", path
    else:
        prefix, rest = f"{match.group(1)}:{match.group(2) or ''}", match.group(3)
    rest = re.sub(r"/{2,}", "/", rest)
    if len(rest) > 1:
        rest = rest.rstrip("/") or "/"
    return prefix + rest


def local_path(path: str) -> str:
    """The local directory a `file:` URI names, authority dropped (Flink's local file system); other paths and
    URLs unchanged."""
    if not path.startswith("file:"):
        return path
    return urlsplit(path).path or "/"
