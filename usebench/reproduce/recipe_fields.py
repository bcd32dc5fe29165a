"""Small typed readers of a recipe's TOML values (:mod:`usebench.reproduce.recipes`): every error names the file and
the key, and what was expected."""
from __future__ import annotations

import difflib
from typing import Any

from usebench.errors import ConfigError


def keys(value: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    """An unknown key is an error, with the closest known key as a hint."""
    for key in value:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}" + (hint(key, known) or f" (known: {', '.join(known)})"))


def keys_each(items: list[Any], known: tuple[str, ...], where: str) -> list[Any]:
    """Each item is a table with known keys only."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"{where}[{i}]: must be a table")
        keys(item, known, f"{where}[{i}]")
    return items


def hint(name: str, known: Any) -> str:
    """``; did you mean 'x'?`` for the closest known name, or nothing."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def str_value(value: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    """A string value ("" when absent and not required)."""
    if key not in value:
        if required:
            raise ConfigError(f"{where}: missing key {key!r}")
        return ""
    if not isinstance(value[key], str):
        raise ConfigError(f"{where}.{key}: expected a string, got {value[key]!r}")
    return value[key]


def int_value(value: dict[str, Any], key: str, where: str) -> int | None:
    """A positive integer, or None when absent."""
    v = value.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
        raise ConfigError(f"{where}.{key}: expected a positive integer, got {v!r}")
    return v


def list_value(value: dict[str, Any], key: str, where: str, required: bool = False) -> list[Any]:
    """A list value ([] when absent and not required)."""
    if key not in value:
        if required:
            raise ConfigError(f"{where}: missing key {key!r}")
        return []
    if not isinstance(value[key], list):
        raise ConfigError(f"{where}.{key}: expected a list, got {value[key]!r}")
    return value[key]


def table_value(value: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """A table value ({} when absent)."""
    v = value.get(key, {})
    if not isinstance(v, dict):
        raise ConfigError(f"{where}.{key}: expected a table")
    return v


def str_list(value: dict[str, Any], key: str, where: str, required: bool = False) -> list[str]:
    """A list of non-empty strings (non-empty itself when required)."""
    items = list_value(value, key, where, required)
    if required and not items:
        raise ConfigError(f"{where}.{key}: must not be empty")
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"{where}.{key}: expected non-empty strings, got {item!r}")
    return items


def int_list(value: dict[str, Any], key: str, where: str) -> list[int]:
    """A list of positive integers."""
    items = list_value(value, key, where)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise ConfigError(f"{where}.{key}: expected positive integers, got {item!r}")
    return items


def seeds(value: dict[str, Any], where: str) -> int | tuple[int, ...]:
    """``seeds``: a count (seeds 0..N-1) or a list of seeds, as `bench run --seeds` takes them."""
    seeds = value.get("seeds", 1)
    if isinstance(seeds, list):
        if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
            raise ConfigError(f"{where}.seeds: expected a count >= 1 or a list of seeds >= 0, got {seeds!r}")
        return tuple(seeds)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ConfigError(f"{where}.seeds: expected a count >= 1 or a list of seeds >= 0, got {seeds!r}")
    return seeds
