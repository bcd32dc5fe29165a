"""`bench tasks` folds a task's subsets (beir-cqadupstack-android) and the BM25 variants that score it
(bm25-pyserini+askubuntu) into the task's row; `--all` lists every registered task."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from usebench.cli.catalog import task_rows
from usebench.cli.main import main

ASSETS = Path(__file__).resolve().parents[1] / "assets"


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


# --- issue 56, item 2: filters, the data column, one method, presets' notes, the two batch sizes ----------------

def test_bench_tasks_filters_by_group_and_type_and_says_whether_the_data_is_here(tmp_path):
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    for split in TASKS.get("sts12").splits:  # the one task whose files are in this data root
        for f in TASKS.get("sts12").files(split):
            (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / f).write_text("")
    out = CliRunner().invoke(main, ["tasks", "--group", "sts", "--data-root", str(tmp_path)])
    assert out.exit_code == 0, out.output
    rows = {ln.split("│")[1].strip(): ln.split("│")[-2].strip() for ln in out.output.splitlines()
            if ln.startswith("│ ") and ln.split("│")[1].strip()}
    assert set(rows) == {"sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"}
    assert rows["sts12"] == "yes" and rows["stsb"] == "no: bench data download sts"
    rerank = CliRunner().invoke(main, ["tasks", "--all", "--type", "rerank", "--group", "useb"])
    names = {ln.split("│")[1].strip() for ln in rerank.output.splitlines() if ln.startswith("│ ")}
    assert names == {n for n in TASKS.names() if TASKS.get(n).family == "rerank" and TASKS.get(n).group == "useb"}
    assert "askubuntu" in names and "twitterpara" not in names
    bad = CliRunner().invoke(main, ["tasks", "--group", "ueb"])
    assert bad.exit_code == 2 and "--group 'ueb': expected one of" in bad.output and "useb" in bad.output


def test_bench_methods_name_shows_one_method_and_refuses_unknown_names():
    one = CliRunner().invoke(main, ["methods", "ct"])
    assert one.exit_code == 0 and one.output.startswith("ct: ") and "preset laptop" in one.output
    assert "\nct-ibn:" not in one.output and "defaults " in one.output
    typo = CliRunner().invoke(main, ["methods", "tsdea"])
    assert typo.exit_code != 0 and "tsdae" in typo.output  # did you mean
    preset = CliRunner().invoke(main, ["methods", "ct", "--preset", "laptp"])
    assert preset.exit_code == 2 and "--preset 'laptp': ct has the presets paper, official" in preset.output


def test_every_laptop_note_states_its_own_preset_s_values():
    """The notes said "log every 10 steps, train state every 100" beside presets that log every 5 (or 1) and save
    every 20 (or 5): the shared head of the note is now said from each preset's values."""
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    checked = 0
    for name in METHODS.names():
        method = METHODS.get(name)
        if "laptop" not in method.presets:
            continue
        cfg, note = method.config("laptop"), method.preset_notes["laptop"]
        said = re.search(r"log every (step|[\d,]+ steps), train state every (step|[\d,]+ steps)", note)
        assert said, (name, note)
        as_number = [1 if s == "step" else int(s.split()[0].replace(",", "")) for s in said.groups()]
        assert as_number == [cfg.log_every, cfg.save_every], (name, said.group(0))
        checked += 1
    assert checked == 8
    assert METHODS.get("simcse").config("laptop").log_every == 1  # the case the issue met: not 10


def test_the_training_batch_is_a_named_option_and_the_old_spelling_still_works(tmp_path):
    from usebench.cli.run import batch_sizes
    from usebench.errors import ConfigError

    assert batch_sizes(None, None, None, ()) == (64, ())
    assert batch_sizes(32, None, 16, ("ct.batch_size=4",)) == (32, ("batch_size=16", "ct.batch_size=4"))
    assert batch_sizes(None, 8, None, ()) == (8, ())  # --batch-size: the evaluation batch, as before
    with pytest.raises(ConfigError, match="--train-batch-size 16 and --set batch_size=8: give one"):
        batch_sizes(None, None, 16, ("batch_size=8",))
    with pytest.raises(ConfigError, match="--eval-batch-size 32 and --batch-size 8: give one"):
        batch_sizes(32, 8, None, ())
    from tests.methods.helpers import toy_corpus

    plan, corpus = tmp_path / "plan.json", tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(64)) + "\n")
    args = ["run", "--methods", "tsdae,ct", "--tasks", "twitterpara", "--preset", "smoke", "--dry-run",
            "--corpus", str(corpus), "--data-root", str(ASSETS), "--results-dir", str(tmp_path / "r"),
            "--plan-out", str(plan)]
    res = CliRunner().invoke(main, [*args, "--train-batch-size", "24", "--batch-size", "16"])
    assert res.exit_code == 0, res.output
    assert "warning: --batch-size is deprecated: it is the evaluation batch, now --eval-batch-size" in res.output
    rows = json.loads(plan.read_text())
    assert [r["variant"] for r in rows] == ["smoke + batch_size=24"] * 2
    zero = CliRunner().invoke(main, [*args, "--train-batch-size", "0"])
    assert zero.exit_code == 2 and "--train-batch-size must be a positive integer, got 0" in zero.output
