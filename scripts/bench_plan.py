"""Time the planner: `bench reproduce PAPER --dry-run` for the four recipes and one `bench run --dry-run` grid, each
in a fresh process, on a release-sized synthetic data root (issue 37: `bench reproduce tsdae --dry-run` plans only,
yet took 500-600 s on release-sized data).

    python scripts/bench_plan.py                                  # build the root once (~1-2 min), time all five
    python scripts/bench_plan.py --ref HEAD --json before.json    # the committed planner (git archive), not the tree
    python scripts/bench_plan.py --only paser,run --json after.json
    python scripts/bench_plan.py --profile 25 --only paser        # cProfile: top 25 by cumulative and by own time
    python scripts/bench_plan.py --scale 0.001 --only paser       # a quick check on a tiny root
    python scripts/bench_plan.py --list-root                      # the root's files, rows and where each count is from

The root (``scripts/plan_root.py``: every file the recipes and the grid read at plan time, with the releases' row
counts x ``--scale``; a config-only Hugging Face cache for every hub model they name; a WordNet stub where this
machine has none) is built once into ``--root`` (default ``/tmp/usebench-plan-root/scale-<F>``) and reused while
its marker records the same scale. Each command runs as ``python -m usebench ...`` with ``BENCH_DATA`` and
``--data-root`` on the root, the hub cache offline (``HF_HUB_OFFLINE=1``) and an empty throwaway ``--results-dir``
(nothing is reused from a store).

Output, per command: exit code, wall and CPU seconds (this process' children, ``resource.getrusage``), the units
the dry run says it planned, units per second, and how many recipe runs it reported BLOCKED (a missing extra such as
mteb or pyserini, or a corpus smaller than one batch: not planned) or CANNOT PLAN. A command that exits non-zero is
a finding: the tail of its stderr is printed and the script exits 1. Every command's stdout and stderr are kept
under ``<root>/logs/``, profiles under ``<root>/profiles/``.

The planner keeps facts it derives from large files between processes (``usebench/data/digests.py``). Each command
is timed twice by default (``--digests cold,warm``): cold, from no digest file, as the first plan on a machine; warm,
from the file that run wrote, as every later plan (after a recipe edit too; a change to usebench's code starts
cold again). The digest file lives under ``<root>/digests/``, one per source tree.

``--ref REF`` times the ``usebench`` package of a commit instead of the working tree: ``git archive REF usebench``
is unpacked once under ``<root>/src/`` and the commands start there (the current folder comes first on
``sys.path``, before the editable install; the script prints where ``usebench`` was imported from). Timing the
working tree, the script warns when ``usebench/`` changed while the commands ran.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import pstats
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import plan_root

REPO = Path(__file__).resolve().parents[1]
GRID = ["run", "--dry-run", "--methods", "tsdae,simcse,ct,mlm,bertflow", "--setting", "all", "--tasks", "useb",
        "--seeds", "5", "--preset", "paper"]
COMMANDS = {  # row name -> `bench` arguments ({glove}: the root's synthetic GloVe file, the tsdae recipe's --glove)
    "tsdae": ["reproduce", "tsdae", "--dry-run", "--glove", "{glove}"],
    "denosent": ["reproduce", "denosent", "--dry-run"],
    "paser": ["reproduce", "paser", "--dry-run"],
    "thesis": ["reproduce", "thesis", "--dry-run"],
    "run": GRID,
}
UNITS = (re.compile(r"all tables: ([\d,]+) distinct unit\(s\)"),  # bench reproduce --dry-run
         re.compile(r"bench run --dry-run: ([\d,]+) unit\(s\)"))  # bench run --dry-run (the table's title)


@dataclass
class Row:
    """One timed command."""

    name: str
    argv: list[str]
    exit: int | str  # the exit status, or "timeout"
    wall_s: float
    cpu_s: float
    units: int | None
    blocked: int
    cannot_plan: int
    other_cpu_s: float | None = None  # what other processes used meanwhile: a shared machine skews wall_s
    attempt: int = 1
    digests: str = ""  # cold: an empty digest file (the first plan on a machine); warm: one an earlier plan wrote
    stderr_tail: str = ""
    refused: list[str] = field(default_factory=list)  # "<run's command>: CANNOT PLAN: <why>", from stdout

    @property
    def units_per_s(self) -> float | None:
        """Units planned per wall second."""
        return self.units / self.wall_s if self.units is not None and self.wall_s > 0 else None


def bench_argv(name: str, root: Path, results: Path) -> list[str]:
    """The `bench` arguments of one row on ``root`` (data root given twice: ``--data-root`` and BENCH_DATA)."""
    glove = str(root / "data/inputs/glove.6B.300d.txt")
    return [a.replace("{glove}", glove) for a in COMMANDS[name]] + ["--data-root", str(root / "data"),
                                                                    "--results-dir", str(results)]


def source_tree(ref: str | None, root: Path) -> Path:
    """The folder whose ``usebench`` the commands import: this repository, or REF's package unpacked (once)."""
    if ref is None:
        return REPO
    sha = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    if sha == "?":
        raise SystemExit(f"--ref {ref}: not a commit of {REPO}")
    dest = root / "src" / sha[:12]
    if not (dest / "usebench/__init__.py").is_file():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        archive = subprocess.run(["git", "archive", sha, "usebench"], cwd=REPO, capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp)
        tmp.rename(dest)
    return dest


def child_env(root: Path, source: Path) -> dict[str, str]:
    """This environment, the root's (data, hub stub, WordNet stub), ``source`` first on the import path, and the
    planner's digests in the root (:func:`digest_file`)."""
    path = os.pathsep.join(p for p in (str(source), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, **plan_root.environment(root), "PYTHONPATH": path,
            "BENCH_DIGESTS": str(digest_file(root, source))}


def digest_file(root: Path, source: Path) -> Path:
    """The planner's digests (usebench/data/digests.py) of the code in ``source``: one file per source tree."""
    return root / "digests" / f"{hashlib.sha256(str(source).encode()).hexdigest()[:12]}.json"


def imported_from(source: Path, root: Path) -> str:
    """Where a command's ``import usebench`` resolves (checked, not assumed)."""
    out = subprocess.run([sys.executable, "-c", "import usebench; print(usebench.__file__)"], cwd=source,
                         env=child_env(root, source), capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip()[-300:]


def machine_busy_s() -> float | None:
    """CPU seconds the whole machine has been busy (all cores, Linux ``/proc/stat``), None elsewhere."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def run_command(name: str, argv: list[str], root: Path, timeout: float, profile: Path | None = None,
                source: Path = REPO, attempt: int = 1, digests: str = "cold") -> Row:
    """``python -m usebench argv`` in a fresh process (under cProfile when ``profile`` is a path), timed; the
    package is imported from ``source`` (the process starts there). ``digests``: cold starts from no digest
    file, warm from the one the previous command left."""
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    log = f"{name}.{digests}.{attempt}" if attempt > 1 else f"{name}.{digests}"
    if digests == "cold":
        digest_file(root, source).unlink(missing_ok=True)
    prefix = [sys.executable] + (["-m", "cProfile", "-o", str(profile)] if profile else [])
    env = child_env(root, source)
    before, busy = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_s()
    t0 = time.perf_counter()
    with open(logs / f"{log}.out", "w") as out, open(logs / f"{log}.err", "w") as err:
        try:
            code: int | str = subprocess.run([*prefix, "-m", "usebench", *argv], stdout=out, stderr=err, cwd=source,
                                             env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:  # run() killed it; its CPU time is then not counted
            code = "timeout"
    wall = time.perf_counter() - t0
    after, busy_after = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_s()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    other = None if busy is None or busy_after is None else round(max(0.0, busy_after - busy - cpu), 1)
    stdout = (logs / f"{log}.out").read_text(encoding="utf-8", errors="replace")
    stderr = (logs / f"{log}.err").read_text(encoding="utf-8", errors="replace")
    units = next((int(m.group(1).replace(",", "")) for p in UNITS for m in [p.search(stdout)] if m), None)
    lines = stdout.splitlines()
    refused = [f"{lines[i - 1].strip()}: {line.strip()}" for i, line in enumerate(lines)
               if i and line.lstrip().startswith("CANNOT PLAN: ")]
    return Row(name, argv, code, round(wall, 2), round(cpu, 2), units,
               len(re.findall(r"^\s+BLOCKED: ", stdout, re.M)), len(re.findall(r"^\s+CANNOT PLAN: ", stdout, re.M)),
               other, attempt, digests, "" if code == 0 else stderr[-3000:], refused)


def print_table(rows: list[Row], profiled: bool, results: str = "") -> None:
    """One line per run; with repeats, each command's best wall and CPU seconds after its runs."""
    print(f"\n{'command':<15} {'exit':>7} {'wall s':>9} {'CPU s':>9} {'other CPU s':>12} {'units':>7} {'units/s':>9} "
          f"{'blocked':>8} {'cannot':>7}" + ("   (under cProfile)" if profiled else ""))
    for r in rows:
        ups = f"{r.units_per_s:.3f}" if r.units_per_s is not None else "-"
        units, other = (r.units if r.units is not None else "-"), ("-" if r.other_cpu_s is None else r.other_cpu_s)
        label = f"{r.name} {r.digests}" + (f" #{r.attempt}" if any(x.attempt > 1 for x in rows) else "")
        print(f"{label:<15} {r.exit!s:>7} {r.wall_s:>9.1f} {r.cpu_s:>9.1f} {other:>12} {units:>7} {ups:>9} "
              f"{r.blocked:>8} {r.cannot_plan:>7}")
    for name, digests in dict.fromkeys((r.name, r.digests) for r in rows):
        runs = [r for r in rows if (r.name, r.digests) == (name, digests) and r.exit == 0]
        if len(runs) > 1:
            wall, cpu = min(r.wall_s for r in runs), min(r.cpu_s for r in runs)
            print(f"{name + ' ' + digests + ' best':<15} {'':>7} {wall:>9.1f} {cpu:>9.1f}")
    print("other CPU s: CPU time the rest of the machine used during the command (/proc/stat); well above 0 on a "
          "shared machine, where CPU s is the number to compare")
    for name in dict.fromkeys(r.name for r in rows):  # $RESULTS: the throwaway results folder (paste-able lines)
        line = f"  {name}: python -m usebench {' '.join(next(r.argv for r in rows if r.name == name))}"
        print(line.replace(results, "$RESULTS") if results else line)


def print_profile(path: Path, top: int) -> None:
    """The ``top`` functions of a cProfile file, by cumulative time and by own time."""
    for key in ("cumulative", "tottime"):
        print(f"\n--- {path.name}: top {top} by {key} ---")
        pstats.Stats(str(path)).strip_dirs().sort_stats(key).print_stats(top)


def git(*args: str) -> str:
    """``git args`` in this repository, its stdout ("?" when git fails)."""
    out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "?"


def code_state(ref: str | None, source: Path) -> dict[str, str]:
    """What was timed: a commit's package, or the working tree (HEAD plus its uncommitted changes to usebench/)."""
    if ref is not None:
        return {"ref": ref, "commit": git("rev-parse", f"{ref}^{{commit}}"), "source": str(source)}
    return {"ref": "working tree", "commit": git("rev-parse", "HEAD"),
            "uncommitted": git("status", "--porcelain", "--", "usebench")}


def tree_digest(source: Path) -> str:
    """Size and mtime of every file of ``source``'s package: a working tree edited while it is timed is noticed."""
    h = hashlib.sha256()
    for path in sorted((source / "usebench").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            st = path.stat()
            h.update(f"{path.relative_to(source)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def parse_args() -> argparse.Namespace:
    """The command line, checked; ``names`` (the rows) and ``root`` (resolved) added."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--root", type=Path, default=None, help="where the root is built (default: "
                    "/tmp/usebench-plan-root/scale-<F>); reused while its marker records the same scale")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every generated row count (default 1.0)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic text (default 0)")
    ap.add_argument("--shared-data", type=Path, default=plan_root.SHARED,
                    help=f"the real data files copied into the root (default {plan_root.SHARED})")
    ap.add_argument("--only", default=",".join(COMMANDS), help=f"rows, comma-separated: {', '.join(COMMANDS)}")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="run under cProfile and print the top N functions by cumulative and by own time")
    ap.add_argument("--repeat", type=int, default=1, help="run each command this many times (default 1); the "
                    "table adds each command's best wall and CPU seconds")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per command (default 3600)")
    ap.add_argument("--json", type=Path, default=None, help="write the numbers to this file")
    ap.add_argument("--ref", default=None, help="time the usebench package of this commit (git archive) instead of "
                    "the working tree")
    ap.add_argument("--digests", default="cold,warm", help="the planner's digest file for each command: cold (none: "
                    "the first plan on a machine), warm (the one the cold run wrote: every later plan), or both in "
                    "that order (default cold,warm)")
    ap.add_argument("--list-root", action="store_true", help="print the root's files, rows and count sources")
    args = ap.parse_args()
    args.names = [n.strip() for n in args.only.split(",") if n.strip()]
    args.modes = [m.strip() for m in args.digests.split(",") if m.strip()]
    if not args.modes or any(m not in ("cold", "warm") for m in args.modes):
        ap.error(f"--digests {args.digests}: expected cold, warm or cold,warm")
    unknown = [n for n in args.names if n not in COMMANDS]
    if unknown:
        ap.error(f"--only {unknown[0]}: not a row ({', '.join(COMMANDS)})")
    if args.scale <= 0 or args.repeat < 1:
        ap.error("--scale must be > 0 and --repeat >= 1")
    args.root = (args.root or Path(f"/tmp/usebench-plan-root/scale-{args.scale:g}")).resolve()
    return args


def time_all(args: argparse.Namespace, source: Path) -> list[Row]:
    """Every selected command ``--repeat`` times, each with an empty results folder of its own."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-plan-results-") as tmp:
        for name in args.names:
            if args.modes == ["warm"]:  # an untimed plan first, to write the digests
                run_command(name, bench_argv(name, args.root, Path(tmp) / f"{name}-fill"), args.root, args.timeout,
                            None, source, 1, "cold")
            for digests in args.modes:
                for attempt in range(1, args.repeat + 1):
                    profile = args.root / "profiles" / f"{name}.{digests}.prof" if args.profile else None
                    if profile:
                        profile.parent.mkdir(exist_ok=True)
                    print(f"timing {name}, {digests} digests (run {attempt} of {args.repeat}) ...", flush=True)
                    argv = bench_argv(name, args.root, Path(tmp) / f"{name}-{digests}-{attempt}")
                    row = run_command(name, argv, args.root, args.timeout, profile, source, attempt,
                                      digests if attempt == 1 else "warm")
                    row.digests = digests
                    rows.append(row)
                    print(f"  exit {row.exit}, {row.wall_s:.1f} s wall, {row.cpu_s:.1f} s CPU, {row.units} unit(s)",
                          flush=True)
                    if profile and profile.is_file():
                        print_profile(profile, args.profile)
    print_table(rows, bool(args.profile), tmp)
    return rows


def main() -> None:
    args = parse_args()
    meta = plan_root.ensure_root(args.root, args.scale, args.seed, args.shared_data)
    generated = sum(v for k, v in meta["rows"].items() if not k.startswith(("sts/", "sick/")))
    print(f"root {args.root} (scale {meta['scale']:g}, built in {meta.get('build_seconds', '?')} s; {generated:,} "
          "rows outside sts/ and sick/)")
    if args.list_root:
        for rel, n in meta["rows"].items():
            print(f"  {rel:<58} {n:>10,}  {meta['sources'][rel]}")
    source = source_tree(args.ref, args.root)
    state = code_state(args.ref, source)  # before the commands: the tree may change while they run
    print(f"usebench imported from {imported_from(source, args.root)} ({state['ref']} @ {state['commit'][:12]})")
    digest = tree_digest(source)
    rows = time_all(args, source)
    if tree_digest(source) != digest:  # the numbers may mix two versions of the planner
        state["changed_while_timing"] = "yes"
        print(f"\nWARNING: {source / 'usebench'} changed while the commands ran: rerun, or time a commit (--ref)")
    failed = [r for r in rows if r.exit != 0]
    for r in failed:
        print(f"\nFAILED {r.name} run {r.attempt} (exit {r.exit}); stderr tail (all of it in {args.root / 'logs'}):"
              f"\n{r.stderr_tail}")
        for line in r.refused[:10]:
            print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps({
            "root": str(args.root), "scale": args.scale, "seed": args.seed, "code": state,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
            "profiled": bool(args.profile), "rows": [{**asdict(r), "units_per_s": r.units_per_s} for r in rows],
            "root_rows": meta["rows"], "hub_models": meta["hub_models"]}, indent=1), encoding="utf-8")
        print(f"\nwrote {args.json}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
