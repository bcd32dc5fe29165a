"""What a notebook user meets on bad input to the Python API (issue 40): each call, what it raised (type, whether a
ValueError/TypeError, how many frames deep, the message's length and start) or what it returned.

    python scripts/api_bad_inputs.py                          # this checkout
    PYTHONPATH=/tmp/before python scripts/api_bad_inputs.py   # another checkout (a git worktree), the same calls

Needs $BENCH_DATA with TwitterPara (the calls that get past their arguments score it with a cheap function).
"""
from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable

import numpy as np


def fn(texts: list[str]) -> np.ndarray:
    """A cheap stand-in encoder: three numbers per text."""
    return np.array([[len(t) % 7, len(t.split()) % 5, 1.0] for t in texts], dtype=np.float32)


class EncodeOnly:
    """The sentence-transformers / MTEB protocol: only ``.encode``."""

    def encode(self, sentences: list[str], **kwargs: object) -> np.ndarray:
        return fn(sentences)


def raises(texts: list[str]) -> np.ndarray:
    raise RuntimeError("my model broke")


def returns_none(texts: list[str]) -> None:
    return None


def calls() -> list[tuple[str, Callable[[], object]]]:
    import usebench
    from transformers import BertConfig, BertModel

    bare = BertModel(BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32))
    empty = tempfile.mkdtemp()
    quiet = {"name": "x", "show_progress": False}
    return [
        ("evaluate(fn, None)", lambda: usebench.evaluate(fn, None, name="x")),
        ("evaluate(fn, ['twitterpara'], batch_size=0)",
         lambda: usebench.evaluate(fn, ["twitterpara"], batch_size=0, **quiet)),
        ("evaluate(fn, ['twiterpara'])", lambda: usebench.evaluate(fn, ["twiterpara"], name="x")),
        ("evaluate(EncodeOnly(), ['twitterpara'])", lambda: usebench.evaluate(EncodeOnly(), ["twitterpara"], **quiet)),
        ("evaluate(BertModel(...), ['twitterpara'])", lambda: usebench.evaluate(bare, ["twitterpara"], **quiet)),
        ("evaluate(raising fn, ['twitterpara'])", lambda: usebench.evaluate(raises, ["twitterpara"], **quiet)),
        ("evaluate(fn returning None, ...)", lambda: usebench.evaluate(returns_none, ["twitterpara"], **quiet)),
        ("evaluate(fn, ..., device='gpu0')", lambda: usebench.evaluate(fn, ["twitterpara"], device="gpu0", **quiet)),
        ("load_results(a file)", lambda: usebench.load_results("/etc/hostname")),
        ("load_results(an empty folder)", lambda: usebench.load_results(empty)),
        ("useb.run_on('nope', fn)", lambda: usebench.useb.run_on("nope", fn)),
    ]


def describe(call: Callable[[], object]) -> str:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = call()
    except Exception as e:  # noqa: BLE001  (what the caller meets is the measurement)
        frames, tb = 0, e.__traceback__
        while tb:
            frames, tb = frames + 1, tb.tb_next
        return (f"{type(e).__name__} (ValueError: {isinstance(e, ValueError)}, TypeError: {isinstance(e, TypeError)}, "
                f"{frames} frames, {len(str(e))} characters): {str(e)[:110]!r}")
    shown = [str(w.message)[:80] for w in caught if not issubclass(w.category, DeprecationWarning)][:1]
    return f"returned {type(out).__name__} {getattr(out, 'shape', '')}; warnings: {shown or 'none'}"


def main() -> None:
    import usebench

    print(f"usebench from {usebench.__file__}")
    for label, call in calls():
        print(f"{label} | {describe(call)}")


if __name__ == "__main__":
    main()
