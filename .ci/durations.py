"""Write every test's duration from CI's JUnit reports (pytest --junitxml), slowest first, with each file's total:
the record of where CI's time goes, kept after every run (``.ci-durations.txt``).

    python .ci/durations.py .ci-durations.txt .ci-base.xml [.ci-extras.xml ...]

Each report is a pass of its own (step 1: the README's command on the base install; step 2: the tests that skipped
there, with the extras), so a test that ran in both has two lines, each naming its pass. A missing report is named
and left out (a step that did not run leaves none). Times are pytest's: a test's setup, call and teardown, fixtures
included; under xdist each worker's tests are timed in that worker, so the sum is CPU-side work, not the wall time.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from skipped_tests import node_id  # noqa: E402  (the same node ids as CI's second pass)


def outcome(case: ET.Element) -> str:
    """passed, skipped, failed or error: what JUnit's children say."""
    for child, name in (("skipped", "skipped"), ("failure", "failed"), ("error", "error")):
        if case.find(child) is not None:
            return name
    return "passed"


def cases(report: Path) -> list[tuple[float, str, str]]:
    """(seconds, node id, outcome) of every test case in one JUnit report."""
    out = []
    for case in ET.parse(report).getroot().iter("testcase"):
        try:
            node = node_id(case.get("classname", ""), case.get("name", ""))
        except SystemExit:  # a class name that is no file here (a renamed test): keep JUnit's own name
            node = f"{case.get('classname', '')}::{case.get('name', '')}"
        out.append((float(case.get("time") or 0.0), node, outcome(case)))
    return out


def durations(reports: list[Path]) -> str:
    """The file's text: per pass, its total and tests, then every file's total, then every test, slowest first."""
    lines: list[str] = []
    tests: list[tuple[float, str, str, str]] = []
    for report in reports:
        if not report.is_file():
            lines.append(f"# {report.name}: no report (that step did not run)")
            continue
        found = cases(report)
        lines.append(f"# {report.name}: {len(found)} tests, {sum(s for s, _, _ in found):.1f} s in tests")
        tests += [(s, node, result, report.stem.removeprefix(".ci-")) for s, node, result in found]
    per_file: dict[tuple[str, str], float] = defaultdict(float)
    for seconds, node, _, step in tests:
        per_file[(node.split("::")[0], step)] += seconds
    lines += ["", "## files, slowest first (seconds, pass, file)"]
    lines += [f"{s:9.2f}  {step:6s}  {path}" for (path, step), s in sorted(per_file.items(), key=lambda x: -x[1])]
    lines += ["", "## tests, slowest first (seconds, pass, outcome, test)"]
    lines += [f"{s:9.2f}  {step:6s}  {result:7s}  {node}" for s, node, result, step in sorted(tests, key=lambda x: -x[0])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    Path(sys.argv[1]).write_text(durations([Path(a) for a in sys.argv[2:]]), encoding="utf-8")
