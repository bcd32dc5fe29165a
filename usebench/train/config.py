"""Training configuration: frozen dataclasses, named presets and typed ``--set key=value`` overrides.

Every method plugin declares one frozen dataclass that subclasses :class:`TrainConfig` and holds each of its
defaults once, with the source beside it. A run's config is ``Config(**{**preset, **overrides})``; an unknown
key or a value of the wrong type is a :class:`~usebench.errors.ConfigError` with a did-you-mean hint, never a
silent default.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from usebench.errors import ConfigError

Optimizer = Literal["adamw", "rmsprop", "bert_adam"]
Scheduler = Literal["constant", "linear", "warmup_constant", "piecewise"]
Amp = Literal["off", "bf16", "fp16", "auto"]  # see PRECISION

C = TypeVar("C", bound="TrainConfig")
# What each ``amp`` value trains in, on every device (`bench methods --preset` shows it; config.json records amp).
PRECISION = {"off": "fp32", "bf16": "bf16 autocast", "fp16": "fp16 autocast with dynamic loss scaling (as apex O1 / "
             "torch.cuda.amp / HF --fp16)", "auto": "bf16 autocast on a GPU, fp32 on the CPU"}
VALIDATION_LOSS = "loss"  # dev_metric: select by the loss on dev_corpus


@dataclass(frozen=True)
class TrainConfig:
    """Fields every method shares. Plugins subclass it, add their own fields and set defaults via presets.

    Step budget: ``max_steps`` optimizer steps; with ``epochs`` set, ``ceil(epochs * steps_per_epoch)`` steps,
    capped by ``max_steps`` when that is set too. The LR schedule is laid out over that budget; ``stop_at_step``
    ends the run earlier without changing the schedule (:func:`usebench.train.sampling.run_steps`). A subclass with its own ``__post_init__`` must call
    ``super().__post_init__()`` (it checks ``Literal`` fields and ranges).
    """

    model: str = "minilm"  # base checkpoint: alias, local dir or HF id; paper presets name bert-base-uncased
    max_length: int = 128  # training: tokens per sentence after truncation
    eval_max_length: int | None = None  # the export's max_seq_length (None: the base model's declared limit)
    batch_size: int = 8  # sentences (or pairs/rows, per method) per optimizer step and device
    max_steps: int | None = 1000  # optimizer steps; a cap when epochs is set
    epochs: float | None = None  # passes over the corpus (None: max_steps alone decides)
    # Stop after this many steps of the budget above, whose LR schedule is laid out over the whole budget: the
    # schedule truncated, not compressed (the CPU-scale recipe cuts a paper's 100K steps this way). 0 trains
    # nothing and exports the start (a step-0 counterpart). None: train the whole budget.
    stop_at_step: int | None = None
    lr: float = 3e-5  # peak learning rate (piecewise schedules multiply it by lr_factors)
    optimizer: Optimizer = "adamw"
    weight_decay: float = 0.0  # decoupled; never applied to biases and LayerNorm weights
    adam_betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8  # AdamW/RMSprop epsilon
    rmsprop_alpha: float = 0.99  # RMSprop smoothing (torch default; TF/Keras uses 0.9)
    scheduler: Scheduler = "constant"
    warmup_steps: int = 0  # linear warm-up steps (linear / warmup_constant)
    warmup_ratio: float = 0.0  # warm-up as a fraction of all steps (used when warmup_steps is 0)
    lr_milestones: tuple[int, ...] = ()  # piecewise: steps where the next factor starts
    lr_factors: tuple[float, ...] = ()  # piecewise: len(lr_milestones) + 1 multipliers of lr
    grad_clip: float | None = 1.0  # max global grad norm (None: no clipping)
    amp: Amp = "off"  # fp32 (the references' precision unless a preset says otherwise); bf16/fp16/auto: asked for
    pooling: str = "mean"  # the exported encoder's pooling (see usebench.eval.pooling.POOLERS)
    dropout: bool = True  # False: every dropout rate is 0, from the config on (backbone.load_backbone)
    max_chars: int = 4000  # longer corpus lines are clipped (tokenizers truncate at max_length anyway)
    log_every: int = 50  # steps per log.jsonl line (bookkeeping: BOOKKEEPING_KEYS)
    save_every: int = 1000  # steps per resumable train-state checkpoint (0: only at the end; bookkeeping)
    dev_task: str | None = None  # task whose dev split selects the best checkpoint (e.g. stsb; "stsb,sickr": the
    # mean of their main scores, DenoSent's official selection); None: the last checkpoint
    dev_every: int = 0  # steps between dev evaluations (0: never)
    dev_patience: int | None = None  # stop after this many dev evaluations without a new best (None: never)
    # What selects the checkpoint: None = dev_task's main score; a metric name of dev_task's dev split (e.g.
    # recall@10); "loss" = the training loss on the held-out sentences of dev_corpus (lower is better)
    dev_metric: str | None = None
    dev_corpus: str | None = None  # one sentence a line: the validation corpus of dev_metric="loss"
    # A learning curve for reading, never a selection: the test split of curve_task scored at these steps while
    # training (a line of log.jsonl each; the last step's score is the run's own result, so a step at or past the
    # run's end is not scored here). The weights are those of a run without it.
    curve_task: str | None = None
    curve_steps: tuple[int, ...] = ()
    # An epoch's last, smaller batch: None = as the method's reference loader (Method.keep_partial_batch);
    # True = dropped (whole batches only), False = trained
    drop_last: bool | None = None

    def __post_init__(self) -> None:
        check_literals(self)
        for name in ("max_length", "batch_size", "log_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_steps is None and self.epochs is None:
            raise ConfigError("set max_steps or epochs (both are None)")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.epochs is not None and self.epochs <= 0:
            raise ConfigError(f"epochs must be > 0, got {self.epochs}")
        if self.stop_at_step is not None and self.stop_at_step < 0:
            raise ConfigError(f"stop_at_step must be >= 0 (0: the start, exported untrained), got {self.stop_at_step}")
        if self.lr <= 0:
            raise ConfigError(f"lr must be > 0, got {self.lr}")
        if self.scheduler == "piecewise" and len(self.lr_factors) != len(self.lr_milestones) + 1:
            raise ConfigError(f"piecewise scheduler: lr_factors needs len(lr_milestones) + 1 = "
                              f"{len(self.lr_milestones) + 1} values, got {len(self.lr_factors)}")
        if list(self.lr_milestones) != sorted(self.lr_milestones):
            raise ConfigError(f"lr_milestones must be increasing, got {self.lr_milestones}")
        if bool(self.curve_task) != bool(self.curve_steps):
            raise ConfigError(f"curve_task and curve_steps go together (got curve_task={self.curve_task!r}, "
                              f"curve_steps={self.curve_steps!r})")
        if any(s < 1 for s in self.curve_steps) or list(self.curve_steps) != sorted(set(self.curve_steps)):
            raise ConfigError(f"curve_steps must be increasing steps >= 1, got {self.curve_steps}")
        if self.dev_metric == VALIDATION_LOSS and self.dev_task:
            raise ConfigError(f"dev_metric=loss selects on dev_corpus, not on a task: drop dev_task={self.dev_task}")
        if self.dev_every and not (self.dev_task or self.dev_metric == VALIDATION_LOSS):
            raise ConfigError("dev_every > 0 needs dev_task (e.g. dev_task=stsb) or dev_metric=loss with dev_corpus")
        if self.dev_task is not None and not all(dev_tasks(self.dev_task)):
            raise ConfigError(f"dev_task={self.dev_task!r}: expected task names separated by commas (e.g. stsb,sickr)")
        if self.dev_patience is not None and (self.dev_patience < 1 or not self.dev_every):
            raise ConfigError(f"dev_patience must be >= 1 and needs dev_every > 0, got {self.dev_patience}")

    def replace(self, **changes: Any) -> typing.Self:
        """A copy with ``changes`` applied (unknown keys: ConfigError)."""
        check_keys(type(self), changes)
        return dataclasses.replace(self, **changes)


def dev_tasks(dev_task: str) -> tuple[str, ...]:
    """The tasks of a ``dev_task`` value: one name, or several separated by commas whose main scores are averaged."""
    return tuple(name.strip() for name in dev_task.split(","))


# --- introspection -------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def field_types(cls: type) -> Mapping[str, Any]:
    """Resolved type of every field of a config dataclass (read-only; resolved once per class: ``get_type_hints``
    is the dearest part of building a config, which a plan does thousands of times)."""
    hints = typing.get_type_hints(cls)
    return types.MappingProxyType({f.name: hints[f.name] for f in dataclasses.fields(cls)})


def check_keys(cls: type, keys: Mapping[str, Any] | Sequence[str]) -> None:
    """ConfigError for the first key that is not a field of ``cls``, with close matches."""
    known = [f.name for f in dataclasses.fields(cls)]
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(f"unknown config key {key!r} for {cls.__name__}{hint} (known: {', '.join(known)})")


def check_literals(cfg: Any) -> None:
    """ConfigError when a ``Literal``-typed field holds a value outside its choices."""
    for name, (choices, optional) in _literal_fields(type(cfg)).items():
        value = getattr(cfg, name)
        if value not in choices and not (value is None and optional):
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{name}={value!r} is not one of {', '.join(map(str, choices))}{hint}")


@functools.lru_cache(maxsize=None)
def _literal_fields(cls: type) -> dict[str, tuple[tuple[Any, ...], bool]]:
    """{field: (its Literal choices, whether None is allowed)} for the ``Literal``-typed fields of ``cls``."""
    out = {}
    for name, tp in field_types(cls).items():
        choices = _literal_choices(tp)
        if choices:
            out[name] = (choices, _is_optional(tp))
    return out


def _literal_choices(tp: Any) -> tuple[Any, ...]:
    if get_origin(tp) is Literal:
        return get_args(tp)
    if _is_union(tp):
        return tuple(c for a in get_args(tp) for c in _literal_choices(a))
    return ()


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _is_optional(tp: Any) -> bool:
    return _is_union(tp) and type(None) in get_args(tp)


# --- parsing `--set key=value` --------------------------------------------------------------------------------

_TRUE, _FALSE, _NONE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}, {"none", "null"}


def parse_value(tp: Any, raw: str, key: str = "value") -> Any:
    """Convert the string ``raw`` to the field type ``tp`` (int, float, bool, str, Literal, Optional, tuple)."""
    text = raw.strip()
    if _is_union(tp):
        args = [a for a in get_args(tp) if a is not type(None)]
        if text.lower() in _NONE and len(args) < len(get_args(tp)):
            return None
        errors = []
        for arg in args:
            try:
                return parse_value(arg, text, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(f"{key}={raw!r}: " + "; ".join(errors))
    if get_origin(tp) is Literal:
        choices = get_args(tp)
        for c in choices:
            if str(c) == text:
                return c
        close = difflib.get_close_matches(text, [str(c) for c in choices], n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{key}={raw!r} is not one of {', '.join(map(str, choices))}{hint}")
    if get_origin(tp) is tuple:
        return _parse_tuple(tp, text, key)
    return _parse_scalar(tp, text, key)


def _parse_tuple(tp: Any, text: str, key: str) -> tuple:
    args = get_args(tp)
    parts = [p for p in text.strip("()[] ").split(",") if p.strip()]
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(parse_value(args[0], p, key) for p in parts)
    if len(parts) != len(args):
        raise ConfigError(f"{key}={text!r}: expected {len(args)} comma-separated values")
    return tuple(parse_value(a, p, key) for a, p in zip(args, parts))


def _parse_scalar(tp: Any, text: str, key: str) -> Any:
    if tp is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ConfigError(f"{key}={text!r}: expected true or false")
    if tp in (int, float):
        try:
            value = float(text) if tp is float else int(float(text)) if _is_integral(text) else int(text)
        except ValueError:
            raise ConfigError(f"{key}={text!r}: expected {'a number' if tp is float else 'an integer'}") from None
        return value
    if tp is str:
        return text
    raise ConfigError(f"{key}: cannot parse a value of type {tp!r} from the command line")


def _is_integral(text: str) -> bool:
    """``1e5`` and ``100000.0`` are accepted as integers (budgets are often written that way)."""
    try:
        return float(text).is_integer() and any(c in text for c in ".eE")
    except ValueError:
        return False


def parse_overrides(cls: type, items: Sequence[str]) -> dict[str, Any]:
    """``["lr=1e-5", "pooling=cls"]`` -> ``{"lr": 1e-05, "pooling": "cls"}`` typed by the fields of ``cls``."""
    types_ = field_types(cls)
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected key=value")
        check_keys(cls, [key])
        out[key] = parse_value(types_[key], raw, key)
    return out


# --- presets ---------------------------------------------------------------------------------------------------

# Keys that never change the trained weights nor any score: how often the loss is logged and a resumable train state
# is saved (tests/train/test_bookkeeping.py trains twice with other values and compares the weights bit for bit).
# A run's identity holds them at its preset's values whatever was set (usebench.plan.stage_identity.identity_config), so
# `--set log_every=5` finds the run the preset made, and run ids stored before keep their names.
BOOKKEEPING_KEYS = ("log_every", "save_every")
# Keys every config gained after stores were written (the truncation point and the learning curve, issue 55): at
# these values a run is the one it was before they existed, so its identity leaves them out and the run ids stored
# before keep their names (usebench.plan.stage_identity.identity_config; tests/plan/test_bookkeeping_identity.py).
LATER_KEYS: dict[str, Any] = {"stop_at_step": None, "curve_task": None, "curve_steps": ()}


def without_neutral_later_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without the :data:`LATER_KEYS` at their neutral values (a tuple is a list in a config dict): the
    form a run's identity and a published row's resolved config are compared in."""
    def neutral(key: str, value: Any) -> bool:
        if key not in LATER_KEYS:
            return False
        return value == LATER_KEYS[key] or (isinstance(value, list) and tuple(value) == LATER_KEYS[key])

    return {k: v for k, v in config.items() if not neutral(k, v)}


def build_config(cls: type[C], presets: Mapping[str, Mapping[str, Any]], preset: str | None,
                 overrides: Mapping[str, Any] | None = None) -> C:
    """``cls(**presets[preset], **overrides)``; unknown presets and keys are ConfigErrors."""
    values: dict[str, Any] = {}
    if preset is not None:
        if preset not in presets:
            close = difflib.get_close_matches(preset, list(presets), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown preset {preset!r} for {cls.__name__}{hint} (known: {', '.join(presets)})")
        values.update(presets[preset])
    values.update(overrides or {})
    check_keys(cls, values)
    return cls(**values)


def preset_config(cls: type[C], presets: Mapping[str, Mapping[str, Any]], preset: str | None,
                  overrides: Mapping[str, Any] | Sequence[str] | None, values: Mapping[str, Any]) -> C:
    """:func:`build_config` with ``overrides`` as a dict or ``["k=v"]`` strings (parsed by the field types), then
    ``values`` (what ``Method.config`` takes)."""
    merged: dict[str, Any] = {}
    if overrides is not None:
        merged.update(parse_overrides(cls, list(overrides)) if _is_str_seq(overrides) else overrides)
    merged.update(values)
    return build_config(cls, presets, preset, merged)


def _is_str_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(isinstance(i, str) for i in x)


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """JSON-able dict of a config (tuples become lists)."""
    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    if all(type(v) in _PLAIN or (type(v) is tuple and all(type(x) in _PLAIN for x in v)) for v in values.values()):
        # what asdict gives for scalars and tuples of scalars, without its deep copies (a plan converts thousands)
        return {k: list(v) if type(v) is tuple else v for k, v in values.items()}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()}


_PLAIN = (str, int, float, bool, type(None))  # immutable scalars: asdict returns them as they are


def config_from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
    """Inverse of :func:`config_to_dict` (lists become tuples again)."""
    check_keys(cls, data)
    types_ = field_types(cls)
    fixed = {k: tuple(v) if isinstance(v, list) and get_origin(_strip_optional(types_[k])) is tuple else v
             for k, v in data.items()}
    return cls(**fixed)


def _strip_optional(tp: Any) -> Any:
    if _is_optional(tp):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp
