"""Render a JobGraph for people and tools: plain text, JSON and Graphviz DOT.

Pure functions from a finished JobGraph to a string; nothing here runs or changes a plan. The text form answers
the questions a user asks of a plan — which operators share a task, where the data is reshuffled, *why* two
operators did not chain (the ChainVerdict of the edge), and how many slots the job will ask for (DESIGN 2.2).
"""

from __future__ import annotations

import json
from typing import Any

from fluvial.graph.job_graph import JobEdge, JobGraph, JobVertex


def render_text(job_graph: JobGraph) -> str:
    """One block per vertex in topological order, then the edges, then the slot arithmetic."""
    lines = [f"Job: {job_graph.job_name}", "", "Vertices:"]
    for vertex in job_graph.vertices:
        lines.extend(_vertex_lines(vertex))
    lines.append("")
    lines.append("Edges:")
    if not job_graph.edges:
        lines.append("  (none: the whole job is one chain)")
    names = {vertex.id: vertex.name for vertex in job_graph.vertices}
    for edge in _ordered_edges(job_graph):
        lines.append(
            f"  [{edge.source}] {names[edge.source]} → [{edge.target}] {names[edge.target]}: "
            f"{_ship_strategy(edge)}, {edge.distribution_pattern.value}"
        )
        lines.append(f"      not chained: {edge.chain_break.value}")
    lines.append("")
    lines.append(f"slots required: {job_graph.required_slots()} ({_group_needs(job_graph)})")
    return "\n".join(lines) + "\n"


def render_json(job_graph: JobGraph) -> str:
    """A stable, tool-friendly document: job name, vertices, edges and slot needs."""
    document = {
        "job_name": job_graph.job_name,
        "vertices": [_vertex_dict(vertex) for vertex in job_graph.vertices],
        "edges": [_edge_dict(edge) for edge in _ordered_edges(job_graph)],
        "slot_sharing_groups": job_graph.slot_sharing_groups(),
        "required_slots": job_graph.required_slots(),
    }
    return json.dumps(document, indent=2) + "\n"


def render_dot(job_graph: JobGraph) -> str:
    """A Graphviz digraph: a box per vertex listing its chained operators, edges labelled by ship strategy.

    Vertices of one slot sharing group are drawn inside one cluster, so the slot picture is visible too.
    """
    lines = [
        f"digraph {_dot_quote(job_graph.job_name)} {{",
        "  rankdir=LR;",
        '  node [shape=box, fontname="Helvetica"];',
    ]
    groups: dict[str, list[JobVertex]] = {}
    for vertex in job_graph.vertices:
        groups.setdefault(vertex.slot_sharing_group, []).append(vertex)
    for index, (group, vertices) in enumerate(groups.items()):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f"    label={_dot_quote(f'slot sharing group: {group}')};")
        lines.append("    style=dashed;")
        for vertex in vertices:
            lines.append(f"    v{vertex.id} [label={_dot_quote(_dot_vertex_label(vertex))}];")
        lines.append("  }")
    for edge in _ordered_edges(job_graph):
        label = _dot_quote(f"{_ship_strategy(edge)}\n{edge.distribution_pattern.value}", line_end="\\n")
        lines.append(f"  v{edge.source} -> v{edge.target} [label={label}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- pieces -------------------------------------------------------------------------------------------------------


def _vertex_lines(vertex: JobVertex) -> list[str]:
    lines = [f"  [{vertex.id}] {vertex.name}"]
    lines.append(f"      parallelism: {vertex.parallelism}")
    lines.append(f"      slot sharing group: {vertex.slot_sharing_group}")
    if vertex.co_location_group:
        lines.append(f"      co-location group: {vertex.co_location_group}")
    if len(vertex.operator_names) > 1:
        lines.append("      chained operators:")
        lines.extend(f"        - {name}" for name in vertex.operator_names)
    return lines


def _vertex_dict(vertex: JobVertex) -> dict[str, Any]:
    return {
        "id": vertex.id,
        "name": vertex.name,
        "operators": list(vertex.operator_names),
        "parallelism": vertex.parallelism,
        "max_parallelism": vertex.max_parallelism,
        "slot_sharing_group": vertex.slot_sharing_group,
        "co_location_group": vertex.co_location_group,
        "inputs": sorted({edge.source for edge in vertex.inputs}),
    }


def _edge_dict(edge: JobEdge) -> dict[str, Any]:
    return {
        "source": edge.source,
        "target": edge.target,
        "ship_strategy": edge.ship_strategy,
        "distribution_pattern": edge.distribution_pattern.value,
        "chain_break": edge.chain_break.name,
        "chain_break_reason": edge.chain_break.value,
        "side_output": edge.output_tag.tag_id if edge.output_tag is not None else None,
    }


def _ordered_edges(job_graph: JobGraph) -> list[JobEdge]:
    """Edges in the vertices' topological order, so every rendering reads from sources to sinks."""
    position = {vertex.id: index for index, vertex in enumerate(job_graph.vertices)}
    return sorted(job_graph.edges, key=lambda edge: (position[edge.source], position[edge.target], edge.type_number))


def _ship_strategy(edge: JobEdge) -> str:
    if edge.output_tag is not None:
        return f"{edge.ship_strategy} (side output '{edge.output_tag.tag_id}')"
    return edge.ship_strategy


def _group_needs(job_graph: JobGraph) -> str:
    return ", ".join(f"{group}: {need}" for group, need in job_graph.slot_sharing_groups().items())


def _dot_vertex_label(vertex: JobVertex) -> str:
    header = f"[{vertex.id}] parallelism {vertex.parallelism}"
    if vertex.co_location_group:
        header += f", co-located '{vertex.co_location_group}'"
    return "\n".join([header, *vertex.operator_names])


def _dot_quote(text: str, line_end: str = "\\l") -> str:
    """A DOT string literal. Multi-line labels end each line with `\\l` (left-justified) by default, the last
    line included, as Graphviz wants; `\\n` centres them."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if "\n" in escaped:
        escaped = escaped.replace("\n", line_end) + (line_end if line_end == "\\l" else "")
    return f'"{escaped}"'
