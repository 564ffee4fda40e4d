"""Private files and the trust rule for restores (fluvial.common.private_files)."""

from __future__ import annotations

import os
import stat

import pytest

from fluvial.common.private_files import (
    UntrustedLocationError,
    check_trusted,
    make_private_dirs,
    untrusted_reason,
    write_private_file,
)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_every_directory_made_is_private_and_existing_ones_are_left_alone(tmp_path):
    os.chmod(tmp_path, 0o755)
    make_private_dirs(tmp_path / "a" / "b" / "c")
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    assert mode(tmp_path) == 0o755
    make_private_dirs(tmp_path / "a" / "b" / "c")  # idempotent


def test_a_private_file_is_0600_and_truncated_when_rewritten(tmp_path):
    target = tmp_path / "f"
    write_private_file(target, b"long content", fsync=True)
    write_private_file(target, b"short")
    assert mode(target) == 0o600 and target.read_bytes() == b"short"


@pytest.mark.parametrize(
    "bits, who",
    [(stat.S_IWGRP, "its group"), (stat.S_IWOTH, "others"), (stat.S_IWGRP | stat.S_IWOTH, "group and others")],
)
def test_writable_by_anyone_else_is_untrusted_and_says_by_whom(tmp_path, bits, who):
    target = tmp_path / "state"
    target.write_bytes(b"x")
    os.chmod(target, 0o600 | bits)
    assert untrusted_reason(target) == f"file {target} is writable by {who} (mode {0o600 | bits:04o})"


def test_an_ancestor_writable_by_others_is_untrusted_unless_it_is_sticky(tmp_path):
    shared = tmp_path / "shared"
    (shared / "mine").mkdir(parents=True)
    os.chmod(shared, 0o777)
    with pytest.raises(UntrustedLocationError, match=f"directory {shared} is writable by group and others"):
        check_trusted(shared / "mine", "a test checkpoint")
    os.chmod(shared, 0o1777)
    check_trusted(shared / "mine", "a test checkpoint")
    os.chmod(shared / "mine", 0o1777)  # the sticky bit does not excuse the target itself
    assert "writable by group and others" in untrusted_reason(shared / "mine")


def test_a_symlink_is_judged_by_what_it_points_to(tmp_path):
    (tmp_path / "open").mkdir(mode=0o700)
    os.chmod(tmp_path / "open", 0o777)
    os.symlink(tmp_path / "open", tmp_path / "link")
    assert f"{tmp_path / 'open'} is writable by group and others" in untrusted_reason(tmp_path / "link")


def test_a_missing_target_is_not_a_trust_question(tmp_path):
    assert untrusted_reason(tmp_path / "missing") is None
