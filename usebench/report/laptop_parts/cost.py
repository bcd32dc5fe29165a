"""What each unit of the laptop recipe cost, against what the dry run predicted.

Measured: each unit's ``usage.json`` (every attempt: a killed one up to its last heartbeat, counted apart; an attempt
during which other processes used the machine's cores is flagged, its wall time being no measure of the unit's
cost). Predicted: the prediction `bench reproduce` stored before it ran (``.reproduce/<paper>-cost.json``: the
recipe's ``[cost]`` figures, the machine factor and the whole plan's hours), applied here to each unit's own work:
its steps (when it trained its stage), its curve points, its evaluations and a set-up.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from usebench.report.laptop_parts.effects import label
from usebench.report.laptop_parts.units import Unit, by_row
from usebench.store import read_json

PREDICTION = Path(".reproduce") / "laptop-cost.json"
BESIDE_SHARE = 0.10  # usebench.run.usage.BESIDE_SHARE: other processes' share of the cores that flags an attempt


def beside(attempt: dict[str, Any]) -> bool:
    """Other processes used more than :data:`BESIDE_SHARE` of the machine's cores during ``attempt`` (False when
    it was not measured: entries written before usage.json recorded it)."""
    others, wall, cores = attempt.get("others_cpu_s"), attempt.get("wall_s"), attempt.get("machine_cores")
    return bool(others is not None and wall and cores and others / (wall * cores) > BESIDE_SHARE)


def read_prediction(store: Path) -> dict[str, Any] | None:
    """The first prediction `bench reproduce` stored in ``store`` (the one made before anything ran), or None."""
    found = (read_json(store / PREDICTION) or {}).get("predictions") or []
    return found[0] if found else None


def unit_prediction(unit: Unit, prediction: dict[str, Any]) -> float:
    """The wall seconds the stored prediction gives ``unit``: its own training (not a stage it reused), curve
    points and evaluations at the profile's one-thread figures, scaled to the machine and its cores."""
    profile = prediction["profile"]
    steps_fig, evals_fig = profile["step_cpu_s"], profile["eval_cpu_s"]
    trained = any(not str(note).startswith("reusing") for a in unit.attempts() for note in a.get("training", []))
    cpu = profile["unit_overhead_cpu_s"]
    if trained:
        cpu += (unit.steps() or 0) * steps_fig.get(unit.method, 0.0)
        points = [ln for ln in unit.log() if "curve_score" in ln]
        cpu += sum(evals_fig.get(str(ln.get("curve_task")), 0.0) for ln in points)
    cpu += sum(evals_fig.get(p.parent.name, 0.0) for p in unit.run_dir.glob("*/test.json"))
    return cpu * prediction["scale"] / profile["speedup_all_cores"]


def cost_section(units: list[Unit], store: Path) -> list[str]:
    """Per row: steps, units, wall and CPU seconds per unit, predicted wall seconds, attempts, flags; totals."""
    prediction = read_prediction(store)
    lines = ["Per unit (mean over a row's units): optimizer steps, wall and CPU seconds (all threads) of every attempt "
             "(a killed one's up to its last 30-second heartbeat), the wall seconds the dry run's figures predict for "
             "the unit's own work, the highest resident memory of its own runs (— where not recorded), its attempts "
             "(killed ones apart) and how many of its units ran beside other work (other processes used more than "
             f"{BESIDE_SHARE:.0%} of the machine's cores: their wall time is no measure of the recipe's cost).", "",
             "| Row | steps | units | wall s / unit | predicted | CPU s / unit | peak GiB | attempts (killed) | beside "
             "other work |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    totals = {"wall": 0.0, "cpu": 0.0, "predicted": 0.0, "alone_wall": 0.0, "alone_predicted": 0.0, "peak": 0.0}
    for key, mine in by_row(units).items():
        use = [_usage(u) for u in mine]
        pred = [unit_prediction(u, prediction) for u in mine] if prediction else []
        for u, x, p in zip(mine, use, pred or [None] * len(mine)):
            totals["wall"] += x["wall_s"]
            totals["cpu"] += x["cpu_s"]
            totals["peak"] = max(totals["peak"], x["peak"])
            if p is not None:
                totals["predicted"] += p
                if not x["beside"]:
                    totals["alone_wall"] += x["wall_s"]
                    totals["alone_predicted"] += p
        own = [x["unit_peak"] for x in use if x["unit_peak"] is not None]
        steps = sorted({u.steps() for u in mine}, key=lambda s: s or 0)
        lines.append(f"| {label(key)}{' (step 0)' if 'stop_at_step=0' in key.variant else ''} | "
                     f"{','.join(str(s) for s in steps)} | {len(mine)} | {_mean([x['wall_s'] for x in use])} | "
                     f"{_mean(pred)} | {_mean([x['cpu_s'] for x in use])} | "
                     f"{f'{max(own) / 1024:.2f}' if own else '—'} | {sum(x['attempts'] for x in use)} "
                     f"({sum(x['killed'] for x in use)}) | {sum(x['beside'] for x in use)} |")
    return lines + ["", *_totals(len(units), totals, prediction)]


def _totals(n: int, totals: dict[str, float], prediction: dict[str, Any] | None) -> list[str]:
    out = [f"All {n} units: {totals['wall'] / 3600:.2f} h wall, {totals['cpu'] / 3600:.2f} h CPU; the highest resident "
           f"memory {totals['peak'] / 1024:.2f} GiB."]
    if prediction is None:
        return out + ["No prediction is stored with these units (`bench reproduce` stores its dry run's figures "
                      "since the recipe's second run): the column is empty."]
    ratio = (f"; the units that had the machine to themselves took {totals['alone_wall'] / 3600:.2f} h against "
             f"{totals['alone_predicted'] / 3600:.2f} h predicted ({totals['alone_wall'] / totals['alone_predicted']:.2f}"
             "x)" if totals["alone_predicted"] else "")
    return out + [f"Predicted before the run ({prediction['at']}, commit {str(prediction.get('git_sha'))[:7]}): "
                  f"{prediction['hours']:.2f} h for the whole plan on {prediction['profile']['measured_on']}'s "
                  f"figures x{prediction['scale']:.2f} for this machine; for these units' own work "
                  f"{totals['predicted'] / 3600:.2f} h against {totals['wall'] / 3600:.2f} h measured{ratio}."]


def _usage(unit: Unit) -> dict[str, Any]:
    """A unit's attempts summed (its cost is all of them), its own peak where every attempt recorded one."""
    attempts = unit.attempts()
    own = [a.get("unit_peak_rss_mb") for a in attempts if a.get("state", "finished") == "finished"]
    return {"wall_s": sum(a.get("wall_s", 0.0) for a in attempts), "cpu_s": sum(a.get("cpu_s", 0.0) for a in attempts),
            "peak": max([a.get("unit_peak_rss_mb") or a.get("process_peak_rss_mb") or 0.0 for a in attempts] or [0.0]),
            "unit_peak": None if not own or None in own else max(own), "attempts": len(attempts),
            "killed": sum(a.get("state") == "killed" for a in attempts), "beside": any(beside(a) for a in attempts)}


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):,.0f}" if values else "—"
