"""Plans, from the API's transformations to the JobGraph (DESIGN 2.1, 2.2): pure plan -> plan functions, no
threads, no I/O.

`translate.py` turns transformations into a StreamGraph (`stream_graph.py`); `chaining.py` decides, one named
predicate per rule, which edges chain; `job_graph.py` builds JobVertices, JobEdges and slot requirements;
`partitioners.py` describes how edges distribute; `typed_outputs.py` applies declared output types;
`batch_mode.py` plans BATCH execution; `plan_render.py` renders a plan with its chain verdicts.

May import `common`, `datastream` and `metrics`; never `state`, `runtime` or anything above.
"""
