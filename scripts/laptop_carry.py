"""Carry an unfinished `bench reproduce laptop` store to the next machine session, as one committed archive.

The laptop recipe takes longer than one working session on the suite's 2-core machine, and a session's files outside
the repository do not outlive it. This packs what the page and the resume need of every *finished* unit (the files
`scripts/laptop_page.py --from` copies: records, per-item outcomes, unit and stage metadata, usage, provenance, the
stored cost prediction; no weights) and of the baselines, and leaves out every unit that is not done (its stage is
trained again after the resume). Resuming needs the commit the run was pinned at: the archive's name holds it, and
its units' records name it too.

    python scripts/laptop_carry.py --from RESULTS_DIR          # -> results/laptop-carry/<commit>.tar.gz
    # the next session, from a clone pinned at that commit:
    mkdir -p RUN && tar -xzf results/laptop-carry/<commit>.tar.gz -C RUN && bench reproduce laptop --results-dir RUN
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CARRY = REPO / "results" / "laptop-carry"


def unit_states(source: Path) -> dict[str, str]:
    """Each planned unit's state as `bench status` reads it from the store alone (run id -> done, running, ...)."""
    out = subprocess.run([sys.executable, "-m", "usebench", "status", "--results-dir", str(source), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return {u["run_id"]: u["state"] for u in json.loads(out)["units"]}


def carry(source: Path, out: Path, states: Mapping[str, str]) -> list[str]:
    """Write ``out`` (a .tar.gz) with ``source``'s finished units and baselines; the run ids carried. A run directory
    that `bench status` does not list as a unit is a baseline (scored, never trained) and is carried."""
    sys.path.insert(0, str(REPO / "scripts"))
    from laptop_page import copy_store

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        copy_store(source, store)
        for unit in [d for d in store.iterdir() if d.is_dir() and not d.name.startswith(".")]:
            if states.get(unit.name, "done") != "done":
                shutil.rmtree(unit)
        used = {s["home"] for u in store.iterdir() if (u / "stages.json").is_file()
                for s in json.loads((u / "stages.json").read_text(encoding="utf-8"))}
        for stage in (store / ".stages").glob("*") if (store / ".stages").is_dir() else []:
            if f".stages/{stage.name}" not in used:
                shutil.rmtree(stage)
        carried = sorted(d.name for d in store.iterdir() if d.is_dir() and not d.name.startswith("."))
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".part")
        with tarfile.open(partial, "w:gz") as tar:
            for path in sorted(store.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=str(path.relative_to(store)))
        partial.replace(out)  # atomic: a killed packing leaves no half archive under the real name
    return carried


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="the run's results store")
    args = parser.parse_args()
    states = unit_states(args.source)
    shas = {json.loads(p.read_text(encoding="utf-8")).get("git_sha") for p in args.source.glob("*/*/test.json")}
    if len(shas) != 1:
        raise SystemExit(f"{args.source}: results from {len(shas)} commits ({', '.join(map(str, shas))}): "
                         "a carried run comes from one pinned commit")
    sha = str(next(iter(shas)))[:7]
    out = CARRY / f"{sha}.tar.gz"
    carried = carry(args.source, out, states)
    done = sum(states.get(r) == "done" for r in carried)
    print(f"wrote {out.relative_to(REPO)} ({out.stat().st_size / 1e6:.1f} MB): {done} of {len(states)} units done, "
          f"{len(carried) - done} baseline(s); resume from a clone pinned at {sha}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
