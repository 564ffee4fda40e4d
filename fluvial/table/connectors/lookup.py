"""What every lookup source shares (Flink's LookupOptions): the `lookup.cache` options and the partial cache.

`'lookup.cache' = 'PARTIAL'` keeps, per lookup-join subtask, the rows each key looked up returned (also "no
rows", unless `lookup.partial-cache.cache-missing-key` is false): at most `lookup.partial-cache.max-rows` keys,
the least recently used going first, each for at most `expire-after-write` since it was looked up and
`expire-after-access` since it was last used. A cached key is not looked up again until it goes, so the join may
see a dimension row older than the table's: a trade of freshness for fewer queries, as in Flink.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fluvial.table.environment_settings import parse_duration_millis
from fluvial.table.errors import ValidationException

__all__ = ["LOOKUP_CACHE_OPTIONS", "LookupCacheSpec", "LookupFunction", "PartialCache", "lookup_cache_spec"]

_PARTIAL = (
    "lookup.partial-cache.max-rows",
    "lookup.partial-cache.expire-after-write",
    "lookup.partial-cache.expire-after-access",
    "lookup.partial-cache.cache-missing-key",
)
# Flink's deprecated spellings → the options they became
_DEPRECATED = {
    "lookup.cache.max-rows": "lookup.partial-cache.max-rows",
    "lookup.cache.ttl": "lookup.partial-cache.expire-after-write",
    "lookup.cache.caching-missing-key": "lookup.partial-cache.cache-missing-key",
}
LOOKUP_CACHE_OPTIONS = frozenset({"lookup.cache", *_PARTIAL, *_DEPRECATED})


class LookupFunction(Protocol):
    """A connector's lookup (built at planning, picklable): `open()` on the task, then `lookup(key)` — the rows
    (lists of the table's physical columns) whose lookup key columns equal `key` — then `close()`."""

    cache: LookupCacheSpec | None

    def open(self) -> None: ...

    def lookup(self, key: tuple) -> list[list]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class LookupCacheSpec:
    """A partial cache's limits (None: no limit of that kind)."""

    max_rows: int | None = None
    expire_after_write_ms: int | None = None
    expire_after_access_ms: int | None = None
    cache_missing_key: bool = True


def lookup_cache_spec(options: dict[str, str], connector: str) -> LookupCacheSpec | None:
    """The cache `options` ask for (None: `lookup.cache` NONE), or a ValidationException naming the option."""
    options = dict(options)
    for old, new in _DEPRECATED.items():
        if old in options:
            options.setdefault(new, options[old])
            options.setdefault("lookup.cache", "PARTIAL")
    mode = options.get("lookup.cache", "NONE").upper()
    given = [k for k in _PARTIAL if k in options]
    if mode == "NONE":
        if given:
            raise ValidationException(
                f"'{given[0]}' configures the partial lookup cache of '{connector}', which is off; set "
                "'lookup.cache' = 'PARTIAL' or remove the option"
            )
        return None
    if mode != "PARTIAL":
        raise ValidationException(
            f"Could not parse value '{options['lookup.cache']}' for key 'lookup.cache': it is NONE or PARTIAL"
        )
    if not any(k in options for k in _PARTIAL[:3]):
        raise ValidationException(
            "A partial lookup cache needs at least one of 'lookup.partial-cache.max-rows', "
            "'lookup.partial-cache.expire-after-write' and 'lookup.partial-cache.expire-after-access'"
        )
    max_rows = options.get(_PARTIAL[0])
    if max_rows is not None and (not max_rows.strip().isdigit() or int(max_rows) < 1):
        raise ValidationException(f"'lookup.partial-cache.max-rows' must be a positive integer, got '{max_rows}'")
    write, access = options.get(_PARTIAL[1]), options.get(_PARTIAL[2])
    missing = options.get(_PARTIAL[3], "true").lower()
    if missing not in ("true", "false"):
        raise ValidationException(f"'lookup.partial-cache.cache-missing-key' is true or false, got '{missing}'")
    return LookupCacheSpec(
        int(max_rows) if max_rows is not None else None,
        parse_duration_millis(write) if write is not None else None,
        parse_duration_millis(access) if access is not None else None,
        missing == "true",
    )


class PartialCache:
    """The live cache of one subtask (module docstring); `clock` returns seconds (monotonic)."""

    def __init__(self, spec: LookupCacheSpec, clock: Callable[[], float] = time.monotonic) -> None:
        self._spec = spec
        self._clock = clock
        self._write_s = spec.expire_after_write_ms / 1000 if spec.expire_after_write_ms is not None else None
        self._access_s = spec.expire_after_access_ms / 1000 if spec.expire_after_access_ms is not None else None
        self._entries: OrderedDict[tuple, tuple[list, float, float]] = OrderedDict()

    def get(self, key: tuple) -> list | None:
        """The cached rows of `key` (maybe []), or None when it is not cached (or no longer)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        rows, written, accessed = entry
        now = self._clock()
        if (self._write_s is not None and now - written >= self._write_s) or (
            self._access_s is not None and now - accessed >= self._access_s
        ):
            del self._entries[key]
            return None
        if self._access_s is not None:
            self._entries[key] = (rows, written, now)
        self._entries.move_to_end(key)
        return rows

    def put(self, key: tuple, rows: list) -> None:
        if not rows and not self._spec.cache_missing_key:
            return
        now = self._clock()
        self._entries[key] = (rows, now, now)
        self._entries.move_to_end(key)
        if self._spec.max_rows is not None:
            while len(self._entries) > self._spec.max_rows:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def cached(function: Any) -> Any:
    """`function`'s cache as its spec says (None: none)."""
    spec = getattr(function, "cache", None)
    return PartialCache(spec) if spec is not None else None
