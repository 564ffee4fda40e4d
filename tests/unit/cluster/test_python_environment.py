"""A job's Python environment (python.requirements, python.archives), built as the cluster builds it: pip
installs a local wheel once per requirements content (a second build does not run pip), a failing install names
the requirement and pip's last line, archives land under their target names."""

from __future__ import annotations

import os
import tarfile
import zipfile

import pytest

from fluvial.cluster import python_environment
from fluvial.cluster.python_environment import PythonEnvironmentError, archive_entries, requirement_names
from fluvial.common import Configuration
from fluvial.common.errors import ConfigurationError
from tests.python_packages import requirements_with

pytestmark = pytest.mark.timeout(60)


def test_requirements_are_installed_once_per_content_and_reused(tmp_path, monkeypatch):
    requirements, wheels = requirements_with(tmp_path, "fluvial_unit_pkg", "1.0", "VALUE = 41\n")
    install_dir = tmp_path / "installed"
    first = python_environment.install_requirements(str(requirements), str(wheels), str(install_dir))
    assert os.path.isfile(os.path.join(first, "fluvial_unit_pkg", "__init__.py"))
    assert sorted(os.listdir(install_dir)) == [os.path.basename(first), os.path.basename(first) + ".lock"]

    def no_pip(*args, **kwargs):
        raise AssertionError("pip ran a second time for the same requirements")

    monkeypatch.setattr(python_environment, "_pip_install", no_pip)
    again = tmp_path / "again.txt"
    again.write_bytes(requirements.read_bytes())  # another file, the same content: the same install
    assert python_environment.install_requirements(str(again), str(wheels), str(install_dir)) == first


def test_a_failing_install_names_the_requirement_and_pips_last_line_and_leaves_nothing(tmp_path):
    requirements, wheels = requirements_with(tmp_path, "fluvial_unit_pkg", "1.0", "")
    requirements.write_text("fluvial_unit_pkg==1.0\nfluvial-absent-pkg==2.0\n")
    install_dir = tmp_path / "installed"
    with pytest.raises(PythonEnvironmentError) as raised:
        python_environment.install_requirements(str(requirements), str(wheels), str(install_dir))
    message = str(raised.value)
    assert f"installing {requirements} failed at 'fluvial-absent-pkg'" in message
    assert message.rstrip().endswith("No matching distribution found for fluvial-absent-pkg==2.0")
    assert [name for name in os.listdir(install_dir) if not name.endswith(".lock")] == []


def test_archives_are_extracted_under_their_target_or_file_name(tmp_path):
    data = tmp_path / "data.zip"
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("words.txt", "river\n")
    source = tmp_path / "words.txt"
    source.write_text("delta\n")
    packed = tmp_path / "more.tar.gz"
    with tarfile.open(packed, "w:gz") as archive:
        archive.add(source, arcname="inner/words.txt")
    configuration = Configuration().set_string("python.archives", f"{data}#data,{packed}")
    environment = python_environment.build(configuration, "a" * 32, str(tmp_path / "installed"))
    try:
        assert environment.path == () and environment.archives == ("data", "more.tar.gz")
        root = environment.working_directory
        assert open(os.path.join(root, "data", "words.txt")).read() == "river\n"
        assert open(os.path.join(root, "more.tar.gz", "inner", "words.txt")).read() == "delta\n"
    finally:
        python_environment.discard(environment)
    assert not os.path.exists(root)


def test_archive_targets_must_be_plain_distinct_names():
    assert archive_entries("/a/x.zip,/b/y.tgz#env") == [("/a/x.zip", "x.zip"), ("/b/y.tgz", "env")]
    with pytest.raises(ConfigurationError, match="two archives are extracted to 'env'"):
        archive_entries("/a/x.zip#env,/b/y.zip#env")
    with pytest.raises(ConfigurationError, match="not a directory name"):
        archive_entries("/a/x.zip#../up")


def test_requirement_names_skip_options_comments_and_paths():
    content = b"# tools\n-i https://example.org/simple\nnumpy>=1.0 # math\n./local\nrequests[socks]==2\n"
    assert requirement_names(content) == ["numpy", "requests"]


def test_no_keys_no_environment(tmp_path):
    assert python_environment.build(Configuration(), "b" * 32, str(tmp_path)) is None
