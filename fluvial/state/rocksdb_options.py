"""Flink's RocksDB option profiles (`PredefinedOptions`) applied to rocksdict's `Options`.

A profile is data: the RocksDB settings Flink's profile of the same name sets (Flink's
`PredefinedOptions`, keyed by its `RocksDBConfigurableOptions`), applied on top of rocksdict's defaults when a
subtask opens its database. DEFAULT sets nothing, as Flink's. The WAL stays off and fsync is never used
whatever the profile (Flink's fixed choices: recovery comes from checkpoints, not from the local disk).
SPINNING_DISK_OPTIMIZED_HIGH_MEM's 256 MB block cache is per subtask database (fluvial has no managed memory
to share one cache between them, as Flink's default does); the cache takes memory only as it fills.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocksdict import BlockBasedOptions, Cache, DBCompactionStyle, Options

__all__ = ["PROFILES", "apply_profile"]

_MB = 1024 * 1024

# profile name -> {setting: value}; the setting names are Flink's `state.backend.rocksdb.*` suffixes.
PROFILES: dict[str, dict[str, Any]] = {
    "DEFAULT": {},
    "SPINNING_DISK_OPTIMIZED": {
        "compaction.style": "LEVEL",
        "compaction.level.use-dynamic-size": True,
        "thread.num": 4,
        "files.open": -1,
    },
    "SPINNING_DISK_OPTIMIZED_HIGH_MEM": {
        "block.cache-size": 256 * _MB,
        "block.blocksize": 128 * 1024,
        "compaction.level.use-dynamic-size": True,
        "thread.num": 4,
        "compaction.level.max-size-level-base": 1024 * _MB,
        "files.open": -1,
        "writebuffer.count": 4,
        "writebuffer.number-to-merge": 3,
        "compaction.level.target-file-size-base": 256 * _MB,
        "writebuffer.size": 64 * _MB,
        "use-bloom-filter": True,
    },
    "FLASH_SSD_OPTIMIZED": {
        "thread.num": 4,
        "files.open": -1,
    },
}

_BLOOM_BITS_PER_KEY = 10  # Flink's state.backend.rocksdb.bloom-filter.bits-per-key default
_BLOOM_BLOCK_BASED = False  # Flink's state.backend.rocksdb.bloom-filter.block-based-mode default

_COMPACTION_STYLES = {
    "LEVEL": DBCompactionStyle.level,
    "UNIVERSAL": DBCompactionStyle.universal,
    "FIFO": DBCompactionStyle.fifo,
}

_DB_SETTERS: dict[str, Callable[[Options, Any], None]] = {
    "compaction.style": lambda options, value: options.set_compaction_style(_COMPACTION_STYLES[value]()),
    "compaction.level.use-dynamic-size": Options.set_level_compaction_dynamic_level_bytes,
    "thread.num": Options.set_max_background_jobs,
    "files.open": Options.set_max_open_files,
    "compaction.level.max-size-level-base": Options.set_max_bytes_for_level_base,
    "writebuffer.count": Options.set_max_write_buffer_number,
    "writebuffer.number-to-merge": Options.set_min_write_buffer_number_to_merge,
    "compaction.level.target-file-size-base": Options.set_target_file_size_base,
    "writebuffer.size": Options.set_write_buffer_size,
}
_TABLE_SETTINGS = ("block.cache-size", "block.blocksize", "use-bloom-filter")


def apply_profile(options: Options, profile: str) -> None:
    """Set `profile`'s settings on `options` (before the database opens). KeyError for an unknown profile."""
    settings = PROFILES[profile]
    for name, value in settings.items():
        setter = _DB_SETTERS.get(name)
        if setter is not None:
            setter(options, value)
    if any(name in settings for name in _TABLE_SETTINGS):
        table = BlockBasedOptions()
        if "block.cache-size" in settings:
            table.set_block_cache(Cache(settings["block.cache-size"]))
        if "block.blocksize" in settings:
            table.set_block_size(settings["block.blocksize"])
        if settings.get("use-bloom-filter"):
            table.set_bloom_filter(_BLOOM_BITS_PER_KEY, _BLOOM_BLOCK_BASED)
        options.set_block_based_table_factory(table)
