"""Grid progress: a finished unit's line has its main scores and time, and the grid's ETA from the measured rate
(hand computed below); `bench run`'s local launcher prints one such line per unit."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

from click.testing import CliRunner

from usebench.cli.main import main
from usebench.run.progress import GridProgress, duration
from usebench.store.unit_state import UnitResult
from tests.launch.helpers import grid_args
from tests.methods.helpers import toy_corpus


def _unit(run_id: str, *stages: tuple[str, int]) -> SimpleNamespace:
    return SimpleNamespace(run_id=run_id, stages=[SimpleNamespace(home=h, steps=n) for h, n in stages])


def _result(tmp_path: Path, run_id: str, seconds: float, training: list[str], score: float = 0.6123) -> UnitResult:
    path = tmp_path / run_id / "askubuntu" / "test.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"main_metric": "map", "main_score": score}))
    return UnitResult(run_id, tmp_path / run_id, run_id, results=[("askubuntu", path)], training=training,
                      seconds=seconds)


def test_durations():
    assert [duration(s) for s in (42.4, 252, 11_100)] == ["42s", "4m12s", "3h05m"]


def test_the_eta_is_the_steps_left_at_the_measured_rate(tmp_path):
    # u1 trains stage A (100 steps); u2 shares A and trains B (200); u3 trains C (300)
    units = [_unit("u1", ("A", 100)), _unit("u2", ("A", 100), ("B", 200)), _unit("u3", ("C", 300))]
    progress = GridProgress(units, tmp_path)
    assert progress.eta() == "grid 0/3 done, ETA once a unit has trained (600 steps left)"
    line = progress.finished(units[0], _result(tmp_path, "u1", 50.0, ["training"]))
    # 50 s / 100 steps = 0.5 s/step; left: B and C, 500 steps -> 250 s; two at once -> 125 s
    assert line == "done in 50s: askubuntu map 61.23; grid 1/3 done, ETA 4m10s (500 steps left at 0.500 s/step measured)"
    assert progress.eta(running=2) == "grid 1/3 done, ETA 2m05s (500 steps left at 0.500 s/step measured, 2 at once)"
    # u2 reused A and trained B: (50 + 120) s / (100 + 200) steps; left: C, 300 steps -> 170 s
    line = progress.finished(units[1], _result(tmp_path, "u2", 120.0, ["reusing its finished checkpoint",
                                                                       "training"], 0.8))
    assert line == "done in 2m00s: askubuntu map 80.00; grid 2/3 done, ETA 2m50s (300 steps left at 0.567 s/step " \
                   "measured)"
    failed = UnitResult("u3", tmp_path / "u3", "u3", state="failed", error="BenchError: boom", seconds=3.0)
    assert progress.finished(units[2], failed, where="job 42") == "failed: BenchError: boom (job 42); grid 3/3 done"


def test_a_stage_another_process_finished_is_not_left(tmp_path):
    units = [_unit("u1", ("A", 100)), _unit("u2", ("B", 200)), _unit("u3", ("C", 300))]
    progress = GridProgress(units, tmp_path)
    (tmp_path / "C" / "checkpoint").mkdir(parents=True)
    (tmp_path / "C" / "checkpoint" / "method.json").write_text("{}")  # trained by another process meanwhile
    progress.finished(units[0], _result(tmp_path, "u1", 10.0, ["training"]))
    assert progress.eta() == "grid 1/3 done, ETA 20s (200 steps left at 0.100 s/step measured)"


def test_the_local_launcher_prints_a_line_per_finished_unit(tiny_bert_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    out = CliRunner().invoke(main, grid_args(tiny_bert_dir, corpus, tmp_path / "results", methods="simcse", steps=2))
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.output.splitlines() if "done in" in ln]
    assert len(lines) == 2, out.output
    assert re.search(r"\[1/2\] simcse__\S+ \(simcse, seed \d\): done in \d+s: stsb spearman -?\d+\.\d\d; grid 1/2 "
                     r"done, ETA \d+s \(2 steps left at \d\.\d{3} s/step measured\)", lines[0]), lines[0]
    assert lines[1].endswith("grid 2/2 done")
