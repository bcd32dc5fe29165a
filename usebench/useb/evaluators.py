"""The useb kit's evaluator classes (``useb.evaluators``), with its arguments, computed by usebench's engine.

``evaluator_map`` maps each dataset name to its class, as the kit's; ``cls(semb_fn, datasets_dir).run(eval_type)``
returns the kit's keys and rounded values (usebench/useb/engine.py). The folder is checked when the evaluator is
built, as the kit's constructor does. ``AskubuntuEvaluator`` scores titles only (the paper's protocol): the kit's
``text_components='body'`` and ``'title_and_body'`` are refused, saying so.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar

from usebench.useb.engine import KitArgumentError, check_dataset_dir, check_split, dataset_root, scores
from usebench.useb.scoring import KIT_BATCH_SIZE, SembFn


class BaseEvaluator(ABC):
    """What the kit's evaluators share: ``semb_fn``, ``bsz`` texts per call, ``show`` progress bars."""

    name: ClassVar[str]
    main_metric: ClassVar[str]

    def __init__(self, semb_fn: SembFn, datasets_dir: str, bsz: int = KIT_BATCH_SIZE, show: bool = True):
        if isinstance(bsz, bool) or not isinstance(bsz, int) or bsz < 1:
            raise KitArgumentError(f"bsz must be a positive integer, got {bsz!r}")
        check_dataset_dir(datasets_dir, self.name)
        self.semb_fn, self.datasets_dir, self.bsz, self.show = semb_fn, datasets_dir, bsz, show

    def set_semb_fn(self, semb_fn: SembFn) -> None:
        self.semb_fn = semb_fn

    @property
    @abstractmethod
    def metric_names(self) -> list[str]:
        """The keys ``run`` returns, in the kit's order."""

    def run(self, eval_type: str) -> dict[str, float]:
        """The scores on ``eval_type`` (``'valid'`` or ``'test'``): ``{key: round(score * 100, 2)}``."""
        split = check_split(eval_type)
        with ExitStack() as stack:
            out = scores(self.name, self.semb_fn, split, dataset_root(self.datasets_dir, self.name, stack),
                         bool(self.show), self.bsz)
        return self._select(out)

    def _select(self, out: dict[str, float]) -> dict[str, float]:
        return out


class AskubuntuEvaluator(BaseEvaluator):
    name = "askubuntu"
    main_metric = "map_askubuntu_title"

    def __init__(self, semb_fn: SembFn, datasets_dir: str = "data-eval/askubuntu", text_components: str = "title",
                 bsz: int = KIT_BATCH_SIZE, show: bool = True):
        if text_components not in ("title_and_body", "title", "body"):
            raise KitArgumentError(f"text_components should be one of ['title_and_body', 'title', 'body'], got "
                                   f"{text_components!r}")
        if text_components != "title":
            raise KitArgumentError(f"text_components={text_components!r}: usebench scores AskUbuntu's titles only "
                                   "(the TSDAE paper's protocol); use the kit itself for bodies")
        super().__init__(semb_fn, datasets_dir, bsz, show)
        self.text_components = text_components

    @property
    def metric_names(self) -> list[str]:
        return [f"{m}_askubuntu_{self.text_components}" for m in ("map", "p@1", "p@5", "mrr")]


class CQADupStackEvaluator(BaseEvaluator):
    name = "cqadupstack"
    main_metric = "map@100_cqadupstack_avg"

    def __init__(self, semb_fn: SembFn, datasets_dir: str = "data-eval/cqadupstack", forum: str = "all",
                 bsz: int = KIT_BATCH_SIZE, show: bool = True):
        super().__init__(semb_fn, datasets_dir, bsz, show)
        with open(Path(datasets_dir) / "corpus.json", encoding="utf-8") as f:
            self.forums = list(json.load(f))
        if forum not in {*self.forums, "all"}:
            raise KitArgumentError(f"forum should be 'all' or one of {self.forums}, got {forum!r}")
        self.dnames = self.forums if forum == "all" else [forum]

    @property
    def metric_names(self) -> list[str]:
        return _part_names(("map@100", "ndcg@10"), "cqadupstack", self.dnames)

    def _select(self, out: dict[str, float]) -> dict[str, float]:
        return _one_part(out, "cqadupstack", self.dnames)  # one forum: the kit evaluates only it, no average


class TwitterParaEvaluator(BaseEvaluator):
    name = "twitterpara"
    main_metric = "ap_twitter_avg"

    def __init__(self, semb_fn: SembFn, dataset_dir: str = "data-eval/twitterpara", dname: str = "all",
                 bsz: int = KIT_BATCH_SIZE, show: bool = True):
        if dname not in ("all", "twitterurl", "pit"):
            raise KitArgumentError(f"dname should be one of ['all', 'twitterurl', 'pit'], got {dname!r}")
        super().__init__(semb_fn, dataset_dir, bsz, show)
        self.dnames = ["twitterurl", "pit"] if dname == "all" else [dname]

    @property
    def metric_names(self) -> list[str]:
        return _part_names(("ap", "spearman"), "twitter", self.dnames)

    def _select(self, out: dict[str, float]) -> dict[str, float]:
        return _one_part(out, "twitter", self.dnames)


class SciDocsEvaluator(BaseEvaluator):
    name = "scidocs"
    main_metric = "map_scidocs_cosine_avg"

    def __init__(self, semb_fn: SembFn, datasets_dir: str = "data-eval/scidocs", bsz: int = KIT_BATCH_SIZE,
                 show: bool = True):
        super().__init__(semb_fn, datasets_dir, bsz, show)
        self.dnames = ["cite", "cocite", "coview", "coread"]

    @property
    def metric_names(self) -> list[str]:
        names = [f"{m}_{d}_{s}" for d in self.dnames for m in ("map", "ndcg") for s in ("euclidean", "cosine")]
        return names + [f"{m}_{s}_avg" for m in ("map", "ndcg") for s in ("euclidean", "cosine")]


def _part_names(metrics: tuple[str, ...], tag: str, parts: list[str]) -> list[str]:
    """``{metric}_{tag}_{part}`` for every metric and part, then each metric's ``_avg`` when there are several."""
    names = [f"{m}_{tag}_{p}" for m in metrics for p in parts]
    return names + ([f"{m}_{tag}_avg" for m in metrics] if len(parts) > 1 else [])


def _one_part(out: dict[str, float], tag: str, parts: list[str]) -> dict[str, float]:
    """The kit's keys for one chosen part (a forum, a Twitter set): that part's scores only; all of them otherwise."""
    return out if len(parts) > 1 else {k: v for k, v in out.items() if k.endswith(f"_{tag}_{parts[0]}")}


evaluator_map: dict[str, Any] = {cls.name: cls for cls in (AskubuntuEvaluator, CQADupStackEvaluator,
                                                           TwitterParaEvaluator, SciDocsEvaluator)}

__all__ = ["AskubuntuEvaluator", "BaseEvaluator", "CQADupStackEvaluator", "SciDocsEvaluator", "TwitterParaEvaluator",
           "evaluator_map"]
