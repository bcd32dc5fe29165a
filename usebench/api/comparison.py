"""``usebench.compare``: `bench compare A B` as a DataFrame, one row per task (usebench/stats/compare.py)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

COMPARE_COLUMNS = ("task", "split", "metric", "a", "b", "a_score", "b_score", "delta", "ci_low", "ci_high", "level",
                   "p_value", "p_holm", "test", "n_items", "seeds_a", "seeds_b", "distinguishable", "verdict",
                   "reason")


def compare(a: str, b: str, results_dir: str | Path = "results", *, tasks: Sequence[str] | None = None,
            split: str = "test", metric: str | None = None, resamples: int = 1000, level: float = 0.95,
            seed: int = 0) -> pd.DataFrame:
    """B - A per task on the same test items, with its paired bootstrap interval, a paired permutation test over
    items and Holm's correction over the tasks (columns: :data:`COMPARE_COLUMNS`; scores in 0-1).

    ``a`` and ``b``: a run id, a run id without its ``__s<seed>`` (every seed of that configuration), a report row's
    label (``"minilm (mean)"``) or a method name that names one row. A task that cannot be compared (no per-item
    outcomes, other data) has a row with its ``reason`` and no numbers; ``frame.attrs["notes"]`` say how the
    numbers were made.
    """
    import pandas as pd

    from usebench.store.mteb_results import all_results
    from usebench.stats.compare import compare_sides, comparison_records, resolve
    from usebench.stats.intervals import Resampler

    resampler = Resampler(resamples, seed, level)
    results = all_results(Path(results_dir))
    comp = compare_sides(resolve(a, results), resolve(b, results), tasks=tasks, split=split, metric=metric,
                         resampler=resampler)
    frame = pd.DataFrame(comparison_records(comp), columns=list(COMPARE_COLUMNS))
    frame.attrs["notes"] = comp.notes()
    return frame
