"""Bookkeeping (logging and checkpoint cadence, tracker options) never changes a run id, a stage id or a row's label
(issue 53, item 3; docs/guarantees.md), and run ids stored before stay the same: the committed laptop store is still
found done, 29 units of 29."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.plan.planner import plan_run
from usebench.plan.specs import RunOptions
from tests.methods.helpers import one_thread

ASSETS = Path(__file__).resolve().parents[1] / "assets"
REPO = Path(__file__).resolve().parents[2]


def _plan(tiny_bert_dir: Path, corpus: Path, *sets: str, methods: tuple[str, ...] = ("simcse", "tsdae>simcse")):
    opts = RunOptions(methods=methods, tasks="stsb", seeds=1, preset="smoke", model=str(tiny_bert_dir),
                      corpus=(corpus,), max_steps=2, overrides=("batch_size=8", "max_length=32", *sets))
    return plan_run(opts, ASSETS)


def test_bookkeeping_sets_change_no_run_id_stage_id_nor_variant(tiny_bert_dir, corpus_file):
    plain = _plan(tiny_bert_dir, corpus_file)
    booked = _plan(tiny_bert_dir, corpus_file, "log_every=5", "save_every=20", "simcse.save_every=1")
    assert [u.run_id for u in booked.units] == [u.run_id for u in plain.units]
    assert [[s.home for s in u.stages] for u in booked.units] == [[s.home for s in u.stages] for u in plain.units]
    assert [u.variant for u in booked.units] == [u.variant for u in plain.units]
    assert not any("save_every" in u.variant or "log_every" in u.variant for u in booked.units)
    # the values the stages train with are the user's: only the identity holds the preset's
    assert booked.units[0].stages[0].values["log_every"] == 5
    assert booked.units[0].stages[0].identity["config"]["log_every"] == plain.units[0].stages[0].identity[
        "config"]["log_every"]
    other = _plan(tiny_bert_dir, corpus_file, "lr=2e-3")  # a key that changes the weights still does
    assert other.units[0].run_id != plain.units[0].run_id and "lr=0.002" in other.units[0].variant


def test_a_finished_unit_is_done_under_a_bookkeeping_set(tiny_bert_dir, corpus_file, tmp_path):
    args = ["run", "--methods", "simcse", "--tasks", "stsb", "--corpus", str(corpus_file), "--model",
            str(tiny_bert_dir), "--preset", "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS),
            "--results-dir", str(tmp_path / "r"), "--set", "batch_size=8", "--set", "max_length=32"]
    with one_thread():
        first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, [*args, "--set", "log_every=1", "--set", "save_every=20", "--dry-run",
                                      "--units"])
    assert again.exit_code == 0, again.output
    assert "1 done" in again.output and "missing" not in again.output and "save_every" not in again.output


@pytest.mark.slow
def test_the_committed_laptop_store_is_found_done(real_data, tmp_path, monkeypatch):
    """The laptop recipe planned today against a copy of results/laptop: every unit's run id is a stored one, done
    (the bookkeeping keys in its identity are the laptop preset's, as when the store was made). On a fresh clone
    without WordNet too: the PaSeR units are done, so their synonym replacement needs nothing."""
    from tests.reproduce.test_remaining_cost import _laptop_store
    from usebench.plan import requirements

    monkeypatch.setattr(requirements, "_wordnet_found", lambda: False)

    store = _laptop_store(tmp_path, real_data)
    out = CliRunner().invoke(main, ["reproduce", "laptop", "--dry-run", "--results-dir", str(store), "--data-root",
                                    str(real_data), "--plan-out", str(tmp_path / "plan.csv")])
    assert out.exit_code == 0, out.output
    import csv

    rows = [r for r in csv.DictReader((tmp_path / "plan.csv").open(encoding="utf-8")) if r["number"]]
    assert len(rows) == 29 and {r["now"] for r in rows} == {"done"}, {r["run_id"]: r["now"] for r in rows}
    assert {r["run_id"] for r in rows} <= {p.name for p in (REPO / "results" / "laptop").iterdir()}


def test_keys_configs_gained_later_leave_the_identity_at_their_neutral_values(tiny_bert_dir, corpus_file):
    """stop_at_step, curve_task and curve_steps (issue 55) joined every config after stores were written: at their
    neutral values the identity is the one stored before (no such key in it), so no earlier run id changes; set, they
    name another run."""
    from usebench.plan.stage_identity import identity_config
    from usebench.registry import METHODS
    from usebench.train.config import LATER_KEYS, config_to_dict

    method = METHODS.get("simcse")
    full = config_to_dict(method.config("smoke", {}))
    assert set(LATER_KEYS) <= set(full)  # every config has them ...
    held = identity_config(method, "smoke", full)
    assert not set(LATER_KEYS) & set(held)  # ... and none of them is in the identity at its neutral value
    assert held == {k: v for k, v in full.items() if k not in LATER_KEYS}
    plain = _plan(tiny_bert_dir, corpus_file)
    assert "stop_at_step" not in plain.units[0].stages[0].identity["config"]
    cut = _plan(tiny_bert_dir, corpus_file, "stop_at_step=1")
    assert cut.units[0].run_id != plain.units[0].run_id
    assert cut.units[0].stages[0].identity["config"]["stop_at_step"] == 1
