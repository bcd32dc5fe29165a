"""`bench reproduce RECIPE.toml`: a researcher's own recipe (issue 39, item 7), loaded as strictly as the packaged
ones, planned and counted the same way."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.reproduce.reproduce_root import build_reproduce_root
from usebench.cli.main import main
from usebench.reproduce.recipes import RECIPES_DIR


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return build_reproduce_root(tmp_path_factory.mktemp("user-recipe-root"))


def _my_recipe(tmp_path: Path, edit=lambda text: text) -> Path:
    """The thesis' recipe as a lab's own file: another paper name, the same tables."""
    text = (RECIPES_DIR / "thesis.toml").read_text(encoding="utf-8").replace('paper = "thesis"', 'paper = "mylab"')
    path = tmp_path / "mylab.toml"
    path.write_text(edit(text), encoding="utf-8")
    return path


def _invoke(*args: str):
    return CliRunner().invoke(main, ["reproduce", *args])


def test_a_users_recipe_file_is_planned_as_a_packaged_one(root, tiny_bert_dir, tmp_path):
    path = _my_recipe(tmp_path)
    common = ["--tables", "table5.9", "--dry-run", "--model", str(tiny_bert_dir), "--seeds", "1",
              "--data-root", str(root), "--results-dir", str(tmp_path / "r")]
    mine = _invoke(str(path), *common)
    assert mine.exit_code == 0, mine.output
    assert f"bench reproduce mylab: 1 table(s) from {path}" in mine.output
    packaged = _invoke("thesis", *common)
    # the same tables, the same units: only the recipe's name and file differ
    units = [line for line in mine.output.splitlines() if "distinct unit(s)" in line]
    assert units and units == [line for line in packaged.output.splitlines() if "distinct unit(s)" in line]


def test_a_users_recipe_is_checked_as_strictly(tmp_path):
    path = _my_recipe(tmp_path, lambda t: t.replace("title =", "titel =", 1))
    result = _invoke(str(path), "--dry-run")
    assert result.exit_code == 2 and str(path) in result.output and "titel" in result.output
    renamed = tmp_path / "other.toml"
    renamed.write_text(_my_recipe(tmp_path).read_text(encoding="utf-8"), encoding="utf-8")
    result = _invoke(str(renamed), "--dry-run")
    assert result.exit_code == 2 and "must equal the file's name ('other')" in result.output


@pytest.mark.parametrize(("argument", "message"), [
    ("tsdea", "'tsdea' is not a paper (tsdae, denosent, paser, thesis, laptop) nor a recipe file (RECIPE.toml); did you "
              "mean 'tsdae'?"),
    ("missing.toml", "missing.toml: no such recipe file"),
])
def test_a_bad_paper_or_recipe_argument_is_a_usage_error(argument, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke(argument, "--dry-run")
    assert result.exit_code == 2 and message in " ".join(result.output.split())


@pytest.mark.parametrize(("paper", "old", "new"), [("paser", "ablations", "table4, table5, table8 and table9"),
                                                    ("thesis", "studies", "tables5.11-5.13"),
                                                    ("thesis", "alpha", "figure5.2")])
def test_a_table_id_that_followed_no_paper_number_names_its_new_id(paper, old, new):
    from usebench.errors import ConfigError
    from usebench.reproduce.status import load_checked_recipe

    recipe = load_checked_recipe(paper)
    with pytest.raises(ConfigError, match=f"{old} is {new}$"):
        recipe.table(old)
    for table_id in new.replace(" and ", ", ").split(", "):
        assert recipe.table(table_id).id == table_id
