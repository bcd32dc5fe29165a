"""The laptop recipe's page (usebench/report/laptop.py) on a hand-written store: every number it prints is
computed here by hand from the records, usage files and logs written below."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.report.laptop import write_laptop_page
from usebench.store import iter_results, make_record, run_id, save_result, write_json_atomic

STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
# TwitterPara average AP and every STS Spearman of each row (0-1); a trained row has one value per seed
START = {"mean": (0.745, 0.80), "cls": (0.700, 0.75), "last2avg": (0.720, 0.78)}
TRAINED = {  # method: (eval pooling, {seed: (twitterpara avg, sts)})
    "tsdae": ("cls", {0: (0.700, 0.70), 1: (0.710, 0.72), 2: (0.720, 0.74)}),
    "ct": ("mean", {0: (0.750, 0.81), 1: (0.760, 0.79), 2: (0.740, 0.80)}),
    "denosent": ("mask_token", {0: (0.650, 0.60), 1: (0.660, 0.61), 2: (0.640, 0.59)}),
}


def _record(run: str, task: str, value: float, seed: int, method: dict, config: dict) -> dict:
    scores = ({"ap_twitterurl": value, "ap_pit": value, "ap_avg": value} if task == "twitterpara"
              else {"spearman": value, "pearson": value})
    return make_record(run=run, task={"name": task, "split": "test", "group": "g", "version": "1",
                                      "data_sha256": f"sha-{task}", "n_queries": 10},
                       method=method, seed=seed, scores=scores, main_metric=next(iter(scores)) if task != "twitterpara"
                       else "ap_avg", subsets={}, scorer={"kind": "dense", "dtype": "float32"}, timings={},
                       config=config)


def _save_row(store: Path, run: str, values: tuple[float, float], seed: int, method: dict, config: dict) -> None:
    save_result(store, _record(run, "twitterpara", values[0], seed, method, config))
    for task in STS:
        save_result(store, _record(run, task, values[1], seed, method, config))


def laptop_store(root: Path) -> Path:
    """The recipe's store shape: the start model under three poolings, three methods x three seeds with their
    stages.json, usage.json, stage log and checkpoint method.json."""
    store = root / "results"
    for pooling, values in START.items():
        method = {"name": "base", "base_model": "minilm", "pooling": pooling, "max_length": 256,
                  "sentence_encoder": True}
        _save_row(store, run_id("base", "minilm", {"pooling": pooling}, 0), values, 0, method, {"pooling": pooling})
    for name, (pooling, seeds) in TRAINED.items():
        for seed, values in seeds.items():
            config = {"setting": "adapt-nli-first", "chain": name}
            run = run_id(name, "minilm", config, seed)
            method = {"name": f"nli-sts[minilm]>{name}", "base_model": "minilm", "pooling": pooling,
                      "setting": "adapt-nli-first", "variant": "laptop", "train_corpus": "file:a.toks+b.toks",
                      "step_path": [{"fast": False}]}
            _save_row(store, run, values, seed, method, config)
            home = f".stages/{name}__abc__s{seed}"
            write_json_atomic(store / run / "stages.json", [{"stage": 1, "method": name, "home": home}])
            write_json_atomic(store / run / "usage.json", {"attempts": [
                {"wall_s": 100.0 * (seed + 1), "cpu_s": 150.0 * (seed + 1),
                 **({"unit_peak_rss_mb": 512.0 * (seed + 1)} if name == "ct" else {"process_peak_rss_mb": 1024.0 + seed}),
                 "threads": 2, "training": ["training"], "finished_at": "t"}]})
            write_json_atomic(store / home / "checkpoint" / "method.json", {"steps_trained": 40})
            (store / home / "log.jsonl").write_text("".join(
                json.dumps({"step": s, "loss": 2.0 - 0.01 * s + 0.1 * seed}) + "\n" for s in (10, 20, 30, 40)))
    return store


@pytest.fixture()
def page(tmp_path) -> str:
    store = laptop_store(tmp_path)
    written = write_laptop_page(list(iter_results(store)), tmp_path / "out")
    assert [p.name for p in written] == ["laptop.md", "laptop-loss.png"] and all(p.is_file() for p in written)
    return (tmp_path / "out" / "laptop.md").read_text(encoding="utf-8")


def _row(page: str, section: str, label: str) -> list[str]:
    body = page.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in body.splitlines() if ln.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_the_effects_split_the_pooling_switch_from_the_training_with_the_sign_in_every_seed(page):
    # TSDAE (CLS): twitterpara 70.0/71.0/72.0 against the start model's mean 74.5 -> -3.50 in all three seeds
    assert _row(page, "What adaptation did", "TSDAE") == [
        "TSDAE", "cls", "-3.50 (3/3 <0) \\| -8.00 (3/3 <0)",  # sts 70/72/74 against 80
        "-4.50 \\| -5.00",  # the start model under CLS (70.0, 75) minus under mean (74.5, 80)
        "+1.00 (2 >0, 1 =0) \\| -3.00 (3/3 <0)"]  # against CLS (70.0, 75): 0, +1, +2 | -5, -3, -1
    ct = _row(page, "What adaptation did", "CT")
    # CT (mean, its pooling is the start model's own): 75/76/74 against 74.5 | 81/79/80 against 80
    assert ct[2] == "+0.50 (2 >0, 1 <0) \\| +0.00 (1 >0, 1 <0, 1 =0)" and ct[3] == "+0.00 \\| +0.00"
    assert _row(page, "What adaptation did", "DenoSent")[4] == "n/a (no untrained counterpart)"


def test_the_page_has_the_table_the_costs_the_curves_and_the_papers_directions(page):
    table = page.split("## What adaptation did")[0]  # the recipe's rows, named by their corpus and preset
    assert "| TSDAE · trained on file:a.toks+b.toks · laptop" in table and "| minilm (cls)" in table
    assert "| 3 | 71.00 ± 1.00 | 71.00 ± 1.00 | 71.00 ± 1.00 | 72.00 ± 2.00 |" in table
    # costs: TSDAE's seeds took 100, 200, 300 s wall and 150, 300, 450 s CPU; 9 units in all
    assert _row(page, "What each unit cost", "TSDAE") == ["TSDAE", "40", "200", "300", "—", "3"]
    assert "All 9 units: 0.50 h wall, 0.75 h CPU; the highest resident memory 1.50 GiB." \
        in page
    assert _row(page, "What each unit cost", "CT") == ["CT", "40", "200", "300", "1.50", "3"]
    assert "![Training loss per method, seed band](plots/laptop-loss.png)" in page
    # the paper: TSDAE 71.0 against SBERT-base-nli-stsb-v2's 72.2 (-1.2); ours 71.0 against 74.5 (-3.50): the same
    assert _row(page, "Against the paper's rows", "TSDAE") == ["TSDAE", "71.0", "-1.2", "-3.50", "yes"]
    assert _row(page, "Against the paper's rows", "CT") == ["CT", "73.1", "+0.9", "+0.50", "yes"]
    assert "| DenoSent |" not in page.split("## Against the paper's rows")[1]  # not a row of the paper's block


def test_no_laptop_rows_no_page(tmp_path):
    from tests.report.synthetic_results import hand_store

    assert write_laptop_page(list(iter_results(hand_store(tmp_path / "r"))), tmp_path / "out") == []


def _laptop_page_script():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "laptop_page.py"
    spec = importlib.util.spec_from_file_location("laptop_page", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_store_copy_keeps_records_and_logs_and_leaves_weights_and_machine_paths(tmp_path):
    """scripts/laptop_page.py --from: the copy gives the same page, holds no weights or launcher files, and env.json
    names no absolute path of the machine that ran it."""
    script = _laptop_page_script()
    store = laptop_store(tmp_path / "clone")
    run = next(d for d in store.iterdir() if d.name.startswith("tsdae"))
    write_json_atomic(run / "env.json", {"argv": [str(tmp_path / "clone" / ".venv/bin/bench"), "reproduce"],
                                         "git_sha": "abc"})
    home = store / json.loads((run / "stages.json").read_text())[0]["home"]
    (home / "checkpoint" / "model.safetensors").write_bytes(b"weights")
    (home / "train_state").mkdir()
    (store / ".launch").mkdir()
    record = next(run.glob("*/test.json"))
    record.with_name("test.items.npz").write_bytes(b"the record's per-item outcomes")
    copied = script.copy_store(store, tmp_path / "copy")
    assert copied == len(list(store.glob("*/*/*.json")))
    files = {str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*") if p.is_file()}
    assert str(record.with_name("test.items.npz").relative_to(store)) in files  # the items travel with the record
    assert not any("safetensors" in f or "train_state" in f or f.startswith(".launch") for f in files)
    assert json.loads((tmp_path / "copy" / run.name / "env.json").read_text())["argv"][0] == ".venv/bin/bench"
    ours = write_laptop_page(list(iter_results(tmp_path / "copy")), tmp_path / "a")
    theirs = write_laptop_page(list(iter_results(store)), tmp_path / "b")
    assert ours[0].read_text() == theirs[0].read_text()


def test_the_committed_laptop_page_is_what_the_committed_store_gives(real_releases):
    """docs/papers/laptop.md's generated part is the page results/laptop/ gives today (python
    scripts/laptop_page.py rewrites it), with the package's own release pins: a change to the page's code or to the
    store shows up here."""
    script = _laptop_page_script()
    if not any(script.STORE.glob("*/*/*.json")):
        pytest.skip("results/laptop/ holds no records yet")
    assert script.main_check() == 0
