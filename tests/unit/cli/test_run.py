"""`fluvial run`: the job file as `__main__`, Flink's options before it, the job's arguments after it, and what
the user sees when a job or the file fails."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fluvial.datastream.stream_execution_environment import context_configuration, execution_interceptor
from tests.unit.cli.helpers import fluvial_process, invoke, job_file


def test_run_executes_the_job_file_as_main_with_its_arguments(tmp_path):
    body = """\
if __name__ == "__main__":
    print("argv:", sys.argv[1:])
    env.from_collection(["river", "stream"]).map(str.upper).print()
    env.execute()
"""
    saved_argv = list(sys.argv)
    result = invoke("run", job_file(tmp_path, body), "one", "--two", "-3")
    assert result.exit_code == 0, result.output
    assert "argv: ['one', '--two', '-3']" in result.stdout
    assert "RIVER\n" in result.stdout and "STREAM\n" in result.stdout
    assert sys.argv == saved_argv


def test_everything_after_the_job_file_is_the_jobs_own_even_fluvials_options(tmp_path):
    body = """\
print("argv:", sys.argv[1:], "parallelism:", env.get_parallelism())
env.from_collection([1]).print()
env.execute()
"""
    result = invoke("run", "-p", "3", job_file(tmp_path, body), "-p", "4", "--help", "--", "-D", "x=y")
    assert result.exit_code == 0, result.output
    assert "argv: ['-p', '4', '--help', '--', '-D', 'x=y'] parallelism: 3" in result.stdout


def test_a_double_dash_ends_fluvials_options_before_the_job_file(tmp_path):
    body = """\
print("argv:", sys.argv[1:])
env.from_collection([1]).print()
env.execute()
"""
    result = invoke("run", "--", job_file(tmp_path, body), "x")
    assert result.exit_code == 0, result.output
    assert "argv: ['x']" in result.stdout


def test_run_can_import_modules_next_to_the_job_file(tmp_path):
    (tmp_path / "helpers_for_cli_test.py").write_text("def shout(s):\n    return s.upper() + '!'\n")
    body = """\
from helpers_for_cli_test import shout
print(shout("hello"))
env.from_collection([1]).print()
env.execute()
"""
    result = invoke("run", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "HELLO!" in result.stdout


def test_run_counts_execute_and_collect_as_a_job(tmp_path):
    body = """\
print(sorted(env.from_collection([3, 1, 2]).map(lambda x: x * 10).execute_and_collect()))
"""
    result = invoke("run", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "[10, 20, 30]" in result.stdout
    assert "defined no job" not in result.output


def test_run_of_a_file_without_a_job_is_a_usage_error(tmp_path):
    result = invoke("run", job_file(tmp_path, "print('no pipeline here')\n", name="lazy.py"))
    assert result.exit_code == 2
    assert "no pipeline here" in result.stdout
    assert "lazy.py defined no job: it never called env.execute()" in result.stderr


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_missing_job_file_is_a_usage_error(tmp_path, command):
    result = invoke(command, tmp_path / "nowhere.py")
    assert result.exit_code == 2
    assert "error: job file" in result.stderr
    assert "nowhere.py' does not exist" in result.stderr


def test_a_directory_is_not_a_job_file(tmp_path):
    result = invoke("run", tmp_path)
    assert result.exit_code == 2
    assert "is not a file" in result.stderr


def test_a_failing_job_exits_1_naming_the_operator_with_the_users_traceback(tmp_path):
    body = """\
def explode(x):
    if x == 3:
        raise ValueError("bad record 3")
    return x
env.from_collection([1, 2, 3, 4]).map(explode).name("Explode").print()
env.execute("failing job")
print("unreachable")
"""
    result = invoke("run", job_file(tmp_path, body, name="failing.py"))
    assert result.exit_code == 1
    err = result.stderr
    assert err.startswith("Job has been submitted with JobID ") and "\nerror: Job 'failing job'" in err
    assert "operator 'Explode'" in err
    assert "Caused by:" in err
    assert 'failing.py", line 6, in explode' in err
    assert "ValueError: bad record 3" in err
    assert "fluvial/" not in err  # the engine's frames are left out
    assert "frames of fluvial, its launcher and installed libraries hidden; --verbose shows them" in err
    assert "unreachable" not in result.stdout


def test_a_script_error_exits_1_with_a_traceback_starting_at_the_job_file(tmp_path):
    body = """\
env.from_collection([1]).print()
raise RuntimeError("config missing")
"""
    result = invoke("run", job_file(tmp_path, body, name="broken.py"))
    assert result.exit_code == 1
    assert "RuntimeError: config missing" in result.stderr
    assert 'broken.py", line 5, in <module>' in result.stderr
    assert "runpy" not in result.stderr and "fluvial/cli" not in result.stderr


def test_a_script_exit_code_is_kept(tmp_path):
    result = invoke("run", job_file(tmp_path, "import sys\nsys.exit(3)\n"))
    assert result.exit_code == 3


def test_a_script_exit_with_a_message_exits_1_and_prints_it(tmp_path):
    result = invoke("run", job_file(tmp_path, "import sys\nsys.exit('usage: job.py N')\n"))
    assert result.exit_code == 1
    assert "usage: job.py N" in result.stderr


def test_run_restores_submission_after_the_job(tmp_path):
    from fluvial.datastream.stream_execution_environment import execution_interceptor

    invoke("run", job_file(tmp_path, "raise RuntimeError('early')\n"))
    assert execution_interceptor.get() is None


def test_run_leaves_the_interceptor_and_launch_configuration_as_it_found_them(tmp_path):
    invoke("run", "-p", "2", job_file(tmp_path, "env.from_collection([1]).print()\nenv.execute()\n"))
    assert execution_interceptor.get() is None
    assert context_configuration.get() is None


# -- Flink's options: -p, -D, -s, -n ---------------------------------------------------------------------------------


def test_options_configure_every_environment_the_job_file_creates(tmp_path):
    body = """\
second = StreamExecutionEnvironment.get_execution_environment()
conf = second.get_configuration()
print("parallelism:", env.get_parallelism(), second.get_parallelism())
print("backend:", type(second.get_state_backend()).__name__)
print("savepoint:", conf.get_string("execution.savepoint.path"),
      conf.get_boolean("execution.savepoint.ignore-unclaimed-state"))
env.from_collection([1]).print()
env.execute()
"""
    missing = tmp_path / "no-savepoint-here"
    result = invoke("run", "-p", "3", "-D", "state.backend.type=rocksdb", "-s", missing, "-n", job_file(tmp_path, body))
    assert "parallelism: 3 3" in result.stdout
    assert "backend: EmbeddedRocksDBStateBackend" in result.stdout
    assert f"savepoint: {missing} True" in result.stdout
    # the job really restores from -s: a path without a savepoint fails its submission, naming the path
    assert result.exit_code == 1
    assert f"execution.savepoint.path '{missing}' holds no savepoint" in result.stderr


def test_a_flag_wins_over_D_and_the_job_files_own_settings_win_over_both(tmp_path):
    body = """\
from fluvial.common import Configuration
print("flag over -D:", env.get_parallelism())
own = StreamExecutionEnvironment.get_execution_environment(
    Configuration().set_string("pipeline.max-parallelism", "64"))
print("own config over -D:", own.get_max_parallelism(), own.get_parallelism())
env.set_parallelism(1)
print("own setter over flag:", env.get_parallelism())
env.from_collection([1]).print()
env.execute()
"""
    result = invoke(
        "run", "-D", "parallelism.default=2", "-D", "pipeline.max-parallelism=16", "-p", "3", job_file(tmp_path, body)
    )
    assert result.exit_code == 0, result.output
    assert "flag over -D: 3" in result.stdout
    assert "own config over -D: 64 3" in result.stdout
    assert "own setter over flag: 1" in result.stdout


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-D", "rest.address=h"], "-D rest.address names the session cluster to submit to"),
        (
            ["-D", "rest.server.numThreads=4"],
            "-D rest.server.numThreads=4: configuration key 'rest.server.numThreads' is not supported by fluvial",
        ),
        (["-D", "metrics.reporter.jmx.port=9249"], "not supported by fluvial yet: fluvial's metrics take"),
        (["-D", "rest.port=http"], "-D rest.port=http: configuration 'rest.port' has"),
        (["-D", "parallelism.defualt=2"], "did you mean 'parallelism.default'?"),
        (["-D", "parallelism.default=zero"], "-D parallelism.default=zero: configuration 'parallelism.default' has"),
        (["-D", "no-equals-sign"], "-D expects KEY=VALUE, e.g. -D parallelism.default=4; got 'no-equals-sign'"),
        (["-D", "=value"], "-D expects KEY=VALUE"),
        (["-n"], "--allowNonRestoredState only applies when restoring: add -s SAVEPOINT"),
        (["-s", " "], "-s needs the path of a savepoint"),
        (["--target", "yarn"], "--target yarn: configuration 'execution.target' has the value 'yarn'"),
    ],
)
def test_a_bad_option_is_a_usage_error_before_the_job_file_runs(tmp_path, options, message):
    marker = tmp_path / "ran"
    body = f"open({str(marker)!r}, 'w').close()\nenv.from_collection([1]).print()\nenv.execute()\n"
    result = invoke("run", *options, job_file(tmp_path, body))
    assert result.exit_code == 2
    assert message in result.stderr
    assert not marker.exists()


def test_target_sets_execution_target_for_every_environment_the_job_file_creates(tmp_path):
    body = """\
print("target:", env.get_configuration().get_string("execution.target"))
raise SystemExit(0)
"""
    result = invoke("run", "-D", "execution.target=local", "--target", "ray", job_file(tmp_path, body))
    assert "target: ray" in result.stdout  # the flag wins over -D (the file then submits no job: exit 2)


def test_detached_sets_execution_attached_false(tmp_path):
    body = """\
print("attached:", env.get_configuration().get_string("execution.attached"))
"""
    result = invoke("run", "-d", "--target", "ray", job_file(tmp_path, body))
    assert "attached: false" in result.stdout


def test_detached_needs_a_cluster_that_outlives_the_run(tmp_path):
    result = invoke("run", "-d", job_file(tmp_path, "pass\n"))
    assert result.exit_code == 2
    assert "-d (--detached) submits each job and leaves it running" in " ".join(result.output.replace("│", " ").split())


def test_parallelism_must_be_at_least_one(tmp_path):
    result = invoke("run", "-p", "0", job_file(tmp_path, "pass\n"))
    assert result.exit_code == 2
    words = " ".join(result.output.replace("│", " ").split())  # click's message, wrapped in a box by rich
    assert "Invalid value for '-p' / '--parallelism'" in words
    assert "env var" not in words


@pytest.mark.timeout(60)
def test_fromSavepoint_restores_the_state_of_the_first_run(tmp_path):
    """Run 1 counts records per key and is stopped with a savepoint mid-stream; run 2 (`-s`) resumes: it emits
    only the records after the savepoint, and its counts go on from the savepoint's up to each key's total. A
    run 2 that started afresh would emit every record; a run 1 that went on after the savepoint's barrier would
    have printed records that run 2 prints again."""
    total, keys = 9_000, 3
    body = f"""\
import os
import time
from fluvial.common import Types
from fluvial.datastream import KeyedProcessFunction, MapFunction
from fluvial.datastream.connectors.number_seq import NumberSequenceSource
from fluvial.datastream.state import ValueStateDescriptor

PROGRESS = {str(tmp_path / "progress")!r}

class Slow(MapFunction):
    # slow enough to take a savepoint mid-stream; touches PROGRESS once records flow
    def map(self, value):
        if value % 20 == 0:
            time.sleep(0.001)
        if value == 100:
            open(PROGRESS, "w").close()
        return value

class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield f"{{value % {keys}}} {{self.count.value()}}"

env.set_parallelism(1)
env.enable_checkpointing(3_600_000)
(env.from_source(NumberSequenceSource(1, {total})).uid("numbers").map(Slow()).uid("slow")
    .key_by(lambda v: v % {keys}).process(Count()).uid("count").print())
if sys.argv[1:] == ["first"]:
    client = env.execute_async()
    while not os.path.exists(PROGRESS):
        time.sleep(0.005)
    print("SAVEPOINT", client.stop_with_savepoint(savepoint_directory={str(tmp_path / "sp")!r}).result(timeout=30))
else:
    env.execute()
"""
    job = job_file(tmp_path, body)

    def fluvial_run(*args: object) -> str:
        # each run a process of its own, as a user runs them: what one run's tasks print can only reach its own
        # output (in one process the two runs share sys.stdout)
        process = fluvial_process("run", *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = process.communicate(timeout=50)
        assert process.returncode == 0, out + err
        return out

    out = fluvial_run(job, "first")
    savepoint = out.split("SAVEPOINT ")[1].split()[0]
    before = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    lines = [line.split() for line in fluvial_run("-s", savepoint, job).splitlines() if line[:1].isdigit()]
    assert 0 < len(lines) < total, f"run 2 emitted {len(lines)} records: it did not resume mid-stream"
    final: dict[int, int] = {}
    for key, count in lines:
        final[int(key)] = max(final.get(int(key), 0), int(count))
    assert final == {k: len(range(k or keys, total + 1, keys)) for k in range(keys)}
    # the stop is a synchronous savepoint: run 1 printed nothing after its barrier, so run 2 repeats nothing
    printed = sorted((int(key), int(count)) for key, count in before + lines)
    assert printed == sorted((k, c) for k in range(keys) for c in range(1, final[k] + 1))


# -- what a failure shows ---------------------------------------------------------------------------------------------

FAILING_MAP = """\
def explode(x):
    raise ValueError("bad record")
env.set_parallelism(1)
env.from_collection([1]).map(explode).name("Explode").print()
env.execute("failing job")
"""


def test_verbose_shows_fluvials_own_frames_too(tmp_path):
    result = invoke("run", "--verbose", job_file(tmp_path, FAILING_MAP, name="failing.py"))
    assert result.exit_code == 1
    err = result.stderr
    assert 'failing.py", line 5, in explode' in err
    assert "fluvial/runtime/" in err  # the task's frames
    assert "fluvial.common.errors.JobExecutionException: Job 'failing job'" in err
    assert "hidden" not in err


def test_a_failure_without_user_frames_is_its_message_alone(tmp_path):
    body = """\
env.set_parallelism(1)
env.from_collection(["x"]).map(int).name("Parse").print()
env.execute("parse")
"""
    result = invoke("run", job_file(tmp_path, body))
    assert result.exit_code == 1
    err = result.stderr
    assert "\nerror: Job 'parse'" in err
    assert "operator 'Parse'" in err
    assert "ValueError: invalid literal for int() with base 10: 'x'" in err
    assert "File " not in err  # int() is C code called by the runtime: no frame of the user's to show
    assert "frames of fluvial, its launcher and installed libraries hidden" in err


def test_an_api_error_in_the_job_file_shows_the_users_line_and_the_apis_message(tmp_path):
    result = invoke("run", job_file(tmp_path, "env.from_source(42)\n", name="api.py"))
    assert result.exit_code == 1
    err = result.stderr
    assert 'api.py", line 4, in <module>' in err
    assert "InvalidJobError: from_source expects a Source (e.g. NumberSequenceSource), got 42" in err
    assert "fluvial/" not in err


@pytest.mark.timeout(60)
def test_web_serves_the_dashboard_and_rest_api_while_the_job_runs_and_prints_where(tmp_path):
    body = """\
import json, threading, urllib.request
from fluvial.common import Configuration
asked = threading.Event()

def hold(value):
    asked.wait(30)  # the job runs until the REST API has answered
    return value

env.set_parallelism(1)
env.from_collection([1, 2]).map(hold).print()
client = env.execute_async("watched")
jobs = json.load(urllib.request.urlopen(client.web.address + "/jobs", timeout=10))["jobs"]
page = urllib.request.urlopen(client.web.address + "/", timeout=10).read().decode()
asked.set()
client.get_job_execution_result().result()
print("listed:", [job["id"] for job in jobs] == [str(client.get_job_id())], "page:", "<html" in page.lower())
"""
    result = invoke("run", "--web", "-D", "rest.port=0", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "listed: True page: True" in result.stdout
    assert "Dashboard and REST API of job " in result.stderr and "http://127.0.0.1:" in result.stderr
