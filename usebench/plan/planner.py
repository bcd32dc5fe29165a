"""Planning `bench run`: every run unit is built and validated before the first one trains.

A run unit is one chain of methods (a single method is a chain of one) trained on one target task's data with
one seed, then evaluated on its tasks. Planning resolves the chains (``--methods``, ``--setting``,
``--labeled-sizes``), builds every stage's config from its preset and overrides (a bad value fails here, not
after hours of training), loads each training corpus once to hash it, and names each unit by its config hash.
The plan is plain, picklable data: any launcher can hand a :class:`UnitSpec` to :func:`usebench.run.unit.run_unit`
in another process or on another machine.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from usebench.data.memo import planning, remember
from usebench.errors import BenchError, ConfigError, MissingDataError
from usebench.store import run_id
from usebench.plan.corpus import corpus_note, load_corpus
from usebench.plan.requirements import check_requirements
from usebench.plan.chains import backbone_pooling, drop_unfit, published_start, start_label
from usebench.plan.settings import (
    chain_label,
    chain_shape,
    check_shape,
    expand_aliases,
    expand_setting,
    parse_chain,
    pretraining_chains,
)
from usebench.plan.stage_data import checked_data
from usebench.plan.variants import TARGET, stage_variant, target_corpus, target_dev, unit_variant, with_eval_pooling
from usebench.plan.specs import BaselineSpec, Plan, RunOptions, StageSpec, UnitSpec
from usebench.plan.stage_identity import identity_config, stage_identity
from usebench.store.stage_ids import shared_home, stage_id
from usebench.train.config import config_to_dict, parse_overrides
from usebench.train.plugin import TrainingData

UNTRAINED = ("base", "bm25")


def plan_run(opts: RunOptions, data_root: Path, results_dir: Path | None = None) -> Plan:
    """Resolve, build and validate every unit of ``opts`` (nothing is trained or written). ``results_dir``: the store
    the plan runs against; what it already holds needs no WordNet, extra or Java (:func:`check_requirements`)."""
    from usebench import methods  # noqa: F401  (enrols the plugins)
    from usebench import tasks  # noqa: F401  (enrols the adapters)

    check_options(opts)
    with planning():  # each file read, each (method, config, data) checked once (usebench.data.memo)
        return _plan(opts, data_root, results_dir)


def _plan(opts: RunOptions, data_root: Path, results_dir: Path | None) -> Plan:
    """:func:`plan_run` inside its planning session."""
    from usebench.tasks import expand_tasks

    fallback = opts.split is None and bool(opts.labeled_sizes)  # the paper reads Fig. 2 on dev (TwitterPara: test)
    opts = replace(opts, split=opts.split or ("dev" if opts.labeled_sizes else "test"))
    chains, baselines = parse_methods(opts.methods)
    train_tasks = expand_tasks(opts.tasks)
    extra = expand_tasks(opts.eval_tasks) if opts.eval_tasks else []
    plan = Plan(split=str(opts.split))
    all_chains: set[tuple[str, ...]] = set(chains)  # a method whose chains were all left out is still named
    for task in train_tasks:
        evals = tuple(dict.fromkeys([task, *extra]))
        task_chains = unit_chains(chains, opts, task, plan.notes)
        all_chains.update(c for c, _ in task_chains)
        _plan_task(plan, task, task_chains, evals, opts, data_root, fallback)
    check_set_prefixes(opts.overrides, {m for c in all_chains for m in c})
    if opts.nli_sts_model and plan.units and not any(u.start for u in plan.units):
        raise ConfigError(f"--nli-sts-model {opts.nli_sts_model}: no chain of this run starts with the NLI+STSb "
                          "stages (it replaces them in nli-sts>METHOD chains: --setting adapt-nli-first or all)")
    plan.baselines = _baselines(baselines, train_tasks, extra, opts)
    check_requirements(plan, results_dir, data_root, opts.reevaluate)  # WordNet, extras, Java: before anything runs
    return plan


def check_options(opts: RunOptions) -> None:
    """Option values that no config check sees."""
    if opts.seeds < 1:
        raise ConfigError(f"--seeds must be >= 1, got {opts.seeds}")
    if any(s < 0 for s in opts.seed_list) or len(set(opts.seed_list)) != len(opts.seed_list):
        raise ConfigError(f"--seeds: a list of distinct non-negative seeds, got {list(opts.seed_list)}")
    if opts.batch_size < 1:
        raise ConfigError(f"--batch-size must be >= 1, got {opts.batch_size}")
    if any(n < 1 for n in opts.labeled_sizes):
        raise ConfigError(f"--labeled-sizes must be positive, got {list(opts.labeled_sizes)}")
    if opts.eval_pooling is not None:
        from usebench.eval.pooling import BUILTIN_POOLINGS

        if opts.eval_pooling not in BUILTIN_POOLINGS:
            raise ConfigError(f"--eval-pooling {opts.eval_pooling!r}: one of {', '.join(BUILTIN_POOLINGS)} (a "
                              "method's own pooling is its default: leave the option out)")
    if opts.labeled_sizes and opts.setting not in (None, "pretraining"):
        raise ConfigError("--labeled-sizes is the pre-training setup (Fig. 2); it cannot be combined with "
                          f"--setting {opts.setting}")


def parse_methods(specs: Sequence[str]) -> tuple[list[tuple[str, ...]], list[str]]:
    """(chains, untrained baselines) from ``--methods``; unknown names get a did-you-mean."""
    from usebench.registry import METHODS

    chains, baselines = [], []
    for spec in specs:
        chain = expand_aliases(parse_chain(spec))
        if len(chain) == 1 and chain[0] in UNTRAINED:
            baselines.append(chain[0])
            continue
        for name in chain:
            if name in UNTRAINED:
                raise ConfigError(f"--methods {spec!r}: {name!r} is an untrained baseline, not a training stage")
            if name not in METHODS:
                raise ConfigError(f"--methods {spec!r}: " + METHODS.unknown_message(name)
                                  + f"; untrained baselines: {', '.join(UNTRAINED)}")
        for earlier in chain[:-1]:
            if not METHODS.get(earlier).continuable:
                raise ConfigError(f"--methods {spec!r}: no stage can follow {earlier!r} (its checkpoint is not a "
                                  f"trainable encoder); put it last, e.g. nli-sts>{earlier}")
        chains.append(chain)
    return list(dict.fromkeys(chains)), list(dict.fromkeys(baselines))


def unit_chains(chains: list[tuple[str, ...]], opts: RunOptions, task: str,
                notes: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """(chain, setting) pairs for one target task: as given (filed under the setting their shape says), or
    expanded by ``--setting``/``--labeled-sizes`` (every expanded chain checked: shape, no stage after a
    stage that cannot be continued)."""
    from usebench.registry import METHODS

    def labeled(m: str) -> bool:
        return METHODS.get(m).data_kind == "labeled"

    if not (opts.labeled_sizes or opts.setting):
        return [(c, chain_shape(c, labeled)) for c in chains]
    pairs = pretraining_chains(chains, task, labeled) if opts.labeled_sizes else expand_setting(str(opts.setting), chains, task)
    pairs = drop_unfit([(tuple(expand_aliases(c)), s) for c, s in pairs], lambda m: METHODS.get(m).continuable, notes)
    for chain, setting in pairs:
        check_shape(chain, setting, labeled)
    return pairs


def check_set_prefixes(items: Sequence[str], names: set[str]) -> None:
    """``--set method.key=value`` must name a method of this run (a typo would otherwise be ignored)."""
    for item in items:
        key = item.split("=", 1)[0].strip()
        if "." not in key:
            continue
        prefix = key.split(".", 1)[0]
        if prefix not in names:
            close = difflib.get_close_matches(prefix, sorted(names), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"--set {item!r}: {prefix!r} is not a method of this run{hint} "
                              f"(methods: {', '.join(sorted(names)) or 'none'})")


def method_overrides(method_name: str, config_cls: type, items: Sequence[str]) -> dict[str, Any]:
    """``--set`` items for one method: ``key=value`` applies to every method, ``method.key=value`` to one."""
    mine = []
    for item in items:
        key = item.split("=", 1)[0]
        if "." in key:
            target, _, rest = key.partition(".")
            if target == method_name:
                mine.append(rest + item[len(key):])
        else:
            mine.append(item)
    try:
        return parse_overrides(config_cls, mine)
    except ConfigError as e:
        raise ConfigError(f"{method_name}: {e} (prefix a method-specific key, e.g. --set "
                          f"{method_name}.key=value)") from None


def _plan_task(plan: Plan, task: str, chains: list[tuple[tuple[str, ...], str]], evals: tuple[str, ...],
               opts: RunOptions, data_root: Path, fallback: bool) -> None:
    """The units of one target task (its corpus loaded once, only if a stage trains on sentences)."""
    from usebench.registry import METHODS

    corpus: TrainingData | None = None
    for chain, setting in chains:
        if corpus is None and any(METHODS.get(m).data_kind == "sentences" for m in chain):
            try:
                corpus = load_corpus(task, [str(f) for f in opts.corpus], opts.corpus_size, data_root)
            except MissingDataError as e:
                if opts.strict:
                    raise
                plan.skipped.append((f"train on {task}", str(e)))
                return
            note = corpus_note(corpus)
            if note and note not in plan.notes:
                plan.notes.append(note)
        # the labeled sizes grow the pre-training chains' supervised stage; --labeled-sizes' unsupervised rows
        # (each method alone, Fig. 2's flat line) train once per seed
        for size in (opts.labeled_sizes if setting == "pretraining" else ()) or (None,):
            for seed in opts.seed_list or range(opts.seeds):
                unit = build_unit(chain, setting, size, seed, task, corpus, evals, opts, data_root, plan.notes)
                plan.units.append(replace(unit, test_where_no_dev=fallback))


def build_unit(chain: tuple[str, ...], setting: str | None, labeled_size: int | None, seed: int, task: str,
               corpus: TrainingData | None, evals: tuple[str, ...], opts: RunOptions, data_root: Path,
               notes: list[str]) -> UnitSpec:
    """One unit: every stage's config built (and so validated), its training data identified, its home set."""
    from usebench.store.records import model_slug

    chain, start = published_start(chain, opts.nli_sts_model)
    stages: list[StageSpec] = []
    configs = []
    for k, name in enumerate(chain):
        size = labeled_size if k == len(chain) - 1 else None  # the target's supervised stage only (Fig. 2)
        stage, cfg_dict = build_stage(name, k, size, seed, task, corpus, opts, data_root, notes,
                                      stages[-1] if stages else None, start)
        stages.append(stage)
        configs.append(cfg_dict)
    first_model = configs[0]["config"]["model"]
    config = unit_config(chain, configs, stages, setting, labeled_size, opts, start)
    if opts.eval_pooling:  # the unit's id, not its stages': they are the plain unit's, trained once
        config["eval_pooling"] = opts.eval_pooling
    rid = run_id("+".join(chain), model_slug(first_model), config, seed)  # method names are folder-safe
    corpus, variant = target_corpus(stages, task), with_eval_pooling(unit_variant(stages), opts.eval_pooling)
    row = f"{start_label(chain, start)} ({corpus})" + (f" n={labeled_size}" if labeled_size else "")
    return UnitSpec(run_id=rid, chain=chain, stages=tuple(place_stages(stages, configs, seed, opts, start)), seed=seed,
                    task=task, corpus_files=tuple(str(f) for f in opts.corpus), corpus_size=opts.corpus_size,
                    evals=evals, config=config, row=row, split=str(opts.split), device=opts.device,
                    batch_size=opts.batch_size, strict=opts.strict, force=opts.force,
                    show_progress=opts.show_progress, start=start, variant=variant, train_corpus=corpus,
                    eval_pooling=opts.eval_pooling)


def place_stages(stages: list[StageSpec], configs: list[dict[str, Any]], seed: int,
                 opts: RunOptions, start: str | None = None) -> list[StageSpec]:
    """Each stage with its identity and home (:mod:`usebench.run.stages`): a first stage on the target's
    sentences is the single-method unit of the same config (its run directory is the home), any other stage
    lives in ``.stages/``. A stage that starts from a published checkpoint (``--nli-sts-model``) is no
    single-method unit: it lives in ``.stages/``, named with that checkpoint's content. Every external start
    (a checkpoint directory as ``model`` or ``decoder_model``) enters the identity by its fingerprint, so new
    weights at an old path are a new stage."""
    from usebench.store.records import model_slug

    out, parent = [], None
    for k, (stage, entry) in enumerate(zip(stages, configs)):
        if k == 0 and stage.data["kind"] == "corpus" and not start:
            solo = unit_config((stage.method,), [entry], [stage], None, None, opts)
            identity, home = {**solo, "seed": seed}, run_id(stage.method, model_slug(entry["config"]["model"]),
                                                            solo, seed)
        else:
            identity = stage_identity(stage.method, stage.preset, entry["config"], stage.data, seed, parent)
            fingerprints = external_starts(entry["config"])
            if k == 0 and start:  # a hub id is named by its id, a directory by its content
                fingerprints["model"] = _start_fingerprint(start)
            if fingerprints:
                identity["starts"] = fingerprints
            home = shared_home(stage.method, identity, seed)
        parent = stage_id(identity)
        out.append(replace(stage, home=home, identity=identity))
    return out


START_KEYS = ("model", "decoder_model")  # config fields naming a checkpoint a stage loads when it starts


def external_starts(config: dict[str, Any]) -> dict[str, str]:
    """``{key: fingerprint}`` for every checkpoint ``config`` starts from that is a local directory (not a
    packaged alias, a hub id or an earlier stage): its path proves nothing about its weights, its content does.
    Empty for the default and hub backbones, so their run ids are the ones stored before."""
    from usebench.eval.models import ALIASES

    out = {}
    for key in START_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value not in ALIASES and not value.startswith("stage:") \
                and Path(value).expanduser().is_dir():
            out[key] = _start_fingerprint(value)
    return out


def _start_fingerprint(model: str) -> str:
    """A checkpoint's content hash (weights, config, method.json), memoised by the model module while its files'
    sizes and mtimes stay the same; a hub id's hash of its id."""
    from usebench.eval.models import model_fingerprint, resolve_model

    return model_fingerprint(resolve_model(model))[:16]


def build_stage(name: str, k: int, labeled_size: int | None, seed: int, task: str, corpus: TrainingData | None,
                opts: RunOptions, data_root: Path, notes: list[str], previous: StageSpec | None = None,
                start: str | None = None) -> tuple[StageSpec, dict[str, Any]]:
    """(stage spec, its config entry) with the config validated by the method's own dataclass."""
    from usebench.registry import METHODS

    method = METHODS.get(name)
    preset = opts.preset or method.default_preset
    user = method_overrides(name, method.Config, opts.overrides)  # what the user changed: the variant's keys
    if opts.max_steps:
        user["max_steps"] = opts.max_steps
    derived: dict[str, Any] = {}  # what the planner fills in for this unit: never part of the variant
    if (start or opts.model) and k == 0:
        derived["model"] = start or opts.model
    if method.data_kind == "labeled" and labeled_size is not None:
        derived["labeled_size"] = labeled_size
    values = {**user, **derived}
    cfg = method.config(preset, values)
    if k == 0:  # the backbone's own constraints, settled here rather than when the unit starts
        fixed, note = method.backbone_defaults(cfg, user)
        if fixed:
            derived.update(fixed)
            values.update(fixed)
            cfg = method.config(preset, values)
        if note and note not in notes:
            notes.append(note)
    if method.data_kind == "labeled" and "pooling" not in values:  # keeps the pooling of where it starts
        from usebench.methods.parts.chain_pooling import supervised_pooling

        pooling = supervised_pooling(name, previous.pooling if previous else backbone_pooling(cfg.model),
                                     cfg.pooling, notes)
        if pooling != cfg.pooling:
            derived["pooling"] = values["pooling"] = pooling
            cfg = method.config(preset, values)
    if cfg.dev_task == TARGET:
        target = target_dev(name, task, notes)
        derived.update(target)
        values.update(target)
        cfg = method.config(preset, values)
    dev_corpus = _require_dev(cfg, data_root) if cfg.dev_every else None
    if cfg.curve_task:  # the learning curve's test split is read while training: there before anything trains
        _require_task_split(cfg.curve_task, "test", data_root, "curve_task")
    if k == 0:
        _check_backbone(cfg.model, name, preset, opts, start)
    data, steps = checked_data(method, cfg, k, task, corpus, labeled_size, seed, data_root)
    if dev_corpus is not None:  # the validation sentences select the checkpoint: their content is the identity
        data = {**data, "dev_corpus_sha256": dev_corpus}
    cfg_dict = identity_config(method, preset, config_to_dict(cfg))  # bookkeeping at the preset's values
    if k > 0:
        cfg_dict["model"] = f"stage:{k}"  # the previous stage's export (its path is no part of the identity)
    variant = stage_variant(method, preset, cfg, derived, task)
    return (StageSpec(name, preset, values, data, pooling=method.eval_pooling(cfg), steps=steps, variant=variant),
            {"method": name, "preset": preset, "config": cfg_dict})


def _check_backbone(model: str, name: str, preset: str, opts: RunOptions, start: str | None) -> None:
    """The first stage's backbone can be loaded here; a preset's default backbone gets a hint."""
    try:
        _require_model(model)
    except BenchError as e:
        if opts.model or start:
            raise
        default = " (the default)" if opts.preset is None else ""
        raise BenchError(f"{e} [{model} is the backbone of {name}'s preset {preset!r}{default}; "
                         "`--preset smoke` trains the packaged MiniLM]") from None


@lru_cache(maxsize=None)
def _require_model(name: str) -> None:
    """The first stage's backbone can be loaded here (checked once per name, before anything trains)."""
    from usebench.eval.models import check_model_available

    check_model_available(name)


def _require_dev(cfg: Any, data_root: Path) -> str | None:
    """The checkpoint selection's data: the validation corpus (dev_metric=loss; returns its sha256, which names
    the stage with its content, not its path), or the dev task's dev split and the metric it selects on."""
    from usebench.registry import TASKS
    from usebench.train.config import VALIDATION_LOSS, dev_tasks
    from usebench.train.validation import corpus_sha256, read_dev_corpus

    if cfg.dev_metric == VALIDATION_LOSS:
        return remember(("dev-corpus", cfg.dev_corpus, cfg.max_chars, cfg.batch_size),
                        lambda: corpus_sha256(read_dev_corpus(cfg, cfg.batch_size)))
    for name in dev_tasks(cfg.dev_task):  # "stsb,sickr": each must have its dev files (and the metric)
        task = TASKS.get(name)
        task.require(data_root, "dev")
        if cfg.dev_metric and cfg.dev_metric not in task.metric_names:
            raise ConfigError(f"dev_metric={cfg.dev_metric!r} is not a metric of {name} (it has: "
                              f"{', '.join(task.metric_names)}; or 'loss' with dev_corpus)")
    return None


def _require_task_split(name: str, split: str, data_root: Path, key: str) -> None:
    """``name`` is a task with ``split``, whose files are in the data root."""
    from usebench.registry import TASKS

    task = TASKS.get(name)
    if split not in task.splits:
        raise ConfigError(f"{key}={name!r}: the task has no {split!r} split (it has: {', '.join(task.splits)})")
    task.require(data_root, split)


def unit_config(chain: tuple[str, ...], configs: list[dict[str, Any]], stages: list[StageSpec], setting: str | None,
                labeled_size: int | None, opts: RunOptions, start: str | None = None) -> dict[str, Any]:
    """The unit's identity. A single unsupervised method keeps the layout of earlier versions (same run ids)."""
    if len(chain) == 1 and stages[0].data["kind"] == "corpus":
        config: dict[str, Any] = {**configs[0], "corpus": {k: v for k, v in stages[0].data.items() if k != "kind"}}
        if not start and external_starts(configs[0]["config"]):  # a checkpoint directory: named by its content
            config["starts"] = external_starts(configs[0]["config"])
    else:
        config = {"method": chain_label(chain), "chain": list(chain),
                  "stages": [{**c, "data": s.data, **_starts(c)} for c, s in zip(configs, stages)]}
    if opts.corpus_size:  # reports draw the corpus-size curve (and separate rows) from this key
        config["corpus_size"] = opts.corpus_size
    if setting and setting != "unsupervised":
        config["setting"] = setting
    if labeled_size is not None:
        config["labeled_size"] = labeled_size
    if start:  # --nli-sts-model: the NLI+STSb stages are a published checkpoint, named with its content hash
        from usebench.eval.models import model_fingerprint, resolve_model

        config["nli_sts_model"] = {"model": start, "fingerprint": model_fingerprint(resolve_model(start))[:16]}
    return config


def _starts(entry: dict[str, Any]) -> dict[str, Any]:
    """``{"starts": {...}}`` for a stage entry that starts from a checkpoint directory, else nothing."""
    found = external_starts(entry["config"])
    return {"starts": found} if found else {}


def _baselines(names: list[str], train_tasks: list[str], extra: list[str], opts: RunOptions) -> list[BaselineSpec]:
    """Untrained rows, each evaluated once on every task of the run (rank 0 only under torchrun).

    ``base`` is the preset's backbone with the paper's pooling for that row (``paper``: bert-base-uncased, mean),
    so it is the model the trained rows start from, scored as the paper scores it.
    """
    from usebench.train.baseline import base_encoder

    if int(os.environ.get("RANK", "0")) != 0:
        return []
    evals = tuple(dict.fromkeys([*train_tasks, *extra]))
    specs = []
    for name in names:
        if name == "bm25":
            specs.append(BaselineSpec(name, "bm25", evals))
        else:
            model, pooling = base_encoder(opts.preset, opts.model)
            _require_model(model)
            specs.append(BaselineSpec(name, model, evals, pooling))
    return specs
