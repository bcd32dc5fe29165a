"""The fp32 matmul policy (TF32 or full precision), read and set safely under both of torch's APIs.

torch has two ways to say whether float32 matmuls and cuDNN convolutions may run in TF32: the legacy one
(``torch.set_float32_matmul_precision``, ``torch.backends.cuda.matmul.allow_tf32``,
``torch.backends.cudnn.allow_tf32``) and, since torch 2.9, one setting per backend and operation
(``torch.backends.cuda.matmul.fp32_precision = "tf32" | "ieee" | "none"``, likewise ``mkldnn.matmul``,
``cudnn.conv``, ``cudnn.rnn``). Once anything in the process has used the newer API in a way the legacy summary
cannot express (e.g. ``cuda.matmul`` at ``tf32`` alone), the legacy *getters* raise a RuntimeError ("you have used
mix of the legacy and new APIs"), while the setters of both keep working. So this module reads the per-backend
settings (they never raise), remembers them before a block and restores them exactly afterwards, and sets a block's
policy through the legacy setter first: that keeps the legacy summary consistent inside the block, which inductor
still reads (``torch.get_float32_matmul_precision()`` in its autotuning cache keys). On a torch without the newer
API the legacy calls are used alone.

- :func:`tf32_matmuls_on`: whether CUDA fp32 matmuls may run in TF32 now.
- :func:`fp32_matmul_policy`: a block with TF32 on (CUDA matmuls and cuDNN; the CPU's oneDNN setting kept as the
  caller had it) or with every fp32 matmul at full precision, the caller's settings restored afterwards.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

# (backend, operation) pairs of the per-backend API that a policy block touches and restores
SITES: tuple[tuple[str, str], ...] = (("cuda", "matmul"), ("mkldnn", "matmul"), ("cudnn", "conv"), ("cudnn", "rnn"))


def new_api() -> bool:
    """Whether this torch has the per-backend ``fp32_precision`` settings (torch >= 2.9)."""
    try:
        return isinstance(torch.backends.cuda.matmul.fp32_precision, str)
    except (AttributeError, RuntimeError):
        return False


def _site(backend: str, op: str) -> object:
    return getattr(getattr(torch.backends, backend), op)


def tf32_matmuls_on() -> bool:
    """Whether CUDA fp32 matmuls may run in TF32 now (cuBLAS' setting; meaningless on a CPU). Never raises."""
    if new_api():
        return torch.backends.cuda.matmul.fp32_precision == "tf32"
    return bool(torch.backends.cuda.matmul.allow_tf32)


@dataclass(frozen=True)
class Saved:
    """The caller's settings before a policy block: the legacy summary (None where reading it raised: a mix of
    the two APIs) and each :data:`SITES` setting (empty on a torch without the newer API)."""

    legacy: str | None
    cudnn_tf32: bool | None  # the legacy cuDNN flag, where the newer API is missing
    sites: tuple[tuple[str, str, str], ...]


def saved_policy() -> Saved:
    """The current settings (:class:`Saved`), read without ever raising."""
    try:
        legacy: str | None = torch.get_float32_matmul_precision()
    except RuntimeError:  # the newer API was used: the per-backend settings below say it all
        legacy = None
    if not new_api():
        return Saved(legacy, bool(torch.backends.cudnn.allow_tf32), ())
    return Saved(legacy, None, tuple((b, op, _site(b, op).fp32_precision) for b, op in SITES))


def restore_policy(saved: Saved) -> None:
    """Put back what :func:`saved_policy` read: the legacy summary first, then each backend's setting exactly."""
    if saved.legacy is not None:
        torch.set_float32_matmul_precision(saved.legacy)
    if saved.cudnn_tf32 is not None:
        torch.backends.cudnn.allow_tf32 = saved.cudnn_tf32
    for backend, op, value in saved.sites:
        _site(backend, op).fp32_precision = value


def set_policy(tf32: bool, saved: Saved) -> None:
    """TF32 for CUDA fp32 matmuls and cuDNN (``tf32``), else every fp32 matmul (CUDA and the CPU's oneDNN) and
    cuDNN at full precision. ``saved``: the caller's settings (the CPU's oneDNN setting is theirs under TF32)."""
    torch.set_float32_matmul_precision("high" if tf32 else "highest")  # also the legacy summary inductor reads
    if not new_api():
        torch.backends.cudnn.allow_tf32 = tf32
        return
    value = "tf32" if tf32 else "ieee"
    torch.backends.cudnn.conv.fp32_precision = value
    torch.backends.cudnn.rnn.fp32_precision = value
    if tf32:  # TF32 is a CUDA policy: the CPU's oneDNN matmuls stay as the caller set them
        mkldnn = dict(((b, op), v) for b, op, v in saved.sites)[("mkldnn", "matmul")]
        if mkldnn != "bf16":  # bf16 there needs the legacy "medium": leaving "high" in force keeps it readable
            torch.backends.mkldnn.matmul.fp32_precision = mkldnn


@contextmanager
def fp32_matmul_policy(tf32: bool) -> Iterator[None]:
    """fp32 matmuls (and cuDNN convolutions) in TF32 (``tf32``: ~8x the fp32 rate on tensor cores, 10-bit mantissa
    products) or at full precision for the block; the caller's settings, under either API, restored after."""
    saved = saved_policy()
    set_policy(tf32, saved)
    try:
        yield
    finally:
        restore_policy(saved)
