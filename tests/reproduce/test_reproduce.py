"""`bench reproduce` on the fixture data root (tests/reproduce/reproduce_root.py) with the tiny random BERT.

The dry run of each paper's full recipe prints units, stages, reuse, inputs and cost and exits 0; each table and
figure that docs/papers/*.md says can be regenerated is reproduced end to end (a couple of steps, one seed,
``--methods`` restricted to stay fast) into one shared store, and a table that reproduces a published one is held
to it: the paper's blocks and rows in order, its columns, and no empty cell in a row the recipe trained."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from usebench.cli.main import main

REFERENCE = Path(__file__).resolve().parents[2] / "usebench" / "report" / "paper_reference.json"
GLOVE = Path(__file__).resolve().parents[1] / "assets" / "wordvec" / "tiny_glove.txt"
# A couple of steps at small batches; the method-prefixed sets apply to the runs that hold those methods only.
SMALL = ["--preset", "smoke", "--seeds", "1", "--max-steps", "2", "--set", "batch_size=8", "--set", "max_length=16",
         "--set", "sbert-nli.batch_size=2", "--set", "sbert-stsb.batch_size=2", "--set", "paser.synonym_ratio=0",
         "--labeled-sizes", "2,4", "--corpus-sizes", "16", "--allow-merged-runs"]


def _invoke(args: list[str]):
    return CliRunner().invoke(main, ["reproduce", *args], catch_exceptions=False)


def _common(root: Path, model: Path, results: Path, paper: str) -> list[str]:
    glove = ["--glove", str(GLOVE)] if paper == "tsdae" else []  # the only recipe with an Avg. GloVe row
    return ["--model", str(model), *SMALL, *glove, "--data-root", str(root), "--results-dir", str(results)]


@pytest.mark.parametrize("paper", ["tsdae", "denosent", "paser", "thesis"])
def test_dry_run_of_the_full_recipe_prints_the_plan(paper, reproduce_root, tiny_bert_dir, tmp_path):
    result = _invoke([paper, "--dry-run", *_common(reproduce_root, tiny_bert_dir, tmp_path / "r", paper)])
    out = result.output
    assert result.exit_code == 0, out
    assert f"bench reproduce {paper}:" in out and "distinct unit(s); stages:" in out
    assert "stage training(s)" in out and "reused from another unit of this plan" in out
    # issue 53: one estimate of what remains, with its basis (the other cost models, GPU-hours among them, with -v)
    assert "cost of what remains (" in out and "basis: " in out and "optimizer steps" in out
    assert "CANNOT PLAN" not in out  # every run the fixtures can hold is planned
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())  # nothing trained or written


def test_dry_run_lists_missing_inputs_with_what_provides_them(reproduce_root, tiny_bert_dir, tmp_path):
    args = ["tsdae", "--tables", "table2", "--dry-run", "--model", str(tiny_bert_dir), *SMALL, "--data-root",
            str(reproduce_root), "--results-dir", str(tmp_path / "r")]
    result = _invoke(args)
    assert result.exit_code == 0, result.output
    assert "input glove: MISSING" in result.output and "--glove" in result.output  # not given: the option says how
    assert "input sbert_nli: MISSING" in result.output and "huggingface-cli download" in result.output
    assert "never here: USE-large" in result.output and "never here: Sent2Vec" in result.output


def test_a_unit_two_tables_need_is_planned_once(reproduce_root, tiny_bert_dir):
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import Given, build_plan

    given = Given(preset="smoke", model=str(tiny_bert_dir), seeds=(1, ()), max_steps=2,
                  overrides=("batch_size=8", "sbert-nli.batch_size=2", "sbert-stsb.batch_size=2"),
                  allow_merged_runs=True)
    rp = build_plan(load_checked_recipe("tsdae"), ["table2", "table9"], given, reproduce_root)
    # Table 9's BERT-base block is Table 2's unsupervised rows: the same units, planned (and trained) once
    assert any(set(tables) == {"table2", "table9"} for tables in rp.unit_tables.values())
    ids = [u.run_id for u in rp.units]
    assert ids and len(ids) == len(set(ids))


def test_a_unit_two_tables_need_is_evaluated_on_the_tasks_of_both(reproduce_root, tiny_bert_dir):
    """Tables 3 and 11 train the same Wikipedia models: one unit each, evaluated on USEB (Table 3) and STS
    (Table 11) alike."""
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import build_plan

    given = _given(tiny_bert_dir, methods=frozenset({"tsdae"}))
    rp = build_plan(load_checked_recipe("tsdae"), ["table3", "table11"], given, reproduce_root)
    (unit,) = rp.units
    assert rp.unit_tables[unit.run_id] == ["table3", "table11"]
    assert {"askubuntu", "scidocs", "sts12", "sts16", "sickr", "stsb"} <= set(unit.evals)


def test_a_missing_input_is_named_and_exits_1(reproduce_root, tiny_bert_dir, tmp_path):
    """Without --glove the Avg. GloVe row cannot be made: the run says which input and exits 1."""
    args = ["tsdae", "--tables", "table2", "--methods", "wordvec", "--model", str(tiny_bert_dir), *SMALL,
            "--data-root", str(reproduce_root), "--results-dir", str(tmp_path / "r"), "--out", str(tmp_path / "o")]
    result = _invoke(args)
    assert result.exit_code == 1, result.output
    assert "not run (table2): bench eval --model wordvec:{glove}" in result.output
    assert "incomplete: table2" in result.output


def _given(tiny_bert_dir: Path, *sets: str, **kw):
    from usebench.reproduce.build import Given

    return Given(preset="smoke", model=str(tiny_bert_dir), seeds=(1, ()), max_steps=2,
                 overrides=("batch_size=8", *sets), allow_merged_runs=True, **kw)


def test_a_method_prefixed_set_applies_where_its_method_is(reproduce_root, tiny_bert_dir):
    """`--set sbert-nli.batch_size=2` reaches the NLI stages of Table 2's chains and is left out of Table 3's
    runs, which have none (bench run would refuse it there)."""
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import build_plan

    given = _given(tiny_bert_dir, "sbert-nli.batch_size=2", "sbert-stsb.batch_size=2", methods=frozenset({"tsdae"}))
    rp = build_plan(load_checked_recipe("tsdae"), ["table2", "table3"], given, reproduce_root)
    assert not [r for r in rp.runs if r.error or r.blocked], [(r.command, r.error or r.blocked) for r in rp.runs]
    nli = [s for u in rp.units for s in u.stages if s.method == "sbert-nli"]
    assert nli and all(s.identity["config"]["batch_size"] == 2 for s in nli)
    table3 = next(r for r in rp.runs if r.table == "table3")
    assert "sbert-nli.batch_size=2" not in table3.opts.overrides and table3.run_ids


def test_a_recipe_set_for_a_method_methods_left_out_is_dropped(reproduce_root, tiny_bert_dir):
    """Table 9's DistilBERT run sets `tsdae.tie_encoder_decoder=false` and every BERT-flow run
    `bertflow.base_pooling=mean`: with --methods bertflow (or tsdae) the other method's set has nothing to reach."""
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import build_plan

    for method in ("bertflow", "tsdae"):
        rp = build_plan(load_checked_recipe("tsdae"), ["table9"], _given(tiny_bert_dir, methods=frozenset({method})),
                        reproduce_root)
        assert not [r.error for r in rp.runs if r.error] and rp.units
        assert {u.chain for u in rp.units} == {(method,)}


def test_a_misspelt_method_prefix_is_an_error(reproduce_root, tiny_bert_dir):
    from usebench.errors import ConfigError
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import build_plan

    with pytest.raises(ConfigError, match="sbert-nil"):
        build_plan(load_checked_recipe("tsdae"), ["table3"], _given(tiny_bert_dir, "sbert-nil.batch_size=2"),
                   reproduce_root)


def test_an_unknown_method_is_an_error(reproduce_root, tiny_bert_dir):
    from usebench.errors import ConfigError
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import build_plan

    with pytest.raises(ConfigError, match="--methods tsdea"):
        build_plan(load_checked_recipe("tsdae"), ["table3"], _given(tiny_bert_dir, methods=frozenset({"tsdea"})),
                   reproduce_root)


def test_a_checkpoint_a_set_names_is_checked_when_planned(reproduce_root, tiny_bert_dir, tmp_path):
    """A decoder that cannot be loaded here refuses the run at plan time, not when its unit starts (after the
    others trained); with --model the recipe's backbone-bound decoder (DistilBERT's) is dropped."""
    from usebench.reproduce.status import known_names, load_checked_recipe
    from usebench.reproduce.recipes import load_recipe
    from usebench.reproduce.build import build_plan

    path = tmp_path / "tsdae.toml"
    path.write_text(f"""paper = "tsdae"
[[tables]]
id = "t"
title = "x"
writes = ["specific-vs-sts"]
[[tables.runs]]
methods = ["tsdae"]
tasks = "stsb"
corpus = "{reproduce_root}/corpora/wiki-sentences.txt"
set = ["tsdae.tie_encoder_decoder=false", "tsdae.decoder_model=no-such-org/no-such-decoder"]
""", encoding="utf-8")
    given = _given(tiny_bert_dir)
    (run,) = build_plan(load_recipe(path, known_names()), None, replace_model(given, None), reproduce_root).runs
    assert "--set tsdae.decoder_model=no-such-org/no-such-decoder" in run.blocked and not run.run_ids
    rp = build_plan(load_checked_recipe("tsdae"), ["table9"], given, reproduce_root)
    distil = next(r for r in rp.runs if "distilbert" in r.command)
    assert not any("decoder_model" in s for s in distil.opts.overrides) and distil.run_ids


def replace_model(given, model):
    from dataclasses import replace

    return replace(given, model=model, preset=None)


def test_labeled_and_corpus_sizes_replace_the_recipes(reproduce_root, tiny_bert_dir):
    from usebench.reproduce.status import load_checked_recipe
    from usebench.reproduce.build import sized_runs

    recipe = load_checked_recipe("tsdae")
    given = _given(tiny_bert_dir, labeled_sizes=(2, 4), corpus_sizes=(8, 16))
    (pre,) = sized_runs(recipe.table("table10").runs, given)
    assert pre.labeled_sizes == (2, 4)
    sizes = [(r.methods, r.tasks, r.corpus_size) for r in sized_runs(recipe.table("figure3").runs, given)]
    # the paper's nine sizes on every task (TSDAE and CT, and SimCSE in runs of its own) and 65,536 on the two corpora
    # that large, each replaced by two sizes
    assert sizes == [(("tsdae", "ct"), "useb", 8), (("tsdae", "ct"), "useb", 16), (("simcse",), "useb", 8),
                     (("simcse",), "useb", 16), (("tsdae", "ct", "simcse"), "askubuntu,scidocs", 8),
                     (("tsdae", "ct", "simcse"), "askubuntu,scidocs", 16)]


def _published(table: str) -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))["tables"][table]


def check_skeleton(path: Path, reference: str, methods: set[str]) -> None:
    """The written table (its .json) is the published one's skeleton: the same columns; the same blocks and rows
    in the same order, one row per published row (named as the paper prints it, our marks after " · "), before
    any block of ours marked as not in the paper's table; no empty cell in a row of a method the run trained."""
    from usebench.report.skeleton import NOT_IN_PAPER

    built, pub = json.loads(path.read_text(encoding="utf-8")), _published(reference)
    assert built["columns"] == pub["columns"]
    rows = [r for r in built["rows"] if not r["block"].endswith(NOT_IN_PAPER)]
    ours = [(r["block"], r["label"].split(" · ")[0]) for r in rows]
    assert ours == [(p["block"], p["label"].split(" · ")[0]) for p in pub["rows"]], "blocks or rows differ"
    for row, paper in zip(rows, pub["rows"]):
        if row.get("key") and (paper.get("match") or {}).get("method") in methods:
            empty = [c for c, cell in row["cells"].items() if cell["mean"] is None]
            assert not empty, f"{paper['label']}: empty cells {empty}"


# (paper, table id, --methods, extra options, [(written json, published table it is held to)], other files)
E2E = [
    ("tsdae", "table2", "tsdae,bm25,wordvec", [], [("paper-table2.json", "tsdae-table2")], []),
    ("tsdae", "table3", "tsdae", [], [("specific-vs-sts.json", "tsdae-table3")], []),
    ("tsdae", "table10", "tsdae", [], [], ["pretraining-breakeven.md", "plots/pretraining.png"]),
    ("tsdae", "table11", "tsdae", [], [("sts-table.json", "tsdae-table11")], []),
    ("tsdae", "figure3", "tsdae", [], [], ["plots/corpus-size.png"]),
    # App. A's rows are runs selected on STSb dev (the smoke preset selects on nothing)
    ("tsdae", "tables5-7", "tsdae", ["--set", "tsdae.dev_task=stsb", "--set", "tsdae.dev_every=1"], [],
     ["tsdae-app-a.md"]),
    ("denosent", "table1", "denosent,base", [], [("denosent-table1.json", "denosent-table1")], []),
    ("denosent", "table3", "denosent", [], [("denosent-table3.json", "denosent-table3")], []),
    # PaSeR's rows are settings of RAKE's top-k and WordNet's synonym replacement: the smoke preset's top-1 and
    # SMALL's synonym_ratio=0 are another setting than Table 1's (top-5, ratio 0.5), so a slot would stay empty
    ("paser", "table1", "paser,base", ["--set", "paser.top_k=5", "--set", "paser.synonym_ratio=0.5"],
     [("paser-table1.json", "paser-table1")], []),
    # the ablations' own preset (Eq. 2's signal, RAKE top5) and synonym replacement
    ("paser", "table5", "paser,base", ["--preset", "paper-eq2", "--set", "paser.synonym_ratio=0.5"],
     [("paser-table5.json", "paser-table5")], []),
    ("thesis", "table5.9", "simcse,base", [], [("thesis-table5.9.json", "thesis-table5.9"),
                                          ("thesis-table5.10.json", "thesis-table5.10")],
     ["thesis-fig5.3.md", "thesis-fig5.4.md", "plots/thesis-fig5.3.png"]),
    ("thesis", "table5.17", "simcse,clm-ae,base", [], [("thesis-table5.17.json", "thesis-table5.17")], []),
    ("thesis", "eproduct", "simcse", [], [], ["thesis-eproduct.md"]),
]


def _needs(entry: tuple) -> Any:
    """A case whose options turn on PaSeR's synonym replacement needs the WordNet database (CI installs it after
    its first step: the case skips there and runs in the second)."""
    from usebench.methods.parts.synonyms import find_wordnet_dir

    wordnet = any("synonym_ratio=0.5" in str(o) for o in entry[3])
    marks = [pytest.mark.skipif(find_wordnet_dir() is None, reason="WordNet database not installed "
                                "(apt-get install wordnet-base)")] if wordnet else []
    return pytest.param(*entry, marks=marks, id=f"{entry[0]}-{entry[1]}")


@pytest.fixture()
def tiny_is_bert_base(tiny_bert_dir, monkeypatch):
    """The fixtures' world, where the published bert-base-uncased *is* the tiny BERT by content: its fingerprint
    (config, weights, tokenizer) is recorded as the published one's. Since issue 53 a row stands in a paper's slot
    only when its backbone's fingerprint is the slot's (usebench/report/skeleton.py ``backbone_fits``): without
    this, no tiny-BERT row could fill a BERT-base slot (test_a_run_on_another_backbone_stands_below_the_paper)."""
    from usebench.eval.models import backbone_fingerprint
    from usebench.report import pairing

    real = pairing.published_backbones()
    tiny = backbone_fingerprint(tiny_bert_dir)
    world = {**real, "bert-base-uncased": {**real["bert-base-uncased"], "config_sha256": tiny["config_sha256"],
                                           "weights_sha256": tiny["weights_sha256"], "tokenizer": tiny["tokenizer"]}}
    monkeypatch.setattr(pairing, "published_backbones", lambda: world)


@pytest.mark.parametrize("paper, table, methods, extra, held, files", [_needs(e) for e in E2E])
def test_a_table_is_reproduced_with_the_papers_skeleton(paper, table, methods, extra, held, files, reproduce_root,
                                                        tiny_bert_dir, store, tmp_path, tiny_is_bert_base):
    out = tmp_path / "reports"
    result = _invoke([paper, "--tables", table, "--methods", methods, *_common(reproduce_root, tiny_bert_dir, store, paper),
                      *extra, "--out", str(out), "--format", "md,csv"])
    assert result.exit_code == 0, result.output
    assert "every table written with every row the recipe can make here" in result.output
    for name, reference in held:
        check_skeleton(out / name, reference, set(methods.split(",")))
    for name in files:
        assert (out / name).is_file(), f"{name} not written"


def test_a_run_on_another_backbone_stands_below_the_paper(reproduce_root, tiny_bert_dir, store, tmp_path):
    """Issue 53: the tiny BERT as it is (not bert-base-uncased by content) fills no slot of TSDAE Table 2: each slot
    says what it waits for and where our row is, our rows stand below in blocks that name their backbone, and the
    command exits 1 ("incomplete"), never 0 on rows of another backbone."""
    from usebench.report.skeleton import NOT_IN_PAPER

    out = tmp_path / "reports"
    result = _invoke(["tsdae", "--tables", "table2", "--methods", "tsdae,bm25,wordvec",
                      *_common(reproduce_root, tiny_bert_dir, store, "tsdae"), "--out", str(out), "--format",
                      "md,csv"])
    assert result.exit_code == 1 and "incomplete: table2" in result.output, result.output
    built = json.loads((out / "paper-table2.json").read_text(encoding="utf-8"))
    ours = [r for r in built["rows"] if r.get("key") and r["key"]["method"] == "tsdae"]
    assert ours and all(r["block"].endswith(f"· on {tiny_bert_dir.name}, not bert-base-uncased{NOT_IN_PAPER}")
                        for r in ours), [r["block"] for r in ours]
    slot = next(r for r in built["rows"] if r["label"] == "TSDAE" and not r.get("key"))
    assert f"ours on {tiny_bert_dir.name}, below" in slot["not_made"]


def test_the_thesis_studies_on_the_fixtures_are_written_and_said_not_made(reproduce_root, tiny_bert_dir, store,
                                                                          tmp_path):
    """Tables 5.11-5.13's rows are batch sizes, corpus sizes and epochs the fixtures' smoke options cannot hold
    (batch 8 on 16 sentences): the table is written, every row is "—" with the setting it waits for, our runs sit
    below as not in the thesis' table, and the command exits 1 ("incomplete"), never 0 on rows it did not make."""
    from usebench.report.skeleton import NOT_IN_PAPER

    out = tmp_path / "reports"
    result = _invoke(["thesis", "--tables", "tables5.11-5.13", "--methods", "simcse",
                      *_common(reproduce_root, tiny_bert_dir, store, "thesis"), "--out", str(out), "--format", "md"])
    assert result.exit_code == 1, result.output
    assert "rows made: 0 of 16" in result.output and "incomplete: tables5.11-5.13" in result.output
    assert "no SimCSE run with batch size 32, 1 epoch(s) on 100,000 sentences" in result.output
    table = (out / "thesis-studies.md").read_text(encoding="utf-8")
    assert NOT_IN_PAPER in table


def test_the_laptop_recipe_end_to_end_on_the_fixtures(reproduce_root, tiny_bert_dir, tmp_path):
    """Issue 47: `bench reproduce laptop` on the fixtures, every method's laptop preset cut to 2 steps of 8 short
    sentences and started from the tiny BERT: 8 units trained on the recipe's three corpus files, the step-0 units of
    SimCSE, BERT-flow and DenoSent, SimCSE scored a second time without its MLP (its stage reused), its baselines,
    its table and its page written (issue 55: the rows the page sets each trained row against)."""
    out, results = tmp_path / "reports", tmp_path / "results"
    result = _invoke(["laptop", "--nli-sts-model", str(tiny_bert_dir), "--seeds", "1", "--max-steps", "2",
                      "--set", "batch_size=8", "--set", "max_length=16", "--set", "paser.synonym_ratio=0",
                      "--data-root", str(reproduce_root), "--results-dir", str(results), "--out", str(out),
                      "--format", "md"])
    assert result.exit_code == 0, result.output
    units = sorted(p.name.split("__")[0] for p in results.glob("*__s0") if (p / "usage.json").is_file())
    assert units == sorted(["bertflow", "bertflow", "consert", "ct", "denosent", "denosent", "mlm", "paser", "simcse",
                            "simcse", "simcse", "tsdae"])
    record = json.loads(next(results.glob("tsdae__*/twitterpara/test.json")).read_text(encoding="utf-8"))
    assert record["method"]["train_corpus"] == "file:a.toks+b.toks+dev.data"
    assert record["method"]["variant"].startswith("laptop")
    variants = {json.loads(p.read_text())["method"]["variant"] for p in results.glob("simcse__*/twitterpara/test.json")}
    cut = "laptop + batch_size=8 max_length=16 max_steps=2"
    assert variants == {cut, f"{cut} eval_pooling=cls", f"{cut} stop_at_step=0"}
    trained = [json.loads((p / "usage.json").read_text())["attempts"][-1]["training"] for p in results.glob("simcse__*")]
    assert sum(t == ["reusing its finished checkpoint"] for t in trained) == 1  # the second pooling trained nothing
    page = (out / "laptop.md").read_text(encoding="utf-8")
    assert "## What adaptation did" in page and "| TSDAE |" in page and (out / "plots" / "laptop-loss.png").is_file()
    assert "| SimCSE (cls) |" in page and "[CLS] with a freshly initialised MLP (1 seed's step-0 units)" in page
    assert "the start model under its [MASK] prompt (1 seed's" in page and "the flow after ActNorm's init (1 seed's" in page
    assert (results / ".reproduce" / "laptop-cost.json").is_file() and "Predicted before the run" in page
    import importlib.util

    if importlib.util.find_spec("usebench.stats") is not None:  # issue 54's per-item outcomes and statistics
        assert "each with its 95% interval over seeds and test items" in page
    assert (out / "laptop-adapt.md").is_file()
