"""`bench tasks` folds a task's subsets (beir-cqadupstack-android) and the BM25 variants that score it
(bm25-pyserini+askubuntu) into the task's row; `--all` lists every registered task."""
from __future__ import annotations

from types import SimpleNamespace

from click.testing import CliRunner

from usebench.cli.catalog import task_rows
from usebench.cli.main import main


def test_subsets_and_bm25_variants_fold_into_their_task():
    datasets = {"a": "d", "a-x": "d", "a-y": "d", "b": "e", "c": "f", "c-d": "g", "bm25+a": "d", "bm25+a-x": "d",
                "bm25-p+a": "d", "bm25+zzz": "h"}
    rows = task_rows(list(datasets), lambda n: SimpleNamespace(dataset=datasets[n]))
    # c-d reads another dataset than c: a task of its own; bm25+zzz scores no registered task: its own row
    assert [(r.name, r.subsets, r.bm25) for r in rows] == [
        ("a", ["x", "y"], ["bm25", "bm25-p"]), ("b", [], []), ("c", [], []), ("c-d", [], []), ("bm25+zzz", [], [])]
    assert rows[0].variants() == "2 subsets: x, y; BM25: bm25, bm25-p" and rows[1].variants() == "-"


def test_bench_tasks_prints_a_row_per_task_and_every_variant_with_all():
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    grouped = CliRunner().invoke(main, ["tasks"])
    assert grouped.exit_code == 0, grouped.output
    assert "│ beir-cqadupstack " in grouped.output and "12 subsets" in grouped.output
    assert "│ bm25+askubuntu " not in grouped.output and "│ beir-cqadupstack-android " not in grouped.output
    assert "…" not in grouped.output
    rows = [line for line in grouped.output.splitlines() if line.startswith("│ ") and not line.startswith("│  ")]
    assert len(rows) < len(TASKS.names()) / 4  # 13 rows, not 93
    every = CliRunner().invoke(main, ["tasks", "--all"])
    assert all(f"│ {name} " in every.output for name in TASKS.names())
