"""A release-sized synthetic data root, a config-only Hugging Face hub cache and a WordNet stub: what `bench run
--dry-run` and `bench reproduce PAPER --dry-run` read at plan time, for timing the planner (scripts/bench_plan.py).

Layout under ``--root DIR``::

    DIR/data/       BENCH_DATA: every file the four recipes and `bench run --setting all --tasks useb` read, in the
                    releases' formats and with the releases' row counts (x --scale)
    DIR/hf/hub/     HF_HUB_CACHE: models--<org>--<name>/{refs/main, snapshots/<rev>/config.json} per hub model the
                    recipes and presets name; the real architecture fields, no weights
    DIR/wordnet/    WNSEARCHDIR, only when this machine has no WordNet: the two files the planner's presence check
                    looks for (PaSeR's synonym replacement reads WordNet when it trains, never when it plans)
    DIR/plan-root.json   the marker: builder version, scale, seed, every file with its rows and where the count is from

Where the real evaluation files exist in the workplace's shared data (STS12-16, STSb, SICK, TwitterPara, the
AskUbuntu candidate lists, the Twitter URL training pairs) they are copied whole, whatever the scale: they are small
and their counts are the releases'. Everything else is generated: texts of 4-60 words (ranges per file, around the
lengths the papers state: Table 1's average lengths for the USEB sets, 19.85 words for OpenWebText) drawn from a
Zipf-weighted vocabulary of 4,000 synthetic words, deterministic from the seed. A row count is
``max(1, round(release_count * scale))``, raised where a file must hold another file's ids (AskUbuntu's pool holds
every id of the real dev/test lists). Counts the package states are read from it (BEIR CQADupStack's per-forum
sizes, Quora's), the others come from the papers and releases (each file's source is in the marker). The root
declares itself in ``usebench-counts.json`` as not a release, with the counts of the evaluation files it generated,
so the tasks' release checks accept it at any scale; ``inputs/glove.6B.300d.txt`` is the `--glove` input of the tsdae
recipe (4,000 words: the planner only checks that it exists).

Building the full-scale root takes 1-2 minutes on two cores and ~1.3 GB of disk.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plan_root_stubs import HUB_CONFIGS, hub_stub, wordnet_stub, write_json  # noqa: F401  (scripts/: the stubs)

VERSION = 2  # bump when the layout or the generator changes: a root built by another version is rebuilt
MARKER, BUILDING = "plan-root.json", "plan-root.building"
# the real files copied into the root: $BENCH_DATA (as the tests and CI set it), else the workplace's copy beside the
# repository (SOURCES.md)
SHARED = Path(os.environ.get("BENCH_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
TABLE1 = "TSDAE paper Table 1"  # unsupervised / supervised training-set sizes: 165K/23K, 44K/13K, 312K/380K, 53K/23K


def beir_forums() -> dict[str, tuple[int, int]]:
    """forum -> (judged test queries, documents) of BEIR's CQADupStack, as its task checks them."""
    from usebench.tasks.beir_cqadupstack import FORUMS  # imports the task adapters: a few seconds, once a build

    return FORUMS


def quora_release() -> tuple[int, dict[str, int]]:
    """Quora's documents and judged queries per split, as its task checks them (BEIR paper Table 1)."""
    from usebench.tasks.beir import Quora

    return int(Quora.release_documents or 0), dict(Quora.release_queries)


@dataclass
class Built:
    """What a build wrote: rows per file (relative to the data root) and where each count comes from."""

    scale: float
    rows: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def add(self, rel: str, rows: int, source: str) -> None:
        self.rows[rel], self.sources[rel] = rows, source


class Words:
    """Deterministic synthetic text: 4,000 pronounceable words, drawn with Zipf weights (rank r ~ 1/(r+3))."""

    def __init__(self, seed: int, n_words: int = 4000):
        rng = np.random.default_rng([seed, 0xC0DE])
        syllables = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]
        words: dict[str, None] = {}
        while len(words) < n_words:
            words["".join(rng.choice(syllables, int(rng.integers(1, 4))))] = None
        self.words = np.array(list(words), dtype=object)
        weights = 1.0 / (np.arange(n_words) + 3.0)
        self.cdf = np.cumsum(weights / weights.sum())
        self.seed = seed

    def rng(self, key: str) -> np.random.Generator:
        """A generator of its own per file (or purpose): files never share sentences by accident."""
        return np.random.default_rng([self.seed, zlib.crc32(key.encode())])

    def lines(self, n: int, lo: int, hi: int, key: str, end: str = "", chunk: int = 200_000) -> Iterator[list[str]]:
        """``n`` sentences of ``lo``..``hi`` words in chunks; ``end`` ("." or "?") capitalises and closes each."""
        rng = self.rng(key)
        for start in range(0, n, chunk):
            lengths = rng.integers(lo, hi + 1, min(chunk, n - start))
            tokens = self.words[np.searchsorted(self.cdf, rng.random(int(lengths.sum())))].tolist()
            out, pos = [], 0
            for length in lengths.tolist():
                out.append(" ".join(tokens[pos:pos + length]))
                pos += length
            if end:
                out = [s[0].upper() + s[1:] + end for s in out]
            yield out

    def sentences(self, n: int, lo: int, hi: int, key: str, end: str = "") -> list[str]:
        """:meth:`lines` as one list."""
        return [s for part in self.lines(n, lo, hi, key, end) for s in part]


def scaled(n: int, scale: float) -> int:
    """A release count times the scale, at least 1."""
    return max(1, round(n * scale))


def write_lines(path: Path, chunks: list[str] | Iterable[list[str]]) -> int:
    """Write one list of lines, or an iterable of such lists (chunks); returns the line count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        for part in ([chunks] if isinstance(chunks, list) else chunks):
            if part:
                f.write("\n".join(part) + "\n")
                n += len(part)
    return n


# --- the USEB training release ------------------------------------------------------------------------------
USEB_TRAIN = {  # release folder -> (unsupervised sentences, supervised pairs, words lo..hi around Table 1's avg)
    "askubuntu": (165_000, 23_000, 5, 14), "cqadupstack": (44_000, 13_000, 4, 13),
    "scidocs": (312_000, 380_000, 8, 17), "twitter": (53_000, 23_000, 9, 19)}


def useb_train(data: Path, w: Words, b: Built) -> None:
    """``useb/data-train/<folder>/{unsupervised/train.txt, supervised/train.org|para}`` (+ twitter's s1/s2/lbl)."""
    for folder, (unsup, sup, lo, hi) in USEB_TRAIN.items():
        rel = f"useb/data-train/{folder}/unsupervised/train.txt"
        b.add(rel, write_lines(data / rel, w.lines(scaled(unsup, b.scale), lo, hi, rel)), f"{TABLE1} ({unsup:,})")
        n = scaled(sup, b.scale)
        names = ("org", "para", "s1", "s2") if folder == "twitter" else ("org", "para")
        for name in names:
            rel = f"useb/data-train/{folder}/supervised/train.{name}"
            b.add(rel, write_lines(data / rel, w.lines(n, lo, hi, rel)), f"{TABLE1} ({sup:,} supervised)")
    rel = "useb/data-train/twitter/supervised/train.lbl"
    votes = w.rng(rel).integers(0, 7, scaled(23_000, b.scale))
    b.add(rel, write_lines(data / rel, [repr(v / 6) for v in votes.tolist()]), f"{TABLE1} (23,000 supervised)")


# --- the USEB evaluation release ----------------------------------------------------------------------------
ASKUBUNTU_QUESTIONS = 167_765  # Lei et al. 2016: the AskUbuntu dump's questions (not stated in the repository)


def askubuntu(data: Path, w: Words, b: Built) -> None:
    """The real dev/test candidate lists, and a text_tokenized.txt (id, title, body) holding every id they name."""
    folder = data / "useb/data-eval/askubuntu"
    needed: dict[str, None] = {}
    for split in ("dev", "test"):
        lines = (folder / f"{split}.txt").read_text(encoding="utf-8").splitlines()
        for line in lines:
            qid, similar, candidates, _ = line.split("\t")
            needed.update(dict.fromkeys([qid, *similar.split(), *candidates.split()]))
    n = max(scaled(ASKUBUNTU_QUESTIONS, b.scale), len(needed))
    rng = w.rng("askubuntu-ids")
    ids = list(needed)
    taken = set(ids)
    for i in rng.permutation(530_000)[: n + len(needed)].tolist():
        if len(ids) >= n:
            break
        if str(i + 1) not in taken:
            ids.append(str(i + 1))
    rng.shuffle(ids)
    titles = w.sentences(n, 5, 14, "askubuntu-titles", "?")
    bodies = w.sentences(n, 20, 60, "askubuntu-bodies", ".")
    rel = "useb/data-eval/askubuntu/text_tokenized.txt"
    rows = write_lines(data / rel, [f"{i}\t{t}\t{x}" for i, t, x in zip(ids, titles, bodies)])
    b.add(rel, rows, f"Lei et al. 2016 ({ASKUBUNTU_QUESTIONS:,} questions; bodies shorter than real ones), "
                     "every id of the real dev/test lists")


def cqadupstack_useb(data: Path, w: Words, b: Built) -> None:
    """``corpus.json`` ({forum: {id: title}}, BEIR's per-forum sizes) and ``retrieval_split.json`` (~3K queries per
    split, TSDAE Table 1's #queries, 1.1 duplicates each)."""
    rng, corpus, split = w.rng("useb-cqadupstack"), {}, {"valid": {}, "test": {}}
    total_queries = sum(q for q, _ in beir_forums().values())
    for forum, (queries, docs) in beir_forums().items():
        n = max(scaled(docs, b.scale), 8)
        ids = [f"{forum[:2]}{i}" for i in rng.permutation(n * 3)[:n].tolist()]
        corpus[forum] = dict(zip(ids, w.sentences(n, 4, 13, f"cqadup-{forum}", "?")))
        per_split = max(1, round(3000 * queries / total_queries * b.scale))
        order = rng.permutation(n).tolist()
        for k, name in enumerate(("valid", "test")):
            chosen = order[k * per_split:(k + 1) * per_split] or order[:1]
            split[name][forum] = {ids[q]: [ids[(q + 1 + j) % n] for j in range(1 + (rng.random() < 0.1))]
                                  for q in chosen}
    write_json(data / "useb/data-eval/cqadupstack/corpus.json", corpus)
    write_json(data / "useb/data-eval/cqadupstack/retrieval_split.json", split)
    b.add("useb/data-eval/cqadupstack/corpus.json", sum(map(len, corpus.values())),
          "BEIR CQADupStack per-forum documents (usebench/tasks/beir_cqadupstack.py), 12 forums")
    b.add("useb/data-eval/cqadupstack/retrieval_split.json",
          sum(len(q) for s in split.values() for q in s.values()), f"{TABLE1} (3K queries per split)")


def scidocs(data: Path, w: Words, b: Built) -> None:
    """``data.json``: 1,000 queries per subtask and split, 30 candidates each (5 relevant), TSDAE Table 1; every
    paper a distinct id; plus the package's per-subtask ``.qrel`` files (TREC qrels; no loader reads them)."""
    rng, papers = w.rng("scidocs"), []
    out: dict = {"valid": {}, "test": {}}
    n_queries = scaled(1000, b.scale)
    for split in ("valid", "test"):
        for sub in ("cite", "cocite", "coread", "coview"):
            qrels = {}
            for _ in range(n_queries):
                ids = [hashlib.sha1(rng.bytes(8)).hexdigest() for _ in range(31)]
                papers += ids
                qrels[ids[0]] = {d: int(k < 5) for k, d in enumerate(ids[1:])}
            out[split][sub] = qrels
            qrel = data / f"useb/data-eval/scidocs/{sub}/{'val' if split == 'valid' else 'test'}.qrel"
            write_lines(qrel, [f"{q} 0 {d} {r}" for q, docs in qrels.items() for d, r in docs.items()])
    titles, abstracts = w.sentences(len(papers), 8, 17, "scidocs-titles"), w.sentences(len(papers), 20, 40, "abs")
    out["corpus"] = {p: {"title": t, "abstract": a} for p, t, a in zip(papers, titles, abstracts)}
    write_json(data / "useb/data-eval/scidocs/data.json", out)
    b.add("useb/data-eval/scidocs/data.json", len(papers), f"{TABLE1} (4K queries x 30 candidates per split)")


# --- labeled data, corpora, BEIR -----------------------------------------------------------------------------
NLI = {"train": 942_069, "dev": 19_657, "test": 19_656}  # SNLI 549,367 + MultiNLI 392,702 train rows with a label;
# dev: SNLI dev 9,842 + MultiNLI dev-matched 9,815; test: SNLI test 9,824 + MultiNLI dev-mismatched 9,832


def allnli(data: Path, w: Words, b: Built) -> list[str]:
    """``nli/AllNLI.tsv`` as sentence-transformers ships it: a premise with 3 hypotheses (one per label). Returns
    the train split's unique sentences (the recipe's nli-sentences.txt)."""
    lines, unique = ["split\tdataset\tfilename\tsentence1\tsentence2\tlabel"], {}
    labels = ("entailment", "neutral", "contradiction")
    for split, rows in NLI.items():
        n = scaled(rows, b.scale)
        premises = w.sentences((n + 2) // 3, 8, 25, f"nli-{split}-p", ".")
        hyps = w.sentences(n, 4, 14, f"nli-{split}-h", ".")
        for i, h in enumerate(hyps):
            p = premises[i // 3]
            dataset, name = ("SNLI", "snli_1.0") if i < n * 0.58 else ("MultiNLI", "multinli_1.0")
            lines.append(f"{split}\t{dataset}\t{name}_{split}.jsonl\t{p}\t{h}\t{labels[i % 3]}")
            if split == "train":
                unique[p] = unique[h] = None
        b.add(f"nli/AllNLI.tsv:{split}", n, "SNLI 1.0 + MultiNLI 1.0 pairs with a gold label, as published "
                                            "(not stated in the repository)")
    write_lines(data / "nli/AllNLI.tsv", lines)
    return list(unique)


def sts_sentences(data: Path) -> list[str]:
    """Unique sentences of the seven STS sets as copied (SentEval's STS12-16/STSb, SICK's train/trial/test)."""
    out: dict[str, None] = {}
    for path in sorted((data / "sts/senteval").glob("*/STS.input.*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            out.update(dict.fromkeys(s.strip() for s in line.split("\t")[:2] if s.strip()))
    for path in sorted((data / "sts/senteval/STSBenchmark").glob("sts-*.csv")):
        for line in path.read_text(encoding="utf-8").splitlines():
            out.update(dict.fromkeys(s.strip() for s in line.split("\t")[5:7] if s.strip()))
    for path in sorted((data / "sick").glob("SICK_*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            out.update(dict.fromkeys(s.strip() for s in line.split("\t")[1:3] if s.strip()))
    return list(out)


CORPORA = {  # file -> (lines, words lo..hi, source of the count)
    "wiki1m_for_simcse.txt": (1_000_000, 10, 35, "SimCSE's wiki1m: 1M Wikipedia sentences (paper_reference.json)"),
    "owt_1m.txt": (1_000_000, 10, 30, "thesis Table 5.1: OpenWebText 1M, 19.85 words per sentence"),
    "owt_10k.txt": (10_000, 10, 30, "thesis Table 5.2: OpenWebText 10k"),
    "wiki-sentences.txt": (1_000_000, 10, 35, "Carlsson et al. 2021's Wikipedia sample: no size in the repository "
                                                "or papers; taken as 1M like wiki1m")}


def corpora(data: Path, w: Words, b: Built, nli_sentences: list[str]) -> None:
    """``corpora/*`` the recipes name, and DenoSent's ``denosent/paraphrases.tsv`` (wiki1m + a paraphrase each)."""
    for name, (lines, lo, hi, source) in CORPORA.items():
        rel = f"corpora/{name}"
        key = "corpora/wiki1m_for_simcse.txt" if name.startswith("wiki1m") else rel
        b.add(rel, write_lines(data / rel, w.lines(scaled(lines, b.scale), lo, hi, key, ".")), source)
    rel = "corpora/nli-sentences.txt"
    b.add(rel, write_lines(data / rel, nli_sentences), "derived: the unique sentences of nli/AllNLI.tsv's train split")
    sts = sts_sentences(data)
    rel = "corpora/sts-sentences.txt"
    b.add(rel, write_lines(data / rel, sts), "derived: the unique sentences of the copied STS12-16, STSb, SICK files")
    rel, rng = "denosent/paraphrases.tsv", w.rng("paraphrase")

    def pairs():
        for part in w.lines(scaled(1_000_000, b.scale), 10, 35, "corpora/wiki1m_for_simcse.txt", "."):
            swap = w.words[np.searchsorted(w.cdf, rng.random(len(part)))].tolist()
            where = rng.random(len(part))
            out = []
            for s, word, u in zip(part, swap, where.tolist()):
                toks = s.split(" ")
                toks[int(u * (len(toks) - 1))] = word  # one word replaced: a back-translation's light rewording
                out.append(f"{s}\t{' '.join(toks)}")
            yield out
    b.add(rel, write_lines(data / rel, pairs()), "DenoSent's release: one back-translation per wiki1m sentence (1M; its "
                                            "exact size is not stated in the repository)")


QUORA_JUDGEMENTS = {"test": 15_675, "dev": 7_626}  # lines of BEIR's quora qrels files (not in the repository)


def quora(data: Path, w: Words, b: Built) -> None:
    """``beir/quora``: corpus, queries (each a corpus question, same id and text, as BEIR's), qrels dev/test."""
    folder, rng = data / "beir/quora", w.rng("quora")
    docs, judged = quora_release()
    n = scaled(docs, b.scale)
    texts = w.sentences(n, 5, 18, "quora-docs", "?")
    write_lines(folder / "corpus.jsonl", [json.dumps({"_id": str(i + 1), "title": "", "text": t})
                                          for i, t in enumerate(texts)])
    order = rng.permutation(n).tolist()
    queries, pos = [], 0
    for split in ("test", "dev"):
        nq = min(scaled(judged[split], b.scale), max(1, (n - 1) // 4))
        chosen, pos = order[pos:pos + nq], pos + nq
        queries += chosen
        extra = np.bincount(rng.integers(0, nq, scaled(QUORA_JUDGEMENTS[split] - judged[split], b.scale)),
                            minlength=nq)
        qrels = ["query-id\tcorpus-id\tscore"]
        for q, more in zip(chosen, extra.tolist()):
            qrels += [f"{q + 1}\t{(q + 1 + k) % n + 1}\t1" for k in range(1 + more)]
        write_lines(folder / f"qrels/{split}.tsv", qrels)
        b.add(f"beir/quora/qrels/{split}.tsv", nq, f"usebench/tasks/beir.py Quora (BEIR Table 1): {judged[split]:,} "
                                                 f"queries; {QUORA_JUDGEMENTS[split]:,} judgements as BEIR's file")
    write_lines(folder / "queries.jsonl", [json.dumps({"_id": str(q + 1), "text": texts[q]}) for q in queries])
    b.add("beir/quora/corpus.jsonl", n, f"usebench/tasks/beir.py Quora (BEIR Table 1): {docs:,} documents")
    b.add("beir/quora/queries.jsonl", len(queries), "BEIR quora: the dev and test queries")


def beir_cqadupstack(data: Path, w: Words, b: Built) -> None:
    """``beir/cqadupstack/<forum>``: the per-forum query and document counts the task checks."""
    for forum, (queries, docs) in beir_forums().items():
        folder, rng = data / f"beir/cqadupstack/{forum}", w.rng(f"beir-{forum}")
        n, nq = scaled(docs, b.scale), scaled(queries, b.scale)
        titles, bodies = w.sentences(n, 4, 13, f"beir-{forum}-t", "?"), w.sentences(n, 20, 60, f"beir-{forum}-b", ".")
        write_lines(folder / "corpus.jsonl", [json.dumps({"_id": str(i), "title": t, "text": x})
                                              for i, (t, x) in enumerate(zip(titles, bodies))])
        qtitles = w.sentences(nq, 4, 13, f"beir-{forum}-q", "?")
        write_lines(folder / "queries.jsonl", [json.dumps({"_id": f"q{i}", "text": t}) for i, t in enumerate(qtitles)])
        relevant = rng.integers(0, n, (nq, 2)).tolist()
        qrels = ["query-id\tcorpus-id\tscore"] + [f"q{i}\t{d}\t1" for i, ds in enumerate(relevant)
                                                  for d in ds[: 1 + (rng.random() < 0.4)]]
        write_lines(folder / "qrels/test.tsv", qrels)
        b.add(f"beir/cqadupstack/{forum}/corpus.jsonl", n, "usebench/tasks/beir_cqadupstack.py FORUMS")
        b.add(f"beir/cqadupstack/{forum}/qrels/test.tsv", nq, "usebench/tasks/beir_cqadupstack.py FORUMS")


def copy_real(data: Path, shared: Path, b: Built) -> None:
    """The real files of the shared data, whole: STS, SICK, TwitterPara, AskUbuntu's lists, Twitter URL train."""
    for rel in ("sts", "sick", "useb/data-eval/twitterpara", "useb/extra/twitter_url_train_tok"):
        if not (shared / rel).is_dir():
            raise SystemExit(f"{shared / rel} not found: pass --shared-data DIR (the workplace's real data files)")
        shutil.copytree(shared / rel, data / rel, dirs_exist_ok=True)
    for split in ("dev", "test"):
        rel = f"useb/data-eval/askubuntu/{split}.txt"
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared / rel, data / rel)
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        rel = path.relative_to(data).as_posix()
        if path.suffix in (".txt", ".csv", ".toks", ".data", ".label") and "LICENSE" not in rel and "readme" not in \
                rel.lower():
            with path.open(encoding="utf-8", errors="replace") as f:
                b.add(rel, sum(1 for _ in f), f"real file, copied from {shared}")


def counts_file(data: Path, b: Built) -> None:
    """``usebench-counts.json``: this root is not a release (DESIGN.md "Names are promises"), so it declares the
    counts of the evaluation files it generated; the tasks' release checks then accept it at any scale."""
    counts = {"useb/data-eval/cqadupstack/corpus.json": 12,
              "beir/quora/corpus.jsonl": b.rows["beir/quora/corpus.jsonl"],
              "beir/quora/qrels/test.tsv": b.rows["beir/quora/qrels/test.tsv"],
              "beir/quora/qrels/dev.tsv": b.rows["beir/quora/qrels/dev.tsv"]}
    for forum in beir_forums():
        for name in ("corpus.jsonl", "qrels/test.tsv"):
            counts[f"beir/cqadupstack/{forum}/{name}"] = b.rows[f"beir/cqadupstack/{forum}/{name}"]
    write_json(data / "usebench-counts.json", {
        "release": f"scripts/plan_root.py synthetic root, release-sized x {b.scale:g}: not a release",
        "about": "written by scripts/plan_root.py for timing the planner (scripts/bench_plan.py)", "counts": counts})


# --- build or reuse ------------------------------------------------------------------------------------------
def environment(root: Path) -> dict[str, str]:
    """What a `bench` subprocess needs to read this root: BENCH_DATA, the hub stub offline, the WordNet stub."""
    env = {"BENCH_DATA": str(root / "data"), "HF_HOME": str(root / "hf"), "HF_HUB_CACHE": str(root / "hf/hub"),
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if (root / "wordnet/index.noun").is_file():
        env["WNSEARCHDIR"] = str(root / "wordnet")
    return env


def ensure_root(root: Path, scale: float = 1.0, seed: int = 0, shared: Path = SHARED,
                log: Callable[[str], object] = print) -> dict:
    """The marker of ``root``, built now unless a root of this version, scale and seed is already there."""
    marker = root / MARKER
    if marker.is_file():
        meta = json.loads(marker.read_text(encoding="utf-8"))
        if (meta.get("version"), meta.get("scale"), meta.get("seed")) == (VERSION, scale, seed):
            return meta
        log(f"{root}: built at scale {meta.get('scale')} (version {meta.get('version')}); rebuilding at {scale}")
    elif root.is_dir() and any(root.iterdir()) and not (root / BUILDING).is_file():
        raise SystemExit(f"{root} is not empty and holds no {MARKER}: not a plan root; choose another --root")
    for name in ("data", "hf", "wordnet", MARKER):  # only what a build writes (logs/ and profiles/ stay)
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / BUILDING).write_text("a build started here; an interrupted one is wiped by the next\n")
    t0 = time.perf_counter()
    meta = build(root, scale, seed, shared, log)
    meta["build_seconds"] = round(time.perf_counter() - t0, 1)
    marker.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    (root / BUILDING).unlink()
    log(f"built {root} in {meta['build_seconds']} s")
    return meta


def build(root: Path, scale: float, seed: int, shared: Path, log: Callable[[str], object] = print) -> dict:
    """Every part of the root, in order (the copies first: the STS corpus is derived from them)."""
    data, w, b = root / "data", Words(seed), Built(scale)
    steps = [("real files", lambda: copy_real(data, shared, b)), ("USEB train", lambda: useb_train(data, w, b)),
             ("AskUbuntu", lambda: askubuntu(data, w, b)), ("CQADupStack (USEB)", lambda: cqadupstack_useb(data, w, b)),
             ("SciDocs", lambda: scidocs(data, w, b)), ("Quora", lambda: quora(data, w, b)),
             ("BEIR CQADupStack", lambda: beir_cqadupstack(data, w, b))]
    for what, step in steps:
        t0 = time.perf_counter()
        step()
        log(f"  {what}: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    corpora(data, w, b, allnli(data, w, b))
    log(f"  AllNLI, corpora, paraphrases: {time.perf_counter() - t0:.1f} s")
    glove = data / "inputs/glove.6B.300d.txt"  # --glove: only checked to exist when planning
    grng = w.rng("glove")
    write_lines(glove, [f"{word} " + " ".join(f"{v:.5f}" for v in grng.standard_normal(300).tolist())
                        for word in w.words[:4000].tolist()])
    b.add("inputs/glove.6B.300d.txt", 4000, "synthetic 300-d vectors of the 4,000 words (real: 400,000 words); "
                                            "the planner only checks the file exists")
    counts_file(data, b)
    models = hub_stub(root / "hf/hub")
    wordnet = wordnet_stub(root / "wordnet")
    return {"version": VERSION, "scale": scale, "seed": seed, "hub_models": models,
            "wordnet": str(wordnet) if wordnet else "this machine's WordNet", "rows": b.rows, "sources": b.sources}
