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
    # MTEB tasks (tasks/mteb.py), main scores as MTEB names them; DenoSent Fig. 3 abbreviations
    *(_metric(f"mteb.{t}", h, f"mteb:{t}", m) for t, h, m in (
        ("AskUbuntuDupQuestions", "AUD", "map_at_1000"), ("MindSmallReranking", "MS", "max_over_subqueries_map_at_1000"),
        ("SciDocsRR", "SciD", "map_at_1000"), ("StackOverflowDupQuestions", "SODQ", "map_at_1000"),
        ("QuoraRetrieval", "QR", "ndcg_at_10"), ("CQADupstackRetrieval", "CQADup.", "ndcg_at_10"),
        ("TwitterURLCorpus", "TURL", "max_ap"), ("TwitterSemEval2015", "PIT", "max_ap"))),
    *(_metric(f"mteb.{t}Classification", h, f"mteb:{t}Classification", "accuracy") for t, h in (
        ("AmazonCounterfactual", "AmzCF"), ("AmazonReviews", "AmzRev"), ("Banking77", "Bank77"),
        ("Emotion", "Emo"), ("MassiveIntent", "MIntent"), ("MassiveScenario", "MScen"), ("MTOPDomain", "MTOPD"),
        ("MTOPIntent", "MTOPI"), ("ToxicConversations", "Toxic"), ("TweetSentimentExtraction", "TweetSent"))),
    Column("mteb.clf.avg", "Avg.", mean_of=tuple(f"mteb.{t}Classification" for t in (
        "AmazonCounterfactual", "AmazonReviews", "Banking77", "Emotion", "MassiveIntent", "MassiveScenario",
        "MTOPDomain", "MTOPIntent", "ToxicConversations", "TweetSentimentExtraction"))),
    # USEB protocol vs MTEB's version of the same data (the `protocols` table)
    _metric("twitterpara.turl.mteb", "TURL (MTEB)", "mteb:TwitterURLCorpus", "max_ap", "TwitterP."),
    _metric("twitterpara.pit.mteb", "PIT (MTEB)", "mteb:TwitterSemEval2015", "max_ap", "TwitterP."),
    _metric("askubuntu.mteb", "AskU. (MTEB)", "mteb:AskUbuntuDupQuestions", "map_at_1000"),
    _metric("scidocs.mteb", "SciDocs (MTEB)", "mteb:SciDocsRR", "map_at_1000"),
    _metric("cqadupstack.mteb", "CQADup. (MTEB)", "mteb:CQADupstackRetrieval", "ndcg_at_10"),
    # TSDAE Table 4's training loss beside each score (read from the runs' log.jsonl, not from a task metric)
    *(Column(f"{t}.loss", f"{h} loss") for t, h in (("askubuntu", "AskU."), ("cqadupstack", "CQADup."),
                                                      ("twitterpara.avg", "TwitterP."), ("scidocs.avg", "SciDocs"),
                                                      ("useb", "Avg."))),
    # TSDAE Figure 4: share (%) of relevant pairs whose most relevant word has each POS-tag group
    *(Column(f"pos.{g}", g) for g in ("IN", "PRP", "SYM", "VB-AUX", "VB-NAUX", "DT", "CC", "NN", "JJ", "RB", "CD",
                                      "OTHER")),
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
    # Show each row minus this method's row of the same experiment (paired over common seeds; DenoSent Fig. 3)
    baseline: str | None = None

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
TABLES.add("denosent-fig3", TableSpec(
    name="denosent-fig3", title="MTEB re-ranking and retrieval: difference to SimCSE (DenoSent, Figure 3)",
    caption=("Main score x100 (MAP@1000; Quora nDCG@10) minus SimCSE's of the same setting, paired over common seeds; "
             "MTEB's own evaluators (`--tasks mteb-denosent-rr`)."),
    columns=tuple(f"mteb.{t}" for t in ("AskUbuntuDupQuestions", "MindSmallReranking", "SciDocsRR",
                                         "StackOverflowDupQuestions", "QuoraRetrieval")),
    decimals=2, baseline="simcse",  # the paper prints Fig. 3 as a bar chart (no numbers in its text)
))
TABLES.add("denosent-table2", TableSpec(
    name="denosent-table2", title="MTEB classification accuracy (DenoSent, Table 2)",
    caption="Accuracy x100 of MTEB's logistic-regression probe, English subsets (`--tasks mteb-denosent-clf`).",
    columns=(*(f"mteb.{t}Classification" for t in (
        "AmazonCounterfactual", "AmazonReviews", "Banking77", "Emotion", "MassiveIntent", "MassiveScenario",
        "MTOPDomain", "MTOPIntent", "ToxicConversations", "TweetSentimentExtraction")), "mteb.clf.avg"),
    decimals=2,  # Table 2's numbers are not in the paper text we hold (shared/papers/001_*): none typed in
))
TABLES.add("protocols", TableSpec(
    name="protocols", title="The same model under the USEB protocol and under MTEB's version of the same data",
    caption=("USEB: AP of cosine (TwitterPara), MAP (AskUbuntu, SciDocs avg. of 4), MAP@100 (CQADupStack); MTEB: "
             "max AP over cosine/dot/euclidean/manhattan, MAP@1000 (AskUbuntu, SciDocsRR), nDCG@10 (CQADupStack). "
             "TwitterPara's MTEB tasks are built from the same local files (`--tasks useb,mteb-useb`)."),
    columns=("twitterpara.turl", "twitterpara.turl.mteb", "twitterpara.pit", "twitterpara.pit.mteb", "askubuntu",
             "askubuntu.mteb", "scidocs.avg", "scidocs.mteb", "cqadupstack", "cqadupstack.mteb"),
    decimals=2,
))
TABLES.add("tsdae-app-a", TableSpec(
    name="tsdae-app-a", title="TSDAE configuration search: noise, ratio, pooling, tying (TSDAE paper App. A, Tables 5-7)",
    caption=("STSb dev Spearman x100 of the best dev checkpoint (every 1.5K steps up to 30K in the paper), TSDAE "
             "trained on NLI sentences without labels, mean ± sample std over seeds; one row per setting "
             "(`bench config-search`)."),
    columns=("stsb",), split="dev", decimals=2,
    references=("tsdae-table5", "tsdae-table6", "tsdae-table7", "tsdae-app-a-tying"),
))
TABLES.add("tsdae-table4", TableSpec(
    name="tsdae-table4", title="TSDAE from other checkpoints: test score and final training loss (TSDAE paper, Table 4)",
    caption=("AP / MAP x100 on the test sets and the last logged training loss of each run, mean ± sample std over "
             "seeds, per backbone (BART/T5 with their own decoders; Scratch = from_scratch=true)."),
    columns=("askubuntu", "askubuntu.loss", "cqadupstack", "cqadupstack.loss", "twitterpara.avg",
             "twitterpara.avg.loss", "scidocs.avg", "scidocs.avg.loss", "useb.avg", "useb.loss"),
    decimals=1, references=("tsdae-table4",),
))
