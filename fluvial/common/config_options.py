"""ConfigOptions and ConfigOption (PyFlink `pyflink.common.config_options`): typed descriptions of a
configuration key, built fluently as in Flink:

    ConfigOptions.key("tmp.dir").string_type().default_value("/tmp")
    ConfigOptions.key("application.parallelism").int_type().no_default_value()

A ConfigOption is immutable; `with_description`, `with_deprecated_keys` and `with_fallback_keys` return new
options. `Configuration.get_value(option)` reads one with its type, its fallback keys and its default.
(The engine's own table of the keys it understands is `fluvial.common.configuration.OPTIONS`.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["ConfigOption", "ConfigOptions"]


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"expected true or false, got {raw!r}")


def _parse_map(raw: str) -> dict[str, str]:
    """Flink's map syntax: `k1:v1,k2:v2`."""
    result: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, value = pair.partition(":")
        if not sep:
            raise ValueError(f"expected key:value pairs separated by commas, got {raw!r}")
        result[key.strip()] = value.strip()
    return result


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One configuration key with its type, default and description."""

    _key: str
    _parse: Callable[[str], Any]
    _default: Any = None
    _description: str = ""
    _fallback_keys: tuple[str, ...] = ()
    _deprecated_keys: tuple[str, ...] = ()

    def key(self) -> str:
        """The option's key."""
        return self._key

    def has_default_value(self) -> bool:
        """Whether the option has a default."""
        return self._default is not None

    def default_value(self) -> Any:
        """The option's default, or None."""
        return self._default

    def description(self) -> str:
        """The option's description."""
        return self._description

    def with_description(self, description: str) -> ConfigOption[T]:
        """A copy of this option with a description.

        Args:
            description: What the option does.

        Returns:
            The new option.
        """
        return replace(self, _description=str(description))

    def with_fallback_keys(self, *fallback_keys: str) -> ConfigOption[T]:
        """A copy of this option that, when its key is not set, reads these keys in order.

        Args:
            *fallback_keys: The keys.

        Returns:
            The new option.
        """
        return replace(self, _fallback_keys=self._fallback_keys + tuple(fallback_keys))

    def with_deprecated_keys(self, *deprecated_keys: str) -> ConfigOption[T]:
        """A copy of this option that also reads these old names of its key.

        Args:
            *deprecated_keys: The keys.

        Returns:
            The new option.
        """
        return replace(self, _deprecated_keys=self._deprecated_keys + tuple(deprecated_keys))

    def has_fallback_keys(self) -> bool:
        """Whether the option has fallback keys."""
        return bool(self._fallback_keys)

    def fallback_keys(self) -> list[str]:
        """The option's fallback keys."""
        return list(self._fallback_keys)

    def deprecated_keys(self) -> list[str]:
        """The option's deprecated keys."""
        return list(self._deprecated_keys)

    def lookup_keys(self) -> tuple[str, ...]:
        """The key, then its fallback keys, then its deprecated keys: the order Flink reads them in."""
        return (self._key, *self._fallback_keys, *self._deprecated_keys)

    def parse(self, raw: str) -> T:
        """The typed value of a raw string, by the option's type.

        Args:
            raw: The string.

        Returns:
            The value.

        Raises:
            ValueError: `raw` is not a value of the option's type.
        """
        try:
            return self._parse(raw)
        except ValueError as error:
            raise ValueError(
                f"configuration '{self._key}' has the value {raw!r}, which is not valid: {error}"
            ) from None

    def __str__(self) -> str:
        return f"Key: '{self._key}' , default: {self._default} (fallback keys: {list(self._fallback_keys)})"


class TypedConfigOptionBuilder(Generic[T]):
    def __init__(self, key: str, parse: Callable[[str], Any]) -> None:
        self._key = key
        self._parse = parse

    def default_value(self, value: T) -> ConfigOption[T]:
        return ConfigOption(self._key, self._parse, value)

    def no_default_value(self) -> ConfigOption[T]:
        return ConfigOption(self._key, self._parse, None)


class OptionBuilder:
    def __init__(self, key: str) -> None:
        self._key = key

    def boolean_type(self) -> TypedConfigOptionBuilder[bool]:
        return TypedConfigOptionBuilder(self._key, _parse_bool)

    def int_type(self) -> TypedConfigOptionBuilder[int]:
        return TypedConfigOptionBuilder(self._key, int)

    def long_type(self) -> TypedConfigOptionBuilder[int]:
        return TypedConfigOptionBuilder(self._key, int)

    def float_type(self) -> TypedConfigOptionBuilder[float]:
        return TypedConfigOptionBuilder(self._key, float)

    def double_type(self) -> TypedConfigOptionBuilder[float]:
        return TypedConfigOptionBuilder(self._key, float)

    def string_type(self) -> TypedConfigOptionBuilder[str]:
        return TypedConfigOptionBuilder(self._key, str)

    def map_type(self) -> TypedConfigOptionBuilder[dict]:
        return TypedConfigOptionBuilder(self._key, _parse_map)


class ConfigOptions:
    """Starts an option: `ConfigOptions.key(name).<type>_type().default_value(v)`."""

    @staticmethod
    def key(key: str) -> OptionBuilder:
        """Start building an option for `key`; choose its type next (`int_type()`, `string_type()`, ...).

        Args:
            key: The configuration key.

        Returns:
            The option builder.

        Example:
            ```python
            option = ConfigOptions.key("my-app.threshold").int_type().default_value(10)
            ```
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"a configuration key must be a non-empty string, got {key!r}")
        return OptionBuilder(key)
