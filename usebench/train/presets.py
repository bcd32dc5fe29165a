"""The presets every method declares (:data:`PRESET_NAMES`), and the contract check of a method's preset table. A
config is built from a preset by ``Method.config`` (:func:`usebench.train.config.preset_config`)."""
from __future__ import annotations

from usebench.errors import ConfigError
from usebench.train.plugin import Method

PRESET_NAMES = ("paper", "official", "smoke")


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
