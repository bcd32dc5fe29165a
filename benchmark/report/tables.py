"""Declarative table specs: rows are methods (one per method, model, pooling, setting and corpus size),
columns are task metrics or per-seed averages of other columns. Adding a table is adding a spec here."""
from __future__ import annotations

from dataclasses import dataclass

from benchmark.registry import Registry


@dataclass(frozen=True)
class Column:
    """One column: a task metric, or the per-seed mean of other columns (``mean_of``)."""

    id: str
    header: str
    group: str = ""  # upper header shared by sub-columns (e.g. "TwitterP."), "" for a column of its own
    task: str | None = None
    metric: str | None = None
    mean_of: tuple[str, ...] = ()


def _metric(id_: str, header: str, task: str, metric: str, group: str = "") -> Column:
    return Column(id=id_, header=header, group=group, task=task, metric=metric)


# Every column any table uses; derived columns refer to others by id (they need not be shown).
COLUMNS: dict[str, Column] = {c.id: c for c in (
    _metric("askubuntu", "AskU.", "askubuntu", "map"),
    _metric("cqadupstack", "CQADup.", "cqadupstack", "map@100"),
    _metric("twitterpara.turl", "TURL", "twitterpara", "ap_twitterurl", "TwitterP."),
    _metric("twitterpara.pit", "PIT", "twitterpara", "ap_pit", "TwitterP."),
    _metric("twitterpara.avg", "Avg.", "twitterpara", "ap_avg", "TwitterP."),
    _metric("scidocs.cite", "Cite", "scidocs", "map_cite", "SciDocs"),
    _metric("scidocs.cc", "CC", "scidocs", "map_cocite", "SciDocs"),
    _metric("scidocs.cr", "CR", "scidocs", "map_coread", "SciDocs"),
    _metric("scidocs.cv", "CV", "scidocs", "map_coview", "SciDocs"),
    _metric("scidocs.avg", "Avg.", "scidocs", "map_avg", "SciDocs"),
    # USEB average (DESIGN.md): each task's main score, averaged within a seed, then over seeds.
    Column("useb.avg", "Avg.", mean_of=("askubuntu", "cqadupstack", "twitterpara.avg", "scidocs.avg")),
    *(_metric(t, h, t, "spearman") for t, h in (("sts12", "STS12"), ("sts13", "STS13"), ("sts14", "STS14"),
                                                  ("sts15", "STS15"), ("sts16", "STS16"), ("stsb", "STSb"),
                                                  ("sickr", "SICK-R"))),
    Column("sts.avg", "Avg.", mean_of=("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")),
)}


@dataclass(frozen=True)
class TableSpec:
    """A table: which columns, which split, how to mark it up, and which published tables it is compared with."""

    name: str
    title: str
    caption: str
    columns: tuple[str, ...]
    split: str = "test"
    decimals: int = 1
    dagger_vs: tuple[str, ...] = ()  # methods a row must beat in every seed for the dagger
    correlate: tuple[str, str] | None = None  # print the rank correlation of these two columns under the table
    references: tuple[str, ...] = ()  # paper_reference.json tables, in order of preference

    def column(self, col_id: str) -> Column:
        return COLUMNS[col_id]


TABLES: Registry[TableSpec] = Registry("table")

TABLES.add("paper-table2", TableSpec(
    name="paper-table2", title="USEB: AskUbuntu, CQADupStack, TwitterPara, SciDocs (TSDAE paper, Table 2)",
    caption=("Average precision / MAP x100 on the test sets, mean ± sample std over seeds. Best per column in "
             "bold (upper bounds excluded); † = beats both CT and SimCSE of the same block in every seed."),
    columns=("askubuntu", "cqadupstack", "twitterpara.turl", "twitterpara.pit", "twitterpara.avg", "scidocs.cite",
             "scidocs.cc", "scidocs.cr", "scidocs.cv", "scidocs.avg", "useb.avg"),
    decimals=1, dagger_vs=("ct", "simcse"), references=("tsdae-table2", "tsdae-table9"),
))
TABLES.add("sts-table", TableSpec(
    name="sts-table", title="STS: Spearman x100 (TSDAE paper, Table 11; DenoSent / PaSeR Table 1)",
    caption="Spearman rank correlation x100 of cosine similarity with the gold scores, mean ± sample std over seeds.",
    columns=("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "sts.avg"),
    decimals=2, references=("tsdae-table11", "denosent-table1", "paser-table1"),
))
TABLES.add("specific-vs-sts", TableSpec(
    name="specific-vs-sts", title="STSb vs the domain-specific tasks (TSDAE paper, Table 3)",
    caption="STSb test Spearman x100 against the USEB average (x100), mean ± sample std over seeds.",
    columns=("stsb", "useb.avg"), decimals=1, correlate=("stsb", "useb.avg"), references=("tsdae-table3",),
))
