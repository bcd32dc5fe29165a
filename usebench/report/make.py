"""`bench report`: read the results store, build the requested tables, write them in the requested formats
with the published numbers beside them, and draw the plots. Nothing is re-run."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from usebench.errors import BenchError
from usebench.report.build import Built, Spread
from usebench.report.laptop import TABLE as LAPTOP_TABLE, write_laptop_page
from usebench.report.reference import compare, our_settings, published
from usebench.paths import default_data_root
from usebench.report.pairing import PairingContext
from usebench.report.row_settings import run_settings
from usebench.report.page import write_page
from usebench.report.pretraining import break_even, break_even_csv, break_even_markdown, pretraining_figure
from usebench.report.render import comparison_csv, to_csv, to_json
from usebench.stats.table_rows import ResultIndex, index_results
from usebench.report.sections import Section, section_latex, section_markdown
from usebench.report.selection import filled, why_empty
from usebench.report.skeleton import build_with_skeleton
from usebench.stats.seeds import SeedStats, paired_comparison
from usebench.stats.table_specs import TABLES
from usebench.stats.paired import BOOTSTRAP_P, holm
from usebench.stats.table_cells import TableStats
from usebench.report.tsdae_analyses import SECTION_BUILDERS
from usebench.store.mteb_results import all_results
from usebench.store import StoredResult, nested_stores, write_json_atomic

Format = Literal["md", "tex", "csv", "html"]
FORMATS: tuple[Format, ...] = ("md", "tex", "csv", "html")


@dataclass(frozen=True)
class ReportOptions:
    """What `bench report` builds."""

    results_dir: Path
    out: Path = Path("reports")
    tables: tuple[str, ...] = ("paper-table2", "sts-table", "specific-vs-sts")
    formats: tuple[Format, ...] = FORMATS
    split: str | None = None  # None: each table's own split
    reference_source: str | None = None
    split_configs: bool = False
    compare: tuple[str, str] | None = None
    plots: bool = True
    # --user-sample NAME=SHA256: the user's own sample of an unpublished corpus a published row names (the
    # thesis' OpenWebText 1M, Quora titles 100k); a run on it pairs with the row, which then says "user's sample"
    user_samples: tuple[tuple[str, str], ...] = ()
    # where `bench data` recorded the release identities the package does not pin, after verifying a download against
    # pinned checksums (None: $BENCH_DATA, as `bench run`); its files are never hashed to decide what a paper used
    data_root: Path | None = None
    # only the tables the store fills (fully or partly): the others are left out with the reason (`bench report`'s
    # default; ``--table all`` writes every table of ``tables``)
    filled_only: bool = False
    spread: Spread = "ci"  # what a cell's ± shows: its bootstrap interval's half-width (where it has one) or the std


@dataclass
class Report:
    sections: list[Section]
    plots: list = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    n_results: int = 0
    partial: list[Path] = field(default_factory=list)  # results made with --allow-partial (not the release's data)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (table, why) the store fills nothing of

    def markdown(self) -> str:
        return "\n".join(section_markdown(s) for s in self.sections)


def paired_lines(built: Built, a: str, b: str, stats: TableStats | None = None) -> list[str]:
    """Method ``a`` vs ``b`` per column, within each block and base model: B - A with its paired two-level bootstrap
    interval and test over items and seeds (Holm over the pair's columns) where both store per-item outcomes (the
    same machinery as `bench compare`, which also runs a permutation test); else paired by seed alone (wins, paired
    t-test when n >= 3), marked."""
    lines = []
    for ra in (r for r in built.rows if r.key and r.key.method == a):
        for rb in (r for r in built.rows if r.key and r.key.method == b and r.key.same_experiment(ra.key)):
            cols = [c for c in built.columns if not ra.cells[c.id].missing and not rb.cells[c.id].missing]
            found = {c.id: stats.paired_cell(ra.key, rb.key, c, built.split or "test") if stats else "no statistics"
                     for c in cols}
            tested = [cid for cid, f in found.items() if not isinstance(f, str)]
            adjusted = dict(zip(tested, holm([found[cid][3] for cid in tested])))
            for c in cols:
                head = f"{ra.label} (A) vs {rb.label} (B), {c.group} {c.header}".replace("  ", " ")
                f = found[c.id]
                if isinstance(f, str):  # A - B over common seeds, as before items were stored
                    pc = paired_comparison(SeedStats(ra.cells[c.id].per_seed), SeedStats(rb.cells[c.id].per_seed))
                    lines.append(f"{head}: {pc.summary(scale=1.0)} (seeds only: {f.split(';')[0]})")
                    continue
                delta, low, high, p = f
                lines.append(f"{head}: B − A {delta * 100:+.2f} [{low * 100:+.2f}, {high * 100:+.2f}], p = {p:.3g} "
                             f"(Holm over {len(tested)} column(s): {adjusted[c.id]:.3g}; {BOOTSTRAP_P} over items and "
                             "seeds)")
    return lines or [explain_no_pairs(built, a, b)]


def explain_no_pairs(built: Built, a: str, b: str) -> str:
    """Why ``--compare a,b`` found nothing to pair in this table, and what would make a pair."""
    rows = {m: [r for r in built.rows if r.key and r.key.method == m] for m in (a, b)}
    present = sorted({r.key.method for r in built.rows if r.key})
    absent = [m for m in (a, b) if not rows[m]]
    if absent:
        return (f"--compare {a},{b}: nothing to compare in {built.name}: no results of method "
                f"{' or '.join(repr(m) for m in absent)} in its columns (methods with results here: "
                f"{', '.join(present) or 'none'})")
    same = [(ra, rb) for ra in rows[a] for rb in rows[b] if rb.key.same_experiment(ra.key)]
    if not same:
        def where(r):
            k = r.key
            return f"{r.label} [block {k.group}, model {k.model}, corpus {k.corpus or 'own'}, size {k.corpus_size}]"
        return (f"--compare {a},{b}: nothing to compare in {built.name}: pairs need the same block, base model, "
                f"training corpus and corpus size, and none match: A rows {'; '.join(map(where, rows[a]))}; "
                f"B rows {'; '.join(map(where, rows[b]))}")
    return (f"--compare {a},{b}: nothing to compare in {built.name}: the matching rows have no column with results "
            "of both methods")


def build_sections(results: list[StoredResult], opts: ReportOptions) -> list[Section]:
    """Build every requested table from the results (no files written)."""
    index: ResultIndex = index_results(results, opts.split_configs)
    settings, runs = our_settings(index), run_settings(index)
    context = PairingContext(opts.data_root or default_data_root(), dict(opts.user_samples))
    stats = TableStats(index)  # one per report: a cell shared by several tables is drawn once
    sections = []
    for name in opts.tables:
        spec = TABLES.get(name)
        if name in SECTION_BUILDERS:  # tables whose rows are configurations (TSDAE App. A, Table 4)
            sections.append(SECTION_BUILDERS[name](results, spec, context))
            continue
        built = build_with_skeleton(spec, index, opts.split, context.data_root, cell_stats=stats,
                                    spread=opts.spread)
        comparison = compare(built, spec, opts.reference_source, settings, runs, context)
        paired = paired_lines(built, *opts.compare, stats) if opts.compare else []
        sections.append(Section(built, comparison, published(spec), paired))
    return sections


def make_report(opts: ReportOptions) -> Report:
    """Build and write the report; returns what was written."""
    results = all_results(opts.results_dir)  # the store's results and MTEB's files of the USEB tasks under it
    if not results:
        nested = sorted(nested_stores(opts.results_dir))  # e.g. a fresh clone's results/laptop, results/reference
        hint = (f" (it holds the store(s) {', '.join(str(opts.results_dir / n) for n in nested)} of their own: "
                f"`bench report --results-dir {opts.results_dir / nested[0]}`)") if nested else ""
        raise BenchError(f"no results in {opts.results_dir}{hint}; run `bench eval` or `bench run` first")
    for f in opts.formats:
        if f not in FORMATS:
            raise BenchError(f"unknown format {f!r} (known: {', '.join(FORMATS)})")
    sections = build_sections(results, opts)
    left_out = [(s.built.name, why_empty(s.built, results, opts.split)) for s in sections
                if opts.filled_only and not filled(s.built)]
    sections = [s for s in sections if s.built.name not in dict(left_out)]
    report = Report(sections=sections, n_results=len(results),
                    partial=[r.path for r in results if r.record["task"].get("partial")], left_out=left_out)
    out = opts.out
    out.mkdir(parents=True, exist_ok=True)
    for s in sections:
        name = s.built.name
        if "md" in opts.formats:
            report.files.append(_write(out / f"{name}.md", section_markdown(s)))
        if "tex" in opts.formats:
            report.files.append(_write(out / f"{name}.tex", section_latex(s)))
        if "csv" in opts.formats:
            report.files.append(_write(out / f"{name}.csv", to_csv(s.built)))
            report.files += _comparison_csv(out / f"{name}-vs-paper.csv", s)
            report.files.append(write_json_atomic(out / f"{name}.json", to_json(s.built, s.comparison)))
    report.files += _break_even(results, out, opts)
    if LAPTOP_TABLE in (s.built.name for s in sections):  # the laptop recipe's page: table, effects, curves, costs
        report.files += write_laptop_page(results, out)
    if opts.plots:
        report.plots = _plots(results, sections, out / "plots", opts)
        report.files += [p.png for p in report.plots] + [p.data for p in report.plots]
    if "html" in opts.formats:
        report.files.append(write_page(out / "report.html", sections, report.plots, len(results), opts.results_dir))
    return report


def _plots(results: list[StoredResult], sections: list[Section], out: Path, opts: ReportOptions) -> list:
    from usebench.report import curves, plots

    out.mkdir(parents=True, exist_ok=True)
    index = index_results(results, opts.split_configs)
    made = [plots.seed_spread(s.built, out) for s in sections]
    made += [curves.table_curves(s.built, index, out) for s in sections]  # shown beside each table on the page
    made.append(plots.loss_curves(results, out))
    made.append(plots.corpus_size_curve(index, out))
    made.append(pretraining_figure(index, out))
    made += _thesis_plots(results, sections, out, index)
    return [p for p in made if p is not None]


def _thesis_plots(results: list[StoredResult], sections: list[Section], out: Path, index: ResultIndex) -> list:
    """R. Wang 2022's figures: R@k / P@k curves of its Fig. 5.3 / 5.4 tables (SimCSE NT-Xent rows, the figures'
    setting), and the BM25 alpha sweep."""
    from usebench.report.thesis import alpha_sweep, recall_precision_curves

    curves = [recall_precision_curves(s.built, out, s.built.name, index) for s in sections
              if s.built.name in ("thesis-fig5.3", "thesis-fig5.4")]
    return [*curves, alpha_sweep(results, out)]


def _break_even(results: list[StoredResult], out: Path, opts: ReportOptions) -> list[Path]:
    """Table 10 (``pretraining-breakeven.md``/``.csv``) when the store has the supervised curve and an
    unsupervised score on the same split; nothing otherwise."""
    from usebench.report.plots import _write_csv
    from usebench.report.reference import load_reference

    rows = break_even(index_results(results, opts.split_configs))
    if not rows:
        return []
    paper = load_reference()["tables"]["tsdae-table10"]["rows"][0]["values"]
    md = _write(out / "pretraining-breakeven.md", break_even_markdown(rows, paper))
    _write_csv(out / "pretraining-breakeven.csv", ("column", "unsupervised", "target", "precision", "found", "low",
                                                   "high", "next_size"), break_even_csv(rows))
    return [md, out / "pretraining-breakeven.csv"]


def _comparison_csv(path: Path, s: Section) -> list[Path]:
    """``<table>-vs-paper.csv`` when a row of ours stands beside a published one; no file of a header alone
    otherwise (and none left from an earlier report in this folder: it would say pairs that no longer hold). Why
    nothing pairs is in the table's notes and its JSON (``unpaired``)."""
    if not s.comparison.rows:
        path.unlink(missing_ok=True)
        return []
    return [_write(path, comparison_csv(s.comparison))]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


__all__ = ["Report", "ReportOptions", "build_sections", "make_report"]
