"""Keyed and operator state (DESIGN 2.3): the backend Protocol every operator's state goes through
(`backend.py`), the heap backend (`heap.py`, snapshots in `heap_snapshot.py`, TTL in `heap_ttl.py`), the
embedded RocksDB backend (`rocksdb*.py`: layout, native handles, incremental snapshots), state TTL (`ttl.py`),
snapshot handles (`snapshot.py`) and `factory.py`, which builds a backend from a job's StateBackend description.

Keyed state is partitioned into key groups, so a snapshot can be restored at another parallelism. May import
`common`, `datastream` (state descriptors, TTL config) and `metrics`; never the runtime that drives it.
"""
