"""Reference implementations of one training step, for ``bench_train.py``: moved into the package as
:mod:`usebench.doctor.references` (``bench doctor`` times them too); this module re-exports it for scripts
and tests that import ``bench_train_refs``."""
from __future__ import annotations

from usebench.doctor.references import (  # noqa: F401
    REFERENCES,
    HFMaskedLM,
    RefLoop,
    RefStep,
    fused_adamw,
    reference,
    reference_note,
    st_losses,
    st_model,
)
