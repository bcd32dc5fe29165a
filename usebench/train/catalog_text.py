"""What `bench methods` prints for a method: its presets with what they change and their notes, then its defaults or a
preset's resolved values."""
from __future__ import annotations

import dataclasses

from usebench.train.config import PRECISION, TrainConfig
from usebench.train.plugin import Method

# The fields shown beside a method's own (those its Config adds to TrainConfig).
KEY_FIELDS = ("model", "pooling", "max_length", "batch_size", "max_steps", "epochs", "lr", "optimizer", "scheduler")


def describe_method(method: Method, all_fields: bool = False, preset: str | None = None) -> list[str]:
    """Lines for `bench methods`: presets with what they change (and their notes), then defaults (method-specific
    + key fields); with ``preset``, that preset's resolved values of the same fields instead of the defaults."""
    lines = [f"{method.name}: {method.description} (default preset: {method.default_preset})"]
    for name, values in method.presets.items():
        shown = " ".join(f"{k}={v}" for k, v in values.items()) or "(class defaults)"
        lines.append(f"  preset {name:<9} {shown}")
        if name in method.preset_notes:
            lines.append(f"    note: {method.preset_notes[name]}")
    own = {f.name for f in dataclasses.fields(method.Config)} - {f.name for f in dataclasses.fields(TrainConfig)}
    names = [f.name for f in dataclasses.fields(method.Config)
             if all_fields or f.name in own or f.name in KEY_FIELDS or f.name in ("eps", "dropout", "dev_task", "amp")]
    if preset is None:
        lines.append("  defaults " + " ".join(f"{n}={getattr(method.Config(), n)!r}" for n in names))
    elif preset in method.presets:
        cfg = method.config(preset)
        lines.append(f"  {preset} resolved: eval_pooling={method.eval_pooling(cfg)!r} "
                     + " ".join(f"{n}={getattr(cfg, n)!r}" for n in names))
        lines.append(f"  {preset} trains in: {PRECISION[cfg.amp]} (amp={cfg.amp!r})")
    return lines
