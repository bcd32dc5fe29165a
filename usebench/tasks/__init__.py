"""Task adapters, one module each, enrolled by one import line each (an import error names its module)."""
from __future__ import annotations

from usebench.data.manager import TaskFiles
from usebench.errors import BenchError
from usebench.registry import TASKS, UnknownNameError

# Enrolment: one line per adapter module.
from usebench.tasks import twitterpara  # noqa: F401,E402
from usebench.tasks import askubuntu  # noqa: F401,E402
from usebench.tasks import cqadupstack  # noqa: F401,E402
from usebench.tasks import scidocs  # noqa: F401,E402
from usebench.tasks import sts  # noqa: F401,E402  (sts12..sts16, stsb, sickr)
from usebench.tasks import beir  # noqa: F401,E402  (quora)
from usebench.tasks import beir_cqadupstack  # noqa: F401,E402  (beir-cqadupstack and its 12 forums beir-cqadupstack-<forum>)
from usebench.tasks import bm25_rescore  # noqa: F401,E402  (bm25[-anserini|-pyserini]+<task> for every ranking task)
from usebench.tasks import mteb  # noqa: F401,E402  (mteb:<TaskName>, MTEB's own task classes; the `mteb` extra)

# Groups expand on the command line: `--tasks useb` = the TSDAE paper's four tasks.
GROUPS: dict[str, tuple[str, ...]] = {
    "useb": ("askubuntu", "cqadupstack", "twitterpara", "scidocs"),
    "sts": ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr"),
    "beir-cqadupstack-forums": tuple(f"beir-cqadupstack-{f}" for f in beir_cqadupstack.FORUMS),
    # DenoSent (Wang et al. 2024), Fig. 3: MTEB re-ranking and retrieval tasks
    "mteb-denosent-rr": tuple(f"mteb:{n}" for n in (
        "AskUbuntuDupQuestions", "MindSmallReranking", "SciDocsRR", "StackOverflowDupQuestions", "QuoraRetrieval")),
    # DenoSent, Table 2: MTEB classification (English subsets)
    "mteb-denosent-clf": tuple(f"mteb:{n}" for n in (
        "AmazonCounterfactualClassification", "AmazonReviewsClassification", "Banking77Classification",
        "EmotionClassification", "MassiveIntentClassification", "MassiveScenarioClassification",
        "MTOPDomainClassification", "MTOPIntentClassification", "ToxicConversationsClassification",
        "TweetSentimentExtractionClassification")),
    # The protocols table: MTEB's own datasets of the USEB tasks (Hugging Face cache only; skipped where absent) ...
    "mteb-useb": ("mteb:AskUbuntuDupQuestions", "mteb:CQADupstackRetrieval", "mteb:TwitterURLCorpus",
                  "mteb:TwitterSemEval2015", "mteb:SciDocsRR"),
    # ... and the USEB TwitterPara files through MTEB's evaluator (not MTEB's datasets: other names)
    "useb-mteb-evaluator": ("mteb-evaluator:useb-twitterurl", "mteb-evaluator:useb-pit"),
    # MTEB's STS datasets: STSBenchmark and SICK-R built from the data root's releases and checked by content;
    # STS12-16 from the Hugging Face cache only (SentEval's files are not MTEB's text: usebench/tasks/mteb_data.py)
    "mteb-sts": tuple(f"mteb:{n}" for n in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R")),
    # MTEB's STS evaluator on SentEval's STS12-16 files, under names that do not claim MTEB's data
    "senteval-mteb-evaluator": tuple(f"mteb-evaluator:senteval-sts1{y}" for y in "23456"),
}


def task_files() -> list[TaskFiles]:
    """Every registered task's files, for `bench data status` (an adapter that fails is reported, not fatal)."""
    out = []
    for name in TASKS.names():
        task = TASKS.get(name)
        try:
            out.append(TaskFiles(name, task.dataset, {s: task.files(s) for s in task.splits}, task.train_files()))
        except Exception as e:  # noqa: BLE001  a broken adapter must not hide the data status
            out.append(TaskFiles(name, getattr(task, "dataset", "?"), {}, (), f"{type(e).__name__}: {e}"))
    return out


def expand_tasks(spec: str) -> list[str]:
    """``"useb,stsb"`` -> task names in order, groups expanded, duplicates dropped, unknown names an error."""
    names: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        members = GROUPS.get(part, (part,))
        for name in members:
            try:
                TASKS.get(name)  # a resolver name (mteb:...) raises its own error: unknown, or extra missing
            except UnknownNameError as e:
                if part in GROUPS:
                    continue  # a group member whose plugin is not enrolled
                raise BenchError(f"{e}; groups: {', '.join(GROUPS)}") from None
            if name not in names:
                names.append(name)
    if not names:
        raise BenchError(f"no task selected by {spec!r}")
    return names
