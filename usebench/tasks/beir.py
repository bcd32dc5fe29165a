"""Generic BEIR-format retrieval adapter, and Quora on it.

Data (Thakur et al. 2021, BEIR; `beir/<name>/` as the public BEIR zips unpack):
- ``corpus.jsonl``: one JSON object a line, ``{"_id": str, "title": str, "text": str}``;
- ``queries.jsonl``: ``{"_id": str, "text": str}``;
- ``qrels/<split>.tsv``: header ``query-id\\tcorpus-id\\tscore``, then one integer judgement a line.

Loading: BEIR's ``GenericDataLoader`` where the `beir` extra is installed, else our reader (same data, checked in
tests; it also reports malformed input by file and line). Search: our exact backends (tie-exact, faster than
BEIR's ``DenseRetrievalExactSearch``, whose top-k a test holds equal to ours).

Protocol (beir ``GenericDataLoader`` + ``EvaluateRetrieval.evaluate``): only queries with judgements in the
split are evaluated; a document's text is ``(title + " " + text).strip()`` as BEIR's dense models encode it; a
query's own id is dropped from its results (``ignore_identical_ids=True``, which matters for Quora, whose queries
are also corpus documents); metrics are pytrec_eval's ``ndcg_cut_10`` and ``map_cut_100``, and recall@k and P@k
(``recall_k``, ``P_k``) at BEIR's default cutoffs k = 1, 3, 5, 10, 100, 1000 over BEIR's retrieval depth of 1000
(R. Wang's thesis eq. 4.2 and Figs. 5.3/5.4 read them), averaged over the evaluated queries (unrounded here; BEIR
rounds to 5 places). pytrec_eval gets the top 1000 after the exclusion, as from BEIR, one chunk of queries at a
time (a 10,000-query run of depth 1000 is 10M (query, doc) entries at once otherwise).
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from usebench.data.corpus import read_corpus
from usebench.errors import DataFormatError
from usebench.eval.items import ItemTable, Outcomes, mean_recipes, query_table
from usebench.eval.metrics import mean_measure, trec_eval
from usebench.registry import TASKS
from usebench.eval.scorer import Scorer
from usebench.eval.subsample import Limit, picked
from usebench.tasks.base import Family, Task, split_fields
from usebench.data.corpus import read_lines
from usebench.tasks.release import Count

QRELS_HEADER = "query-id\tcorpus-id\tscore"
K_VALUES = (1, 3, 5, 10, 100, 1000)  # BEIR's EvaluateRetrieval default k_values; thesis Sec. 4.2.2
# our metric name -> pytrec_eval measure
MEASURES: dict[str, str] = {"ndcg@10": "ndcg_cut_10", "map@100": "map_cut_100",
                            **{f"recall@{k}": f"recall_{k}" for k in K_VALUES}, **{f"p@{k}": f"P_{k}" for k in K_VALUES}}
DEPTH = 1000  # results per query handed to pytrec_eval: BEIR's top_k, the deepest cutoff of MEASURES
CHUNK = 500  # queries per pytrec_eval call (bounds the run's memory)


@dataclass(frozen=True, eq=False)
class BeirData:
    """One split: the judged queries, the whole corpus (texts as the models see them) and the judgements."""

    query_ids: tuple[str, ...]
    query_texts: tuple[str, ...]
    doc_ids: tuple[str, ...]
    doc_texts: tuple[str, ...]
    qrels: dict[str, dict[str, int]]


def limited_queries(data: BeirData, rows: np.ndarray) -> BeirData:
    """``data`` with the queries at ``rows`` only (their judgements and the whole corpus kept)."""
    qids = picked(data.query_ids, rows)
    return replace(data, query_ids=qids, query_texts=picked(data.query_texts, rows),
                   qrels={q: data.qrels[q] for q in qids})


def read_jsonl(path: Path, fields: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """JSON objects, one a line, each with string ``fields`` (``optional`` ones default to ``""``)."""
    rows = []
    for lineno, line in enumerate(read_lines(path), 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(path, lineno, f"one JSON object per line ({e.msg})", line) from None
        if not isinstance(obj, dict):
            raise DataFormatError(path, lineno, "a JSON object", line)
        for key in fields + optional:
            value = obj.get(key, "" if key in optional else None)
            if not isinstance(value, str):
                raise DataFormatError(path, lineno, f"a string field {key!r}", line)
        rows.append({key: obj.get(key, "") for key in fields + optional})
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{query id: {doc id: judgement}}`` from a BEIR qrels TSV (header checked)."""
    lines = read_lines(path)
    if not lines or lines[0] != QRELS_HEADER:
        raise DataFormatError(path, 1, f"the header {QRELS_HEADER!r}", lines[0] if lines else "")
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(lines[1:], 2):
        qid, did, score = split_fields(path, lineno, line, 3, 3, "(query-id, corpus-id, score)")
        try:
            qrels.setdefault(qid, {})[did] = int(score)
        except ValueError:
            raise DataFormatError(path, lineno, "an integer score", score) from None
    return qrels


def unique_ids(path: Path, rows: list[dict[str, str]]) -> list[str]:
    """The rows' ``_id`` values; a repeated id is an error naming the line that repeats it."""
    seen: set[str] = set()
    for lineno, row in enumerate(rows, 1):
        if row["_id"] in seen:
            raise DataFormatError(path, lineno, "unique '_id' values", row["_id"])
        seen.add(row["_id"])
    return [r["_id"] for r in rows]


def doc_text(row: dict[str, str]) -> str:
    """A document as BEIR's models read it: title, a space, text, stripped."""
    return (row["title"] + " " + row["text"]).strip()


def exclude_and_cut(query_ids, doc_ids, scores: np.ndarray, indices: np.ndarray, depth: int):
    """The run as ``{qid: {doc id: score}}``: each query's own id dropped, then the top ``depth`` kept."""
    run: dict[str, dict[str, float]] = {}
    for row, qid in enumerate(query_ids):
        hits = [(doc_ids[j], float(s)) for j, s in zip(indices[row], scores[row]) if doc_ids[j] != qid]
        run[qid] = dict(hits[:depth])
    return run


def _beir_read_everything(data: BeirData, n_queries: int, corpus_path: Path, queries_path: Path,
                          qrels_path: Path) -> bool:
    """Whether BEIR's loader took every corpus and query line as a distinct record with an id, and the qrels have
    the BEIR header (what it does not check)."""
    n_lines = sum(1 for line in read_lines(corpus_path) if line.strip())
    n_query_lines = sum(1 for line in read_lines(queries_path) if line.strip())
    header = next(iter(read_lines(qrels_path)), "")
    return n_lines == len(data.doc_ids) and None not in data.doc_ids and header == QRELS_HEADER \
        and n_query_lines == n_queries and None not in data.query_ids


@dataclass(frozen=True, eq=False)
class BeirRun:
    """The search's top ``DEPTH + 1`` per query (best first, each query's own id still in): scores and corpus
    indices, (n_queries, k) each. Kept as arrays; the ``{qid: {doc id: score}}`` run is built a chunk at a time."""

    scores: np.ndarray
    indices: np.ndarray


def run_chunks(data: BeirData, run: BeirRun | dict[str, dict[str, float]]):
    """``{qid: {doc id: score}}`` runs of at most :data:`CHUNK` queries (own ids dropped, top DEPTH kept)."""
    qids = list(run) if isinstance(run, dict) else list(data.query_ids)
    for start in range(0, len(qids), CHUNK):
        if isinstance(run, dict):
            yield {q: run[q] for q in qids[start : start + CHUNK]}
        else:
            stop = start + CHUNK
            yield exclude_and_cut(qids[start:stop], data.doc_ids, run.scores[start:stop], run.indices[start:stop],
                                  DEPTH)


def beir_per_query(data: BeirData, run: BeirRun | dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """pytrec_eval's value of every measure of :data:`MEASURES` per query, fed a chunk of queries at a time."""
    per_query: dict[str, dict[str, float]] = {}
    for part in run_chunks(data, run):
        per_query.update(trec_eval({q: data.qrels[q] for q in part}, part, MEASURES.values()))
    return per_query


def beir_metrics(data: BeirData, run: BeirRun | dict[str, dict[str, float]]) -> dict[str, float]:
    """Every measure of :data:`MEASURES`, the mean over the run's queries, pytrec_eval fed a chunk at a time."""
    return per_query_means(beir_per_query(data, run))


def per_query_means(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    """Our metric names -> the mean of their pytrec_eval measure over the queries."""
    return {name: mean_measure(per_query, measure) for name, measure in MEASURES.items()}


def per_query_columns(per_query: dict[str, dict[str, float]]) -> tuple[list[str], dict[str, list[float]]]:
    """(query ids, {our metric name: the values in that order}) for :func:`usebench.eval.items.query_table`."""
    return list(per_query), {name: [v[measure] for v in per_query.values()] for name, measure in MEASURES.items()}


class BeirTask(Task):
    """A BEIR dataset under ``beir/<beir_name>/``: dense or lexical retrieval over the whole corpus."""

    group: ClassVar[str] = "beir"
    family: ClassVar[Family] = "retrieval"
    limit_unit: ClassVar[str | None] = "queries"
    version: ClassVar[str] = "2"  # 2: recall@k and P@k at k = 1..1000, depth 1000
    main_metric: ClassVar[str] = "ndcg@10"
    metric_names: ClassVar[tuple[str, ...]] = tuple(MEASURES)
    beir_name: ClassVar[str]
    # Published sizes: documents in corpus.jsonl and judged queries per split (qrels/<split>.tsv); none by default.
    release_documents: ClassVar[int | None] = None
    release_queries: ClassVar[dict[str, int]] = {}
    release_source: ClassVar[str] = ""

    def files(self, split: str) -> list[str]:
        root = f"beir/{self.beir_name}"
        return [f"{root}/corpus.jsonl", f"{root}/queries.jsonl", f"{root}/qrels/{split}.tsv"]

    def train_files(self) -> list[str]:
        return [f"beir/{self.beir_name}/corpus.jsonl"]

    def train_corpus(self, data_root: str | Path, corpus_file: str | Path | None = None, *,
                     include_eval_queries: bool = False) -> list[str]:
        """The corpus documents (unlabeled, in-domain), unless ``corpus_file`` overrides.

        The queries judged in the task's evaluation splits are left out, by id and by text: Quora's queries are
        corpus documents too, and training on the test queries' own text is transductive.
        ``include_eval_queries=True`` keeps them (the whole corpus, as a transductive setting would use it).
        """
        if corpus_file is not None:
            return read_corpus(corpus_file)
        path = self.require(data_root, self.splits[0])[0]
        docs = read_jsonl(path, ("_id", "text"), ("title",))
        if not include_eval_queries:
            ids, texts = self.evaluation_queries(data_root)
            docs = [r for r in docs if r["_id"] not in ids and doc_text(r) not in texts]
        return list(dict.fromkeys(doc_text(r) for r in docs))

    def evaluation_queries(self, data_root: str | Path) -> tuple[set[str], set[str]]:
        """(ids, stripped texts) of the queries judged in any of the task's splits (missing files: an error)."""
        ids: set[str] = set()
        for split in self.splits:
            ids.update(read_qrels(self.require(data_root, split)[2]))
        queries_path = self.require(data_root, self.splits[0])[1]
        texts = {q["text"].strip() for q in read_jsonl(queries_path, ("_id", "text")) if q["_id"] in ids}
        return ids, texts

    def load(self, split: str, data_root: str | Path) -> BeirData:
        """The split read by BEIR's own ``GenericDataLoader`` (the `beir` extra), else by our reader, which gives
        the same data (a test holds the two equal) and is also what names the file and line of malformed input."""
        paths = self.require(data_root, split)
        if importlib.util.find_spec("beir") is None:
            return self._load_ours(*paths)
        try:
            data, n_queries = self._load_beir(split, *paths)
        except Exception:  # noqa: BLE001  BEIR's loader names no line: let our reader say what is wrong where
            self._load_ours(*paths)
            raise
        if not _beir_read_everything(data, n_queries, *paths):
            # BEIR's loader silently merges repeated ids, keys a line without "_id" as None and skips the qrels
            # header unread: our reader names the file and line of such input.
            return self._load_ours(*paths)
        return data

    def _load_beir(self, split: str, corpus_path: Path, queries_path: Path, qrels_path: Path) -> tuple[BeirData, int]:
        """(the split as BEIR's loader reads it, how many distinct queries it kept)."""
        from beir.datasets.data_loader import GenericDataLoader

        # files() lays the split out as BEIR does: <folder>/{corpus.jsonl, queries.jsonl, qrels/<split>.tsv}
        corpus, queries, qrels = GenericDataLoader(data_folder=str(corpus_path.parent)).load(split=split)
        qids = tuple(qrels)  # judged queries in qrels file order, as BEIR evaluates them
        docs = [{"title": d.get("title") or "", "text": d.get("text") or ""} for d in corpus.values()]
        return BeirData(qids, tuple(queries[q] for q in qids), tuple(corpus), tuple(doc_text(d) for d in docs),
                        {q: dict(rel) for q, rel in qrels.items()}), len(queries)

    def _load_ours(self, corpus_path: Path, queries_path: Path, qrels_path: Path) -> BeirData:
        corpus = read_jsonl(corpus_path, ("_id", "text"), ("title",))
        doc_ids = unique_ids(corpus_path, corpus)
        queries = read_jsonl(queries_path, ("_id", "text"))
        query_text = dict(zip(unique_ids(queries_path, queries), (q["text"] for q in queries)))
        qrels = read_qrels(qrels_path)
        missing = [q for q in qrels if q not in query_text]
        if missing:
            raise DataFormatError(qrels_path, None, f"query ids that are in {queries_path.name}", missing[0])
        qids = tuple(qrels)
        return BeirData(qids, tuple(query_text[q] for q in qids), tuple(doc_ids),
                        tuple(doc_text(r) for r in corpus), qrels)

    def release_counts(self, split: str, data: BeirData) -> list[Count]:
        root, out = f"beir/{self.beir_name}", []
        if self.release_documents is not None:
            out.append(Count(f"{root}/corpus.jsonl", "documents", len(data.doc_ids), self.release_documents,
                             self.release_source))
        if split in self.release_queries:
            out.append(Count(f"{root}/qrels/{split}.tsv", "judged queries", len(data.query_ids),
                             self.release_queries[split], self.release_source))
        return out

    def limited(self, data: BeirData, limit: Limit) -> BeirData:
        """At most ``limit.n`` judged queries; the corpus stays whole."""
        return limited_queries(data, limit.pick(self.name, self.name, len(data.query_ids)))

    def texts(self, data: BeirData) -> list[str]:
        return list(dict.fromkeys((*data.query_texts, *data.doc_texts)))

    def score(self, data: BeirData, scorer: Scorer) -> BeirRun:
        # One extra result so that dropping the query's own id still leaves DEPTH (BEIR searches top_k + 1 too).
        scores, indices = scorer.search(list(data.query_texts), list(data.doc_texts), DEPTH + 1)
        return BeirRun(np.asarray(scores), np.asarray(indices))

    def metrics(self, data: BeirData, scores: BeirRun | dict[str, dict[str, float]]) -> dict[str, float]:
        """The measures of a :class:`BeirRun` (or of a ready ``{qid: {doc id: score}}`` run)."""
        return beir_metrics(data, scores)

    def outcomes(self, data: BeirData, scores: BeirRun | dict[str, dict[str, float]]) -> Outcomes:
        """The metrics and each query's values, pytrec_eval run once."""
        per_query = beir_per_query(data, scores)
        return Outcomes(per_query_means(per_query), {}, self._items(per_query))

    def items(self, data: BeirData, scores: BeirRun | dict[str, dict[str, float]]) -> ItemTable:
        return self._items(beir_per_query(data, scores))

    def _items(self, per_query: dict[str, dict[str, float]]) -> ItemTable:
        return query_table({self.name: per_query_columns(per_query)},
                           mean_recipes({m: (m, (self.name,)) for m in MEASURES}))

    def n_queries(self, data: BeirData) -> int:
        return len(data.query_ids)


class Quora(BeirTask):
    """Quora duplicate questions (BEIR): given a question, retrieve its duplicates from 523K questions."""

    name = "quora"
    beir_name = "quora"
    splits = ("dev", "test")
    dataset = "quora"
    description = "Quora duplicate-question retrieval (BEIR format; nDCG@10, MAP@100, R@k and P@k, k 1-1000)"
    release_documents = 522931  # BEIR paper Table 1 (Thakur et al. 2021): corpus 522,931
    release_queries = {"dev": 5000, "test": 10000}  # BEIR paper Table 1: dev 5,000, test 10,000 queries
    release_source = "BEIR quora release (Thakur et al. 2021, Table 1)"


TASKS.add("quora", Quora())
