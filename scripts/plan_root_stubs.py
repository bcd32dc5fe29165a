"""The stubs of scripts/plan_root.py's synthetic root that are not data: a config-only Hugging Face hub cache (the
architecture fields of every hub model the recipes and presets name, no weights) and, on a machine without WordNet,
the two files the planner's WordNet presence check looks for."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path


def write_json(path: Path, obj: object) -> None:
    """``obj`` as compact JSON (the releases' JSON files are not indented either)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


# --- the hub stub --------------------------------------------------------------------------------------------
_BERT = {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False,
         "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
         "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
         "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute",
         "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": True, "vocab_size": 30522}
_ROBERTA = {"architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
            "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
            "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05,
            "max_position_embeddings": 514, "model_type": "roberta", "num_attention_heads": 12,
            "num_hidden_layers": 12, "pad_token_id": 1, "type_vocab_size": 1, "vocab_size": 50265}
# The architecture fields of each hub model the recipes and presets name (bert-base-uncased: the file recorded in
# usebench/report/published_backbones.json; the others as the hub's config.json files have them).
HUB_CONFIGS: dict[str, dict] = {
    "bert-base-uncased": _BERT,
    "distilbert-base-uncased": {
        "activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1, "dim": 768,
        "dropout": 0.1, "hidden_dim": 3072, "initializer_range": 0.02, "max_position_embeddings": 512,
        "model_type": "distilbert", "n_heads": 12, "n_layers": 6, "pad_token_id": 0, "qa_dropout": 0.1,
        "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True, "vocab_size": 30522},
    "roberta-base": _ROBERTA,
    "distilroberta-base": {**_ROBERTA, "num_hidden_layers": 6},
    "google/electra-base-discriminator": {
        "architectures": ["ElectraForPreTraining"], "attention_probs_dropout_prob": 0.1, "embedding_size": 768,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
        "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "electra",
        "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "type_vocab_size": 2,
        "vocab_size": 30522},
    "facebook/bart-base": {
        "activation_dropout": 0.1, "activation_function": "gelu", "architectures": ["BartModel"],
        "attention_dropout": 0.1, "bos_token_id": 0, "d_model": 768, "decoder_attention_heads": 12,
        "decoder_ffn_dim": 3072, "decoder_layers": 6, "decoder_start_token_id": 2, "dropout": 0.1,
        "encoder_attention_heads": 12, "encoder_ffn_dim": 3072, "encoder_layers": 6, "eos_token_id": 2,
        "forced_eos_token_id": 2, "init_std": 0.02, "is_encoder_decoder": True, "max_position_embeddings": 1024,
        "model_type": "bart", "normalize_embedding": True, "num_hidden_layers": 6, "pad_token_id": 1,
        "scale_embedding": False, "vocab_size": 50265},
    "t5-base": {
        "architectures": ["T5ForConditionalGeneration"], "d_ff": 3072, "d_kv": 64, "d_model": 768,
        "decoder_start_token_id": 0, "dropout_rate": 0.1, "eos_token_id": 1, "initializer_factor": 1.0,
        "is_encoder_decoder": True, "layer_norm_epsilon": 1e-06, "model_type": "t5", "n_positions": 512,
        "num_heads": 12, "num_layers": 12, "pad_token_id": 0, "relative_attention_num_buckets": 32,
        "vocab_size": 32128},
    "kwang2049/SBERT-base-nli-v2": {**_BERT, "architectures": ["BertModel"]},
    "kwang2049/SBERT-base-nli-stsb-v2": {**_BERT, "architectures": ["BertModel"]},
}
# sentence-transformers' files of the two published SBERT checkpoints (mean pooling, TSDAE paper Table 8)
ST_FILES = {"modules.json": [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                             {"idx": 1, "name": "1", "path": "1_Pooling",
                              "type": "sentence_transformers.models.Pooling"}],
            "sentence_bert_config.json": {"max_seq_length": 75, "do_lower_case": False},
            "1_Pooling/config.json": {"word_embedding_dimension": 768, "pooling_mode_cls_token": False,
                                      "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                                      "pooling_mode_mean_sqrt_len_tokens": False}}


def hub_stub(hub: Path) -> list[str]:
    """huggingface_hub's cache layout, one snapshot per model holding config.json (and the SBERT files)."""
    for model, config in HUB_CONFIGS.items():
        repo = hub / ("models--" + model.replace("/", "--"))
        revision = hashlib.sha1(f"plan-root:{model}".encode()).hexdigest()
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs/main").write_text(revision, encoding="utf-8")
        snapshot = repo / "snapshots" / revision
        write_json(snapshot / "config.json", config)
        if model.startswith("kwang2049/"):
            for rel, obj in ST_FILES.items():
                write_json(snapshot / rel, obj)
    return list(HUB_CONFIGS)


def wordnet_stub(folder: Path) -> Path | None:
    """The files WordNet's presence check looks for, unless this machine has WordNet (then None)."""
    from usebench.methods.parts.synonyms import find_wordnet_dir  # imports the plugins (torch): a few seconds

    if find_wordnet_dir() is not None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("index.noun", "data.noun"):
        (folder / name).write_text("  1 plan-root stub: not WordNet (the planner only checks it is there)\n")
    return folder
