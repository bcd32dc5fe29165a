"""The `ray` launcher on a local Ray with 2 CPUs: two units run at the same moment, each into the store `--launcher
local` fills; a unit asking for a GPU where there is none fails at once. The grid under `--launcher ray` (never more
than two at once, the same store as the local launcher's, Ray's files in the results folder and none in the home
directory) is run once, in tests/store/test_store_faults_launchers.py, with a unit killed, reported failed with its
log, and restarted to a clean run's store. A unit killed mid-training and retried to the same weights is
tests/launch/test_ray_cluster.py's (its first attempt's lock also names a dead node). Each of those costs a Ray
worker start-up per attempt, so each is run once."""
from __future__ import annotations

import functools
import re

import pytest
import torch  # noqa: F401  (the GPU test's skip condition)
from click.testing import CliRunner

from usebench.cli.main import main
from usebench.launch import LaunchOptions
from usebench.run.grid import run_benchmark
from tests.launch.helpers import (
    ASSETS, grid_args, grid_options, rendezvous_unit, store_digest,
)

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")


def test_ray_runs_two_units_at_the_same_moment(tiny_bert_dir, grid_corpus, local_grid, local_ray, tmp_path):
    """--max-parallel 2 runs two units at once: each waits in a meeting room for the other before it trains (run
    one after another, neither would ever see the other). Timing-free, unlike overlapping unit logs, which a
    loaded machine can serialise when a unit trains faster than a fresh Ray worker starts."""
    from usebench.launch.ray_launcher import RayLauncher

    meeting = tmp_path / "meeting"
    meeting.mkdir()
    opts = grid_options(tiny_bert_dir, grid_corpus, methods=("simcse", "mlm"), seeds=1)
    launcher = RayLauncher(LaunchOptions(launcher="ray", max_parallel=2, cpus_per_unit=1),
                           unit_fn=functools.partial(rendezvous_unit, meeting))
    outcome = run_benchmark(opts, ASSETS, tmp_path / "results", execute=launcher)
    assert [u.state for u in outcome.units] == ["done", "done"]
    assert sorted(p.read_text() for p in meeting.glob("*.seen")) == ["2", "2"]
    digest = store_digest(tmp_path / "results")
    assert all(digest[u.run_id] == store_digest(local_grid)[u.run_id] for u in outcome.units)


@pytest.mark.skipif("torch.cuda.is_available()", reason="this machine has a GPU")
def test_a_gpu_unit_on_a_cluster_without_gpus_fails_fast(tiny_bert_dir, grid_corpus, local_ray, tmp_path):
    args = grid_args(tiny_bert_dir, grid_corpus, tmp_path, "--launcher", "ray")
    args[args.index("--device") + 1] = "cuda"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "ask for 1 GPU each" in result.output and re.search(r"has no GPU \(\d+ CPU, 0 GPU\)", result.output)
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]  # no unit started


def test_each_unit_asks_for_its_gpu_and_a_share_of_the_cpus():
    from usebench.launch.ray_launcher import unit_resources

    box = {"CPU": 64.0, "GPU": 8.0}
    spec = type("Spec", (), {"device": None})()
    assert unit_resources(LaunchOptions(launcher="ray"), spec, 100, box) == (8, 1)  # 8 units at once
    assert unit_resources(LaunchOptions(launcher="ray", max_parallel=4), spec, 100, box) == (16, 1)
    assert unit_resources(LaunchOptions(launcher="ray", cpus_per_unit=2), spec, 100, box) == (2, 1)
    spec.device = "cpu"
    assert unit_resources(LaunchOptions(launcher="ray", max_parallel=2), spec, 100, box) == (32, 0)
    assert unit_resources(LaunchOptions(launcher="ray"), spec, 4, {"CPU": 2.0}) == (1, 0)
    spec.device = None
    assert unit_resources(LaunchOptions(launcher="ray"), spec, 4, {"CPU": 2.0}) == (1, 0)  # no GPU: CPU units
