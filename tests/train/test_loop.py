"""The shared training loop: resume, guards, bad input, schedules, optimizers, export formats."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import torch

from usebench import methods  # noqa: F401
from usebench.train.config import TrainConfig
from usebench.errors import BenchError, ConfigError
from usebench.train.backbone import SentenceEncoder, load_backbone
from usebench.train.plugin import Method, TrainModule
from usebench.train.tokenization import tokenize
from usebench.registry import METHODS
from usebench.train.loop_step import TrainingDivergedError
from usebench.train.runtime import autocast_context
from usebench.train.loop import prepare_corpus, train
from tests.methods.helpers import one_thread, tiny_config, toy_corpus


class Crash(Exception):
    pass


def _weights(checkpoint) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model.safetensors"))


def test_resume_after_a_crash_ends_with_the_same_weights(tiny_bert_dir, tmp_path):
    method = METHODS.get("tsdae")  # deletion noise, dropout, tied decoder: every RNG the loop must restore
    cfg = tiny_config(method, tiny_bert_dir, max_steps=6, save_every=2, log_every=1, max_length=16)
    corpus = toy_corpus(32)
    with one_thread():
        straight = train(method, cfg, corpus, tmp_path / "a", seed=3, show_progress=False, device="cpu")

        def crash_at_5(step: int) -> None:
            if step == 5:
                raise Crash

        with pytest.raises(Crash):
            train(method, cfg, corpus, tmp_path / "b", seed=3, show_progress=False, on_step=crash_at_5, device="cpu")
        assert (tmp_path / "b" / "train_state" / "state.pt").is_file()
        resumed = train(method, cfg, corpus, tmp_path / "b", seed=3, show_progress=False, device="cpu")
    assert resumed.resumed_from == 4  # the last state: step 4 (saved every 2 steps, crash after step 5)
    a, b = _weights(straight.checkpoint), _weights(resumed.checkpoint)
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)
    steps = [json.loads(line)["step"] for line in (tmp_path / "b" / "log.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 7))  # no step logged twice after the resume
    assert not (tmp_path / "b" / "train_state").exists()  # dropped after the export


@pytest.mark.parametrize(("crashed", "resumed"), [("2", "2"), ("2", "0"), ("0", "2")])
def test_resume_with_collate_workers_ends_with_the_weights_of_a_run_without_them(tiny_bert_dir, tmp_path,
                                                                                  monkeypatch, crashed, resumed):
    """Batches collated ahead by seeded workers ($BENCH_TRAIN_WORKERS): a run that crashes with one worker count
    and resumes with another ends with the weights of a straight run collated in the loop itself."""
    method = METHODS.get("tsdae")  # deletion noise drawn in collate: the workers' RNG must follow the step
    cfg = tiny_config(method, tiny_bert_dir, max_steps=6, save_every=2, log_every=1, max_length=16)
    corpus = toy_corpus(32)
    with one_thread():
        monkeypatch.setenv("BENCH_TRAIN_WORKERS", "0")
        straight = train(method, cfg, corpus, tmp_path / "a", seed=3, show_progress=False, device="cpu")

        def crash_at_5(step: int) -> None:
            if step == 5:
                raise Crash

        monkeypatch.setenv("BENCH_TRAIN_WORKERS", crashed)
        with pytest.raises(Crash):
            train(method, cfg, corpus, tmp_path / "b", seed=3, show_progress=False, on_step=crash_at_5, device="cpu")
        monkeypatch.setenv("BENCH_TRAIN_WORKERS", resumed)
        again = train(method, cfg, corpus, tmp_path / "b", seed=3, show_progress=False, device="cpu")
    assert again.resumed_from == 4
    a, b = _weights(straight.checkpoint), _weights(again.checkpoint)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)


def test_finished_run_is_not_retrained_and_other_methods_are_refused(tiny_bert_dir, tmp_path):
    simcse, ct = METHODS.get("simcse"), METHODS.get("ct")
    corpus = toy_corpus(32)
    with one_thread():
        first = train(simcse, tiny_config(simcse, tiny_bert_dir, max_steps=3), corpus, tmp_path, show_progress=False,
                      device="cpu")
        again = train(simcse, tiny_config(simcse, tiny_bert_dir, max_steps=3), corpus, tmp_path, show_progress=False,
                      device="cpu")
        assert again.history == [] and again.checkpoint == first.checkpoint
        with pytest.raises(ConfigError, match="holds method 'simcse'"):
            train(ct, tiny_config(ct, tiny_bert_dir, max_steps=3), corpus, tmp_path, show_progress=False, device="cpu")


def test_train_state_of_another_method_is_refused(tiny_bert_dir, tmp_path):
    simcse, mlm = METHODS.get("simcse"), METHODS.get("mlm")
    corpus = toy_corpus(32)

    def crash(step: int) -> None:
        if step == 2:
            raise Crash

    with one_thread(), pytest.raises(Crash):
        train(simcse, tiny_config(simcse, tiny_bert_dir, max_steps=4, save_every=1), corpus, tmp_path,
              show_progress=False, on_step=crash, device="cpu")
    with one_thread(), pytest.raises(ConfigError, match=r"train state of method 'simcse'.*not 'mlm'"):
        train(mlm, tiny_config(mlm, tiny_bert_dir, max_steps=4), corpus, tmp_path, show_progress=False, device="cpu")


@dataclass(frozen=True)
class NanConfig(TrainConfig):
    bad_step: int = 3


class NanModule(TrainModule):
    def __init__(self, cfg: NanConfig):
        super().__init__()
        model, self.tokenizer, _ = load_backbone(cfg.model)
        self.encoder = SentenceEncoder(model, "mean")
        self.calls, self.bad_step = 0, cfg.bad_step

    def forward(self, batch):
        self.calls += 1
        loss = self.encoder(**batch).pow(2).mean()
        return loss * float("nan") if self.calls == self.bad_step else loss


class NanMethod(Method):
    name, Config = "nan-test", NanConfig
    presets = {"paper": {}, "official": {}, "smoke": {}}

    def build(self, cfg, device):
        return NanModule(cfg)

    def collate(self, cfg, tokenizer, texts, rng):
        return tokenize(tokenizer, texts, cfg.max_length)


def test_nan_loss_stops_with_a_clear_message(tiny_bert_dir, tmp_path):
    cfg = NanMethod().config("smoke", model=str(tiny_bert_dir), max_steps=5, batch_size=4)
    with one_thread(), pytest.raises(TrainingDivergedError, match=r"loss is nan at step 3 \(lr"):
        train(NanMethod(), cfg, toy_corpus(16), tmp_path, show_progress=False, device="cpu")


def test_bad_corpora(tiny_bert_dir, tmp_path):
    cfg = TrainConfig(batch_size=4, max_chars=10)
    with pytest.raises(BenchError, match="empty"):
        prepare_corpus([], cfg, 4)
    with pytest.raises(BenchError, match="empty"):
        prepare_corpus(["", "   ", "\t"], cfg, 4)
    with pytest.raises(BenchError, match="fewer than one batch"):
        prepare_corpus(["a", "b", "", "c"], cfg, 4)
    assert prepare_corpus([" a ", "", "x" * 50, "b", "c"], cfg, 4) == ["a", "x" * 10, "b", "c"]


def test_log_lines_and_epoch_budget(tiny_bert_dir, tmp_path):
    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=None, epochs=1.5, log_every=2)
    with one_thread():
        result = train(method, cfg, toy_corpus(40), tmp_path, show_progress=False, device="cpu")
    assert result.steps == 8  # 40 // 8 = 5 steps per epoch, x 1.5 -> ceil(7.5)
    lines = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [ln["step"] for ln in lines] == [2, 4, 6, 8]
    assert {"loss", "lr", "steps_per_s", "elapsed_s"} <= lines[0].keys()


def test_autocast_is_fp32_on_cpu_unless_asked():
    cpu = torch.device("cpu")
    assert not isinstance(autocast_context(TrainConfig(amp="auto"), cpu), torch.autocast)
    assert isinstance(autocast_context(TrainConfig(amp="bf16"), cpu), torch.autocast)


@pytest.mark.slow
def test_ddp_two_processes_on_cpu(tiny_bert_dir, tmp_path):
    """torchrun with 2 gloo ranks: training runs, rank 0 exports, both ranks end with identical weights."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    worker = Path(__file__).with_name("ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(worker),
           str(tiny_bert_dir), str(tmp_path / "run")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoint" / "method.json").is_file()
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]  # written once (rank 0), not once per rank
    r0, r1 = (torch.load(tmp_path / "run" / f"rank{r}.pt") for r in (0, 1))
    for k in r0:
        torch.testing.assert_close(r0[k], r1[k], rtol=0, atol=0, msg=k)


def test_export_max_length_is_the_evaluation_length(tiny_bert_dir):
    from types import SimpleNamespace

    from usebench.train.loop_state import eval_max_length

    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=512))
    assert eval_max_length(TrainConfig(model="minilm", max_length=32), model) == 256  # MiniLM's declared limit
    assert eval_max_length(TrainConfig(model="minilm", eval_max_length=64), model) == 64
    tiny = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=128))
    assert eval_max_length(TrainConfig(model=str(tiny_bert_dir)), tiny) == 128  # 512 default, capped
