"""Relevant content words (TSDAE paper §7.2, Figure 4; App. H, Figure 7 per task).

For every pair (a, b) a task labels relevant, the most relevant word is

    ŵ = argmax_w ( cos(a, b) − min( cos(a \\ w, b), cos(a, b \\ w) ) )

over the words w of a or b, where ``x \\ w`` is x with every occurrence of w removed (x itself when w is not in
it). Words are the NLTK Treebank tokens TSDAE's noise uses, re-joined by the Treebank detokenizer; ŵ's POS tag is
the one it has in the sentence whose removal lowered the cosine most (a on ties). The distribution of ŵ's tag
groups (:mod:`usebench.analysis.pos_tags`) is reported per task and averaged over tasks, beside the prior: the
groups' shares among all words of the same sentences. Ties in the argmax go to the first word (a's words first,
in order). Relevant pairs: TwitterPara's positive pairs (URL n > 3 of 6, PIT 4-5), AskUbuntu's and SciDocs'
(query title, relevant candidate title); other tasks are refused by name.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from usebench.errors import ConfigError
from usebench.analysis.pos_tags import GROUPS, pos_tag, require_tagger, tag_group

TASKS_WITH_PAIRS = ("askubuntu", "cqadupstack", "scidocs", "twitterpara")


@dataclass(frozen=True)
class PairResult:
    """The most relevant word of one relevant pair."""

    a: str
    b: str
    word: str
    tag: str
    group: str
    drop: float  # cos(a, b) minus the lower of the two cosines without the word


@dataclass
class TaskDistribution:
    """Per task: the pairs' results, the share of each tag group (%) and the prior (%)."""

    task: str
    pairs: list[PairResult] = field(default_factory=list)
    shares: dict[str, float] = field(default_factory=dict)
    prior: dict[str, float] = field(default_factory=dict)


def check_pairs_task(task: str) -> None:
    """``task`` is one whose relevant pairs :func:`relevant_pairs` reads (else a ConfigError naming them)."""
    if task not in TASKS_WITH_PAIRS:
        raise ConfigError(f"content words: task {task!r} has no relevant-pair reader here (supported: "
                          f"{', '.join(TASKS_WITH_PAIRS)})")


def relevant_pairs(task: str, data: Any) -> list[tuple[str, str]]:
    """The (a, b) pairs ``task`` labels relevant, from its loaded data."""
    check_pairs_task(task)
    if task == "twitterpara":
        return [(ps.s1[i], ps.s2[i]) for ps in data.values() for i in np.flatnonzero(ps.label == 1)]
    if task == "cqadupstack":  # per forum: each query title with the title of each duplicate in its pool
        out = []
        for forum in data:
            titles = dict(zip(forum.doc_ids, forum.doc_texts))
            out += [(q, titles[d]) for q, rel in zip(forum.query_texts, forum.relevant) for d in rel if d in titles]
        return out
    queries = data.queries if task == "askubuntu" else [q for qs in data.queries.values() for q in qs]
    out = []
    for q in queries:
        texts = dict(zip(q.candidate_ids, q.candidate_texts))
        out += [(q.text, texts[c]) for c in q.candidate_ids if c in q.relevant]
    return out


def _without(words: Sequence[str], w: str) -> str:
    from usebench.methods.parts.noise import _word_tools

    return _word_tools()[1].detokenize([x for x in words if x != w])


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v / max(np.linalg.norm(u) * np.linalg.norm(v), 1e-12))


def variants(a: str, b: str) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """(words of a, words of b, candidate words in order, a without each, b without each)."""
    from usebench.methods.parts.noise import word_tokenize

    wa, wb = word_tokenize(a), word_tokenize(b)
    cands = list(dict.fromkeys([*wa, *wb]))
    return wa, wb, cands, [_without(wa, w) if w in wa else a for w in cands], \
        [_without(wb, w) if w in wb else b for w in cands]


def most_relevant(a: str, b: str, emb: dict[str, np.ndarray]) -> PairResult | None:
    """ŵ of the pair from precomputed embeddings (``emb`` holds a, b and every removal variant)."""
    wa, wb, cands, a_minus, b_minus = variants(a, b)
    if not cands:
        return None
    base = _cos(emb[a], emb[b])
    best, best_drop, from_b = 0, float("-inf"), False
    for i, w in enumerate(cands):
        ca, cb = _cos(emb[a_minus[i]], emb[b]), _cos(emb[a], emb[b_minus[i]])
        drop = base - min(ca, cb)
        if drop > best_drop:
            best, best_drop, from_b = i, drop, cb < ca
    word = cands[best]
    words = wb if (from_b and word in wb) or word not in wa else wa
    tag = pos_tag(words)[words.index(word)]
    return PairResult(a, b, word, tag, tag_group(word, tag), best_drop)


def shares(groups: Iterable[str]) -> dict[str, float]:
    """Percent of each Figure 4 group (every group present, 0 when absent)."""
    counts = Counter(groups)
    total = sum(counts.values())
    return {g: 100.0 * counts[g] / total if total else 0.0 for g in GROUPS}


def prior(pairs: Sequence[tuple[str, str]]) -> dict[str, float]:
    """The groups' shares among all words of the pairs' distinct sentences."""
    from usebench.methods.parts.noise import word_tokenize

    groups = []
    for s in dict.fromkeys(x for p in pairs for x in p):
        words = word_tokenize(s)
        groups += [tag_group(w, t) for w, t in zip(words, pos_tag(words))]
    return shares(groups)


def analyse_task(task: str, pairs: Sequence[tuple[str, str]], encoder: Any) -> TaskDistribution:
    """ŵ for every pair of one task, encoding each distinct sentence and removal variant once."""
    require_tagger()
    texts = []
    for a, b in pairs:
        _, _, _, am, bm = variants(a, b)
        texts += [a, b, *am, *bm]
    unique = list(dict.fromkeys(texts))
    emb = dict(zip(unique, encoder.encode(unique)))
    results = [r for a, b in pairs if (r := most_relevant(a, b, emb)) is not None]
    return TaskDistribution(task, results, shares(r.group for r in results), prior(pairs))


def averaged(dists: Sequence[TaskDistribution], attr: str = "shares") -> dict[str, float]:
    """Figure 4's row: the mean over tasks of each group's share (each task weighs the same)."""
    return {g: float(np.mean([getattr(d, attr)[g] for d in dists])) for g in GROUPS}


def sample_pairs(pairs: list[tuple[str, str]], n: int | None, seed: int = 0) -> list[tuple[str, str]]:
    """At most ``n`` pairs, a seeded subsample in file order (None: all)."""
    if n is None or n >= len(pairs):
        return pairs
    keep = np.sort(np.random.default_rng(seed).permutation(len(pairs))[:n])
    return [pairs[i] for i in keep]
