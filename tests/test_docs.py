"""The documentation can be trusted: every `bench ...` command shown in README.md, docs/ and the generated reference
pages parses with the current CLI and names registered things; every module, object, file and folder the docs
name exists; the reference pages list exactly what the registries hold and follow a preset change by
themselves. Only the MkDocs hook test needs the `docs` extra (it skips without it)."""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path

import click
import pytest

from tests.docs_commands import (
    Shown,
    check_synopsis,
    importable,
    option_names,
    parse_concrete,
    resolve,
    shown_commands,
)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "docgen" not in p.parts)
SOURCES = [ROOT / "README.md", *PAGES]
SHOWN = [c for p in SOURCES for c in shown_commands(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
CONCRETE = [c for c in SHOWN if not c.synopsis]
SYNOPSES = [c for c in SHOWN if c.synopsis]
MENTIONS = [c for c in SHOWN if c.mention]
HAS_MTEB = importlib.util.find_spec("mteb") is not None


def docgen(module: str = "generate"):
    """A module of the generators (docs/docgen), imported as the MkDocs hook imports it."""
    if str(DOCS) not in sys.path:
        sys.path.insert(0, str(DOCS))
    return importlib.import_module(f"docgen.{module}")


def _value(cmd: click.Command, params: dict, option: str):
    for p in cmd.params:
        if option in p.opts:
            return params.get(p.name)
    return None


def _csv(value) -> list[str]:
    return [v.strip() for v in str(value).split(",") if v.strip()] if value else []


def run_stage_names(cmd: click.Command, params: dict) -> set[str]:
    """Every stage `bench run` would train for these options: the chains given, expanded by --setting or
    --labeled-sizes per target task as the plan expands them (usebench/plan/planner.py)."""
    from types import SimpleNamespace

    from usebench import tasks
    from usebench.plan.planner import parse_methods, unit_chains

    chains = parse_methods(_csv(_value(cmd, params, "--methods")))[0]
    opts = SimpleNamespace(setting=_value(cmd, params, "--setting"),
                           labeled_sizes=tuple(int(n) for n in _csv(_value(cmd, params, "--labeled-sizes"))))
    expanded = {c for task in tasks.expand_tasks(_value(cmd, params, "--tasks") or "useb")
                for c, _ in unit_chains(chains, opts, task, [])} if chains else set()
    return {m for chain in expanded for m in chain}


def check_names(shown: Shown) -> list[str]:
    """What a concrete command names must be registered: tasks, methods and chains, tables, presets, settings,
    `--set` keys. Each check is the one `bench` itself runs before doing any work."""
    from usebench import methods  # noqa: F401
    from usebench import tasks
    from usebench.errors import BenchError
    from usebench.registry import METHODS
    from usebench.report.catalog import TABLE_GROUPS
    from usebench.stats.table_specs import TABLES
    from usebench.plan.planner import check_set_prefixes, method_overrides
    from usebench.plan.settings import SETTINGS

    params, (_, cmd, _) = parse_concrete(shown), resolve(shown.tokens)
    problems = []
    for option in ("--tasks", "--eval-tasks"):
        spec = _value(cmd, params, option)
        if spec and not (not HAS_MTEB and "mteb" in spec):  # mteb:<Task> names need the extra to resolve
            try:
                tasks.expand_tasks(spec)
            except BenchError as e:
                problems.append(f"{option}: {e}")
    names: set[str] = set()
    if _value(cmd, params, "--methods"):
        try:
            names = run_stage_names(cmd, params)
        except BenchError as e:
            problems.append(f"--methods: {e}")
    preset = _value(cmd, params, "--preset")
    if preset and cmd.name == "run":
        problems += [f"--preset {preset}: {m} has no such preset" for m in names if preset not in METHODS.get(m).presets]
    elif preset and not any(preset in METHODS.get(m).presets for m in METHODS.names()):
        problems.append(f"--preset {preset}: no method has it")
    table = _value(cmd, params, "--table")
    problems += [f"--table: no table {t!r}" for t in _csv(table)
                 if t != "all" and t not in TABLES and t not in TABLE_GROUPS]
    setting = _value(cmd, params, "--setting")
    if setting and setting not in SETTINGS:
        problems.append(f"--setting {setting}: not one of {', '.join(SETTINGS)}")
    items = list(_value(cmd, params, "--set") or ())
    try:
        check_set_prefixes(items, names)
        for m in names:
            method_overrides(m, METHODS.get(m).Config, items)
    except BenchError as e:
        problems.append(f"--set: {e}")
    return problems


@pytest.mark.parametrize("shown", CONCRETE, ids=lambda c: f"{c.where} {c.text[:60]}")
def test_every_concrete_command_parses_and_names_registered_things(shown):
    try:
        problems = check_names(shown)
    except click.ClickException as e:
        pytest.fail(f"{shown.where}: `{shown.text}` does not parse: {e.format_message()}")
    assert not problems, f"{shown.where}: `{shown.text}`: {'; '.join(problems)}"


@pytest.mark.parametrize("shown", SYNOPSES, ids=lambda c: f"{c.where} {c.text[:60]}")
def test_every_synopsis_names_real_commands_and_options(shown):
    problems = check_synopsis(shown)
    assert not problems, f"{shown.where}: `{shown.text}`: {'; '.join(problems)}"


@pytest.mark.parametrize("shown", MENTIONS, ids=lambda c: f"{c.where} {c.text[:60]}")
def test_every_command_mentioned_in_prose_names_registered_things(shown):
    """`bench run --tasks quora` in a sentence lacks --methods, but the task it names must exist."""
    problems = check_names(shown)
    assert not problems, f"{shown.where}: `{shown.text}`: {'; '.join(problems)}"


def test_the_commands_of_the_generated_pages_parse():
    gen, _ = docgen().generate_all()
    checked = 0
    for rel, text in gen.files.items():
        if not rel.endswith(".md"):
            continue
        for shown in shown_commands(text, f"(generated) {rel}"):
            problems = check_synopsis(shown) if shown.synopsis else []
            problems += check_names(shown) if not shown.synopsis or shown.mention else []
            assert not problems, f"{shown.where}: `{shown.text}`: {'; '.join(problems)}"
            checked += 1
    assert checked >= 20, checked


def test_commands_are_found_on_every_page_that_shows_some():
    where = {c.where.split(":")[0] for c in SHOWN}
    for page in ("README.md", "docs/getting-started.md", "docs/papers/tsdae.md", "docs/papers/denosent.md",
                 "docs/papers/paser.md", "docs/papers/thesis.md", "docs/reports.md", "docs/data.md", "docs/tasks.md",
                 "docs/methods.md", "docs/settings.md", "docs/scale-out.md"):
        assert page in where, f"no bench command found in {page}: is the extraction broken?"
    assert len(CONCRETE) >= 40 and len(SYNOPSES) >= 10, (len(CONCRETE), len(SYNOPSES))


def test_getting_started_shows_the_readmes_two_commands_unchanged():
    """The README keeps the two commands for a fresh machine (tests/test_readme.py holds them to .ci/run); the
    getting-started page repeats them, and must not drift from them."""
    def blocks(text: str) -> list[str]:
        return re.findall(r"```bash\n(.*?)\n```", text.split("## Two commands for a fresh machine", 1)[1], re.S)[:2]

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert blocks(readme) and blocks(page) == blocks(readme)


def test_extraction_reads_continuations_chains_prompts_and_inline_spans():
    text = ("Run `bench tasks` first.\n\n```bash\n$ BENCH_DATA=/d bench eval --model minilm \\\n"
            "    --tasks stsb   # a comment\npip install x && bench report --table sts-table\n"
            "cat > a.toml <<'EOF'\nbench not-a-command\nEOF\n```\n\n```python\nbench = 1\n```\n")
    got = [(c.where, c.text) for c in shown_commands(text, "t")]
    assert got == [("t:4", "bench eval --model minilm --tasks stsb"), ("t:6", "bench report --table sts-table"),
                   ("t:1", "bench tasks")]


def test_a_wrong_command_is_caught():
    with pytest.raises(click.NoSuchOption):
        check_names(Shown("x", "bench eval --model minilm --taks useb"))
    assert check_names(Shown("x", "bench eval --model minilm --tasks askubunto"))
    assert check_names(Shown("x", "bench run --methods tsdea --tasks useb"))
    assert check_names(Shown("x", "bench run --methods tsdae --tasks useb --set tsdae.deletion_rate=0.3"))
    assert check_names(Shown("x", "bench report --table paper-table-2"))
    assert check_synopsis(Shown("x", "bench run --methods M [--presets P]"))
    assert check_synopsis(Shown("x", "bench data download useb | imports PATH"))
    assert Shown("x", "bench eval --model PATH").synopsis and not Shown("x", "bench eval --model minilm").synopsis


def test_options_of_every_command_are_known_to_the_checker():
    assert "--dry-run" in option_names(resolve(["bench", "run"])[1])
    assert "--no-plots" in option_names(resolve(["bench", "report"])[1])


# Code spans of README.md and every docs page: a dotted name or a repository path written there must exist.
CODE_SPANS = [(p, s) for p in SOURCES for s in re.findall(r"`([^`\n]+)`", p.read_text(encoding="utf-8"))]


def _where(span: str) -> str:
    return ", ".join(sorted({str(p.relative_to(ROOT)) for p, s in CODE_SPANS if s == span or s.rstrip("/") == span}))


@pytest.mark.parametrize("name", sorted({s for _, s in CODE_SPANS
                                         if re.fullmatch(r"usebench(\.[A-Za-z_]\w*)+", s)}))
def test_every_python_name_in_the_readme_and_docs_imports(name):
    assert importable(name), f"{_where(name)} name {name}, which does not import"


@pytest.mark.parametrize("path", sorted({s.rstrip("/") for _, s in CODE_SPANS
                                         if re.fullmatch(r"(usebench|scripts|tests|docs)/[\w/.]*", s)}))
def test_every_file_in_the_readme_and_docs_exists(path):
    assert (ROOT / path).exists(), f"{_where(path)} name {path}, which does not exist"


def _github_anchor(heading: str) -> str:
    """The id GitHub gives a Markdown heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


README_LINKS = re.findall(r"\]\((?!https?://|mailto:)([^)\s]+)\)", (ROOT / "README.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("link", sorted(set(README_LINKS)))
def test_every_relative_link_of_the_readme_resolves_on_github(link):
    """MkDocs checks the links of docs/ (strict build); the README is not part of the site, so its links into docs/
    (and their #anchors, as GitHub names headings) are checked here."""
    path, _, anchor = link.partition("#")
    target = ROOT / path
    assert target.is_file(), f"README.md links {link}: {path} does not exist"
    if anchor:
        headings = re.findall(r"^#{1,6} (.+?)\s*$", target.read_text(encoding="utf-8"), re.M)
        assert anchor in {_github_anchor(h) for h in headings}, f"README.md links {link}: no such heading in {path}"


def test_every_folder_in_the_diagram_exists():
    diagram = docgen("diagram")
    assert diagram.folders()
    for folder in diagram.folders():
        assert (ROOT / folder).exists(), folder
    assert diagram.svg().startswith("<svg") and "<script" not in diagram.svg()


def test_the_reference_lists_every_registered_task_and_method():
    from usebench import methods  # noqa: F401
    from usebench import tasks  # noqa: F401
    from usebench.registry import METHODS, TASKS

    tasks_ref, methods_ref = docgen("tasks_ref").generate(), docgen("methods_ref").generate()
    page = tasks_ref.files["reference/tasks.md"]
    assert tasks_ref.entries["tasks"] == len(TASKS) and methods_ref.entries["methods"] == len(METHODS)
    for name in TASKS.names():
        assert f"## `{name}` {{#task-" in page, name
    for name in METHODS.names():
        text = methods_ref.files[f"reference/methods/{name}.md"]
        header = text.split("\n| field |")[1].splitlines()[0] + " |"
        assert all(f"| `{p}` |" in header for p in METHODS.get(name).presets), (name, header)


def test_published_release_counts_come_from_the_adapters():
    """The STS-benchmark test count the adapter checks (1379 scored pairs) is on the page, read from the adapter."""
    page = docgen("tasks_ref").generate().files["reference/tasks.md"]
    stsb = page.split("## `stsb`")[1].split("\n## ")[0]
    assert "| `test` | `sts/senteval/STSBenchmark/sts-test.csv` | 1,379 scored pairs |" in stsb


def test_a_preset_change_shows_up_in_the_reference_without_editing_it(monkeypatch):
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    methods_ref = docgen("methods_ref")
    monkeypatch.setitem(METHODS.get("tsdae").presets["smoke"], "max_steps", 4321)
    monkeypatch.setitem(METHODS.get("tsdae").preset_notes, "smoke", "a note written only by this test")
    text = methods_ref.method_page("tsdae", METHODS.get("tsdae"))
    header = next(line for line in text.splitlines() if line.startswith("| field |")).split(" | ")
    row = next(line for line in text.splitlines() if line.startswith("| `max_steps` |")).split(" | ")
    assert row[header.index("`smoke`")] == "**`4321`**", row
    assert "a note written only by this test" in text


def test_mkdocs_hook_adds_every_generated_page_and_lists_the_methods_in_the_nav():
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings")
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    # Through MkDocs' own event machinery, as `mkdocs build` runs the hook (docs/docgen/hooks.py).
    config = load_config(str(ROOT / "mkdocs.yml"))
    config = config.plugins.on_config(config)
    reference = next(item["Reference"] for item in config.nav if isinstance(item, dict) and "Reference" in item)
    methods_entry = next(item["Methods"] for item in reference if "Methods" in item)
    assert methods_entry[0] == "reference/methods/index.md" and {"tsdae": "reference/methods/tsdae.md"} in methods_entry
    files = config.plugins.on_files(Files([]), config=config)
    uris = {f.src_uri for f in files}
    for needed in ("reference/tasks.md", "reference/cli.md", "assets/pipeline.svg", "examples/report.md",
                   "examples/report/loss-curves.png"):
        assert needed in uris, needed
