"""MTEB tasks in the suite: ``mteb:<TaskName>`` runs MTEB's own task class and evaluator (the `mteb` extra).

Any MTEB task of a type the wrapper serves (Reranking, Retrieval, PairClassification, Classification, STS) is a
task of the suite under ``mteb:<its MTEB name>``: ``bench eval --tasks mteb:SciDocsRR``, or the groups
``mteb-denosent-rr``/``mteb-denosent-clf`` (DenoSent's Fig. 3 and Table 2) and ``mteb-useb``. The model goes to MTEB
as :class:`~usebench.eval.mteb_model.MtebEncoder`, so MTEB computes every number; the result stores MTEB's
scores under MTEB's names (main score as MTEB names it: ``map_at_1000``, ``ndcg_at_10``, ``max_ap``, ``accuracy``),
and the task version records the MTEB version, the dataset revision and which source was used.

Data: an ``mteb:`` name is MTEB's dataset. It comes from the Hugging Face cache (``HF_HUB_OFFLINE=1`` never
downloads); a task whose data is not cached is skipped (an error under ``--strict``) with the command that fills
the cache. Multilingual tasks run their English subset. Where the data root holds the release MTEB packaged
(STSBenchmark, SICK-R: :mod:`usebench.tasks.mteb_data`), the task is built from it, and the build is checked against MTEB's
published statistics and against the release's content hash before anything is encoded; a build that differs is
refused. SentEval's STS12-16 files are not MTEB's text (another tokenisation): MTEB's evaluator runs on them as
``mteb-evaluator:senteval-sts12`` ... ``senteval-sts16``, and ``mteb:STS12`` ... come from the cache only.

``mteb-evaluator:useb-twitterurl`` and ``mteb-evaluator:useb-pit`` run MTEB's PairClassification evaluator on the
USEB TwitterPara test files (the `protocols` table's "USEB data, MTEB's evaluator"): not MTEB's TwitterURLCorpus
and TwitterSemEval2015, which hold 51,534 and 16,777 pairs against USEB's 9,334 and 838.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usebench.errors import BenchError, MissingDataError
from usebench.eval.scorer import Scorer
from usebench.registry import TASKS, UnknownNameError
from usebench.tasks.base import Task
from usebench.tasks.mteb_data import EVALUATOR_BUILDS, LOCAL_BUILDS, LocalBuild, check_build, check_content
from usebench.tasks.pairs import UNLABELLED, PairSet

INSTALL = "pip install -e '.[mteb]'"
FAMILIES = {"Reranking": "rerank", "Retrieval": "retrieval", "PairClassification": "pairs",
            "Classification": "classification", "STS": "pairs"}
ENGLISH = "en"  # the English hf_subset of MTEB's multilingual tasks (Amazon*, MASSIVE, MTOP)
SPLITS = {"test": ("test",), "dev": ("dev", "validation")}  # our split name -> MTEB's names for it
EVALUATOR_PREFIX = "mteb-evaluator:"  # MTEB's evaluator on data that is not MTEB's (usebench.tasks.mteb_data.EVALUATOR_BUILDS)
# What to say when MTEB's own dataset of a task is not cached but the data root holds a smaller relative of it.
NOT_THE_SAME = {
    "TwitterURLCorpus": "the data root's USEB Twitter URL test file is not this dataset (9,334 labelled pairs, MTEB's "
                        "51,534); MTEB's evaluator on it: --tasks mteb-evaluator:useb-twitterurl",
    "TwitterSemEval2015": "the data root's USEB PIT-2015 test files are not this dataset (838 labelled pairs, MTEB's "
                          "16,777); MTEB's evaluator on them: --tasks mteb-evaluator:useb-pit",
    **{f"STS1{y}": f"the data root's SentEval STS1{y} files are not this dataset's text (the same pairs and scores, "
                   f"tokenised differently: MTEB's texts have 0.1-0.2% fewer characters); MTEB's evaluator on them: "
                   f"--tasks mteb-evaluator:senteval-sts1{y}" for y in "23456"},
}


@dataclass(frozen=True, eq=False)
class MtebData:
    """A loaded MTEB task object (dataset in place) and the MTEB split and subset it runs."""

    task: Any
    split: str
    subsets: tuple[str, ...]
    n_items: int
    source: str


def _require_mteb() -> None:
    if importlib.util.find_spec("mteb") is None:
        raise BenchError(f"mteb:<TaskName> tasks need the `mteb` extra: {INSTALL}")


def pair_dataset(pairs: PairSet) -> Any:
    """A PairSet as MTEB's pair-classification split: sentence1, sentence2, labels (labelled pairs only)."""
    from datasets import Dataset

    keep = [i for i, label in enumerate(pairs.label) if label != UNLABELLED]
    return Dataset.from_dict({"sentence1": [pairs.s1[i] for i in keep], "sentence2": [pairs.s2[i] for i in keep],
                              "labels": [int(pairs.label[i]) for i in keep]})


def sts_dataset(pairs: PairSet) -> Any:
    """A PairSet as MTEB's STS split: sentence1, sentence2, score (the gold similarity as released)."""
    from datasets import Dataset

    return Dataset.from_dict({"sentence1": list(pairs.s1), "sentence2": list(pairs.s2),
                              "score": [float(g) for g in pairs.gold]})


class MtebTask(Task):
    """``mteb:<name>``: one MTEB task through MTEB's own class and evaluator, on MTEB's data. With ``local`` and
    ``name`` (``mteb-evaluator:<key>``): MTEB's evaluator on other data, under a name that does not claim MTEB's."""

    group = "mteb"
    dataset = "mteb"
    extras = ("mteb",)

    def __init__(self, mteb_name: str, name: str | None = None, local: LocalBuild | None = None):
        import mteb

        meta = mteb.get_task(mteb_name).metadata
        if meta.type not in FAMILIES:
            raise BenchError(f"mteb:{mteb_name} is a {meta.type} task; the usebench MTEB wrapper serves "
                             f"{', '.join(FAMILIES)} tasks")
        self.mteb_name, self.family = mteb_name, FAMILIES[meta.type]
        self.name = name or f"mteb:{mteb_name}"
        self.claims_mteb_data = name is None  # an mteb:<Task> name: the data must be MTEB's (checked at load)
        self.main_metric = meta.main_score
        self.metric_names = (meta.main_score,)
        self.splits = tuple(ours for ours, names in SPLITS.items() if set(names) & set(meta.eval_splits))
        self.local = local if name else LOCAL_BUILDS.get(mteb_name)
        revision = meta.dataset.get("revision")
        source = "local:" + ",".join(self.local.files) if self.local else f"hf:{meta.dataset['path']}@{revision}"
        if not self.claims_mteb_data:
            self.group = self.dataset = self.local.dataset
            source += f"|evaluator-of:{mteb_name}"
        self.version = f"mteb-{mteb.__version__}|{source}"
        what = f"MTEB {meta.type}" if self.claims_mteb_data else f"MTEB's {meta.type} evaluator on {self.local.note}"
        self.description = f"{what}: {meta.description.strip()[:80]} ({source})"

    def files(self, split: str) -> list[str]:
        self.check_split(split)
        return list(self.local.files) if self.local else []

    def train_files(self) -> list[str]:
        return []  # MTEB tasks carry no unlabeled training corpus here: train with `--corpus FILE`

    def train_corpus(self, data_root: str | Path, corpus_file: str | Path | None = None) -> list[str]:
        """Only ``corpus_file``: an MTEB task is an evaluation here (use it in `--eval-tasks`, or pass `--corpus`)."""
        if corpus_file is None:
            raise BenchError(f"{self.name} has no unlabeled training corpus: evaluate it with `--eval-tasks "
                             f"{self.name}` or train on `--corpus FILE`")
        return super().train_corpus(data_root, corpus_file)

    def data_sha256(self, data_root: str | Path, split: str) -> str:
        """The local files' hash, or a hash of the pinned hub dataset revision."""
        if self.local:
            return super().data_sha256(data_root, split)
        return hashlib.sha256(self.version.encode()).hexdigest()

    def load(self, split: str, data_root: str | Path) -> MtebData:
        import mteb

        self.check_split(split)
        task = mteb.get_task(self.mteb_name)  # a fresh task object: no dataset state shared between loads
        mteb_split = next(s for s in SPLITS[split] if s in task.metadata.eval_splits)
        if self.local:
            pairs = self.local.read(Path(data_root))
            if self.claims_mteb_data:  # before anything is encoded: the build must be MTEB's dataset
                check_build(self.mteb_name, mteb_split, task.metadata, self.local, pairs)
            elif self.local.sha256:  # another name, but still the release it names, character for character
                check_content(f"{self.name} ({split})", self.local, pairs)
            split_data = sts_dataset(pairs) if self.local.kind == "sts" else pair_dataset(pairs)
            task.dataset = {"default": {mteb_split: split_data}}
            task.data_loaded = True
            source = f"local files {', '.join(self.local.files)} under the data root ({self.local.note})"
        else:
            _load_cached(task, self.name)
            source = f"Hugging Face cache: {task.metadata.dataset['path']}@{task.metadata.dataset.get('revision')}"
        subsets = (ENGLISH,) if task.metadata.is_multilingual and ENGLISH in task.hf_subsets else tuple(task.hf_subsets)
        return MtebData(task, mteb_split, subsets, _count(task, mteb_split, subsets), source)

    def texts(self, data: MtebData) -> list[str]:
        return []  # MTEB's evaluator asks the model for what it needs

    def score(self, data: MtebData, scorer: Scorer) -> dict[str, dict[str, Any]]:
        from usebench.eval.encoder import HFEncoder
        from usebench.eval.mteb_model import MtebEncoder

        encoder = getattr(scorer, "encoder", None)
        if not isinstance(encoder, HFEncoder):
            raise BenchError(f"{self.name} runs MTEB's evaluator on a transformer encoder; "
                             f"{scorer.name!r} is not one (lexical scorers cannot run MTEB tasks)")
        return dict(data.task.evaluate(MtebEncoder(encoder), split=data.split, subsets_to_run=list(data.subsets),
                                       encode_kwargs={"batch_size": encoder.batch_size, "show_progress_bar": False}))

    def metrics(self, data: MtebData, scores: dict[str, dict[str, Any]]) -> dict[str, float]:
        first = scores[data.subsets[0]]
        return {k: float(v) for k, v in first.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def subsets(self, data: MtebData, scores: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
        return {f"hf_subset={name}": self.metrics(MtebData(data.task, data.split, (name,), 0, ""), scores)
                for name in data.subsets if len(data.subsets) > 1}

    def n_queries(self, data: MtebData) -> int:
        return data.n_items


def _cached_configs(repo: str) -> list[str]:
    """The configs of ``repo`` in ``datasets``' own cache (``<namespace>___<snake_name>/<config>/...``)."""
    from datasets import config as ds_config
    from datasets.naming import camelcase_to_snakecase

    namespace, _, name = repo.rpartition("/")
    root = Path(ds_config.HF_DATASETS_CACHE) / f"{namespace}___{camelcase_to_snakecase(name)}"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and next(p.rglob("dataset_info.json"), None))


@contextlib.contextmanager
def _configs_seen_offline():
    """Offline, ``datasets.get_dataset_config_names`` reports only ``default`` for a cached dataset, so MTEB's
    retrieval loader never loads a re-ranking task's ``top_ranked`` config and scores the task as retrieval over the
    whole corpus, not over each query's candidates: another protocol under the task's name. While MTEB loads, the
    configs in the cache are added to what it is told."""
    try:
        import mteb.abstasks.retrieval_dataset_loaders as loaders
    except ImportError:  # another MTEB layout: nothing to widen
        yield
        return
    original = loaders.get_dataset_config_names

    def names(path: str, revision: str | None = None, *args: Any, **kwargs: Any) -> list[str]:
        found = list(original(path, revision, *args, **kwargs))
        return found + [c for c in _cached_configs(path) if c not in found]

    loaders.get_dataset_config_names = names
    try:
        yield
    finally:
        loaders.get_dataset_config_names = original


def _load_cached(task: Any, name: str) -> None:
    """``task.load_data()`` from the Hugging Face cache; a dataset that is not there is missing data."""
    try:
        with _configs_seen_offline():
            task.load_data()
    except (ConnectionError, OSError, FileNotFoundError, ValueError) as e:
        from huggingface_hub.constants import HF_HUB_CACHE

        ds = task.metadata.dataset
        where = Path(HF_HUB_CACHE) / f"datasets--{ds['path'].replace('/', '--')}"
        fill = (f"python -c \"import mteb; mteb.get_task('{task.metadata.name}').load_data()\"` on a machine with "
                f"the Hugging Face hub, then copy its ~/.cache/huggingface here (revision {ds.get('revision')}; "
                f"{type(e).__name__})")
        note = NOT_THE_SAME.get(task.metadata.name)
        raise MissingDataError(f"MTEB dataset of {name}" + (f" ({note})" if note else ""), where, fill) from None


def _count(task: Any, split: str, subsets: tuple[str, ...]) -> int:
    """How many rows (pairs, queries, documents to classify) the evaluated split holds."""
    total = 0
    for subset in subsets:
        part = task.dataset[subset] if subset in task.dataset else task.dataset
        data = part.get(split) if hasattr(part, "get") else None
        try:
            total += len(data) if data is not None else 0
        except TypeError:
            pass
    return total


def resolve(name: str) -> MtebTask:
    """``mteb:<name>`` -> its adapter; an unknown name gets MTEB's own did-you-mean."""
    _require_mteb()
    import mteb

    try:
        mteb.get_task(name)
    except KeyError as e:
        raise UnknownNameError(f"unknown MTEB task {name!r}: {e.args[0] if e.args else e}") from None
    return MtebTask(name)


def resolve_evaluator(key: str) -> MtebTask:
    """``mteb-evaluator:<key>``: MTEB's evaluator on the data root's files of :data:`EVALUATOR_BUILDS`."""
    _require_mteb()
    if key not in EVALUATOR_BUILDS:
        raise UnknownNameError(f"unknown task {EVALUATOR_PREFIX}{key}; known: "
                               + ", ".join(EVALUATOR_PREFIX + k for k in EVALUATOR_BUILDS))
    mteb_name, build = EVALUATOR_BUILDS[key]
    return MtebTask(mteb_name, name=EVALUATOR_PREFIX + key, local=build)


TASKS.add_resolver("mteb:", resolve)
TASKS.add_resolver(EVALUATOR_PREFIX, resolve_evaluator)
