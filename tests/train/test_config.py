"""Config dataclasses, presets and typed `--set key=value` overrides."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from usebench.train.config import (
    TrainConfig,
    build_config,
    config_from_dict,
    config_to_dict,
    parse_overrides,
    parse_value,
)
from usebench.errors import ConfigError


@dataclass(frozen=True)
class DemoConfig(TrainConfig):
    variant: Literal["official", "st"] = "official"
    scale: float | None = None


PRESETS = {"paper": {"lr": 1e-5, "max_steps": 100_000}, "smoke": {"max_steps": 10, "variant": "st"}}


@pytest.mark.parametrize("tp, raw, expected", [
    (int, "100", 100), (int, "1e5", 100_000), (int, "100000.0", 100_000), (float, "3e-5", 3e-5),
    (bool, "true", True), (bool, "No", False), (bool, "1", True), (str, " cls ", "cls"),
    (int | None, "none", None), (int | None, "7", 7), (float | None, "null", None),
    (tuple[int, ...], "500,1000,1500", (500, 1000, 1500)), (tuple[float, float], "(0.9, 0.98)", (0.9, 0.98)),
    (tuple[int, ...], "", ()), (Literal["a", "b"], "b", "b"),
])
def test_parse_value_types(tp, raw, expected):
    assert parse_value(tp, raw) == expected


@pytest.mark.parametrize("tp, raw, fragment", [
    (int, "1.5", "integer"), (float, "fast", "number"), (bool, "maybe", "true or false"),
    (Literal["official", "st"], "oficial", "did you mean 'official'"), (tuple[float, float], "1,2,3", "2 comma"),
])
def test_parse_value_errors(tp, raw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_value(tp, raw, "key")


def test_parse_overrides_typed_and_unknown_keys():
    assert parse_overrides(DemoConfig, ["lr=1e-4", "pooling=cls", "scale=none", "lr_milestones=5,10"]) == {
        "lr": 1e-4, "pooling": "cls", "scale": None, "lr_milestones": (5, 10)}
    with pytest.raises(ConfigError, match=r"unknown config key 'lrr'.*did you mean 'lr'"):
        parse_overrides(DemoConfig, ["lrr=1e-4"])
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_overrides(DemoConfig, ["lr"])


def test_presets_then_overrides():
    cfg = build_config(DemoConfig, PRESETS, "paper", {"lr": 2e-5})
    assert (cfg.lr, cfg.max_steps, cfg.variant) == (2e-5, 100_000, "official")
    assert build_config(DemoConfig, PRESETS, "smoke").variant == "st"
    assert build_config(DemoConfig, PRESETS, None).max_steps == 1000  # class defaults
    with pytest.raises(ConfigError, match=r"unknown preset 'smoek'.*did you mean 'smoke'"):
        build_config(DemoConfig, PRESETS, "smoek")
    with pytest.raises(ConfigError, match="unknown config key 'warmup'"):
        build_config(DemoConfig, {"bad": {"warmup": 3}}, "bad")


@pytest.mark.parametrize("changes, fragment", [
    ({"variant": "sst"}, "not one of official, st"), ({"batch_size": 0}, "batch_size must be >= 1"),
    ({"scheduler": "piecewise", "lr_milestones": (5,), "lr_factors": (1.0,)}, "needs len"),
    ({"max_steps": None}, "set max_steps or epochs"), ({"dev_every": 10}, "needs dev_task"),
    ({"lr_milestones": (10, 5), "lr_factors": (1.0, 0.5, 0.2)}, "increasing"),
])
def test_validation(changes, fragment):
    with pytest.raises(ConfigError, match=fragment):
        DemoConfig(**changes)


def test_dict_round_trip_and_replace():
    cfg = DemoConfig(lr_milestones=(5, 10), lr_factors=(1.0, 0.5, 0.1), scheduler="piecewise", scale=2.0)
    data = config_to_dict(cfg)
    assert data["lr_milestones"] == [5, 10]
    assert config_from_dict(DemoConfig, data) == cfg
    assert cfg.replace(lr=1.0).lr == 1.0
    with pytest.raises(ConfigError, match="unknown config key"):
        cfg.replace(learning_rate=1.0)


def test_method_config_rejects_keys_of_other_methods():
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    tsdae = METHODS.get("tsdae")
    assert tsdae.config("smoke", ["noise_ratio=0.5"]).noise_ratio == 0.5
    with pytest.raises(ConfigError, match="unknown config key 'temperature'"):
        tsdae.config("smoke", ["temperature=0.1"])  # a SimCSE key
    with pytest.raises(ConfigError, match="unknown preset"):
        tsdae.config("fast")
