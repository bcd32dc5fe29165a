"""BERT-flow's Glow as a sentence-transformers module, so an exported BERT-flow checkpoint loads with
``SentenceTransformer(path, trust_remote_code=True)`` and gives the same z as ``bench eval``.

The module sits after the (base) pooling modules and maps ``features["sentence_embedding"]`` u to the flow's z.
Its folder (``flow/`` in our checkpoints) holds ``config.json`` (the Glow's shape and the base pooling) and
``model.safetensors`` (the Glow's state dict, the same file :mod:`usebench.methods.bertflow`'s ``flow`` pooling reads).
sentence-transformers >= 6 imports classes outside its own namespace only with ``trust_remote_code=True``.
"""
from __future__ import annotations

import os
from typing import Any, ClassVar

import torch
from sentence_transformers.base.modules.module import Module

from usebench.methods.parts.flow import Glow

WEIGHTS_FILE = "model.safetensors"


class FlowPooling(Module):
    """sentence-transformers module: ``sentence_embedding`` u -> Glow latent z (computed in fp32)."""

    config_keys: ClassVar[list[str]] = ["dim", "levels", "depth", "width", "base_pooling"]

    def __init__(self, dim: int, levels: int = 3, depth: int = 3, width: int = 32,
                 base_pooling: str = "first_last_avg"):
        super().__init__()
        self.dim, self.levels, self.depth, self.width, self.base_pooling = dim, levels, depth, width, base_pooling
        self.glow = Glow(dim, levels, depth, width)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        u = features["sentence_embedding"]
        with torch.autocast(u.device.type, enabled=False):
            z, _ = self.glow(u.float())
        features["sentence_embedding"] = z
        return features

    def get_embedding_dimension(self) -> int:
        return self.dim

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        from safetensors.torch import save_file

        self.save_config(output_path)
        save_file({k: v.contiguous() for k, v in self.glow.state_dict().items()},
                  os.path.join(output_path, WEIGHTS_FILE))

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs: Any) -> FlowPooling:
        from safetensors.torch import load_file

        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder, "revision": revision,
               "local_files_only": local_files_only}
        module = cls(**cls.load_config(model_name_or_path, **hub))
        weights = cls.load_file_path(model_name_or_path, WEIGHTS_FILE, **hub)
        module.glow.load_state_dict(load_file(weights))
        return module.eval()
