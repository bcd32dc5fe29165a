"""An example report page: the docs build writes a small synthetic results store with the real record schema
(``tests/report/synthetic_results.py``), runs the real ``bench report`` command on it, and shows the Markdown
tables and PNG plots it wrote. Every number of "ours" on that page is synthetic and says so; the published
numbers beside them are the papers' (``paper_reference.json``)."""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import numpy as np

from docgen.common import Generated, note

PAGE, ASSETS = "examples/report.md", "examples/report"
MODEL = "synthetic-example"  # the base model every synthetic row names, so no row passes for a real run
SEEDS = 3
# method -> (pooling, USEB level, STS level): where the synthetic scores of that method sit (0-1)
METHODS = {"tsdae": ("cls", 0.62, 0.68), "simcse": ("cls", 0.58, 0.74), "ct": ("mean", 0.59, 0.72),
           "mlm": ("mean", 0.55, 0.60), "bertflow": ("flow", 0.54, 0.66)}
TABLES = ("paper-table2", "sts-table")
STS = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")


def write_store(root: Path, seed: int = 0) -> int:
    """The synthetic store: every method x seed on the USEB and STS tasks, with a training log each."""
    from tests.report.synthetic_results import add_result, useb_scores

    rng = np.random.default_rng(seed)
    n = 0
    for method, (pooling, useb, sts) in METHODS.items():
        for s in range(SEEDS):
            jitter = lambda level: float(np.clip(level + rng.normal(0, 0.01), 0, 1))
            parts = useb_scores(jitter(useb), jitter(useb - 0.35), (jitter(useb + 0.12), jitter(useb + 0.05)),
                                tuple(jitter(useb + 0.12) for _ in range(4)))
            paths = [add_result(root, method, s, task, scores, model=MODEL, pooling=pooling)
                     for task, scores in parts.items()]
            paths += [add_result(root, method, s, task, {"spearman": jitter(sts)}, model=MODEL, pooling=pooling,
                                 group="sts") for task in STS]
            write_log(paths[0].parent.parent / "log.jsonl", rng)
            n += len(paths)
    return n


def write_log(path: Path, rng: np.random.Generator) -> None:
    """A decaying training loss, one line per 50 steps, as ``usebench/train/trainlog.py`` writes it."""
    start = rng.uniform(5.0, 7.0)
    lines = [{"step": step, "loss": start * np.exp(-step / 600) + 1.5 + rng.normal(0, 0.05), "lr": 3e-5}
             for step in range(50, 2001, 50)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def run_report(store: Path, out: Path) -> str:
    """`bench report` on the store, through click as a user would call it; returns what it printed."""
    from click.testing import CliRunner

    from usebench.cli.main import main

    args = ["report", "--results-dir", str(store), "--out", str(out), "--table", ",".join(TABLES),
            "--format", "md,csv"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"bench {' '.join(args)} exited {result.exit_code}: {result.output}")
    return result.output


def table_section(markdown: str) -> str:
    """A report table's Markdown: our table shown, the comparison with the paper and the published tables folded."""
    parts = re.split(r"(?m)^(?=### )", markdown.strip())
    ours, rest = parts[0] if parts[0].strip() else parts[1], parts[1:] if parts[0].strip() else parts[2:]
    if not rest:
        return ours + "\n"
    folded = "\n".join(rest).replace("### ", "#### ").replace("\n", "\n    ")
    return f'{ours}\n??? note "Ours vs the paper, and the published tables"\n\n    {folded}\n'


def page(out: Path, n_results: int) -> tuple[str, dict[str, bytes]]:
    assets = {f"{ASSETS}/{p.name}": p.read_bytes() for p in sorted((out / "plots").glob("*.png"))}
    tables = [table_section((out / f"{t}.md").read_text(encoding="utf-8")) for t in TABLES
              if (out / f"{t}.md").is_file()]
    images = [f"![{Path(a).stem}](report/{Path(a).name})\n" for a in assets]
    text = "\n".join([
        "---\nhide:\n  - toc\n---\n",  # the report's tables need the width
        "# Example report\n",
        note("Built from a synthetic results store the docs build writes, by the real `bench report` code.",
             "example_report.py"),
        "!!! warning \"Synthetic numbers\"\n"
        f"    Every score of ours on this page is made up ({len(METHODS)} methods x {SEEDS} seeds x "
        f"{4 + len(STS)} tasks = {n_results} result files drawn from a fixed random seed, base model "
        f"`{MODEL}`). They show the layout of a report, not a result; the published numbers beside them are "
        "the papers' own.\n",
        "The page is what this command writes, run on that store (the Markdown tables, and the plots as PNG; "
        "`--format html` writes the same as one self-contained `report.html`):\n",
        f"```bash\nbench report --results-dir STORE --out OUT --table {','.join(TABLES)} --format md,csv\n```\n",
        tables[0] if tables else "",
        "### Plots\n",
        *images,
        *tables[1:],
    ])
    return text, assets


def generate() -> Generated:
    with tempfile.TemporaryDirectory(prefix="usebench-docs-") as tmp:
        store, out = Path(tmp) / "results", Path(tmp) / "reports"
        n = write_store(store)
        run_report(store, out)
        text, assets = page(out, n)
    return Generated({PAGE: text, **assets}, {"example result files": n, "example plots": len(assets)})
