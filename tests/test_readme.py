"""The README's promises that can rot silently: the two commands for a fresh machine are the ones `.ci/run` runs,
and `.ci/run`'s second pass re-runs what skipped in the README's environment. (The names, files, links and `bench`
commands the README shows are checked with the docs pages' in tests/test_docs.py.)"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# That every module, object and file the README names exists, and that its `bench` commands parse, is checked
# together with the docs pages' in tests/test_docs.py.


def _ci_module(name: str):
    """A script of .ci/ imported as a module (they are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ci_runs_the_readme_test_command():
    command = re.search(r"Run the tests.*?```bash\n(.*?)\n```", README, re.S).group(1).strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command.split("python -m ", 1)[1] in ci, (command, "not in .ci/run")


def test_ci_runs_the_readme_tests_in_the_readme_environment_before_any_extra():
    """The README's test command must pass on the README's own install (base, no extras): `.ci/run` runs it right
    after `pip install -e '.[test]'`, and installs the extras only afterwards (so a test that needs an extra and
    fails instead of skipping breaks CI)."""
    command = re.search(r"Run the tests.*?```bash\n(.*?)\n```", README, re.S).group(1).strip().split("python -m ", 1)[1]
    install = re.search(r"Two commands for a fresh machine.*?```bash\n(.*?)\n```", README, re.S).group(1)
    assert "pip install -e '.[test]'" in install
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    base = lines.index("pip install --quiet -e '.[test]'")
    first_test = next(i for i, ln in enumerate(lines) if "pytest" in ln)
    extras = next(i for i, ln in enumerate(lines) if re.search(r"pip install .*\.\[test,", ln))
    assert base < first_test < extras and command in lines[first_test]
    system = [i for i, ln in enumerate(lines) if "apt-get install" in ln]  # WordNet, Chromium: not the README's
    assert system and all(first_test < i for i in system)


def test_ci_second_pass_reruns_exactly_what_skipped(tmp_path, monkeypatch):
    """`.ci/skipped_tests.py` turns a JUnit report's skipped cases into pytest node ids: a function, a test of a
    class, and a module skipped as a whole (empty classname, the dotted module as its name)."""
    mod = _ci_module("skipped_tests")
    (tmp_path / "tests" / "eval").mkdir(parents=True)
    (tmp_path / "tests" / "eval" / "test_x.py").write_text("")
    (tmp_path / "report.xml").write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.eval.test_x" name="test_a[p 1]"><skipped message="needs pyserini"/></testcase>'
        '<testcase classname="tests.eval.test_x.TestC" name="test_b"><skipped/></testcase>'
        '<testcase classname="tests.eval.test_x" name="test_ran"/>'
        '<testcase classname="" name="tests.launch.test_ray"><skipped/></testcase>'
        '</testsuite></testsuites>')
    monkeypatch.chdir(tmp_path)
    assert mod.skipped_ids("report.xml") == ["tests/eval/test_x.py::test_a[p 1]",
                                             "tests/eval/test_x.py::TestC::test_b", "tests/launch/test_ray.py"]


def test_ci_keeps_every_tests_duration(tmp_path, monkeypatch):
    """`.ci/run` writes `.ci-durations.txt` from both passes' JUnit reports however it ends (an EXIT trap), and
    `.ci/durations.py` lists every test slowest first with its pass and outcome, and every file's total."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "trap 'python3 .ci/durations.py .ci-durations.txt .ci-base.xml .ci-extras.xml" in ci
    assert "--junitxml=.ci-base.xml" in ci and "--junitxml=.ci-extras.xml" in ci
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert {".ci-base.xml", ".ci-extras.xml", ".ci-durations.txt"} <= set(ignored)
    mod = _ci_module("durations")
    (tmp_path / "tests" / "eval").mkdir(parents=True)
    (tmp_path / "tests" / "eval" / "test_x.py").write_text("")
    (tmp_path / ".ci-base.xml").write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.eval.test_x" name="test_fast" time="0.5"/>'
        '<testcase classname="tests.eval.test_x" name="test_slow" time="12.25"/>'
        '<testcase classname="tests.eval.test_x" name="test_gone" time="0.01"><skipped/></testcase>'
        '</testsuite></testsuites>')
    monkeypatch.chdir(tmp_path)
    text = mod.durations([Path(".ci-base.xml"), Path(".ci-extras.xml")])
    tests = text.split("## tests, slowest first")[1].splitlines()[1:]
    assert [ln.split() for ln in tests] == [["12.25", "base", "passed", "tests/eval/test_x.py::test_slow"],
                                            ["0.50", "base", "passed", "tests/eval/test_x.py::test_fast"],
                                            ["0.01", "base", "skipped", "tests/eval/test_x.py::test_gone"]]
    assert "12.76  base    tests/eval/test_x.py" in text and ".ci-extras.xml: no report" in text
