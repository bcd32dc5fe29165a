"""What MTEB's ``TaskMetadata`` says about each USEB task: data only, the logic is in usebench/mteb/useb_tasks.py.

Names: ``USEB-<Task>``, never MTEB's own ``AskUbuntuDupQuestions``, ``CQADupstack*Retrieval``, ``TwitterURLCorpus`` /
``TwitterSemEval2015`` or ``SciDocsRR``, whose data and protocols differ (docs/mteb.md). Licenses are what each
release states (AskUbuntu's and SciDocs' READMEs state none for the data; CQADupStack's download carries a LICENCE
file, Apache 2.0 as BEIR and MTEB record it; the Twitter URL corpus' README says CC BY-NC-SA 3.0 and PIT-2015's
says nothing, so TwitterPara is "multiple"). The dataset revision is not here: it is the sha256 of the files the
data root holds (usebench/mteb/useb_tasks.py), so MTEB's result cache never mixes two data roots.

Each task's BibTeX is written as MTEB's formatting check wants it (bibtexparser's writer: fields in key order, entries
sorted by key and separated by a blank line; tests/mteb/test_mteb_useb.py runs the check), and its ``date`` is the
window its texts were written in, as the releases and their papers give it (the sources are beside each
value).
"""
from __future__ import annotations

from dataclasses import dataclass

TSDAE = """@inproceedings{wang-etal-2021-tsdae-using,
  author = {Wang, Kexin and Reimers, Nils and Gurevych, Iryna},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2021},
  pages = {671--688},
  title = {{TSDAE}: Using Transformer-based Sequential Denoising Auto-Encoder for Unsupervised Sentence Embedding Learning},
  url = {https://aclanthology.org/2021.findings-emnlp.59},
  year = {2021},
}"""
TSDAE_URL = "https://aclanthology.org/2021.findings-emnlp.59"
LEI_2016 = """@inproceedings{lei-etal-2016-semi,
  author = {Lei, Tao and Joshi, Hrishikesh and Barzilay, Regina and Jaakkola, Tommi and Tymoshenko, Katerina and Moschitti, Alessandro and M{\\`a}rquez, Llu{\\'\\i}s},
  booktitle = {Proceedings of NAACL-HLT 2016},
  pages = {1279--1289},
  title = {Semi-supervised Question Retrieval with Gated Convolutions},
  year = {2016},
}"""
HOOGEVEEN_2015 = """@inproceedings{hoogeveen2015cqadupstack,
  author = {Hoogeveen, Doris and Verspoor, Karin M. and Baldwin, Timothy},
  booktitle = {Proceedings of the 20th Australasian Document Computing Symposium (ADCS)},
  pages = {3:1--3:8},
  title = {CQADupStack: A Benchmark Data Set for Community Question-Answering Research},
  year = {2015},
}"""
# The ACL Anthology's pages and address of the paper (D17-1126); the corpus' own README gives those of the next one.
LAN_2017 = """@inproceedings{lan-etal-2017-continuously,
  author = {Lan, Wuwei and Qiu, Siyu and He, Hua and Xu, Wei},
  booktitle = {Proceedings of EMNLP 2017},
  pages = {1224--1234},
  title = {A Continuously Growing Dataset of Sentential Paraphrases},
  url = {https://aclanthology.org/D17-1126},
  year = {2017},
}"""
XU_2015 = """@inproceedings{xu-etal-2015-semeval,
  author = {Xu, Wei and Callison-Burch, Chris and Dolan, Bill},
  booktitle = {Proceedings of SemEval 2015},
  pages = {1--11},
  title = {{S}em{E}val-2015 Task 1: Paraphrase and Semantic Similarity in {T}witter ({PIT})},
  year = {2015},
}"""
COHAN_2020 = """@inproceedings{cohan-etal-2020-specter,
  author = {Cohan, Arman and Feldman, Sergey and Beltagy, Iz and Downey, Doug and Weld, Daniel},
  booktitle = {Proceedings of ACL 2020},
  pages = {2270--2282},
  title = {{SPECTER}: Document-level Representation Learning using Citation-informed Transformers},
  year = {2020},
}"""


def bibtex(*entries: str) -> str:
    """Several BibTeX entries as MTEB's citation check formats them: sorted by key, a blank line between two."""
    return "\n\n".join(sorted(entries, key=lambda entry: entry.split("{", 1)[1].split(",", 1)[0]))


PROTOCOL = ("Scored with usebench's implementation of the TSDAE paper's protocol (UKPLab/useb evaluators, reproduced "
            "exactly; bit-equal to `bench eval`), on the USEB release's files under the usebench data root.")


@dataclass(frozen=True)
class UsebMeta:
    """The MTEB metadata of one USEB task (``task``: the usebench adapter it runs)."""

    task: str
    name: str
    type: str
    folder: str  # under the data root
    description: str
    license: str
    domains: tuple[str, ...]
    subtypes: tuple[str, ...]
    annotations: str
    citation: str
    date: tuple[str, str]  # (first, last) day of the window the data comes from, ISO dates


USEB_META: dict[str, UsebMeta] = {
    "askubuntu": UsebMeta(
        task="askubuntu", name="USEB-AskUbuntu", type="Reranking", folder="useb/data-eval/askubuntu",
        description="AskUbuntu duplicate questions (Lei et al. 2016) as USEB evaluates them: the 20 BM25 candidates of "
                    "each query re-ranked by the cosine of the titles; MAP (also P@1, P@5, MRR) over the queries with a "
                    "similar question. Not MTEB's AskUbuntuDupQuestions (other data preparation, map_at_1000). License: "
                    "none stated by the release (taolei87/askubuntu). " + PROTOCOL,
        license="not specified", domains=("Programming", "Web", "Written"), subtypes=("Question answering",),
        annotations="human-annotated",
        citation=bibtex(TSDAE, LEI_2016),
        # AskUbuntu opened in 2010; the release is a 2014 dump of the site (taolei87/askubuntu README)
        date=("2010-01-01", "2014-12-31")),
    "cqadupstack": UsebMeta(
        task="cqadupstack", name="USEB-CQADupStack", type="Retrieval", folder="useb/data-eval/cqadupstack",
        description="CQADupStack (Hoogeveen et al. 2015) as USEB evaluates it: per forum, each query title retrieves "
                    "from the forum's titles minus the split's queries; MAP@100 as sklearn average precision over the "
                    "top 100 (normalised by the duplicates found there), mean over the 12 forums; also nDCG@10. Not "
                    "MTEB's CQADupstack*Retrieval (BEIR's split and documents, ndcg_at_10). License: the release's "
                    "LICENCE file (Apache 2.0, as BEIR and MTEB record it). " + PROTOCOL,
        license="apache-2.0", domains=("Programming", "Web", "Written", "Non-fiction"),
        subtypes=("Question answering", "Duplicate Detection"), annotations="derived",
        citation=bibtex(TSDAE, HOOGEVEEN_2015),
        # the 12 forums opened from 2010 on; the release is the Stack Exchange dump of 26 September 2014 (its README)
        date=("2010-01-01", "2014-09-26")),
    "twitterpara": UsebMeta(
        task="twitterpara", name="USEB-TwitterPara", type="PairClassification", folder="useb/data-eval/twitterpara",
        description="TwitterPara as USEB evaluates it: the Twitter URL corpus test file (Lan et al. 2017; 9,334 "
                    "labelled pairs) and PIT-2015 test (Xu et al. 2015; 838): average precision of the cosine against "
                    "the binary label (middle grade dropped), the mean of the two APs (ap_avg); also Spearman. Not "
                    "MTEB's TwitterURLCorpus / TwitterSemEval2015 (51,534 / 16,777 pairs, max_ap over four "
                    "similarities). Licenses: Twitter URL corpus CC BY-NC-SA 3.0 (its README, non-commercial); "
                    "PIT-2015: none stated. " + PROTOCOL,
        license="multiple", domains=("Social", "Written"), subtypes=(), annotations="human-annotated",
        citation=bibtex(TSDAE, LAN_2017, XU_2015),
        # PIT-2015 test: tweets on Twitter's trending topics of 13 May - 10 June 2013 (Xu et al. 2014; its topics, e.g.
        # Mancini's dismissal, Memorial Day, WWDC's MacBook Air and iOS, fall in it); the Twitter URL test file: news
        # tweets of January 2017 (its stories run from Obama's farewell address to the eve of the inauguration)
        date=("2013-05-13", "2017-01-31")),
    "scidocs": UsebMeta(
        task="scidocs", name="USEB-SciDocs", type="Reranking", folder="useb/data-eval/scidocs",
        description="SciDocs cite, co-cite, co-read and co-view (Cohan et al. 2020) as USEB evaluates them: each "
                    "query's candidates re-ranked by the cosine of the titles, trec MAP (pytrec_eval), mean of the "
                    "four (map_avg); also nDCG. Not MTEB's SciDocsRR (other candidates, map_at_1000). License: none "
                    "stated for the data by the release (allenai/scidocs). " + PROTOCOL,
        license="not specified", domains=("Academic", "Non-fiction", "Written"),
        subtypes=("Scientific Reranking",), annotations="derived",
        citation=bibtex(TSDAE, COHAN_2020),
        # neither the SPECTER paper nor the release states when its Semantic Scholar data (titles, citations, user
        # activity) was gathered: an estimate, from the year before the paper's ACL 2020 submission to its release
        # (arXiv 2004.07180, 15 April 2020)
        date=("2019-01-01", "2020-04-15")),
}

AVERAGE_NAME = "USEB-Average"
AVERAGE_METRIC = "useb_avg"
AVERAGE_DESCRIPTION = ("The TSDAE paper's USEB average: the mean of the main scores of USEB-AskUbuntu (map), "
                       "USEB-CQADupStack (map@100), USEB-TwitterPara (ap_avg) and USEB-SciDocs (map_avg), each "
                       "computed with the paper's protocol (scores 0-1; the paper prints them x100).")
# MTEB has no "multiple" annotator type: two parts are human-annotated (AskUbuntu, TwitterPara), two derived from the
# data's structure (CQADupStack's duplicate links, SciDocs' citations and activity), and the average claims the lesser.
AVERAGE_ANNOTATIONS = "derived"
BENCHMARK_NAME = "USEB"
BENCHMARK_DESCRIPTION = ("USEB (Wang, Reimers & Gurevych 2021): AskUbuntu, CQADupStack, TwitterPara and SciDocs with "
                         "the TSDAE paper's exact evaluation protocol, from the usebench data root, and their average.")
NAME_TO_TASK = {meta.name: task for task, meta in USEB_META.items()}

# The suite's metrics that have a name in MTEB with the same definition, and that name, for each task (its scores and
# its parts' scores): written beside the suite's names in MTEB's results. A task-level MTEB name over several parts
# (SciDocs' subtasks, TwitterPara's two files) is their mean, as MTEB averages a task's subsets. CQADupStack's map@100
# has none: it is normalised by the duplicates found in the top 100, MTEB's map_at_100 by all of them.
MTEB_METRICS: dict[str, dict[str, str]] = {
    "askubuntu": {"map": "map_at_1000", "p@1": "precision_at_1", "p@5": "precision_at_5", "mrr": "mrr_at_1000"},
    "cqadupstack": {"ndcg@10": "ndcg_at_10"},
    "twitterpara": {"ap_avg": "cosine_ap", "spearman_avg": "cosine_spearman", "ap": "cosine_ap",
                    "spearman": "cosine_spearman", "pearson": "cosine_pearson"},
    "scidocs": {"map_avg": "map_at_1000", "ndcg_avg": "ndcg_at_1000", "map": "map_at_1000", "ndcg": "ndcg_at_1000"},
}
