"""Tables from a small synthetic results store: values, std, bold, dagger, missing cells, the four formats
agreeing, the published numbers beside ours, plots, and the HTML page in headless Chromium."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from usebench.report.build import build_table
from usebench.report.make import ReportOptions, make_report
from usebench.report.reference import compare, entries, load_reference
from usebench.report.render import grid_of, to_csv, to_html, to_latex, to_markdown
from usebench.stats.table_rows import index_results
from usebench.stats.table_specs import COLUMNS, TABLES
from usebench.store import iter_results
from usebench.stats.seeds import MixedRunsError
from tests.report.synthetic_results import add_result
from tests.report.synthetic_results import built_table as _built

PAPERS = Path(__file__).resolve().parents[3] / "shared" / "papers"


def _row(built, label):
    return next(r for r in built.rows if r.label == label)


def test_values_std_n_bold_dagger(store):
    b = _built(store)
    tsdae, ct, simcse, mlm = (_row(b, x) for x in ("TSDAE", "CT", "SimCSE", "MLM"))
    ask = tsdae.cells["askubuntu"]
    assert (ask.mean, ask.std, ask.n) == (pytest.approx(61.0), pytest.approx(1.0), 3)
    assert simcse.cells["askubuntu"].std == pytest.approx(2.0)
    assert ask.dagger and not ask.bold  # beats CT and SimCSE in all three seeds; MLM has the best mean
    turl = tsdae.cells["twitterpara.turl"]
    assert turl.bold and not turl.dagger  # best mean, but CT wins seed 0 (0.71 > 0.70)
    assert ct.cells["twitterpara.pit"].bold and not ct.cells["twitterpara.pit"].dagger  # CT never gets it
    assert ct.cells["cqadupstack"].bold and not tsdae.cells["cqadupstack"].dagger
    # USEB average per seed: (0.60+0.10+0.65+0.70)/4 = 0.5125, then 0.52, 0.52 -> 51.75 ± 0.4330
    avg = tsdae.cells["useb.avg"]
    assert avg.per_seed == pytest.approx({0: 51.25, 1: 52.0, 2: 52.0})
    assert avg.mean == pytest.approx(51.75) and avg.std == pytest.approx(0.4330127)
    # MLM: per-seed average over seeds 0 and 1 only (seed 2 lacks three tasks): 47.5, 48.5 -> 48.0, n = 2
    assert mlm.cells["useb.avg"].mean == pytest.approx(48.0) and mlm.cells["useb.avg"].n == 2
    assert mlm.cells["askubuntu"].mean == pytest.approx(64.0) and mlm.n == 3
    assert mlm.cells["askubuntu"].bold and not mlm.cells["askubuntu"].dagger  # 64.0 > 61.0, loses seed 0
    upper = next(r for r in b.rows if r.upper_bound)
    assert not upper.cells["askubuntu"].bold  # the upper bound (90.0) is excluded from bold


def test_bold_goes_to_the_best_non_upper_bound_row(store):
    b = _built(store)
    bold_rows = [r.label for r in b.rows if r.cells["askubuntu"].bold]
    assert bold_rows == ["MLM"]


def test_blocks_follow_the_paper_order(store):
    b = _built(store)
    assert [t for t, _ in b.blocks()] == ["Unsupervised learning", "Baselines (no training)",
                                          "In-domain supervised training (upper bound)"]
    assert [r.label for r in b.blocks()[0][1]] == ["TSDAE", "MLM", "CT", "SimCSE"]


def test_missing_cells_are_missing_in_every_format(store):
    b = _built(store)
    base = _row(b, "bert-base-uncased (mean)")
    assert base.cells["cqadupstack"].missing and base.cells["useb.avg"].missing
    md = to_markdown(grid_of(b))
    line = next(x for x in md.splitlines() if x.startswith("| bert-base-uncased (mean) |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2] == "48.0" and cells[3:] == ["—"] * 10
    assert not any(re.fullmatch(r"0(\.0+)?", c) for c in cells)
    tex = next(x for x in to_latex(grid_of(b)).splitlines() if x.startswith("bert-base-uncased (mean) &"))
    assert tex.count("--") == 10
    rows = [r for r in csv.DictReader(io.StringIO(to_csv(b))) if r["row"] == "bert-base-uncased (mean)"]
    assert [r["mean"] for r in rows if r["column"] == "cqadupstack"] == [""]


class _Cells(HTMLParser):
    """Collect the text of each <td> per row of one table (by data-table), and which cells were bold."""

    def __init__(self, table: str):
        super().__init__()
        self.table, self.inside, self.rows, self.cell, self.bold = table, False, [], None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.inside = a.get("data-table") == self.table
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self.cell, self.bold = "", False
        elif self.inside and tag == "b":
            self.bold = True

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif self.inside and tag == "td" and self.cell is not None:
            self.rows[-1].append((self.cell.strip(), self.bold))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def _norm(text: str) -> tuple:
    """(mean, std, dagger) from any format's cell text; None mean = missing."""
    dagger = "†" in text or r"\dagger" in text
    nums = re.findall(r"-?\d+\.\d+", text)
    return (nums[0] if nums else None, nums[1] if len(nums) > 1 else None, dagger)


def test_md_tex_csv_html_agree(store):
    b = _built(store)
    grid = grid_of(b)
    md = {c.strip().strip("|").split("|")[0].strip(): [x.strip() for x in c.strip().strip("|").split("|")[2:]]
          for c in to_markdown(grid).splitlines() if c.startswith("| ") and "*" not in c.split("|")[1]}
    tex = {ln.split(" & ")[0]: ln.rstrip(" \\").split(" & ")[2:] for ln in to_latex(grid).splitlines()
           if " & " in ln and not ln.startswith(("&", r"\multicolumn", "Method"))}
    parser = _Cells("paper-table2")
    parser.feed(to_html(grid))
    html_rows = {r[0][0]: r[2:] for r in parser.rows if len(r) > 2}
    tidy = list(csv.DictReader(io.StringIO(to_csv(b))))
    for row in b.rows:
        for i, col in enumerate(b.columns):
            cell = row.cells[col.id]
            want = (None, None, False) if cell.missing else (
                f"{cell.mean:.1f}", None if cell.std is None else f"{cell.std:.1f}", cell.dagger)
            assert _norm(md[row.label][i]) == want, (row.label, col.id, "md")
            assert _norm(tex[row.label][i]) == want, (row.label, col.id, "tex")
            assert _norm(html_rows[row.label][i][0]) == want, (row.label, col.id, "html")
            assert html_rows[row.label][i][1] == cell.bold
            assert ("**" in md[row.label][i]) == cell.bold and (r"\textbf" in tex[row.label][i]) == cell.bold
            line = next(t for t in tidy if t["row"] == row.label and t["column"] == col.id)
            assert (line["mean"] == "") == cell.missing and int(line["bold"]) == cell.bold
            if not cell.missing:
                assert f"{float(line['mean']):.1f}" == want[0] and int(line["dagger"]) == cell.dagger


def test_report_refuses_a_cell_of_mixed_data_hashes_and_says_why(store, tmp_path):
    """One stale result leaves its cell empty, with the reason in the table's notes; the rest of the report stands
    (issue 46: refused, with the reason in the table's notes)."""
    add_result(store, "tsdae", 7, "askubuntu", {"map": 0.61}, sha="another-version")
    rep = make_report(ReportOptions(results_dir=store, out=tmp_path / "out", plots=False))
    built = next(s.built for s in rep.sections if s.built.name == "paper-table2")
    tsdae = next(r for r in built.rows if r.key is not None and r.key.method == "tsdae")
    assert tsdae.cells["askubuntu"].missing and not tsdae.cells["twitterpara.avg"].missing
    assert not tsdae.cells["useb.avg"].n  # an average over a refused cell is refused too
    note = next(n for n in built.notes if n.startswith("Not averaged (TSDAE: AskU., Avg.)"))
    assert "the data differ (sha256 sha-askubunt in" in note and "another-vers in" in note
    from usebench.cli.main import main

    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(tmp_path / "o2")])
    assert res.exit_code == 0 and "warning: Not averaged (TSDAE: AskU., Avg.)" in res.output
    with pytest.raises(MixedRunsError, match="data differ"):  # the cell itself still refuses to average
        index_results(iter_results(store)).cell(tsdae.key, COLUMNS["askubuntu"], "test")


def test_comparison_with_the_paper(store):
    """The hand store's rows have published counterparts (method, block, pooling), but their records hold no
    resolved config, backbone fingerprint or data hash: none is paired (issue 28, pairing by content), and the
    notes say what is missing; the Δ of a pair is ours − paper."""
    from usebench.report.reference import matches
    from usebench.report.row_settings import run_settings

    spec = TABLES.get("paper-table2")
    b = _built(store)
    comp = compare(b, spec, runs=run_settings(index_results(iter_results(store))))
    assert comp.rows == ()
    assert any(n.startswith("No published neighbour for TSDAE") and "config: ours records no trained stage" in n
               for n in comp.notes)
    counterpart = {r.label: next(e for e in entries("tsdae-table2") if matches(e, r.key)) for r in b.rows if r.key}
    assert counterpart["TSDAE"].source == "TSDAE Table 2" and counterpart["TSDAE"].values["askubuntu"] == 59.4
    assert comp.delta(_row(b, "TSDAE"), counterpart["TSDAE"], "askubuntu") == pytest.approx(61.0 - 59.4)
    assert counterpart["SBERT-supervised"].label == "SBERT-supervised"  # the upper bound, by method and group


def test_a_published_backbone_without_a_recorded_fingerprint_never_pairs(tmp_path):
    """Before: distilbert-base-uncased paired with TSDAE Table 9 by its name."""
    from usebench.report.row_settings import run_settings

    for seed in range(2):
        add_result(tmp_path, "tsdae", seed, "askubuntu", {"map": 0.5}, model="distilbert-base-uncased")
    index = index_results(iter_results(tmp_path))
    b = build_table(TABLES.get("paper-table2"), index)
    comp = compare(b, TABLES.get("paper-table2"), runs=run_settings(index))
    assert comp.rows == ()
    note = next(n for n in comp.notes if n.startswith("No published neighbour for TSDAE"))
    assert "TSDAE Table 2 TSDAE differs in backbone: ours has no fingerprint recorded" in note


def test_rank_correlation_is_printed_under_specific_vs_sts(store):
    b = _built(store, "specific-vs-sts")
    # TSDAE, CT, SimCSE: STSb 66, 74, 73 vs USEB avg 51.75, 50.25, 45.5 -> ranks (1,3,2) vs (3,2,1),
    # sum d^2 = 6, rho = 1 - 6 * 6 / (3 * 8) = -0.5 (the other rows lack STSb)
    note = next(n for n in b.notes if n.startswith("Rank correlation"))
    assert "rho = -0.50 over 3 rows" in note


def test_reference_data_is_consistent():
    data = load_reference()
    for table_id, table in data["tables"].items():
        assert table["source"] in data["sources"]
        for r in table["rows"]:
            assert set(r["values"]) == set(table["columns"]), (table_id, r["label"])
            assert all(c in COLUMNS for c in table["columns"])
    # the paper's own averages agree with its parts (TSDAE Table 2, TSDAE row): (59.4+14.5+73.0+74.0)/4 = 55.2
    tsdae = entries("tsdae-table2")[0]
    parts = [tsdae.values[c] for c in COLUMNS["useb.avg"].mean_of]
    assert round(sum(parts) / 4, 1) == tsdae.values["useb.avg"]


@pytest.mark.skipif(not PAPERS.is_dir(), reason="paper texts not present")
def test_reference_rows_appear_in_the_paper_texts():
    """Every typed-in row's numbers appear, in order, on one line of the paper text it cites."""
    files = {"tsdae": ["000_469bd9b6678f63f1.txt", "003_0ccc4bd97e882493.txt"],
             "denosent": ["001_595cabc9b61a0ef3.txt"], "paser": ["002_fcbe7f2a80beb031.txt"],
             "thesis": ["004_812ab4b1d0bc624d.txt"]}
    data = load_reference()
    for table_id, table in data["tables"].items():
        if table.get("outside_texts"):  # typed in from the authors' PDFs, which shared/papers does not hold
            assert "pdf" in table["outside_texts"], table_id
            continue
        # a table printed in one rendering only names it ("text"); the others are checked in both
        for name in [table["text"].split()[0]] if "text" in table else files[table["source"]]:
            lines = (PAPERS / name).read_text(encoding="utf-8").splitlines()
            for r in table["rows"]:
                want = [v for v in (r["values"][c] for c in table["columns"]) if v is not None]
                ok = any(_numbers_in(line)[:len(want)] == want or _contains(_numbers_in(line), want)
                         for line in lines) or _in_a_column(lines, want)
                assert ok, f"{table_id} {r['label']}: {want} not found in {name}"


def _in_a_column(lines: list[str], want: list[float], window: int = 12) -> bool:
    """A transposed table (the thesis' Tables 5.11-5.13: one line per metric, one column per setting): the row's
    numbers stand in one column of successive lines."""
    rows = [_numbers_in(line) for line in lines]
    for start in range(len(rows)):
        block = [r for r in rows[start:start + window] if r]
        for col in range(max((len(r) for r in block), default=0)):
            found = [r[col] for r in block if len(r) > col]
            if _contains(found, want) and found[:1] == want[:1]:
                return True
    return False


def _numbers_in(line: str) -> list[float]:
    line = re.sub(r"<[^>]+>", " ", line).replace("†", " ")
    line = re.sub(r"\+/-\s*\d+(\.\d+)?", " ", line)  # Table 9: keep the means; stds are checked by eye
    # a number may end a sentence ("... the validation score to 79.15."), not run into another digit or word
    return [float(x) for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)", line)]


def _contains(nums: list[float], want: list[float]) -> bool:
    return any(nums[i:i + len(want)] == want for i in range(len(nums) - len(want) + 1))


def test_cli_report_writes_every_format_and_plots(store, tmp_path):
    from usebench.cli.main import main

    run_dir = next(p.parent.parent for p in store.glob("tsdae__*/askubuntu/test.json"))
    (run_dir / "log.jsonl").write_text("".join(json.dumps({"step": s, "loss": 5.0 / s, "lr": 3e-5}) + "\n"
                                               for s in (1, 2, 3, 4)) + json.dumps({"step": 4, "dev": 0.5}) + "\n")
    out = tmp_path / "reports"
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(out),
                                    "--compare", "tsdae,ct"])
    assert res.exit_code == 0, res.output
    assert "| TSDAE | 3 | 61.0 ± 1.0† |" in res.output and "A wins 3" in res.output
    for name in ("paper-table2", "sts-table", "specific-vs-sts"):
        for ext in (".md", ".tex", ".csv", ".json"):
            assert (out / f"{name}{ext}").is_file()
        # issue 56, item 6: nothing of the hand store pairs with a published row, so no -vs-paper.csv of a header
        # alone (it was written); the table's notes and JSON say why
        assert not (out / f"{name}-vs-paper.csv").exists()
    assert (out / "plots" / "paper-table2-seeds.png").stat().st_size > 1000
    seeds = list(csv.DictReader((out / "plots" / "paper-table2-seeds.csv").open()))
    assert {(r["row"], r["seed"]) for r in seeds if r["column"] == "askubuntu" and r["row"] == "TSDAE"} == \
        {("TSDAE", "0"), ("TSDAE", "1"), ("TSDAE", "2")}
    loss = list(csv.DictReader((out / "plots" / "loss-curves.csv").open()))
    assert [float(r["loss"]) for r in loss] == [5.0, 2.5, 5.0 / 3, 1.25]  # the dev line is not a loss
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") >= 4 and "<script" not in page and 'src="http' not in page


def test_model_folders_of_a_run_are_not_results(store, tmp_path):
    """A `bench run` directory also holds checkpoint/*.json (model config): the report reads only results."""
    run_dir = next(p.parent.parent for p in store.glob("tsdae__*/askubuntu/test.json"))
    for sub in ("checkpoint", "train_state", "dev_best"):
        (run_dir / sub).mkdir()
        (run_dir / sub / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    assert all(r.path.parent.name not in ("checkpoint", "train_state", "dev_best") for r in iter_results(store))
    assert _row(_built(store), "TSDAE").cells["askubuntu"].mean == pytest.approx(61.0)


def test_unknown_table_and_format(store, tmp_path):
    from usebench.cli.main import main

    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--table", "paper-tabel2"])
    assert res.exit_code == 2 and "did you mean 'paper-table2'" in res.output
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--format", "docx", "--out",
                                    str(tmp_path / "x")])
    assert res.exit_code == 2 and "unknown format 'docx'" in res.output


def test_training_corpus_splits_in_domain_from_other_evaluations(tmp_path):
    for seed in range(2):
        add_result(tmp_path, "tsdae", seed, "twitterpara", {"ap_twitterurl": 0.7, "ap_pit": 0.6, "ap_avg": 0.65},
                   train_corpus="twitterpara")
        add_result(tmp_path, "tsdae", seed, "stsb", {"spearman": 0.6}, train_corpus="twitterpara")
    index = index_results(iter_results(tmp_path))
    b2, sts = (build_table(TABLES.get(n), index) for n in ("paper-table2", "sts-table"))
    assert [r.label for r in b2.rows] == ["TSDAE"]  # in-domain: the paper's setup
    assert [r.label for r in sts.rows] == ["TSDAE · trained on twitterpara"]
    assert sts.rows[0].cells["stsb"].mean == pytest.approx(60.0)


def test_corpus_size_curve(tmp_path):
    from usebench.report import plots

    for size, v in ((128, 0.50), (1024, 0.55)):
        for seed in range(2):
            add_result(tmp_path, "tsdae", seed, "stsb", {"spearman": v + seed / 100}, split="test",
                       config={"corpus_size": size})
    plot = plots.corpus_size_curve(index_results(iter_results(tmp_path)), tmp_path)
    rows = list(csv.DictReader(plot.data.open()))
    # seeds 0, 1 score v and v + 0.01: means 50.5 and 55.5 (x100), n = 2 each
    assert sorted((int(r["corpus_size"]), round(float(r["mean"]), 2), r["n"]) for r in rows) == \
        [(128, 50.5, "2"), (1024, 55.5, "2")]
    assert plot.png.stat().st_size > 1000


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def _chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)


def _console_errors(stderr: str) -> list[str]:
    # Chromium logs page console messages as `...:INFO:CONSOLE(line)] "message", source: ...` (any level).
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_html_report_in_headless_chromium(store, tmp_path):
    from PIL import Image

    out = tmp_path / "reports"
    make_report(ReportOptions(results_dir=store, out=out, formats=("html",)))
    page = out / "report.html"
    # The detector sees a console error when there is one (control page) ...
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>console.error('boom')</script></body></html>")
    assert any("boom" in ln for ln in _console_errors(_chromium(bad, tmp_path, "--dump-dom").stderr))
    # ... and sees none on the report, whose DOM holds the tables with their values.
    dom = _chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and not _console_errors(dom.stderr), dom.stderr[-2000:]
    assert 'data-table="paper-table2"' in dom.stdout and 'data-table="sts-table"' in dom.stdout
    assert "61.0" in dom.stdout and "Published: TSDAE Table 2" in dom.stdout
    shot = tmp_path / "shot.png"
    res = _chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,1200", "--hide-scrollbars")
    assert res.returncode == 0 and shot.is_file()
    # The table headers' fill colour (#dbe7f3) covers a visible area of the screenshot: the tables rendered.
    img = Image.open(shot).convert("RGB")
    header_px = sum(1 for px in img.getdata() if abs(px[0] - 0xDB) <= 2 and abs(px[1] - 0xE7) <= 2
                    and abs(px[2] - 0xF3) <= 2)
    assert header_px > 5000, header_px
