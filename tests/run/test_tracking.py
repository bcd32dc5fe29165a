"""`--log-to`: a unit's training and results read back from each tracker by its own reader (TensorBoard's event
reader, MLflow's client on its local store, W&B's offline run files) equal log.jsonl and the stored results; a killed
and resumed unit is one continuous tracker run; without the tracker packages a unit runs and names each once."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from usebench.plan.specs import RunOptions
from usebench.plan.planner import plan_run
from usebench.run.grid import run_benchmark
from usebench.plan.manifest import write_manifest
from usebench.train import trackers
from tests.methods.helpers import one_thread, toy_corpus

ASSETS = Path(__file__).resolve().parents[1] / "assets"
# a tiny SimCSE (it clips gradients: grad_norm is logged) with a dev evaluation every 2 steps and a train state at 2
TINY = ("lr=1e-3", "batch_size=8", "max_length=32", "log_every=1", "save_every=2", "dev_task=stsb", "dev_every=2")
INSTALLED = [name for name, module in (("tensorboard", "tensorboard"), ("mlflow", "mlflow"), ("wandb", "wandb"))
             if __import__("importlib.util").util.find_spec(module) is not None]


class Crash(Exception):
    pass


def _opts(model: Path, corpus: Path) -> RunOptions:
    return RunOptions(methods=("simcse",), tasks="stsb", seeds=1, preset="smoke", model=str(model), corpus=(corpus,),
                      max_steps=4, overrides=TINY, show_progress=False, device="cpu")


def _run(opts: RunOptions, results: Path):
    """The unit through a grid manifest as `bench reproduce` writes it (recipe tsdae, table paper-table2)."""
    plan = plan_run(opts, ASSETS)
    write_manifest(plan, results, "local", recipe="tsdae", unit_tables={plan.units[0].run_id: ["paper-table2"]})
    with one_thread():
        return run_benchmark(opts, ASSETS, results, plan=plan)


@pytest.fixture(scope="module")
def tracked(tiny_bert_dir, tmp_path_factory):
    """One unit logged to every installed tracker: (run dir, log.jsonl lines, the stored result)."""
    if not INSTALLED:
        pytest.skip("no tracker installed: pip install 'usebench[tensorboard,mlflow,wandb]'")
    root = tmp_path_factory.mktemp("tracked")
    (root / "corpus.txt").write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(trackers.LOG_TO_ENV, ",".join(INSTALLED))
        mp.setattr(trackers, "_NAMED", set())
        (unit,) = _run(_opts(tiny_bert_dir, root / "corpus.txt"), root / "results").units
    assert unit.state == "done"
    lines = [json.loads(x) for x in (unit.run_dir / "log.jsonl").read_text().splitlines()]
    record = json.loads((unit.run_dir / "stsb" / "test.json").read_text())
    return unit.run_dir, lines, record


def _train(lines: list[dict], key: str) -> dict[int, float]:
    return {ln["step"]: ln[key] for ln in lines if key in ln and "dev_score" not in ln}


def _dev(lines: list[dict]) -> dict[int, float]:
    return {ln["step"]: ln["dev_score"] for ln in lines if "dev_score" in ln}


def test_the_log_has_what_the_trackers_get(tracked):
    _, lines, _ = tracked
    assert sorted(_train(lines, "loss")) == [1, 2, 3, 4] and sorted(_train(lines, "grad_norm")) == [1, 2, 3, 4]
    assert sorted(_dev(lines)) == [2, 4] and all(ln["dev_task"] == "stsb" for ln in lines if "dev_score" in ln)


def test_tensorboard_event_files_equal_the_log(tracked):
    pytest.importorskip("tensorboard", reason="the tensorboard extra: pip install 'usebench[tensorboard]'")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run, lines, record = tracked
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    scalars = {tag: {e.step: e.value for e in events.Scalars(tag)} for tag in events.Tags()["scalars"]}
    for key in ("loss", "lr", "grad_norm", "steps_per_s"):
        assert scalars[f"train/{key}"] == pytest.approx(_train(lines, key), rel=1e-6)  # event files hold float32
    assert scalars["dev/score"] == pytest.approx(_dev(lines), rel=1e-6)
    assert scalars["test/stsb/spearman"] == pytest.approx({4: record["scores"]["spearman"]}, rel=1e-6)
    assert "usebench/run/text_summary" in events.Tags()["tensors"]


def test_mlflow_store_equals_the_log_with_config_and_tags(tracked):
    pytest.importorskip("mlflow", reason="the mlflow extra: pip install 'usebench[mlflow]'")
    from mlflow.tracking import MlflowClient

    run, lines, record = tracked
    state = json.loads((run / "trackers.json").read_text())["mlflow"]
    assert state["tracking_uri"] == f"sqlite:///{(run.parent / '.mlflow' / 'mlflow.db').resolve()}"
    client = MlflowClient(tracking_uri=state["tracking_uri"])
    found = client.get_run(state["run_id"])
    for key in ("loss", "lr", "grad_norm", "steps_per_s"):
        assert {m.step: m.value for m in client.get_metric_history(found.info.run_id, f"train/{key}")} == \
            pytest.approx(_train(lines, key))
    assert {m.step: m.value for m in client.get_metric_history(found.info.run_id, "dev/score")} == \
        pytest.approx(_dev(lines))
    assert found.data.metrics["test/stsb/spearman"] == pytest.approx(record["scores"]["spearman"])
    config = json.loads((run / "config.json").read_text())
    assert found.data.params["config.lr"] == str(config["config"]["lr"])
    assert found.data.params["corpus.sha256"] == config["corpus"]["sha256"]
    tags = found.data.tags
    assert (tags["usebench.run_id"], tags["usebench.recipe"], tags["usebench.tables"], tags["usebench.method"],
            tags["usebench.seed"]) == (run.name, "tsdae", "paper-table2", "simcse", "0")
    assert client.get_experiment(found.info.experiment_id).name == "usebench/tsdae"  # one experiment per recipe
    assert found.info.status == "FINISHED"


def test_wandb_offline_files_equal_the_log(tracked):
    pytest.importorskip("wandb", reason="the wandb extra: pip install 'usebench[wandb]'")
    from tests.run.wandb_files import offline_runs

    run, lines, record = tracked
    (offline,) = offline_runs(run)
    assert offline.run_id == json.loads((run / "trackers.json").read_text())["wandb"]["id"]
    for key in ("loss", "lr", "grad_norm", "steps_per_s"):
        assert {s: row[f"train/{key}"] for s, row in offline.history.items() if f"train/{key}" in row} == \
            pytest.approx(_train(lines, key))
    assert {s: row["dev/score"] for s, row in offline.history.items() if "dev/score" in row} == \
        pytest.approx(_dev(lines))
    assert offline.summary["test/stsb/spearman"] == pytest.approx(record["scores"]["spearman"])
    assert offline.group == "usebench/tsdae" and offline.job_type == "simcse"
    assert {"recipe:tsdae", "tables:paper-table2", "method:simcse", "seed:0"} <= set(offline.tags)
    assert offline.config["config"]["lr"] == 1e-3 and offline.config["usebench"]["run_id"] == run.name


def test_a_killed_and_resumed_unit_is_one_continuous_tracker_run(tiny_bert_dir, tmp_path, monkeypatch):
    if not INSTALLED:
        pytest.skip("no tracker installed: pip install 'usebench[tensorboard,mlflow,wandb]'")
    import usebench.train.loop as loop

    monkeypatch.setenv(trackers.LOG_TO_ENV, ",".join(INSTALLED))
    monkeypatch.setattr(trackers, "_NAMED", set())
    (tmp_path / "corpus.txt").write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    opts, real_train = _opts(tiny_bert_dir, tmp_path / "corpus.txt"), loop.train

    def crash_at_three(method, cfg, corpus, out_dir, **kw):
        def crash(step):
            if step == 3:  # logged, after the train state of step 2
                raise Crash
        return real_train(method, cfg, corpus, out_dir, **{**kw, "on_step": crash})

    monkeypatch.setattr(loop, "train", crash_at_three)
    with pytest.raises(Crash):
        _run(opts, tmp_path / "results")
    (run,) = [p for p in (tmp_path / "results").iterdir() if p.name.startswith("simcse")]
    before = json.loads((run / "trackers.json").read_text())
    monkeypatch.setattr(loop, "train", real_train)
    (unit,) = _run(opts, tmp_path / "results").units
    assert unit.state == "done" and unit.training == ["resuming from its last train state"]
    after = json.loads((run / "trackers.json").read_text())
    assert {k: after[k] for k in INSTALLED} == {k: before[k] for k in INSTALLED}  # the same runs, continued
    lines = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
    assert sorted(_train(lines, "loss")) == [1, 2, 3, 4]
    if "tensorboard" in INSTALLED:  # the steps after the train state are purged, then logged again: once each
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        events = EventAccumulator(str(run / "tensorboard"))
        events.Reload()
        assert [(e.step, pytest.approx(e.value, rel=1e-6)) for e in events.Scalars("train/loss")] == \
            sorted(_train(lines, "loss").items())
    if "mlflow" in INSTALLED:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=after["mlflow"]["tracking_uri"])
        (only,) = client.search_runs([client.get_experiment_by_name("usebench/tsdae").experiment_id])
        history = client.get_metric_history(only.info.run_id, "train/loss")
        assert {m.step for m in history} == {1, 2, 3, 4}  # step 3 twice: before the kill and after, the same value
        assert all(m.value == pytest.approx(_train(lines, "loss")[m.step]) for m in history)
    if "wandb" in INSTALLED:
        from tests.run.wandb_files import offline_runs

        first, second = offline_runs(run)  # offline, a resumed run is a second folder of the same run id
        assert first.run_id == second.run_id == after["wandb"]["id"]
        assert sorted(first.history) == [1, 2, 3] and sorted(second.history) == [3, 4]
        assert second.history[4]["train/loss"] == pytest.approx(_train(lines, "loss")[4])


def test_without_the_tracker_packages_a_unit_runs_and_names_each_once(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    """The base install: --log-to names trackers whose packages are absent (hidden here when installed)."""
    for module in ("torch.utils.tensorboard", "tensorboard", "mlflow", "mlflow.tracking", "wandb"):
        monkeypatch.setitem(sys.modules, module, None)  # `import` raises ImportError
    monkeypatch.setenv(trackers.LOG_TO_ENV, "tensorboard,mlflow,wandb")
    monkeypatch.setattr(trackers, "_NAMED", set())
    (tmp_path / "corpus.txt").write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    (unit,) = _run(_opts(tiny_bert_dir, tmp_path / "corpus.txt"), tmp_path / "results").units
    assert unit.state == "done" and (unit.run_dir / "stsb" / "test.json").is_file()
    err = capsys.readouterr().err
    for name in ("tensorboard", "mlflow", "wandb"):
        assert err.count(f"trackers: {name} not installed") == 1 and f"pip install 'usebench[{name}]'" in err
    assert not (unit.run_dir / "trackers.json").exists() and not (unit.run_dir / "tensorboard").exists()
