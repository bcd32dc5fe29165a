"""A Hugging Face datasets cache holding tiny stand-ins for the MTEB datasets of DenoSent's Table 2 and Figure 3
(`mteb-denosent-clf`, `mteb-denosent-rr`), in the layout ``datasets`` reads offline.

With ``HF_HUB_OFFLINE=1`` ``datasets.load_dataset("mteb/banking77", revision=R)`` cannot reach the hub and falls back
to its own cache (``CachedDatasetModuleFactory``): ``HF_DATASETS_CACHE/<namespace>___<snake_name>/<config>/0.0.0/
<hash>/`` with a ``dataset_info.json`` (config name, features, splits) and one Arrow stream file per split,
``<snake_name>-<split>.arrow``. :func:`build_mteb_cache` writes exactly that for each task's pinned dataset path and
revision (read from MTEB's own task metadata), so ``mteb.get_task(name).load_data()`` loads it through MTEB's and
``datasets``' real loaders, and MTEB's real evaluators score it. The rows are a few made-up sentences per task, in
each dataset's columns and configs (MTEB 2's formats):

- classification: ``text``, ``label`` (and ``label_text``), splits train / (validation) / test; the multilingual
  tasks one config per ``hf_subset``, except MASSIVE, which MTEB loads "fast" from one ``default`` config with a
  ``lang`` column;
- re-ranking and retrieval: configs ``corpus`` (id, title, text), ``queries`` (id, text), ``default`` (the qrels:
  query-id, corpus-id, score) and, for re-ranking, ``top_ranked`` (query-id, corpus-ids), split test.
  MindSmallReranking's query ids carry a ``_<n>`` suffix: its main score takes the max over those sub-queries.

Offline, ``datasets.get_dataset_config_names`` only reports ``default`` for a cached dataset; usebench's MTEB
adapter adds the cached configs (usebench/tasks/mteb.py), so MTEB loads ``top_ranked`` and scores the re-ranking tasks
over each query's candidates. The scores are of these fixtures, not of MTEB's datasets: never compare them with
published numbers."""
from __future__ import annotations

from pathlib import Path
from typing import Any

TOPICS = {0: ("money", "bank", "transfer", "card", "payment"), 1: ("happy", "great", "love", "wonderful", "smile"),
          2: ("error", "kernel", "driver", "install", "linux")}
FILLER = ("the", "a", "my", "is", "was", "today", "again", "please", "very", "not")


def _sentence(label: int, i: int) -> str:
    words = TOPICS[label]
    return " ".join((FILLER[i % len(FILLER)], words[i % len(words)], FILLER[(i * 3 + 1) % len(FILLER)],
                     words[(i + 2) % len(words)], f"item{i}"))


def _classification_rows(n: int, start: int, lang: str | None = None) -> dict[str, list[Any]]:
    labels = [i % len(TOPICS) for i in range(n)]
    rows: dict[str, list[Any]] = {"text": [_sentence(lab, start + i) for i, lab in enumerate(labels)],
                                  "label": labels, "label_text": [f"topic{lab}" for lab in labels]}
    if lang is not None:
        rows["lang"] = [lang] * n
    return rows


def _write(cache: Path, repo: str, config: str, revision: str, splits: dict[str, dict[str, list[Any]]]) -> None:
    """One cached config of ``repo`` at ``revision``: Arrow stream files and dataset_info.json, as ``datasets``
    writes them after a download."""
    from datasets import Dataset, DatasetInfo, SplitDict, SplitInfo
    from datasets.arrow_writer import ArrowWriter
    from datasets.naming import camelcase_to_snakecase

    namespace, name = repo.split("/")
    snake = camelcase_to_snakecase(name)
    folder = cache / f"{namespace}___{snake}" / config / "0.0.0" / revision
    folder.mkdir(parents=True, exist_ok=True)
    split_dict, features = SplitDict(dataset_name=snake), None
    for split, rows in splits.items():
        data = Dataset.from_dict(rows)
        features = data.features
        with ArrowWriter(path=str(folder / f"{snake}-{split}.arrow"), features=features) as writer:
            writer.write_table(data.data.table)
            n, nbytes = writer.finalize()
        split_dict.add(SplitInfo(name=split, num_bytes=nbytes, num_examples=n, dataset_name=snake))
    DatasetInfo(features=features, config_name=config, dataset_name=snake,
                splits=split_dict).write_to_directory(str(folder))


def _classification(cache: Path, task: Any, offset: int) -> None:
    meta = task.metadata
    splits = ["train", *(s for s in ("validation", "test") if s in meta.eval_splits)]
    sizes = {"train": 12, "validation": 6, "test": 9}  # 4 / 2 / 3 rows per label

    def rows(lang: str | None = None) -> dict[str, dict[str, list[Any]]]:
        return {s: _classification_rows(sizes[s], offset + 100 * k, lang) for k, s in enumerate(splits)}

    if not meta.is_multilingual:
        _write(cache, meta.dataset["path"], "default", meta.dataset["revision"], rows())
    elif getattr(task, "fast_loading", False):  # MASSIVE: one config, a `lang` column MTEB groups by
        _write(cache, meta.dataset["path"], "default", meta.dataset["revision"], rows("en"))
    else:  # one config per subset: MTEB loads every subset, the suite evaluates the English one
        for subset in task.hf_subsets:
            _write(cache, meta.dataset["path"], subset, meta.dataset["revision"], rows())


def _retrieval(cache: Path, task: Any, offset: int) -> None:
    meta = task.metadata
    repo, revision = meta.dataset["path"], meta.dataset["revision"]
    docs = [(f"d{i}", _sentence(i % len(TOPICS), offset + i)) for i in range(9)]
    sub = "_0" if meta.name == "MindSmallReranking" else ""  # MIND's sub-queries: <id>_<n>
    queries = [(f"q{label}{sub}", " ".join(TOPICS[label][:3])) for label in TOPICS]
    qrels = [(q, d) for q, _ in queries for d, _ in docs if int(d[1:]) % len(TOPICS) == int(q[1])]
    one = {"test": None}
    _write(cache, repo, "corpus", revision, {k: {"id": [d for d, _ in docs], "title": [""] * len(docs),
                                                 "text": [t for _, t in docs]} for k in one})
    _write(cache, repo, "queries", revision, {k: {"id": [q for q, _ in queries], "text": [t for _, t in queries]}
                                              for k in one})
    _write(cache, repo, "default", revision, {k: {"query-id": [q for q, _ in qrels], "corpus-id": [d for _, d in qrels],
                                                  "score": [1] * len(qrels)} for k in one})
    if meta.type == "Reranking":  # each query's candidates: its relevant documents and the next topic's
        candidates = [[d for d, _ in docs if int(d[1:]) % len(TOPICS) in (int(q[1]), (int(q[1]) + 1) % len(TOPICS))]
                      for q, _ in queries]
        _write(cache, repo, "top_ranked", revision, {k: {"query-id": [q for q, _ in queries], "corpus-ids": candidates}
                                                     for k in one})


def build_mteb_cache(cache: Path, groups: tuple[str, ...] = ("mteb-denosent-clf", "mteb-denosent-rr")) -> Path:
    """Write the stand-in datasets of every task of ``groups`` under ``cache`` (a ``HF_DATASETS_CACHE``)."""
    import mteb

    from usebench.tasks import expand_tasks

    for i, name in enumerate(n for group in groups for n in expand_tasks(group)):
        task = mteb.get_task(name.removeprefix("mteb:"))  # each task its own sentences (offset), so its own scores
        (_classification if task.metadata.type == "Classification" else _retrieval)(cache, task, 1000 * i)
    return cache
