"""`bench doctor`: what this machine can do (versions, precisions, matmul rate, a step per trainer with its MFU,
exact search at Quora's scale, encode rate, resume determinism), before a grid runs on it."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("doctor")
@click.option("--device", default=None, help="cuda[:N] or cpu (default: the GPU when one is visible).")
@click.option("--quick", is_flag=True, help="Every section at toy size (seconds on a CPU; what CI runs).")
@click.option("--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the full report here.")
@click.option("--methods", "trainers", default=None, help="Comma-separated trainers to time (default: all).")
def doctor(device: str | None, quick: bool, json_file: Path | None, trainers: str | None) -> None:
    """Check this machine before a grid: about 8 minutes on a GPU, seconds with --quick."""
    from usebench.train.runtime import prepare_deterministic_env

    prepare_deterministic_env()  # before any cuBLAS handle: the determinism section needs a fixed workspace
    from usebench.errors import ConfigError
    from usebench.eval.encoder import pick_device
    from usebench.run.doctor import TRAINERS, run_doctor, summary

    dev = pick_device(device)
    where = f"cuda:{dev.index or 0}" if dev.type == "cuda" else "cpu"
    chosen = tuple(t.strip() for t in trainers.split(",")) if trainers else TRAINERS
    unknown = sorted(set(chosen) - set(TRAINERS))
    if unknown:
        raise ConfigError(f"--methods: unknown trainers {unknown} (known: {', '.join(TRAINERS)})")
    save = None
    if json_file:
        json_file.parent.mkdir(parents=True, exist_ok=True)

        def save(report: dict) -> None:  # after every section: a run cut short keeps what it measured
            from usebench.store import write_json_atomic

            write_json_atomic(json_file, report)

    report = run_doctor(where, quick=quick, trainers=chosen, log=lambda line: click.echo(line, err=True), save=save)
    for line in summary(report):
        click.echo(line)
