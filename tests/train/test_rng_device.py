"""The train state keeps the RNG of the training device only, and restores it onto the training device whatever
its index now: a run saved on GPU 3 of an 8-GPU box resumes on the only GPU a Ray task or SLURM job sees
(simulated without a GPU: torch.cuda's RNG functions replaced by a fake of N devices)."""
from __future__ import annotations

import pytest
import torch

from usebench.train import checkpoint


class FakeCuda:
    def __init__(self, n: int):
        self.states = {k: torch.tensor([k], dtype=torch.uint8) for k in range(n)}
        self.n = n

    def get_rng_state(self, device="cuda"):
        return self.states[torch.device(device).index or 0].clone()

    def set_rng_state(self, state, device="cuda"):
        index = torch.device(device).index or 0
        if index >= self.n:
            raise RuntimeError(f"invalid device ordinal {index}")
        self.states[index] = state.clone()

    def get_rng_state_all(self):
        return [self.states[k] for k in range(self.n)]


@pytest.fixture
def gpus(monkeypatch):
    def install(n):
        fake = FakeCuda(n)
        for name in ("get_rng_state", "set_rng_state", "get_rng_state_all"):
            monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        return fake
    return install


def test_only_the_training_devices_rng_is_saved_and_it_goes_back_onto_the_training_device(gpus):
    box = gpus(8)
    box.states[3] = torch.tensor([33], dtype=torch.uint8)
    state = checkpoint.rng_state("cuda:3")
    assert "cuda" not in state and state["cuda_device"].tolist() == [33]
    job = gpus(1)  # resumed as a Ray task / SLURM job: its GPU is cuda:0
    checkpoint.set_rng_state(state, "cuda:0")
    assert job.states[0].tolist() == [33]


def test_a_state_saved_on_the_cpu_or_before_resumes_anywhere(gpus):
    on_cpu = checkpoint.rng_state("cpu")
    assert "cuda_device" not in on_cpu
    job = gpus(1)
    checkpoint.set_rng_state(on_cpu, "cuda:0")  # the GPU generator stays as seeded
    assert job.states[0].tolist() == [0]
    old = {**on_cpu, "cuda": [torch.tensor([k + 50], dtype=torch.uint8) for k in range(8)]}  # every GPU's
    checkpoint.set_rng_state(old, "cuda:0")  # before: set_rng_state_all on 1 GPU failed on device 1
    assert job.states[0].tolist() == [50]
