"""A model card (``README.md``) in every exported checkpoint, in sentence-transformers' format.

sentence-transformers saves a ``README.md`` whose YAML header carries the Hub's model-card metadata
(``library_name: sentence-transformers``, ``pipeline_tag: sentence-similarity``, ``base_model``, ``tags`` and a
``model-index`` of evaluation results) above a body of fixed sections (Model Details, Usage, Evaluation, Training
Details, Framework Versions); ``SentenceTransformer(path)`` reads it back as the model's card and keeps it when the
model is saved again. Ours has the same header, written by ``huggingface_hub.ModelCardData`` (the Hub's own
serializer), and the same sections, filled from the checkpoint's ``method.json`` (method, resolved config, training
data and its sha256, steps, seed, pooling, precision, step path, versions) and from the results the store holds for
it. The store's results are listed in ``usebench_card.json`` beside the card: the sha256 of the weights they scored,
one result per (task, split) (paths relative to the checkpoint), and the provenance recorded with the first result of
these weights (the command that trained them, made shareable by the caller: no path of this machine; the suite's
version and git commit). :func:`add_result` adds one and rewrites the card, so a later evaluation (`bench eval
--model <checkpoint>`, a re-scored result) shows in it, replacing an earlier result of the same task and split, never
the provenance; new weights in the folder (a retrained unit) start a new list. Nothing here loads the model.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from usebench.store import read_json, write_json_atomic

CARD, CARD_INDEX = "README.md", "usebench_card.json"
HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2"}  # our aliases of Hub models
# the Hub's model-index task types (as sentence-transformers' evaluators write them), by our task families
TASK_TYPES = {"askubuntu": "reranking", "scidocs": "reranking", "cqadupstack": "information-retrieval",
              "quora": "information-retrieval", "twitterpara": "pair-classification"}
TAGS = ["sentence-transformers", "sentence-similarity", "feature-extraction", "usebench"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def read_index(checkpoint: Path) -> dict[str, Any]:
    """``usebench_card.json``: {"weights_sha256", "results": [paths relative to the checkpoint], "command",
    "git_sha", "suite_version"} (an index written before the weights' sha256 has results and command only)."""
    data = read_json(Path(checkpoint) / CARD_INDEX)
    return data if isinstance(data, dict) else {}


def card_results(checkpoint: Path) -> list[dict[str, Any]]:
    """The result records the card lists, read from the store now (a file gone from the store is left out), one per
    (task, split): the latest listed."""
    records = (read_json(Path(checkpoint) / rel) for rel in read_index(checkpoint).get("results", []))
    latest = {_key(r): r for r in records if isinstance(r, dict) and _key(r) is not None}
    return list(latest.values())


def _key(record: dict[str, Any] | None) -> tuple[str, str] | None:
    task = (record or {}).get("task") or {}
    return (str(task["name"]), str(task["split"])) if "name" in task and "split" in task else None


def weights_digest(checkpoint: Path) -> str | None:
    """sha256 over the checkpoint's weight files' sha256 (the weights the card's results scored); None: none here."""
    import hashlib

    from usebench.eval.models import weights_sha256

    files = weights_sha256(checkpoint)
    return hashlib.sha256("\n".join(f"{n} {h}" for n, h in sorted(files.items())).encode()).hexdigest() \
        if files else None


def add_result(checkpoint: str | Path, result: str | Path, command: str | None = None) -> Path:
    """List the stored result file ``result`` in ``checkpoint``'s card (one result per task and split: it replaces an
    earlier one of its task and split) and rewrite the card. The provenance (``command``: the grid command that
    trained it, with the suite's version and git commit) is recorded with the first result of these weights and kept;
    other weights in the folder than the index names start a new index."""
    from usebench._version import __version__
    from usebench.store import git_sha

    checkpoint = Path(checkpoint)
    index, digest = read_index(checkpoint), weights_digest(checkpoint)
    if index.get("weights_sha256", digest) != digest:
        index = {}  # retrained in place: the listed results scored other weights
    rel = os.path.relpath(Path(result).resolve(), checkpoint.resolve())
    key = _key(read_json(Path(result)))
    results = [r for r in index.get("results", []) if r != rel and _key(read_json(checkpoint / r)) != key] + [rel]
    provenance = {k: index.get(k) for k in ("command", "git_sha", "suite_version")} if index.get("command") else \
        {"command": command, "git_sha": git_sha(), "suite_version": __version__}
    write_json_atomic(checkpoint / CARD_INDEX, {"weights_sha256": digest, "results": results, **provenance})
    return write_card(checkpoint)


def write_card(checkpoint: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Write ``checkpoint/README.md`` from ``meta`` (its method.json; read when not given) and the listed results."""
    checkpoint = Path(checkpoint)
    if meta is None:
        meta = json.loads((checkpoint / "method.json").read_text(encoding="utf-8"))
    results = sorted(card_results(checkpoint), key=lambda r: (r["task"]["name"], r["task"]["split"]))
    text = "---\n" + card_data(meta, results).to_yaml() + "\n---\n\n" + card_body(checkpoint, meta, results)
    path = checkpoint / CARD
    tmp = path.with_name(f".{CARD}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def export_card(checkpoint: Path, meta: dict[str, Any]) -> None:
    """:func:`write_card` for an export being written: a card that cannot be made is said, never a failed export."""
    try:
        write_card(checkpoint, meta)
    except Exception as e:  # noqa: BLE001  (the weights matter more than their card)
        print(f"  {checkpoint}: no model card written ({type(e).__name__}: {e})", file=sys.stderr, flush=True)


def backbone(meta: dict[str, Any]) -> str:
    """The backbone a checkpoint was trained from: a chain's stage starts from the previous stage's export, whose
    own method.json names where it started, down to the first backbone."""
    base, seen = str(meta.get("base_model") or ""), set()
    while base and base not in seen and (Path(base) / "method.json").is_file():
        seen.add(base)
        try:
            base = str(json.loads((Path(base) / "method.json").read_text(encoding="utf-8")).get("base_model") or "")
        except (OSError, ValueError):
            break
    return base


def hub_id(model: str) -> str | None:
    """The Hub id of ``model`` (our alias resolved), None for a local folder (the Hub's ``base_model`` is an id)."""
    model = HUB_IDS.get(model, model)
    return model if _HUB_ID.match(model) and not Path(model).exists() else None


def card_data(meta: dict[str, Any], results: list[dict[str, Any]]) -> Any:
    """The YAML header as the Hub's ``ModelCardData`` (huggingface_hub validates and writes the model-index)."""
    from huggingface_hub import EvalResult, ModelCardData

    evals = [EvalResult(task_type=_task_type(r), dataset_type=f"usebench/{r['task']['name']}",
                        dataset_name=r["task"]["name"], dataset_split=r["task"]["split"],
                        dataset_revision=str(r["task"].get("data_sha256") or "") or None,
                        metric_type=_metric_id(metric), metric_name=metric, metric_value=float(value))
             for r in results for metric, value in sorted(r.get("scores", {}).items())]
    tags = TAGS + [f"method:{meta.get('method')}", f"pooling:{meta.get('pooling')}"]
    return ModelCardData(model_name=_title(meta), base_model=hub_id(backbone(meta)), library_name="sentence-transformers",
                         pipeline_tag="sentence-similarity", tags=tags, eval_results=evals or None)


def _task_type(record: dict[str, Any]) -> str:
    task = record["task"]
    if task.get("group") == "sts":
        return "semantic-similarity"
    return TASK_TYPES.get(str(task["name"]).split(":")[0].split("_")[0], "sentence-similarity")


def _metric_id(name: str) -> str:
    """A metric name as the Hub's metric ids are written (``map@100`` -> ``map_at_100``)."""
    return re.sub(r"[^a-z0-9_]+", "_", name.lower().replace("@", "_at_")).strip("_") or "score"


def _title(meta: dict[str, Any]) -> str:
    data = training_data(meta)
    return f"{meta.get('method')} ({data.get('label', 'its corpus')}, seed {meta.get('seed', '?')}), usebench"


def training_data(meta: dict[str, Any]) -> dict[str, Any]:
    """What the checkpoint trained on, as its config records it: a unit's ``corpus``, a stage's ``data``, or the
    training loop's own fingerprint (``corpus_sha256``)."""
    config = meta.get("config") or {}
    data = config.get("corpus") or config.get("data")
    if isinstance(data, dict):
        return data
    return {"sha256": config["corpus_sha256"]} if config.get("corpus_sha256") else {}



# --- the Markdown body: sentence-transformers' sections ----------------------------------------------------------

def card_body(checkpoint: Path, meta: dict[str, Any], results: list[dict[str, Any]]) -> str:
    """The card's Markdown below the YAML header."""
    parts = [f"# {_title(meta)}\n", _intro(checkpoint, meta), _details(checkpoint, meta), _usage(checkpoint),
             _evaluation(results), _training(meta), _reproduce(checkpoint, meta, results), _versions(meta)]
    return "\n".join(p for p in parts if p)


def _intro(checkpoint: Path, meta: dict[str, Any]) -> str:
    base = backbone(meta)
    return (f"This is a [sentence-transformers](https://www.SBERT.net) model trained from `{base}` with usebench's "
            f"`{meta.get('method')}` trainer (unsupervised sentence-embedding learning). It maps sentences to a "
            f"{_dimension(checkpoint)}-dimensional dense vector space.\n")


def _dimension(checkpoint: Path) -> str:
    """The embedding size: the pooling module's width, else the backbone's hidden size."""
    for config in sorted(checkpoint.glob("*_Pooling/config.json")) + [checkpoint / "config.json"]:
        data = read_json(config, {})
        for key in ("word_embedding_dimension", "hidden_size", "d_model", "dim"):
            if isinstance(data.get(key), int):
                return str(data[key])
    return "?"


def _details(checkpoint: Path, meta: dict[str, Any]) -> str:
    base = backbone(meta)
    hub = hub_id(base)
    data = training_data(meta)
    lines = ["## Model Details\n", "### Model Description", "- **Model Type:** Sentence Transformer",
             f"- **Base model:** [{hub}](https://huggingface.co/{hub})" if hub else f"- **Base model:** `{base}`",
             f"- **Maximum Sequence Length:** {meta.get('max_length')} tokens",
             f"- **Output Dimensionality:** {_dimension(checkpoint)} dimensions",
             "- **Similarity Function:** Cosine Similarity", f"- **Pooling:** {meta.get('pooling')}",
             f"- **Training Dataset:** {data.get('label', 'the corpus')}"
             + (f" ({data['sentences']:,} sentences)" if isinstance(data.get("sentences"), int) else "")
             + (f", sha256 `{data['sha256']}`" if data.get("sha256") else ""),
             "", "### Full Model Architecture", "", "```", _architecture(checkpoint), "```", ""]
    return "\n".join(lines)


def _architecture(checkpoint: Path) -> str:
    """The module list as sentence-transformers prints a model (from modules.json and the modules' configs)."""
    modules = read_json(checkpoint / "modules.json")
    if modules is None:
        return "SentenceTransformer(?)"
    lines = []
    for m in modules:
        kind = str(m.get("type", "")).rsplit(".", 1)[-1]
        folder = checkpoint / m.get("path", "")
        name = "sentence_bert_config.json" if kind == "Transformer" else "config.json"
        config = read_json(folder / name, {})
        if kind.endswith("Pooling"):
            config = {k: v for k, v in config.items() if v is not False}  # the flags that are on, as ST shows them
        lines.append(f"  ({m.get('idx')}): {kind}({config})")
    return "SentenceTransformer(\n" + "\n".join(lines) + "\n)"


def _shown_path(checkpoint: Path) -> str:
    """The checkpoint as a reader of the card names it: relative to where the command runs when under it, else its
    run folder and name (never this machine's absolute path; an export being written is shown at its final name)."""
    path = checkpoint.with_name("checkpoint") if ".tmp-" in checkpoint.name else checkpoint
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return f"{path.parent.name}/{path.name}"


def _usage(checkpoint: Path) -> str:
    return ("## Usage\n\n### Direct Usage (Sentence Transformers)\n\n```python\n"
            "from sentence_transformers import SentenceTransformer\n\n"
            f"model = SentenceTransformer({_shown_path(checkpoint)!r})\n"
            "embeddings = model.encode([\"How do I mount a USB drive?\", \"Mounting a flash drive in Ubuntu\"])\n"
            "print(embeddings.shape)\n```\n")


def _evaluation(results: list[dict[str, Any]]) -> str:
    """Every stored result of this checkpoint: all its metrics (0-1, as stored), its data's sha256 and when."""
    if not results:
        return "## Evaluation\n\nNo stored evaluation of this checkpoint yet (`bench eval --model <this folder>`).\n"
    rows = ["| task | split | metric | value | data sha256 | evaluated |", "|---|---|---|---:|---|---|"]
    for r in results:
        task, when = r["task"], str(r.get("created_at", ""))
        for metric, value in sorted(r.get("scores", {}).items()):
            main = " (main)" if metric == r.get("main_metric") else ""
            rows.append(f"| {task['name']} | {task['split']} | {metric}{main} | {float(value):.4f} | "
                        f"`{str(task.get('data_sha256', ''))[:12]}` | {when} |")
    partial = [r["task"]["name"] for r in results if r["task"].get("partial")]
    note = f"\nNot the release's data (--allow-partial): {', '.join(partial)}.\n" if partial else ""
    return "## Evaluation\n\n### Metrics\n\n" + "\n".join(rows) + "\n" + note


def _training(meta: dict[str, Any]) -> str:
    config = meta.get("config") or {}
    cfg = config.get("config") if isinstance(config.get("config"), dict) else config
    amp = cfg.get("amp", "off") if isinstance(cfg, dict) else "off"
    steps = f"{meta.get('steps')}" + (f" (selected on dev at step {meta['dev']['step']} of "
                                      f"{meta.get('steps_trained')}: {meta['dev'].get('task')} "
                                      f"{meta['dev'].get('metric')})" if isinstance(meta.get("dev"), dict) else "")
    lines = ["## Training Details\n", f"- **Method:** `{meta.get('method')}`"
             + (f", preset `{config['preset']}`" if config.get("preset") else ""),
             f"- **Steps:** {steps}", f"- **Seed:** {meta.get('seed')}",
             f"- **Precision:** {'fp32' if amp in ('off', None) else amp} (amp = {amp})",
             f"- **Step path:** `{json.dumps(meta.get('step_path') or {}, sort_keys=True)}`",
             f"- **Config hash:** `{meta.get('config_hash')}`", "",
             "### Training Hyperparameters (the resolved config)", "", "<details><summary>config</summary>", "",
             "```json", json.dumps(config, indent=2, sort_keys=True, default=str), "```", "", "</details>", ""]
    return "\n".join(lines)


def _reproduce(checkpoint: Path, meta: dict[str, Any], results: list[dict[str, Any]]) -> str:
    """The code (suite version, git commit), the data (each by its release and sha256) and the command."""
    index = read_index(checkpoint)
    command = index.get("command")
    if not command:
        return ""
    sha, version = index.get("git_sha"), index.get("suite_version") or (meta.get("versions") or {}).get("usebench")
    code = f"usebench {version}" + (f" at commit `{sha}` (`git checkout {sha}`)" if sha else
                                    " (no git commit recorded: not run from a clone)")
    data = training_data(meta)
    lines = [f"- training data: {data.get('label', 'its corpus')}, sha256 `{data.get('sha256', 'not recorded')}`"
             + _release_of_training(data.get("sha256"))]
    lines += [f"- {r['task']['name']}/{r['task']['split']}: sha256 `{r['task'].get('data_sha256', 'not recorded')}`"
              + _release_of(r["task"]["name"], r["task"]["split"], r["task"].get("data_sha256")) for r in results]
    return ("### Reproduce\n\n" + f"Code: {code}. Data (the data root, `$BENCH_DATA`, holds them; `bench data "
            "download` fetches each release with its checksums):\n\n" + "\n".join(lines) + "\n\nThe command that "
            "trained it, run from the repository's root (finished units are reused, so running it again trains only "
            f"what is missing):\n\n```bash\n{command}\n```\n")


def _release_of(task: str, split: str, sha: str | None) -> str:
    """Whether ``sha`` is the release the package pins for ``task``/``split``, and which components hold it."""
    from usebench.data.releases import load_releases

    entry = (load_releases().evaluation.get(task) or {}).get(split) or {}
    pinned = entry.get("sha256")
    parts = ", ".join(entry.get("components") or entry.get("files") or [])
    if pinned and pinned == sha:
        return " (the pinned release)"
    if pinned:
        return f" (not the pinned release, `{pinned[:12]}…`)"
    return f" (release {parts}: no sha256 pinned)" if parts else " (no release pinned for it)"


def _release_of_training(sha: str | None) -> str:
    from usebench.data.releases import load_releases

    names = [n for n, e in load_releases().training.items() if sha and e.get("sha256") == sha]
    return f" (the pinned release {names[0]})" if names else ""


def _versions(meta: dict[str, Any]) -> str:
    versions = meta.get("versions") or {}
    names = {"usebench": "usebench", "python": "Python", "torch": "PyTorch", "transformers": "Transformers",
             "sentence_transformers": "Sentence Transformers"}
    lines = [f"- {label}: {versions[key]}" for key, label in names.items() if key in versions]
    return "### Framework Versions\n\n" + "\n".join(lines) + "\n" if lines else ""
