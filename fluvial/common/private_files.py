"""Files and directories only their owner can use, and the check that state about to be restored is trusted.

Checkpoints, savepoints, write-ahead logs and RocksDB working directories hold pickled user values (keyed state,
operator state, received records). Whoever can read them sees the job's data; whoever can write them can make
the job run code of their choosing when it restores. So fluvial creates them private — directories 0700, files
0600 — and refuses to restore from a location someone else could have written (docs/operations/security.md).

The rule for "someone else could have written" is OpenSSH's StrictModes rule: the path and every directory
above it must be owned by this user or root and must not be writable by group or others. One exception: an
ancestor directory with the sticky bit (like /tmp) may be writable by everyone, because only the owner of an
entry can rename or delete it there.

Only local paths are checked: object stores and memory:// have no POSIX modes; their access control is the
store's own.
"""

from __future__ import annotations

import logging
import os
import stat

from fluvial.common.errors import ResourceError

logger = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


class UntrustedLocationError(ResourceError, PermissionError):
    """State would be restored from a location that another user could have written."""


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """Create `path` and every missing parent with mode 0700. (`os.makedirs` applies its mode to the last
    directory only, so parents it creates would be left readable by everyone.) Existing directories are left
    as they are: a directory the user made is the user's choice."""
    missing: list[str] = []
    current = os.path.abspath(os.fspath(path))
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise


def open_private(path: str | os.PathLike[str], flags: int = _WRITE_FLAGS) -> int:
    """`os.open` creating the file 0600: its mode is right from the first byte, with no window in which another
    user could open it (a chmod after the fact leaves one)."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def write_private_file(
    path: str | os.PathLike[str], data: bytes | bytearray | memoryview, *, fsync: bool = False
) -> None:
    """Write `data` to a new or truncated 0600 file; with `fsync`, durable when this returns."""
    fd = open_private(path)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a creation, rename or deletion in `directory` durable: a directory's entries are data of their own,
    which `fsync` on the file does not cover."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def untrusted_reason(path: str | os.PathLike[str]) -> str | None:
    """Why another user could have written `path` (or replaced it), or None when only this user and root can.

    Checks the real path (symlinks resolved) and each directory above it."""
    real = os.path.realpath(os.fspath(path))
    me = os.getuid()
    current, is_target = real, True
    while True:
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            info = None  # a missing target is the reader's error to report, not a trust question
        if info is not None:
            kind = "directory" if stat.S_ISDIR(info.st_mode) else "file"
            if info.st_uid not in (me, 0):
                return f"{kind} {current} is owned by another user (uid {info.st_uid})"
            writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            sticky_ancestor = not is_target and stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
            if writable and not sticky_ancestor:
                who = (
                    "group and others"
                    if writable == stat.S_IWGRP | stat.S_IWOTH
                    else ("its group" if writable == stat.S_IWGRP else "others")
                )
                return f"{kind} {current} is writable by {who} (mode {stat.S_IMODE(info.st_mode):04o})"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current, is_target = parent, False


def check_trusted(path: str | os.PathLike[str], what: str) -> None:
    """Raise UntrustedLocationError, saying why and what to do, when `untrusted_reason(path)` finds one.
    `what` names what is being restored, e.g. "checkpoint metadata file:///ckpt/job/chk-3/_metadata"."""
    reason = untrusted_reason(path)
    if reason is None:
        return
    raise UntrustedLocationError(
        f"refusing to restore {what}: {reason}. Restored state is unpickled, so whoever can write it can run code "
        "in this job; only this user (or root) may be able to write it and every directory above it. Fix: "
        "`chmod go-w` the directory (and `chown` it to this user), or copy the checkpoint into a private "
        "directory you trust and restore from there"
    )
