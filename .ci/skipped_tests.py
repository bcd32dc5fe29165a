"""Print the node ids of the tests a JUnit report (pytest --junitxml) lists as skipped, one per line, for CI's
second pass (`pytest @file`): the tests that skipped in the README's base environment run again with the extras."""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def node_id(classname: str, name: str) -> str:
    """JUnit's (classname, name) as a pytest node id: ``tests.a.test_b.TestC`` + ``test_d[x]`` ->
    ``tests/a/test_b.py::TestC::test_d[x]``; a module skipped as a whole has an empty classname and its dotted
    module as the name."""
    if not classname:
        return name.replace(".", "/") + ".py"
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):  # the longest dotted prefix that is a test file; the rest are classes
        path = Path(*parts[:cut]).with_suffix(".py")
        if path.is_file():
            return "::".join([path.as_posix(), *parts[cut:], name])
    raise SystemExit(f"{classname}: no test file for this JUnit classname")


def skipped_ids(report: str) -> list[str]:
    cases = ET.parse(report).getroot().iter("testcase")
    return list(dict.fromkeys(node_id(c.get("classname", ""), c.get("name", "")) for c in cases
                              if c.find("skipped") is not None))


if __name__ == "__main__":
    print("\n".join(skipped_ids(sys.argv[1])))
