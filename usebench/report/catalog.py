"""What `bench report` can produce and what each needs in the results store (`bench report --list`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from usebench.stats.table_specs import TABLES


@dataclass(frozen=True)
class Artifact:
    """One table or figure of the report."""

    name: str
    kind: Literal["table", "figure"]
    what: str
    needs: str
    files: str


# What each table needs, by table name (the specs say what they show).
TABLE_NEEDS = {
    "paper-table2": "test results on askubuntu, cqadupstack, twitterpara, scidocs (bench run / bench eval); its blocks "
                    "come from each run's setting: bench run --setting unsupervised|adapt-nli-first|"
                    "adapt-target-first|supervised|all, bench eval --model M for baselines and out-of-the-box "
                    "models, --model bm25, --model wordvec:PATH",
    "sts-table": "test results on sts12..sts16, stsb, sickr (bench eval/run --eval-tasks sts)",
    "specific-vs-sts": "stsb and the four USEB tasks for the same rows (test)",
    "thesis-table5.9": "bench run --methods simcse --preset thesis --set loss=nt_xent (and loss=bce) --corpus FILE "
                       "--set dev_corpus=FILE --seeds 1,7,42 --eval-tasks sts; bench eval --model bert-base-uncased "
                       "--pooling mean --tasks sts",
    "thesis-table5.10": "the same runs evaluated on quora and beir-cqadupstack (bench data download quora "
                        "beir-cqadupstack); bench eval --model bm25-pyserini",
    "thesis-table5.17": "bench run --methods simcse,clm-ae,mlm-ae,simcse-clm,simcse-mlm --preset thesis --tasks quora "
                        "--corpus-size 100000 --set epochs=3 --set dev_task=quora --set dev_metric=recall@10 "
                        "--set simcse-clm.ae_weight=W --set simcse-mlm.ae_weight=W --seeds 1,7,42; then bench report "
                        "--table thesis-table5.17 --user-sample thesis-quora-titles-100k=SHA256 (the thesis' Quora "
                        "titles were never published: your sample pairs only on your word)",
    "thesis-fig5.3": "quora test results (any run or bench eval); plots/thesis-fig5.3.png",
    "thesis-fig5.4": "beir-cqadupstack test results; plots/thesis-fig5.4.png",
    "thesis-studies": "bench run --methods simcse --preset thesis with --set batch_size=N, --corpus-size N, --set epochs=3",
    "thesis-eproduct": "nothing: eProduct, eBert and the eBay titles are eBay-internal (published rows only)",
    "tsdae-app-a": "STSb-dev results of TSDAE selected on STSb dev, one row per noise/ratio/pooling/tying setting: "
                   "bench config-search (App. A: --corpus allnli, preset app-a, 5 seeds; on a CPU: --preset smoke "
                   "--set dev_task=stsb --set dev_every=N, as smoke does not select on STSb dev)",
    "tsdae-table4": "test results of TSDAE on the four USEB tasks per backbone, with each run's log.jsonl (the loss): "
                    "bench run --methods tsdae --tasks useb --seeds 5 --model bert-base-uncased | facebook/bart-base "
                    "| t5-base (--set tie_encoder_decoder=false) | bert-base-uncased --set from_scratch=true",
    "denosent-table3": "STS test results of denosent per ablation (the recipe's table3 runs: paraphrases on/off, "
                       "loss weights, pooling): bench reproduce denosent --tables table3",
    "tsdae-table9": "test results on the four USEB tasks of tsdae, ct, simcse and bertflow trained unsupervised per "
                    "checkpoint: bench run --methods tsdae,ct,simcse,bertflow --tasks useb --seeds 5 --model "
                    "google/electra-base-discriminator | distilroberta-base | roberta-base | distilbert-base-uncased "
                    "(TSDAE untied with a BERT decoder) | bert-base-uncased",
}
FIGURES = (
    Artifact("<table>-seeds", "figure", "per-seed values of every row and column of each table",
             "any results of that table", "plots/<table>-seeds.png + .csv"),
    Artifact("loss-curves", "figure", "training loss against step, one line per run", "trained runs (log.jsonl)",
             "plots/loss-curves.png + .csv"),
    Artifact("corpus-size", "figure", "score vs unlabeled corpus size (TSDAE paper Fig. 3)",
             "bench run --corpus-size N runs", "plots/corpus-size.png + .csv"),
    Artifact("pretraining", "figure", "score vs labeled-set size after each pre-training method and from the "
             "backbone, ±1 std bands over seeds (TSDAE paper Fig. 2 / App. E; dev splits, TwitterPara test)",
             "bench run --labeled-sizes 500,2000,... --methods tsdae,... (dev splits by default; TwitterPara on test)",
             "plots/pretraining.png + .csv"),
    Artifact("thesis-alpha", "figure", "BM25 top-1000 rescored with bm25 + alpha * cos, metric vs alpha (R. Wang "
             "2022 thesis eq. 5.1 / Fig. 5.2's sweep)", "bench eval --model M --tasks bm25-pyserini-a20+quora "
             "(or any bm25*+<task>)", "plots/thesis-alpha.png + .csv"),
    Artifact("thesis-fig5.3 / thesis-fig5.4", "figure", "Recall@k and Precision@k against k (thesis Figs. 5.3, 5.4)",
             "quora / beir-cqadupstack test results", "plots/thesis-fig5.3.png, plots/thesis-fig5.4.png + .csv"),
    Artifact("pretraining-breakeven", "table", "labeled pairs the supervised model from the backbone needs to "
             "match each unsupervised method, by the paper's binary search over the measured sizes (Table 10)",
             "the pretraining runs above plus the unsupervised methods' results on the same split",
             "pretraining-breakeven.md + .csv"),
    Artifact("content-words", "figure", "POS-tag groups of each relevant pair's most relevant word, per task and "
             "averaged, beside the prior and Figure 4's printed rows (TSDAE paper Sec. 7.2, Fig. 4; App. H, Fig. 7)",
             "not the store: bench analyze content-words --model M --tasks useb "
             "(pip install 'usebench[pos]')", "reports/content-words/<model>.md + .json"),
)


def artifacts() -> list[Artifact]:
    """Every table spec (selectable with --table) followed by the figures and derived tables."""
    tables = [Artifact(n, "table", TABLES.get(n).title, TABLE_NEEDS.get(n, "results of its columns' tasks"),
                       f"{n}.md/.tex/.csv/.json + {n}-vs-paper.csv") for n in TABLES.names()]
    return tables + list(FIGURES)


# Named selections of --table (`bench report --table thesis`).
TABLE_GROUPS: dict[str, tuple[str, ...]] = {
    "thesis": ("thesis-table5.9", "thesis-table5.10", "thesis-table5.17", "thesis-fig5.3", "thesis-fig5.4",
               "thesis-studies", "thesis-eproduct"),
}


def listing() -> str:
    """The text of `bench report --list`."""
    lines = []
    for a in artifacts():
        lines += [f"{a.name}  ({a.kind})", f"    {a.what}", f"    needs: {a.needs}", f"    writes: {a.files}"]
    for group, names in TABLE_GROUPS.items():
        lines += [f"{group}  (group)", "    R. Wang 2022 (master's thesis): its tables and figures on public data, its "
                  "eProduct tables as published rows", f"    --table {group} = {', '.join(names)}"]
    lines.append("Tables are chosen with --table (default all); figures are drawn when their results exist "
                 "(--no-plots skips them).")
    return "\n".join(lines)
