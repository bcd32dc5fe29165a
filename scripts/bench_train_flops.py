"""The matmul work of one training step, for ``bench_train.py``: the counting lives in the package
(:mod:`usebench.doctor.flops`, shared with ``bench doctor``); this module re-exports it under its old name."""
from __future__ import annotations

from usebench.doctor.flops import STEP_GEMMS, Gemm, GemmTimer, Shape, attention, lm_head, stack, step_gemms

__all__ = ["STEP_GEMMS", "Gemm", "GemmTimer", "Shape", "attention", "lm_head", "stack", "step_gemms"]
