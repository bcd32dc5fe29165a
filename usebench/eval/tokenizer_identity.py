"""A tokenizer's identity by content: what decides the ids a model sees, never the bytes one library version wrote.

The same tokenizer is stored in several ways: bert-base-uncased's hub snapshot of 2019 has ``vocab.txt`` alone
(transformers lowercases by default and takes the length limit from the model), today's has a 48-byte
``tokenizer_config.json`` and a ``tokenizer.json`` too, and ``save_pretrained`` rewrites both in its own format. Hashing
those files would call one tokenizer three; hashing none of them (the backbone fingerprint before issue 38) let
reversed vocabulary ids, lowercasing turned off or a model_max_length of 8 pass as bert-base-uncased. So the identity
is what the loaded tokenizer does, the way the suite loads it (``AutoTokenizer``, local files only):

- ``vocab_sha256``: every token with its id (added tokens included), in id order;
- ``behaviour_sha256``: the ids of :data:`PROBE` (case, accents, CJK, punctuation, control characters, an over-long
  word, whitespace), which decide lowercasing, accent stripping, the pre-tokenizer and the special tokens around a
  sentence;
- ``special_token_ids``: the ids of [CLS]/[SEP]/[PAD]/[UNK]/[MASK] (or the tokenizer's equivalents);
- ``model_max_length``: the length limit it applies by itself, capped by the model's positions (no limit in the file
  is the model's limit, as transformers applies it).

The files it was read from are listed with their sha256 beside the identity (``files_sha256``), for the record.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

# Inputs whose ids tell the normalisation and pre-tokenization apart (each line exercises one rule).
PROBE = (
    "Hello World, THIS is A Test.",  # lowercasing
    "Café naïve résumé Über façade",  # accent stripping
    "中文字符和日本語のテキスト",  # CJK characters split one by one
    "don't stop-believing: 3.14 ≈ π! (yes) [x] {y} <z> @user #tag $5 %50 &",  # punctuation
    "tab\there\nnew line\r\nand  double  spaces\u00a0nbsp",  # whitespace
    "control\u0007char zero\u200bwidth emoji🙂 end",  # control and unusual characters
    "a" * 120,  # longer than a WordPiece word may be
    "[MASK] [CLS] [SEP] [PAD] [UNK] <mask> <s> </s>",  # special tokens written in the text
)
# Files a tokenizer is read from (for the record beside the identity; the identity itself is what it does).
TOKENIZER_FILES = ("vocab.txt", "vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json")
TOKENIZER_SUFFIXES = (".model", ".tiktoken")  # SentencePiece and tiktoken vocabularies
_SPECIAL = ("cls_token", "sep_token", "pad_token", "unk_token", "mask_token", "bos_token", "eos_token")
UNLIMITED = 10**9  # transformers' "no limit" is 1e30; anything this large is none


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokenizer_files(path: Path) -> dict[str, str]:
    """sha256 of every tokenizer file in the model folder ``path`` (empty: it has none)."""
    out = {}
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.name in TOKENIZER_FILES or f.suffix in TOKENIZER_SUFFIXES):
            out[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def tokenizer_identity(path: str | Path, positions: int | None = None) -> dict[str, Any] | None:
    """``{"sha256", "vocab_sha256", "behaviour_sha256", "special_token_ids", "model_max_length", "files_sha256"}``
    of the tokenizer in the model folder ``path`` (see the module docstring); ``positions`` is the model's
    ``max_position_embeddings``. None when the folder holds no tokenizer files or none loads."""
    path = Path(path)
    files = tokenizer_files(path)
    if not files:
        return None
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    parts = _identity_parts(tok, positions)
    return {"sha256": _sha256(json.dumps(parts, sort_keys=True)), **parts, "files_sha256": files}


def _identity_parts(tok: Any, positions: int | None) -> dict[str, Any]:
    """The four parts the identity hashes (module docstring)."""
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
    ids = [tok(text, add_special_tokens=True, truncation=False, padding=False, verbose=False)["input_ids"]
           for text in PROBE]
    special = {name: tok.convert_tokens_to_ids(str(getattr(tok, name))) for name in _SPECIAL
               if getattr(tok, name, None) is not None}
    limits = [n for n in (getattr(tok, "model_max_length", None), positions) if n and n < UNLIMITED]
    return {"vocab_sha256": _sha256("\n".join(f"{i}\t{t}" for t, i in vocab)),
            "behaviour_sha256": _sha256(json.dumps(ids)), "special_token_ids": special,
            "model_max_length": min(limits) if limits else None}


def identity_gaps(ours: dict[str, Any] | None, paper: dict[str, Any], published: str) -> list[str]:
    """Which parts of a recorded tokenizer identity differ from a published one, as gap lines."""
    if not ours or not ours.get("sha256"):
        return [f"tokenizer: ours not recorded (a result written before tokenizers were fingerprinted, or a model "
                f"without tokenizer files), paper {published}'s ({paper['sha256'][:12]}…)"]
    if ours["sha256"] == paper["sha256"]:
        return []
    names = {"vocab_sha256": "vocabulary (tokens and ids)", "behaviour_sha256": "tokenization of the probe "
             "sentences (lowercasing, accents, splitting)", "special_token_ids": "special token ids",
             "model_max_length": "model_max_length"}
    parts = [f"{label} ours {_shown(ours.get(k))}, paper {_shown(paper.get(k))}" for k, label in names.items()
             if ours.get(k) != paper.get(k)]
    return [f"tokenizer: {'; '.join(parts) or 'differs'} (paper {published})"]


def _shown(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64:
        return value[:12] + "…"
    return json.dumps(value) if isinstance(value, dict) else str(value)
