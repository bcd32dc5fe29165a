"""Group stored results into table rows and compute each cell's seed statistics.

A row is one experiment repeated over seeds: (setting group, method, base model, pooling, corpus size; a quick
evaluation's subsample, so a `--limit` result is a row of its own, never a seed of the full one's). Its
cells aggregate the row's results per (task, split) with :func:`usebench.stats.seeds.aggregate`, which refuses
to average results whose data or configuration differ.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from usebench.eval.subsample import limit_of
from usebench.stats.table_specs import COLUMNS, Column
from usebench.store import StoredResult
from usebench.stats.seeds import MixedRunsError, SeedStats, aggregate, config_identity, per_seed_average

# Setting groups (the `setting` key the run grid writes), in the paper's block order, with their block titles.
GROUP_TITLES: dict[str, str] = {
    "unsupervised": "Unsupervised learning",
    "adapt-nli-first": "Domain adaptation: NLI+STS → target task",
    "adapt-target-first": "Domain adaptation: target task → NLI+STS",
    "baselines": "Baselines (no training)",
    "out-of-the-box": "Out-of-the-box supervised pre-trained models",
    "supervised": "In-domain supervised training (upper bound)",
    "pretraining": "Pre-training + in-domain supervised (labeled subsets)",
    "other-supervised": "Other chains with supervised stages (no setting of the paper)",
}
# Earlier names of the same blocks (results written before the run grid named its settings).
GROUP_ALIASES = {"da-nli-target": "adapt-nli-first", "da-target-nli": "adapt-target-first",
                 "upper-bound": "supervised"}
# Rows that train on the target task's labels: not compared for bold.
UPPER_BOUND_GROUPS = frozenset({"supervised", "pretraining", "other-supervised"})
# Paper row order inside a block; other methods follow alphabetically.
METHOD_ORDER = ("tsdae", "mlm", "ct", "simcse", "bertflow", "consert", "denosent", "paser", "bm25", "wordvec", "base",
                "sbert", "sbert-supervised")
DISPLAY = {"tsdae": "TSDAE", "mlm": "MLM", "ct": "CT", "simcse": "SimCSE", "bertflow": "BERT-flow",
           "consert": "ConSERT", "denosent": "DenoSent", "paser": "PaSeR", "bm25": "BM25", "wordvec": "Avg. word vectors",
           "sbert": "SBERT (from the backbone)", "sbert-supervised": "SBERT-supervised",
           "clm-ae": "CLM autoencoder", "mlm-ae": "MLM autoencoder", "simcse-clm": "SimCSE + w·CLM AE",
           "simcse-mlm": "SimCSE + w·MLM AE", "consert-clm": "ConSERT + w·CLM AE", "consert-mlm": "ConSERT + w·MLM AE"}
# The stages of the NLI+STS recipe (the `nli-sts` alias and what it expands to): a domain-adaptation row is
# named after the chain's other stages.
NLI_STS_STAGES = frozenset({"nli-sts", "sbert-nli", "sbert-stsb"})
# The in-domain supervised stages (one per kind of labels): the last stage of a pre-training chain.
SUPERVISED_STAGES = frozenset({"sbert-mnrl", "sbert-cosine"})
UNTRAINED = frozenset({"base", "bm25", "wordvec"})
# Every stage that trains on labels (the methods whose data_kind is "labeled"; tests check this against the
# registry): a checkpoint that went through one is no unsupervised model, whichever command evaluates it.
LABELED_STAGES = NLI_STS_STAGES | SUPERVISED_STAGES


@dataclass(frozen=True)
class RowKey:
    """What makes two results repeats of one experiment (the seed aside)."""

    group: str
    method: str
    model: str
    pooling: str
    corpus_size: int | None = None
    corpus: str = ""  # training corpus when it is not the evaluated task's own ("" = in-domain or untrained)
    config: str = ""  # config identity prefix, only with --split-configs
    labeled_size: int | None = None  # --labeled-sizes: the supervised stage's labeled-set size
    variant: str = ""  # a non-default preset and the overrides of the run (e.g. "thesis loss=bce"), "" for none
    limit: str = ""  # a --limit subsample's label ("limit 200"), "" for results over every test item

    def sort_key(self) -> tuple:
        order = METHOD_ORDER.index(self.method) if self.method in METHOD_ORDER else len(METHOD_ORDER)
        return (order, self.method, self.model, self.pooling, self.corpus, self.corpus_size or 0,
                self.labeled_size or 0, self.config, self.variant, self.limit)

    def same_experiment(self, other: RowKey) -> bool:
        """Same block, base model, corpus and size: rows whose seeds may be paired (dagger, --compare)."""
        return (self.group, self.model, self.corpus, self.corpus_size, self.labeled_size, self.config, self.limit) == (
            other.group, other.model, other.corpus, other.corpus_size, other.labeled_size, other.config, other.limit)


def find_key(config: Any, key: str) -> Any:
    """The first value of ``key`` anywhere in a nested config (None when absent)."""
    if isinstance(config, dict):
        if key in config:
            return config[key]
        for value in config.values():
            found = find_key(value, key)
            if found is not None:
                return found
    return None


def group_of(record: dict[str, Any]) -> str:
    """The setting block: an explicit ``setting`` in the method or config, else by whether it trains (an
    untrained sentence-transformers model is an out-of-the-box supervised one). A checkpoint of ours scored by
    `bench eval` (no setting recorded) whose stages trained on labels is filed with the other supervised chains,
    never under unsupervised learning."""
    explicit = record["method"].get("setting") or find_key(record.get("config", {}), "setting")
    if explicit:
        return GROUP_ALIASES.get(str(explicit), str(explicit))
    name = str(record["method"]["name"])
    if name in UNTRAINED:
        return "out-of-the-box" if record["method"].get("sentence_encoder") else "baselines"
    if any(_stage_name(s) in LABELED_STAGES for s in name.split(">")):
        return "other-supervised"
    return "unsupervised"


def _stage_name(stage: str) -> str:
    """A chain token's method: ``nli-sts[<model>]`` (a published NLI+STSb start) is the nli-sts stage."""
    return "nli-sts" if stage.startswith("nli-sts[") else stage


def row_method(record: dict[str, Any], group: str) -> str:
    """The name a row goes by: the chain's own stages in a domain-adaptation block (``tsdae>nli-sts`` and
    ``nli-sts[<model>]>tsdae`` are TSDAE's row there), the pre-training method in the pre-training block
    (``sbert`` when the supervised stage starts from the backbone), and ``sbert-supervised`` for the in-domain
    upper bound (whatever the loss)."""
    name = str(record["method"]["name"])
    stages = name.split(">")
    if group in ("adapt-nli-first", "adapt-target-first"):
        own = [s for s in stages if _stage_name(s) not in NLI_STS_STAGES]
        return ">".join(own) or name
    if group == "pretraining":
        pre = stages[:-1] if stages[-1] in SUPERVISED_STAGES else stages
        return ">".join(pre) or "sbert"
    if group == "supervised" and len(stages) == 1 and name in SUPERVISED_STAGES:
        return "sbert-supervised"
    return name


def row_corpus(record: dict[str, Any], group: str) -> str:
    """The training data a row names: "" when it is the evaluated task's own, else the data of the stage that
    trained on the target (a chain's NLI+STSb stages are the setting's, shared by every target). So TSDAE
    adapted to AskUbuntu and TSDAE adapted to TwitterPara, both scored on STSb, are two rows, never one."""
    corpus = str(record["method"].get("train_corpus") or "")
    task = record["task"]["name"]
    if group in ("adapt-nli-first", "adapt-target-first") and corpus in ("allnli", "stsb:train", "nli-sts"):
        corpus = ""  # results written before units named their target's data: the setting names it
    corpus = corpus.split("[", 1)[0]  # a labeled subset's "[size]" (the labeled size is a row field)
    if corpus in (f"{task}:supervised", f"{task}:train"):
        return ""
    return "" if corpus == task else corpus


def row_key(record: dict[str, Any], split_configs: bool = False) -> RowKey:
    """The row a result belongs to. A model trained on the evaluated task's own corpus is in-domain (the
    paper's setup); evaluated elsewhere (e.g. STSb), the training corpus is part of the row."""
    method = record["method"]
    config = record.get("config", {})
    size = find_key(config, "corpus_size")
    labeled = config.get("labeled_size") if isinstance(config, dict) else None
    group = group_of(record)
    return RowKey(group=group, method=row_method(record, group), model=str(method.get("base_model") or ""),
                  pooling=str(method.get("pooling") or ""), corpus_size=int(size) if size else None,
                  corpus=row_corpus(record, group),
                  config=config_identity(config)[:8] if split_configs else "",
                  labeled_size=int(labeled) if labeled else None, variant=str(method.get("variant") or ""),
                  limit=limit_label(record))


def limit_label(record: dict[str, Any]) -> str:
    """"limit 200" (with " seed 3" when not 0) for a result over a --limit subsample, "" otherwise."""
    limit = limit_of(record["task"].get("limit"))
    return "" if limit is None else limit.label()


@dataclass
class ResultIndex:
    """Results by row, then by (task, split)."""

    rows: dict[RowKey, dict[tuple[str, str], list[StoredResult]]] = field(default_factory=dict)
    # Cells refused by held_cell: (row, column id, split) -> why their results are not seed repeats of one measurement
    refused: dict[tuple[RowKey, str, str], str] = field(default_factory=dict)

    def results(self, key: RowKey, task: str, split: str) -> list[StoredResult]:
        return self.rows.get(key, {}).get((task, split), [])

    def cell(self, key: RowKey, column: Column | str, split: str) -> SeedStats:
        """Seed statistics (0-1 scale) of one cell; empty (n = 0) when the row has no result for it."""
        col = COLUMNS[column] if isinstance(column, str) else column
        if col.mean_of:
            return per_seed_average([self.cell(key, part, split) for part in col.mean_of])
        results = self.results(key, col.task or "", split)
        if not results:
            return SeedStats({})
        return aggregate(results, col.metric or "")

    def held_cell(self, key: RowKey, column: Column | str, split: str) -> SeedStats:
        """:meth:`cell`, or an empty cell when its results are no seed repeats of one measurement (another task
        version, data, scorer, step path or config): the table shows it missing and its notes say why
        (:meth:`refusal_notes`); one stale result never takes the whole report down."""
        col = COLUMNS[column] if isinstance(column, str) else column
        try:
            return self.cell(key, col, split)
        except MixedRunsError as e:
            self.refused[(key, col.id, split)] = str(e).removeprefix("cannot average ")
            return SeedStats({})

    def refusal_notes(self, keys: Iterable[RowKey], column_ids: Iterable[str], split: str) -> list[str]:
        """One note per refused cell among ``keys`` x ``column_ids`` on ``split``."""
        keys, ids = set(keys), set(column_ids)
        columns: dict[tuple[RowKey, str], list[str]] = {}  # an average over a refused cell says the same reason
        for (k, c, s), why in self.refused.items():
            if k in keys and c in ids and s == split:
                columns.setdefault((k, why), []).append(_column_name(c))
        return [f"Not averaged ({row_label(k, False)}: {', '.join(cols)}): {why}." for (k, why), cols in columns.items()]


def index_results(results: Iterable[StoredResult], split_configs: bool = False) -> ResultIndex:
    """Index stored results by row and (task, split)."""
    rows: dict[RowKey, dict[tuple[str, str], list[StoredResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        rows[row_key(r.record, split_configs)][(r.task, r.split)].append(r)
    return ResultIndex({k: dict(v) for k, v in rows.items()})


def row_label(key: RowKey, show_model: bool) -> str:
    """Display label: the method's paper name; untrained rows by model and pooling; corpus size if any."""
    if key.method == "wordvec":
        label = f"Avg. word vectors ({key.model.removeprefix('wordvec:').rstrip('/').rsplit('/', 1)[-1]})"
    elif key.method in UNTRAINED and key.method != "bm25":
        label = f"{key.model} ({key.pooling})" if key.pooling else key.model
    else:
        label = DISPLAY.get(key.method, key.method)
        if show_model and key.model:
            label += f" · {key.model}"
    return label + row_marks(key)


def row_marks(key: RowKey) -> str:
    """What a row's label adds to its name: training corpus, corpus and labeled-set sizes, variant, config."""
    marks = []
    if key.corpus:
        marks.append(f"trained on {key.corpus}")
    if key.corpus_size:
        marks.append(f"{key.corpus_size:,} sent.")
    if key.labeled_size:
        marks.append(f"{key.labeled_size:,} labeled")
    if key.variant:
        marks.append(key.variant)
    if key.config:
        marks.append(f"cfg {key.config}")
    if key.limit:
        marks.append(key.limit)
    return "".join(f" · {m}" for m in marks)


def _column_name(column_id: str) -> str:
    col = COLUMNS[column_id]
    return f"{col.group} {col.header}".strip() or column_id
