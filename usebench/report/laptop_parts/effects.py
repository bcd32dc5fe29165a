"""What adaptation did on the laptop page: each trained row against the start model, split into the pooling
switch (the method's own counterpart at step 0 against the start model's mean pooling) and the training (the row
against that counterpart), each with an interval (:mod:`usebench.report.laptop_parts.stats`), and the sentences the page
may say about them.

A row's counterpart at step 0, the first that the store holds:

1. the method's own step-0 row (the recipe's ``stop_at_step=0`` units): its new parts as they are before the first
   step, seeded (SimCSE's freshly initialised MLP on [CLS], one draw per seed; BERT-flow's flow after ActNorm's
   data-dependent init; DenoSent's [MASK] prompt on the start model);
2. the start model under the row's pooling when that pooling is a built-in one (TSDAE and PaSeR: CLS; MLM and CT:
   mean; ConSERT: last2avg; a row scored with ``--eval-pooling``: that pooling) or under the flow's input pooling
   (a BERT-flow row of a store without its step-0 row);
3. none: the effect of training is then not stated (a pooling with new parts, such as SimCSE's MLP, has no
   untrained counterpart in the start model's rows).
"""
from __future__ import annotations

from dataclasses import dataclass

from usebench.eval.pooling import BUILTIN_POOLINGS
from usebench.report.laptop_parts.stats import SAME_ROW, Effect, effect, reading
from usebench.stats.table_rows import DISPLAY, ResultIndex, RowKey, find_key

SUMMARY = ("twitterpara.avg", "sts.avg")  # the two numbers the page's comparisons are about
SUMMARY_NAMES = {"twitterpara.avg": "TwitterPara AP", "sts.avg": "STS Spearman"}
STEP0 = "stop_at_step=0"  # the variant mark of a step-0 unit (usebench.plan.variants)
# What a method's step-0 unit is, so that its training effect says what it is measured against
STEP0_WHAT = {"simcse": "[CLS] with a freshly initialised MLP", "bertflow": "the flow after ActNorm's init",
              "denosent": "the start model under its [MASK] prompt"}
EVAL_POOLING = "eval_pooling="


@dataclass(frozen=True)
class Split:
    """One trained row: its counterpart at step 0 and the three effects on each summary column."""

    key: RowKey
    counterpart: RowKey | None
    what: str  # what the counterpart is, in words
    total: dict[str, Effect | None]
    switch: dict[str, Effect | None]
    training: dict[str, Effect | None]


def is_step0(key: RowKey) -> bool:
    return STEP0 in key.variant.replace("+", " ").split()


def label(key: RowKey) -> str:
    """A trained row's short name on the page: the method, and the pooling where it was chosen at evaluation."""
    name = DISPLAY.get(key.method, key.method)
    return f"{name} ({key.pooling})" if EVAL_POOLING in key.variant else name


def start_rows(index: ResultIndex) -> dict[str, RowKey]:
    """The start model's rows (untrained, out-of-the-box) by pooling."""
    return {k.pooling: k for k in index.rows if k.group == "out-of-the-box" and k.method == "base"}


def step0_rows(index: ResultIndex) -> list[RowKey]:
    return [k for k in index.rows if k.group == "adapt-nli-first" and is_step0(k)]


def counterpart(index: ResultIndex, key: RowKey) -> tuple[RowKey | None, str]:
    """(the row's counterpart at step 0, what it is in words): see the module docstring."""
    own = [k for k in step0_rows(index) if k.method == key.method and k.pooling == key.pooling]
    if own:
        what = STEP0_WHAT.get(key.method, f"{DISPLAY.get(key.method, key.method)} at step 0")
        return own[0], f"{what} ({_seeds(index, own[0])} step-0 units)"
    start = start_rows(index)
    pooling = key.pooling if key.pooling in BUILTIN_POOLINGS else _flow_input(index, key)
    if pooling and pooling in start:
        how = f"its flow's input, {pooling}" if key.pooling == "flow" else pooling
        return start[pooling], f"the start model under {how}"
    return None, f"not in this store ({key.pooling} has parts new at step 0, and no step-0 row is here)"


def _seeds(index: ResultIndex, key: RowKey) -> str:
    seeds = {r.record["seed"] for results in index.rows[key].values() for r in results}
    return f"{len(seeds)} seed" + ("s'" if len(seeds) > 1 else "'s")


def _flow_input(index: ResultIndex, key: RowKey) -> str | None:
    """The pooling a BERT-flow row's flow reads (its config's ``base_pooling``)."""
    if key.pooling != "flow":
        return None
    for results in index.rows[key].values():
        found = find_key(results[0].record.get("config", {}), "base_pooling")
        if found:
            return str(found)
    return None


def splits(index: ResultIndex, trained: list[RowKey]) -> list[Split]:
    """Each trained row's counterpart and effects."""
    mean = start_rows(index).get("mean")
    out = []
    for key in trained:
        other, what = counterpart(index, key)
        out.append(Split(key, other, what, _effects(index, key, mean), _effects(index, other, mean),
                         _effects(index, key, other)))
    return out


def _effects(index: ResultIndex, a: RowKey | None, b: RowKey | None) -> dict[str, Effect | None]:
    return {c: effect(index, a, b, c) if a is not None and b is not None else None for c in SUMMARY}


def effects_section(index: ResultIndex, trained: list[RowKey]) -> list[str]:
    """The effects table and the sentences it allows."""
    rows = splits(index, trained)
    over = sorted({e.over for s in rows for d in (s.total, s.switch, s.training) for e in d.values()
                   if e and e.over != SAME_ROW})
    intervals = f"each with its 95% interval over {' / '.join(over)}" if over else "none computable from this store"
    lines = [f"Differences in points (x100), {intervals}; `*`: the interval excludes 0. *Total*: the trained row minus the start model with its own mean "
             "pooling; *switch*: the row's counterpart at step 0 minus the same (the pooling it evaluates with, and "
             "any part new at step 0); *training*: the row minus its counterpart. "
             + _over_note(over), "",
             "| Row | pooling | step 0 | total TwitterP. | total STS | switch TwitterP. | switch STS | training "
             "TwitterP. | training STS |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in rows:
        cells = [_cell(d[c]) for d in (s.total, s.switch, s.training) for c in SUMMARY]
        lines.append(f"| {label(s.key)} | {s.key.pooling} | {s.what} | " + " | ".join(cells) + " |")
    return lines + ["", "**What these allow.** A claim stands only where its interval excludes 0; otherwise the "
                    "effect is not distinguishable from 0 at this budget.", "", *readings(rows)]


def _over_note(over: list[str]) -> str:
    if over == ["seeds only"]:
        return ("This store holds no per-item outcomes: the intervals are over seeds alone (a t interval of the "
                "per-seed differences), without the test items' sampling, and two rows of one value each have none.")
    return ("An interval over seeds and test items resamples both (usebench/stats/); one over seeds only is given "
            "where a row has no per-item outcomes.")


def _cell(found: Effect | None) -> str:
    return found.cell() if found is not None else "n/a"


def readings(rows: list[Split]) -> list[str]:
    """Per trained row, what its pooling switch and its training did to each summary number, in the page's
    wording (:func:`usebench.report.laptop_parts.stats.reading`)."""
    out = []
    for s in rows:
        if s.counterpart is None:
            out.append(f"- **{label(s.key)}**: training not stated: its counterpart at step 0 is {s.what}.")
            continue
        parts = [reading(f"switch {SUMMARY_NAMES[c]}", s.switch[c]) for c in SUMMARY if s.switch[c] is not None]
        parts += [reading(f"training {SUMMARY_NAMES[c]}", s.training[c]) for c in SUMMARY]
        out.append(f"- **{label(s.key)}**: " + "; ".join(parts) + ".")
    return out


def best_pooling_sentence(index: ResultIndex, trained: list[RowKey]) -> list[str]:
    """Each trained row against the start model under whichever of its poolings scores best on TwitterPara's test
    set: a pooling picked on the test data, which flatters the start model, and said so."""
    start = start_rows(index)
    scored = {p: index.held_cell(k, "twitterpara.avg", "test") for p, k in start.items()}
    scored = {p: s for p, s in scored.items() if s.n}
    if len(scored) < 2 or not trained:
        return []
    best = max(scored, key=lambda p: scored[p].mean)
    above = [k for k in trained if (e := effect(index, k, start[best], "twitterpara.avg")) and e.excludes_zero
             and e.delta > 0]
    names = ", ".join(label(k) for k in above) if above else "no trained row"
    return [f"Against the start model under {best} ({100 * scored[best].mean:.2f} TwitterPara AP), the best of its "
            f"{len(scored)} poolings **picked on the test set** (a choice no method could make without test labels, "
            f"so it flatters the start model): {names} lies above it with an interval that excludes 0."]
