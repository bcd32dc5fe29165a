"""The architecture as a test: every import in the suite's packages runs down (or sideways) the layer order
below, never up. Static and function-level imports alike are checked; a new package must be placed here."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("usebench",)  # the one import root the distribution installs

# Top to bottom. A module may import from its own layer and from any layer below it. The root package itself
# (usebench/__init__.py, the API's lazy front door) is matched exactly, never as a prefix. Each entry is a room
# (a folder, or a ground module); a sub-folder listed on its own is a room of its own (usebench.methods.parts).
LAYERS: tuple[tuple[str, ...], ...] = (
    # the face (usebench.evaluate & co., imported on first use), the Python API in one package, and the bridges:
    # USEB's protocol in sentence-transformers' trainer, the useb kit's signatures, MTEB tasks
    ("usebench", "usebench.__main__", "usebench.api", "usebench.st", "usebench.useb", "usebench.mteb"),
    ("usebench.cli",),  # the `bench` commands: parse, call, print
    ("usebench.reproduce",),  # a paper's recipe: its runs, merged-run checks, config search, `bench check`, status
    # tables, statistics, plots from the store (reads the store only: nothing from run/ or plan/); seed and item
    # statistics (usebench.stats: the table specs, the result index of table rows, seed statistics, bootstrap intervals
    # and paired tests over the per-item outcomes, `bench compare`); how run units are executed: local, Ray, SLURM
    ("usebench.report", "usebench.report.laptop_parts", "usebench.stats", "usebench.launch"),
    ("usebench.run",),  # executing run units and nothing else: a unit's stages, evaluation jobs, faults, console
    # planning, nothing trained (the dry-run view, which results still hold, what the stages would do); the machine
    # check (`bench doctor`); `bench analyze`
    ("usebench.plan", "usebench.doctor", "usebench.analysis"),
    ("usebench.methods", "usebench.tasks"),  # the plugins: trainers and task adapters
    ("usebench.methods.parts",),  # the parts trainers share: noise, heads, losses, flows, export modules
    # the engines the plugins build on (usebench.eval also adapts an in-memory model: the API, st.py, useb/ and mteb/
    # build on it); the presets a recipe gives every method (usebench/recipes/*_presets.py, beside the recipes' TOML
    # files that usebench.reproduce reads)
    ("usebench.train", "usebench.eval", "usebench.recipes"),
    ("usebench.data",),  # data root, manifest, downloads, format conversions, corpus reading
    # the results store and everything that reads its state: records, atomic writes, whether a stored result still
    # holds, locks, the grid manifests, unit and stage state (`bench status` reads it here, never through run/), and
    # MTEB's result files of the USEB tasks read as records (usebench.store.mteb_results)
    ("usebench.store",),
    ("usebench.errors", "usebench.paths", "usebench.registry", "usebench._version",
     "usebench.fp32_policy"),  # ground: errors, paths, registry, the version, the fp32 matmul policy (training, exact
    # search and the doctor)
)
MAX_ROOM_SHARE = 0.12  # no room holds more than this share of the package's lines
ROOT_PACKAGE = "usebench"


def layer_of(module: str) -> tuple[int, str]:
    """(layer index, package prefix) of ``module``; the longest matching prefix wins."""
    best: tuple[int, str] | None = None
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            matches = module == p or (p != ROOT_PACKAGE and module.startswith(p + "."))
            if matches and (best is None or len(p) > len(best[1])):
                best = (i, p)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add its package to LAYERS in {__file__}")
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def suite_imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of the suite's own packages in ``path``; ``from usebench import
    tasks`` is an import of ``usebench.tasks``, ``from usebench import evaluate`` one of the face."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names if _is_module(f"{node.module}.{a.name}")]
            out += [(node.lineno, m) for m in subs] if subs else [(node.lineno, node.module)]
    return [(line, m) for line, m in out if m.split(".")[0] in PACKAGES]


def all_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", all_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_never_go_up_a_layer(path):
    mine, my_pkg = layer_of(module_name(path))
    upward = [f"{path.relative_to(ROOT)}:{line} imports {m} ({layer_of(m)[1]} is above {my_pkg})"
              for line, m in suite_imports(path) if layer_of(m)[0] < mine]
    assert not upward, "\n".join(upward)


def test_packages_of_one_layer_do_not_import_each_other_both_ways():
    edges: set[tuple[str, str]] = set()
    for path in all_modules():
        src = layer_of(module_name(path))[1]
        edges |= {(src, dst) for _, m in suite_imports(path) if (dst := layer_of(m)[1]) != src}
    cycles = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert not cycles, f"packages importing each other: {cycles}"


def room_lines() -> dict[str, int]:
    """Lines of code per room (the longest LAYERS prefix of each module's name)."""
    lines: dict[str, int] = {}
    for path in all_modules():
        room = layer_of(module_name(path))[1]
        lines[room] = lines.get(room, 0) + len(path.read_text(encoding="utf-8").splitlines())
    return lines


def test_no_room_holds_more_than_its_share_of_the_lines():
    lines = room_lines()
    total = sum(lines.values())
    big = {room: f"{n} lines, {n / total:.1%}" for room, n in lines.items() if n > MAX_ROOM_SHARE * total}
    assert not big, f"rooms over {MAX_ROOM_SHARE:.0%} of {total} lines (split them, or give a sub-folder its own room " \
                    f"in LAYERS): {big}"


def test_the_report_reads_the_store_only():
    """The report imports neither the run units nor the planner: it reads what the store records."""
    for path in (ROOT / "usebench" / "report").rglob("*.py"):
        bad = [m for _, m in suite_imports(path) if layer_of(m)[1] in ("usebench.run", "usebench.plan")]
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


# What reads the store's state for a person or a launcher (bench status, the dry runs, the launchers' "already done")
STORE_READERS = ("usebench/cli/status.py", "usebench/cli/dry_run.py", "usebench/reproduce/dry_run_view.py",
                 "usebench/reproduce/remaining.py", "usebench/launch/held.py")


@pytest.mark.parametrize("reader", STORE_READERS)
def test_the_store_is_read_without_importing_run(reader):
    """`bench status`, the dry runs and the launchers' "already done" read the store through store/ and plan/: run/
    executes units and nothing else."""
    bad = [m for _, m in suite_imports(ROOT / reader) if layer_of(m)[1] == "usebench.run"]
    assert not bad, f"{reader} imports {bad}"


def test_the_layer_order_catches_an_upward_import():
    assert layer_of("usebench.eval.pooling")[0] > layer_of("usebench.methods.bertflow")[0]
    assert layer_of("usebench.store")[1] == "usebench.store" and layer_of("usebench.run.grid")[1] == "usebench.run"
    assert layer_of("usebench")[0] == 0 and layer_of("usebench.api")[0] < layer_of("usebench.run.grid")[0]
    assert layer_of("usebench.run.unit")[0] < layer_of("usebench.plan.planner")[0] < layer_of("usebench.methods.ct")[0]
    assert layer_of("usebench.methods.parts.noise")[1] == "usebench.methods.parts"


def test_the_distribution_installs_one_top_level_package():
    """Only `usebench` is importable from the package list: no generic `benchmark`, `methods` or `tasks` beside it."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["setuptools"]["packages"]["find"]["include"] == ["usebench*"]
    assert sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests") \
        == ["usebench"]


def test_no_module_imports_itself_through_others():
    """No import cycle between modules (such as a report page and the report builder importing each other)."""
    names = {module_name(p): p for p in all_modules()}
    graph = {m: {i for _, i in suite_imports(p) if i in names and i != m} for m, p in names.items()}
    cycles, state = [], {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(cycles)
