"""Key -> key group -> subtask: the one mapping every process of a job must agree on.

Keyed state is partitioned into `max_parallelism` key groups. A key belongs to one key group for the life of
a job (savepoints included), and each parallel subtask owns a contiguous range of key groups. Rescaling moves
whole key groups between subtasks, never single keys, which is why max parallelism cannot change once a job
has state.

Two subtasks in different processes (or one process before and after a restart) must put a key in the same
key group. Python's `hash()` of `str` and `bytes` is salted per process (PYTHONHASHSEED), so it is never used
for them here: `stable_hash` derives a hash from the key's value alone.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import zlib
from typing import Any

from fluvial.common.errors import InvalidJobError

DEFAULT_MAX_PARALLELISM = 128
UPPER_BOUND_MAX_PARALLELISM = 32768

_MASK32 = 0xFFFFFFFF
_NAN_HASH = 0x7FC00000  # any fixed value: NaN's own hash() is identity-based since Python 3.10
_NONE_HASH = 0x9E3779B9  # hash(None) is address-based before Python 3.12, so it is not stable
_TUPLE_SEED = 0x345678
_TUPLE_MULTIPLIER = 1000003
_FROZENSET_SEED = 0x1B873593


def murmur_mix(h: int) -> int:
    """MurmurHash3's fmix32 finalizer: every input bit flips about half of the output bits.

    Without it, consecutive integer keys (whose stable hash is the integer itself) would fill key groups
    round-robin and, worse, a job keyed by multiples of 128 would put every key in key group 0.
    The result is an unsigned 32-bit int, so it is never negative.
    """
    h &= _MASK32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def stable_hash(key: Any) -> int:
    """An unsigned 32-bit hash of `key` that is the same in every process and every run.

    Rules, fastest first:
    - int, bool, float, complex, Decimal, Fraction: Python's numeric hash, which is unsalted, so `1`, `True`
      and `1.0` (equal as dict keys) share a hash. NaN gets a fixed hash (its `hash()` is identity-based).
    - None: a fixed constant (`hash(None)` depends on an address before Python 3.12).
    - str: CRC-32 of its UTF-8 encoding (lone surrogates allowed); bytes: CRC-32 of the bytes.
    - tuple (namedtuples too): the element hashes combined in order; frozenset: combined order-independently.
    - Row: its field names, values and kind, as a tuple (what Row's `==` compares).
    - dataclass instances: the class's qualified name and the fields that take part in `==`, as a tuple.
    - anything else: CRC-32 of `pickle.dumps(key, protocol=5)`.

    Hazard of the last rule: it is only as stable as the pickle. An object whose pickle holds a set or a dict
    built in another order (set order follows the salted str hash), or whose `__eq__` ignores some of the
    pickled attributes, may land in different key groups in different processes even though its copies
    compare equal. Prefer str, int or tuple keys; they are also the fastest.

    Raises InvalidJobError for an unhashable key (list, dict, set, bytearray, a mutable dataclass): such a key
    could not index keyed state either.
    """
    t = type(key)
    if t is int:
        return hash(key) & _MASK32
    if t is str:
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    try:
        return _slow_hash(key)
    except _UnhashablePart as part:
        raise InvalidJobError(_unhashable_message(key, part.value)) from None


class _UnhashablePart(Exception):
    """Internal: carries the (possibly nested) value that could not be hashed up to `stable_hash`."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def _unhashable_message(key: Any, part: Any) -> str:
    text = repr(key)
    if len(text) > 80:
        text = text[:77] + "..."
    inner = "" if part is key else f" (it contains a {type(part).__name__})"
    return (
        f"key_by returned an unhashable key of type {type(key).__name__} ({text}){inner}; "
        "return a tuple or a string instead"
    )


def _slow_hash(key: Any) -> int:
    """Every rule of `stable_hash` except the int and str fast paths; recursive for tuples and frozensets."""
    t = type(key)
    if t is int or t is bool:
        return hash(key) & _MASK32
    if t is str:
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if key is None:
        return _NONE_HASH
    if t is bytes:
        return zlib.crc32(key)
    if t is tuple:
        return _tuple_hash(key)
    if t is float:
        return _NAN_HASH if math.isnan(key) else hash(key) & _MASK32
    if isinstance(key, (list, dict, set, bytearray)):
        raise _UnhashablePart(key)
    # Subclasses of the builtins compare equal to plain values, so they must hash like them.
    if isinstance(key, int):  # IntEnum, bool subclasses: int's hash, not Enum's salted name hash
        return int.__hash__(key) & _MASK32
    if isinstance(key, str):  # str-mixin enums
        return zlib.crc32(str.encode(key, "utf-8", "surrogatepass"))
    if isinstance(key, bytes):
        return zlib.crc32(key)
    if isinstance(key, tuple):
        return _tuple_hash(key)
    if isinstance(key, frozenset):
        return _frozenset_hash(key)
    if isinstance(key, (float, complex)) or type(key).__module__ in ("decimal", "fractions"):
        return _number_hash(key)
    from fluvial.common.row import Row  # lazily: start-up time of small jobs

    if isinstance(key, Row):
        fields = getattr(key, "_fields", None)
        return _tuple_hash(("Row", None if fields is None else tuple(fields), key.get_row_kind().value, *key))
    return _object_hash(key)


def _tuple_hash(key: tuple) -> int:
    acc = _TUPLE_SEED ^ len(key)
    for element in key:
        acc = ((acc * _TUPLE_MULTIPLIER) ^ _slow_hash(element)) & _MASK32
    return acc


def _frozenset_hash(key: frozenset) -> int:
    # Summing mixed element hashes is order-independent: iteration order of a frozenset of strings differs
    # between processes.
    acc = _FROZENSET_SEED ^ len(key)
    for element in key:
        acc += murmur_mix(_slow_hash(element))
    return acc & _MASK32


def _number_hash(key: Any) -> int:
    try:
        if key != key:  # NaN in any numeric type
            return _NAN_HASH
        return hash(key) & _MASK32
    except (TypeError, ArithmeticError):  # a signalling Decimal NaN refuses to be compared or hashed
        return _NAN_HASH


def _object_hash(key: Any) -> int:
    try:
        hash(key)
    except TypeError:
        raise _UnhashablePart(key) from None
    if dataclasses.is_dataclass(key) and not isinstance(key, type):
        fields = tuple(getattr(key, f.name) for f in dataclasses.fields(key) if f.compare)
        return _tuple_hash((type(key).__qualname__, *fields))
    try:
        data = pickle.dumps(key, protocol=5)
    except Exception as error:
        raise InvalidJobError(
            f"key_by returned a key of type {type(key).__name__} that cannot be hashed stably across "
            f"processes (pickling it failed: {error}); return a tuple, a string or an int instead"
        ) from error
    return zlib.crc32(data)


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    """The key group of `key`, in `range(max_parallelism)`; stable across processes and runs."""
    return murmur_mix(stable_hash(key)) % max_parallelism


def compute_operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """The subtask that owns `key_group`: the inverse of `key_group_range_for_operator`."""
    return key_group * parallelism // max_parallelism


def key_group_range_for_operator(max_parallelism: int, parallelism: int, operator_index: int) -> range:
    """The contiguous key groups owned by subtask `operator_index`.

    Subtask i owns [ceil(i * maxP / p), ceil((i + 1) * maxP / p)). The ranges of all subtasks partition
    range(maxP), each is non-empty when p <= maxP, and `compute_operator_index_for_key_group` maps every key
    group of range i back to i. Integer arithmetic only: float ceil would misplace boundaries at 32768.
    """
    if not 0 <= operator_index < parallelism:
        raise ValueError(f"operator index {operator_index} is outside range(0, {parallelism})")
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    stop = ((operator_index + 1) * max_parallelism + parallelism - 1) // parallelism
    return range(start, stop)


def assign_key_to_parallel_operator(key: Any, max_parallelism: int, parallelism: int) -> int:
    """The subtask index that processes `key`: the hash partitioner's rule after `key_by`."""
    key_group = murmur_mix(stable_hash(key)) % max_parallelism
    return key_group * parallelism // max_parallelism


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default: parallelism * 1.5 rounded up to a power of two, kept within [128, 32768].

    The headroom lets a job be rescaled up later without changing max parallelism (which would lose state).
    """
    if parallelism < 1:
        raise InvalidJobError(f"parallelism is {parallelism}: it must be 1 or more")
    wanted = parallelism + parallelism // 2
    power_of_two = 1 << (wanted - 1).bit_length()
    return min(max(power_of_two, DEFAULT_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


def validate_parallelism(parallelism: int, max_parallelism: int | None, what: str) -> int:
    """Check an operator's parallelism and max parallelism; return the effective max parallelism.

    `max_parallelism=None` means "not set": the default for this parallelism is used. `what` names the operator
    (or the job) in the messages.
    """
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise InvalidJobError(f"parallelism of {what!r} is {parallelism!r}: set_parallelism(...) to 1 or more")
    if max_parallelism is None:
        if parallelism > UPPER_BOUND_MAX_PARALLELISM:
            raise InvalidJobError(
                f"parallelism of {what!r} is {parallelism}, above the largest supported max parallelism "
                f"{UPPER_BOUND_MAX_PARALLELISM}: lower it to at most {UPPER_BOUND_MAX_PARALLELISM}"
            )
        return default_max_parallelism(parallelism)
    if isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int) or max_parallelism < 1:
        raise InvalidJobError(
            f"set_max_parallelism(...) of {what!r} is {max_parallelism!r}: use a value from 1 to "
            f"{UPPER_BOUND_MAX_PARALLELISM}"
        )
    if max_parallelism > UPPER_BOUND_MAX_PARALLELISM:
        raise InvalidJobError(
            f"set_max_parallelism(...) of {what!r} is {max_parallelism}, above the upper bound "
            f"{UPPER_BOUND_MAX_PARALLELISM}: use at most {UPPER_BOUND_MAX_PARALLELISM}"
        )
    if max_parallelism < parallelism:
        raise InvalidJobError(
            f"set_max_parallelism(...) of {what!r} is {max_parallelism}, below its parallelism {parallelism}: "
            f"raise max parallelism to at least {parallelism}"
        )
    return max_parallelism
