"""Slot sharing groups break chains (seed 002's `slotSharingGroupTest`, in PyFlink's API).

    python examples/slot_sharing.py        # or: fluvial plan examples/slot_sharing.py

map → filter("group_03") → map → filter("group_04") → map → print. An operator without a group takes its
input's, so the first map stays in "default" with the source, the second map joins "group_03" and the last map
and the print join "group_04". Operators of different groups never chain, so the job has three tasks, one per
group; a job needs, per group, as many slots as the group's highest parallelism: here 1 + 1 + 1 = 3.
The plan is printed before the job runs.
"""

from fluvial.common import Types
from fluvial.datastream import StreamExecutionEnvironment
from fluvial.graph.plan_render import render_text

LINES = [
    "a river begins as a rumour in the hills",
    "the seep becomes a trickle",
    "the trickle a rill",
    "the rill a brook",
    "and the brook begins to call itself a stream",
]


def build(env: StreamExecutionEnvironment) -> None:
    text = env.from_collection(LINES, type_info=Types.STRING())
    mapped = text.map(lambda value: value, output_type=Types.STRING())
    filtered = mapped.filter(lambda value: True).slot_sharing_group("group_03")
    bb = filtered.map(lambda value: value, output_type=Types.STRING())
    cc = bb.filter(lambda value: True).slot_sharing_group("group_04")
    dd = cc.map(lambda value: value.upper(), output_type=Types.STRING())
    dd.print()


def main() -> None:
    # The seed runs on `createLocalEnvironment(1, ...)`: parallelism 1, so only the groups break chains.
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    build(env)
    print(render_text(env.get_job_graph("slot sharing groups")))
    env.execute("slot sharing groups")


if __name__ == "__main__":
    main()
