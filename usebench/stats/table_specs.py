"""Declarative table specs: rows are methods (one per method, model, pooling, setting and corpus size),
columns are task metrics or per-seed averages of other columns. Adding a table is adding a spec here."""
from __future__ import annotations

from dataclasses import dataclass

from usebench.registry import Registry


@dataclass(frozen=True)
class Column:
    """One column: a task metric, or the per-seed mean of other columns (``mean_of``)."""

    id: str
    header: str
    group: str = ""  # upper header shared by sub-columns (e.g. "TwitterP."), "" for a column of its own
    task: str | None = None
    metric: str | None = None
    mean_of: tuple[str, ...] = ()


def column_tasks(columns: tuple[Column, ...]) -> set[str]:
    """The tasks behind a table's columns (a derived column's parts included)."""
    out: set[str] = set()
    for col in columns:
        if col.task:
            out.add(col.task)
        if col.mean_of:
            out |= column_tasks(tuple(COLUMNS[c] for c in col.mean_of))
    return out


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
    Column("sts12_16.avg", "STS12-16", mean_of=("sts12", "sts13", "sts14", "sts15", "sts16")),  # PaSeR Tables 4-9
    # MTEB tasks (usebench/tasks/mteb.py), main scores as MTEB names them; DenoSent Fig. 3 abbreviations
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
    # USEB protocol vs MTEB's evaluator on the USEB data vs MTEB's own datasets (the `protocols` table)
    _metric("twitterpara.turl.mteb-eval", "TURL (USEB data, MTEB's evaluator)", "mteb-evaluator:useb-twitterurl",
            "max_ap", "TwitterP."),
    _metric("twitterpara.pit.mteb-eval", "PIT (USEB data, MTEB's evaluator)", "mteb-evaluator:useb-pit", "max_ap",
            "TwitterP."),
    _metric("twitterpara.turl.mteb", "TURL (MTEB's dataset)", "mteb:TwitterURLCorpus", "max_ap", "TwitterP."),
    _metric("twitterpara.pit.mteb", "PIT (MTEB's dataset)", "mteb:TwitterSemEval2015", "max_ap", "TwitterP."),
    _metric("askubuntu.mteb", "AskU. (MTEB)", "mteb:AskUbuntuDupQuestions", "map_at_1000"),
    _metric("scidocs.mteb", "SciDocs (MTEB)", "mteb:SciDocsRR", "map_at_1000"),
    _metric("cqadupstack.mteb", "CQADup. (MTEB)", "mteb:CQADupstackRetrieval", "ndcg_at_10"),
    # R. Wang 2022 (thesis): STS-Avg is the plain mean of STS12-16 and STS-B (its BERT-base baseline 51.6 = mean of
    # 30.87, 59.89, 47.73, 60.29, 63.73, 47.29), beside the 7-set average; BEIR recall/precision at k (eq. 4.2)
    Column("sts.thesis-avg", "STS-Avg", mean_of=("sts12", "sts13", "sts14", "sts15", "sts16", "stsb")),
    *(_metric(f"{t}.{m}@{k}", f"{'R' if m == 'recall' else 'P'}@{k}", t, f"{m}@{k}", g)
      for t, g in (("quora", "Quora"), ("beir-cqadupstack", "CQADupStack")) for m in ("recall", "p")
      for k in (1, 3, 5, 10, 100, 1000)),
    # eBay's internal eProduct task (no adapter: its data is not public); only the thesis' published rows use these
    # DenoSent Fig. 3: MAP and MRR per task minus SimCSE's. The authors ran mteb 1.0.0, whose re-ranking evaluator
    # reports MAP over all candidates and MRR@10 (MTEB 2: map_at_1000, mrr_at_10); the figure's "@1" labels fit
    # QuoraRetrieval (map_at_1, mrr_at_1). MindSmall's MAP and MRR@10 are MTEB's max over sub-queries (MTEB 2's
    # retrieval_metrics.max_over_subqueries prefixes every retrieval score, mrr_at_10 among them).
    *(_metric(f"mteb.{t}.{cid}", head, f"mteb:{t}", metric, h) for t, h, cols in (
        ("AskUbuntuDupQuestions", "AUD", (("map", "MAP", "map_at_1000"), ("mrr@10", "MRR@10", "mrr_at_10"))),
        ("MindSmallReranking", "MS", (("map", "MAP", "max_over_subqueries_map_at_1000"),
                                      ("mrr@10", "MRR@10", "max_over_subqueries_mrr_at_10"))),
        ("SciDocsRR", "SciD", (("map", "MAP", "map_at_1000"), ("mrr@10", "MRR@10", "mrr_at_10"))),
        ("StackOverflowDupQuestions", "SODQ", (("map", "MAP", "map_at_1000"), ("mrr@10", "MRR@10", "mrr_at_10"))),
        ("QuoraRetrieval", "QR", (("map@1", "MAP@1", "map_at_1"), ("mrr@1", "MRR@1", "mrr_at_1"))))
      for cid, head, metric in cols),
    _metric("eproduct.rcap@10", "R_cap@10", "eproduct", "rcap@10", "eProduct"),
    _metric("eproduct.p@10", "P@10", "eproduct", "p@10", "eProduct"),
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
    dagger_for: tuple[str, ...] = ()  # the only rows that can get it (the paper marks TSDAE's cells alone)
    # The setting blocks the table holds, in the paper's order (None: every block); rows of other blocks go to
    # the tables that have them, never into a block the paper's table does not have
    groups: tuple[str, ...] | None = None
    # The published table (paper_reference.json) whose blocks and rows this table is laid out on, in order
    # (usebench.report.skeleton); None: rows by setting block and method order only
    skeleton: str | None = None
    correlate: tuple[str, str] | None = None  # print the rank correlation of these two columns under the table
    references: tuple[str, ...] = ()  # paper_reference.json tables, in order of preference
    # Show each row minus this method's row of the same experiment (paired over common seeds; DenoSent Fig. 3)
    baseline: str | None = None
    # the baseline row may have trained on other data than the row (each on its own paper's, as DenoSent's Figure 3
    # puts DenoSent on its paraphrases beside SimCSE on wiki1m); same block, backbone and labeled size still
    baseline_own_data: bool = False

    def column(self, col_id: str) -> Column:
        return COLUMNS[col_id]


TABLES: Registry[TableSpec] = Registry("table")
STS_COLUMNS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "sts.avg")
USEB_COLUMNS = ("askubuntu", "cqadupstack", "twitterpara.turl", "twitterpara.pit", "twitterpara.avg", "scidocs.cite",
                "scidocs.cc", "scidocs.cr", "scidocs.cv", "scidocs.avg", "useb.avg")

TABLES.add("paper-table2", TableSpec(
    name="paper-table2", title="USEB: AskUbuntu, CQADupStack, TwitterPara, SciDocs (TSDAE paper, Table 2)",
    caption=("Average precision / MAP x100 on the test sets, mean over seeds (± and bold: see the notes; upper "
             "bounds never bold); † = TSDAE beats both CT and SimCSE of the same block in every seed."),
    columns=USEB_COLUMNS, decimals=1, dagger_vs=("ct", "simcse"), dagger_for=("tsdae",),
    references=("tsdae-table2", "tsdae-table9"), skeleton="tsdae-table2",
    groups=("unsupervised", "adapt-nli-first", "adapt-target-first", "baselines", "out-of-the-box", "supervised"),
))
TABLES.add("useb-other-chains", TableSpec(
    name="useb-other-chains", title="USEB: chains with no block in the TSDAE paper's Table 2",
    caption=("The same columns as paper-table2 for the rows its blocks do not hold: pre-training chains scored on "
             "the test sets (the paper reads them on dev: Fig. 2, Table 10) and other chains with supervised stages "
             "(bench eval of a supervised checkpoint among them). Not bolded against the paper's rows."),
    columns=USEB_COLUMNS, decimals=1, groups=("pretraining", "other-supervised"),
))
TABLES.add("sts-table", TableSpec(
    name="sts-table", title="STS: Spearman x100 (TSDAE paper, Table 11; DenoSent / PaSeR Table 1)",
    caption="Spearman rank correlation x100 of cosine similarity with the gold scores, mean over seeds (±: the notes).",
    columns=STS_COLUMNS,
    decimals=2, references=("tsdae-table11", "denosent-table1", "paser-table1"), skeleton="tsdae-table11",
))
TABLES.add("denosent-table1", TableSpec(
    name="denosent-table1", title="STS: Spearman x100 (DenoSent, Table 1)",
    caption=("Spearman rank correlation x100 of cosine similarity with the gold scores (SentEval's 'all' setting), "
             "mean over seeds (±: the notes), in the blocks and rows of DenoSent's Table 1."),
    columns=STS_COLUMNS, decimals=2, references=("denosent-table1",), skeleton="denosent-table1",
))
TABLES.add("denosent-table3", TableSpec(
    name="denosent-table3", title="Ablation on the components of DenoSent: Avg. STS (DenoSent, Table 3)",
    caption=("The mean of the seven STS Spearman correlations x100 (within a seed, then over seeds), in the rows of "
             "DenoSent's Table 3 (the authors' paper.pdf)."),
    columns=("sts.avg",), decimals=2, references=("denosent-table3",), skeleton="denosent-table3",
))
TABLES.add("paser-table1", TableSpec(
    name="paser-table1", title="STS: Spearman x100 (PaSeR, Table 1)",
    caption=("Spearman rank correlation x100 of cosine similarity with the gold scores, mean over seeds (±: the "
             "notes), in the blocks and rows of PaSeR's Table 1."),
    columns=STS_COLUMNS, decimals=2, references=("paser-table1",), skeleton="paser-table1",
))
TABLES.add("specific-vs-sts", TableSpec(
    name="specific-vs-sts", title="STSb vs the domain-specific tasks (TSDAE paper, Table 3)",
    caption="STSb test Spearman x100 against the USEB average (x100), mean over seeds (±: the notes).",
    columns=("stsb", "useb.avg"), decimals=1, correlate=("stsb", "useb.avg"), references=("tsdae-table3",),
    skeleton="tsdae-table3",
))
# PaSeR's ablations, one report table per paper table (each on its skeleton: a row of ours is a slot's only when its
# resolved PaSeR config is that row's: augmentation, top_k, m and n, pooling)
for _n, _what in (("4", "data augmentation"), ("5", "phrases to mask"), ("8", "decoding signal scales m, n (Eq. 2)"),
                  ("9", "pooling")):
    TABLES.add(f"paser-table{_n}", TableSpec(
        name=f"paser-table{_n}", title=f"PaSeR ablation of {_what}: STS12-16, STS-B, SICK-R (PaSeR, Table {_n})",
        caption="Spearman x100; STS12-16 = the mean of STS12..STS16 within a seed, then over seeds.",
        columns=("sts12_16.avg", "stsb", "sickr"), decimals=1, references=(f"paser-table{_n}",),
        skeleton=f"paser-table{_n}",
    ))
del _n, _what
TABLES.add("denosent-fig3", TableSpec(
    name="denosent-fig3", title="MTEB re-ranking and retrieval: difference to SimCSE (DenoSent, Figure 3)",
    caption=("MRR and MAP x100 per task (the metrics the figure plots: MRR@10 and MAP over all candidates for the "
             "re-ranking tasks, as mteb 1.0.0 reported them; MRR@1 and MAP@1 for QuoraRetrieval) minus SimCSE's of "
             "the same block and backbone, each trained on its own data as the figure's methods were (DenoSent on "
             "its paraphrases, SimCSE on wiki1m; a SimCSE row on the row's own corpus first), paired over common "
             "seeds; MTEB's own evaluators (`--tasks mteb-denosent-rr`)."),
    columns=("mteb.AskUbuntuDupQuestions.map", "mteb.AskUbuntuDupQuestions.mrr@10", "mteb.MindSmallReranking.map",
             "mteb.MindSmallReranking.mrr@10", "mteb.SciDocsRR.map", "mteb.SciDocsRR.mrr@10",
             "mteb.StackOverflowDupQuestions.map", "mteb.StackOverflowDupQuestions.mrr@10", "mteb.QuoraRetrieval.map@1",
             "mteb.QuoraRetrieval.mrr@1"),
    decimals=2, baseline="simcse", baseline_own_data=True,
    references=("denosent-fig3",),  # the bars' numbers: the appendix's Table 2
))
TABLES.add("denosent-table2", TableSpec(
    name="denosent-table2", title="MTEB classification accuracy (DenoSent, Table 2)",
    caption="Accuracy x100 of MTEB's logistic-regression probe, English subsets (`--tasks mteb-denosent-clf`).",
    columns=(*(f"mteb.{t}Classification" for t in (
        "AmazonCounterfactual", "AmazonReviews", "Banking77", "Emotion", "MassiveIntent", "MassiveScenario",
        "MTOPDomain", "MTOPIntent", "ToxicConversations", "TweetSentimentExtraction")), "mteb.clf.avg"),
    decimals=2, references=("denosent-table2",),  # the authors' paper.pdf Table 2 / appendix.pdf Table 3
))
TABLES.add("protocols", TableSpec(
    name="protocols", title="The same model under the USEB protocol, MTEB's evaluator on the USEB data, and MTEB's datasets",
    caption=("USEB: AP of cosine (TwitterPara), MAP (AskUbuntu, SciDocs avg. of 4), MAP@100 (CQADupStack); MTEB: "
             "max AP over cosine/dot/euclidean/manhattan, MAP@1000 (AskUbuntu, SciDocsRR), nDCG@10 (CQADupStack). "
             "'USEB data, MTEB's evaluator' scores the USEB TwitterPara files with MTEB's evaluator "
             "(`--tasks useb-mteb-evaluator`); 'MTEB's dataset' columns are MTEB's own data (`--tasks mteb-useb`, "
             "Hugging Face cache only): Twitter URL 51,534 and PIT 16,777 pairs against USEB's 9,334 and 838."),
    columns=("twitterpara.turl", "twitterpara.turl.mteb-eval", "twitterpara.turl.mteb", "twitterpara.pit",
             "twitterpara.pit.mteb-eval", "twitterpara.pit.mteb", "askubuntu", "askubuntu.mteb", "scidocs.avg",
             "scidocs.mteb", "cqadupstack", "cqadupstack.mteb"),
    decimals=2,
))

TABLES.add("laptop-adapt", TableSpec(
    name="laptop-adapt", title="Domain adaptation on a laptop: MiniLM (NLI+STS) -> Twitter, tested on TwitterPara and STS",
    caption=("AP x100 (TwitterPara: the useb kit's protocol) and Spearman x100 (STS), test sets, mean over the row's "
             "seeds (n; ±: the notes). The rows mirror the TSDAE paper's Table 2 block 'Domain adaptation: NLI+STS -> "
             "target task' (TSDAE, MLM, CT, SimCSE, BERT-flow; its TwitterP. columns) with all-MiniLM-L6-v2 in SBERT-base-nli-"
             "stsb-v2's role (the out-of-the-box rows, by pooling) and BM25 as its BM25 row; ConSERT, DenoSent (its "
             "'w/o discrete noise' ablation) and PaSeR are the suite's additions; the rows of variant stop_at_step=0 "
             "are methods at step 0 (their counterparts), eval_pooling=cls SimCSE without its MLP. The `laptop` "
             "presets truncate the papers' runs (docs/papers/laptop.md): no Δ to a published number stands beside "
             "these rows."),
    columns=("twitterpara.turl", "twitterpara.pit", "twitterpara.avg", *STS_COLUMNS), decimals=2,
    groups=("adapt-nli-first", "out-of-the-box", "baselines"),
))

# --- R. Wang 2022 (thesis): the tables on public data, and its eProduct tables as published rows only ----------
THESIS_RK = tuple(f"{m}@{k}" for m in ("recall", "p") for k in (1, 3, 5, 10, 100, 1000))
THESIS_EPRODUCT_NOTE = ("eProduct, eBert and the eBay titles are eBay-internal: no run here can meet these rows' "
                        "settings, so they stand as published reference rows without a counterpart.")
TABLES.add("thesis-table5.9", TableSpec(
    name="thesis-table5.9", title="SimCSE with NT-Xent vs BCE: STS (R. Wang 2022 thesis, Table 5.9)",
    caption=("Spearman x100; STS-Avg = the plain mean of STS12-16 and STS-B (the thesis' definition). `bench run "
             "--methods simcse --preset thesis --set loss=nt_xent|bce --corpus FILE --seeds 1,7,42 --eval-tasks sts`"),
    columns=("stsb", "sts.thesis-avg"), decimals=1, references=("thesis-table5.9",), skeleton="thesis-table5.9",
))
TABLES.add("thesis-table5.10", TableSpec(
    name="thesis-table5.10", title="SimCSE with NT-Xent vs BCE: duplicate questions R@100 (thesis, Table 5.10)",
    caption="Recall@100 x100 on Quora test and the mean of BEIR CQADupStack's 12 forums (BEIR's metrics).",
    columns=("quora.recall@100", "beir-cqadupstack.recall@100"), decimals=1, references=("thesis-table5.10",),
    skeleton="thesis-table5.10",
))
TABLES.add("thesis-table5.17", TableSpec(
    name="thesis-table5.17", title="Multi-task SimCSE + w x autoencoder on Quora (thesis, Table 5.17)",
    caption="Quora test Recall@100 and Recall@10 x100; checkpoints selected on Quora-dev Recall@10.",
    columns=("quora.recall@100", "quora.recall@10"), decimals=1, references=("thesis-table5.17",),
    skeleton="thesis-table5.17",
))
TABLES.add("thesis-fig5.3", TableSpec(
    name="thesis-fig5.3", title="Quora: Recall@k and Precision@k, k = 1 ... 1000 (thesis, Figure 5.3)",
    caption="BEIR's recall and precision at each k x100 (depth 1000); plots/thesis-fig5.3.png draws them against k.",
    columns=tuple(f"quora.{m}" for m in THESIS_RK), decimals=1,
))
TABLES.add("thesis-fig5.4", TableSpec(
    name="thesis-fig5.4", title="BEIR CQADupStack: Recall@k and Precision@k (thesis, Figure 5.4)",
    caption="Mean over the 12 forums x100; plots/thesis-fig5.4.png draws them against k.",
    columns=tuple(f"beir-cqadupstack.{m}" for m in THESIS_RK), decimals=1,
))
TABLES.add("thesis-studies", TableSpec(
    name="thesis-studies", title="Batch size, corpus size and epochs of SimCSE (thesis Tables 5.11-5.13, our runs)",
    caption=("Our runs of the thesis' studies on public data (Quora R@10 / P@10 x100, STS-B): rows by --set "
             "batch_size=N, --corpus-size N and --set epochs=3. The thesis measured them on eProduct only. "
             + THESIS_EPRODUCT_NOTE),
    columns=("quora.recall@10", "quora.p@10", "stsb"), decimals=1,
    references=("thesis-table5.11", "thesis-table5.12", "thesis-table5.13"),
))
TABLES.add("thesis-eproduct", TableSpec(
    name="thesis-eproduct", title="The thesis' eProduct tables (5.4, 5.5, 5.8, 5.14-5.16): published rows only",
    caption=THESIS_EPRODUCT_NOTE,
    columns=("eproduct.rcap@10", "eproduct.p@10", "stsb", "sts.thesis-avg"), decimals=1,
    references=("thesis-table5.4", "thesis-table5.5", "thesis-table5.8", "thesis-table5.14", "thesis-table5.15",
                "thesis-table5.16"),
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
TABLES.add("tsdae-table9", TableSpec(
    name="tsdae-table9", title="TSDAE, CT, SimCSE and BERT-flow from other checkpoints (TSDAE paper, Table 9)",
    caption=("Average precision / MAP x100 on the test sets, mean over seeds (±: the notes), unsupervised in-domain "
             "runs per checkpoint (--model), in the blocks and rows of the paper's Table 9 (App. C)."),
    columns=("askubuntu", "cqadupstack", "twitterpara.avg", "scidocs.avg", "useb.avg"), decimals=1,
    groups=("unsupervised",), references=("tsdae-table9",),
))
