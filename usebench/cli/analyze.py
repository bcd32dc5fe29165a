"""`bench analyze content-words`: the TSDAE paper's relevant-content-words analysis (§7.2, Figure 4, App. H)."""
from __future__ import annotations

from pathlib import Path

import click

from usebench.cli.options import DATA_ROOT


@click.group("analyze")
def analyze() -> None:
    """Analyses of a model beyond task scores."""


@analyze.command("content-words")
@click.option("--model", required=True, help="Model to analyse (HF id, local checkpoint, or minilm).")
@click.option("--pooling", default=None, help="Pooling (default: the checkpoint's own).")
@click.option("--tasks", "task_spec", default="useb", show_default=True,
              help="Tasks or groups whose relevant pairs are analysed (test split); the average is over these.")
@click.option("--max-pairs", type=click.IntRange(min=1), default=None,
              help="A seeded subsample of at most N relevant pairs per task (default: all).")
@click.option("--device", default=None, help="cpu | cuda (default: cuda when available).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports/content-words"),
              show_default=True, help="Folder for <model>.json (every pair's word and tag) and <model>.md.")
@DATA_ROOT
def content_words(model, pooling, task_spec, max_pairs, device, out, data_root) -> None:
    """Per relevant pair, the word whose removal lowers the cosine most; the share of each POS-tag group per task
    and averaged, beside the prior and the paper's Figure 4 rows."""
    from usebench.eval.encoder import load_encoder
    from usebench.store.records import model_slug
    from usebench.paths import default_data_root
    from usebench.registry import TASKS
    from usebench.store import write_json_atomic
    from usebench.analysis import content_words as cw
    from usebench.analysis.pos_tags import GROUPS, TAGGER, require_tagger

    from usebench import tasks  # noqa: F401
    from usebench.tasks import expand_tasks

    require_tagger()  # before any model loads
    data_root = Path(data_root or default_data_root())
    names = expand_tasks(task_spec)
    for name in names:  # every task has pairs to read, before any model loads
        cw.check_pairs_task(name)
    encoder = load_encoder(model, pooling, device=device)
    dists = []
    for name in names:
        pairs = cw.sample_pairs(cw.relevant_pairs(name, TASKS.get(name).load("test", data_root)), max_pairs)
        click.echo(f"{name}: {len(pairs)} relevant pair(s)", err=True)
        dists.append(cw.analyse_task(name, pairs, encoder))
    avg, prior = cw.averaged(dists), cw.averaged(dists, "prior")
    out.mkdir(parents=True, exist_ok=True)
    stem = out / model_slug(model)
    write_json_atomic(stem.with_suffix(".json"), {
        "model": model, "pooling": encoder.pooling, "tagger": TAGGER, "tasks": names, "max_pairs": max_pairs,
        "average": avg, "prior": prior,
        "per_task": {d.task: {"pairs": len(d.pairs), "shares": d.shares, "prior": d.prior,
                              "words": [vars(p) for p in d.pairs]} for d in dists}})
    text = markdown(model, dists, avg, prior, GROUPS)
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    click.echo(text)


def markdown(model: str, dists, avg: dict, prior: dict, groups) -> str:
    """Our rows (per task, averaged, prior) above Figure 4's printed rows."""
    from usebench.report.reference import entries

    head = "| row | " + " | ".join(groups) + " |\n|---|" + "---|" * len(groups) + "\n"

    def line(label: str, values: dict) -> str:
        return f"| {label} | " + " | ".join(f"{values[g]:.1f}" for g in groups) + " |\n"

    ours = "".join(line(f"{model} · {d.task} ({len(d.pairs)} pairs)", d.shares) for d in dists)
    ours += line(f"{model} · average of {len(dists)} task(s)", avg) + line("prior (same sentences)", prior)
    paper = "".join(line(f"paper: {e.label}", {g: e.values[f"pos.{g}"] for g in groups})
                    for e in entries("tsdae-figure4"))
    note = ("Share (%) of relevant pairs whose most relevant word has each tag group; tags by TextBlob's Pattern "
            "tagger (the paper: CoreNLP). Paper rows: Figure 4, averaged over AskUbuntu, CQADupStack, TwitterPara, "
            "SciDocs with the paper's models.\n")
    remarks = "".join(f"\npaper: {e.label}: {e.note}\n" for e in entries("tsdae-figure4") if e.note)
    return f"## Relevant content words: {model}\n\n{note}\n" + head + ours + "\n" + head + paper + remarks

