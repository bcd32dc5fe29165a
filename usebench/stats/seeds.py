"""Seed statistics over stored results: mean, sample std, n and per-seed values; per-seed averages across
tasks; paired comparisons between two methods over seeds.

Aggregation refuses to average results that are not repeats of one experiment: a cell mixes runs only when
they share the task, split, task version, data sha256, scorer, training step path and configuration (the seed
aside; :func:`usebench.store.validity.seed_mismatches`). The refusal names the files and
what differs, so the researcher can move stale results away or re-run.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from usebench.errors import BenchError
from usebench.store import StoredResult, config_hash

# Config keys that differ between the repeats of one experiment and so never make two runs incomparable: the
# seed itself, and the hash of a seeded labeled subset (`--labeled-sizes`; its size and source stay compared).
SEED_KEYS = frozenset({"seed", "subset_sha256"})


class MixedRunsError(BenchError):
    """Results that are not repeats of one experiment (different data or configuration) were to be averaged."""


@dataclass(frozen=True)
class SeedStats:
    """One value per seed, with the mean, the sample standard deviation (ddof=1) and n."""

    values: Mapping[int, float]

    @property
    def seeds(self) -> list[int]:
        return sorted(self.values)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(list(self.values.values()))) if self.values else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation; NaN for fewer than two seeds (undefined, never shown as 0)."""
        return float(np.std(list(self.values.values()), ddof=1)) if self.n >= 2 else math.nan

    def scaled(self, factor: float) -> SeedStats:
        """The same statistics in other units (x100 for display)."""
        return SeedStats({s: v * factor for s, v in self.values.items()})

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (NaN std written as null)."""
        std = self.std
        return {"mean": self.mean, "std": None if math.isnan(std) else std, "n": self.n,
                "per_seed": {str(s): self.values[s] for s in self.seeds}}


def strip_seed(config: Any) -> Any:
    """``config`` without the seed keys, at any depth."""
    if isinstance(config, dict):
        return {k: strip_seed(v) for k, v in config.items() if k not in SEED_KEYS}
    if isinstance(config, list):
        return [strip_seed(v) for v in config]
    return config


def config_identity(config: Mapping[str, Any]) -> str:
    """Hash of a run configuration with the seed removed: equal for the repeats of one experiment."""
    return config_hash(strip_seed(dict(config)))


def _flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(config, dict):
        out: dict[str, Any] = {}
        for k, v in config.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: config}


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any], limit: int = 5) -> str:
    """Readable ``key (x vs y)`` list of the keys where two configs differ (seed keys ignored)."""
    fa, fb = _flatten(strip_seed(dict(a))), _flatten(strip_seed(dict(b)))
    keys = sorted(k for k in set(fa) | set(fb) if fa.get(k, "<absent>") != fb.get(k, "<absent>"))
    shown = [f"{k} ({json.dumps(fa.get(k, '<absent>'), default=str)} vs "
             f"{json.dumps(fb.get(k, '<absent>'), default=str)})" for k in keys[:limit]]
    more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(shown) + more


def check_comparable(results: Sequence[StoredResult]) -> None:
    """Raise :class:`MixedRunsError` unless ``results`` are seed repeats of one experiment on one data version."""
    if not results:
        return
    first = results[0]
    seen: dict[int, StoredResult] = {}
    for r in results:
        what = f"{r.record['method']['name']} on {r.task}/{r.split}"
        if (r.task, r.split) != (first.task, first.split):
            raise MixedRunsError(f"cannot average {first.task}/{first.split} with {r.task}/{r.split} ({r.path})")
        sha_a, sha_b = first.record["task"].get("data_sha256"), r.record["task"].get("data_sha256")
        if sha_a != sha_b:
            raise MixedRunsError(
                f"cannot average {what}: the data differ (sha256 {str(sha_a)[:12]} in {first.path} vs "
                f"{str(sha_b)[:12]} in {r.path}); re-run on one data version or move the stale results away")
        _check_same_measurement(first, r, what)
        if config_identity(first.record["config"]) != config_identity(r.record["config"]):
            raise MixedRunsError(
                f"cannot average {what}: the configs differ beyond the seed ({first.path} vs {r.path}): "
                f"{config_differences(first.record['config'], r.record['config'])}; "
                f"use separate --results-dir stores or report them as separate rows (--split-configs)")
        seed = int(r.record["seed"])
        if seed in seen:
            raise MixedRunsError(f"cannot average {what}: seed {seed} appears twice ({seen[seed].path} and {r.path})")
        seen[seed] = r


def _check_same_measurement(first: StoredResult, other: StoredResult, what: str) -> None:
    """Seed repeats share the task version, scorer and training step path (usebench.store.validity.seed_mismatches)."""
    from usebench.store.validity import seed_mismatches

    for kind, a, b in seed_mismatches(first.record, other.record):
        if kind != "data":  # said above with the paths
            raise MixedRunsError(f"cannot average {what}: the {kind} differ ({a} in {first.path} vs {b} in "
                                 f"{other.path}); score the stale one again (`bench run ... --reevaluate TASK`) or "
                                 "report them as separate rows")


def metric_value(result: StoredResult, metric: str) -> float:
    """One metric of a stored result (0-1); an absent metric is an error naming the file and the metrics it has."""
    scores = result.record["scores"]
    if metric not in scores:
        raise BenchError(f"{result.path}: metric {metric!r} not in scores (has: {', '.join(sorted(scores))})")
    return float(scores[metric])


def aggregate(results: Sequence[StoredResult], metric: str) -> SeedStats:
    """Seed statistics of ``metric`` over the seed repeats ``results`` (checked with :func:`check_comparable`)."""
    check_comparable(results)
    return SeedStats({int(r.record["seed"]): metric_value(r, metric) for r in results})


def per_seed_average(parts: Sequence[SeedStats]) -> SeedStats:
    """The mean over ``parts`` computed within each seed, then kept per seed (e.g. the USEB average).

    Only seeds present in every part count: a seed missing one task has no average (it is not averaged over
    fewer tasks). The seed statistics of the result then average these per-seed values.
    """
    if not parts or any(p.n == 0 for p in parts):
        return SeedStats({})
    common = set(parts[0].values).intersection(*(p.values for p in parts[1:]))
    return SeedStats({s: float(np.mean([p.values[s] for p in parts])) for s in sorted(common)})


@dataclass(frozen=True)
class PairedComparison:
    """Method A against method B over their common seeds (differences are A - B)."""

    seeds: tuple[int, ...]
    diffs: tuple[float, ...]
    wins_a: int
    wins_b: int
    ties: int
    test: str | None  # name of the paired test, None when n < 3
    statistic: float | None
    p_value: float | None

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def mean_diff(self) -> float:
        return float(np.mean(self.diffs)) if self.diffs else math.nan

    def summary(self, scale: float = 100.0) -> str:
        """One line: mean difference, wins per side, and the test when there is one."""
        if not self.n:
            return "no common seeds"
        line = (f"mean diff {self.mean_diff * scale:+.2f} over {self.n} seeds; A wins {self.wins_a}, "
                f"B wins {self.wins_b}, ties {self.ties}")
        if self.test is None:
            return line + "; no paired test (n < 3)"
        p = "n/a (identical differences)" if self.p_value is None else f"{self.p_value:.3g}"
        return line + f"; {self.test} p = {p}"


def paired_comparison(a: SeedStats, b: SeedStats) -> PairedComparison:
    """Pair ``a`` and ``b`` by seed: wins per side, and a paired t-test (scipy ``ttest_rel``) when n >= 3."""
    from scipy import stats as sps

    seeds = tuple(sorted(set(a.values) & set(b.values)))
    xa = np.array([a.values[s] for s in seeds], dtype=float)
    xb = np.array([b.values[s] for s in seeds], dtype=float)
    diffs = xa - xb
    test = statistic = p_value = None
    if len(seeds) >= 3:
        test = "paired t-test"
        # Constant differences (up to float noise) leave t undefined: say so rather than print p ~ 0.
        if float(np.ptp(diffs)) > 1e-9 * max(1.0, float(np.abs(diffs).max())):
            res = sps.ttest_rel(xa, xb)
            statistic, p_value = float(res.statistic), float(res.pvalue)
    return PairedComparison(seeds=seeds, diffs=tuple(float(d) for d in diffs), wins_a=int((diffs > 0).sum()),
                            wins_b=int((diffs < 0).sum()), ties=int((diffs == 0).sum()), test=test,
                            statistic=statistic, p_value=p_value)


def beats_all_in_every_seed(a: SeedStats, others: Sequence[SeedStats]) -> bool:
    """The paper's dagger: ``a`` is higher than every one of ``others`` in every seed, paired by seed.

    False when a comparator is missing or the seed sets differ (an unpaired claim is not made).
    """
    if a.n == 0 or not others:
        return False
    for other in others:
        if set(other.values) != set(a.values):
            return False
        if any(a.values[s] <= other.values[s] for s in a.values):
            return False
    return True
