"""The laptop recipe's page (usebench/report/laptop.py) on a hand-written store: every number it prints is
computed here by hand from the records, usage files, logs and the stored prediction written below (the t quantiles
from a table: t(0.975, 1) = 12.7062, t(0.975, 2) = 4.3027)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usebench.report.laptop import write_laptop_page
from usebench.store import iter_results, make_record, run_id, save_result, write_json_atomic

STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")
# TwitterPara average AP and every STS Spearman of each row (0-1); a trained row has one value per seed
START = {"mean": (0.745, 0.80), "cls": (0.700, 0.75), "last2avg": (0.720, 0.78), "first_last_avg": (0.760, 0.79)}
TRAINED = {  # (method, variant): (eval pooling, {seed: (twitterpara avg, sts)})
    ("tsdae", "laptop"): ("cls", {0: (0.700, 0.70), 1: (0.710, 0.72), 2: (0.720, 0.74)}),
    ("ct", "laptop"): ("mean", {0: (0.760, 0.81), 1: (0.765, 0.79), 2: (0.770, 0.80)}),
    ("simcse", "laptop"): ("cls_mlp", {0: (0.660, 0.76), 1: (0.670, 0.78)}),
    ("simcse", "laptop + stop_at_step=0"): ("cls_mlp", {0: (0.630, 0.70), 1: (0.650, 0.72)}),  # fresh MLP draws
    ("simcse", "laptop + eval_pooling=cls"): ("cls", {0: (0.710, 0.76), 1: (0.715, 0.76)}),
    ("denosent", "laptop"): ("mask_token", {0: (0.650, 0.60), 1: (0.660, 0.61)}),
    ("denosent", "laptop + stop_at_step=0"): ("mask_token", {0: (0.640, 0.62)}),
}
PROFILE = {"measured_on": "the test machine", "matmul_gflops_one_thread": 100.0, "speedup_all_cores": 2.0,
           "step_cpu_s": {"tsdae": 1.0, "ct": 2.0, "simcse": 10.0, "denosent": 5.0},
           "eval_cpu_s": {"twitterpara": 10.0, **{t: 1.0 for t in STS}}, "unit_overhead_cpu_s": 6.0}


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


def _usage(name: str, variant: str, seed: int) -> list[dict]:
    """TSDAE seed 2 was killed once (then resumed), TSDAE seed 1 ran beside other work (others used 100 CPU s in
    200 s on 2 cores: 25%); the second pooling of SimCSE reused its stage."""
    note = ["reusing its finished checkpoint"] if "eval_pooling" in variant else ["training"]
    done = {"state": "finished", "wall_s": 100.0 * (seed + 1), "cpu_s": 150.0 * (seed + 1), "threads": 2,
            "training": note, "finished_at": "t",
            **({"unit_peak_rss_mb": 512.0 * (seed + 1)} if name == "ct" else {"process_peak_rss_mb": 1024.0 + seed})}
    if name == "tsdae" and seed == 1:
        done.update(others_cpu_s=100.0, machine_cores=2)
    if name == "tsdae" and seed == 2:
        return [{"attempt": "a", "state": "killed", "wall_s": 50.0, "cpu_s": 80.0}, done]
    return [done]


def laptop_store(root: Path, prediction: bool = True) -> Path:
    """The recipe's store shape: the start model under four poolings, trained rows with their stages.json,
    usage.json, stage log (TSDAE's with two curve points) and checkpoint method.json, step-0 and second-pooling
    rows, and the prediction `bench reproduce` stores."""
    store = root / "results"
    for pooling, values in START.items():
        method = {"name": "base", "base_model": "minilm", "pooling": pooling, "max_length": 256,
                  "sentence_encoder": True}
        _save_row(store, run_id("base", "minilm", {"pooling": pooling}, 0), values, 0, method, {"pooling": pooling})
    for (name, variant), (pooling, seeds) in TRAINED.items():
        for seed, values in seeds.items():
            config = {"setting": "adapt-nli-first", "chain": name, "variant": variant}
            run = run_id(name, "minilm", config, seed)
            method = {"name": f"nli-sts[minilm]>{name}", "base_model": "minilm", "pooling": pooling,
                      "setting": "adapt-nli-first", "variant": variant, "train_corpus": "file:a.toks+b.toks",
                      "step_path": [{"fast": False}]}
            _save_row(store, run, values, seed, method, config)
            steps = 0 if "stop_at_step=0" in variant else 40
            home = f".stages/{name}__{abs(hash(variant)) % 1000}__s{seed}"
            write_json_atomic(store / run / "stages.json", [{"stage": 1, "method": name, "home": home}])
            write_json_atomic(store / run / "usage.json", {"attempts": _usage(name, variant, seed)})
            write_json_atomic(store / home / "checkpoint" / "method.json", {"steps": steps})
            if steps:
                lines = [{"step": s, "loss": 2.0 - 0.01 * s + 0.1 * seed} for s in (10, 20, 30, 40)]
                if name == "tsdae":  # curve points at 10 and 20: 66, 67, 68 and 68, 69, 70
                    lines += [{"step": s, "curve_task": "twitterpara", "curve_score": 0.66 + 0.02 * (s == 20)
                               + 0.01 * seed} for s in (10, 20)]
                (store / home / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    if prediction:
        write_json_atomic(store / ".reproduce" / "laptop-cost.json", {"predictions": [
            {"at": "2026-12-01T10:00:00+00:00", "git_sha": "abcdef0123", "hours": 2.5, "scale": 1.5,
             "profile": PROFILE},
            {"at": "later", "git_sha": "x", "hours": 1.0, "scale": 9.0, "profile": PROFILE}]})  # a resume's: unused
    return store


@pytest.fixture()
def page(tmp_path) -> str:
    store = laptop_store(tmp_path)
    written = write_laptop_page(list(iter_results(store)), tmp_path / "out")
    assert [p.name for p in written] == ["laptop.md", "laptop-loss.png", "laptop-twitterpara.png"]
    assert all(p.is_file() for p in written)
    return (tmp_path / "out" / "laptop.md").read_text(encoding="utf-8")


def _row(page: str, section: str, label: str) -> list[str]:
    body = page.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in body.splitlines() if ln.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split(" | ")]


def _line(text: str, label: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_the_effects_carry_seed_intervals_against_each_rows_own_counterpart(page):
    """TSDAE (CLS): 70/71/72 against the start model's CLS 70: differences 0, 1, 2, mean 1, sd 1, half-width
    4.3027 / sqrt(3) = 2.48. CT (mean): 76/76.5/77 against 74.5: 1.5, 2, 2.5, half-width 4.3027 x 0.5 / sqrt(3) =
    1.24: the interval excludes 0."""
    tsdae = _row(page, "What adaptation did", "TSDAE")
    assert tsdae[:3] == ["TSDAE", "cls", "the start model under cls"]
    assert tsdae[3] == "-3.50 [-5.98, -1.02]*"  # 70/71/72 against the mean pooling's 74.5: -4.5, -3.5, -2.5
    assert tsdae[5] == "-4.50 (no interval)"  # the start model under CLS minus under mean: one value each
    assert tsdae[7] == "+1.00 [-1.48, +3.48]"
    ct = _row(page, "What adaptation did", "CT")
    assert ct[5] == "0 (the same row)" and ct[7] == "+2.00 [+0.76, +3.24]*"  # CT pools as the start model does


def test_simcse_and_denosent_are_set_against_their_step_zero_rows_and_simcse_without_its_mlp_is_a_row(page):
    """SimCSE: 66/67 against its fresh-MLP draws 63/65, paired by seed: 3, 2, mean 2.5, sd 0.707, half-width
    12.7062 x 0.5 = 6.35. Its [CLS] row (eval_pooling=cls): 71/71.5 against the start model's CLS 70: 1, 1.5, half-width
    12.7062 x 0.25 = 3.18. DenoSent: 65/66 against its one step-0 value 64: 1, 2, half-width 6.35."""
    simcse = _row(page, "What adaptation did", "SimCSE")
    assert simcse[2] == "[CLS] with a freshly initialised MLP (2 seeds' step-0 units)"
    assert simcse[5] == "-10.50 [-23.21, +2.21]"  # 63, 65 against 74.5: -11.5, -9.5, sd 1.414, se 1
    assert simcse[7] == "+2.50 [-3.85, +8.85]"
    plain = _row(page, "What adaptation did", "SimCSE (cls)")
    assert plain[2] == "the start model under cls" and plain[7] == "+1.25 [-1.93, +4.43]"
    denosent = _row(page, "What adaptation did", "DenoSent")
    assert denosent[2] == "the start model under its [MASK] prompt (1 seed's step-0 units)" and denosent[7] == "+1.50 [-4.85, +7.85]"
    assert "| SimCSE (step 0)" not in page.split("## What adaptation did")[1].split("## Learning")[0]


def test_the_table_holds_the_step_zero_rows_and_simcse_without_its_mlp_each_named_by_its_variant(page):
    table = page.split("## What adaptation did")[0]
    assert "variant laptop + stop_at_step=0" in table and "variant laptop + eval_pooling=cls" in table
    assert "mean over the row's seeds (n; ±: the notes)" in table
    assert table.count("| SimCSE") == 3 and table.count("| DenoSent") == 2  # trained, step 0 (and without the MLP)


def test_the_readings_follow_the_one_wording_rule(page):
    readings = page.split("**What these allow.**")[1].split("## Learning curves")[0]
    assert ("- **TSDAE**: switch TwitterPara AP -4.50 points: no interval (one value on each side: only the test "
            "items could give one), no claim") in readings
    assert ("training TwitterPara AP +1.00 points [-1.48, +3.48] (3 seeds; seeds only): not distinguishable from 0 at "
            "this budget") in readings
    assert ("training TwitterPara AP +2.00 points [+0.76, +3.24] (3 seeds; seeds only): excludes 0 over the seeds "
            "(the test items' sampling is not in it)") in readings
    # the best of the start model's four poolings on the test set is first_last_avg (76.0): CT's 76.5 is above
    # it by +0.50 [-0.74, +1.74] (0, 0.5, 1: half-width 1.24): no row beats it
    assert ("Against the start model under first_last_avg (76.00 TwitterPara AP), the best of its 4 poolings "
            "**picked on the test set**") in readings
    assert "no trained row lies above it with an interval that excludes 0" in readings
    assert "This store holds no per-item outcomes: the intervals are over seeds alone" in page


def test_the_curves_set_step_zero_the_points_scored_while_training_and_the_last_step(page):
    # TSDAE: step 0 = the start model's CLS (70.00); 10: 66, 67, 68; 20: 68, 69, 70; 40: its results 70, 71, 72
    assert _row(page, "Learning curves", "TSDAE") == [
        "TSDAE", "0 = 70.00 · 10 = 67.00 [66.00, 68.00] · 20 = 69.00 [68.00, 70.00] · 40 = 71.00 [70.00, 72.00]"]
    assert _row(page, "Learning curves", "SimCSE")[1] == "0 = 64.00 [63.00, 65.00] · 40 = 66.50 [66.00, 67.00]"
    assert "| SimCSE (cls) |" not in page.split("## Learning curves")[1].split("### New at step 0")[0]
    assert "This store has no curve points" not in page  # TSDAE's stage scored two
    heads = page.split("### New at step 0")[1].split("## What each unit cost")[0]
    # TSDAE's loss 2 - 0.01 s + 0.1 seed: first logged (step 10) 1.9 + 0.1 = 2.0 mean, last (40) 1.6 + 0.1 = 1.7
    assert _line(heads, "TSDAE")[2:] == ["loss", "2.000", "1.700", "ln 30522 = 10.33"]
    assert _line(heads, "DenoSent")[2:4] == ["generative", "—"]  # this log has no generative loss


def test_the_costs_count_killed_attempts_flag_shared_machines_and_set_the_prediction_beside(page):
    # TSDAE: seeds 100, 200, 300 s wall (+50 of seed 2's killed attempt) -> 650 / 3 = 217; CPU 150, 300, 450 + 80
    # -> 327; predicted per unit: 40 steps x 1.0 + 2 curve points x 10 + evaluations 10 + 7 x 1 + set-up 6 = 83 CPU
    # s, x 1.5 (the machine) / 2 (cores) = 62
    assert _row(page, "What each unit cost", "TSDAE") == ["TSDAE", "40", "3", "217", "62", "327", "—", "4 (1)", "1"]
    # CT: 40 x 2.0 + 17 + 6 = 103 -> 77; its own peaks 512, 1024, 1536 MiB -> 1.50 GiB
    assert _row(page, "What each unit cost", "CT") == ["CT", "40", "3", "200", "77", "300", "1.50", "3 (0)", "0"]
    # SimCSE's second pooling reused its stage: only its evaluations and set-up, 23 x 0.75 = 17
    assert _row(page, "What each unit cost", "SimCSE (cls)")[3:5] == ["150", "17"]
    assert _row(page, "What each unit cost", "SimCSE (step 0)")[1:3] == ["0", "2"]
    assert "Predicted before the run (2026-12-01T10:00:00+00:00, commit abcdef0): 2.50 h for the whole plan" in page


def test_a_store_without_a_prediction_curve_points_or_step_zero_rows_still_renders(tmp_path):
    """The first laptop store: no prediction, no curve points, no step-0 rows: said, never guessed."""
    store = laptop_store(tmp_path, prediction=False)
    for path in list(store.glob("*/twitterpara/test.json")):
        record = json.loads(path.read_text())
        if "stop_at_step=0" in record["method"].get("variant", ""):
            import shutil

            shutil.rmtree(path.parent.parent)
    written = write_laptop_page(list(iter_results(store)), tmp_path / "out")
    text = written[0].read_text(encoding="utf-8")
    simcse = _row(text, "What adaptation did", "SimCSE")
    assert simcse[2].startswith("not in this store (cls_mlp has parts new at step 0") and simcse[7] == "n/a"
    assert "training not stated: its counterpart at step 0 is not in this store" in text
    assert "No prediction is stored with these units" in text


def test_the_papers_directions_are_claimed_only_where_our_interval_excludes_0(page):
    assert _row(page, "Against the paper's rows", "TSDAE") == ["TSDAE", "71.0", "-1.2", "-3.50 [-5.98, -1.02]*", "yes"]
    # CT: +1.5/+2/+2.5 against 74.5: +2.00 [+0.76, +3.24], the paper's +0.9: the same direction
    assert _row(page, "Against the paper's rows", "CT")[3:] == ["+2.00 [+0.76, +3.24]*", "yes"]
    # SimCSE: 66/67 against 74.5: -8.5, -7.5: -8.00 [-14.35, -1.65]
    assert _row(page, "Against the paper's rows", "SimCSE")[3:] == ["-8.00 [-14.35, -1.65]*", "yes"]
    assert "| DenoSent |" not in page.split("## Against the paper's rows")[1]  # not a row of the paper's block
    assert "| SimCSE (cls) |" not in page.split("## Against the paper's rows")[1]


def test_no_laptop_rows_no_page(tmp_path):
    from tests.report.synthetic_results import hand_store

    assert write_laptop_page(list(iter_results(hand_store(tmp_path / "r"))), tmp_path / "out") == []


def test_the_cost_prediction_files_of_reproduce_and_report_are_one(tmp_path):
    """`bench reproduce` writes the prediction where the page reads it; usage.json's flag and the page's agree."""
    from usebench.report.laptop_parts.cost import BESIDE_SHARE, PREDICTION
    from usebench.reproduce.recipe_cost import PREDICTIONS
    from usebench.run.usage import BESIDE_SHARE as RUN_SHARE

    assert Path(PREDICTIONS[0], PREDICTIONS[1].format(paper="laptop")) == PREDICTION
    assert BESIDE_SHARE == RUN_SHARE


def _laptop_page_script():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "laptop_page.py"
    spec = importlib.util.spec_from_file_location("laptop_page", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_store_copy_keeps_records_logs_outcomes_and_prediction_and_leaves_weights_and_machine_paths(tmp_path):
    """scripts/laptop_page.py --from: the copy gives the same page, holds no weights or launcher files, keeps the
    per-item outcome files beside the records and the stored prediction, and env.json names no absolute path of the
    machine that ran it."""
    script = _laptop_page_script()
    store = laptop_store(tmp_path / "clone")
    run = next(d for d in store.iterdir() if d.name.startswith("tsdae"))
    write_json_atomic(run / "env.json", {"argv": [str(tmp_path / "clone" / ".venv/bin/bench"), "reproduce"],
                                         "git_sha": "abc"})
    (run / "twitterpara" / "test.items.jsonl").write_text('{"id": 1}\n')  # issue 54's outcomes, whatever the name
    home = store / json.loads((run / "stages.json").read_text())[0]["home"]
    (home / "checkpoint" / "model.safetensors").write_bytes(b"weights")
    (home / "train_state").mkdir()
    (run / "checkpoint").mkdir()
    (run / "checkpoint" / "model.safetensors").write_bytes(b"weights")
    (store / ".launch").mkdir()
    record = next(run.glob("*/test.json"))
    record.with_name("test.items.npz").write_bytes(b"the record's per-item outcomes")
    copied = script.copy_store(store, tmp_path / "copy")
    assert copied == len(list(store.glob("*/*/test.json")))
    files = {str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*") if p.is_file()}
    assert str(record.with_name("test.items.npz").relative_to(store)) in files  # the items travel with the record
    assert not any("safetensors" in f or "train_state" in f or f.startswith(".launch") for f in files)
    assert f"{run.name}/twitterpara/test.items.jsonl" in files and ".reproduce/laptop-cost.json" in files
    assert json.loads((tmp_path / "copy" / run.name / "env.json").read_text())["argv"][0] == ".venv/bin/bench"
    ours = write_laptop_page(list(iter_results(tmp_path / "copy")), tmp_path / "a")
    theirs = write_laptop_page(list(iter_results(store)), tmp_path / "b")
    assert ours[0].read_text() == theirs[0].read_text()


def test_the_committed_laptop_page_is_what_the_committed_store_gives(real_releases):
    """docs/papers/laptop.md's generated part is the page results/laptop/ gives today (python
    scripts/laptop_page.py rewrites it), with the package's own release pins: a change to the page's code or to the
    store shows up here. The lead reruns it on the new store after `python scripts/laptop_page.py --from STORE`."""
    script = _laptop_page_script()
    if not any(script.STORE.glob("*/*/*.json")):
        pytest.skip("results/laptop/ holds no records yet")
    assert script.main_check() == 0


def test_a_carried_run_keeps_its_finished_units_baselines_and_prediction_and_drops_the_unfinished(tmp_path):
    """scripts/laptop_carry.py: the archive an unfinished `bench reproduce laptop` leaves for the next session holds
    the done units with their stages, the run directories that are no unit (baselines) and the stored prediction;
    a unit that is not done goes, with the stage only it used, so that the resume trains it again."""
    import importlib.util
    import tarfile

    path = Path(__file__).resolve().parents[2] / "scripts" / "laptop_carry.py"
    spec = importlib.util.spec_from_file_location("laptop_carry", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    store = laptop_store(tmp_path / "clone")
    units = sorted(d.name for d in store.iterdir() if (d / "stages.json").is_file())
    running = units[0]
    states = {u: "done" for u in units} | {running: "running"}
    home = json.loads((store / running / "stages.json").read_text())[0]["home"]
    shared = any(json.loads((store / u / "stages.json").read_text())[0]["home"] == home for u in units[1:])
    carried = script.carry(store, tmp_path / "out" / "abc1234.tar.gz", states)
    with tarfile.open(tmp_path / "out" / "abc1234.tar.gz") as tar:
        names = tar.getnames()
    others = sorted(d.name for d in store.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in units)
    assert carried == sorted([*units[1:], *others])
    assert not any(n.startswith(running + "/") for n in names)
    assert any(n.startswith(units[1] + "/") for n in names) and ".reproduce/laptop-cost.json" in names
    assert shared or not any(n.startswith(home + "/") for n in names)  # the running unit's own stage is retrained
    assert not any("safetensors" in n for n in names)
