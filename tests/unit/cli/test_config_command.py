"""`fluvial config`, where an unknown key's error points, and -D of the program's own keys (kept, as Flink's)."""

from __future__ import annotations

from tests.unit.cli.helpers import invoke, job_file


def test_config_lists_the_known_keys_with_their_defaults():
    result = invoke("config", "env.log")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1].startswith("env.log.max") and "(default: 10)" in result.stdout


def test_an_unknown_engine_key_points_to_fluvial_config(tmp_path):
    result = invoke("run", "-D", "execution.no-such-key=1", job_file(tmp_path, "pass\n"))
    assert result.exit_code == 2
    assert "unknown configuration key 'execution.no-such-key'" in result.stderr
    assert "`fluvial config` lists the keys" in result.stderr and "see OPTIONS" not in result.stderr


def test_a_programs_own_key_is_kept_for_the_program(tmp_path):
    body = """\
print("threshold:", env.get_configuration().get_string("my-app.threshold", None))
env.from_collection([1]).print()
env.execute()
"""
    result = invoke("run", "-D", "my-app.threshold=5", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "threshold: 5" in result.stdout
