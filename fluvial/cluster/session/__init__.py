"""The session cluster (Flink's standalone session): a JobManager process — the SessionDispatcher, the REST API
and dashboard — and TaskManager processes that outlive the jobs they run, several jobs at once.

Modules: `slot_pool` (who holds which slot, who waits), `session_job` (one job from submission to archive),
`session_dispatcher` (SessionDispatcher), `cluster` (SessionCluster: the JobManager's parts, started and stopped in
order; its REST API comes in as a `WebFront`, since the web layer sits above), `cluster_file` (~/.fluvial/cluster.json); the client side:
`rest_client` (Flink's REST API over HTTP), `remote_executor` (`execution.target: remote`), `remote_job_client`
(a JobClient over REST). The JobManager process
itself, which puts the web layer on the cluster, is `fluvial.cli.jobmanager`.
"""
