"""`bench report` prints what the store can fill (issue 56, item 1): on a store of one CT unit it printed ~700 lines
and wrote 134 files, 21 of its tables all "—"; by default it writes and prints the tables the store fills (fully or
partly) and names the others in one line with the reason; ``--table all`` writes every table, as before."""
from __future__ import annotations

from click.testing import CliRunner

from tests.report.synthetic_results import add_useb
from usebench.cli.main import main
from usebench.report.build import Built
from usebench.report.selection import filled, left_out_line, terminal_notes
from usebench.stats.table_specs import TABLES


def _one_ct_unit(root):
    add_useb(root, "ct", 0, 0.55, 0.12, (0.70, 0.60), (0.60, 0.61, 0.62, 0.63), pooling="mean",
             setting="unsupervised")
    return root


def _report(store, out, *extra):
    res = CliRunner().invoke(main, ["report", "--results-dir", str(store), "--out", str(out), "--no-plots", *extra])
    assert res.exit_code == 0, res.output
    return res.output


def test_default_writes_and_prints_only_the_tables_the_store_fills(tmp_path):
    store = _one_ct_unit(tmp_path / "results")
    text = _report(store, tmp_path / "out")
    written = {p.name for p in (tmp_path / "out").glob("*.md")}
    # the four USEB tasks fill Table 2, Table 3's average, the protocols table and Table 9 (BERT-base block)
    assert written == {"paper-table2.md", "specific-vs-sts.md", "protocols.md", "tsdae-table9.md"}
    assert "### STS: Spearman" not in text and "### PaSeR" not in text  # the STS tables: nothing of this store
    # one line names every table left out, grouped by reason
    (line,) = [ln for ln in text.splitlines() if ln.startswith("not written:")]
    left = set(TABLES.names()) - {p.removesuffix(".md") for p in written}
    assert all(name in line for name in left) and f"not written: {len(left)} table(s)" in line
    assert "no test results on their tasks: sts-table" in line and line.endswith("--table all writes them")
    # the paper's rows not made here: one line per table in the terminal, the list (with reasons) in the file
    assert "no results of" not in text and "21 rows of TSDAE Table 2 not made here (each with its reason: " \
                                           "paper-table2.md)" in text
    md = (tmp_path / "out" / "paper-table2.md").read_text().splitlines()
    assert sum(ln.startswith("— ") for ln in md) == 21
    assert len(text.splitlines()) < 150


def test_table_all_writes_every_table_as_before(tmp_path):
    store = _one_ct_unit(tmp_path / "results")
    text = _report(store, tmp_path / "out", "--table", "all", "--format", "md")
    assert {p.stem for p in (tmp_path / "out").glob("*.md")} >= set(TABLES.names())
    assert "not written:" not in text and "### STS: Spearman" in text
    assert "no results of tsdae" in text  # the paper's rows not made here, each with its reason, as before


def test_a_named_table_is_written_even_when_empty(tmp_path):
    store = _one_ct_unit(tmp_path / "results")
    text = _report(store, tmp_path / "out", "--table", "sts-table", "--format", "md")
    assert (tmp_path / "out" / "sts-table.md").is_file() and "not written:" not in text


def _built(rows_filled: bool, notes: tuple[str, ...] = ()) -> Built:
    from usebench.report.build import Cell, Row
    from usebench.stats.table_specs import COLUMNS

    cell = Cell(61.0, n=1) if rows_filled else Cell(None, n=0)
    return Built("paper-table2", "t", "c", (COLUMNS["askubuntu"],), (Row("TSDAE", "", {"askubuntu": cell}),), 1,
                 notes=notes)


def test_filled_counts_our_values_only():
    assert filled(_built(True)) and not filled(_built(False))


def test_the_left_out_line_groups_tables_by_reason():
    line = left_out_line([("a", "why 1"), ("b", "why 2"), ("c", "why 1")])
    assert line == "not written: 3 table(s) this store fills nothing of (why 1: a, c; why 2: b); --table all writes them"
    assert left_out_line([]) == ""


def test_terminal_notes_fold_the_missing_rows_only():
    notes = ("Split: test.", "Rows of TSDAE Table 2 not made here:", "— A: no results.", "— B: no results.", "After.")
    assert terminal_notes(_built(True, notes)).notes == (
        "Split: test.", "2 rows of TSDAE Table 2 not made here (each with its reason: paper-table2.md)", "After.")
