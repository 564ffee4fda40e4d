"""The runtime operators: what a JobVertex's chain is made of, one module per family.

`base` is the contract every operator keeps (lifecycle, inputs, checkpoint hooks, and what the task's metrics
need to know of it); an operator author starts there. Families: `basic` (map, filter, flat_map, the keyed
running reduce, timestamp assignment), `fused` (a run of stateless operators executed as one loop), `process`
(process functions, one and two inputs), `window` (+ `window_state`, `window_contexts`), `async_wait`
(+ `async_queue`, `async_loop`), `broadcast`, `sink`; `operator_state` and `runtime_context` are what user
functions see of their operator.

May import: `common`, `datastream` (the vocabulary a job is described in: specs, function interfaces, state
descriptors), `metrics`, `state`, and the task machinery beneath it in `runtime` (records, output, timers,
watermarks). Never `cluster`, `web` or `cli`; the task machinery (`runtime.task`, `runtime.chain`) imports
operators, not the other way round.
"""
