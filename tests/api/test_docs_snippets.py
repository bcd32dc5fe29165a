"""docs/python.md's Python snippets, executed in order in one namespace (issue 40: they were only parsed).

They run as a reader would run them, with three stand-ins that keep the test offline and fast: the data root is
the test fixtures ($BENCH_DATA), ``bert-base-uncased`` is the tiny random BERT of tests/conftest.py, and the kit's
``data-eval`` folder in the working directory is the fixtures' copy. The synopsis' placeholders (``model_or_fn``,
``semb_fn``) are small functions defined here.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def snippets() -> list[str]:
    return FENCE.findall((ROOT / "docs" / "python.md").read_text(encoding="utf-8"))


def semb_fn(texts: list[str]) -> torch.Tensor:
    return torch.tensor([[len(t), t.count("e") + 1.0, t.count("a") + 1.0] for t in texts])


def test_the_python_pages_snippets_run(tiny_bert_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_DATA", str(ASSETS))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data-eval").symlink_to(ASSETS / "useb" / "data-eval", target_is_directory=True)
    found = snippets()
    assert len(found) >= 6
    namespace = {"model_or_fn": lambda texts: semb_fn(texts).numpy(), "semb_fn": semb_fn, "np": np}
    for i, code in enumerate(found):
        code = code.replace('"bert-base-uncased"', repr(str(tiny_bert_dir)))
        exec(compile(code, f"docs/python.md snippet {i + 1}", "exec"), namespace)
    table = namespace["usebench"].table(namespace["usebench"].load_results("results/"))
    assert len(table) >= 3  # the function, the same model by name, the synopsis' model: apart
    assert (tmp_path / "results.detailed.json").is_file()  # the kit's run() wrote its files
