"""A fake SLURM on the PATH for launcher tests: ``sbatch`` keeps each job script and answers with the next job id,
``scontrol show config`` tells a MaxArraySize, ``sacct`` reports the states written in a file; ``srun`` and
``scancel`` exist and do nothing. No job ever runs."""
from __future__ import annotations

import os
import sys
from pathlib import Path

SBATCH = """import pathlib, sys
state = pathlib.Path({state!r})
n = int((state / "next_id").read_text())
(state / "next_id").write_text(str(n + 1))
(state / f"script-{{n}}.sh").write_text(pathlib.Path(sys.argv[-1]).read_text())
print(f"Submitted batch job {{n}}")
"""
SCONTROL = """import pathlib, sys
if sys.argv[1:3] == ["show", "config"]:
    print("ClusterName = fake\\nMaxArraySize            = " + pathlib.Path({state!r}, "max_array").read_text())
"""
SACCT = """import pathlib, sys
ids = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "-j"]
print("JobID|State|NodeList")
for line in pathlib.Path({state!r}, "states").read_text().splitlines():
    job = line.split("|")[0]
    if job in ids or job.split("_")[0] in ids:  # like sacct: -j 500 lists the array's tasks 500_0, 500_1...
        print(line)
"""


def install(tmp: Path, monkeypatch, first_id: int = 500, max_array: int = 1001) -> Path:
    """Put the fake tools first on the PATH; returns the state folder (``script-<id>.sh``, ``states``)."""
    bin_dir, state = tmp / "fake-slurm-bin", tmp / "fake-slurm-state"
    bin_dir.mkdir()
    state.mkdir()
    (state / "next_id").write_text(str(first_id))
    (state / "max_array").write_text(str(max_array))
    (state / "states").write_text("")
    for name, body in (("sbatch", SBATCH), ("scontrol", SCONTROL), ("sacct", SACCT), ("srun", ""), ("scancel", "")):
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n" + body.format(state=str(state)))
        path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return state


def set_states(state: Path, states: dict[str, str]) -> None:
    """What sacct reports: job id -> state (PENDING, RUNNING, FAILED, ...)."""
    (state / "states").write_text("".join(f"{job}|{s}|node1\n" for job, s in states.items()))
