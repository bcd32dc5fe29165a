"""Write docs/papers/laptop.md's generated part (and its plot) from the committed store results/laptop/, as `bench
report --table laptop-adapt` writes it; ``--check`` only says whether the page is current (exit 1 if not).

    python scripts/laptop_page.py --from RESULTS_DIR   # copy a finished `bench reproduce laptop` store's records
    python scripts/laptop_page.py                      # after results/laptop/ changed
    python scripts/laptop_page.py --check

`--from` copies what the page and `bench report` read, and nothing that is machine-local: each unit's config.json,
method.json, stages.json, usage.json, env.json (absolute paths cut to the run's clone) and result records (with the
per-item outcome files beside them, where the store has them), each stage's config.json, log.jsonl and
checkpoint/method.json, and the cost prediction `bench reproduce` stored (.reproduce/laptop-cost.json); no weights,
train state, unit log or launcher files.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC, STORE = REPO / "docs" / "papers" / "laptop.md", REPO / "results" / "laptop"


def generated(store: Path, out: Path) -> str:
    """The page's generated part, with its plot in ``out/plots``."""
    from usebench.report.laptop import write_laptop_page
    from usebench.store import iter_results

    written = write_laptop_page(list(iter_results(store)), out)
    if not written:
        raise SystemExit(f"{store} holds no results of the laptop recipe")
    return (out / "laptop.md").read_text(encoding="utf-8")


UNIT_FILES = ("config.json", "method.json", "stages.json", "usage.json")
STORE_MARKER = ".usebench-store.json"  # usebench.store.STORE_MARKER
RECORDS = ("test.json", "dev.json")  # <run>/<task>/<split>.json; other files there are their per-item outcomes
STAGE_FILES = ("config.json", "log.jsonl", "checkpoint/method.json")


def copy_store(source: Path, store: Path) -> int:
    """Copy ``source``'s records into ``store`` (replaced); the number of result records copied."""
    from usebench.report.laptop_parts.cost import PREDICTION

    units = [d for d in sorted(source.iterdir()) if not d.name.startswith(".") and any(d.glob("*/*.json"))]
    if not units:
        raise SystemExit(f"{source} holds no run directory (expected <run id>/<task>/<split>.json)")
    marker = store / STORE_MARKER  # the committed store's marker (usebench/store/marker.py) outlives the copy
    kept = marker.read_bytes() if marker.is_file() else None
    shutil.rmtree(store, ignore_errors=True)
    if kept is not None:
        store.mkdir(parents=True)
        marker.write_bytes(kept)
    _copy(source, store, (str(PREDICTION),))
    records = 0
    for unit in units:
        _copy(unit, store / unit.name, UNIT_FILES)
        _copy_env(unit / "env.json", store / unit.name / "env.json", source.parent)
        tasks = [d for d in sorted(unit.iterdir()) if d.is_dir() and any((d / r).is_file() for r in RECORDS)]
        for task_file in sorted(p for d in tasks for p in d.iterdir() if p.is_file()):  # records, item outcomes
            _copy(unit, store / unit.name, (str(task_file.relative_to(unit)),))
            records += task_file.name in RECORDS
        for stage in json.loads((unit / "stages.json").read_text()) if (unit / "stages.json").is_file() else []:
            _copy(source / stage["home"], store / stage["home"], STAGE_FILES)
    return records


def _copy(src: Path, dst: Path, names: tuple[str, ...]) -> None:
    for name in names:
        if (src / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / name, dst / name)


def _copy_env(src: Path, dst: Path, clone: Path) -> None:
    """env.json with the clone's absolute prefix cut (argv, the interpreter): the rest (versions, git sha, threads)
    is the run's provenance."""
    if src.is_file():
        text = src.read_text(encoding="utf-8").replace(str(clone) + "/", "")
        dst.write_text(text, encoding="utf-8")


def main_check() -> int:
    """0 when docs/papers/laptop.md's generated part is what results/laptop/ gives, else 1 with a message."""
    from usebench.report.laptop import splice

    with tempfile.TemporaryDirectory() as tmp:
        doc = DOC.read_text(encoding="utf-8")
        if splice(doc, generated(STORE, Path(tmp))) != doc:
            print(f"{DOC} is not what results/laptop/ gives: run python scripts/laptop_page.py", file=sys.stderr)
            return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--from", dest="source", type=Path, help="a finished `bench reproduce laptop` store")
    args = parser.parse_args()
    from usebench.report.laptop import PLOTS, splice

    if args.source is not None:
        print(f"copied {copy_store(args.source.resolve(), STORE)} result records from {args.source} to {STORE}")
    if args.check:
        return main_check()
    with tempfile.TemporaryDirectory() as tmp:
        new = splice(DOC.read_text(encoding="utf-8"), generated(STORE, Path(tmp)))
        DOC.write_text(new, encoding="utf-8")
        (DOC.parent / "plots").mkdir(exist_ok=True)
        for name in PLOTS:
            shutil.copyfile(Path(tmp) / "plots" / name, DOC.parent / "plots" / name)
    print(f"wrote {DOC} and its plot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
