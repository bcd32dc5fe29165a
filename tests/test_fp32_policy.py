"""The fp32 matmul policy under both of torch's APIs (issue 50, defect 6): once the newer per-backend
``fp32_precision`` API has been used in a process, torch's legacy getters raise; every site that sets a policy for
a block (the fast path's TF32, exact search's full fp32, the doctor's precision columns and matmul probe) must
still work there and put the caller's per-backend settings back exactly."""
from __future__ import annotations

import pytest
import torch

from usebench.eval import retrieval
from usebench.doctor import probes, steptime
from usebench.train import fast_path
from usebench.fp32_policy import SITES, fp32_matmul_policy, new_api, saved_policy, tf32_matmuls_on

pytestmark = pytest.mark.skipif(not new_api(), reason="this torch has only the legacy precision API")


def _sites() -> dict[tuple[str, str], str]:
    return {(b, op): getattr(getattr(torch.backends, b), op).fp32_precision for b, op in SITES}


@pytest.fixture
def mixed_api():
    """A process where someone set CUDA matmuls to TF32 through the newer API: the legacy getter raises."""
    before = saved_policy()
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    try:
        yield _sites()
    finally:  # the test session's settings back (the legacy summary first, then each backend's)
        torch.set_float32_matmul_precision(before.legacy or "highest")
        for backend, op, value in before.sites:
            getattr(getattr(torch.backends, backend), op).fp32_precision = value


def test_torch_refuses_the_legacy_getter_after_the_newer_api(mixed_api):
    """The torch behaviour the module exists for (if a torch stops raising here, the module is still right)."""
    with pytest.raises(RuntimeError, match="legacy and new APIs"):
        torch.get_float32_matmul_precision()
    assert tf32_matmuls_on()


BLOCKS = {
    "fast path tf32": (fast_path.tf32_matmuls, True),
    "exact search": (retrieval.full_fp32_matmuls, False),
    "doctor tf32 column": (lambda: steptime.matmul_precision("tf32"), True),
    "doctor fp32 column": (lambda: steptime.matmul_precision("fp32"), False),
}


@pytest.mark.parametrize("name", BLOCKS)
def test_every_policy_block_works_in_a_mixed_process_and_restores_it(mixed_api, name):
    block, tf32 = BLOCKS[name]
    with block():
        assert tf32_matmuls_on() is tf32 and steptime.tf32_on() is tf32
        # consistent inside the block: inductor's autotuning keys read the legacy summary
        assert torch.get_float32_matmul_precision() == ("high" if tf32 else "highest")
        assert torch.backends.cudnn.conv.fp32_precision == ("tf32" if tf32 else "ieee")
        if not tf32:  # full precision everywhere, the CPU's oneDNN matmuls included
            assert torch.backends.mkldnn.matmul.fp32_precision == "ieee"
        else:  # TF32 is a CUDA policy: the CPU's oneDNN setting is the caller's
            assert torch.backends.mkldnn.matmul.fp32_precision == mixed_api[("mkldnn", "matmul")]
    assert _sites() == mixed_api  # exactly the caller's per-backend settings


def test_the_doctor_matmul_probe_runs_in_a_mixed_process(mixed_api):
    assert probes.matmul_tflops("cpu", "tf32", 8, reps=1) > 0
    assert probes.matmul_tflops("cpu", "fp32", 8, reps=1) > 0
    assert _sites() == mixed_api


def test_a_legacy_caller_gets_its_legacy_setting_back():
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        sites = _sites()
        with fp32_matmul_policy(tf32=False):
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "medium" and _sites() == sites
    finally:
        torch.set_float32_matmul_precision(before)
