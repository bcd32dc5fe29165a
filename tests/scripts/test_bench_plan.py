"""scripts/plan_root.py and scripts/bench_plan.py at a tiny scale: the synthetic root is what the suite's loaders and
release checks accept, its generated row counts scale as asked, the hub stub is found as huggingface_hub's cache,
and a dry run through the script's own runner exits 0 with its units counted. The scripts are entry points, not
modules: they are imported from scripts/ as tests/scripts/test_bench_scripts.py does."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCALE = 0.0005


def _import_scripts():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_plan
        import plan_root
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return bench_plan, plan_root


bench_plan, plan_root = _import_scripts()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A plan root at SCALE; skips without the workplace's real data files (the STS and TwitterPara copies)."""
    if not (plan_root.SHARED / "sts").is_dir():
        pytest.skip(f"the real data files the root copies are not at {plan_root.SHARED}")
    root = tmp_path_factory.mktemp("plan-root")
    plan_root.ensure_root(root, SCALE, log=lambda *_: None)
    return root


def n(release_count: int) -> int:
    return plan_root.scaled(release_count, SCALE)


def test_training_data_loads_with_the_scaled_counts(built):
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.data.labeled import read_allnli
    from usebench.data.paraphrases import check_tsv
    from usebench.methods.parts.labeled_data import load_labeled
    from usebench.registry import TASKS
    from usebench.plan.corpus import load_corpus

    data = built / "data"
    corpus = load_corpus("askubuntu", [], None, data)
    assert len(corpus.examples) + corpus.duplicates_dropped == n(165_000)
    assert len(TASKS.get("twitterpara").train_corpus(data)) == n(53_000)  # the release folder `twitter`
    assert len(read_allnli(data / "nli/AllNLI.tsv")) == n(942_069)
    assert len(read_allnli(data / "nli/AllNLI.tsv", "dev")) == n(19_657)
    assert len(load_labeled("target", "scidocs", data, "pairs").examples) == n(380_000)
    assert len(load_labeled("target", "twitterpara", data, "graded").examples) == n(23_000)
    assert len(load_labeled("twitter-url", None, data, "graded").examples) == 42_200  # real, copied whole
    assert check_tsv(data / "denosent/paraphrases.tsv") == n(1_000_000)
    assert len(load_corpus(None, [data / "corpora/owt_1m.txt"], None, data).examples) == n(1_000_000)
    quora = TASKS.get("quora")
    assert len(quora.train_corpus(data)) == n(522_931) - n(10_000) - n(5_000)  # the judged queries left out


@pytest.mark.parametrize("task,split", [("askubuntu", "dev"), ("cqadupstack", "test"), ("scidocs", "test"),
                                        ("quora", "test"), ("quora", "dev"), ("beir-cqadupstack", "test"),
                                        ("twitterpara", "test"), ("sts12", "test")])
def test_evaluation_files_load_and_pass_the_release_checks(built, task, split):
    from usebench import tasks  # noqa: F401
    from usebench.registry import TASKS

    adapter, data = TASKS.get(task), built / "data"
    loaded = adapter.load(split, data)
    _, per_file = adapter.data_digests(data, split)
    release = adapter.check_release(split, loaded, data, per_file)  # raises on a count the root does not declare
    assert release["partial"] == [] and adapter.n_queries(loaded) > 0
    if task == "quora":
        assert adapter.n_queries(loaded) == n({"test": 10_000, "dev": 5_000}[split])


def test_hub_stub_is_the_cache_layout_and_the_root_is_reused(built):
    from huggingface_hub import try_to_load_from_cache
    from transformers import AutoConfig

    for model in plan_root.HUB_CONFIGS:
        found = try_to_load_from_cache(model, "config.json", cache_dir=built / "hf/hub")
        assert isinstance(found, str), model
        config = AutoConfig.from_pretrained(Path(found).parent)
        assert config.is_encoder_decoder == (model in ("facebook/bart-base", "t5-base")), model
    marker = built / plan_root.MARKER
    stamp = marker.stat().st_mtime_ns
    plan_root.ensure_root(built, SCALE, log=lambda *_: None)  # same scale: the marker says built, nothing is redone
    assert marker.stat().st_mtime_ns == stamp


@pytest.mark.slow  # one `bench reproduce` process: 6-20 s on two cores, with the planner as it is now
def test_a_dry_run_exits_0_through_the_runner(built, tmp_path):
    row = bench_plan.run_command("paser", bench_plan.bench_argv("paser", built, tmp_path / "results"), built, 600)
    assert row.exit == 0, row.stderr_tail
    assert row.units and row.units > 0 and row.units_per_s > 0 and row.cpu_s > 0
    assert row.blocked == 0 and row.cannot_plan == 0
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())  # nothing written
