"""The trackers' plumbing on the base install (no tracker package needed): choosing them, what a log line becomes,
a tracker that cannot start or fails mid-run never failing the training, and the run ids a folder keeps."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.errors import ConfigError
from usebench.train import trackers
from usebench.train.tracker_backends import TrackContext
from usebench.train.trackers import metrics_of, open_set, parse_log_to, tracking, trackers_for


def test_log_to_names_are_checked_with_a_hint():
    assert parse_log_to("tensorboard, WANDB,tensorboard") == ("tensorboard", "wandb")
    assert parse_log_to(None) == parse_log_to("") == parse_log_to("none") == ()
    with pytest.raises(ConfigError, match=r"unknown tracker 'mlfow' \(did you mean 'mlflow'\?\)"):
        parse_log_to("mlfow")


def test_a_log_line_becomes_train_metrics_and_a_dev_line_a_dev_score():
    line = {"step": 4, "loss": 2.5, "lr": 1e-3, "grad_norm": 0.75, "steps_per_s": 3.0, "elapsed_s": 1.3,
            "gpu_peak_mb": 812.5, "mlm": 1.25}
    assert metrics_of(line) == {"train/loss": 2.5, "train/lr": 1e-3, "train/grad_norm": 0.75,
                                "train/steps_per_s": 3.0, "train/gpu_peak_mb": 812.5, "train/mlm": 1.25}
    assert metrics_of({"step": 4, "dev_score": -1.5, "dev_metric": "loss", "dev_task": None}) == {"dev/score": -1.5}


class Recorder:
    """A backend that keeps what it was given (and can be told to fail)."""

    def __init__(self, fail_on: str = ""):
        self.calls, self.fail_on = [], fail_on

    def log(self, step, metrics):
        if self.fail_on == "log":
            raise RuntimeError("disk full")
        self.calls.append(("log", step, metrics))

    def final(self, step, metrics):
        self.calls.append(("final", step, metrics))

    def close(self):
        self.calls.append(("close",))


def _context(home: Path) -> TrackContext:
    return TrackContext(home, "usebench/test", home.name, {"run_id": home.name}, {"lr": 1e-3}, home.parent)


def test_a_tracker_that_cannot_start_is_named_once_and_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(trackers, "_NAMED", set())
    kept = Recorder()

    def missing(context, state, start):
        raise ImportError("no module", name="wandb")

    def broken(context, state, start):
        raise RuntimeError("server unreachable")

    openers = {"wandb": missing, "mlflow": broken, "tensorboard": lambda c, s, start: (kept, {"log_dir": "tb"})}
    for run in ("a", "b"):  # a second folder in the same process: the broken ones are not tried again
        (tmp_path / run).mkdir()
        opened = open_set(("wandb", "mlflow", "tensorboard"), _context(tmp_path / run), 0, openers)
        assert list(opened.backends) == ["tensorboard"]
        opened.log_line({"step": 1, "loss": 2.0})
        opened.close()
    err = capsys.readouterr().err
    assert err.count("trackers: wandb not installed (wandb); install it with pip install 'usebench[wandb]'") == 1
    assert err.count("trackers: mlflow could not start (RuntimeError: server unreachable)") == 1
    assert kept.calls.count(("log", 1, {"train/loss": 2.0})) == 2
    state = json.loads((tmp_path / "a" / "trackers.json").read_text())
    assert state == {"tensorboard": {"log_dir": "tb"}, "last_step": 1}


def test_a_tracker_that_fails_while_logging_is_dropped_and_training_goes_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(trackers, "_NAMED", set())
    bad, good = Recorder(fail_on="log"), Recorder()
    openers = {"mlflow": lambda c, s, start: (bad, {}), "wandb": lambda c, s, start: (good, {})}
    opened = open_set(("mlflow", "wandb"), _context(tmp_path), 0, openers)
    for step in (1, 2):
        opened.log_line({"step": step, "loss": 1.0 / step})
    assert list(opened.backends) == ["wandb"] and len(good.calls) == 2
    assert capsys.readouterr().err.count("mlflow failed to log (RuntimeError: disk full)") == 1


def test_a_reopened_folder_hands_each_tracker_its_own_run_back(tmp_path, monkeypatch):
    """The run ids a folder keeps in trackers.json are what each opener gets when the folder is opened again (a
    resumed stage continues its runs), and a final score is logged at the last step trained."""
    monkeypatch.setattr(trackers, "_NAMED", set())
    seen = []

    def opener(context, state, start):
        seen.append((dict(state), start))
        return Recorder(), {"run_id": state.get("run_id", "r-1")}

    first = open_set(("mlflow",), _context(tmp_path), 0, {"mlflow": opener})
    first.log_line({"step": 7, "loss": 1.0})
    first.close()
    again = open_set(("mlflow",), _context(tmp_path), 5, {"mlflow": opener})
    again.log_final({"test/stsb/spearman": 0.8})
    assert seen == [({}, 0), ({"run_id": "r-1"}, 5)]
    assert again.backends["mlflow"].calls == [("final", 7, {"test/stsb/spearman": 0.8})]


def test_no_trackers_outside_a_tracking_block_or_without_names(tmp_path):
    assert trackers_for(tmp_path, 0) is None
    with tracking((), _context) as active:
        assert active is None and trackers_for(tmp_path, 0) is None


def test_only_the_main_rank_opens_trackers(tmp_path, monkeypatch):
    """Under DDP every rank builds a TrainLog; only rank 0's (the one that writes log.jsonl) feeds the trackers."""
    from usebench.train import tracker_backends
    from usebench.train.trainlog import TrainLog

    monkeypatch.setattr(trackers, "_NAMED", set())
    opened = []
    monkeypatch.setitem(tracker_backends.OPENERS, "tensorboard",
                        lambda c, s, start: (opened.append(c.home) or Recorder(), {}))
    with tracking(("tensorboard",), _context):
        other = TrainLog(tmp_path / "log.jsonl", 1, 0, enabled=False)
        main = TrainLog(tmp_path / "log.jsonl", 1, 0, enabled=True)
        main.add(1, 2.0, {"grad_norm": 0.5}, 1e-3)
    assert other.trackers is None and opened == [tmp_path]
    assert main.trackers.backends == {} and json.loads((tmp_path / "log.jsonl").read_text())["grad_norm"] == 0.5
