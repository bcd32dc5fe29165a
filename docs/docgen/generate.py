"""Run every generator: the pages MkDocs adds to the site, and how many reference entries they hold.

``python docs/docgen/generate.py [OUT]`` prints the counts (and writes the files under OUT) without MkDocs.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository and docs/ must be importable
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

from docgen import catalog_ref, diagram, example_report, methods_ref, tasks_ref  # noqa: E402
from docgen.common import Generated  # noqa: E402

GENERATORS = (tasks_ref, methods_ref, catalog_ref, diagram, example_report)


def generate_all() -> tuple[Generated, dict[str, float]]:
    """Every generated file, the entry counts, and the seconds each generator took."""
    out, seconds = Generated(), {}
    for gen in GENERATORS:
        t0 = time.perf_counter()
        out.merge(gen.generate())
        seconds[gen.__name__.rsplit(".", 1)[-1]] = time.perf_counter() - t0
    return out, seconds


def main() -> None:
    """Write the generated files under the folder given as the first argument, if any; print the counts."""
    gen, seconds = generate_all()
    if len(sys.argv) > 1:
        root = Path(sys.argv[1])
        for rel, content in gen.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    for name, n in gen.entries.items():
        print(f"{n:6d}  {name}")
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))


if __name__ == "__main__":
    main()
