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
@click.option("--paths", default=None, help="Our step paths to time: old (fast_path=off), new (fast_path=on), or "
              "old,new = both (default: both on a GPU, old on a CPU, where the new path compiles with inductor).")
@click.option("--precisions", default=None, help="Comma-separated of fp32, tf32, bf16, fp16 (default: fp32,tf32,bf16 "
              "on a GPU, fp32,bf16 on a CPU; fp16 counts the steps its loss scaler skips on each path).")
@click.option("--sections", default=None, help="Comma-separated sections to run (default: all): versions, "
              "precision, faiss, matmul, training, search, encode, determinism.")
def doctor(device: str | None, quick: bool, json_file: Path | None, trainers: str | None, paths: str | None,
           precisions: str | None, sections: str | None) -> None:
    """Check this machine before a grid: minutes on a GPU (the training section's size is set by --methods,
    --paths and --precisions), about a minute with --quick on a CPU."""
    from usebench.train.runtime import prepare_deterministic_env

    prepare_deterministic_env()  # before any cuBLAS handle: the determinism section needs a fixed workspace
    from usebench.eval.encoder import pick_device
    from usebench.doctor import PATHS, SECTIONS, TRAINERS, run_doctor, summary
    from usebench.doctor.report import Choice

    dev = pick_device(device)
    where = f"cuda:{dev.index or 0}" if dev.type == "cuda" else "cpu"
    choice = Choice(trainers=_listed(trainers, "--methods", TRAINERS) or TRAINERS,
                    paths=_listed(paths and paths.replace("both", "old,new"), "--paths", tuple(PATHS)),
                    precisions=_listed(precisions, "--precisions", ("fp32", "tf32", "bf16", "fp16")),
                    sections=_listed(sections, "--sections", SECTIONS))
    save = None
    if json_file:
        json_file.parent.mkdir(parents=True, exist_ok=True)

        def save(report: dict) -> None:  # after every section: a run cut short keeps what it measured
            from usebench.store import write_json_atomic

            write_json_atomic(json_file, report)

    report = run_doctor(where, quick=quick, log=lambda line: click.echo(line, err=True), save=save, choice=choice)
    for line in summary(report):
        click.echo(line)


def _listed(value: str | None, flag: str, known: tuple[str, ...]) -> tuple[str, ...] | None:
    """A comma-separated option as a tuple in the given order (None when not given); unknown names fail."""
    from usebench.errors import ConfigError

    if not value:
        return None
    chosen = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = sorted(set(chosen) - set(known))
    if unknown or not chosen:
        raise ConfigError(f"{flag}: unknown {unknown} (known: {', '.join(known)})")
    return chosen
