"""Short row labels for the rendered tables: a row's label carries its whole setting (``TSDAE · trained on
file:a.toks+b.toks · laptop``), which pushed the HTML page's Avg. column behind a horizontal scroll at 1,400 px and a
13-column LaTeX table out of a paper's column. A rendered table shows the method with its short marks (backbone,
corpus and labeled-set sizes) and a superscript number; the long marks (training corpus, variant, data that is not
the release) are the table's numbered notes, one per distinct combination. The CSV and JSON keep the whole label."""
from __future__ import annotations

from collections.abc import Sequence

from usebench.report.build import Row

SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def superscript(n: int) -> str:
    """``12`` -> ``¹²``."""
    return str(n).translate(SUPERSCRIPTS)


def long_marks(row: Row) -> list[tuple[str, str]]:
    """(the mark as the label holds it, as the note says it) for the row's long marks, in the label's order."""
    key = row.key
    marks = []
    if key is not None and key.corpus:
        marks.append((f"trained on {key.corpus}", f"trained on {key.corpus}"))
    if key is not None and key.variant:
        marks.append((key.variant, f"variant {key.variant}"))
    if row.not_release:
        marks.append((row.not_release, row.not_release))
    return marks


def short_labels(rows: Sequence[Row]) -> tuple[list[str], tuple[str, ...]]:
    """Each row's short label, and the notes its numbers point at (``¹ trained on file:a.toks+b.toks; variant
    laptop``). A mark the label does not hold as a `` · ``-separated part stays where it is."""
    numbers: dict[tuple[str, ...], int] = {}
    labels = []
    for row in rows:
        head, *segments = row.label.split(" · ")
        said = []
        for held, note in long_marks(row):
            if held in segments:
                segments.remove(held)
                said.append(note)
        label = " · ".join([head, *segments])
        if said:
            label += superscript(numbers.setdefault(tuple(said), len(numbers) + 1))
        labels.append(label)
    return labels, tuple(f"{superscript(n)} {'; '.join(said)}." for said, n in numbers.items())
