"""Print the requirements of this project's base install and the named extras, one per line, from pyproject.toml:
CI installs them into its extras environment while the base one is built (`pip install -r`), then the project
itself with ``--no-deps -e .``, so the two editable installs never write the source tree's metadata at once.

    python .ci/requirements.py test,mteb,ray > reqs.txt
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"pyproject.toml has no extra {', '.join(unknown)} (it has {', '.join(optional)})")
    return list(dict.fromkeys(project["dependencies"] + [r for e in extras for r in optional[e]]))


if __name__ == "__main__":
    print("\n".join(requirements([e for e in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if e])))
