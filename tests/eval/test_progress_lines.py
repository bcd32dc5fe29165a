"""Progress where there is no terminal (issue 56, item 4): `bench eval ... > log` said nothing for 333 s between
"evaluating ..." and the score. Where the encoder's bar is hidden, a line now and then says how far it is, and the
command names the files it wrote; the training bar shows the loss log.jsonl holds (it showed the last step's: 0.5085
beside the log's 0.304 at step 20)."""
from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from usebench.eval import progress_lines
from usebench.eval.progress_lines import ProgressLines

ASSETS = Path(__file__).resolve().parents[1] / "assets"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_interval_with_the_count_rate_and_eta():
    clock, out = Clock(), io.StringIO()
    lines = ProgressLines(20_344, "encode minilm", "texts", every=30, stream=out, clock=clock)
    clock.now += 10
    lines.update(2_000)  # 10 s: before the interval, nothing
    clock.now += 30
    lines.update(6_000)  # 40 s, 8,000 done: 200/s, 12,344 left = 61.7 s
    clock.now += 10
    lines.update(4_000)  # 10 s after the last line: nothing
    clock.now += 100
    lines.update(8_344)  # done: the task's own line says so
    assert out.getvalue().splitlines() == ["encode minilm: 8,000/20,344 texts (39%), 200 texts/s, ETA 1m02s"]


def test_bench_eval_without_a_terminal_prints_progress_lines_and_the_files_it_wrote(tiny_bert_dir, tmp_path,
                                                                                     monkeypatch):
    from usebench.cli.main import main

    monkeypatch.setattr(progress_lines, "EVERY_S", 0.0)  # a line at every batch but the last
    root = tmp_path / "data"
    shutil.copytree(ASSETS, root)
    res = CliRunner().invoke(main, ["eval", "--model", str(tiny_bert_dir), "--tasks", "stsb,sts12", "--batch-size",
                                    "4", "--data-root", str(root), "--results-dir", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output  # CliRunner's streams are no terminal: the bar hides itself
    progress = [ln for ln in res.output.splitlines() if ln.startswith("encode ")]
    assert progress and all(re.fullmatch(r"encode \S+: [\d,]+/[\d,]+ texts \(\d+%\), [\d,]+ texts/s, ETA \d+s", ln)
                            for ln in progress), progress
    wrote = [Path(ln.removeprefix("wrote ")) for ln in res.output.splitlines() if ln.startswith("wrote ")]
    assert sorted(p.parent.name for p in wrote) == ["sts12", "stsb"] and all(p.is_file() for p in wrote)
    assert res.output.rstrip().splitlines()[-1].startswith("wrote ")  # at the end


def test_the_training_bar_shows_the_loss_log_jsonl_holds(tiny_bert_dir, tmp_path, capsys):
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS
    from usebench.train.loop import train
    from tests.methods.helpers import one_thread, tiny_config, toy_corpus

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=20, log_every=10)
    with one_thread():
        train(method, cfg, toy_corpus(64), tmp_path / "run", seed=0, show_progress=True, device="cpu")
    bar = capsys.readouterr().err  # tqdm renders to stderr, redrawn with carriage returns
    shown = [float(x) for x in re.findall(r"loss=([0-9.]+)", bar)]
    logged = [json.loads(ln) for ln in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert shown and shown[-1] == round(logged[-1]["loss"], 4) and logged[-1]["step"] == 20
    assert {round(x["loss"], 4) for x in logged} >= set(shown)  # every value the bar showed is a logged one
