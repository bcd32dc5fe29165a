"""The encoder of an encoder-decoder checkpoint (BART, T5), wherever the suite embeds sentences with one.

``AutoModel`` of a BART checkpoint is ``BartModel``, whose forward on ``input_ids`` alone runs the *decoder* on
the shifted input and returns its states; of a T5 checkpoint it is ``T5Model``, which refuses to run without
decoder inputs. A sentence embedding from such a checkpoint is a pooling of its encoder's states (TSDAE paper
§8 / Table 4: BART-base and T5-base as TSDAE encoders), so both the evaluator and the trainers take the encoder
stack: T5-family checkpoints load as ``T5EncoderModel`` (sentence-transformers does the same), others as the
``get_encoder()`` of their ``AutoModel``.
"""
from __future__ import annotations

from typing import Any

# Model types whose encoder loads as its own transformers class (the decoder weights are skipped, not built).
T5_ENCODERS = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}


def is_encoder_decoder(config: Any) -> bool:
    """Whether an HF config describes an encoder-decoder model."""
    return bool(getattr(config, "is_encoder_decoder", False))


def load_encoder_model(path: str, **kwargs: Any) -> Any:
    """The model that embeds sentences for ``path``: ``AutoModel`` for encoders, the encoder stack for
    encoder-decoder checkpoints. ``kwargs`` go to ``from_pretrained`` (``local_files_only``, ``config``)."""
    import transformers
    from transformers import AutoConfig, AutoModel

    config = kwargs.get("config")
    if config is None:
        local = {"local_files_only": True} if kwargs.get("local_files_only") else {}
        config = AutoConfig.from_pretrained(path, **local)
    if not is_encoder_decoder(config):
        return AutoModel.from_pretrained(path, **kwargs)
    if config.model_type in T5_ENCODERS:
        return getattr(transformers, T5_ENCODERS[config.model_type]).from_pretrained(path, **kwargs)
    return AutoModel.from_pretrained(path, **kwargs).get_encoder()
