"""fluvial.web: Flink's REST API and a dashboard over a DispatcherView (`rest.py`), served by uvicorn
(`server.py`); for embedded jobs, `embedded.py` (`rest.port`, `metrics.reporter.prom.port`); for a session
cluster, `session.py` (the WebFront its JobManager process hands the SessionCluster)."""
