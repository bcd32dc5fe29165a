"""The checks MTEB's own repository runs on every task it ships, applied to any task object (the USEB tasks here).

MTEB runs them over ``mteb.get_tasks()`` in its tests, which a task built elsewhere is not part of; the same checks, as
embeddings-benchmark/mteb states them (tests/ at commit a905523, the MTEB 2.26 generation):

- tests/test_validate_metadata/test_citation_formatting.py: a task's and a benchmark's BibTeX equals what
  bibtexparser 1's writer makes of it (two-space indent, trailing commas, fields and entries sorted by key, entries
  separated by a blank line);
- tests/test_tasks/test_metadata.py: the metadata validates and ``is_filled()``, trusts no remote code, has a
  simplified task type; an aggregate task has the ``default`` subset only; any other task has descriptive statistics
  and ``n_samples``, and a string prompt;
- tests/test_tasks/test_task_quality.py: its descriptive statistics show no empty split, no text of 3 characters or
  fewer, no more than 1% duplicated texts (queries, documents, single texts) or pairs, no more unique items than
  items, labels with at least two values, no query without a relevant document or a candidate, no more relevant
  documents than documents; a text more than 50 times the average length is a warning there, and is reported here.
"""
from __future__ import annotations

from typing import Any

DUPLICATE_TOLERANCE = 0.01
SHORT_TEXT = 3  # a minimum length of this or less is "short_text"
LONG_TEXT_RATIO = 50
WARNING_KINDS = {"long_text"}  # MTEB warns, it does not fail


def mteb_bibtex(citation: str) -> str | None:
    """``citation`` as bibtexparser 1's writer formats it with MTEB's settings (None: no entry parsed)."""
    import bibtexparser
    from bibtexparser.bparser import BibTexParser
    from bibtexparser.bwriter import BibTexWriter

    parser = BibTexParser(common_strings=True, ignore_nonstandard_types=False, interpolate_strings=False)
    database = bibtexparser.loads(citation, parser)
    if not database.entries:
        return None
    writer = BibTexWriter()
    writer.indent, writer.comma_first, writer.add_trailing_comma = "  ", False, True
    return writer.write(database).strip()


def metadata_problems(task: Any) -> list[str]:
    """What MTEB's metadata test would fail ``task`` for (empty: it passes)."""
    meta, problems = task.metadata, []
    meta._validate_metadata()  # raises on invalid languages, as in MTEB's test
    if not meta.is_filled():
        problems.append(f"not filled: {[f for f in type(meta).model_fields if getattr(meta, f) is None]}")
    if meta.dataset.get("trust_remote_code", False):
        problems.append("trusts remote code")
    if not isinstance(meta.simplified_task_type, str):
        problems.append("no simplified task type")
    if task.is_aggregate:
        if set(meta.hf_subsets_to_langscripts) != {"default"}:
            problems.append(f"aggregate subsets {sorted(meta.hf_subsets_to_langscripts)}")
        return problems
    if meta.descriptive_stats is None or meta.n_samples is None:
        problems.append("no descriptive statistics (calculate_descriptive_statistics())")
    if isinstance(meta.prompt, dict):
        problems.append("a dict prompt on a task that is not AbsTaskRetrieval")
    return problems


def _duplicated(count: int, unique: int) -> bool:
    return unique < count * (1 - DUPLICATE_TOLERANCE)


def _expected(field: str, split: dict[str, Any]) -> int | None:
    """The number of items a field's ``unique_*`` counts among (queries and documents apart for retrieval)."""
    if field.startswith("documents_"):
        return split.get("num_documents")
    if field.startswith("queries_"):
        return split.get("num_queries")
    return split.get("num_samples")


def _field_findings(field: str, stats: dict[str, Any], expected: int | None) -> set[str]:
    found = set()
    if "unique_texts" in stats:
        if stats["min_text_length"] <= SHORT_TEXT:
            found.add(f"short_text:{field}")
        if stats["average_text_length"] > 0 and stats["max_text_length"] > stats["average_text_length"] * LONG_TEXT_RATIO:
            found.add(f"long_text:{field}")
        paired = field.endswith(("1_statistics", "2_statistics"))  # a side of a pair may repeat
        if expected is not None and not paired and _duplicated(expected, stats["unique_texts"]):
            found.add(f"duplicate_text:{field}")
        elif expected is not None and stats["unique_texts"] > expected:
            found.add(f"impossible_unique_count:{field}")
    elif "unique_labels" in stats and stats["unique_labels"] < 2:
        found.add(f"too_few_labels:{field}")
    elif stats.get("min_relevant_docs_per_query", 1) == 0:
        found.add(f"zero_relevant_docs:{field}")
    elif stats.get("min_top_ranked_per_query", 1) == 0:
        found.add(f"zero_top_ranked:{field}")
    return found


def quality_findings(stats: dict[str, dict[str, Any]]) -> set[str]:
    """MTEB's quality findings on a task's descriptive statistics, ``kind:field`` (``kind`` for split-wide ones)."""
    found: set[str] = set()
    for split in stats.values():
        n = split.get("num_samples")
        if n == 0:
            found.add("empty_split")
        pairs = split.get("unique_pairs")
        if pairs is not None and n is not None:
            found |= {"duplicate_pairs"} if _duplicated(n, pairs) else {"impossible_unique_count"} if pairs > n else set()
        for field, value in split.items():
            if isinstance(value, dict) and field != "hf_subset_descriptive_stats":
                found |= _field_findings(field, value, _expected(field, split))
        relevant = split.get("relevant_docs_statistics") or {}
        if relevant.get("unique_relevant_docs", 0) > split.get("num_documents", float("inf")):
            found.add("relevant_docs_exceed_corpus")
    return found
