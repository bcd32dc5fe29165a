"""Every paper's recipe loads and is checked strictly: unknown keys, methods, tasks, tables and rows are errors
that name the file and the key."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from usebench.errors import ConfigError
from usebench.reproduce.status import known_names, load_checked_recipe
from usebench.reproduce.recipes import PAPERS, RECIPES_DIR, load_recipe, parse_recipe

MINIMAL = """
paper = "{paper}"
[[tables]]
id = "t"
title = "a table"
writes = ["sts-table"]
reference = "tsdae-table11"
runs = [{{ methods = ["tsdae"], tasks = "stsb", eval_tasks = "sts" }}]
"""


@pytest.mark.parametrize("paper", PAPERS)
def test_every_recipe_loads_and_names_the_report_tables(paper):
    recipe = load_checked_recipe(paper)
    assert recipe.paper == paper and recipe.tables
    assert (Path(__file__).resolve().parents[2] / recipe.page).is_file()  # the paper page it reproduces
    header = (RECIPES_DIR / f"{paper}.toml").read_text(encoding="utf-8").splitlines()[:8]
    assert any(f"bench reproduce {paper}" in line for line in header)  # the header shows the command
    assert all(t.runs or t.evals or t.id == "eproduct" for t in recipe.tables)


def test_the_cli_offers_every_recipe():
    from usebench.cli.reproduce import PAPERS as CLI_PAPERS

    assert CLI_PAPERS == PAPERS


def _write(tmp_path: Path, text: str, paper: str = "tsdae") -> Path:
    path = tmp_path / f"{paper}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_minimal_recipe_expands_its_runs(tmp_path):
    recipe = load_recipe(_write(tmp_path, MINIMAL.format(paper="tsdae")), known_names())
    (run,) = recipe.tables[0].runs
    assert run.methods == ("tsdae",) and run.command() == ("bench run --methods tsdae --tasks stsb --eval-tasks sts "
                                                           "--seeds 1")


@pytest.mark.parametrize("bad, where", [
    ('paper = "tsdae"\nmystery = 1\n[[tables]]\nid="t"\ntitle="x"\nwrites=["sts-table"]', "unknown key 'mystery'"),
    (MINIMAL.format(paper="tsdae").replace('eval_tasks = "sts"', 'eval_task = "sts"'),
     "tables[0].runs[0]: unknown key 'eval_task'; did you mean 'eval_tasks'?"),
    (MINIMAL.format(paper="tsdae").replace('["tsdae"]', '["tsdea"]'), "tables[0].runs[0].methods"),
    (MINIMAL.format(paper="tsdae").replace('tasks = "stsb"', 'tasks = "stsbb"'), "tables[0].runs[0].tasks"),
    (MINIMAL.format(paper="tsdae").replace('"sts-table"', '"sts-tabel"'), "tables[0].writes: 'sts-tabel'"),
    (MINIMAL.format(paper="tsdae").replace('"tsdae-table11"', '"tsdae-table99"'), "tables[0].reference"),
    (MINIMAL.format(paper="tsdae") + 'never = [{ label = "USE-larg", reason = "x" }]\n',
     "tables[0].never[0].label: 'USE-larg'"),
    (MINIMAL.format(paper="tsdae").replace('eval_tasks = "sts"', 'corpus = "{wiki}"'), "input 'wiki' is not declared"),
    (MINIMAL.format(paper="other"), "must equal the file's name"),
])
def test_a_bad_recipe_is_an_error_naming_the_file_and_key(tmp_path, bad, where):
    path = _write(tmp_path, bad)
    with pytest.raises(ConfigError) as e:
        load_recipe(path, known_names())
    assert str(path) in str(e.value) and where in str(e.value)


def test_every_packaged_key_is_known(tmp_path):
    """A copy of a real recipe with one key misspelt is refused (the checks cover the real files' shape)."""
    text = (RECIPES_DIR / "paser.toml").read_text(encoding="utf-8").replace("eval_tasks =", "evaltasks =", 1)
    with pytest.raises(ConfigError, match=r"paser\.toml: tables\[0\]\.runs\[0\]: unknown key 'evaltasks'"):
        parse_recipe(tomllib.loads(text), tmp_path / "paser.toml", known_names())


def test_the_app_a_search_expands_to_the_papers_settings():
    table = load_checked_recipe("tsdae").table("tables5-7")
    # Table 5's noises, Table 6's ratios, Table 7's poolings, tying: 19 settings, of which 3 repeat an earlier
    # step's winner (delete 0.3; delete 0.6 CLS twice) and plan to the same units
    assert len(table.runs) == 5 + 9 + 3 + 2 and len(set(table.runs)) == 16
    assert all(r.split == "dev" and r.corpus == "allnli" and r.preset == "app-a" for r in table.runs)
    assert "tsdae.tie_encoder_decoder=true" in table.runs[-1].overrides


def test_an_unknown_table_id_names_the_recipe():
    with pytest.raises(ConfigError, match=r"not a table of the tsdae recipe .*tsdae\.toml.*did you mean 'table2'"):
        load_checked_recipe("tsdae").table("tabel2")


def test_a_table_is_held_to_its_own_papers_skeleton_only():
    """DenoSent's Table 3 (not typed in) is written to sts-table, whose skeleton is TSDAE's Table 11: its rows are
    not checked against it; Table 9 is written beside paper-table2 but is not Table 2's skeleton either."""
    from usebench.reproduce.status import skeleton_of

    denosent, tsdae, thesis = (load_checked_recipe(p) for p in ("denosent", "tsdae", "thesis"))
    assert skeleton_of("sts-table", denosent.table("table3"), "denosent") is None
    assert skeleton_of("denosent-table1", denosent.table("table1"), "denosent") == "denosent-table1"
    assert skeleton_of("paper-table2", tsdae.table("table9"), "tsdae") is None
    assert skeleton_of("sts-table", tsdae.table("table11"), "tsdae") == "tsdae-table11"
    assert skeleton_of("thesis-table5.10", thesis.table("table5.9"), "thesis") == "thesis-table5.10"
