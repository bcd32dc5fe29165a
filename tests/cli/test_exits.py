"""`bench` exit codes and one-line errors (issue 14, items 3, 6, 7, 13, 14): nothing done is not success, bad
options fail before a model loads and store nothing, Ctrl-C exits 130, progress lines without a terminal."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.cli.main import main

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def bench(*args: str):
    return CliRunner().invoke(main, list(args))


def stored(results: Path) -> dict[str, bytes]:
    return {str(p.relative_to(results)): p.read_bytes() for p in results.rglob("*") if p.is_file()} \
        if results.exists() else {}


def error_lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def test_a_data_root_that_does_not_exist_exits_1_and_stores_nothing(tmp_path):
    r = bench("eval", "--model", "bm25", "--tasks", "stsb", "--data-root", str(tmp_path / "nope"),
              "--results-dir", str(tmp_path / "r"))
    assert r.exit_code == 1 and len(error_lines(r)) == 1
    assert f"data root {tmp_path / 'nope'} does not exist" in r.output and not (tmp_path / "r").exists()


def test_every_task_skipped_exits_1_with_the_reason(tmp_path):
    r = bench("eval", "--model", "bm25", "--tasks", "twitterpara", "--split", "dev", "--data-root", str(ASSETS),
              "--results-dir", str(tmp_path))
    assert r.exit_code == 1
    assert "error: nothing was evaluated: all 1 task(s) were skipped (task 'twitterpara' has no 'dev' split" in r.output
    assert r.output.count("has no 'dev' split") == 2  # the progress line, and the reason in the error


@pytest.mark.parametrize("option, value, message", [
    ("--batch-size", "-4", "--batch-size must be a positive integer, got -4"),
    ("--batch-size", "0", "--batch-size must be a positive integer, got 0"),
    ("--max-length", "0", "--max-length must be a positive integer, got 0"),
    ("--device", "tpu", "--device tpu: unknown device (expected cpu, cuda or cuda:N)"),
])
def test_bad_options_are_one_line_errors_before_anything_is_stored(tmp_path, option, value, message):
    r = bench("eval", "--model", "minilm", "--tasks", "stsb", option, value, "--data-root", str(ASSETS),
              "--results-dir", str(tmp_path / "r"))
    assert r.exit_code == 2 and len(error_lines(r)) == 1 and error_lines(r)[0].startswith(f"error: {message}")
    assert "Traceback" not in r.output and not stored(tmp_path / "r")


def test_cuda_without_cuda_is_a_one_line_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    r = bench("eval", "--model", "minilm", "--tasks", "stsb", "--device", "cuda", "--data-root", str(ASSETS),
              "--results-dir", str(tmp_path))
    assert r.exit_code == 2 and len(error_lines(r)) == 1 and "CUDA is not available here" in r.output


def test_an_unwritable_results_dir_fails_before_the_model_loads(tmp_path, monkeypatch):
    import usebench.run.evaluation as evaluation

    monkeypatch.setattr(evaluation, "build_scorer", lambda opts: pytest.fail("the model was loaded"))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    r = bench("eval", "--model", "minilm", "--tasks", "stsb", "--data-root", str(ASSETS),
              "--results-dir", str(blocker / "results"))
    assert r.exit_code == 2 and "is not writable" in r.output and "--results-dir" in r.output


def test_ctrl_c_exits_130(tmp_path, monkeypatch):
    import usebench.run.evaluation as evaluation

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluation, "evaluate_model", interrupted)
    r = bench("eval", "--model", "bm25", "--tasks", "stsb", "--data-root", str(ASSETS), "--results-dir", str(tmp_path))
    assert r.exit_code == 130 and "interrupted" in r.output


def test_progress_lines_and_partial_data_through_the_cli(tmp_path):
    root = tmp_path / "data"
    shutil.copytree(ASSETS, root)
    args = ["eval", "--model", "bm25", "--tasks", "stsb,sts12", "--data-root", str(root), "--results-dir",
            str(tmp_path / "r")]
    r = bench(*args)  # CliRunner's stdout is not a terminal
    assert r.exit_code == 0
    assert "[1/2] stsb (test): evaluating ..." in r.output and "[2/2] sts12 (test): 16 pairs, " in r.output
    before = stored(tmp_path / "r")
    csv = root / "sts/senteval/STSBenchmark/sts-test.csv"
    csv.write_text("".join(csv.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    r = bench(*args)
    assert r.exit_code == 2 and "expected 4 scored pairs" in r.output and "found 2" in r.output
    assert stored(tmp_path / "r") == before  # the stored result of the full data is untouched
    r = bench(*args, "--allow-partial")
    assert r.exit_code == 0 and "2 pairs" in r.output and "[partial data: --allow-partial]" in r.output
    record = json.loads(next((tmp_path / "r").glob("*/stsb/test.json")).read_text())
    assert record["task"]["partial"] is True and record["task"]["n_queries"] == 2


def test_bench_tasks_prints_whole_names_whatever_the_width():
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    r = bench("tasks", "--all")  # not a terminal: rich would otherwise lay the table out in 80 columns
    assert r.exit_code == 0 and "…" not in r.output
    for name in TASKS.names():
        assert f"│ {name} " in r.output, name


def test_bench_run_checks_eval_options_before_training(tmp_path):
    r = bench("run", "--methods", "simcse", "--tasks", "twitterpara", "--batch-size", "0", "--data-root", str(ASSETS),
              "--results-dir", str(tmp_path))
    assert r.exit_code == 2 and "--batch-size must be a positive integer, got 0" in r.output and not stored(tmp_path)


def test_bench_run_prints_a_skip_once_per_task(capsys):
    from usebench.cli.run import print_run_table
    from usebench.run.grid import RunOutcome

    reason = "stsb (test) file not found at /x; fetch it with `bench data download sts`"
    print_run_table(RunOutcome(skipped=[("stsb", reason), ("stsb", reason), ("stsb", reason)]))
    assert capsys.readouterr().out.count("skipped stsb") == 1
