"""Data roots for run tests: the grid fixtures (conftest.grid_root) plus small unlabeled training corpora."""
from __future__ import annotations

import random
import shutil
from collections.abc import Iterable
from pathlib import Path


WORDS = "river house dog night ocean piano queen sun tree kite lemon grape island jungle kernel driver".split()


def root_with_train_corpora(grid_root: Path, root: Path, tasks: Iterable[str]) -> Path:
    """``grid_root`` copied to ``root`` plus a small unlabeled ``train.txt`` (seeded by the task's name, the USEB
    release's layout) for each of ``tasks``."""
    shutil.copytree(grid_root, root, dirs_exist_ok=True)
    for task in tasks:
        rng = random.Random(task)
        folder = root / "useb" / "data-train" / task / "unsupervised"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 10))) for _ in range(24)]
        (folder / "train.txt").write_text("\n".join(dict.fromkeys(lines)) + "\n", encoding="utf-8")
    return root
