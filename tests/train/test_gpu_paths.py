"""The GPU paths of training, checked on the CPU (issue 30): DDP's device choice, fp16's LR schedule when the
loss scaler skips a step, the deterministic switch, and that tests never train on a GPU by accident."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from usebench import methods  # noqa: F401  (enrols the plugins)
from usebench.errors import BenchError
from usebench.registry import METHODS
from usebench.train import runtime
from usebench.train.loop import train
from tests.methods.helpers import one_thread, tiny_config, toy_corpus

ROOT = Path(__file__).resolve().parents[2]


class _FakeDist:
    """torch.distributed as init_distributed sees it: records the backend asked for."""

    def __init__(self):
        self.backend = None

    def is_initialized(self):
        return False

    def init_process_group(self, backend):
        self.backend = backend

    def get_rank(self):
        return 1

    def get_world_size(self):
        return 2


@pytest.fixture
def rank1_of_2_on_a_one_gpu_host(monkeypatch):
    """LOCAL_RANK 1 of a 2-process job on a machine with one GPU; returns (fake dist, GPUs set)."""
    import torch.distributed

    fake, chosen = _FakeDist(), []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    for name in ("is_initialized", "init_process_group", "get_rank", "get_world_size"):
        monkeypatch.setattr(torch.distributed, name, getattr(fake, name))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    return fake, chosen


def test_ddp_with_device_cpu_uses_gloo_and_touches_no_gpu(rank1_of_2_on_a_one_gpu_host):
    fake, chosen = rank1_of_2_on_a_one_gpu_host
    dist = runtime.init_distributed("cpu")
    assert fake.backend == "gloo" and chosen == [] and (dist.rank, dist.world, dist.local_rank) == (1, 2, 1)


def test_ddp_on_cuda_needs_a_gpu_per_local_rank(rank1_of_2_on_a_one_gpu_host, monkeypatch):
    fake, chosen = rank1_of_2_on_a_one_gpu_host
    with pytest.raises(BenchError, match="LOCAL_RANK=1 needs GPU 1, but this machine has 1"):
        runtime.init_distributed("cuda")
    with pytest.raises(BenchError, match="--device cpu"):
        runtime.init_distributed(None)  # a visible GPU and no --device: CUDA
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    runtime.init_distributed(None)
    assert fake.backend == "nccl" and chosen == [1]


def _scheduler_steps_at_2(method, cfg, tmp_path) -> tuple[int, dict]:
    """Train 4 steps saving the state at step 2: (the scheduler's step count there, the module's weights)."""
    seen: dict = {}

    def peek(step: int) -> None:
        if step == 3:
            seen.update(torch.load(tmp_path / "train_state" / "state.pt", weights_only=False))

    with one_thread():
        result = train(method, cfg, toy_corpus(40), tmp_path, show_progress=False, on_step=peek, device="cpu")
    return seen["scheduler"]["last_epoch"], {k: v.clone() for k, v in result.module.state_dict().items()}


def test_fp16_steps_the_scaler_skipped_do_not_advance_the_lr_schedule(tiny_bert_dir, tmp_path, monkeypatch):
    """A loss scale of 2^127 overflows every gradient: the GradScaler skips every optimizer step, and the schedule
    (warm-up here) must stay where it was; with the default scale both advance together."""
    from usebench.train import loop

    method = METHODS.get("simcse")
    cfg = tiny_config(method, tiny_bert_dir, amp="fp16", max_steps=4, save_every=2, warmup_steps=10)
    steps, _ = _scheduler_steps_at_2(method, cfg, tmp_path / "default")
    assert steps == 2
    monkeypatch.setattr(loop, "grad_scaler", lambda cfg, dev: torch.amp.GradScaler(dev.type, init_scale=2.0**127))
    steps, after = _scheduler_steps_at_2(method, cfg, tmp_path / "overflow")
    assert steps == 0
    built = method.build(cfg, torch.device("cpu"))  # no optimizer step happened: the weights are the initial ones
    for k, v in built.state_dict().items():
        if k in after and v.dtype.is_floating_point and "mlp" not in k:
            torch.testing.assert_close(after[k], v, rtol=0, atol=0, msg=k)


def test_deterministic_mode_switches_on_and_restores(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    # a process that has not used CUDA yet (on a GPU host, earlier tests in this worker have: that case is below)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert not torch.are_deterministic_algorithms_enabled()
    with runtime.deterministic_mode(True):
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()  # errors, not warnings
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
        import os

        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled()


def test_deterministic_mode_refuses_a_process_whose_cublas_handle_may_exist(monkeypatch):
    """CUBLAS_WORKSPACE_CONFIG is read when the first cuBLAS handle is created: set after CUDA was used, it
    would be silently ignored, so that is an error naming the variable."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(BenchError, match="CUBLAS_WORKSPACE_CONFIG=:4096:8"):
        with runtime.deterministic_mode(True):
            pass
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")  # the user's own, set before: accepted as is
    with runtime.deterministic_mode(True):
        assert torch.are_deterministic_algorithms_enabled()


def test_deterministic_is_requested_by_argument_or_environment(monkeypatch):
    monkeypatch.delenv(runtime.DETERMINISTIC_ENV, raising=False)
    assert runtime.deterministic_requested(None) is False
    monkeypatch.setenv(runtime.DETERMINISTIC_ENV, "1")
    assert runtime.deterministic_requested(None) is True
    assert runtime.deterministic_requested(False) is False


def test_deterministic_training_on_the_cpu_equals_the_default(tiny_bert_dir, tmp_path):
    """Deterministic kernels change nothing on the CPU (its kernels are deterministic): same weights, bit for bit,
    and the switch is off again after train()."""
    method = METHODS.get("tsdae")
    cfg = tiny_config(method, tiny_bert_dir, max_steps=3, max_length=16)
    with one_thread():
        runs = [train(method, cfg, toy_corpus(32), tmp_path / str(d), seed=1, show_progress=False, device="cpu",
                      deterministic=d).module.state_dict() for d in (False, True)]
    assert not torch.are_deterministic_algorithms_enabled()
    for k in runs[0]:
        torch.testing.assert_close(runs[0][k], runs[1][k], rtol=0, atol=0, msg=k)


def _train_calls_without_device(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "train"
            and len(node.args) >= 4 and not any(k.arg in ("device", None) for k in node.keywords)]


def test_every_test_that_trains_says_on_which_device():
    """A train() call without device= trains on CUDA on a GPU host: the atol-0 resume tests would then compare
    GPU runs by accident. GPU tests say device="cuda" and are marked gpu."""
    missing = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "tests").rglob("*.py"))
               if (lines := _train_calls_without_device(p))}
    assert missing == {}
