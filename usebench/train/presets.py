"""A method's presets: its config built from one of them plus overrides, and the contract check that every method
declares the presets the suite names (:data:`PRESET_NAMES`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from usebench.errors import ConfigError
from usebench.train.config import TrainConfig, build_config, parse_overrides

if TYPE_CHECKING:
    from usebench.train.plugin import Method

PRESET_NAMES = ("paper", "official", "smoke")


def method_config(method: Method, preset: str | None, overrides: Mapping[str, Any] | Sequence[str] | None,
                  values: Mapping[str, Any]) -> TrainConfig:
    """``method.Config`` from ``preset`` (default ``method.default_preset``) plus ``overrides`` (a dict or ``["k=v"]``
    strings) and then ``values``. Unknown preset names and keys raise ConfigError."""
    merged: dict[str, Any] = {}
    if overrides is not None:
        merged.update(parse_overrides(method.Config, list(overrides)) if _is_str_seq(overrides) else overrides)
    merged.update(values)
    return build_config(method.Config, method.presets, preset or method.default_preset, merged)


def _is_str_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(isinstance(i, str) for i in x)


def check_presets(method: Method) -> None:
    """The contract check of a method's presets: those of :data:`PRESET_NAMES` exist, every preset builds a valid
    config, and every note belongs to a preset."""
    missing = [p for p in PRESET_NAMES if p not in method.presets]
    if missing:
        raise ConfigError(f"method {method.name!r} lacks presets {missing}")
    for p in method.presets:
        method.config(p)
    stray = [p for p in method.preset_notes if p not in method.presets]
    if stray:
        raise ConfigError(f"method {method.name!r} has notes for unknown presets {stray}")
