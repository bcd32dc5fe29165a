"""The TSDAE paper's configuration search (App. A, Tables 5-7) as runs of the ordinary grid.

Protocol (App. A): TSDAE trained on the SNLI + MultiNLI sentences without labels (``--corpus allnli``), scored on
STSb dev every 1.5K steps up to 30K, the best dev checkpoint kept (the ``app-a`` preset), each setting over 5
seeds; the stored STSb-dev result of that checkpoint is the best validation score. The search is greedy, in the
paper's order: (1) noise type at ratio 0.3 with CLS pooling (Table 5), (2) the ratio of the best noise (Table 6),
(3) pooling (Table 7), (4) tying the encoder and decoder (79.15 in the text). Untied until step 4.

``choose="paper"`` fixes each step's winner to the paper's (delete, 0.6, CLS: the rows of the published tables);
``choose="greedy"`` takes the best mean STSb-dev score of the runs already stored for the previous step (so a
researcher who doubts a choice sees where the search goes on their runs). Each step is one `bench run` per
value, reusing finished units like any run.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from usebench.errors import BenchError, ConfigError
from usebench.report.search_runs import METHOD, SEARCHED, app_a_setting

Choose = Literal["paper", "greedy"]
CORPUS, PRESET = "allnli", "app-a"  # the search trains on the NLI sentences with the app-a preset


@dataclass(frozen=True)
class SearchStep:
    """One greedy step: the config key it varies, its values, and the published table that reports it."""

    name: str
    key: str
    values: tuple[Any, ...]
    table: str  # paper_reference.json table of its published scores


STEPS: tuple[SearchStep, ...] = (
    SearchStep("noise", "noise", ("delete", "swap", "mask", "replace", "add"), "tsdae-table5"),
    SearchStep("ratio", "noise_ratio", (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), "tsdae-table6"),
    SearchStep("pooling", "pooling", ("cls", "mean", "max"), "tsdae-table7"),
    SearchStep("tying", "tie_encoder_decoder", (False, True), "tsdae-app-a-tying"),
)
# Where the search starts (App. A: ratio 0.3, CLS, untied) and the paper's winners of steps 1-3.
START: dict[str, Any] = {"noise": "delete", "noise_ratio": 0.3, "pooling": "cls", "tie_encoder_decoder": False}
PAPER_WINNERS: dict[str, Any] = {"noise": "delete", "noise_ratio": 0.6, "pooling": "cls"}


def settings_for(step: SearchStep, fixed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings (the four searched keys) a step trains: ``fixed`` with the step's key at each value."""
    return [{**START, **fixed, step.key: value} for value in step.values]


def overrides(setting: Mapping[str, Any]) -> tuple[str, ...]:
    """``--set`` items of one setting, method-prefixed as `bench run` takes them."""
    def fmt(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return tuple(f"{METHOD}.{k}={fmt(v)}" for k, v in setting.items())


def setting_key(setting: Mapping[str, Any], model: str, max_steps: Any, corpus: str) -> tuple:
    """What makes two App. A results repeats of one setting: backbone, budget, corpus and the searched keys."""
    return (model, max_steps, corpus, *(setting[k] for k in SEARCHED))


def stored_scores(results_dir: Path) -> dict[tuple, list[float]]:
    """STSb-dev scores (0-1) of the App. A runs in the store, by :func:`setting_key`."""
    from usebench.store import iter_results

    out: dict[tuple, list[float]] = {}
    for r in iter_results(results_dir):
        setting = app_a_setting(r.record)
        if setting is not None:
            key = setting_key(setting, setting["model"], setting["max_steps"], setting["corpus"])
            out.setdefault(key, []).append(float(r.record["main_score"]))
    return out


def greedy_winner(step: SearchStep, fixed: Mapping[str, Any], results_dir: Path, run: Mapping[str, Any]) -> Any:
    """The value of ``step.key`` with the best mean stored score among the settings the step trained; ``run``
    holds the model, max_steps and corpus label of the search."""
    scores = stored_scores(results_dir)
    best, best_mean = None, float("-inf")
    for setting in settings_for(step, fixed):
        found = scores.get(setting_key(setting, run["model"], run["max_steps"], run["corpus"]))
        if found and sum(found) / len(found) > best_mean:
            best, best_mean = setting[step.key], sum(found) / len(found)
    if best is None:
        raise BenchError(f"greedy search: no stored App. A results for step {step.name!r} with {dict(fixed)}, "
                         f"{dict(run)}; run that step first")
    return best


def search(steps: Sequence[str], choose: Choose, train_step: Callable[[SearchStep, list[dict[str, Any]]], None],
           results_dir: Path, run: Mapping[str, Any]) -> dict[str, Any]:
    """Run the requested steps in the paper's order (``train_step`` trains one step's settings), each later step
    fixed at the earlier winners (the paper's, or the best stored with ``choose="greedy"``). Returns the fixed
    keys after the last step."""
    unknown = [s for s in steps if s not in {st.name for st in STEPS}]
    if unknown:
        raise ConfigError(f"unknown search step(s) {unknown} (steps: {', '.join(s.name for s in STEPS)})")
    fixed: dict[str, Any] = {}
    for step in STEPS:
        if step.name in steps:
            train_step(step, settings_for(step, fixed))
        if step.key in PAPER_WINNERS:
            fixed[step.key] = (PAPER_WINNERS[step.key] if choose == "paper" or step.name not in steps
                               else greedy_winner(step, fixed, results_dir, run))
    return fixed
