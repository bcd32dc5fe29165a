"""The planner's speed-ups change no plan: each paper's full recipe, planned on the fixture root
(tests/reproduce/reproduce_root.py) with two seeds, gives the same plan, bit for bit, as the planner before them.

The golden digests in tests/assets/plan_digests.json were taken with the planner of commit 9c5c627 (before the
per-process data caches of issue 37): per unit (every field of every unit and stage: identity, home, data entry, step
budget, variant), per planned run (command, blocked / refused / excluded, run ids), the merged plans' notes, skipped
lines and baselines, which tables each unit serves, the dry run's printed text (units, stages, reuse; its cost line
holds a measured matmul rate and is compared by its plan-derived numbers: distinct stages, steps, FLOPs).
Since issue 48 the dry run prints a summary, and the structured plan is digested instead of its text: the rows
`--plan-out` writes (every unit's stages, trained or reused from where, its state, the split of each task).
The backbone is the packaged MiniLM (an alias: no weight file's bytes enter the run ids). The fixture root lives at
one fixed path (:data:`ROOT`), because a ``dev_corpus`` path is part of a stage's config and so of its run id.

Rewritten since, each time for a change meant to change plans (issue 39): the dry run names the runs the snapshot
options merge (usebench/reproduce/merged_runs.py); the fixture root's NLI and STSb files grew so that every chain stage
trains past warm-up, and its corpora to 600 sentences; the recipes plan DenoSent's Table 3 rows, PaSeR's tables by
the paper's numbers and its BERT-flow/CT rows with their published preset and data, TSDAE's BERT-flow with App. B's
mean pooling, the thesis' batch-size study on 100,000 sentences. Up to the first of these, every unit, run and plan
digest was 9c5c627's.

When a change is meant to change plans (a recipe, a preset, an identity field), rewrite the digests and say why in
the commit: ``python -m tests.plan.test_plan_identity --write``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.plan.plan_snapshot import PAPERS, SNAPSHOT_OPTIONS, plan_snapshot, snapshot_digest
from tests.reproduce.reproduce_root import build_reproduce_root

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "assets" / "plan_digests.json"
GLOVE = REPO / "tests" / "assets" / "wordvec" / "tiny_glove.txt"
ROOT = Path("/tmp/usebench-plan-identity-root")  # fixed: dev_corpus paths enter run ids


def fixed_root() -> Path:
    """The fixture root at :data:`ROOT`, built once (into a sibling, then renamed: parallel test workers either build
    it or find it whole)."""
    import os
    import shutil
    import tempfile

    marker = ROOT / ".complete"
    if not marker.is_file():
        tmp = Path(tempfile.mkdtemp(prefix=ROOT.name + ".", dir=ROOT.parent))
        build_reproduce_root(tmp)
        shutil.copy(GLOVE, tmp / GLOVE.name)  # under the fixed root: the dry run prints (and cuts) its path
        (tmp / ".complete").write_text("built by tests/plan/test_plan_identity.py\n", encoding="utf-8")
        try:
            os.rename(tmp, ROOT)
        except OSError:  # another worker was first (or a stale incomplete root): use what is complete
            shutil.rmtree(tmp, ignore_errors=True)
            if not marker.is_file():
                shutil.rmtree(ROOT, ignore_errors=True)
                return fixed_root()
    return ROOT


def plan_digests(paper: str, root: Path, results: Path) -> dict:
    """{"units": {run_id: digest}, "runs": ..., "plans": ..., "unit_tables": ..., "plan_rows": ..., "cost": ...}."""
    from click.testing import CliRunner

    import usebench.reproduce.build as reproduce
    from usebench.cli.main import main
    from usebench.plan.cost import plan_cost

    captured = {}
    build = reproduce.build_plan

    def capture(*args, **kwargs):
        captured["rp"] = build(*args, **kwargs)
        return captured["rp"]

    glove = ["--glove", str(root / GLOVE.name)] if paper == "tsdae" else []
    rows_file = results.parent / f"{paper}-plan.json"
    args = ["reproduce", paper, "--dry-run", "--model", "minilm", *SNAPSHOT_OPTIONS, *glove, "--data-root", str(root),
            "--results-dir", str(results), "--plan-out", str(rows_file)]
    reproduce.build_plan = capture
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        reproduce.build_plan = build
    assert result.exit_code == 0, result.output
    rp = captured["rp"]
    snap = plan_snapshot(rp, json.loads(rows_file.read_text(encoding="utf-8")), {str(root): "<ROOT>", str(results): "<RESULTS>", str(REPO): "<REPO>"})
    cost = plan_cost(rp.units, None, measure=False)
    out = {"units": {}, "cost": snapshot_digest({"stages": cost.stages, "steps": cost.steps, "flops": cost.flops})}
    for split, plan in snap["plans"].items():
        for unit in plan.pop("units"):
            out["units"][f"{split}:{unit['run_id']}"] = snapshot_digest(unit)
    for key in ("runs", "plans", "unit_tables", "inputs", "plan_rows"):
        out[key] = snapshot_digest(snap[key])
    return out


def differences(want: dict, got: dict) -> list[str]:
    """What differs, named (a unit by its run id)."""
    lines = [f"{k}: differs" for k in want if k != "units" and want[k] != got.get(k)]
    units_w, units_g = want["units"], got["units"]
    lines += [f"unit {u}: missing" for u in sorted(set(units_w) - set(units_g))][:10]
    lines += [f"unit {u}: new" for u in sorted(set(units_g) - set(units_w))][:10]
    lines += [f"unit {u}: differs" for u in sorted(set(units_w) & set(units_g)) if units_w[u] != units_g[u]][:10]
    return lines


@pytest.fixture(scope="module")
def fixture_root() -> Path:
    return fixed_root()


@pytest.fixture(scope="module")
def digest_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("plan-identity-digests") / "digests.json"


@pytest.mark.parametrize("digests", ["cold", "warm"])  # no digest file, then the one the cold plan wrote
@pytest.mark.parametrize("paper", PAPERS)
def test_each_recipe_plans_as_before(paper, digests, fixture_root, digest_file, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("BENCH_DIGESTS", str(digest_file))
    if digests == "cold":
        digest_file.unlink(missing_ok=True)
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[paper]
    got = plan_digests(paper, fixture_root, tmp_path / "results")
    assert not differences(want, got), f"{paper}: " + "; ".join(differences(want, got))
    assert len(got["units"]) == len(want["units"]) > 0


def _write_golden() -> None:  # python -m tests.plan.test_plan_identity --write
    import os
    import tempfile

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        golden = {paper: plan_digests(paper, fixed_root(), Path(tmp) / "results") for paper in PAPERS}
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}: " + ", ".join(f"{p} {len(g['units'])} units" for p, g in golden.items()))


if __name__ == "__main__" and "--write" in sys.argv:
    _write_golden()
