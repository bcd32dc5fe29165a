"""The `local` launcher: a failed unit does not stop the others, is reported with its log, is retried, and a
re-run of the same command runs only it; launcher options are checked before anything runs."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.errors import ConfigError
from usebench.launch import LaunchOptions, check_device, launch_options
from usebench.launch.local import LocalLauncher
from usebench.run.console import attempts
from usebench.run.grid import run_benchmark
from usebench.store.unit_state import grid_status, unit_state
from tests.launch.helpers import ASSETS, Flaky, fail_once_at_step, grid_args, grid_options, store_digest


def test_a_failed_unit_does_not_stop_the_others_and_a_rerun_runs_only_it(tiny_bert_dir, grid_corpus, local_grid,
                                                                          tmp_path):
    reference = store_digest(local_grid)
    bad = sorted(reference)[0]  # the first unit by name: its train state is corrupt on disk
    results = tmp_path / "results"
    (results / bad / "train_state").mkdir(parents=True)
    (results / bad / "train_state" / "state.pt").write_bytes(b"not a torch file")

    first = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, results))
    assert first.exit_code == 1, first.output
    log = results / bad / "unit.log"
    assert "1 unit(s) failed" in first.output and f"{bad}: BenchError:" in first.output
    assert "unreadable train state" in first.output and f"log: {log}" in first.output
    assert "Traceback" in log.read_text() and "unreadable train state" in log.read_text()
    digest = store_digest(results)
    assert {k: digest[k] for k in reference if k != bad} == {k: v for k, v in reference.items() if k != bad}
    states = {u.run_id: u.state for u in grid_status(results)}
    assert states == {**{k: "done" for k in reference}, bad: "failed"}

    stamps = {k: (results / k / "checkpoint" / "model.safetensors").stat().st_mtime_ns for k in reference if k != bad}
    (results / bad / "train_state" / "state.pt").unlink()  # the cause, fixed
    again = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, results))
    assert again.exit_code == 0, again.output
    assert "3 of 4 unit(s) already done (results kept); 1 to run" in again.output
    assert store_digest(results) == reference
    assert stamps == {k: (results / k / "checkpoint" / "model.safetensors").stat().st_mtime_ns for k in stamps}
    assert [a[2] for a in attempts(log)] == ["BenchError", "ok"] and not (results / bad / "failed.json").exists()


def test_a_unit_that_fails_once_is_retried_and_resumes_to_the_same_weights(tiny_bert_dir, grid_corpus, local_grid,
                                                                           tmp_path, monkeypatch):

    fail_once_at_step(monkeypatch, 2)
    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=1)
    outcome = run_benchmark(opts, ASSETS, tmp_path, execute=LocalLauncher(LaunchOptions(retries=1, cpus_per_unit=1)))
    (unit,) = outcome.units
    assert unit.state == "done" and unit.attempts == 2 and unit.training == ["resuming from its last train state"]
    assert [a[2] for a in attempts(unit.log)] == ["Flaky", "ok"]
    assert store_digest(tmp_path)[unit.run_id] == store_digest(local_grid)[unit.run_id]
    assert unit_state(unit.run_dir).state == "done"


def test_without_retries_the_failure_is_returned_not_raised(tiny_bert_dir, grid_corpus, tmp_path, monkeypatch):
    import usebench.train.loop as loop

    def broken(*args, **kwargs):
        raise Flaky("broken")

    monkeypatch.setattr(loop, "train", broken)
    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("mlm",), seeds=2)
    outcome = run_benchmark(opts, ASSETS, tmp_path, execute=LocalLauncher(LaunchOptions()))
    assert [(u.state, u.attempts, u.error) for u in outcome.units] == [("failed", 1, "Flaky: broken")] * 2
    assert all(u.log == u.run_dir / "unit.log" and u.log.is_file() for u in outcome.units)


def test_launch_options_come_from_the_command_line_over_the_config_file(tmp_path):
    config = tmp_path / "launch.toml"
    config.write_text('launcher = "slurm"\nmax_parallel = 16\nretries = 2\n[slurm]\npartition = "gpu"\n'
                      'time_min = 90\nsetup = ["module load cuda"]\n[slurm.additional]\nexclude = "node17"\n')
    opts = launch_options({"max_parallel": 4, "slurm_partition": None, "slurm_mem_gb": 32.0}, config)
    assert (opts.launcher, opts.max_parallel, opts.retries) == ("slurm", 4, 2)
    assert opts.slurm.partition == "gpu" and opts.slurm.time_min == 90 and opts.slurm.mem_gb == 32.0
    assert opts.slurm.setup == ("module load cuda",) and opts.slurm.additional == (("exclude", "node17"),)


@pytest.mark.parametrize("text, given, message", [
    ("max_paralel = 2\n", {}, "unknown key 'max_paralel'; did you mean 'max_parallel'?"),
    ("[slurm]\npartion = 'gpu'\n", {}, "[slurm]: unknown key 'partion'; did you mean 'partition'?"),
    ("retries = -1\n", {}, "retries must be an integer >= 0"),
    ("max_parallel = '4'\n", {}, "max_parallel must be a positive integer"),
    ("gpus_per_unit = 2\n", {}, "gpus_per_unit must be 0 or 1"),
    ("launcher = 'k8s'\n", {}, "launcher 'k8s' is not one of local, ray, slurm"),
    ("max_parallel = 2\n", {"launcher": "local"}, "--launcher local runs one unit at a time"),
    ("", {"ray_address": "auto"}, "--ray-address needs --launcher ray"),
    ("[slurm]\nmem_gb = 0\n", {}, "slurm.mem_gb must be a positive number"),
    ("max_parallel = \n", {}, "not valid TOML"),
    ("slurm = 'gpu'\n", {}, "slurm must be a table"),
    ("max_parallel = true\n", {}, "max_parallel must be a positive integer"),
])
def test_bad_launch_options_are_named(tmp_path, text, given, message):
    config = tmp_path / "launch.toml"
    config.write_text(text)
    with pytest.raises(ConfigError) as e:
        launch_options(given, config)
    assert message in str(e.value)


def test_a_fixed_gpu_index_cannot_be_given_to_a_launcher_that_assigns_gpus():
    with pytest.raises(ConfigError, match="use --device cuda"):
        check_device("cuda:1", LaunchOptions(launcher="ray"))
    check_device("cuda:1", LaunchOptions(launcher="local"))  # one process, any GPU


def test_launcher_options_are_checked_before_anything_is_planned_or_run(tiny_bert_dir, grid_corpus, tmp_path):
    result = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, tmp_path / "r", "--max-parallel", "2"))
    assert result.exit_code == 2 and "--launcher local runs one unit at a time" in result.output
    assert not (tmp_path / "r").exists()


def test_the_manifest_lists_the_planned_units_for_status(tiny_bert_dir, grid_corpus, tmp_path, monkeypatch):
    import usebench.run.grid as grid

    monkeypatch.setattr(grid, "run_sequentially", lambda units, data_root, results_dir: [])
    monkeypatch.setattr("usebench.launch.local.LocalLauncher.__call__", lambda self, units, d, r: [])
    result = CliRunner().invoke(main, grid_args(tiny_bert_dir, grid_corpus, tmp_path))
    assert result.exit_code == 1  # nothing was trained or evaluated
    (manifest,) = (tmp_path / ".launch").glob("grid-*.json")
    data = json.loads(manifest.read_text())
    assert data["launcher"] == "local" and len(data["units"]) == 4 and data["argv"]
    assert [u.state for u in grid_status(tmp_path)] == ["missing"] * 4
    assert {(u.label, u.seed) for u in grid_status(tmp_path)} == {(m, s) for m in ("simcse", "mlm") for s in (0, 1)}
