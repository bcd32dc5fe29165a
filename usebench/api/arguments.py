"""The Python API's arguments, checked at the call and refused in Python's words.

The engine below speaks to the command line (``--device cpu``, ``--batch-size``); a notebook user passes
keywords. Every argument is checked here before anything is loaded, with :class:`~usebench.errors.BenchValueError`
or :class:`~usebench.errors.BenchTypeError` (so ``except ValueError`` and ``except TypeError`` catch them too),
and an engine error that still names a command-line option is reworded by :func:`python_words`.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from usebench.errors import BenchError, BenchTypeError, BenchValueError
from usebench.registry import UnknownNameError

# Command-line words in the engine's messages, and what a Python caller writes instead (longest first).
CLI_WORDS = (("use --device cpu or leave --device out", "use device='cpu' or leave device= out"),
             ("--device ", "device="), ("--train-batch-size ", "train_batch_size="),
             ("--eval-batch-size ", "eval_batch_size="), ("--max-steps", "max_steps="),
             ("--corpus-size", "corpus_size="), ("--set ", "overrides "), ("--batch-size", "batch_size="),
             ("--max-length", "max_length="),
             ("--precision", "precision="), ("--results-dir", "results_dir="), ("--data-root", "data_root="),
             ("--allow-partial", "allow_partial=True"), ("--force re-runs", "reuse=False re-runs"),
             ("--limit-seed", "limit_seed="), ("--limit", "limit="),
             ("--pooling", "pooling="))


class UnknownTaskError(UnknownNameError, ValueError):
    """A task or group name that is not registered (also a ``KeyError`` and a ``ValueError``)."""


def python_words(message: str) -> str:
    """``message`` with the command-line options it names spelt as the API's keywords."""
    for cli, py in CLI_WORDS:
        message = message.replace(cli, py)
    return message


def reword(error: BenchError) -> BenchError:
    """``error`` itself, its message in Python's words (its class, and so what catches it, unchanged)."""
    if error.args and isinstance(error.args[0], str):
        error.args = (python_words(error.args[0]), *error.args[1:])
    return error


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """``"; did you mean 'a', 'b'?"`` for the close matches of ``word``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def task_names(tasks: Any) -> list[str]:
    """``tasks`` (a name, comma-separated names, or a list of them; groups expand) as task names."""
    from usebench.registry import TASKS
    from usebench.tasks import GROUPS, expand_tasks

    items = list(tasks) if isinstance(tasks, Iterable) and not isinstance(tasks, (str, bytes, dict)) else None
    if isinstance(tasks, str):
        parts = tasks.split(",")
    elif items is not None and all(isinstance(t, str) for t in items):
        parts = items
    else:
        raise BenchTypeError(f"tasks: expected a task or group name ('useb', 'stsb') or a list of them, got "
                             f"{type(tasks).__name__} {tasks!r}; usebench.list_tasks() lists them")
    parts = [p.strip() for p in parts if p.strip()]
    if not parts:
        raise BenchValueError("tasks: no task named; e.g. tasks='useb' or tasks=['stsb', 'twitterpara'] "
                              "(usebench.list_tasks() lists them)")
    for part in parts:
        if part not in GROUPS and part not in TASKS:
            hint = did_you_mean(part, [*GROUPS, *TASKS.names()])
            raise UnknownTaskError(f"unknown task {part!r}{hint} (groups: {', '.join(list(GROUPS)[:4])}, ...; "
                                   "usebench.list_tasks() lists every task)")
    return expand_tasks(",".join(parts))


def check_count(value: Any, keyword: str) -> int | None:
    """A positive integer (or None: the default); 0, -4, 2.5 or True are refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BenchTypeError(f"{keyword} must be a positive integer or None, got {type(value).__name__} {value!r}")
    if value < 1:
        raise BenchValueError(f"{keyword} must be a positive integer or None, got {value!r}")
    return value


def check_limit(limit: Any, seed: Any) -> int | None:
    """``limit=`` (a positive integer or None) and ``limit_seed=`` (an integer >= 0) of a quick evaluation."""
    limit = check_count(limit, "limit")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise (BenchTypeError if not isinstance(seed, int) else BenchValueError)(
            f"limit_seed must be an integer >= 0, got {type(seed).__name__} {seed!r}")
    return limit


def check_split(split: Any, names: list[str]) -> str:
    """A split that at least one of the tasks has (the kit's ``'valid'`` is our ``'dev'``)."""
    from usebench.registry import TASKS

    have = sorted({s for name in names for s in TASKS.get(name).splits})
    if not isinstance(split, str):
        raise BenchTypeError(f"split must be a string, one of {have}, got {type(split).__name__} {split!r}")
    if split not in have:
        hint = "; the useb kit's 'valid' is split='dev'" if split == "valid" else did_you_mean(split, have)
        raise BenchValueError(f"split={split!r}: the tasks have the splits {have}{hint}")
    return split


def check_device(device: Any) -> str | None:
    """``device`` checked against this machine (None: the engine's default), as a string."""
    if device is None:
        return None
    if not isinstance(device, str) and type(device).__name__ != "device":
        raise BenchTypeError(f"device must be 'cpu', 'cuda' or 'cuda:N' (or a torch.device), got "
                             f"{type(device).__name__} {device!r}")
    from usebench.eval.encoder import pick_device

    try:
        return str(pick_device(str(device)))
    except BenchError as e:
        raise BenchValueError(python_words(str(e))) from None


def check_text(value: Any, keyword: str) -> str | None:
    """None or a non-empty string (a record name, a revision)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise (BenchTypeError if not isinstance(value, str) else BenchValueError)(
            f"{keyword} must be a non-empty string, got {value!r}")
    return value.strip()
