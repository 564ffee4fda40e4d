"""`fluvial plan` (and `--version`), and the plan renderings behind it."""

from __future__ import annotations

import json

import fluvial
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.datastream.stream_execution_environment import context_configuration, execution_interceptor
from fluvial.graph.plan_render import render_dot, render_json, render_text
from tests.unit.cli.helpers import invoke, job_file

# Source(1) -rebalance-> Map(2) -hash-> Keyed Reduce(2) -> Print(2): three vertices.
KEYED_JOB = """\
env.set_parallelism(2)
(env.from_collection([("a", 1), ("b", 2), ("a", 3)])
    .map(lambda t: t).name("Identity")
    .key_by(lambda t: t[0])
    .reduce(lambda x, y: (x[0], x[1] + y[1])).name("Sum Per Key")
    .print())
env.execute("keyed job")
"""


# -- --version ------------------------------------------------------------------------------------------------------


def test_version_prints_the_package_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"fluvial {fluvial.__version__}"


# -- plan ---------------------------------------------------------------------------------------------------------


def test_plan_text_names_vertices_ship_strategies_chain_breaks_and_slots(tmp_path):
    result = invoke("plan", job_file(tmp_path, KEYED_JOB))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Job: keyed job" in text
    assert "[1] Source: Collection Source\n      parallelism: 1" in text
    assert "[2] Identity\n      parallelism: 2" in text
    assert "[3] Sum Per Key -> Print to Std. Out\n      parallelism: 2" in text
    assert "[1] Source: Collection Source → [2] Identity: REBALANCE, ALL_TO_ALL" in text
    assert "[2] Identity → [3] Sum Per Key -> Print to Std. Out: HASH, ALL_TO_ALL" in text
    assert text.count("not chained: the partitioner is not forward") == 2
    assert "slots required: 2 (default: 2)" in text


def test_plan_json_is_a_document_of_vertices_edges_and_slots(tmp_path):
    result = invoke("plan", "--format", "json", job_file(tmp_path, KEYED_JOB))
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["job_name"] == "keyed job"
    assert [v["name"] for v in plan["vertices"]] == [
        "Source: Collection Source",
        "Identity",
        "Sum Per Key -> Print to Std. Out",
    ]
    assert plan["vertices"][2]["operators"] == ["Sum Per Key", "Print to Std. Out"]
    assert [v["parallelism"] for v in plan["vertices"]] == [1, 2, 2]
    assert [(e["source"], e["target"], e["ship_strategy"], e["distribution_pattern"]) for e in plan["edges"]] == [
        (1, 2, "REBALANCE", "ALL_TO_ALL"),
        (2, 3, "HASH", "ALL_TO_ALL"),
    ]
    assert {e["chain_break"] for e in plan["edges"]} == {"NOT_FORWARD"}
    assert plan["required_slots"] == 2
    assert plan["slot_sharing_groups"] == {"default": 2}


def test_plan_dot_is_a_digraph_with_boxes_and_labelled_edges(tmp_path):
    result = invoke("plan", "-f", "dot", job_file(tmp_path, KEYED_JOB))
    assert result.exit_code == 0, result.output
    dot = result.stdout
    assert dot.startswith('digraph "keyed job" {')
    assert dot.rstrip().endswith("}")
    assert "node [shape=box" in dot
    assert 'v3 [label="[3] parallelism 2\\lSum Per Key\\lPrint to Std. Out\\l"];' in dot
    assert 'v1 -> v2 [label="REBALANCE\\nALL_TO_ALL"];' in dot
    assert 'v2 -> v3 [label="HASH\\nALL_TO_ALL"];' in dot


def test_plan_flink_format_is_the_stream_graph_execution_plan(tmp_path):
    result = invoke("plan", "--format", "flink", job_file(tmp_path, KEYED_JOB))
    assert result.exit_code == 0, result.output
    nodes = json.loads(result.stdout)["nodes"]
    assert [node["contents"] for node in nodes] == [
        "Source: Collection Source",
        "Identity",
        "Sum Per Key",
        "Print to Std. Out",
    ]


def test_plan_does_not_run_the_job_nor_the_rest_of_the_script(tmp_path):
    marker = tmp_path / "ran"
    body = f"""\
print("before execute")
def touch(x):
    open({str(marker)!r}, "w").close()
    return x
env.from_collection([1, 2]).map(touch).print()
env.execute()
print("after execute")
"""
    result = invoke("plan", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert "after execute" not in result.output
    # the script's own prints go to stderr, so stdout is the plan alone
    assert "before execute" in result.stderr
    assert "before execute" not in result.stdout
    assert result.stdout.startswith("Job: Flink Streaming Job")


def test_plan_captures_the_first_job_only(tmp_path):
    body = """\
env.from_collection([1]).map(lambda x: x).name("First Map").print()
env.execute("first")
env.from_collection([1]).map(lambda x: x).name("Second Map").print()
env.execute("second")
"""
    result = invoke("plan", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "First Map" in result.stdout
    assert "Second Map" not in result.stdout


def test_plan_captures_execute_and_collect_without_running(tmp_path):
    body = """\
env.set_parallelism(3)
ds = env.from_collection([1, 2, 3]).map(lambda x: x * 2).name("Double")
print(list(ds.execute_and_collect()))
"""
    result = invoke("plan", "-f", "json", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert [v["name"] for v in plan["vertices"]] == ["Source: Collection Source", "Double", "Collect Sink"]
    assert "[2, 4, 6]" not in result.output


def test_plan_survives_a_script_that_catches_every_exception(tmp_path):
    body = """\
env.set_parallelism(1)
env.from_collection([1]).print()
try:
    env.execute()
except Exception:
    print("swallowed")
    raise SystemExit(0)
"""
    result = invoke("plan", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "swallowed" not in result.output
    assert "[1] Source: Collection Source -> Print to Std. Out" in result.stdout


def test_plan_shows_slot_sharing_groups_and_co_location(tmp_path):
    body = """\
env.set_parallelism(1)
(env.from_collection(["x"])
    .map(lambda v: v).set_parallelism(4).slot_sharing_group("wide").co_location_group("pair")
    .filter(lambda v: True)
    .print())
env.execute()
"""
    result = invoke("plan", job_file(tmp_path, body))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "slot sharing group: wide" in text
    assert "co-location group: pair" in text
    assert "not chained: the operators are in different slot sharing groups" in text
    assert "slots required: 5 (default: 1, wide: 4)" in text


def test_plan_passes_arguments_to_the_job(tmp_path):
    body = """\
env.from_collection([1]).map(lambda x: x).name(sys.argv[1]).print()
env.execute()
"""
    result = invoke("plan", job_file(tmp_path, body), "Named-By-Argument")
    assert result.exit_code == 0, result.output
    assert "Named-By-Argument" in result.stdout


def test_plan_of_a_file_without_a_job_is_a_usage_error(tmp_path):
    result = invoke("plan", job_file(tmp_path, "x = 1\n", name="empty.py"))
    assert result.exit_code == 2
    assert "empty.py defined no job: it never called env.execute()" in result.stderr
    assert result.stdout == ""


def test_plan_leaves_the_interceptor_as_it_found_it(tmp_path):
    invoke("plan", job_file(tmp_path, KEYED_JOB))
    assert execution_interceptor.get() is None


def test_plan_takes_parallelism_and_properties_before_the_job_file(tmp_path):
    body = """\
print("argv:", sys.argv[1:])
env.from_collection([1]).map(lambda x: x).name("Work").print()
env.execute()
"""
    result = invoke("plan", "-p", "3", "-D", "pipeline.name=Named By D", job_file(tmp_path, body), "-p", "7")
    assert result.exit_code == 0, result.output
    assert "Job: Named By D" in result.stdout
    assert "[2] Work -> Print to Std. Out\n      parallelism: 3" in result.stdout
    assert "argv: ['-p', '7']" in result.stderr  # the job's own prints go to stderr under `plan`


def test_plan_leaves_the_launch_configuration_as_it_found_it(tmp_path):
    invoke("plan", "-p", "2", job_file(tmp_path, KEYED_JOB))
    assert context_configuration.get() is None


def test_plan_of_a_failing_file_reports_it_and_exits_1(tmp_path):
    result = invoke("plan", job_file(tmp_path, "raise KeyError('no input')\n", name="bad.py"))
    assert result.exit_code == 1
    assert "KeyError: 'no input'" in result.stderr
    assert result.stdout == ""


# -- the renderings on their own ----------------------------------------------------------------------------------


def seed_002_job_graph():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    (
        env.from_collection(["a"])
        .map(lambda v: v)
        .filter(lambda v: True)
        .slot_sharing_group("group_03")
        .map(lambda v: v)
        .filter(lambda v: True)
        .slot_sharing_group("group_04")
        .map(lambda v: v)
        .print()
    )
    return env.get_job_graph("seed 002")


def test_render_text_of_seed_002_has_three_vertices_in_three_groups():
    text = render_text(seed_002_job_graph())
    assert "[1] Source: Collection Source -> Map\n      parallelism: 1\n      slot sharing group: default" in text
    assert "[2] Filter -> Map\n      parallelism: 1\n      slot sharing group: group_03" in text
    third = "[3] Filter -> Map -> Print to Std. Out\n      parallelism: 1\n      slot sharing group: group_04"
    assert third in text
    assert text.count("FORWARD, POINTWISE") == 2
    assert text.count("not chained: the operators are in different slot sharing groups") == 2
    assert text.rstrip().endswith("slots required: 3 (default: 1, group_03: 1, group_04: 1)")
    assert "co-location group" not in text


def test_render_text_of_a_single_chain_says_there_are_no_edges():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1]).map(lambda v: v).print()
    text = render_text(env.get_job_graph())
    assert "(none: the whole job is one chain)" in text
    assert "slots required: 1 (default: 1)" in text


def test_render_json_matches_the_job_graph():
    graph = seed_002_job_graph()
    plan = json.loads(render_json(graph))
    assert [v["slot_sharing_group"] for v in plan["vertices"]] == ["default", "group_03", "group_04"]
    assert [v["inputs"] for v in plan["vertices"]] == [[], [1], [2]]
    assert [e["chain_break"] for e in plan["edges"]] == ["DIFFERENT_SLOT_SHARING_GROUPS"] * 2
    assert plan["required_slots"] == graph.required_slots() == 3


def test_render_dot_draws_one_cluster_per_slot_sharing_group():
    dot = render_dot(seed_002_job_graph())
    assert dot.count("subgraph cluster_") == 3
    for group in ("default", "group_03", "group_04"):
        assert f'label="slot sharing group: {group}";' in dot
    assert 'v1 -> v2 [label="FORWARD\\nPOINTWISE"];' in dot
    assert 'v2 -> v3 [label="FORWARD\\nPOINTWISE"];' in dot


def test_render_dot_escapes_quotes_in_names():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1]).map(lambda v: v).name('say "hi"').print()
    dot = render_dot(env.get_job_graph('job "q"'))
    assert dot.startswith('digraph "job \\"q\\"" {')
    assert 'say \\"hi\\"' in dot
