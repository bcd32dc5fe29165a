"""The lean loop: the same model and loss as ours (the plugin's train module, built as the shared loop builds it)
stepped by the least code that trains it, the ``lean`` column of ``bench doctor`` and ``scripts/bench_train.py``.

Per step: the pre-collated batch copied to the device, the forward under autocast (bf16/fp16), backward, gradient
clipping where the trainer clips, fused AdamW where the device has it (foreach otherwise), ``zero_grad``. No logging,
no LR schedule, no data loader, no loss read back, no NaN guard: what is left of our loop's time over this one is
the loop's own overhead plus its optimizer choice (RMSprop for CT, BertAdam for MLM and BERT-flow: the presets'
optimizers, recorded in each row). With ``optimizer="trainer"`` the lean loop steps the trainer's own optimizer
(``build_optimizer``: on a CPU torch's per-parameter loop over cache-sized blocks, bit for bit torch's loop, about
twice the fused kernel's time), so what is left is the loop's overhead alone.
"""
from __future__ import annotations

from typing import Any

import torch

from usebench.doctor.references import AUTOCAST, fused_adamw


class LeanStep:
    """One trainer's module in a minimal loop on ``device`` at ``amp`` ("fp32", "tf32", "bf16", "fp16")."""

    def __init__(self, method: Any, cfg: Any, device: str, amp: str, optimizer: str = "fused"):
        from usebench.train.optim import build_optimizer, unique_parameters
        from usebench.train.runtime import seed_everything

        self.device = torch.device(device)
        seed_everything(0)  # as the loop seeds before building: new heads initialise the same way
        self.module = method.build(cfg, self.device).to(self.device)
        self.module.train()
        named = unique_parameters(method.trainable_parameters(self.module))
        self.params = [p for _, p in named]
        if optimizer == "trainer":
            self.optimizer = build_optimizer(cfg, named)
            self.optimizer_label = f"{type(self.optimizer).__name__} (the trainer's)"
        elif optimizer == "fused":
            self.optimizer, self.optimizer_label = fused_adamw(self.params, cfg.lr)
        else:
            raise ValueError(f"lean optimizer: 'fused' or 'trainer', not {optimizer!r}")
        self.clip = cfg.grad_clip
        self.dtype = AUTOCAST.get(amp)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=amp == "fp16")

    def step(self, batch: Any) -> None:
        """One optimizer step on a host batch (``Method.collate``'s output)."""
        from usebench.train.runtime import to_device

        batch = to_device(batch, self.device)
        with torch.autocast(self.device.type, dtype=self.dtype or torch.bfloat16, enabled=self.dtype is not None):
            out = self.module(batch)
        loss = out if isinstance(out, torch.Tensor) else out["loss"]
        self.scaler.scale(loss).backward()
        if self.clip is not None:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.params, self.clip, foreach=True)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
