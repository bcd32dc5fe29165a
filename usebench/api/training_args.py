"""``usebench.train``'s arguments checked at the call, in Python's words, and turned into what `bench run` plans
from: its shared grid options (usebench/cli/run.py ``GridArgs``) and its ``RunOptions``. A corpus in memory (a list
of sentences, a Hugging Face ``Dataset``) becomes a file named by its content under ``<results_dir>/.corpora/``:
the planner identifies a corpus by its content, and `bench run --corpus` on that file trains the same units."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from usebench.errors import BenchTypeError, BenchValueError

if TYPE_CHECKING:
    from usebench.cli.run import GridArgs, Launch
    from usebench.plan.specs import RunOptions

class TrainCall:
    """``usebench.train``'s arguments as given, in one object (see its docstring)."""

    def __init__(self, *values: Any):
        (self.methods, self.tasks, self.corpus, self.model, self.preset, self.overrides, self.seeds, self.eval_tasks,
         self.results_dir, self.data_root, self.device, self.max_steps, self.corpus_size, self.setting, self.split,
         self.train_batch_size, self.eval_batch_size, self.force, self.strict, self.show_progress) = values


CORPORA_DIR = ".corpora"  # hidden: a store's readers skip it (usebench/store.py iter_results)
TEXT_COLUMNS = ("text", "sentence", "sentences")  # a Dataset's column taken as its text, in this order


def check_call(call: TrainCall) -> GridArgs:
    """The grid options of ``call`` (each value checked; what `bench run`'s prelude checks then is its own)."""
    from usebench.api.arguments import check_count, check_device, task_names
    from usebench.cli.launching import LAUNCH_KEYS
    from usebench.cli.run import GridArgs, batch_sizes
    from usebench.paths import default_data_root, default_results_dir

    names(call.methods, "methods")
    task_names(call.tasks)
    if call.eval_tasks is not None:
        task_names(call.eval_tasks)
    for keyword in ("max_steps", "corpus_size", "train_batch_size", "eval_batch_size"):
        check_count(getattr(call, keyword), keyword)
    for keyword in ("preset", "setting", "split"):
        _text_or_none(getattr(call, keyword), keyword)
    check_device(call.device)
    seeds(call.seeds)
    batch, overrides = batch_sizes(call.eval_batch_size, None, call.train_batch_size, override_items(call.overrides))
    return GridArgs(model=_model(call.model), max_steps=call.max_steps, overrides=overrides,
                    device=None if call.device is None else str(call.device), batch_size=batch,
                    strict=bool(call.strict), force=bool(call.force), nli_sts_model=None, plan_out_path=None,
                    list_units=False, step_times=None, launcher_config=None,
                    data_root=_path(call.data_root, "data_root") or Path(default_data_root()),
                    results_dir=_path(call.results_dir, "results_dir") or Path(default_results_dir()),
                    launch={k: None for k in LAUNCH_KEYS})


def run_options(call: TrainCall, launch: Launch, grid: GridArgs) -> RunOptions:
    """`bench run`'s options for ``call`` (after the prelude: model and override paths made absolute)."""
    from usebench.plan.specs import RunOptions

    count, listed = seeds(call.seeds)
    return RunOptions(methods=tuple(names(call.methods, "methods")), tasks=",".join(names(call.tasks, "tasks")),
                      eval_tasks=",".join(names(call.eval_tasks, "eval_tasks")) if call.eval_tasks else None,
                      seeds=count, seed_list=listed, preset=call.preset, model=launch.model,
                      corpus=corpus_files(call.corpus, launch.results_dir), corpus_size=call.corpus_size,
                      max_steps=call.max_steps, overrides=launch.overrides, split=call.split, force=grid.force,
                      strict=grid.strict, device=grid.device, batch_size=grid.batch_size,
                      show_progress=bool(call.show_progress), setting=call.setting)


def names(value: Any, keyword: str) -> list[str]:
    """A name, comma-separated names or a list of names, as a non-empty list."""
    if isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        parts = list(value)
        if not all(isinstance(p, str) for p in parts):
            raise BenchTypeError(f"{keyword}: expected names (strings), got {parts!r}")
    else:
        raise BenchTypeError(f"{keyword}: expected a name, comma-separated names or a list of them, got "
                             f"{type(value).__name__} {value!r}")
    out = [p.strip() for p in parts if p.strip()]
    if not out:
        raise BenchValueError(f"{keyword}: nothing named")
    return out


def seeds(value: Any) -> tuple[int, tuple[int, ...]]:
    """``seeds=5`` -> (5, ()) (seeds 0..4); ``seeds=[1, 7, 42]`` -> (3, (1, 7, 42)), as `bench run --seeds`."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise BenchValueError(f"seeds must be a count >= 1 or a list of seeds, got {value!r}")
        return value, ()
    listed = list(value) if isinstance(value, Iterable) and not isinstance(value, (str, bytes)) else None
    if not listed or not all(isinstance(s, int) and not isinstance(s, bool) for s in listed):
        raise BenchTypeError(f"seeds must be a count >= 1 or a non-empty list of integer seeds, got {value!r}")
    if len(set(listed)) != len(listed):
        raise BenchValueError(f"seeds {listed!r}: a seed is listed twice")
    return len(listed), tuple(listed)


def override_items(overrides: Any) -> tuple[str, ...]:
    """``{"lr": 1e-4, "simcse.temperature": 0.1}`` or ``["lr=1e-4"]`` as `--set` items (typed later, by the config)."""
    if overrides is None:
        return ()
    if isinstance(overrides, Mapping):
        return tuple(f"{k}={_value_text(v)}" for k, v in overrides.items())
    items = [overrides] if isinstance(overrides, str) else list(overrides) if isinstance(overrides, Iterable) else None
    if items is None or not all(isinstance(i, str) and "=" in i for i in items):
        raise BenchTypeError(f"overrides: expected a dict {{key: value}} or KEY=VALUE strings, got {overrides!r}")
    return tuple(items)


def _value_text(value: Any) -> str:
    """A Python value as `--set` spells it: None -> none, True -> true, (1, 2) -> 1,2."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_value_text(v) for v in value)
    return str(value)


def corpus_files(corpus: Any, results_dir: Path) -> tuple[Path, ...]:
    """``corpus`` as the files `bench run --corpus` takes: a file, files, ``"allnli"``, or sentences in memory
    written to a file named by their content (a list of strings, a ``datasets.Dataset``)."""
    from usebench.data.nli_sentences import is_named_corpus

    if corpus is None:
        return ()
    if isinstance(corpus, (str, Path)):
        if is_named_corpus(str(corpus)):
            return (Path(str(corpus)),)
        return (_existing(corpus),)
    if _is_dataset(corpus):
        return (write_corpus(dataset_sentences(corpus), results_dir, "dataset"),)
    items = list(corpus) if isinstance(corpus, Sequence) else None
    if items and all(isinstance(i, Path) for i in items):
        return tuple(_existing(p) for p in items)
    if items and all(isinstance(i, str) for i in items):
        return (write_corpus(items, results_dir, "sentences"),)
    raise BenchTypeError(f"corpus: expected a file, a list of files (Path), 'allnli', a non-empty list of sentences "
                         f"or a datasets.Dataset, got {type(corpus).__name__}")


def _existing(path: Any) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise BenchValueError(f"corpus: no file at {p} (a file holds one sentence per line; pass a list of "
                              "sentences for text in memory)")
    return p.resolve()


def _is_dataset(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "datasets" and hasattr(obj, "column_names")


def dataset_sentences(dataset: Any) -> list[str]:
    """A ``datasets.Dataset``'s text column: ``text`` (or ``sentence``, ``sentences``), else its one string column."""
    columns = list(dataset.column_names)
    chosen = next((c for c in TEXT_COLUMNS if c in columns), None)
    if chosen is None:
        strings = [c for c in columns if getattr(dataset.features[c], "dtype", None) in ("string", "large_string")]
        if len(strings) != 1:
            raise BenchValueError(f"corpus: a Dataset with the columns {columns}: name its text column 'text' (or "
                                  "pass dataset['your_column'], a list of sentences)")
        chosen = strings[0]
    return list(dataset[chosen])


def write_corpus(sentences: Sequence[str], results_dir: Path, kind: str) -> Path:
    """``<results_dir>/.corpora/<kind>-<sha256 of the text, 16>.txt``, one sentence per line, written once
    (atomically); a sentence holding a line break would become two, so it is refused."""
    for i, s in enumerate(sentences):
        if "\n" in s or "\r" in s:
            raise BenchValueError(f"corpus[{i}] holds a line break: one sentence per item ({s[:60]!r})")
    text = "".join(s + "\n" for s in sentences)
    path = Path(results_dir) / CORPORA_DIR / f"{kind}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}.txt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path


def _model(model: Any) -> str | None:
    if model is None or isinstance(model, (str, Path)):
        return None if model is None else str(model)
    raise BenchTypeError(f"model: expected a name or a path (an HF id, a directory, 'minilm'), got "
                         f"{type(model).__name__}; a model in memory is for usebench.evaluate, not for training")


def _path(value: Any, keyword: str) -> Path | None:
    if value is None or isinstance(value, (str, Path)):
        return None if value is None else Path(value).expanduser()
    raise BenchTypeError(f"{keyword} must be a path, got {type(value).__name__} {value!r}")


def _text_or_none(value: Any, keyword: str) -> None:
    if value is not None and not isinstance(value, str):
        raise BenchTypeError(f"{keyword} must be a string or None, got {type(value).__name__} {value!r}")
