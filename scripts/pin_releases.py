"""The release identities usebench/data/releases.json pins: computed from a data root holding real release files.

    python scripts/pin_releases.py /work/shared/data            # prints the JSON blocks (evaluation, training)
    python scripts/pin_releases.py /work/shared/data --check    # exit 1 if releases.json differs from the files

Per task and split, the identity is ``task.data_digests``: the sha256 a result records as ``task.data_sha256`` (the
files the task reads, in order, each name then its bytes) with each file's own sha256. For the STS tasks, whose files
``bench data download sts`` derives from the official releases (``sts/original``) with usebench's re-implementation
of SentEval's tokenisation, the derived files' identity is added as ``also`` where it differs from SentEval's own
files (in a few lines: tests/data/test_senteval.py). Training corpora: the text sha256 ``bench run`` records for a
task's own unlabeled sentences. A task or corpus whose files are not all in the data root is left out (releases.json
keeps it as "not pinned").
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any


def evaluation(root: Path) -> dict[str, dict[str, Any]]:
    """{task: {split: {"sha256", "files"}}} for every registered task whose split's files are all in ``root``."""
    from usebench import tasks  # noqa: F401  (enrols the adapters)
    from usebench.registry import TASKS

    out: dict[str, dict[str, Any]] = {}
    for name in TASKS.names():
        if name.startswith("mteb"):  # MTEB's data is MTEB's (its own revision pins), never a sources.json release
            continue
        task = TASKS.get(name)
        for split in task.splits:
            if all((root / f).is_file() for f in task.files(split)):
                sha, files = task.data_digests(root, split)
                out.setdefault(name, {})[split] = {"sha256": sha, "files": files}
    return out


def derived_sts(root: Path) -> dict[str, dict[str, Any]]:
    """The STS identities of ``sts/senteval`` as ``bench data download sts`` derives it from ``root``'s originals."""
    from usebench.data.manager import DataManager
    from usebench.data.sources import load_manifest

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp)
        shutil.copytree(root / "sts" / "original", copy / "sts" / "original")
        if (root / "sick").is_dir():
            shutil.copytree(root / "sick", copy / "sick")
        manager = DataManager(copy, progress=False)
        for c in load_manifest().datasets["sts"]:
            if c.derive:
                manager._derive(c, replace=True)  # the same step download and import run
        return {t: s for t, s in evaluation(copy).items() if t.startswith(("sts", "sick"))}


def training(root: Path) -> dict[str, dict[str, Any]]:
    """{task: {"sha256", "sentences"}} of each task's own unlabeled training sentences found in ``root``."""
    from usebench import tasks  # noqa: F401
    from usebench.errors import BenchError
    from usebench.registry import TASKS
    from usebench.plan.corpus import load_corpus

    out = {}
    for name in TASKS.names():
        task = TASKS.get(name)
        if name.startswith("mteb") or "+" in name or not any((root / f).is_file() for f in task.train_files()):
            continue
        try:
            corpus = load_corpus(name, [], None, root)
        except (BenchError, OSError):
            continue
        out[name] = {"sha256": corpus.sha256, "sentences": len(corpus.examples)}
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    found = evaluation(root)
    for task, splits in derived_sts(root).items():
        for split, ident in splits.items():
            if task in found and split in found[task] and found[task][split]["sha256"] != ident["sha256"]:
                found[task][split]["also"] = [ident]
    blocks = {"evaluation": found, "training": training(root)}
    if "--check" not in argv:
        print(json.dumps(blocks, indent=1, sort_keys=True))
        return 0
    from usebench.data.releases import load_releases

    pinned = load_releases()
    bad = [f"{t}/{s}" for t, splits in found.items() for s, ident in splits.items()
           if (pinned.evaluation.get(t, {}).get(s) or {}).get("sha256") != ident["sha256"]]
    print("pinned identities match the files" if not bad else f"differ from the files: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
