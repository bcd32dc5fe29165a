"""Labeled examples as the supervised stages check and batch them: each example's shape checked and its texts
clipped (:func:`check_example`), a fast path that knows a whole set clean without checking one by one
(:func:`plainly_clean`, :func:`all_clean`: for planning), and an MNRL batch without repeated texts
(:func:`without_repeats`)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from usebench.errors import BenchError


def check_example(who: str, i: int, ex: Any, *, graded: bool, hard_negatives: bool, max_chars: int) -> tuple:
    """Example ``i`` as the supervised stages train on it: its texts stripped and clipped to ``max_chars`` (pairs,
    triplets unless ``hard_negatives`` is off, or graded: two texts and a float label); anything else is a BenchError
    naming ``who`` (the method), the example and what was expected."""
    seq = isinstance(ex, (tuple, list))
    texts = list(ex[:2] if graded else ex) if seq else []
    ok = seq and len(ex) in ((3,) if graded else (2, 3)) and all(isinstance(t, str) and t.strip() for t in texts)
    if ok and graded:
        y = ex[2]
        ok = isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y) and -1.0 <= y <= 1.0
    if not ok:
        want = "(sentence1, sentence2, label in [-1, 1])" if graded \
            else "(anchor, positive) or (anchor, positive, negative) with non-blank texts"
        raise BenchError(f"{who}: labeled example {i} is {ex!r}; expected {want}")
    texts = [t.strip()[:max_chars] for t in texts]
    if graded:
        return (*texts, float(ex[2]))
    return tuple(texts if hard_negatives else texts[:2])


def plainly_clean(examples: list[Any], graded: bool, hard_negatives: bool) -> bool:
    """True only if every example is a plain tuple or list that :func:`check_example` accepts and the checked
    examples share one width: non-blank ``str`` texts, pairs or triplets (graded: two texts and an ``int`` or
    ``float`` label, finite, in [-1, 1]). False for anything less plain (a ``str`` subclass, a numpy label), which
    the caller then checks one by one."""
    if not all(type(ex) is tuple or type(ex) is list for ex in examples):
        return False
    widths = set(map(len, examples))
    if graded:
        labels = [ex[2] for ex in examples] if widths == {3} else None
        if labels is None or not all(type(y) is float or type(y) is int for y in labels):
            return False
        try:
            values = np.asarray(labels, dtype=np.float64)
        except OverflowError:  # an int beyond float's range: check_example says what it makes of it
            return False
        if not (np.isfinite(values).all() and (values >= -1.0).all() and (values <= 1.0).all()):
            return False
        texts = [t for ex in examples for t in ex[:2]]
    else:
        if not widths <= {2, 3} or (hard_negatives and len(widths) > 1):
            return False
        texts = [t for ex in examples for t in ex]
    return all(type(t) is str for t in texts) and all(map(str.strip, texts))


def all_clean(examples: list[Any], check: Callable[[int, Any], tuple], graded: bool, hard_negatives: bool) -> bool:
    """Whether ``check`` (:func:`check_example` with a method's settings) accepts every example and finds them of one
    width; False says nothing more: the planner then checks each seed's examples itself."""
    if plainly_clean(examples, graded, hard_negatives):
        return True  # what check would find, example by example, at a tenth of its cost
    try:
        return len({len(check(i, ex)) for i, ex in enumerate(examples)}) <= 1
    except BenchError:
        return False


def without_repeats(examples: list[tuple]) -> list[tuple]:
    """The batch minus every example one of whose texts (stripped, lowercased) an earlier example holds."""
    seen: set[str] = set()
    out = []
    for ex in examples:
        keys = [t.strip().lower() for t in ex if isinstance(t, str)]
        if out and any(k in seen for k in keys):
            continue
        seen.update(keys)
        out.append(ex)
    return out
