"""Where the file connectors read and write: a local path or any URL fsspec reaches (`file://`, `memory://`,
`s3://`, `gs://`, ...). The one place that knows about schemes.

- `resolve_path` turns what a user wrote into the canonical form a job carries: an absolute local path for
  plain paths and `file://` URLs (local files keep the plain, fast `open`), the URL itself otherwise. An
  unknown scheme, or one whose fsspec package is not installed, is an error naming the fix.
- `filesystem(path)` is the fsspec filesystem and the path inside it; `qualify` turns a path a listing
  returned back into the canonical form.
- `commit_file` makes a hidden, fully written part file visible: a rename on a local disk (atomic), a move
  on other filesystems, which on an object store writes the final object (a copy) and deletes the hidden one.

fsspec filesystems of a process are cached by fsspec, so resolving a path per file is cheap. Note that
`memory://` is per process: a job whose TaskManagers are processes (the default, auto, runs jobs of parallelism
above 1 so) is refused at submission when it uses it (`cluster/shipping_checks.py`).
"""

from __future__ import annotations

import os
import posixpath
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

from fluvial.common.errors import InvalidJobError

__all__ = ["commit_file", "filesystem", "is_local", "join", "open_for_read", "qualify", "resolve_path", "scheme"]


def is_local(path: str) -> bool:
    return "://" not in path


def scheme(path: str) -> str:
    """The scheme of a path or URL: "file" for a local path (plain or file://), else the URL's ("memory", "s3")."""
    return "file" if is_local(path) else urlparse(path).scheme or "file"


def resolve_path(path: str | os.PathLike) -> str:
    """An absolute local path (plain paths, `file://`), else the URL of a filesystem fsspec knows."""
    text = os.fspath(path)
    if "://" not in text:
        return os.path.abspath(text)
    parsed = urlparse(text)
    if parsed.scheme == "file":
        return os.path.abspath(unquote(parsed.path))
    import fsspec

    try:
        fsspec.get_filesystem_class(parsed.scheme)
    except ValueError:
        raise InvalidJobError(
            f"path {text!r}: fsspec knows no filesystem for the scheme {parsed.scheme!r}; use a local path, "
            "file://, memory://, or an object store URL (s3://, gs://, abfs://, ...)"
        ) from None
    except ImportError as error:
        raise InvalidJobError(
            f"path {text!r}: the scheme {parsed.scheme!r} needs a package that is not installed ({error}); "
            "install it next to fluvial"
        ) from None
    fs, inner = filesystem(text)
    return fs.unstrip_protocol(inner.rstrip("/") or inner)


def filesystem(path: str) -> tuple[Any, str]:
    """The fsspec filesystem of a resolved path and the path inside it."""
    from fsspec.core import url_to_fs

    return url_to_fs(path)


def qualify(fs: Any, inner_path: str, like: str) -> str:
    """The canonical form of a path a listing of `fs` returned; `like` is a resolved path on the same fs."""
    return inner_path if is_local(like) else fs.unstrip_protocol(inner_path)


def join(base: str, *parts: str) -> str:
    parts = tuple(p for p in parts if p)
    return os.path.join(base, *parts) if is_local(base) else posixpath.join(base, *parts)


def open_for_read(path: str) -> BinaryIO:
    if is_local(path):
        return open(path, "rb")
    fs, inner = filesystem(path)
    return fs.open(inner, "rb")


def open_for_new_file(path: str) -> BinaryIO:
    """A new file to write; locally it must not exist yet (two writers never share a part file)."""
    if is_local(path):
        return open(path, "xb")
    fs, inner = filesystem(path)
    return fs.open(inner, "wb")


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(path)
    fs, inner = filesystem(path)
    return fs.exists(inner)


def make_dirs(path: str) -> None:
    if is_local(path):
        os.makedirs(path, exist_ok=True)
        return
    fs, inner = filesystem(path)
    fs.makedirs(inner, exist_ok=True)


def commit_file(hidden: str, final: str) -> None:
    """Make `hidden` visible as `final`. Raises FileNotFoundError when `hidden` is gone."""
    if is_local(hidden):
        os.replace(hidden, final)
        return
    fs, inner_hidden = filesystem(hidden)
    _, inner_final = filesystem(final)
    if not fs.exists(inner_hidden):
        raise FileNotFoundError(hidden)
    fs.mv(inner_hidden, inner_final)


def list_files(path: str, is_hidden: Any) -> list[str] | None:
    """Every visible file at or under `path`, sorted (None when the path does not exist). A name for which
    `is_hidden(name)` holds is skipped, as is everything under such a directory; the path itself is read even
    when its own name is hidden."""
    if is_local(path):
        if os.path.isfile(path):
            return [path]
        if not os.path.isdir(path):
            return None
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = [d for d in dirnames if not is_hidden(d)]
            found.extend(os.path.join(dirpath, f) for f in filenames if not is_hidden(f))
        return sorted(found)
    fs, inner = filesystem(path)
    if fs.isfile(inner):
        return [path]
    if not fs.isdir(inner):
        return None
    root = inner.rstrip("/")
    visible = []
    for file in fs.find(inner, withdirs=False, detail=False):
        relative = file[len(root) :].lstrip("/")
        if not any(is_hidden(part) for part in relative.split("/")):
            visible.append(qualify(fs, file, path))
    return sorted(visible)


def find_named(path: str, wanted: Any) -> list[str]:
    """Every file at any depth under the directory `path` whose name `wanted(name)` accepts (hidden ones too)."""
    if is_local(path):
        found = []
        for dirpath, _, filenames in os.walk(path):
            found.extend(os.path.join(dirpath, name) for name in filenames if wanted(name))
        return sorted(found)
    fs, inner = filesystem(path)
    if not fs.isdir(inner):
        return []
    return sorted(
        qualify(fs, file, path)
        for file in fs.find(inner, withdirs=False, detail=False)
        if wanted(file.rsplit("/", 1)[-1])
    )


def remove_file(path: str) -> None:
    """Delete the file; one already gone is no error."""
    if is_local(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    fs, inner = filesystem(path)
    if fs.exists(inner):
        fs.rm(inner)
