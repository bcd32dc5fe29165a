"""Learning curves from the store's logs: the seed band (hand computed), a chain's stages one after the other, the
marks of a non-finite or flat loss, the curves beside their table in `bench report`'s page (and in headless
Chromium), and the entry point for any set of run directories."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from usebench.report.curves import FLAT_REL, UnitCurve, learning_curves, marks, seed_band, unit_curve
from usebench.report.make import ReportOptions, make_report
from tests.report.test_report import CHROMIUM, _chromium, _console_errors


def _log(folder: Path, losses: list[float], dev: dict[int, float] | None = None, every: int = 10) -> None:
    lines = []
    for k, loss in enumerate(losses, 1):
        lines.append({"step": k * every, "loss": loss, "lr": 1e-3, "steps_per_s": 5.0, "elapsed_s": k * 2.0})
        if dev and k * every in dev:
            lines.append({"step": k * every, "dev_score": dev[k * every], "dev_metric": "main score",
                          "dev_task": "stsb"})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _runs(store: Path, method: str) -> list[Path]:
    return sorted(p for p in store.iterdir() if p.name.startswith(f"{method}__"))


def test_the_seed_band_is_the_mean_min_and_max_at_each_step(tmp_path):
    curves = [UnitCurve(tmp_path, "TSDAE", "askubuntu", s, loss=[(10, v), (20, v - 1)]) for s, v in
              enumerate((3.0, 4.0, 5.0))]
    curves[2].loss.append((30, float("nan")))  # a non-finite point is no part of the band
    assert seed_band(curves, "loss") == ([10, 20], [4.0, 3.0], [3.0, 2.0], [5.0, 4.0])


def test_marks_name_a_non_finite_a_diverged_and_a_flat_loss(tmp_path):
    assert marks([(1, 2.0), (2, 1.5), (3, 1.2)], tmp_path) == []
    assert marks([(1, 2.0), (2, float("nan"))], tmp_path) == ["non-finite loss"]
    assert marks([(1, 2.0), (2, 2.0 * (1 + FLAT_REL / 2)), (3, 2.0)], tmp_path) == ["flat loss"]
    assert marks([(1, 2.0), (2, 2.0 * (1 + 2 * FLAT_REL)), (3, 2.0)], tmp_path) == []  # it moved
    (tmp_path / "failed.json").write_text(json.dumps({"error": "TrainingDivergedError: tsdae: loss is nan at "
                                                               "step 7 (lr 0.1, amp off, batch 8)"}))
    assert marks([(1, 2.0), (2, 1.0), (3, 0.5)], tmp_path) == ["non-finite loss"]  # stopped before logging it


def test_a_chain_is_drawn_stage_after_stage(tmp_path):
    run = tmp_path / "tsdae+nli-sts__bert__0123abcd__s0"
    run.mkdir()
    (run / "stages.json").write_text(json.dumps([{"stage": 1, "method": "tsdae", "home": ".stages/tsdae__a__s0"},
                                                 {"stage": 2, "method": "nli-sts", "home": ".stages/nli__b__s0"}]))
    _log(tmp_path / ".stages/tsdae__a__s0", [5.0, 4.0, 3.0])
    _log(tmp_path / ".stages/nli__b__s0", [1.0, 0.5], dev={20: 0.8})
    curve = unit_curve(run, "TSDAE", "askubuntu", 0)
    assert curve.loss == [(10, 5.0), (20, 4.0), (30, 3.0), (40, 1.0), (50, 0.5)]
    assert curve.dev == [(50, 0.8)] and curve.stage_ends == [30] and curve.marks == []


def test_learning_curves_of_any_run_dirs_write_the_png_and_its_points(tmp_path):
    for seed, scale in enumerate((1.0, 1.2)):
        run = tmp_path / f"simcse__minilm__abcdef12__s{seed}"
        _log(run, [scale * 2.0, scale * 1.5, scale * 1.0], dev={20: 0.5 + seed / 10})
        (run / "config.json").write_text(json.dumps({"method": "simcse", "seed": seed,
                                                     "corpus": {"label": "askubuntu", "sha256": "x"}}))
    png = learning_curves(sorted(tmp_path.iterdir()), tmp_path / "out" / "cpu-recipe.png", "CPU recipe")
    assert png == tmp_path / "out" / "cpu-recipe.png" and png.stat().st_size > 5000
    rows = list(csv.DictReader(png.with_suffix(".csv").open()))
    assert {(r["row"], r["corpus"], r["seed"]) for r in rows} == {("simcse", "askubuntu", "0"),
                                                                  ("simcse", "askubuntu", "1")}
    assert [(r["step"], float(r["value"])) for r in rows if r["kind"] == "dev"] == [("20", 0.5), ("20", 0.6)]
    assert learning_curves([tmp_path / "nowhere"], tmp_path / "none.png") is None


@pytest.fixture()
def logged_store(store):
    """The hand store with logs: TSDAE's seeds decrease from 6, 5 and 4; CT's seed 0 went NaN, seed 1 stayed flat;
    SimCSE selected on dev."""
    for seed, run in enumerate(_runs(store, "tsdae")):
        _log(run, [6.0 - seed, 5.0 - seed, 4.0 - seed])
    ct = _runs(store, "ct")
    _log(ct[0], [3.0, 2.0, math.nan])
    _log(ct[1], [2.5, 2.5, 2.5])
    _log(ct[2], [3.0, 2.5, 2.0])
    for seed, run in enumerate(_runs(store, "simcse")):
        _log(run, [1.0, 0.8, 0.6], dev={10: 0.50 + seed / 100, 30: 0.60 + seed / 100})
    return store


def test_bench_report_puts_each_tables_curves_beside_it(logged_store, tmp_path):
    out = tmp_path / "reports"
    report = make_report(ReportOptions(results_dir=logged_store, out=out, tables=("paper-table2",),
                                       formats=("html",)))
    (plot,) = [p for p in report.plots if p.name == "paper-table2-curves"]
    assert plot.png == out / "plots" / "paper-table2-curves.png" and plot.png.stat().st_size > 10_000
    ct = _runs(logged_store, "ct")
    assert f"{ct[0].name} (non-finite loss)" in plot.caption and f"{ct[1].name} (flat loss)" in plot.caption
    rows = list(csv.DictReader(plot.data.open()))
    tsdae = [(int(r["step"]), float(r["value"])) for r in rows if r["row"] == "TSDAE" and r["seed"] == "1"]
    assert tsdae == [(10, 5.0), (20, 4.0), (30, 3.0)]
    assert {r["row"] for r in rows} == {"TSDAE", "CT", "SimCSE"}  # untrained rows have no log
    page = (out / "report.html").read_text()
    table, figure = page.index('data-table="paper-table2"'), page.index('id="paper-table2-curves"')
    assert table < figure and "<h2>Plots</h2>" in page[figure:] and "paper-table2-curves" not in page[:table]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_the_curves_render_in_headless_chromium(logged_store, tmp_path):
    from PIL import Image

    out = tmp_path / "reports"
    make_report(ReportOptions(results_dir=logged_store, out=out, tables=("paper-table2",), formats=("html",)))
    page = out / "report.html"
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and not _console_errors(dom.stderr), dom.stderr[-2000:]
    assert 'id="paper-table2-curves"' in dom.stdout and "marked:" in dom.stdout
    shot = tmp_path / "shot.png"
    res = _chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,5000", "--hide-scrollbars")
    assert res.returncode == 0 and shot.is_file()
    pixels = list(Image.open(shot).convert("RGB").getdata())
    # matplotlib's first three colours (the three rows' lines) and the red cross of a marked unit are on screen
    for rgb in ((0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E), (0x2C, 0xA0, 0x2C), (0xFF, 0x00, 0x00)):
        assert sum(1 for px in pixels if all(abs(a - b) <= 6 for a, b in zip(px, rgb))) > 30, rgb
