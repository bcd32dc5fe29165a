"""Output sized for a person (issue 56, item 2): on a terminal of 100 columns `bench tasks` printed lines of 372
characters, `bench methods` 134 lines over 100 (up to 992), a dry run ~200: `print_wide` and the dry run's
``Console(width=320)`` ignored the terminal. On a terminal every line fits it; in a pipe (scripts, logs) and with
``--wide`` tables keep their natural width. Each command runs under a pseudo-terminal (python's ``pty``)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
COLUMNS = 100
pty = pytest.importorskip("pty")  # POSIX only


def on_terminal(*args: str, columns: int = COLUMNS, cwd: Path = ROOT) -> list[str]:
    """The lines `bench ARGS` prints on a pseudo-terminal ``columns`` wide (escape sequences removed)."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}  # the terminal alone decides
    proc = subprocess.Popen([sys.executable, "-m", "usebench.cli", *args], stdin=slave, stdout=slave, stderr=slave,
                            env={**env, "TERM": "xterm"}, cwd=cwd, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0, out.decode(errors="replace")[-3000:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))
    return text.replace("\r\n", "\n").split("\n")


def in_a_pipe(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "usebench.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=True)
    return done.stdout.splitlines()


def widest(lines: list[str]) -> int:
    return max(len(line) for line in lines)


def test_bench_tasks_fits_the_terminal_and_stays_wide_in_a_pipe():
    lines = on_terminal("tasks")
    assert widest(lines) <= COLUMNS, [ln for ln in lines if len(ln) > COLUMNS]
    assert any(re.match(r"\s+beir-cqadupstack\s+12 subsets, 4 BM25", ln) for ln in lines)  # no name cut to fit
    piped = in_a_pipe("tasks")
    assert widest(piped) > COLUMNS and any("spearman_twitterurl, spearman_pit" in ln for ln in piped)
    assert widest(on_terminal("tasks", "--wide")) > COLUMNS


def test_bench_tasks_all_fits_the_terminal():
    lines = on_terminal("tasks", "--all")
    assert widest(lines) <= COLUMNS and any("bm25-pyserini-a20+beir-cqadupstack-webmasters" in ln for ln in lines)


def test_bench_methods_is_one_line_per_method_on_the_terminal():
    from usebench import methods  # noqa: F401
    from usebench.registry import METHODS

    lines = on_terminal("methods")
    assert widest(lines) <= COLUMNS
    rows = [ln for ln in lines if ln.split(" ", 1)[0] in METHODS.names()]
    assert [r.split(" ", 1)[0] for r in rows] == METHODS.names()  # one line each, in order
    assert len([ln for ln in lines if ln.strip()]) == len(METHODS.names()) + 2  # a header and the hint
    one = on_terminal("methods", "tsdae", "--preset", "laptop")
    assert widest(one) <= COLUMNS and one[0].startswith("tsdae: ") and any("note:" in ln for ln in one)
    assert not any(ln.startswith("simcse") for ln in one)


def test_a_dry_run_fits_the_terminal(tmp_path):
    from tests.methods.helpers import toy_corpus

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(toy_corpus(64)) + "\n")
    args = ("run", "--methods", "tsdae,ct", "--tasks", "twitterpara", "--preset", "smoke", "--dry-run",
            "--corpus", str(corpus), "--data-root", str(ASSETS), "--results-dir", str(tmp_path / "results"))
    lines = on_terminal(*args)
    assert widest(lines) <= COLUMNS and any("plan by chain and setting" in ln for ln in lines)
    assert sum(ln.startswith("│ 1 │ tsdae") for ln in lines) == 1  # the units listed, their ids folded, not cut
    assert not any("…" in ln for ln in lines[lines.index(next(ln for ln in lines if ln.startswith("units"))):])
    assert widest(in_a_pipe(*args)) > COLUMNS  # a log holds whole rows


def test_bench_run_help_fits_and_is_in_sections():
    lines = on_terminal("run", "--help")
    assert widest(lines) <= COLUMNS
    sections = [ln.rstrip(":") for ln in lines if re.fullmatch(r"[A-Z][^ ].*:", ln.strip()) and not ln.startswith(" ")]
    assert sections == ["What to run", "Training", "Evaluation", "Plan (--dry-run)", "Launcher",
                        "SLURM (--launcher slurm)", "Store and data", "Other options"]
    text = "\n".join(lines)
    training = text[text.index("\nTraining:"):text.index("\nEvaluation:")]
    evaluation = text[text.index("\nEvaluation:"):text.index("\nPlan (--dry-run):")]
    assert "--train-batch-size" in training and "--eval-batch-size" in evaluation
    assert "--slurm-partition" in text[text.index("\nSLURM"):] and "--batch-size " not in text
