"""DenoSent's prompt and [MASK] pooling as sentence-transformers modules, so an exported DenoSent checkpoint
loads with ``SentenceTransformer(path, trust_remote_code=True)`` and gives the same vectors as ``bench eval``.

- :class:`PromptedTransformer` (module 0): sentence-transformers' ``Transformer`` that, before tokenizing, cuts
  each text to ``prompt_text_max_length`` tokens (special tokens counted), decodes it and fills the prompt
  template (``{text}``), exactly as :class:`usebench.eval.encoder.HFEncoder` does from method.json. Its settings
  live in ``sentence_bert_config.json`` beside ``max_seq_length`` (= text tokens + prompt tokens).
- :class:`MaskTokenPooling` (module 1): the token embedding at the last ``[MASK]`` of each sequence.

sentence-transformers >= 6 imports classes outside its own namespace only with ``trust_remote_code=True``.
"""
from __future__ import annotations

from typing import Any, ClassVar

from sentence_transformers.base.modules.module import Module
from sentence_transformers.base.modules.transformer import Transformer

from usebench.eval.encoder import truncate_texts


class PromptedTransformer(Transformer):
    """``Transformer`` whose text inputs are truncated, decoded and put into a prompt before tokenizing."""

    config_keys: ClassVar[list[str]] = [*Transformer.config_keys, "prompt_template", "prompt_text_max_length"]

    def __init__(self, model_name_or_path: str, *, prompt_template: str | None = None,
                 prompt_text_max_length: int | None = None, **kwargs: Any):
        super().__init__(model_name_or_path, **kwargs)
        self.prompt_template = prompt_template
        self.prompt_text_max_length = prompt_text_max_length

    def preprocess(self, inputs, prompt: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Fill the prompt for plain-text inputs, then tokenize as the parent does."""
        if self.prompt_template and inputs and all(isinstance(x, str) for x in inputs):
            texts = list(inputs)
            if self.prompt_text_max_length:
                texts = truncate_texts(self.tokenizer, texts, int(self.prompt_text_max_length))
            inputs = [self.prompt_template.replace("{text}", t) for t in texts]
        return super().preprocess(inputs, prompt=prompt, **kwargs)


class MaskTokenPooling(Module):
    """sentence-transformers module: ``token_embeddings`` at the last ``mask_token_id`` of each row."""

    config_keys: ClassVar[list[str]] = ["dimension", "mask_token_id"]

    def __init__(self, dimension: int, mask_token_id: int):
        super().__init__()
        self.dimension, self.mask_token_id = int(dimension), int(mask_token_id)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        from usebench.methods.parts.mask_token import pool_mask_token

        tokens = features["token_embeddings"]  # (bsz, seq, dim)
        features["sentence_embedding"] = pool_mask_token(tokens, features["input_ids"], self.mask_token_id)
        return features

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        self.save_config(output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs: Any) -> MaskTokenPooling:
        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder, "revision": revision,
               "local_files_only": local_files_only}
        return cls(**cls.load_config(model_name_or_path, **hub))
