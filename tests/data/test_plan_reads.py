"""The planner's fast readers agree with the readers they stand in for (issue 37): AllNLI split on tabs where csv
would read the same, NLI triplets counted without drawing them, fingerprints without a json.dumps per row; and the
per-session memo reads a file once while it is unchanged."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os

import numpy as np
import pytest

from usebench.data import labeled as L
from usebench.data import memo
from usebench.errors import BenchError
from usebench.methods.parts.labeled_data import fingerprint

HEADER = "split\tdataset\tfilename\tsentence1\tsentence2\tlabel"


def csv_rows(text: str, split: str = "train") -> list[tuple[str, str, str]]:
    """What read_allnli read before issue 37: csv.DictReader over the lines."""
    reader = csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    rows = []
    for row in reader:
        if row["split"] != split:
            continue
        if row["label"] not in L.NLI_LABELS or row["sentence2"] is None:
            raise BenchError("bad label")
        rows.append((row["sentence1"].strip(), row["sentence2"].strip(), row["label"]))
    return rows


CASES = {
    "plain": [HEADER, "train\tsnli\tx\tA man.\tA person.\tentailment", "dev\tsnli\tx\tB.\tC.\tneutral",
              "train\tmnli\ty\t \"Quoted\" text \t'single'\tcontradiction"],
    "columns in another order, extra fields": ["label\tsentence2\tsentence1\tsplit",
                                               "neutral\tb\ta\ttrain\textra\tmore", "entailment\td\tc\ttrain"],
    "a blank line (csv skips it)": [HEADER, "train\tsnli\tx\ta\tb\tneutral", "", "train\tsnli\tx\tc\td\tneutral"],
    "a short row (csv fills None)": [HEADER, "train\tsnli\tx\ta"],
    "a duplicate column": [HEADER + "\tlabel", "train\tsnli\tx\ta\tb\tneutral\tentailment"],
    "an unknown label": [HEADER, "train\tsnli\tx\ta\tb\tmaybe"],
    "a form feed and U+2028 inside a field": [HEADER, "train\tsnli\tx\ta\x0cb\tc\u2028d\tentailment"],
    "a lone carriage return inside a field": [HEADER, "train\tsnli\tx\ta\rb\tc\tentailment"],
}


def outcome(read):
    """The rows read, or the kind of error (a data error, or csv's own on a carriage return)."""
    try:
        return read()
    except BenchError:
        return "data error"
    except csv.Error:
        return "csv error"


@pytest.mark.parametrize("case", CASES)
def test_allnli_read_by_splitting_agrees_with_csv(case, tmp_path):
    path = tmp_path / "AllNLI.tsv"
    path.write_text("\n".join(CASES[case]) + "\n", encoding="utf-8")
    want = outcome(lambda: csv_rows("\n".join(L.read_lines(path))))
    assert outcome(lambda: L.read_allnli(path)) == want


def test_allnli_split_path_is_taken_where_csv_reads_the_same():
    lines = CASES["plain"]
    assert L._allnli_rows_split(lines, "train") is not None
    for case in ("a blank line (csv skips it)", "a short row (csv fills None)", "a duplicate column",
                 "a lone carriage return inside a field"):
        assert L._allnli_rows_split(CASES[case], "train") is None, case


def old_fingerprint(examples) -> str:
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps(ex, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


@pytest.mark.parametrize("examples", [
    [], [("a", "b", "c")], [["triplets"], ("q\"\\\n\t\u2028\ud800x", "é ü", "")],
    [("a", "b", 0.5), ("x", "y", 1.0)], [("a",), ["b", "c"]], [{"k": 1}], [("a", 1)], [("a", "b", "c", "d")],
    [("x", float("nan"), 1)], [("a", "b"), ("c", "d", "e")], [(True, "b")],
])
def test_fingerprint_is_one_json_line_per_example(examples):
    assert fingerprint(examples) == old_fingerprint(examples)


def nli_rows(n: int, rng: np.random.Generator) -> list[tuple[str, str, str]]:
    sentences = [f"s{i}" for i in range(n // 2)]
    return [(sentences[rng.integers(len(sentences))], sentences[rng.integers(len(sentences))],
             L.NLI_LABELS[rng.integers(3)]) for _ in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_census_counts_what_every_draw_gives(seed):
    rows = nli_rows(400, np.random.default_rng(seed))
    count, clean = L.nli_triplet_census(rows)
    assert clean
    for draw in range(3):
        assert len(L.nli_triplets(rows, np.random.default_rng([draw, 7]))) == count


def test_triplet_census_is_unclean_when_a_blank_text_could_be_drawn():
    rows = [("a", "b", "entailment"), ("a", "", "contradiction")]
    assert L.nli_triplet_census(rows) == (2, False)
    assert L.nli_triplet_census([("a", "b", "entailment"), ("", "c", "neutral")])[1]  # neutral rows never drawn


def test_memo_reads_a_file_once_per_session_and_again_when_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "c.txt"
    path.write_text("one\ntwo\n", encoding="utf-8")
    calls = []
    real = L._read_lines
    monkeypatch.setattr(L, "_read_lines", lambda p: calls.append(p) or real(p))
    L.read_lines(path)
    L.read_lines(path)
    assert len(calls) == 2  # outside a session nothing is kept
    with memo.planning():
        assert L.read_lines(path) == ["one", "two"]
        lines = L.read_lines(path)
        lines.append("mutated by a caller")  # callers get copies
        assert L.read_lines(path) == ["one", "two"] and len(calls) == 3
        path.write_text("one\ntwo\nthree\n", encoding="utf-8")
        os.utime(path, ns=(1, 1))
        assert L.read_lines(path) == ["one", "two", "three"] and len(calls) == 4
    assert not memo.in_session()


def test_an_error_is_not_remembered():
    with memo.planning():
        with pytest.raises(ValueError):
            memo.remember("k", lambda: (_ for _ in ()).throw(ValueError("first")))
        assert memo.remember("k", lambda: 3) == 3


def test_a_plan_names_a_large_file_before_reading_it(tmp_path, monkeypatch, capsys):
    path = tmp_path / "big.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    monkeypatch.setattr(memo, "PROGRESS_BYTES", 1)
    with memo.planning():
        L.read_lines(path)
        L.read_lines(path)  # read once: named once
    assert capsys.readouterr().err.count(f"planning: reading {path}") == 1
    L.read_lines(path)  # outside a plan nothing is announced
    assert "planning" not in capsys.readouterr().err


def test_a_remembered_value_counts_the_files_it_read(tmp_path):
    """A fact computed around a remembered value depends on the files that value was read from (the digests keep
    a fact only with its files: a value another fact of the session had already read must still name them)."""
    path = tmp_path / "c.txt"
    path.write_text("one\n", encoding="utf-8")
    with memo.planning():
        memo.remember("parsed", lambda: L.read_lines(path))
        with memo.recording() as files:
            assert memo.remember("parsed", lambda: []) == ["one"]  # remembered: not built again...
        assert files == [memo.file_stamp(path)]  # ...yet it read this file
