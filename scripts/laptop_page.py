"""Write docs/papers/laptop.md's generated part (and its plot) from the committed store results/laptop/, as `bench
report --table laptop-adapt` writes it; ``--check`` only says whether the page is current (exit 1 if not).

    python scripts/laptop_page.py            # after `bench reproduce laptop` refreshed results/laptop/
    python scripts/laptop_page.py --check
"""
from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    from usebench.report.laptop import splice

    with tempfile.TemporaryDirectory() as tmp:
        doc = DOC.read_text(encoding="utf-8")
        new = splice(doc, generated(STORE, Path(tmp)))
        if args.check:
            if new != doc:
                print(f"{DOC} is not what results/laptop/ gives: run python scripts/laptop_page.py", file=sys.stderr)
                return 1
            return 0
        DOC.write_text(new, encoding="utf-8")
        (DOC.parent / "plots").mkdir(exist_ok=True)
        shutil.copyfile(Path(tmp) / "plots" / "laptop-loss.png", DOC.parent / "plots" / "laptop-loss.png")
    print(f"wrote {DOC} and its plot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
